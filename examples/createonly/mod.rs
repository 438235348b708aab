//! The createonly example's modules, shared by its `main` and its integration test
//! (`tests/createonly.rs`): the `AppService` custom resource ([`crd`], the
//! `appservice` example's own module, mounted here), the
//! controller that reconciles on creates only ([`controller`]), and the demo that
//! creates, updates and deletes one AppService ([`demo`]). What every example
//! shares (flags, log output, the local API server) is in `ctrl::cli`.

pub mod controller;
#[allow(dead_code)] // the appservice operator's constants are not used here
#[path = "../appservice/crd.rs"]
pub mod crd;
pub mod demo;
