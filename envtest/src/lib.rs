//! ctrl-envtest: an embedded, in-process Kubernetes API server.

// Selectors, validation, CRD schemas and fault injection (see each module's docs).
#[allow(dead_code)]
mod faults;
#[allow(dead_code)] // wired by the server; remove once every helper is called
mod selector;
#[allow(dead_code)]
mod validation;

pub use faults::{FaultMatch, FaultStatus, Faults, RequestRecord, Verb};
