//! [`Finalizers`]: a registry of finalizers keyed by finalizer name, run on deletion
//! (controller-runtime's `pkg/finalizer`).
//!
//! A reconciler calls [`Finalizers::finalize`] on the object it reconciles. While the
//! object is alive, every registered key is added to its finalizers (so the API server
//! keeps the object until they are removed). Once it is being deleted, each
//! [`Finalizer`] whose key is still present runs; on success its key is removed. The
//! result says whether the object (metadata) or its status changed, so the caller
//! knows what to write back. Keys run in registration order.

use async_trait::async_trait;
use kube::Resource;

use super::finalizers::{add_finalizer, contains_finalizer, remove_finalizer};
use crate::error::BoxError;

/// What a finalize changed on the object (Go's `finalizer.Result`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FinalizeResult {
    /// The object (e.g. its finalizers) changed and needs an update.
    pub updated: bool,
    /// Its status changed and needs a status update.
    pub status_updated: bool,
}

/// A failed finalizer, which may still have changed the object (e.g. set a
/// condition), as Go's `Finalize` returns both a result and an error.
#[derive(Debug)]
pub struct FinalizeError {
    /// What changed despite the failure.
    pub result: FinalizeResult,
    /// Why it failed.
    pub source: BoxError,
}

impl FinalizeError {
    /// A failure that changed nothing.
    pub fn new(err: impl Into<BoxError>) -> Self {
        Self {
            result: FinalizeResult::default(),
            source: err.into(),
        }
    }

    /// Sets what changed despite the failure.
    pub fn with_result(mut self, result: FinalizeResult) -> Self {
        self.result = result;
        self
    }
}

/// Cleans up after an object of type `K` that is being deleted (Go's
/// `finalizer.Finalizer`). Runs until it succeeds: the object stays until then.
#[async_trait]
pub trait Finalizer<K>: Send + Sync + 'static {
    /// Does the cleanup; may edit `obj` (and say so in the result).
    async fn finalize(&self, obj: &mut K) -> Result<FinalizeResult, FinalizeError>;
}

/// Every finalizer that failed in one [`Finalizers::finalize`] call, with what
/// changed anyway.
#[derive(Debug)]
pub struct FinalizersError {
    /// What changed (write it back even though finalizing failed).
    pub result: FinalizeResult,
    /// The finalizer keys that failed and why.
    pub errors: Vec<(String, BoxError)>,
}

impl std::fmt::Display for FinalizersError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let msgs: Vec<String> = self
            .errors
            .iter()
            .map(|(k, e)| format!("finalizer {k:?} failed: {e}"))
            .collect();
        match msgs.as_slice() {
            [one] => f.write_str(one),
            many => write!(f, "[{}]", many.join(", ")),
        }
    }
}

impl std::error::Error for FinalizersError {}

/// Registered finalizers for objects of type `K` (Go's `finalizer.Finalizers`).
pub struct Finalizers<K> {
    entries: Vec<(String, Box<dyn Finalizer<K>>)>,
}

impl<K> Default for Finalizers<K> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<K> std::fmt::Debug for Finalizers<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.entries.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Finalizers").field("keys", &keys).finish()
    }
}

/// [`Finalizers::register`] got a key twice.
#[derive(Debug, thiserror::Error)]
#[error("finalizer for key {0:?} already registered")]
pub struct AlreadyRegistered(pub String);

impl<K: Resource + Send + Sync + 'static> Finalizers<K> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `finalizer` under the finalizer name `key` (e.g.
    /// `"example.com/cleanup"`); fails if `key` is taken.
    pub fn register(
        &mut self,
        key: impl Into<String>,
        finalizer: impl Finalizer<K>,
    ) -> Result<(), AlreadyRegistered> {
        let key = key.into();
        if self.entries.iter().any(|(k, _)| *k == key) {
            return Err(AlreadyRegistered(key));
        }
        self.entries.push((key, Box::new(finalizer)));
        Ok(())
    }

    /// Adds the missing keys to a live object, or runs the finalizers of an object
    /// being deleted and removes the keys of those that succeed. Returns what changed;
    /// on failure the error carries it too.
    pub async fn finalize(&self, obj: &mut K) -> Result<FinalizeResult, FinalizersError> {
        let mut res = FinalizeResult::default();
        let mut errors = Vec::new();
        let deleting = obj.meta().deletion_timestamp.is_some();
        for (key, finalizer) in &self.entries {
            let present = contains_finalizer(obj, key);
            if !deleting && !present {
                add_finalizer(obj, key);
                res.updated = true;
            } else if deleting && present {
                match finalizer.finalize(obj).await {
                    Ok(r) => {
                        remove_finalizer(obj, key);
                        res.updated = true;
                        res.status_updated |= r.status_updated;
                    }
                    Err(e) => {
                        res.updated |= e.result.updated;
                        res.status_updated |= e.result.status_updated;
                        tracing::debug!(finalizer = %key, error = %e.source, "finalizer failed");
                        errors.push((key.clone(), e.source));
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(res)
        } else {
            Err(FinalizersError {
                result: res,
                errors,
            })
        }
    }
}
