//! [`QueueMetrics`]: the handles of one queue, resolved once at construction, and the
//! batched updates not handed to them yet.

use std::sync::Arc;

use super::histogram::DurationMetric;
use super::{
    CounterMetric, GaugeMetric, MAX_RECOMMENDED_UNIQUE_PRIORITIES, MetricsProvider,
    SettableGaugeMetric,
};

/// The resolved handles of one queue. Queues keep an `Option<QueueMetrics>`: `None` costs
/// nothing per operation.
pub(crate) struct QueueMetrics {
    provider: Arc<dyn MetricsProvider>,
    name: String,
    priority_aware: bool,
    /// Depth gauges by priority, resolved on first use; at most
    /// [`MAX_RECOMMENDED_UNIQUE_PRIORITIES`], later priorities share `depth_over_limit`.
    depth: Vec<(i32, Box<dyn GaugeMetric>)>,
    /// The `exceeded_cardinality_limit` gauge, once needed.
    depth_over_limit: Option<Box<dyn GaugeMetric>>,
    /// Whether `adds`, `retries` and `depth` updates are batched (see
    /// [`MetricsProvider::batched`]).
    batched: bool,
    /// Batched updates not handed over yet.
    pending_adds: u64,
    pending_retries: u64,
    pending_depth: Vec<(i32, i64)>,
    pub(crate) adds: Box<dyn CounterMetric>,
    latency: DurationMetric,
    work_duration: DurationMetric,
    pub(crate) unfinished: Box<dyn SettableGaugeMetric>,
    pub(crate) longest: Box<dyn SettableGaugeMetric>,
    pub(crate) retries: Box<dyn CounterMetric>,
}

impl QueueMetrics {
    /// Resolves every handle of queue `name`; `None` when `name` is empty (client-go).
    pub(crate) fn new(
        provider: Option<Arc<dyn MetricsProvider>>,
        name: &str,
        priority_aware: bool,
    ) -> Option<Self> {
        let provider = provider?;
        if name.is_empty() {
            return None;
        }
        let first = provider.new_depth_metric(name, priority_aware.then_some(0));
        let batched = provider.batched();
        Some(Self {
            depth: vec![(0, first)],
            depth_over_limit: None,
            batched,
            pending_adds: 0,
            pending_retries: 0,
            pending_depth: Vec::new(),
            adds: provider.new_adds_metric(name),
            latency: DurationMetric::new(provider.new_latency_metric(name), batched),
            work_duration: DurationMetric::new(provider.new_work_duration_metric(name), batched),
            unfinished: provider.new_unfinished_work_seconds_metric(name),
            longest: provider.new_longest_running_processor_seconds_metric(name),
            retries: provider.new_retries_metric(name),
            name: name.to_string(),
            priority_aware,
            provider,
        })
    }

    /// An item became queued at `priority`: one more add, one more in depth.
    pub(crate) fn note_add(&mut self, priority: i32) {
        if self.batched {
            self.pending_adds += 1;
        } else {
            self.adds.inc();
        }
        self.note_depth(priority, 1);
    }

    /// One more retry.
    pub(crate) fn note_retry(&mut self) {
        if self.batched {
            self.pending_retries += 1;
        } else {
            self.retries.inc();
        }
    }

    /// The depth at `priority` changed by `delta`.
    pub(crate) fn note_depth(&mut self, priority: i32, delta: i64) {
        if !self.batched {
            self.depth(priority).add(delta);
            return;
        }
        let priority = if self.priority_aware { priority } else { 0 };
        match self.pending_depth.iter_mut().find(|(p, _)| *p == priority) {
            Some((_, d)) => *d += delta,
            None => self.pending_depth.push((priority, delta)),
        }
    }

    /// An item queued at `from` was handed out at `to` ([`now_ticks`] timestamps).
    pub(crate) fn note_latency(&mut self, from: u64, to: u64) {
        self.latency.observe(from, to);
    }

    /// An item handed out at `from` was done at `to` ([`now_ticks`] timestamps).
    pub(crate) fn note_work(&mut self, from: u64, to: u64) {
        self.work_duration.observe(from, to);
    }

    /// Hands the batched updates to the handles.
    pub(crate) fn flush(&mut self) {
        self.latency.flush();
        self.work_duration.flush();
        if self.pending_adds > 0 {
            self.adds.inc_by(std::mem::take(&mut self.pending_adds));
        }
        if self.pending_retries > 0 {
            self.retries
                .inc_by(std::mem::take(&mut self.pending_retries));
        }
        for i in 0..self.pending_depth.len() {
            let (p, d) = self.pending_depth[i];
            self.pending_depth[i].1 = 0;
            // Resolved even for a net change of 0: a priority once used has its series.
            let gauge = self.depth(p);
            if d != 0 {
                gauge.add(d);
            }
        }
    }

    /// The depth gauge for `priority` (always the single one on plain queues). The
    /// first [`MAX_RECOMMENDED_UNIQUE_PRIORITIES`] priorities seen get their own
    /// series, later ones share `priority="exceeded_cardinality_limit"` (Go switches
    /// every priority to it then; keeping the first ones keeps each series' adds and
    /// removals on the same gauge).
    pub(crate) fn depth(&mut self, priority: i32) -> &dyn GaugeMetric {
        let priority = if self.priority_aware { priority } else { 0 };
        let pos = match self.depth.iter().position(|(p, _)| *p == priority) {
            Some(pos) => pos,
            None if self.depth.len() >= MAX_RECOMMENDED_UNIQUE_PRIORITIES => {
                let (provider, name) = (&self.provider, &self.name);
                return &**self
                    .depth_over_limit
                    .get_or_insert_with(|| provider.new_depth_metric_over_limit(name));
            }
            None => {
                let g = self.provider.new_depth_metric(&self.name, Some(priority));
                self.depth.push((priority, g));
                self.depth.len() - 1
            }
        };
        &*self.depth[pos].1
    }
}

impl Drop for QueueMetrics {
    fn drop(&mut self) {
        // Batched updates must not be lost with the queue.
        self.flush();
    }
}
