//! For / Owns / Watches / raw sources deliver the right requests against envtest
//! (ported from `pkg/builder/controller_test.go`, "Start with ControllerManagedBy").
//!
//! "Not delivered" is shown without timing: with one worker and a FIFO queue, a
//! request enqueued before a later sentinel's is reconciled before it, so when the
//! sentinel arrives every earlier request that was going to arrive has.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use common::{Widget, env, manager, next, reporter, start, until, widget};
use ctrl_builder::reconciler::object_func;
use ctrl_builder::{ControllerBuilder, ForOptions, OwnsOptions};
use ctrl_runtime::event::GenericEvent;
use ctrl_runtime::handler::{EnqueueRequestForObject, EnqueueRequestsFromMapFunc};
use ctrl_runtime::predicate::{self, GenerationChanged};
use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
use ctrl_runtime::source::Channel;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn owned_cm(name: &str, owner: &str, controller: bool) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "test.ctrl.rs/v1".into(),
        kind: "Widget".into(),
        name: owner.into(),
        uid: format!("{owner}-uid"),
        controller: controller.then_some(true),
        block_owner_deletion: None,
    }]);
    cm
}

fn req(name: &str) -> Request {
    Request::new("default", name)
}

#[tokio::test]
async fn for_and_owns_reconcile_the_owner_controller_owner_only() {
    let env = env().await;
    let mgr = manager(&env);
    let (r, mut rx) = reporter();
    ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .owns::<ConfigMap>()
        // builder_config's first test takes the default name, and names are unique per process
        .named("widget-owns")
        .complete(r)
        .expect("complete");
    let running = start(&mgr);

    let widgets: Api<Widget> = Api::namespaced(env.client(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let pp = PostParams::default();
    widgets.create(&pp, &widget("w1")).await.expect("create");
    assert_eq!(next(&mut rx).await, req("w1"));

    // An owned ConfigMap (controller reference) reconciles its owner.
    cms.create(&pp, &owned_cm("cm-ctrl", "owner-a", true))
        .await
        .expect("cm");
    assert_eq!(next(&mut rx).await, req("owner-a"));

    // A plain owner reference is ignored; the sentinel after it comes through alone.
    cms.create(&pp, &owned_cm("cm-plain", "owner-plain", false))
        .await
        .expect("cm");
    cms.create(&pp, &owned_cm("cm-sentinel", "sentinel", true))
        .await
        .expect("cm");
    let before = until(&mut rx, &req("sentinel")).await;
    assert!(!before.contains(&req("owner-plain")), "got {before:?}");

    // Updating the owned object reconciles the owner again.
    let patch = serde_json::json!({"data": {"k": "v"}});
    cms.patch("cm-ctrl", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    assert_eq!(next(&mut rx).await, req("owner-a"));
    running.stop().await;
}

#[tokio::test]
async fn owns_with_match_every_owner_reconciles_plain_owners() {
    let env = env().await;
    let mgr = manager(&env);
    let (r, mut rx) = reporter();
    ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .named("widget-every-owner")
        .owns_with::<ConfigMap>(OwnsOptions::new().match_every_owner())
        .complete(r)
        .expect("complete");
    let running = start(&mgr);

    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let pp = PostParams::default();
    cms.create(&pp, &owned_cm("cm-plain", "owner-plain", false))
        .await
        .expect("cm");
    cms.create(&pp, &owned_cm("cm-sentinel", "sentinel", true))
        .await
        .expect("cm");
    let before = until(&mut rx, &req("sentinel")).await;
    assert!(before.contains(&req("owner-plain")), "got {before:?}");
    running.stop().await;
}

/// Creates widget `a`, then patches only its status, then creates a sentinel, on a
/// `For(Widget)` controller with or without `with_event_filter(GenerationChanged)`.
/// Returns what was reconciled between the status patch and the sentinel; then
/// checks that a spec change reconciles `a` either way.
async fn status_patch_then_sentinel(name: &str, filtered: bool) -> Vec<Request> {
    let env = env().await;
    let mgr = manager(&env);
    let (r, mut rx) = reporter();
    let mut b = ControllerBuilder::new(&mgr).for_::<Widget>().named(name);
    if filtered {
        b = b.with_event_filter(GenerationChanged);
    }
    b.complete(r).expect("complete");
    let running = start(&mgr);

    let widgets: Api<Widget> = Api::namespaced(env.client(), "default");
    let pp = PostParams::default();
    widgets.create(&pp, &widget("a")).await.expect("a");
    assert_eq!(next(&mut rx).await, req("a"));
    // Once s1 is reconciled, a's reconcile is done (one worker).
    widgets.create(&pp, &widget("s1")).await.expect("s1");
    assert_eq!(next(&mut rx).await, req("s1"));

    let status = serde_json::json!({"status": {"ready": true}});
    let patched = widgets
        .patch_status("a", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patch");
    assert_eq!(patched.status.map(|s| s.ready), Some(true));
    widgets.create(&pp, &widget("s2")).await.expect("s2");
    let between = until(&mut rx, &req("s2")).await;

    // A spec change bumps the generation and passes either way.
    let spec = serde_json::json!({"spec": {"size": 2}});
    widgets
        .patch("a", &PatchParams::default(), &Patch::Merge(&spec))
        .await
        .expect("spec patch");
    assert_eq!(next(&mut rx).await, req("a"));
    running.stop().await;
    between
}

#[tokio::test]
async fn event_filter_generation_changed_drops_status_only_updates() {
    let between = status_patch_then_sentinel("widget-generation", true).await;
    assert!(
        between.is_empty(),
        "status-only update reconciled: {between:?}"
    );
}

#[tokio::test]
async fn without_the_filter_status_updates_do_reconcile() {
    // The control for the test above: the same steps, no filter.
    let between = status_patch_then_sentinel("widget-unfiltered", false).await;
    assert_eq!(between, vec![req("a")]);
}

#[tokio::test]
async fn per_watch_predicates_and_watches_with_a_map_func() {
    let env = env().await;
    let mgr = manager(&env);
    let (r, mut rx) = reporter();
    let for_calls = Arc::new(AtomicUsize::new(0));
    let seen = for_calls.clone();
    let only_b = predicate::new_predicate_funcs(move |w: &Widget| {
        seen.fetch_add(1, Ordering::SeqCst);
        w.metadata.name.as_deref() != Some("skipped")
    });
    ControllerBuilder::new(&mgr)
        .for_with::<Widget>(ForOptions::new().with_predicate(only_b))
        .named("widget-predicates")
        // Every ConfigMap maps to the widget named in its "widget" key.
        .watches::<ConfigMap>(EnqueueRequestsFromMapFunc::new(|cm: &Arc<ConfigMap>| {
            let target = cm.data.as_ref().and_then(|d| d.get("widget").cloned());
            target
                .map(|t| vec![Request::new("default", t)])
                .unwrap_or_default()
        }))
        .complete(r)
        .expect("complete");
    let running = start(&mgr);

    let widgets: Api<Widget> = Api::namespaced(env.client(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let pp = PostParams::default();
    widgets.create(&pp, &widget("skipped")).await.expect("w");
    widgets.create(&pp, &widget("kept")).await.expect("w");
    let before = until(&mut rx, &req("kept")).await;
    assert!(!before.contains(&req("skipped")), "got {before:?}");
    assert!(for_calls.load(Ordering::SeqCst) >= 2);

    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("pointer".into());
    cm.data = Some([("widget".to_string(), "mapped-target".to_string())].into());
    cms.create(&pp, &cm).await.expect("cm");
    assert_eq!(next(&mut rx).await, req("mapped-target"));
    running.stop().await;
}

#[tokio::test]
async fn raw_sources_and_named_controllers_without_for() {
    let env = env().await;
    let mgr = manager(&env);
    let (r, mut rx) = reporter();
    let (tx, events) = mpsc::channel::<GenericEvent<ConfigMap>>(8);
    ControllerBuilder::new(&mgr)
        .named("raw-channel")
        .watches_raw_source(Channel::new(events, EnqueueRequestForObject))
        // Raw sources ignore the global filters: this one drops everything else.
        .with_event_filter(|_: &ctrl_builder::FilterEvent<'_>| false)
        .complete(r)
        .expect("complete");
    let running = start(&mgr);
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("default".into());
    cm.metadata.name = Some("from-channel".into());
    tx.send(GenericEvent::new(Arc::new(cm)))
        .await
        .expect("send");
    assert_eq!(next(&mut rx).await, req("from-channel"));
    running.stop().await;
}

struct Objects(mpsc::UnboundedSender<(String, Option<bool>)>);

#[async_trait]
impl Reconciler<Arc<Widget>> for Objects {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        obj: Arc<Widget>,
    ) -> Result<Action, reconcile::Error> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        let _ = self.0.send((name, obj.status.as_ref().map(|s| s.ready)));
        Ok(Action::done())
    }
}

#[tokio::test]
async fn typed_and_metadata_only_reconcilers_get_cached_objects() {
    let env = env().await;
    let mgr = manager(&env);
    let (otx, mut orx) = mpsc::unbounded_channel();
    let (mtx, mut mrx) = mpsc::unbounded_channel();
    let spans = Arc::new(AtomicUsize::new(0));
    let counted = spans.clone();
    ControllerBuilder::new(&mgr)
        .for_::<Widget>()
        .named("widget-objects")
        .with_log_constructor(move |req| {
            if req.is_some() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            tracing::info_span!("widget", request = ?req)
        })
        .complete(Objects(otx))
        .expect("typed");
    ControllerBuilder::new(&mgr)
        .for_metadata::<Widget>()
        .named("widget-metadata")
        .complete(object_func(
            move |_ctx, obj: Arc<PartialObjectMeta<Widget>>| {
                let tx = mtx.clone();
                async move {
                    let _ = tx.send(obj.metadata.name.clone().unwrap_or_default());
                    Ok(Action::done())
                }
            },
        ))
        .expect("metadata");
    let running = start(&mgr);

    let widgets: Api<Widget> = Api::namespaced(env.client(), "default");
    let mut w = widget("typed");
    w.status = Some(common::WidgetStatus { ready: false });
    widgets.create(&PostParams::default(), &w).await.expect("w");
    let got = tokio::time::timeout(std::time::Duration::from_secs(20), orx.recv())
        .await
        .expect("typed reconcile")
        .expect("alive");
    assert_eq!(got.0, "typed");
    let got = tokio::time::timeout(std::time::Duration::from_secs(20), mrx.recv())
        .await
        .expect("metadata reconcile")
        .expect("alive");
    assert_eq!(got, "typed");
    assert!(
        spans.load(Ordering::SeqCst) >= 1,
        "log constructor not used"
    );
    running.stop().await;
}
