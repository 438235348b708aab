//! `source::Kind` on the shared cache, against ctrl-envtest: predicates filter, the
//! object reconciler adapter reads `Arc<K>` from the cache, and a controller whose CRD
//! is installed after it started syncs once the type appears (controller-runtime's
//! `source_test.go` / `kind.go` behaviour). On virtual time, through the server's
//! in-memory client: the type is found at the source's first retry, exactly
//! [`KIND_RETRY_INTERVAL`] after it first looked.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options};
use ctrl_runtime::controller::{Controller, Options as ControllerOptions};
use ctrl_runtime::handler::EnqueueRequestForObject;
use ctrl_runtime::predicate;
use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
use ctrl_runtime::source::{KIND_RETRY_INTERVAL, Kind, Source};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use parking_lot::Mutex;
use serde_json::json;
use support::eventually;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn opts() -> ControllerOptions {
    ControllerOptions {
        skip_name_validation: Some(true),
        cache_sync_timeout: Duration::from_secs(30),
        ..Default::default()
    }
}

fn start_cache(cache: &Cache) -> CancellationToken {
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    ctx
}

async fn create_cm(env: &Environment, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(env.in_memory_client(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");
}

struct Record(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Reconciler<Arc<ConfigMap>> for Record {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        obj: Arc<ConfigMap>,
    ) -> Result<Action, reconcile::Error> {
        self.0
            .lock()
            .push(obj.metadata.name.clone().unwrap_or_default());
        Ok(Action::done())
    }
}

#[tokio::test(start_paused = true)]
async fn kind_filters_with_predicates_and_feeds_object_reconcilers_from_the_cache() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.in_memory_client(), Options::default());
    let ctx = start_cache(&cache);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let r = reconcile::as_reconciler(cache.clone(), Record(seen.clone()));
    let c = Controller::new("kind-preds", r, opts()).expect("controller");
    let only_keep = predicate::Funcs::<ConfigMap> {
        create_func: Some(Box::new(|e| {
            e.object
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("keep"))
        })),
        ..Default::default()
    };
    let src = Kind::<ConfigMap>::new(&cache, EnqueueRequestForObject).with_predicate(only_keep);
    assert_eq!(src.name(), "kind source: v1/ConfigMap");
    c.watch(src).await.expect("watch");
    let (c2, x) = (c.clone(), ctx.clone());
    tokio::spawn(async move { c2.start(x).await });
    create_cm(&env, "keep-1").await;
    create_cm(&env, "drop-1").await;
    create_cm(&env, "keep-2").await;
    eventually("both kept objects reconciled", || seen.lock().len() >= 2).await;
    // Long past any delivery (virtual time): the dropped one never comes.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let mut got = seen.lock().clone();
    got.sort();
    assert_eq!(got, ["keep-1", "keep-2"]);
    ctx.cancel();
}

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
    .expect("valid CRD")
}

#[tokio::test(start_paused = true)]
async fn a_kind_whose_crd_is_installed_later_syncs_when_it_appears() {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.in_memory_client(), Options::default());
    let ctx = start_cache(&cache);
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let seen: Arc<Mutex<Vec<(Request, Instant)>>> = Arc::default();
    let r = {
        let seen = seen.clone();
        reconcile::func(move |_ctx, req| {
            let seen = seen.clone();
            async move {
                seen.lock().push((req, Instant::now()));
                Ok(Action::done())
            }
        })
    };
    let c = Controller::new("late-crd", r, opts()).expect("controller");
    c.watch(Kind::<DynamicObject>::new_with(
        &cache,
        ar.clone(),
        EnqueueRequestForObject,
    ))
    .await
    .expect("watch");
    let (c2, x) = (c.clone(), ctx.clone());
    let started = Instant::now();
    let run = tokio::spawn(async move { c2.start(x).await });

    tokio::time::sleep(Duration::from_millis(500)).await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.in_memory_client());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .expect("install CRD");
    let widgets: Api<DynamicObject> = Api::namespaced_with(env.in_memory_client(), "default", &ar);
    let w = DynamicObject::new("w1", &ar)
        .within("default")
        .data(json!({"spec": {"size": 1}}));
    widgets
        .create(&PostParams::default(), &w)
        .await
        .expect("create widget");
    let want = Request::new("default", "w1");
    let reconciled = || {
        seen.lock()
            .iter()
            .find(|(r, _)| *r == want)
            .map(|(_, t)| *t)
    };
    eventually("reconcile after the CRD appeared", || {
        reconciled().is_some()
    })
    .await;
    // The source looked at start (no such type), and again a retry interval later.
    let at = reconciled().expect("reconciled").duration_since(started);
    assert_eq!(at, KIND_RETRY_INTERVAL, "found the type at another instant");
    assert!(!run.is_finished(), "the controller keeps running");
    ctx.cancel();
}
