//! What the multi-cluster tests share: in-process member API servers registered as
//! kubeconfig Secrets on a hub, [`EnvtestProvider`] (N in-process API servers engaged
//! as clusters, added and removed at run time), a reconciler that marks each
//! ConfigMap with the cluster it reconciled it in, and polling helpers.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_envtest::wait::Wait;
use ctrl_runtime::error::BoxError;
use ctrl_runtime::handler::EnqueueRequestsFromMapFunc;
use ctrl_runtime::multicluster::{
    self, Cluster, ClusterName, ClusterRequest, ClusterSource, DEFAULT_KUBECONFIG_SECRET_KEY,
    DEFAULT_KUBECONFIG_SECRET_LABEL, Provider,
};
use ctrl_runtime::reconcile::{self, Action, Reconciler, Request};
use ctrl_runtime::source::{BoxSource, Kind};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The label a test's ConfigMaps carry (the controller ignores others).
pub const LABEL: &str = "ctrl.rs/multicluster";
/// The annotation the reconciler writes: the cluster it reconciled the object in.
pub const ANNOTATION: &str = "ctrl.rs/reconciled-in";
/// How long a test waits for anything.
pub const WAIT: Duration = Duration::from_secs(30);

/// Polls `cond` until it holds; panics after [`WAIT`] (ctrl-envtest's poll, every 10 ms).
pub async fn eventually<F: Future<Output = bool>>(what: &str, cond: impl Fn() -> F) {
    Wait::new()
        .timeout(WAIT)
        .interval(Duration::from_millis(10))
        .until(what, cond, |held| *held)
        .await;
}

/// The admin kubeconfig of `env` (over TLS, as kubectl would use it).
pub fn kubeconfig(env: &Environment) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    env.write_kubeconfig(&path).expect("write kubeconfig");
    std::fs::read(path).expect("read kubeconfig")
}

/// Registers `member` on `hub` as the kubeconfig Secret `default/<name>`.
pub async fn register(hub: &Environment, name: &str, member: &Environment) {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                [(
                    DEFAULT_KUBECONFIG_SECRET_LABEL.to_string(),
                    "true".to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        data: Some(
            [(
                DEFAULT_KUBECONFIG_SECRET_KEY.to_string(),
                ByteString(kubeconfig(member)),
            )]
            .into(),
        ),
        ..Default::default()
    };
    let api: Api<Secret> = Api::namespaced(hub.client(), "default");
    api.create(&PostParams::default(), &secret)
        .await
        .expect("create kubeconfig Secret");
}

/// Deletes the kubeconfig Secret `default/<name>` of `hub`.
pub async fn unregister(hub: &Environment, name: &str) {
    let api: Api<Secret> = Api::namespaced(hub.client(), "default");
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete kubeconfig Secret");
}

/// A labelled ConfigMap `default/<name>`.
pub fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some([(LABEL.to_string(), "yes".to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Creates the labelled ConfigMap `default/<name>` in `env`.
pub async fn create(env: &Environment, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map(name))
        .await
        .expect("create ConfigMap");
}

/// The cluster `default/<name>` of `env` was reconciled in, if any.
pub async fn reconciled_in(env: &Environment, name: &str) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm = api.get_opt(name).await.ok()??;
    cm.metadata.annotations?.get(ANNOTATION).cloned()
}

/// The source of labelled ConfigMaps in every engaged cluster.
pub fn config_maps(mgr: &multicluster::Manager) -> ClusterSource {
    ClusterSource::new(
        mgr,
        "configmaps",
        Arc::new(|cluster: &Cluster| {
            let handler = EnqueueRequestsFromMapFunc::new(|cm: &Arc<ConfigMap>| {
                let labelled = cm
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(LABEL));
                if labelled {
                    vec![Request::from_obj(cm.as_ref())]
                } else {
                    Vec::new()
                }
            });
            Arc::new(Kind::<ConfigMap, Request>::new(&cluster.cache(), handler))
                as BoxSource<Request>
        }),
    )
}

/// Every reconcile that reached the inner reconciler, in order.
pub type Log = Arc<Mutex<Vec<ClusterRequest>>>;

/// Annotates each ConfigMap with the cluster it reconciled it in, through that
/// cluster's client from the manager; the first reconcile of a request named `gate` waits for a permit.
pub struct Annotate {
    pub mgr: multicluster::Manager,
    pub log: Log,
    pub gate: Arc<Semaphore>,
}

#[async_trait]
impl Reconciler<ClusterRequest> for Annotate {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        req: ClusterRequest,
    ) -> Result<Action, reconcile::Error> {
        let first = {
            let mut log = self.log.lock();
            log.push(req.clone());
            log.iter().filter(|r| **r == req).count() == 1
        };
        if req.name == "gate" && first {
            self.gate.acquire().await?.forget();
        }
        let cluster = self.mgr.cluster(&req.cluster)?;
        let api: Api<ConfigMap> = Api::namespaced(cluster.kube_client(), &req.namespace);
        if api.get_opt(&req.name).await?.is_none() {
            return Ok(Action::done());
        }
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: req.cluster.as_str() } } });
        api.patch(&req.name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(Action::done())
    }
}

/// N in-process API servers engaged as clusters named `member-1`..; more can be
/// added and removed while the manager runs (the answer to multicluster-runtime's #47:
/// a test with many clusters starts in milliseconds).
#[derive(Clone, Default)]
pub struct EnvtestProvider {
    inner: Arc<Mutex<ProviderState>>,
}

#[derive(Default)]
struct ProviderState {
    envs: BTreeMap<ClusterName, Arc<Environment>>,
    mgr: Option<multicluster::Manager>,
}

impl EnvtestProvider {
    /// A provider with `n` members started.
    pub async fn start(n: usize) -> Self {
        let p = Self::default();
        for i in 1..=n {
            p.add(&format!("member-{i}")).await;
        }
        p
    }

    /// Starts a member named `name` (engaged at once if the provider runs).
    pub async fn add(&self, name: &str) -> Arc<Environment> {
        let env = Arc::new(Environment::start().await.expect("start member"));
        let name = ClusterName::new(name);
        let mut st = self.inner.lock();
        st.envs.insert(name.clone(), env.clone());
        if let Some(mgr) = &st.mgr {
            mgr.engage(Cluster::new(name, env.client(), Default::default()))
                .expect("engage");
        }
        env
    }

    /// Disengages the member `name` and stops its server.
    pub fn remove(&self, name: &str) {
        let name = ClusterName::new(name);
        let mut st = self.inner.lock();
        if let Some(mgr) = &st.mgr {
            mgr.disengage(&name);
        }
        if let Some(env) = st.envs.remove(&name) {
            env.stop();
        }
    }

    /// The member `name`'s server.
    pub fn env(&self, name: &str) -> Arc<Environment> {
        self.inner.lock().envs[&ClusterName::new(name)].clone()
    }
}

#[async_trait]
impl Provider for EnvtestProvider {
    async fn run(
        &self,
        ctx: CancellationToken,
        mgr: multicluster::Manager,
    ) -> Result<(), BoxError> {
        {
            let mut st = self.inner.lock();
            for (name, env) in &st.envs {
                mgr.engage(Cluster::new(name.clone(), env.client(), Default::default()))?;
            }
            st.mgr = Some(mgr);
        }
        ctx.cancelled().await;
        Ok(())
    }
}
