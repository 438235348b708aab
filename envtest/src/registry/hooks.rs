//! Write observers: how the in-process controllers (`controllers`: garbage collector,
//! namespace lifecycle, CRD cleanup) follow the registry without re-entering it. Every write
//! committed through here ([`create_object`], [`update_object`], [`delete_object`]: the
//! [`super::rest`] lifecycle, then the observers; not on a dry run) becomes a [`Written`] event,
//! handed to each [`Observer`] registered in the [`Apiserver`]. An observer reacts with
//! follow-up writes through [`FollowUps`]: each commits at once, and its own event is queued and
//! observed after the current reaction — an iterative work list, never a nested call, so owner
//! chains of any depth settle without recursion (kube-controller-manager's controllers react to
//! watch events the same way, one after another). [`settle`] runs the queue to the end before
//! the client's write returns, so a client sees every consequence of its write.
//!
//! The observer interface ([`Observer`], [`Written`], [`Verb`], the [`FollowUps`] queue) is
//! held by the [`Apiserver`] and so defined beside it, in [`super::context`]; it is re-exported
//! here, where observers are run. The top of the registry: it calls `rest` and `context`, and
//! nothing in the registry calls it.

use std::sync::Arc;

use serde_json::Value;

use super::ResourceType;
use super::context::Apiserver;
pub(crate) use super::context::{FollowUps, Observer, Verb, Written};
use super::rest::{self, DeleteOpts, Target, WriteOpts};
use crate::api::status::ApiError;
use crate::storage::Committed;

/// A bound on the reactions one client write may cause (a safety net against observers that
/// would feed each other forever; no real ownership graph comes near it).
const MAX_REACTIONS: usize = 100_000;

/// [`rest::create`] of `obj` (already type-checked) in `url_ns`, then the write observers.
pub(crate) fn create_object(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    url_ns: Option<&str>,
    obj: Value,
    w: WriteOpts<'_>,
) -> Result<Committed, ApiError> {
    let out = rest::create(api, rt, url_ns, obj, w)?;
    if !w.dry_run {
        settle(api, Written::new(Verb::Create, rt, &out.obj, false));
    }
    Ok(out)
}

/// [`rest::update`] of the object `name` (or of its subresource `sub`; `put` marks a PUT), then
/// the write observers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update_object(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    w: WriteOpts<'_>,
    put: bool,
    make: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<(Committed, bool), ApiError> {
    let at = Target { ns, name, sub, put };
    update_with(api, rt, at, w, rest::Make::Once(Box::new(make)))
}

/// [`update_object`] (not a PUT) with a `make` that may run more than once: it runs outside the
/// store lock, again when another write came in first ([`rest::Make::Again`]). A patch's.
pub(crate) fn patch_object(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    at: Target<'_>,
    w: WriteOpts<'_>,
    make: impl FnMut(&Value) -> Result<Value, ApiError>,
) -> Result<(Committed, bool), ApiError> {
    update_with(api, rt, at, w, rest::Make::Again(Box::new(make)))
}

/// [`rest::update`], then the write observers.
fn update_with(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    at: Target<'_>,
    w: WriteOpts<'_>,
    make: rest::Make<'_>,
) -> Result<(Committed, bool), ApiError> {
    let (obj, removed) = rest::update(api, rt, at, w, make)?;
    if !w.dry_run {
        settle(api, Written::new(Verb::Update, rt, &obj.obj, removed));
    }
    Ok((obj, removed))
}

/// [`rest::delete`] (deletes or marks one object), then the write observers; returns it and
/// whether it is gone.
pub(crate) fn delete_object(
    api: &Apiserver,
    rt: &Arc<ResourceType>,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOpts,
) -> Result<(Committed, bool), ApiError> {
    let (obj, removed) = rest::delete(api, rt, ns, name, opts)?;
    if !opts.dry_run {
        settle(api, Written::new(Verb::Delete, rt, &obj.obj, removed));
    }
    Ok((obj, removed))
}

/// The writes of a reaction (the queue itself is in [`super::context`]).
impl FollowUps {
    /// [`rest::create`] of `obj` (type-checked) in namespace `ns`.
    pub fn create(
        &mut self,
        api: &Apiserver,
        rt: &Arc<ResourceType>,
        ns: Option<&str>,
        obj: Value,
    ) -> Result<Arc<Value>, ApiError> {
        let out = rest::create(api, rt, ns, obj, WriteOpts::default())?;
        self.push(Written::new(Verb::Create, rt, &out.obj, false));
        Ok(out.obj)
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
        let make = rest::Make::Once(Box::new(make));
        let (obj, removed) = rest::update(api, rt, Target::object(ns, name), w, make)?;
        self.push(Written::new(Verb::Update, rt, &obj.obj, removed));
        Ok(obj.obj)
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
        self.push(Written::new(Verb::Delete, rt, &obj.obj, removed));
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
    while let Some((w, left)) = next.pop() {
        reactions += 1;
        if reactions > MAX_REACTIONS {
            tracing::warn!(
                left,
                "write observers did not settle; dropping the remaining reactions"
            );
            return;
        }
        for o in &api.observers {
            o.observe(api, &w, &mut next);
        }
    }
}
