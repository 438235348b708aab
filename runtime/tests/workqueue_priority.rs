//! The priority queue against controller-runtime's `priorityqueue_test.go` edge cases;
//! depth and adds are read back from the Prometheus registry.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl_runtime::workqueue::{
    AddOpts, ItemExponentialFailureRateLimiter, PriorityQueue, Queue, QueueConfig, RateLimiter,
    prometheus_metrics_provider,
};
use parking_lot::Mutex;
use prometheus::proto::MetricType;
use tokio::time::Instant;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A queue with Prometheus metrics under a name no other test uses.
fn queue() -> (PriorityQueue<String>, String) {
    let name = format!("pq-test-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let q = PriorityQueue::new(
        QueueConfig::new(name.clone()).with_metrics(prometheus_metrics_provider()),
    );
    (q, name)
}

fn s(v: &str) -> String {
    v.to_string()
}

fn prio(p: i32) -> AddOpts {
    AddOpts {
        priority: Some(p),
        ..Default::default()
    }
}

fn after(d: Duration) -> AddOpts {
    AddOpts {
        after: Some(d),
        ..Default::default()
    }
}

/// Value of metric `family` for queue `name` (and `priority`, for the depth).
fn metric(family: &str, name: &str, priority: Option<&str>) -> Option<f64> {
    let families = ctrl_runtime::metrics::registry().gather();
    let fam = families.iter().find(|f| f.name() == family)?;
    let kind = fam.get_field_type();
    fam.get_metric()
        .iter()
        .find(|m| {
            let labels = m.get_label();
            let has = |k: &str, v: &str| labels.iter().any(|l| l.name() == k && l.value() == v);
            has("name", name)
                && has("controller", name)
                && priority.is_none_or(|p| has("priority", p))
        })
        .map(|m| match kind {
            MetricType::COUNTER => m.get_counter().get_value(),
            MetricType::GAUGE => m.get_gauge().get_value(),
            _ => m.get_histogram().get_sample_count() as f64,
        })
}

fn depth(name: &str, p: i32) -> Option<f64> {
    metric("workqueue_depth", name, Some(&p.to_string()))
}

fn adds(name: &str) -> f64 {
    metric("workqueue_adds_total", name, None).unwrap_or(0.0)
}

fn retries(name: &str) -> f64 {
    metric("workqueue_retries_total", name, None).unwrap_or(0.0)
}

async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn returns_items_in_order() {
    let (q, name) = queue();
    q.add_with_opts(AddOpts::default(), [s("foo")]);
    q.add_with_opts(AddOpts::default(), [s("bar")]);
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 0)));
    assert_eq!(q.get_with_priority().await, Some((s("bar"), 0)));
    assert_eq!(depth(&name, 0), Some(0.0));
    assert_eq!(adds(&name), 2.0);
    assert_eq!(retries(&name), 0.0);
}

#[tokio::test]
async fn does_not_return_a_locked_item_until_done() {
    let (q, name) = queue();
    q.add(s("foo"));
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    q.add(s("foo"));
    q.add(s("bar"));
    assert_eq!(q.get().await.as_deref(), Some("bar"));
    assert_eq!(depth(&name, 0), Some(1.0));
    assert_eq!(adds(&name), 3.0);
    q.add(s("baz"));
    q.done(&s("foo"));
    // foo was re-added before baz; it is handed out as soon as it is unlocked.
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(depth(&name, 0), Some(1.0));
    assert_eq!(adds(&name), 4.0);
}

#[tokio::test]
async fn dedups_and_counts_a_locked_readd_in_len() {
    let (q, name) = queue();
    q.add(s("foo"));
    q.add(s("foo"));
    assert_eq!(q.len(), 1);
    assert_eq!(depth(&name, 0), Some(1.0));
    assert_eq!(adds(&name), 1.0);
    let (item, p) = q.get_with_priority().await.expect("item");
    assert_eq!((item.as_str(), p), ("foo", 0));
    q.add(s("foo"));
    assert_eq!(
        q.len(),
        1,
        "controller-runtime counts a re-added locked item"
    );
    q.done(&s("foo"));
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 0)));
    assert_eq!(depth(&name, 0), Some(0.0));
    assert_eq!(adds(&name), 2.0);
}

#[tokio::test]
async fn retains_the_highest_priority() {
    let (q, name) = queue();
    q.add_with_opts(prio(1), [s("foo")]);
    q.add_with_opts(prio(2), [s("foo")]);
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 2)));
    assert_eq!(q.len(), 0);
    assert_eq!(depth(&name, 1), Some(0.0));
    assert_eq!(depth(&name, 2), Some(0.0));
    assert_eq!(adds(&name), 1.0);
}

#[tokio::test]
async fn will_not_decrease_the_priority() {
    let (q, name) = queue();
    q.add_with_opts(prio(2), [s("foo")]);
    q.add_with_opts(prio(1), [s("foo")]);
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 2)));
    assert_eq!(depth(&name, 1), None, "priority 1 was never counted");
    assert_eq!(adds(&name), 1.0);
}

#[tokio::test]
async fn raised_priority_goes_to_the_front() {
    let (q, name) = queue();
    q.add(s("foo"));
    q.add(s("bar"));
    q.add(s("baz"));
    q.add_with_opts(prio(1), [s("baz")]);
    assert_eq!(q.get_with_priority().await, Some((s("baz"), 1)));
    assert_eq!(q.len(), 2);
    assert_eq!(depth(&name, 0), Some(2.0));
    assert_eq!(depth(&name, 1), Some(0.0));
    assert_eq!(adds(&name), 3.0);
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.get().await.as_deref(), Some("bar"));
}

#[tokio::test]
async fn fifo_within_the_new_priority_after_a_raise() {
    let (q, _) = queue();
    q.add_with_opts(prio(0), [s("foo")]);
    q.add_with_opts(prio(1), [s("bar")]);
    q.add_with_opts(prio(1), [s("foo")]);
    assert_eq!(q.len(), 2);
    assert_eq!(q.get_with_priority().await, Some((s("bar"), 1)));
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 1)));
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn high_priority_first_then_fifo() {
    let (q, name) = queue();
    let prios = [-10, -5, 0, 5, 10];
    for i in 0..200 {
        for p in prios {
            q.add_with_opts(prio(p), [format!("p{p}-{i}")]);
        }
    }
    for p in prios.iter().rev() {
        for i in 0..200 {
            assert_eq!(q.get_with_priority().await, Some((format!("p{p}-{i}"), *p)));
        }
    }
    for p in prios {
        assert_eq!(depth(&name, p), Some(0.0));
    }
    assert_eq!(adds(&name), 1000.0);
}

#[tokio::test(start_paused = true)]
async fn retains_the_earliest_ready_time() {
    let (q, name) = queue();
    q.add_with_opts(after(Duration::ZERO), [s("foo")]);
    q.add_with_opts(after(Duration::from_secs(3600)), [s("foo")]);
    assert_eq!(q.len(), 1);
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 0)));
    assert_eq!(depth(&name, 0), Some(0.0));
    assert_eq!(adds(&name), 1.0);
}

#[tokio::test(start_paused = true)]
async fn non_ready_items_are_not_in_len_or_depth() {
    let (q, name) = queue();
    q.add_with_opts(after(Duration::from_millis(500)), [s("foo")]);
    q.add(s("baz"));
    q.add_with_opts(after(Duration::from_millis(500)), [s("bar")]);
    q.add(s("bal"));
    assert_eq!(q.len(), 2);
    assert_eq!(depth(&name, 0), Some(2.0));
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(q.len(), 4);
    assert_eq!(depth(&name, 0), Some(4.0));
    for _ in 0..4 {
        let k = q.get().await.expect("item");
        q.done(&k);
    }
    assert_eq!(q.len(), 0);
    assert_eq!(depth(&name, 0), Some(0.0));
    assert_eq!(retries(&name), 2.0);
}

#[tokio::test(start_paused = true)]
async fn delayed_item_readded_without_delay_is_ready_once() {
    let (q, name) = queue();
    q.add_with_opts(after(Duration::from_secs(3600)), [s("foo")]);
    assert_eq!(q.len(), 0);
    assert_eq!(depth(&name, 0), Some(0.0));
    q.add_with_opts(prio(1), [s("foo")]);
    assert_eq!(q.len(), 1);
    assert_eq!(depth(&name, 1), Some(1.0));
    assert_eq!(depth(&name, 0), Some(0.0));
    assert_eq!(q.get_with_priority().await, Some((s("foo"), 1)));
    assert_eq!(depth(&name, 1), Some(0.0));
    // The stale hour-long deadline must not bring foo back.
    q.done(&s("foo"));
    tokio::time::advance(Duration::from_secs(7200)).await;
    settle().await;
    assert_eq!(q.len(), 0);
    assert_eq!(adds(&name), 1.0);
}

#[tokio::test(start_paused = true)]
async fn high_priority_item_that_became_ready_goes_before_low_priority() {
    let (q, name) = queue();
    q.add_with_opts(prio(-100), [s("foo")]);
    q.add_with_opts(
        AddOpts {
            after: Some(Duration::from_secs(1)),
            priority: Some(0),
            rate_limited: false,
        },
        [s("prio")],
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(q.get_with_priority().await, Some((s("prio"), 0)));
    assert_eq!(depth(&name, -100), Some(1.0));
    assert_eq!(depth(&name, 0), Some(0.0));
    assert_eq!(adds(&name), 2.0);
    assert_eq!(retries(&name), 1.0);
}

#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_by_ready_time() {
    let (q, _) = queue();
    let start = Instant::now();
    q.add_with_opts(after(Duration::from_secs(1)), [s("foo")]);
    q.add_with_opts(after(Duration::from_millis(200)), [s("bar")]);
    assert_eq!(q.get().await.as_deref(), Some("bar"));
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn rate_limited_items_do_not_affect_each_other() {
    let name = format!("pq-test-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let limiter: Arc<ItemExponentialFailureRateLimiter<String>> = Arc::new(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000)),
    );
    let q = PriorityQueue::new(
        QueueConfig::new(name.clone())
            .with_metrics(prometheus_metrics_provider())
            .with_rate_limiter(limiter.clone()),
    );
    for _ in 0..7 {
        limiter.when(&s("bar"));
    }
    let start = Instant::now();
    q.add_with_opts(
        AddOpts {
            rate_limited: true,
            ..Default::default()
        },
        [s("foo"), s("bar")],
    );
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    assert_eq!(q.get().await.as_deref(), Some("bar"));
    assert_eq!(start.elapsed(), Duration::from_millis(640));
    assert_eq!(adds(&name), 2.0);
    assert_eq!(retries(&name), 2.0);
}

#[tokio::test(start_paused = true)]
async fn after_and_rate_limited_take_the_shorter_delay() {
    let (q, _) = queue();
    let start = Instant::now();
    q.add_with_opts(
        AddOpts {
            after: Some(Duration::from_secs(10)),
            rate_limited: true,
            priority: None,
        },
        [s("k")],
    );
    assert_eq!(q.get().await.as_deref(), Some("k"));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
}

#[tokio::test]
async fn get_is_unblocked_on_shutdown_and_adds_after_it_are_ignored() {
    let (q, _) = queue();
    let q2 = q.clone();
    let waiter = tokio::spawn(async move { q2.get_with_priority().await });
    settle().await;
    assert!(!waiter.is_finished());
    q.shut_down();
    assert_eq!(waiter.await.expect("join"), None);
    q.add(s("baz"));
    q.add_with_opts(after(Duration::from_secs(1)), [s("foo")]);
    assert_eq!(q.len(), 0);
    assert_eq!(q.get_with_priority().await, None);
}

#[tokio::test]
async fn drain_waits_for_in_flight() {
    let (q, _) = queue();
    q.add(s("a"));
    let a = q.get().await.expect("a");
    let q2 = q.clone();
    let drain = tokio::spawn(async move { q2.shut_down_with_drain().await });
    settle().await;
    assert!(!drain.is_finished());
    q.done(&a);
    drain.await.expect("join");
}

#[tokio::test]
async fn trait_reports_priorities() {
    let (q, _) = queue();
    let dq: Arc<dyn Queue<String>> = Arc::new(q);
    assert!(dq.is_priority());
    dq.add_with_opts(prio(7), s("x"));
    assert_eq!(dq.get_boxed().await, Some((s("x"), 7)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_many_producers_and_consumers() {
    let (q, name) = queue();
    let handed_out = Arc::new(Mutex::new(HashSet::new()));
    let producers: Vec<_> = (0..8u64)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut x = p.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for _ in 0..1000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = format!("k{}", x % 300);
                    let p = (x >> 20) as i32 % 5;
                    let after = if x.is_multiple_of(10) {
                        Some(Duration::from_millis(x % 5))
                    } else {
                        None
                    };
                    q.add_with_opts(
                        AddOpts {
                            after,
                            priority: Some(p),
                            rate_limited: false,
                        },
                        [key],
                    );
                    if x.is_multiple_of(50) {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..16)
        .map(|_| {
            let q = q.clone();
            let handed_out = Arc::clone(&handed_out);
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    assert!(handed_out.lock().insert(k.clone()), "{k} handed out twice");
                    tokio::task::yield_now().await;
                    handed_out.lock().remove(&k);
                    q.done(&k);
                }
            })
        })
        .collect();
    for p in producers {
        p.await.expect("producer");
    }
    // Let the delays (at most 5 ms) run out, then stop and drain.
    tokio::time::sleep(Duration::from_millis(50)).await;
    while !q.is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    q.shut_down_with_drain().await;
    for c in consumers {
        c.await.expect("consumer");
    }
    for p in -4..5 {
        assert!(depth(&name, p).unwrap_or(0.0) >= 0.0);
    }
}

/// The `workqueue_depth` samples of queue `name`: priority label -> value.
fn depth_by_priority(name: &str) -> std::collections::BTreeMap<String, f64> {
    let families = ctrl_runtime::metrics::registry().gather();
    let Some(fam) = families.iter().find(|f| f.name() == "workqueue_depth") else {
        return Default::default();
    };
    fam.get_metric()
        .iter()
        .filter(|m| {
            m.get_label()
                .iter()
                .any(|l| l.name() == "name" && l.value() == name)
        })
        .filter_map(|m| {
            let p = m.get_label().iter().find(|l| l.name() == "priority")?;
            Some((p.value().to_string(), m.get_gauge().get_value()))
        })
        .collect()
}

#[tokio::test]
async fn the_depth_priority_label_is_capped_at_25_values() {
    use ctrl_runtime::workqueue::{
        MAX_RECOMMENDED_UNIQUE_PRIORITIES, PRIORITY_CARDINALITY_EXCEEDED,
    };
    let (q, name) = queue();
    for p in 0..31 {
        q.add_with_opts(prio(p), [format!("item-{p}")]);
    }
    let depth = depth_by_priority(&name);
    assert_eq!(MAX_RECOMMENDED_UNIQUE_PRIORITIES, 25);
    assert_eq!(depth.len(), 26, "{depth:?}");
    assert_eq!(
        depth.get(PRIORITY_CARDINALITY_EXCEEDED),
        Some(&6.0),
        "{depth:?}"
    );
    for p in 0..25 {
        assert_eq!(depth.get(&p.to_string()), Some(&1.0), "{depth:?}");
    }
    // Items past the limit leave the same shared series they were counted in.
    for _ in 0..31 {
        let item = q.get().await.expect("an item");
        q.done(&item);
    }
    let depth = depth_by_priority(&name);
    assert!(depth.values().all(|v| *v == 0.0), "{depth:?}");
}
