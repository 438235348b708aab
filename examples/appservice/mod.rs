//! The AppService operator, as modules the example's `main` and the integration
//! test (`tests/integration/appservice.rs`) both use: the custom resource ([`crd`]), the
//! controller ([`controller`]), the manager wiring and leader-election flags
//! ([`setup`]), `--sharded` ([`sharding`]) and the no-cluster demo ([`demo`]). What every example shares (flags,
//! log output, the local API server) is in `ctrl::cli`.

pub mod controller;
pub mod crd;
pub mod demo;
pub mod setup;
pub mod sharding;
