//! Fair queueing (controller-runtime PR #3261): the priority queue built by
//! `multicluster::fair_queue` hands out the items of one priority in turns across
//! (cluster, namespace) keys. 10,000 requests queued for member A, then one for
//! member B at the same priority: B's is among the first two handed out; FIFO holds
//! within a key; a higher priority still goes first; without fairness B's waits for
//! all of A's.

use std::sync::Arc;

use ctrl_runtime::multicluster::{ClusterRequest, fair_queue};
use ctrl_runtime::workqueue::{
    AddOpts, PriorityQueue, Queue, QueueConfig, default_item_rate_limiter,
};

fn req(cluster: &str, i: usize) -> ClusterRequest {
    ClusterRequest::new(cluster, "default", format!("obj-{i}"))
}

fn fair() -> Arc<dyn Queue<ClusterRequest>> {
    fair_queue()("", default_item_rate_limiter())
}

async fn take(q: &dyn Queue<ClusterRequest>, n: usize) -> Vec<ClusterRequest> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (r, _) = q.get_boxed().await.expect("an item");
        q.done(&r);
        out.push(r);
    }
    out
}

#[tokio::test]
async fn a_lone_request_of_a_quiet_cluster_is_not_starved() {
    let q = fair();
    for i in 0..10_000 {
        q.add(req("member-a", i));
    }
    q.add(req("member-b", 0));
    let first = take(&*q, 2).await;
    assert!(first.contains(&req("member-b", 0)), "{first:?}");
    // FIFO within member A.
    let rest = take(&*q, 3).await;
    let a: Vec<&ClusterRequest> = first
        .iter()
        .chain(&rest)
        .filter(|r| r.cluster.as_str() == "member-a")
        .collect();
    assert_eq!(
        a,
        [
            &req("member-a", 0),
            &req("member-a", 1),
            &req("member-a", 2),
            &req("member-a", 3)
        ]
    );
}

#[tokio::test]
async fn priority_still_comes_first() {
    let q = fair();
    for i in 0..100 {
        q.add(req("member-a", i));
    }
    q.add_with_opts(
        AddOpts {
            priority: Some(10),
            ..Default::default()
        },
        req("member-a", 100),
    );
    q.add(req("member-b", 0));
    let first = take(&*q, 1).await;
    assert_eq!(first, [req("member-a", 100)]);
}

#[tokio::test]
async fn without_fairness_the_lone_request_waits() {
    let q: PriorityQueue<ClusterRequest> = PriorityQueue::new(QueueConfig::default());
    for i in 0..1_000 {
        q.add(req("member-a", i));
    }
    q.add(req("member-b", 0));
    let first = take(&q, 1_000).await;
    assert!(!first.contains(&req("member-b", 0)));
}
