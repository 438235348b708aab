//! The plain rate-limiting queue against client-go's `queue_test.go`,
//! `delaying_queue_test.go` and `rate_limiting_queue_test.go` edge cases.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ctrl_runtime::workqueue::{
    ItemExponentialFailureRateLimiter, Queue, QueueConfig, RateLimitingQueue,
};
use parking_lot::Mutex;
use tokio::time::Instant;

fn queue() -> RateLimitingQueue<String> {
    RateLimitingQueue::new(QueueConfig::default())
}

fn s(v: &str) -> String {
    v.to_string()
}

/// Lets spawned tasks (the timer) run on the current-thread test runtime.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn fifo_and_dedup() {
    let q = queue();
    q.add(s("foo"));
    assert_eq!(q.len(), 1);
    q.add(s("bar"));
    assert_eq!(q.len(), 2);
    q.add(s("foo"));
    assert_eq!(q.len(), 2, "a queued item is not queued twice");
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.get().await.as_deref(), Some("bar"));
    assert!(q.is_empty());
}

#[tokio::test]
async fn reinsert_while_processing_is_queued_at_done() {
    let q = queue();
    q.add(s("foo"));
    let got = q.get().await.expect("an item");
    assert_eq!(got, "foo");
    q.add(s("foo"));
    assert_eq!(
        q.len(),
        0,
        "an item being processed is not handed out again"
    );
    q.add(s("bar"));
    assert_eq!(q.get().await.as_deref(), Some("bar"));
    q.done(&got);
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    q.done(&s("foo"));
    q.done(&s("bar"));
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn collapse_while_processing() {
    let q = queue();
    q.add(s("foo"));
    let got = q.get().await.expect("an item");
    q.add(s("foo"));
    q.add(s("foo"));
    q.done(&got);
    assert_eq!(q.len(), 1, "two re-adds while processing collapse into one");
    let got = q.get().await.expect("an item");
    q.done(&got);
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn done_of_an_unknown_or_idle_item_is_harmless() {
    let q = queue();
    q.done(&s("never-added"));
    q.add(s("foo"));
    q.done(&s("foo")); // queued, not processing: must not queue it twice
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let q = queue();
    let q2 = q.clone();
    let waiter = tokio::spawn(async move { q2.get().await });
    settle().await;
    assert!(!waiter.is_finished());
    q.add(s("late"));
    assert_eq!(waiter.await.expect("join").as_deref(), Some("late"));
}

#[tokio::test]
async fn add_after_shutdown_is_ignored_and_get_drains_then_ends() {
    let q = queue();
    q.add(s("a"));
    q.add(s("b"));
    q.shut_down();
    assert!(q.shutting_down());
    q.add(s("c"));
    q.add_after(s("d"), Duration::ZERO);
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await.as_deref(), Some("a"));
    assert_eq!(q.get().await.as_deref(), Some("b"));
    assert_eq!(q.get().await, None);
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shutdown_wakes_every_waiter() {
    let q = queue();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    q.shut_down();
    for w in waiters {
        assert_eq!(w.await.expect("join"), None);
    }
}

#[tokio::test]
async fn shut_down_with_drain_waits_for_in_flight_items() {
    let q = queue();
    q.add(s("foo"));
    q.add(s("bar"));
    let foo = q.get().await.expect("foo");
    let bar = q.get().await.expect("bar");
    let q2 = q.clone();
    let drain = tokio::spawn(async move { q2.shut_down_with_drain().await });
    settle().await;
    assert!(
        !drain.is_finished(),
        "drain returns only once in-flight items are done"
    );
    assert!(q.shutting_down());
    q.done(&foo);
    settle().await;
    assert!(!drain.is_finished());
    q.done(&bar);
    drain.await.expect("join");
}

#[tokio::test]
async fn shut_down_with_drain_and_a_dirty_item() {
    let q = queue();
    q.add(s("foo"));
    let foo = q.get().await.expect("foo");
    q.add(s("foo"));
    let q2 = q.clone();
    let drain = tokio::spawn(async move { q2.shut_down_with_drain().await });
    settle().await;
    assert!(!drain.is_finished());
    q.done(&foo);
    drain.await.expect("join");
    // The re-added item was queued at done and is still handed out after shutdown.
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shut_down_with_drain_returns_at_once_when_idle() {
    let q = queue();
    q.add(s("queued-but-not-handed-out"));
    q.shut_down_with_drain().await;
    assert!(q.shutting_down());
}

#[tokio::test(start_paused = true)]
async fn add_after_is_ready_only_after_the_delay() {
    let q = queue();
    let start = Instant::now();
    q.add_after(s("foo"), Duration::from_millis(50));
    settle().await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(start.elapsed(), Duration::from_millis(50));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let q = queue();
    q.add_after(s("now"), Duration::ZERO);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn several_delays_keep_the_earliest() {
    let q = queue();
    let start = Instant::now();
    q.add_after(s("foo"), Duration::from_millis(50));
    q.add_after(s("foo"), Duration::from_millis(70));
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    q.done(&s("foo"));
    settle().await;
    tokio::time::advance(Duration::from_millis(100)).await;
    settle().await;
    assert_eq!(q.len(), 0, "the later, longer delay was dropped");

    let start = Instant::now();
    q.add_after(s("foo"), Duration::from_millis(70));
    q.add_after(s("foo"), Duration::from_millis(50));
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(50),
        "a shorter delay wins"
    );
}

#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_in_deadline_order() {
    let q = queue();
    let start = Instant::now();
    q.add_after(s("c"), Duration::from_millis(30));
    q.add_after(s("a"), Duration::from_millis(10));
    q.add_after(s("b"), Duration::from_millis(20));
    q.add_after(s("d"), Duration::from_millis(40));
    for (want, at) in [("a", 10), ("b", 20), ("c", 30), ("d", 40)] {
        assert_eq!(q.get().await.as_deref(), Some(want));
        assert_eq!(start.elapsed(), Duration::from_millis(at));
    }
}

#[tokio::test(start_paused = true)]
async fn earlier_deadline_wakes_a_sleeping_timer() {
    let q = queue();
    let start = Instant::now();
    q.add_after(s("late"), Duration::from_secs(1));
    settle().await;
    q.add_after(s("early"), Duration::from_millis(50));
    assert_eq!(q.get().await.as_deref(), Some("early"));
    assert_eq!(start.elapsed(), Duration::from_millis(50));
    assert_eq!(q.get().await.as_deref(), Some("late"));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn delayed_item_that_is_queued_meanwhile_is_not_duplicated() {
    let q = queue();
    q.add_after(s("foo"), Duration::from_millis(10));
    q.add(s("foo"));
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    // The delay fires while foo is processed: it is queued again at done, once.
    tokio::time::advance(Duration::from_millis(20)).await;
    settle().await;
    assert_eq!(q.len(), 0);
    q.done(&s("foo"));
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_pending_delays() {
    let q = queue();
    q.add_after(s("foo"), Duration::from_millis(10));
    settle().await;
    q.shut_down();
    tokio::time::advance(Duration::from_millis(50)).await;
    settle().await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_follow_the_limiter() {
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(1),
        Duration::from_secs(1),
    ));
    let q: RateLimitingQueue<String> =
        RateLimitingQueue::new(QueueConfig::default().with_rate_limiter(limiter));
    let start = Instant::now();
    q.add_rate_limited(s("one"));
    assert_eq!(q.get().await.as_deref(), Some("one"));
    assert_eq!(start.elapsed(), Duration::from_millis(1));
    q.done(&s("one"));
    let start = Instant::now();
    q.add_rate_limited(s("one"));
    assert_eq!(q.get().await.as_deref(), Some("one"));
    assert_eq!(start.elapsed(), Duration::from_millis(2));
    assert_eq!(q.num_requeues(&s("one")), 2);
    q.forget(&s("one"));
    assert_eq!(q.num_requeues(&s("one")), 0);
}

#[tokio::test(start_paused = true)]
async fn default_limiter_backs_off_5_10_20_40_ms() {
    let q = queue();
    for want in [5, 10, 20, 40] {
        let start = Instant::now();
        q.add_rate_limited(s("k"));
        assert_eq!(q.get().await.as_deref(), Some("k"));
        q.done(&s("k"));
        assert_eq!(start.elapsed(), Duration::from_millis(want));
    }
    assert_eq!(q.num_requeues(&s("k")), 4);
    q.forget(&s("k"));
    let start = Instant::now();
    q.add_rate_limited(s("k"));
    assert_eq!(q.get().await.as_deref(), Some("k"));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(5),
        "forget resets the backoff"
    );
}

#[tokio::test]
async fn works_through_the_object_safe_trait() {
    let q: Arc<dyn Queue<String>> = Arc::new(queue());
    q.add(s("x"));
    assert!(!q.is_priority());
    assert_eq!(q.len(), 1);
    let (item, prio) = q.get_boxed().await.expect("item");
    assert_eq!((item.as_str(), prio), ("x", 0));
    q.done(&item);
    q.shut_down_with_drain().await;
    assert!(q.get_boxed().await.is_none());
}

#[test]
fn usable_without_a_runtime_and_timer_runs_on_its_own_thread() {
    let q = queue();
    q.add(s("sync"));
    q.add_after(s("delayed"), Duration::from_millis(5));
    let got = futures::executor::block_on(async {
        let a = q.get().await;
        let b = q.get().await;
        (a, b)
    });
    assert_eq!(got, (Some(s("sync")), Some(s("delayed"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_and_consumers_never_share_an_item() {
    let q = queue();
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let processed = Arc::new(Mutex::new(Vec::new()));
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                for i in 0..2000 {
                    q.add(format!("k{}", (i * 7 + p) % 500));
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            let in_flight = Arc::clone(&in_flight);
            let processed = Arc::clone(&processed);
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    assert!(
                        in_flight.lock().insert(k.clone()),
                        "{k} handed out twice at once"
                    );
                    tokio::task::yield_now().await;
                    in_flight.lock().remove(&k);
                    processed.lock().push(k.clone());
                    q.done(&k);
                }
            })
        })
        .collect();
    for p in producers {
        p.await.expect("producer");
    }
    q.shut_down_with_drain().await;
    for c in consumers {
        c.await.expect("consumer");
    }
    let seen: HashSet<_> = processed.lock().iter().cloned().collect();
    assert_eq!(seen.len(), 500, "every key was processed at least once");
    assert!(q.is_empty());
}
