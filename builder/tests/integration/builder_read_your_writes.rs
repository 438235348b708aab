//! An object reconciler (`Reconciler<Arc<K>>`) reads its object through the manager's
//! client: with read-your-own-writes on (controller-runtime's
//! `ReadYourWritesConsistencyEnabled`), the reconcile that follows its own update sees
//! that update even while the watch lags, so an update loop never conflicts; with it
//! off, the same loop reads a stale copy and the server answers 409.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Widget, env, start, widget};
use ctrl_builder::ControllerBuilder;
use ctrl_builder::reconciler::object_func;
use ctrl_envtest::FaultMatch;
use ctrl_runtime::client::ObjectWriter;
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::reconcile::Action;
use kube::api::{Api, PostParams};
use tokio::sync::mpsc;

/// How many updates the reconciler makes, one per reconcile.
const UPDATES: i32 = 8;

/// What one run of the update loop saw.
struct Run {
    /// Reconciles whose update the server refused with 409.
    conflicts: usize,
}

/// Runs a Widget controller that bumps `spec.size` once per reconcile and requeues at
/// once until it reaches [`UPDATES`], on a server whose watches deliver 150 ms late.
async fn update_loop(read_your_writes: bool) -> Run {
    let env = env().await;
    env.faults().delay_watch_delivery(
        FaultMatch::any().resource("widgets"),
        Duration::from_millis(150),
    );
    let mut opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    opts.client.cache.read_your_writes_consistency_enabled = read_your_writes;
    let mgr = Manager::new(env.client(), opts).expect("manager");
    let conflicts = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let (client, seen) = (mgr.client(), conflicts.clone());
    let r = object_func(move |_ctx, w: Arc<Widget>| {
        let (client, seen, done_tx) = (client.clone(), seen.clone(), done_tx.clone());
        async move {
            if w.spec.size >= UPDATES {
                let _ = done_tx.send(());
                return Ok(Action::done());
            }
            let mut next = (*w).clone();
            next.spec.size += 1;
            match client.update(&next).await {
                Ok(_) => Ok(Action::requeue()),
                Err(e) if e.is_conflict() => {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Err(e.into())
                }
                Err(e) => Err(e.into()),
            }
        }
    });
    // Controller names are unique per process, and both tests run in this one.
    let name = if read_your_writes {
        "widget-ryw"
    } else {
        "widget-plain"
    };
    let c = ControllerBuilder::new(&mgr)
        .named(name)
        .for_::<Widget>()
        .build(r)
        .expect("build");
    mgr.add(c).expect("add");
    let running = start(&mgr);
    Api::<Widget>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &widget("w"))
        .await
        .expect("create");
    tokio::time::timeout(Duration::from_secs(60), done_rx.recv())
        .await
        .expect("the loop reached its last update")
        .expect("reconciler alive");
    running.stop().await;
    Run {
        conflicts: conflicts.load(Ordering::SeqCst),
    }
}

#[tokio::test]
async fn with_read_your_writes_an_update_loop_never_conflicts() {
    let run = update_loop(true).await;
    assert_eq!(
        run.conflicts, 0,
        "a reconcile read a copy older than its own update"
    );
}

#[tokio::test]
async fn without_it_the_same_loop_reads_stale_copies_and_conflicts() {
    let run = update_loop(false).await;
    assert!(
        run.conflicts > 0,
        "no conflict: the watch delay did not make the cache stale, so the test above shows nothing"
    );
}
