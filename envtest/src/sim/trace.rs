//! The simulation's trace: one line per thing that happened — a request and its status, a
//! reconcile starting and ending, a fault, a replica crashing — stamped with the virtual time,
//! and a hash over all of it. Two runs of one seed give the same lines, so the same hash; a
//! failing run prints its last lines (the window before the failure).
//!
//! Reconciles are seen without depending on ctrl-runtime: its controllers open a `reconcile`
//! span per reconcile (fields `controller`, `namespace`, `name`; `runtime/src/controller/handle.rs`),
//! and [`ReconcileLayer`], a `tracing` layer the simulation installs on its thread, turns the
//! span's life into trace lines. It also finds two open reconciles of one key at once — two
//! workers, or two replicas, holding one key — which the simulation's checker reports.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::Context;

/// The trace of one run; clones share it.
#[derive(Clone, Default)]
pub(crate) struct Trace {
    inner: Arc<Mutex<Lines>>,
}

#[derive(Default)]
struct Lines {
    lines: Vec<String>,
    hasher: DefaultHasher,
    /// Open reconciles: span id -> key, and how many are open per key.
    open: HashMap<u64, String>,
    held: HashMap<String, usize>,
    /// Broken invariants found while tracing (two holders of one key, a write without the
    /// lease), for the checker to report.
    violations: Vec<String>,
}

impl Trace {
    /// Adds a line at the current virtual time (seconds since the simulation started).
    pub fn push(&self, start: tokio::time::Instant, what: impl std::fmt::Display) {
        let t = start.elapsed();
        let line = format!("{:>6}.{:03}s {what}", t.as_secs(), t.subsec_millis());
        let mut l = self.inner.lock();
        line.hash(&mut l.hasher);
        l.lines.push(line);
    }

    /// Records a broken invariant (reported by the next check).
    pub fn violation(&self, what: String) {
        self.inner.lock().violations.push(what);
    }

    /// The violations found so far.
    pub fn violations(&self) -> Vec<String> {
        self.inner.lock().violations.clone()
    }

    /// How many reconciles are running now.
    pub fn reconciling(&self) -> usize {
        self.inner.lock().open.len()
    }

    /// The hash of every line so far.
    pub fn hash(&self) -> u64 {
        let l = self.inner.lock();
        let mut h = l.hasher.clone();
        l.lines.len().hash(&mut h);
        h.finish()
    }

    /// How many lines there are.
    pub fn len(&self) -> usize {
        self.inner.lock().lines.len()
    }

    /// The last `n` lines.
    pub fn last(&self, n: usize) -> Vec<String> {
        let l = self.inner.lock();
        l.lines[l.lines.len().saturating_sub(n)..].to_vec()
    }

    fn open(&self, start: tokio::time::Instant, id: u64, key: String) {
        self.push(start, format_args!("reconcile start {key}"));
        let mut l = self.inner.lock();
        let n = l.held.entry(key.clone()).or_default();
        *n += 1;
        if *n > 1 {
            let v = format!("two workers hold {key} at once");
            l.violations.push(v);
        }
        l.open.insert(id, key);
    }

    fn close(&self, start: tokio::time::Instant, id: u64) {
        let key = {
            let mut l = self.inner.lock();
            let Some(key) = l.open.remove(&id) else {
                return;
            };
            if let Some(n) = l.held.get_mut(&key) {
                *n -= 1;
            }
            key
        };
        self.push(start, format_args!("reconcile end   {key}"));
    }
}

/// Turns ctrl-runtime's `reconcile` spans into trace lines (see the module doc).
pub(crate) struct ReconcileLayer {
    pub trace: Trace,
    pub start: tokio::time::Instant,
}

/// Collects a reconcile span's key fields.
#[derive(Default)]
struct KeyFields {
    controller: String,
    namespace: String,
    name: String,
    request: String,
}

impl Visit for KeyFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let slot = match field.name() {
            "controller" => &mut self.controller,
            "namespace" => &mut self.namespace,
            "name" => &mut self.name,
            "request" => &mut self.request,
            _ => return,
        };
        slot.clear();
        let _ = write!(slot, "{value:?}");
        *slot = slot.trim_matches('"').to_string();
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ReconcileLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        if attrs.metadata().name() != "reconcile" {
            return;
        }
        let mut f = KeyFields::default();
        attrs.record(&mut f);
        let key = if f.request.is_empty() {
            format!("{} {}/{}", f.controller, f.namespace, f.name)
        } else {
            format!("{} {}", f.controller, f.request)
        };
        self.trace.open(self.start, id.into_u64(), key);
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.trace.close(self.start, id.into_u64());
    }
}
