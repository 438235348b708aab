//! The StorageBucket operator, as modules the example's `main` and the integration
//! test (`tests/storagebucket.rs`) both use: the custom resource ([`crd`]), the
//! HTTP probe ([`probe`]), the controller and its ticker ([`controller`]), a local
//! object store ([`store`]), the no-cluster demo ([`demo`]) and log output
//! ([`logging`]).

pub mod controller;
pub mod crd;
pub mod demo;
pub mod logging;
pub mod probe;
pub mod store;
