//! Work-queue metrics read back from the process registry after a known sequence of
//! operations (client-go's `metrics_test.go`, controller-runtime's metric names).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctrl_runtime::workqueue::{
    BucketCounts, CounterMetric, DURATION_BUCKETS, GaugeMetric, HistogramMetric, MetricsProvider,
    QueueConfig, RateLimitingQueue, SettableGaugeMetric, prometheus_metrics_provider,
};
use prometheus::proto::{Metric, MetricType};

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn queue() -> (RateLimitingQueue<String>, String) {
    let name = format!("rlq-metrics-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let q = RateLimitingQueue::new(
        QueueConfig::new(name.clone()).with_metrics(prometheus_metrics_provider()),
    );
    (q, name)
}

fn find(family: &str, name: &str) -> Option<(MetricType, Metric)> {
    let families = ctrl_runtime::metrics::registry().gather();
    let fam = families.iter().find(|f| f.name() == family)?;
    let m = fam.get_metric().iter().find(|m| {
        let has = |k: &str, v: &str| {
            m.get_label()
                .iter()
                .any(|l| l.name() == k && l.value() == v)
        };
        has("name", name) && has("controller", name)
    })?;
    Some((fam.get_field_type(), m.clone()))
}

fn value(family: &str, name: &str) -> f64 {
    match find(family, name) {
        Some((MetricType::COUNTER, m)) => m.get_counter().get_value(),
        Some((MetricType::GAUGE, m)) => m.get_gauge().get_value(),
        Some((_, m)) => m.get_histogram().get_sample_count() as f64,
        None => f64::NAN,
    }
}

#[tokio::test]
async fn counts_after_a_known_sequence() {
    let (q, name) = queue();
    q.add("a".into());
    q.add("b".into());
    q.add("a".into()); // dedup: not an add
    assert_eq!(value("workqueue_adds_total", &name), 2.0);
    assert_eq!(value("workqueue_depth", &name), 2.0);

    let a = q.get().await.expect("a");
    assert_eq!(value("workqueue_depth", &name), 1.0);
    assert_eq!(value("workqueue_queue_duration_seconds", &name), 1.0);
    assert_eq!(value("workqueue_work_duration_seconds", &name), 0.0);

    q.add("a".into()); // re-added while processing: an add, counted in depth
    assert_eq!(value("workqueue_adds_total", &name), 3.0);
    assert_eq!(value("workqueue_depth", &name), 2.0);
    q.done(&a);
    assert_eq!(value("workqueue_work_duration_seconds", &name), 1.0);

    q.add_after("c".into(), Duration::ZERO);
    assert_eq!(value("workqueue_retries_total", &name), 1.0);
    assert_eq!(value("workqueue_adds_total", &name), 4.0);
    assert_eq!(value("workqueue_depth", &name), 3.0);

    for _ in 0..3 {
        let k = q.get().await.expect("item");
        q.done(&k);
    }
    assert_eq!(value("workqueue_depth", &name), 0.0);
    assert_eq!(value("workqueue_queue_duration_seconds", &name), 4.0);
    assert_eq!(value("workqueue_work_duration_seconds", &name), 4.0);
}

#[tokio::test]
async fn depth_has_an_empty_priority_label_on_the_plain_queue() {
    let (q, name) = queue();
    q.add("x".into());
    let (_, m) = find("workqueue_depth", &name).expect("depth");
    let prio = m
        .get_label()
        .iter()
        .find(|l| l.name() == "priority")
        .map(|l| l.value().to_string());
    assert_eq!(prio.as_deref(), Some(""));
}

#[tokio::test]
async fn histograms_use_controller_runtime_buckets() {
    let (q, name) = queue();
    q.add("x".into());
    let x = q.get().await.expect("x");
    q.done(&x);
    for family in [
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
    ] {
        let (kind, m) = find(family, &name).expect("histogram");
        assert_eq!(kind, MetricType::HISTOGRAM);
        let bounds: Vec<f64> = m
            .get_histogram()
            .get_bucket()
            .iter()
            .map(|b| b.upper_bound())
            .collect();
        assert_eq!(bounds.len(), 12);
        let mut want = 1e-8;
        for b in bounds {
            assert!((b - want).abs() <= want * 1e-9, "bucket {b} != {want}");
            want *= 10.0;
        }
        assert!(m.get_histogram().get_sample_sum() >= 0.0);
    }
}

#[tokio::test]
async fn unfinished_work_is_reported_while_processing() {
    let (q, name) = queue();
    q.add("slow".into());
    let k = q.get().await.expect("slow");
    // The gauges are refreshed every 500 ms by the metrics thread.
    let mut seen = 0.0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        seen = value("workqueue_longest_running_processor_seconds", &name);
        if seen > 0.0 {
            break;
        }
    }
    assert!(seen > 0.0, "longest running processor stayed at {seen}");
    assert!(value("workqueue_unfinished_work_seconds", &name) >= seen);
    q.done(&k);
}

#[tokio::test]
async fn no_provider_or_empty_name_registers_nothing() {
    let q: RateLimitingQueue<String> =
        RateLimitingQueue::new(QueueConfig::new("").with_metrics(prometheus_metrics_provider()));
    q.add("x".into());
    assert!(find("workqueue_adds_total", "").is_none());
    let q: RateLimitingQueue<String> = RateLimitingQueue::new(QueueConfig::new("rlq-metrics-none"));
    q.add("x".into());
    assert!(find("workqueue_adds_total", "rlq-metrics-none").is_none());
}

#[test]
fn provider_is_registered_once() {
    let a = prometheus_metrics_provider();
    let b = prometheus_metrics_provider();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
}

#[tokio::test]
async fn text_exposition_has_controller_runtime_names_and_labels() {
    let (q, name) = queue();
    q.add("x".into());
    let x = q.get().await.expect("x");
    q.done(&x);
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&ctrl_runtime::metrics::registry().gather())
        .expect("encode");
    let labels = format!("controller=\"{name}\",name=\"{name}\"");
    for line in [
        format!("workqueue_adds_total{{{labels}}} 1"),
        format!("workqueue_work_duration_seconds_bucket{{{labels},le="),
        format!("workqueue_work_duration_seconds_bucket{{{labels},le=\"+Inf\"}} 1"),
        format!("workqueue_queue_duration_seconds_count{{{labels}}} 1"),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&line)),
            "missing {line} in:\n{text}"
        );
    }
    assert!(text.contains("# TYPE workqueue_queue_duration_seconds histogram"));
    let buckets = text
        .lines()
        .filter(|l| {
            l.starts_with(&format!(
                "workqueue_work_duration_seconds_bucket{{{labels},le="
            ))
        })
        .count();
    assert_eq!(buckets, 13, "12 buckets and +Inf");
    assert!(text.lines().any(|l| l.starts_with("workqueue_depth{")
        && l.contains(&format!("name=\"{name}\""))
        && l.contains("priority=\"\"")));
}

#[test]
fn histogram_buckets_hold_values_up_to_their_bound() {
    let name = format!("rlq-metrics-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let h = prometheus_metrics_provider().new_latency_metric(&name);
    // 0 and 1e-8 in the first bucket; just above 1e-8 in the second; 1e-3 exactly in
    // the 1e-3 bucket; 0.5 in the 1 s one; 5000 s only in +Inf.
    for v in [0.0, 1e-8, 1.1e-8, 1e-3, 0.5, 5000.0] {
        h.observe(v);
    }
    let (_, m) = find("workqueue_queue_duration_seconds", &name).expect("histogram");
    let cumulative: Vec<u64> = m
        .get_histogram()
        .get_bucket()
        .iter()
        .map(|b| b.cumulative_count())
        .collect();
    assert_eq!(cumulative, vec![2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 5]);
    assert_eq!(m.get_histogram().get_sample_count(), 6);
    let sum = m.get_histogram().get_sample_sum();
    assert!((sum - 5_000.501_000_021).abs() < 1e-6, "sum {sum}");
}

#[tokio::test]
async fn batched_counts_are_exact_at_every_read_and_survive_the_queue() {
    let (q, name) = queue();
    for k in ["a", "b", "c"] {
        q.add(k.into());
    }
    q.add_after("d".into(), Duration::from_secs(3600));
    assert_eq!(value("workqueue_adds_total", &name), 3.0);
    assert_eq!(value("workqueue_depth", &name), 3.0);
    assert_eq!(value("workqueue_retries_total", &name), 1.0);
    let a = q.get().await.expect("a");
    q.add("e".into());
    assert_eq!(value("workqueue_depth", &name), 3.0, "one out, one in");
    q.done(&a);
    drop(q);
    assert_eq!(
        value("workqueue_adds_total", &name),
        4.0,
        "updates not yet read are handed over when the queue is dropped"
    );
}

/// The cumulative bucket counts and the sum of a queue's histogram.
fn histogram(family: &str, name: &str) -> (Vec<u64>, u64, f64) {
    let (_, m) = find(family, name).expect("histogram");
    let h = m.get_histogram();
    let cumulative = h
        .get_bucket()
        .iter()
        .map(|b| b.cumulative_count())
        .collect();
    (cumulative, h.get_sample_count(), h.get_sample_sum())
}

#[tokio::test]
async fn batched_durations_land_in_their_buckets_with_their_sums() {
    let (q, name) = queue();
    q.add("slow".into());
    tokio::time::sleep(Duration::from_millis(15)).await;
    let k = q.get().await.expect("slow");
    tokio::time::sleep(Duration::from_millis(2)).await;
    q.done(&k);

    // Waited at least 15 ms: nothing at or below 10 ms, one in a bucket above.
    let (cum, count, sum) = histogram("workqueue_queue_duration_seconds", &name);
    assert_eq!(count, 1);
    assert_eq!(cum[6], 0, "le=0.01 holds nothing: {cum:?}");
    assert_eq!(cum[11], 1, "le=1000 holds it: {cum:?}");
    // Sums go through the TSC calibration: leave it a little room.
    assert!(sum >= 0.012, "queue duration sum {sum}");

    // Worked at least 2 ms: nothing at or below 1 ms.
    let (cum, count, sum) = histogram("workqueue_work_duration_seconds", &name);
    assert_eq!(count, 1);
    assert_eq!(cum[5], 0, "le=0.001 holds nothing: {cum:?}");
    assert!(sum >= 0.0015, "work duration sum {sum}");
}

/// A provider that records every call its handles get, unbatched.
#[derive(Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Handle(&'static str, Arc<Mutex<Vec<String>>>);

impl Handle {
    fn note(&self, what: String) {
        self.1.lock().expect("recorder lock").push(what);
    }
}

impl CounterMetric for Handle {
    fn inc(&self) {
        self.note(format!("{} inc", self.0));
    }
}
impl GaugeMetric for Handle {
    fn inc(&self) {
        self.note(format!("{} inc", self.0));
    }
    fn dec(&self) {
        self.note(format!("{} dec", self.0));
    }
}
impl SettableGaugeMetric for Handle {
    fn set(&self, _: f64) {}
}
impl HistogramMetric for Handle {
    fn observe(&self, v: f64) {
        assert!(v >= 0.0, "negative duration {v}");
        self.note(format!("{} observe", self.0));
    }
}

impl MetricsProvider for Recorder {
    fn new_depth_metric(&self, _: &str, _: Option<i32>) -> Box<dyn GaugeMetric> {
        Box::new(Handle("depth", Arc::clone(&self.0)))
    }
    fn new_adds_metric(&self, _: &str) -> Box<dyn CounterMetric> {
        Box::new(Handle("adds", Arc::clone(&self.0)))
    }
    fn new_latency_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
        Box::new(Handle("latency", Arc::clone(&self.0)))
    }
    fn new_work_duration_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
        Box::new(Handle("work", Arc::clone(&self.0)))
    }
    fn new_unfinished_work_seconds_metric(&self, _: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(Handle("unfinished", Arc::clone(&self.0)))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        _: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(Handle("longest", Arc::clone(&self.0)))
    }
    fn new_retries_metric(&self, _: &str) -> Box<dyn CounterMetric> {
        Box::new(Handle("retries", Arc::clone(&self.0)))
    }
}

#[tokio::test]
async fn an_unbatched_provider_sees_every_change_as_it_happens() {
    let rec = Recorder::default();
    let log = Arc::clone(&rec.0);
    let q = RateLimitingQueue::new(QueueConfig::new("recorded").with_metrics(Arc::new(rec)));
    let seen = || std::mem::take(&mut *log.lock().expect("recorder lock"));
    q.add("a".to_string());
    q.add("a".to_string());
    assert_eq!(seen(), ["adds inc", "depth inc"], "a dedup hit is no add");
    let a = q.get().await.expect("a");
    assert_eq!(seen(), ["depth dec", "latency observe"]);
    q.done(&a);
    assert_eq!(seen(), ["work observe"]);
    q.add_after("b".to_string(), Duration::ZERO);
    assert_eq!(seen(), ["retries inc", "adds inc", "depth inc"]);
}

#[test]
fn the_default_bucketed_observe_keeps_counts() {
    struct Values(Mutex<Vec<f64>>);
    impl HistogramMetric for Values {
        fn observe(&self, v: f64) {
            self.0.lock().expect("values lock").push(v);
        }
    }
    let h = Values(Mutex::new(Vec::new()));
    let mut counts: BucketCounts = [0; 13];
    counts[0] = 1;
    counts[2] = 2;
    counts[12] = 1;
    h.observe_bucketed(&counts, 1234.5);
    let got = h.0.into_inner().expect("values lock");
    assert_eq!(got, [DURATION_BUCKETS[0], 1e-6, 1e-6, 1000.0]);
}

#[tokio::test]
async fn longest_running_follows_the_oldest_item_still_in_flight() {
    let (q, name) = queue();
    q.add("a".into());
    let a = q.get().await.expect("a");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for k in ["b", "c"] {
        q.add(k.into());
    }
    let b_started = std::time::Instant::now();
    let b = q.get().await.expect("b");
    let c = q.get().await.expect("c");
    // `a` finishes first; `d` then takes the in-flight entry `a` left free.
    q.done(&a);
    q.add("d".into());
    let d = q.get().await.expect("d");
    let (_, count, sum) = histogram("workqueue_work_duration_seconds", &name);
    assert_eq!(count, 1);
    assert!(sum >= 0.25, "a worked at least 300 ms: {sum}");

    // Wait for a refresh of the gauges that no longer counts `a`.
    let mut longest = f64::NAN;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        longest = value("workqueue_longest_running_processor_seconds", &name);
        if longest > 0.0 && longest < 0.3 {
            break;
        }
    }
    let b_age = b_started.elapsed().as_secs_f64();
    assert!(
        longest > 0.0 && longest <= b_age,
        "longest {longest} should be b's age (at most {b_age}), not a's"
    );
    let unfinished = value("workqueue_unfinished_work_seconds", &name);
    assert!(
        unfinished >= longest,
        "unfinished {unfinished} < longest {longest}"
    );
    for k in [b, c, d] {
        q.done(&k);
    }
    let (_, count, _) = histogram("workqueue_work_duration_seconds", &name);
    assert_eq!(count, 4);
}
