//! The manager-wide controller config (Go's `config.Controller` in manager Options):
//! `group_kind_concurrency` runs N reconciles of a kind at once, and the builder's
//! options override the manager's, which override controller-runtime's defaults.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{Widget, env, reporter, start, widget};
use ctrl_builder::ControllerBuilder;
use ctrl_runtime::config;
use ctrl_runtime::controller;
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::reconcile::{self, Action, Request};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use tokio::sync::{Barrier, mpsc};

fn manager_with(env: &ctrl_envtest::Environment, controller: config::Controller) -> Manager {
    let opts = Options {
        metrics_bind_address: "0".into(),
        controller,
        ..Default::default()
    };
    Manager::new(env.client(), opts).expect("manager")
}

#[tokio::test]
async fn group_kind_concurrency_runs_that_many_reconciles_at_once() {
    const N: usize = 3;
    let env = env().await;
    let mgr = manager_with(
        &env,
        config::Controller {
            group_kind_concurrency: BTreeMap::from([("Widget.test.ctrl.rs".to_string(), N)]),
            ..Default::default()
        },
    );
    // Each reconcile waits at a barrier of N: it opens only when N reconciles are in
    // flight at once, which one worker (the default) could never reach.
    let barrier = Arc::new(Barrier::new(N));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let r = reconcile::func(move |_ctx, req: Request| {
        let (barrier, tx) = (barrier.clone(), tx.clone());
        async move {
            barrier.wait().await;
            let _ = tx.send(req);
            Ok(Action::done())
        }
    });
    let c = ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .build(r)
        .expect("build");
    assert_eq!(c.options().max_concurrent_reconciles, N);
    mgr.add(c).expect("add");
    let running = start(&mgr);
    let api: Api<Widget> = Api::namespaced(env.client(), "default");
    for i in 0..N {
        api.create(&PostParams::default(), &widget(&format!("w{i}")))
            .await
            .expect("create");
    }
    let mut names = Vec::new();
    for _ in 0..N {
        let req = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("N reconciles in flight at once passed the barrier")
            .expect("reconciler alive");
        names.push(req.name);
    }
    names.sort();
    assert_eq!(names, ["w0", "w1", "w2"]);
    running.stop().await;
}

#[tokio::test]
async fn builder_options_override_the_managers_which_override_the_defaults() {
    let env = env().await;
    let mgr = manager_with(
        &env,
        config::Controller {
            group_kind_concurrency: BTreeMap::from([
                ("Deployment.apps".to_string(), 3),
                ("ConfigMap".to_string(), 6),
            ]),
            max_concurrent_reconciles: 4,
            cache_sync_timeout: Duration::from_secs(7),
            recover_panic: Some(false),
            skip_name_validation: Some(true),
            use_priority_queue: Some(false),
            reconciliation_timeout: Some(Duration::from_secs(9)),
            ..Default::default()
        },
    );
    let build = |name: &'static str, opts: controller::Options| {
        let (r, _rx) = reporter();
        ControllerBuilder::new(&mgr)
            .for_::<Deployment>()
            .named(name)
            .with_options(opts)
            .build(r)
    };
    // The manager's values, with the group-kind entry before its default.
    let c = build("same", controller::Options::default()).expect("build");
    let o = c.options();
    assert_eq!(o.max_concurrent_reconciles, 3);
    assert_eq!(o.cache_sync_timeout, Duration::from_secs(7));
    assert_eq!(o.recover_panic, Some(false));
    assert_eq!(o.use_priority_queue, Some(false));
    assert_eq!(o.reconciliation_timeout, Some(Duration::from_secs(9)));
    // The manager's `skip_name_validation` lets the name be used again; the
    // controller's own options win over the manager's.
    let mine = controller::Options {
        max_concurrent_reconciles: 2,
        cache_sync_timeout: Duration::from_secs(5),
        recover_panic: Some(true),
        use_priority_queue: Some(true),
        reconciliation_timeout: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let c = build("same", mine).expect("duplicate name allowed");
    let o = c.options();
    assert_eq!(o.max_concurrent_reconciles, 2);
    assert_eq!(o.cache_sync_timeout, Duration::from_secs(5));
    assert_eq!(o.recover_panic, Some(true));
    assert_eq!(o.use_priority_queue, Some(true));
    assert_eq!(o.reconciliation_timeout, Some(Duration::from_secs(1)));

    // A kind without an entry takes the manager's default; core kinds are keyed
    // by the bare kind.
    let (r, _rx) = reporter();
    let c = ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .build(r)
        .expect("configmap");
    assert_eq!(c.options().max_concurrent_reconciles, 6);
    let (r, _rx) = reporter();
    let c = ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .build(r)
        .expect("widget");
    assert_eq!(c.options().max_concurrent_reconciles, 4);
}

#[tokio::test]
async fn without_manager_config_the_defaults_are_controller_runtimes() {
    let env = env().await;
    let mgr = manager_with(&env, config::Controller::default());
    let (r, _rx) = reporter();
    let c = ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .named("defaults")
        .build(r)
        .expect("build");
    let o = c.options();
    assert_eq!(o.max_concurrent_reconciles, 1);
    assert_eq!(o.cache_sync_timeout, controller::DEFAULT_CACHE_SYNC_TIMEOUT);
    assert_eq!(o.recover_panic, Some(true));
    assert_eq!(o.need_leader_election, Some(true));
    assert_eq!(o.enable_warmup, Some(false));
    assert_eq!(o.use_priority_queue, Some(true));
    assert_eq!(o.reconciliation_timeout, None);
}
