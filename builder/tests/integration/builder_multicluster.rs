//! The multi-cluster builder over in-process API servers (an `EnvtestProvider` of three
//! members, plus the hub engaged by `LocalProvider` as "hub"): `for_` / `owns` over
//! every engaged cluster; each ConfigMap gets a Secret it controls in its own cluster
//! (owner references are per cluster: the Secret's owner is that cluster's ConfigMap);
//! deleting an owned Secret brings its owner back through `owns`; the local cluster is
//! left out unless asked for; a cluster filter leaves out what it rejects; a member
//! added at run time is reconciled, one removed is not.

use crate::multicluster_support;

use async_trait::async_trait;
use ctrl_builder::MultiClusterBuilder;
use ctrl_envtest::Environment;
use ctrl_runtime::controllerutil::set_controller_reference;
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::multicluster::{self, ClusterRequest, LocalProvider};
use ctrl_runtime::reconcile::{self, Action, Reconciler};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use multicluster_support::{EnvtestProvider, create, eventually};
use tokio_util::sync::CancellationToken;

/// Makes a Secret of the same name, controlled by the ConfigMap, in the request's cluster.
struct SecretFor(multicluster::Manager);

#[async_trait]
impl Reconciler<ClusterRequest> for SecretFor {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        req: ClusterRequest,
    ) -> Result<Action, reconcile::Error> {
        let kube = self.0.cluster(&req.cluster)?.kube_client();
        let cms: Api<ConfigMap> = Api::namespaced(kube.clone(), &req.namespace);
        let Some(cm) = cms.get_opt(&req.name).await? else {
            return Ok(Action::done());
        };
        let secrets: Api<Secret> = Api::namespaced(kube, &req.namespace);
        if secrets.get_opt(&req.name).await?.is_some() {
            return Ok(Action::done());
        }
        let mut secret = Secret {
            metadata: ObjectMeta {
                name: Some(req.name.clone()),
                namespace: Some(req.namespace.clone()),
                ..Default::default()
            },
            string_data: Some([("cluster".to_string(), req.cluster.to_string())].into()),
            ..Default::default()
        };
        set_controller_reference(&cm, &mut secret)?;
        secrets.create(&PostParams::default(), &secret).await?;
        Ok(Action::done())
    }
}

/// The uid of the owner of Secret `default/<name>` in `env`, once it exists.
async fn owner_uid(env: &Environment, name: &str) -> Option<String> {
    let api: Api<Secret> = Api::namespaced(env.client(), "default");
    let s = api.get_opt(name).await.ok()??;
    Some(s.metadata.owner_references?.first()?.uid.clone())
}

async fn uid(env: &Environment, name: &str) -> String {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.get(name).await.expect("get").metadata.uid.expect("uid")
}

async fn has_secret(env: &Environment, name: &str) -> bool {
    owner_uid(env, name).await.is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_and_owns_over_every_engaged_cluster() {
    let hub = Environment::start().await.expect("hub");
    let members = EnvtestProvider::start(3).await;
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let local = Manager::new(hub.client(), opts).expect("manager");
    let mgr = multicluster::Manager::new(local.clone());
    mgr.add_provider(members.clone()).expect("members");
    mgr.add_provider(LocalProvider::new("hub")).expect("hub");
    MultiClusterBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .owns::<Secret>()
        .with_cluster_filter(|c| c.name().as_str() != "member-3")
        .complete(SecretFor(mgr.clone()))
        .expect("controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (local, stop) = (local.clone(), stop.clone());
        async move { local.start(stop).await }
    });

    for name in ["member-1", "member-2", "member-3"] {
        create(&members.env(name), "x").await;
    }
    create(&hub, "x").await;
    for name in ["member-1", "member-2"] {
        let env = members.env(name);
        eventually(&format!("the Secret of {name}"), || has_secret(&env, "x")).await;
        assert_eq!(
            owner_uid(&env, "x").await,
            Some(uid(&env, "x").await),
            "owned in {name}"
        );
    }

    // Owns, per cluster: the Secret deleted in member-1 comes back there.
    let m1 = members.env("member-1");
    let secrets: Api<Secret> = Api::namespaced(m1.client(), "default");
    secrets
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the Secret of member-1 back", || has_secret(&m1, "x")).await;

    // A member added at run time is reconciled; a removed one no longer is.
    let m4 = members.add("member-4").await;
    create(&m4, "x").await;
    eventually("the Secret of member-4", || has_secret(&m4, "x")).await;
    let m2 = members.env("member-2");
    members.remove("member-2");
    assert!(!mgr.clusters().iter().any(|c| c.as_str() == "member-2"));

    // The filtered-out member and the local cluster got nothing: a sentinel created after
    // them in member-1 is reconciled first.
    create(&m1, "sentinel").await;
    eventually("the sentinel's Secret", || has_secret(&m1, "sentinel")).await;
    assert!(
        !has_secret(&members.env("member-3"), "x").await,
        "filtered out"
    );
    assert!(
        !has_secret(&hub, "x").await,
        "the local cluster is out by default"
    );
    drop(m2);

    stop.cancel();
    running.await.expect("join").expect("manager stopped");
}
