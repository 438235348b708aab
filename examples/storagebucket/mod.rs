//! The StorageBucket operator, as modules the example's `main` and the integration
//! test (`tests/integration/storagebucket.rs`) both use: the custom resource ([`crd`]), the
//! HTTP probe ([`probe`]), the controller and its ticker ([`controller`]), the
//! admission webhooks ([`webhooks`]), the Lease's name ([`LEASE_NAME`]), the
//! manager wiring ([`setup`]), a local object store ([`store`]) and the no-cluster
//! demo ([`demo`]). What every example shares (flags, log output, the local API
//! server) is in `ctrl::cli`.

pub mod controller;
pub mod crd;
pub mod demo;
pub mod probe;
pub mod setup;
pub mod store;
pub mod webhooks;

/// The leader-election Lease's default name, as kubebuilder derives it from the
/// project's domain (`--leader-election-id` overrides it).
pub const LEASE_NAME: &str = "storagebucket.storage.example.com";
