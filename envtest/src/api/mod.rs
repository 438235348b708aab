//! The bottom layer (kube-apiserver's `k8s.io/apimachinery`): pure functions over
//! `serde_json::Value` with no server state. Everything above may call into it; it calls
//! nothing above it.
//!
//! * [`status`]: [`status::ApiError`] and the `Status` bodies every failure becomes.
//! * [`json`]: a JSON body decoded with its duplicate keys noted, in one pass.
//! * [`meta`]: metadata accessors and rules (typed decoding, create/update invariants).
//! * [`selector`]: label and field selector grammars; [`validation`]: names, labels,
//!   annotations, data limits and the [`validation::FieldCause`]s of a 422.
//! * [`protobuf`]: the Kubernetes protobuf wire format of every built-in kind (one descriptor-driven codec).
//! * [`patch`]: the one place a JSON, merge or strategic merge patch is decoded and applied,
//!   with upstream's limits — every write path (the PATCH verb, `/scale`, admission,
//!   conversion) goes through it.
//! * [`strategic`]: strategic merge patch and the list strategies server-side apply reuses.
//! * [`warning`]: the `Warning` headers a request collects for its client.
//! * [`quantity`]: `resource.Quantity`; [`net`]: IP addresses, CIDRs and request URIs as
//!   Kubernetes parses them (shared by the registry's `format` checks, Pod defaulting and CEL).

pub(crate) mod json;
pub(crate) mod meta;
pub(crate) mod net;
pub(crate) mod patch;
pub(crate) mod protobuf;
pub(crate) mod quantity;
pub(crate) mod selector;
pub(crate) mod status;
pub(crate) mod strategic;
pub(crate) mod validation;
pub(crate) mod warning;
