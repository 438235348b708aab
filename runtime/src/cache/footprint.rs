//! What an informer's cache costs: the gauges `controller_runtime_cache_objects` and
//! `controller_runtime_cache_approximate_bytes` (labels `group`, `version`, `kind`),
//! kept by the informer (`super::informer`) after every store write, so a user sees
//! what a cache holds before it runs out of memory (controller-runtime #3182, open
//! upstream; the PR that proposed it named the count `controller_runtime_cache_resources`
//! with the same labels).
//!
//! The byte count is an estimate that costs nothing per event: one stored object in
//! [`SAMPLE_EVERY`] (and the first) is measured by writing its `Debug` form into a byte
//! counter (no allocation, no serialisation of the others), and the gauge is the object
//! count times the mean sample. Several caches in one process watching the same kind
//! add up in one series: each informer adds its own change and takes back what it
//! reported when it is dropped. Registered in the process registry
//! ([`crate::metrics::registry`]).

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use prometheus::{IntGauge, IntGaugeVec, Opts};

/// One stored object in this many is measured for the byte estimate.
pub const SAMPLE_EVERY: u64 = 64;

fn gauge(name: &str, help: &str) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), &["group", "version", "kind"])
        .expect("static metric definition is valid");
    let _ = crate::metrics::registry().register(Box::new(g.clone()));
    g
}

fn objects_vec() -> &'static IntGaugeVec {
    static M: OnceLock<IntGaugeVec> = OnceLock::new();
    M.get_or_init(|| {
        gauge(
            "controller_runtime_cache_objects",
            "Number of objects held in the controller-runtime cache, by group, version, kind.",
        )
    })
}

fn bytes_vec() -> &'static IntGaugeVec {
    static M: OnceLock<IntGaugeVec> = OnceLock::new();
    M.get_or_init(|| {
        gauge(
            "controller_runtime_cache_approximate_bytes",
            "Approximate size in bytes of the objects held in the controller-runtime cache, \
             by group, version, kind (object count times the mean size of sampled objects).",
        )
    })
}

/// Counts the bytes written to it.
struct ByteCounter(usize);

impl std::fmt::Write for ByteCounter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// The gauges of one informer and what it reported to them.
pub(crate) struct Footprint {
    objects: IntGauge,
    bytes: IntGauge,
    stored: AtomicU64,
    sampled_bytes: AtomicU64,
    samples: AtomicU64,
    reported_objects: AtomicI64,
    reported_bytes: AtomicI64,
}

impl Footprint {
    /// The gauges of `group/version, Kind=kind`.
    pub(crate) fn new(group: &str, version: &str, kind: &str) -> Self {
        let labels = [group, version, kind];
        Self {
            objects: objects_vec().with_label_values(&labels),
            bytes: bytes_vec().with_label_values(&labels),
            stored: AtomicU64::new(0),
            sampled_bytes: AtomicU64::new(0),
            samples: AtomicU64::new(0),
            reported_objects: AtomicI64::new(0),
            reported_bytes: AtomicI64::new(0),
        }
    }

    /// Notes one stored object; measures it if it is a sample.
    pub(crate) fn stored(&self, obj: &impl std::fmt::Debug) {
        if !self
            .stored
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SAMPLE_EVERY)
        {
            return;
        }
        let mut c = ByteCounter(0);
        let _ = write!(c, "{obj:?}");
        self.sampled_bytes.fetch_add(c.0 as u64, Ordering::Relaxed);
        self.samples.fetch_add(1, Ordering::Relaxed);
    }

    /// The approximate bytes of `objects` objects.
    pub(crate) fn approximate_bytes(&self, objects: usize) -> i64 {
        let samples = self.samples.load(Ordering::Relaxed).max(1);
        let mean = self.sampled_bytes.load(Ordering::Relaxed) / samples;
        (objects as u64).saturating_mul(mean).min(i64::MAX as u64) as i64
    }

    /// Sets this informer's share of the gauges to `objects` objects.
    pub(crate) fn publish(&self, objects: usize) {
        let n = objects.min(i64::MAX as usize) as i64;
        let b = self.approximate_bytes(objects);
        self.objects
            .add(n - self.reported_objects.swap(n, Ordering::Relaxed));
        self.bytes
            .add(b - self.reported_bytes.swap(b, Ordering::Relaxed));
    }
}

impl Drop for Footprint {
    fn drop(&mut self) {
        self.objects
            .sub(self.reported_objects.swap(0, Ordering::Relaxed));
        self.bytes
            .sub(self.reported_bytes.swap(0, Ordering::Relaxed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Obj(#[allow(dead_code)] String);

    #[test]
    fn gauges_follow_the_count_and_are_taken_back_on_drop() {
        let read = |v: &IntGaugeVec| v.with_label_values(&["t.example", "v9", "Fp"]).get();
        let f = Footprint::new("t.example", "v9", "Fp");
        for _ in 0..3 {
            f.stored(&Obj("x".repeat(100)));
        }
        f.publish(3);
        assert_eq!(read(objects_vec()), 3);
        let one = format!("{:?}", Obj("x".repeat(100))).len() as i64;
        assert_eq!(read(bytes_vec()), 3 * one);
        let g = Footprint::new("t.example", "v9", "Fp");
        g.stored(&Obj(String::new()));
        g.publish(1);
        assert_eq!(read(objects_vec()), 4);
        f.publish(1);
        assert_eq!(read(objects_vec()), 2);
        assert_eq!(read(bytes_vec()), one + g.approximate_bytes(1));
        drop(f);
        drop(g);
        assert_eq!((read(objects_vec()), read(bytes_vec())), (0, 0));
    }
}
