//! What the registry works on for one API server ([`Apiserver`]): the table of served types, the
//! store, the per-kind options fixed at start and the write observers (the controllers), with the
//! interface they are held by: [`Observer`], the [`Written`] event it is given and the
//! [`FollowUps`] queue its writes go to. How observers are run, and the writes that run them, are
//! [`super::hooks`], above [`super::rest`] (which this file sits below). Built once by `env`; the
//! registry's functions, admission and the controllers take it by reference, and the HTTP side
//! holds it inside its own state ([`endpoints::State`](crate::endpoints::State)), which adds what
//! only HTTP needs.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Registry, ResourceType};
use crate::storage::Store;

/// The registry layer of one API server.
pub(crate) struct Apiserver {
    /// The served resource types.
    pub registry: Registry,
    /// Where objects are kept.
    pub store: Arc<Store>,
    /// Pods are scheduled, run and stopped by the simulated kubelet
    /// ([`controllers::kubelet`](crate::controllers::kubelet)); the pods strategy then deletes them
    /// gracefully.
    pub kubelet: Option<KubeletConfig>,
    /// Run after every committed write, in order ([`super::hooks::settle`]).
    pub observers: Vec<Arc<dyn Observer>>,
}

/// How the simulated kubelet paces a Pod's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KubeletConfig {
    /// From binding to `Running`.
    pub start_delay: Duration,
    /// The longest a deleted Pod's containers take to stop (the grace period is the other bound).
    pub stop_delay: Duration,
    /// How long a Pod that runs to completion (`restartPolicy` `Never` / `OnFailure`) runs.
    pub run_time: Duration,
    /// How many Nodes are simulated (at least one).
    pub nodes: usize,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            start_delay: Duration::from_millis(500),
            stop_delay: Duration::from_secs(1),
            run_time: Duration::from_secs(1),
            nodes: 1,
        }
    }
}

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

/// The follow-up writes of a reaction: committed at once, observed later (queued). Its write
/// methods (`update`, `delete`) are in [`super::hooks`], above [`super::rest`], which they call.
#[derive(Default)]
pub(crate) struct FollowUps {
    queue: VecDeque<Written>,
}

impl FollowUps {
    /// Queues `w` to be observed after the current reaction.
    pub(super) fn push(&mut self, w: Written) {
        self.queue.push_back(w);
    }

    /// The oldest queued write and how many are left after it.
    pub(super) fn pop(&mut self) -> Option<(Written, usize)> {
        let w = self.queue.pop_front()?;
        Some((w, self.queue.len()))
    }
}
