//! Helpers reconcilers use on the objects they manage (controller-runtime's
//! `pkg/controller/controllerutil` and `pkg/finalizer`).
//!
//! - owner references ([`set_controller_reference`], [`set_owner_reference`],
//!   [`remove_owner_reference`], [`has_controller_reference`], [`has_owner_reference`]):
//!   what `handler::EnqueueRequestForOwner` (the builder's `owns`) reads to find the
//!   owner of a changed object, and what the garbage collector follows;
//! - finalizer lists ([`add_finalizer`], [`remove_finalizer`], [`contains_finalizer`])
//!   and a registry of finalizers run on deletion ([`Finalizers`]);
//! - [`create_or_update`] / [`create_or_patch`]: read through the manager's
//!   [`Client`](crate::client::Client) (the cache), apply a mutate closure, and write
//!   only what changed, saying what was done ([`OperationResult`]).
//!
//! All of them edit objects in place; none copies an object it does not have to.
//! Dynamic objects (`DynamicObject` with its `ApiResource`) are served by the
//! `*_dynamic` owner-reference forms and `create_or_update_with` /
//! `create_or_patch_with`; the finalizer helpers and [`Finalizers`] take any
//! `kube::Resource`, dynamic ones included.

use crate::error::BoxError;

mod create;
mod finalizer;
mod finalizers;
mod owner;

pub use create::{
    OperationResult, create_or_patch, create_or_patch_with, create_or_update, create_or_update_with,
};
pub use finalizer::{
    AlreadyRegistered, FinalizeError, FinalizeResult, Finalizer, Finalizers, FinalizersError,
};
pub use finalizers::{add_finalizer, contains_finalizer, remove_finalizer};
pub use owner::{
    OwnerReferenceOptions, get_controller_of, has_controller_reference, has_owner_reference,
    has_owner_reference_dynamic, remove_controller_reference, remove_owner_reference,
    remove_owner_reference_dynamic, set_controller_reference, set_controller_reference_dynamic,
    set_controller_reference_with, set_owner_reference, set_owner_reference_dynamic,
    set_owner_reference_with,
};

/// Why a controllerutil call failed. Messages follow controller-runtime's.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another controller already owns the object (Go's `AlreadyOwnedError`).
    #[error("Object {object} is already owned by another {owner_kind} controller {owner_name}")]
    AlreadyOwned {
        /// The object, `namespace/name`.
        object: String,
        /// The kind of the existing controller owner.
        owner_kind: String,
        /// The name of the existing controller owner.
        owner_name: String,
    },
    /// A namespaced owner for a cluster-scoped object.
    #[error(
        "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}"
    )]
    ClusterScopedWithNamespacedOwner {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// An owner in another namespace.
    #[error(
        "cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {object_namespace}"
    )]
    CrossNamespaceOwner {
        /// The owner's namespace.
        owner_namespace: String,
        /// The object's namespace.
        object_namespace: String,
    },
    /// [`remove_owner_reference`] found no reference to the owner.
    #[error("{object_kind} does not have an owner reference for {owner_kind}")]
    NoOwnerReference {
        /// The object's kind.
        object_kind: String,
        /// The owner's kind.
        owner_kind: String,
    },
    /// The mutate closure changed the object's name or namespace.
    #[error("MutateFn cannot mutate object name and/or object namespace")]
    MutatedKey,
    /// The mutate closure failed.
    #[error("mutate failed: {0}")]
    Mutate(#[source] BoxError),
    /// The object could not be turned into JSON to compare or patch it.
    #[error("cannot serialize object: {0}")]
    Serialize(#[from] serde_json::Error),
    /// A read or write failed.
    #[error(transparent)]
    Client(#[from] crate::client::Error),
}

impl Error {
    /// Wraps an error from a mutate closure.
    pub fn mutate(err: impl Into<BoxError>) -> Self {
        Self::Mutate(err.into())
    }

    /// Whether this is [`Error::AlreadyOwned`] (Go's `errors.As(err, &AlreadyOwnedError{})`).
    pub fn is_already_owned(&self) -> bool {
        matches!(self, Error::AlreadyOwned { .. })
    }
}
