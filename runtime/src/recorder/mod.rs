//! The Kubernetes Events recorder (controller-runtime's `pkg/recorder` and
//! `mgr.GetEventRecorder`): reconcilers tell people what they did by writing
//! `events.k8s.io/v1` Events, which `kubectl describe` and `kubectl events` show.
//!
//! A [`Provider`] belongs to the manager; each
//! [`Recorder`] it hands out (`mgr.event_recorder(name)`) stamps its Events with
//! `reportingController = name`. Recording never waits on the API server: an Event
//! goes into a bounded queue ([`DEFAULT_QUEUE_LENGTH`], client-go's broadcaster
//! length) and one background task, started lazily on the first Event, writes it
//! through kube's [`kube::runtime::events::Recorder`] (which folds repeats of the same
//! regarding/reason/action into an `EventSeries` patch, as client-go does). When the
//! queue is full the new Event is **dropped** (client-go's `DropIfChannelFull`) and
//! counted ([`Provider::dropped`]); a rejected write is logged and not retried. The
//! manager stops the provider last, after every runnable: queued Events are flushed
//! within the graceful-shutdown timeout, and Events recorded after that are dropped.
//!
//! ```no_run
//! # async fn demo(mgr: ctrl_runtime::manager::Manager, cm: k8s_openapi::api::core::v1::ConfigMap) {
//! use ctrl_runtime::recorder::EventType;
//!
//! let recorder = mgr.event_recorder("configmap-controller");
//! recorder.event(&cm, EventType::Normal, "Synced", "Reconcile", "config applied");
//! # }
//! ```

mod provider;

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;

pub use kube::runtime::events::EventType;
#[cfg(feature = "multicluster")]
pub(crate) use provider::hostname;
pub use provider::{DEFAULT_QUEUE_LENGTH, Provider};

/// The most bytes of `note` the API server accepts (1 kB); longer notes are cut at a
/// character boundary so the Event is still written.
pub const MAX_NOTE_BYTES: usize = 1024;

/// Records Events about objects for one reporting controller (controller-runtime's
/// `events.EventRecorder`). Cheap to clone; clones share the provider's queue.
#[derive(Clone)]
pub struct Recorder {
    provider: Provider,
    reporter: Arc<kube::runtime::events::Reporter>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("controller", &self.reporter.controller)
            .field("instance", &self.reporter.instance)
            .finish()
    }
}

impl Recorder {
    pub(crate) fn new(provider: Provider, reporter: kube::runtime::events::Reporter) -> Self {
        Self {
            provider,
            reporter: Arc::new(reporter),
        }
    }

    /// The `reportingController` of this recorder's Events.
    pub fn controller(&self) -> &str {
        &self.reporter.controller
    }

    /// The `reportingInstance` of this recorder's Events (`<controller>-<hostname>`,
    /// as client-go sets it).
    pub fn instance(&self) -> Option<&str> {
        self.reporter.instance.as_deref()
    }

    /// Records an Event regarding `obj` (Go's `Eventf(obj, nil, type, reason, action,
    /// note)`). `reason` and `action` are short `PascalCase` words (at most 128
    /// characters); `note` is for people. Returns at once; see the module docs for
    /// what happens when the queue is full.
    pub fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) {
        self.event_for_reference(obj.object_ref(&()), None, type_, reason, action, note);
    }

    /// Records an Event regarding `obj` that also names a `related` object (Go's
    /// `Eventf(obj, related, ...)`), e.g. the ReplicaSet a Deployment event is about.
    pub fn event_with_related<K: Resource<DynamicType = ()>, R: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        related: &R,
        type_: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) {
        self.event_for_reference(
            obj.object_ref(&()),
            Some(related.object_ref(&())),
            type_,
            reason,
            action,
            note,
        );
    }

    /// Records an Event regarding an object given by reference (for dynamic objects
    /// or objects you hold only a reference to).
    pub fn event_for_reference(
        &self,
        regarding: ObjectReference,
        related: Option<ObjectReference>,
        type_: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
        note: impl Into<String>,
    ) {
        let note = truncate_note(note.into());
        let event = kube::runtime::events::Event {
            type_,
            reason: reason.into(),
            note: (!note.is_empty()).then_some(note),
            action: action.into(),
            secondary: related,
        };
        self.provider
            .enqueue(self.reporter.clone(), event, regarding);
    }
}

fn truncate_note(mut note: String) -> String {
    if note.len() > MAX_NOTE_BYTES {
        let mut end = MAX_NOTE_BYTES;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_at_a_char_boundary() {
        let note = "é".repeat(MAX_NOTE_BYTES);
        let cut = truncate_note(note);
        assert!(cut.len() <= MAX_NOTE_BYTES);
        assert!(cut.len() >= MAX_NOTE_BYTES - 1);
        assert_eq!(truncate_note("short".into()), "short");
    }
}
