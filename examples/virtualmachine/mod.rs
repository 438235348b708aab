//! The virtualmachine example's modules, shared by its `main` and its integration
//! test (`tests/integration/virtualmachine.rs`): the `VirtualMachine` custom resource ([`crd`]),
//! the fake hypervisor the controller drives ([`hypervisor`]), the controller built
//! by hand on ctrl's cache and work queue ([`controller`]), and the demo script
//! ([`demo`]). What every example shares (flags, log output, the local API server)
//! is in `ctrl::cli`.

pub mod controller;
pub mod crd;
pub mod demo;
pub mod hypervisor;
