//! `add_ref`, the borrowed add of both queues: it must dedup exactly like `add` (queued,
//! being processed, delayed, after shutdown) while storing an owned copy only on a miss.

use std::time::Duration;

use ctrl_runtime::workqueue::{AddOpts, PriorityQueue, QueueConfig, RateLimitingQueue};

fn plain() -> RateLimitingQueue<String> {
    RateLimitingQueue::new(QueueConfig::default())
}

fn prio() -> PriorityQueue<String> {
    PriorityQueue::new(QueueConfig::default())
}

#[tokio::test]
async fn plain_add_ref_dedups_with_add() {
    let q = plain();
    q.add_ref("foo");
    q.add("foo".to_string());
    q.add_ref("foo");
    q.add_ref("bar");
    assert_eq!(
        q.len(),
        2,
        "borrowed and owned adds of one key are one item"
    );
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.get().await.as_deref(), Some("bar"));
    assert!(q.is_empty());
}

#[tokio::test]
async fn plain_add_ref_while_processing_is_queued_once_at_done() {
    let q = plain();
    q.add_ref("foo");
    let got = q.get().await.expect("an item");
    q.add_ref("foo");
    q.add_ref("foo");
    q.add("foo".to_string());
    assert_eq!(
        q.len(),
        0,
        "an item being processed is not handed out again"
    );
    q.done(&got);
    assert_eq!(q.len(), 1, "re-added while processed: queued once at done");
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    q.done(&got);
    assert!(q.is_empty());
}

#[tokio::test]
async fn plain_add_ref_after_shutdown_is_ignored() {
    let q = plain();
    q.add_ref("foo");
    q.shut_down();
    q.add_ref("bar");
    q.add_ref("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.get().await, None, "nothing added after shutdown");
}

#[tokio::test(start_paused = true)]
async fn plain_add_ref_of_a_delayed_key_adds_it_now_once() {
    let q = plain();
    q.add_after("foo".to_string(), Duration::from_millis(50));
    q.add_ref("foo");
    assert_eq!(q.len(), 1, "the borrowed add does not wait for the delay");
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    q.done(&"foo".to_string());
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(q.len(), 1, "the pending delay still fires, as in client-go");
}

#[tokio::test]
async fn priority_add_ref_dedups_and_keeps_the_max_priority() {
    let q = prio();
    q.add_with_opts(
        AddOpts {
            priority: Some(5),
            ..Default::default()
        },
        ["foo".to_string()],
    );
    q.add_ref("bar");
    q.add_ref("foo");
    assert_eq!(q.len(), 2);
    assert_eq!(
        q.get_with_priority().await,
        Some(("foo".to_string(), 5)),
        "a borrowed add (priority 0) does not lower the priority"
    );
    assert_eq!(q.get_with_priority().await, Some(("bar".to_string(), 0)));
}

#[tokio::test]
async fn priority_add_ref_while_processing_and_after_shutdown() {
    let q = prio();
    q.add_ref("foo");
    let got = q.get().await.expect("an item");
    q.add_ref("foo");
    q.add_ref("foo");
    q.done(&got);
    assert_eq!(q.len(), 1, "re-added while processed: ready once at done");
    q.shut_down();
    q.add_ref("bar");
    assert_eq!(q.get().await.as_deref(), Some("foo"));
    assert_eq!(q.get().await, None, "nothing added after shutdown");
}
