//! CEL in ctrl-envtest: the rules of CRD schemas (`x-kubernetes-validations`, ratcheted on
//! update) and the expressions of ValidatingAdmissionPolicies — all on cel-rust (the `cel`
//! crate) with the Kubernetes CEL libraries added. The schema's `format` checks and the
//! ratcheting of its other errors are the registry's (`registry::format`, `registry::ratchet`),
//! and need no CEL.
//!
//! A leaf of the crate: it imports only [`crate::api`] (for `FieldCause`) and is called by the
//! registry (custom-resource writes, CRD admission) and by admission (policies).
//!
//! - [`env`](mod@env): the CEL environment and per-evaluation context, with the cost meter;
//! - [`library`]: Kubernetes' CEL libraries cel-rust lacks (lists, regex, url, quantity, ip/cidr);
//! - [`values`]: JSON → CEL values as kube-apiserver types them from the schema;
//! - [`program`]: compiling one expression: checks against the schema, cost estimate, metering;
//! - [`types`]: the compile-time type check of comparisons;
//! - [`rules`]: evaluating a CRD's rules on an object (and its old version) with ratcheting;
//! - [`crd`]: checking a CRD's rules when the CRD is written;
//! - [`policy`]: the expressions of ValidatingAdmissionPolicies.

pub(crate) mod crd;
pub(crate) mod env;
pub(crate) mod library;
pub(crate) mod policy;
pub(crate) mod program;
pub(crate) mod rules;
pub(crate) mod types;
pub(crate) mod values;

/// cel-go's limit on one evaluation (`PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// The budget for all rules of one object (`RuntimeCELCostBudget`).
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;
/// The most one rule may be estimated to cost (`StaticEstimatedCostLimit`).
pub(crate) const STATIC_RULE_LIMIT: f64 = 10_000_000.0;
/// The most all rules of a schema may be estimated to cost (`StaticEstimatedCRDCostLimit`).
pub(crate) const STATIC_CRD_LIMIT: f64 = 100_000_000.0;

#[cfg(test)]
mod tests;
