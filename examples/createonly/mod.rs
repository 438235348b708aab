//! The createonly example's modules, shared by its `main` and its integration test
//! (`tests/createonly.rs`): the `AppService` custom resource ([`crd`]), the
//! controller that reconciles on creates only ([`controller`]), and the demo that
//! creates, updates and deletes one AppService ([`demo`]). What every example
//! shares (flags, log output, the local API server) is in `examples/contract/`.

pub mod controller;
pub mod crd;
pub mod demo;
