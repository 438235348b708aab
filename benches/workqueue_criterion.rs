//! Criterion micro-benchmarks of the work queues: one add → get → done round trip, a
//! dedup hit (owned and borrowed), and a priority round trip, each on a warm queue in one
//! task.
//!
//! The side-by-side scenario table (S1..S6 against kube-runtime and baselines) is
//! `cargo bench --bench workqueue`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ctrl::workqueue::{
    AddOpts, PriorityQueue, QueueConfig, RateLimitingQueue, prometheus_metrics_provider,
};

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("default/obj-{i}")).collect()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ks = keys(1024);

    let q: RateLimitingQueue<String> = RateLimitingQueue::new(QueueConfig::default());
    let mut i = 0usize;
    c.bench_function("rate_limiting_queue add_get_done", |b| {
        b.iter(|| {
            let k = ks[i & 1023].clone();
            i += 1;
            q.add(k);
            let got = rt.block_on(q.get()).expect("item");
            q.done(black_box(&got));
        })
    });

    let qm: RateLimitingQueue<String> = RateLimitingQueue::new(
        QueueConfig::new("criterion-rlq").with_metrics(prometheus_metrics_provider()),
    );
    c.bench_function("rate_limiting_queue add_get_done (metrics)", |b| {
        b.iter(|| {
            let k = ks[i & 1023].clone();
            i += 1;
            qm.add(k);
            let got = rt.block_on(qm.get()).expect("item");
            qm.done(black_box(&got));
        })
    });

    let dq: RateLimitingQueue<String> = RateLimitingQueue::new(QueueConfig::default());
    dq.add(ks[0].clone());
    c.bench_function("rate_limiting_queue dedup hit", |b| {
        b.iter(|| dq.add(black_box(ks[0].clone())))
    });
    c.bench_function("rate_limiting_queue dedup hit (add_ref)", |b| {
        b.iter(|| dq.add_ref(black_box(ks[0].as_str())))
    });

    let pq: PriorityQueue<String> = PriorityQueue::new(QueueConfig::default());
    c.bench_function("priority_queue add_get_done", |b| {
        b.iter(|| {
            let k = ks[i & 1023].clone();
            let p = (i % 3) as i32 - 1;
            i += 1;
            pq.add_with_opts(
                AddOpts {
                    priority: Some(p),
                    ..Default::default()
                },
                [k],
            );
            let got = rt.block_on(pq.get_with_priority()).expect("item");
            pq.done(black_box(&got.0));
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
