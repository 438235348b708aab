//! Write observers: how the in-process controllers (`controllers`: garbage collector,
//! namespace lifecycle, CRD cleanup) follow the registry without re-entering it. Every write
//! committed through [`super::rest`] (not a dry run) becomes a [`Written`] event, handed to
//! each [`Observer`] registered in the [`Apiserver`](super::context::Apiserver). An observer reacts
//! with follow-up writes through [`FollowUps`]: each commits at once, and its own event is
//! queued and observed after the current reaction — an iterative work list, never a nested
//! call, so owner chains of any depth settle without recursion (kube-controller-manager's
//! controllers react to watch events the same way, one after another). [`settle`] runs the
//! queue to the end before the client's write returns, so a client sees every consequence of
//! its write. Part of the registry: it calls `rest` and nothing above.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

use super::ResourceType;
use super::context::Apiserver;
use super::rest::{self, DeleteOpts, WriteOpts};
use crate::api::status::ApiError;

/// A bound on the reactions one client write may cause (a safety net against observers that
/// would feed each other forever; no real ownership graph comes near it).
const MAX_REACTIONS: usize = 100_000;

/// What kind of write was committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Create,
    Update,
    Delete,
}

/// A committed write as observers see it.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub verb: Verb,
    pub rt: Arc<ResourceType>,
    /// The object as stored (or as it was, when removed).
    pub obj: Arc<Value>,
    /// The write removed the object.
    pub removed: bool,
}

impl Written {
    /// The event of a write of `obj` at `rt`.
    pub fn new(verb: Verb, rt: &Arc<ResourceType>, obj: &Arc<Value>, removed: bool) -> Self {
        Written {
            verb,
            rt: rt.clone(),
            obj: obj.clone(),
            removed,
        }
    }
}

/// A controller that reacts to committed writes.
pub(crate) trait Observer: Send + Sync {
    /// Reacts to `w`; writes go through `next`.
    fn observe(&self, api: &Apiserver, w: &Written, next: &mut FollowUps);
}

/// The follow-up writes of a reaction: committed at once, observed later (queued).
#[derive(Default)]
pub(crate) struct FollowUps {
    queue: VecDeque<Written>,
}

impl FollowUps {
    fn push(&mut self, w: Written) {
        self.queue.push_back(w);
    }

    /// [`rest::create`] of `obj` (type-checked) in namespace `ns`.
    pub fn create(
        &mut self,
        api: &Apiserver,
        rt: &Arc<ResourceType>,
        ns: Option<&str>,
        obj: Value,
    ) -> Result<Arc<Value>, ApiError> {
        let out = rest::create(api, rt, ns, obj, WriteOpts::default())?;
        self.push(Written::new(Verb::Create, rt, &out, false));
        Ok(out)
    }

    /// [`rest::update`] of the object `name`; `make` builds the new object from the stored one.
    pub fn update(
        &mut self,
        api: &Apiserver,
        rt: &Arc<ResourceType>,
        ns: Option<&str>,
        name: &str,
        make: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let w = WriteOpts::default();
        let (obj, removed) = rest::update(api, rt, ns, name, None, w, false, make)?;
        self.push(Written::new(Verb::Update, rt, &obj, removed));
        Ok(obj)
    }

    /// [`rest::delete`] of the object `name`.
    pub fn delete(
        &mut self,
        api: &Apiserver,
        rt: &Arc<ResourceType>,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<(), ApiError> {
        let (obj, removed) = rest::delete(api, rt, ns, name, opts)?;
        self.push(Written::new(Verb::Delete, rt, &obj, removed));
        Ok(())
    }
}

/// Runs every observer on `first` and on every follow-up write, until none is left.
pub(crate) fn settle(api: &Apiserver, first: Written) {
    if api.observers.is_empty() {
        return;
    }
    let mut next = FollowUps::default();
    next.push(first);
    let mut reactions = 0;
    while let Some(w) = next.queue.pop_front() {
        reactions += 1;
        if reactions > MAX_REACTIONS {
            tracing::warn!(
                left = next.queue.len(),
                "write observers did not settle; dropping the remaining reactions"
            );
            return;
        }
        for o in &api.observers {
            o.observe(api, &w, &mut next);
        }
    }
}
