//! The providers other than kubeconfig Secrets, each engaging in-process API servers
//! reached over HTTP: kubeconfig files in a directory (a file added engages, changed
//! re-engages, removed disengages), namespaces as clusters (each namespace a cluster
//! whose cache sees only it; a deleted namespace disengages), a static list, and the
//! local cluster under a name.

use crate::multicluster_support;

use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{ListOptions, Reader};
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::multicluster::{
    self, ClusterName, KubeconfigDirProvider, LocalProvider, NamespaceProvider, StaticProvider,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use multicluster_support::*;
use tokio_util::sync::CancellationToken;

fn manager(env: &Environment) -> (Manager, multicluster::Manager) {
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let local = Manager::new(env.client(), opts).expect("manager");
    let mgr = multicluster::Manager::new(local.clone());
    (local, mgr)
}

fn run(local: &Manager) -> CancellationToken {
    let stop = CancellationToken::new();
    let (local, s) = (local.clone(), stop.clone());
    tokio::spawn(async move { local.start(s).await });
    stop
}

fn engaged(mgr: &multicluster::Manager) -> Vec<String> {
    mgr.clusters().iter().map(|c| c.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_files_in_a_directory() {
    let hub = Environment::start().await.expect("hub");
    let (a, b) = (
        Environment::start().await.expect("a"),
        Environment::start().await.expect("b"),
    );
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("alpha.kubeconfig"), kubeconfig(&a)).expect("write");
    let (local, mgr) = manager(&hub);
    let provider = KubeconfigDirProvider::new(dir.path()).with_interval(Duration::from_millis(50));
    mgr.add_provider(provider).expect("provider");
    let stop = run(&local);
    eventually("alpha engaged", || async { engaged(&mgr) == ["alpha"] }).await;

    // A file added engages; its cluster reads from its own server.
    std::fs::write(dir.path().join("beta.kubeconfig"), kubeconfig(&b)).expect("write");
    eventually("beta engaged", || async {
        engaged(&mgr) == ["alpha", "beta"]
    })
    .await;
    create(&b, "only-in-b").await;
    let beta = mgr.cluster(&ClusterName::new("beta")).expect("beta");
    eventually("beta's cache sees its object", || async {
        beta.cache()
            .list::<ConfigMap>(&ListOptions::new())
            .await
            .is_ok_and(|l| {
                l.iter()
                    .any(|c| c.metadata.name.as_deref() == Some("only-in-b"))
            })
    })
    .await;

    // A changed file re-engages (a new Cluster); a removed one disengages.
    std::fs::write(dir.path().join("alpha.kubeconfig"), kubeconfig(&b)).expect("rewrite");
    let old = mgr.cluster(&ClusterName::new("alpha")).expect("alpha");
    eventually("alpha re-engaged", || async { old.is_disengaged() }).await;
    eventually("alpha back", || async {
        mgr.cluster(&ClusterName::new("alpha")).is_ok()
    })
    .await;
    std::fs::remove_file(dir.path().join("beta.kubeconfig")).expect("remove");
    eventually("beta disengaged", || async { engaged(&mgr) == ["alpha"] }).await;
    assert!(beta.is_disengaged());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_as_clusters() {
    let env = Environment::start().await.expect("env");
    let (local, mgr) = manager(&env);
    mgr.add_provider(NamespaceProvider::new(env.client()))
        .expect("provider");
    let stop = run(&local);
    eventually("default engaged", || async {
        engaged(&mgr).contains(&"default".to_string())
    })
    .await;
    let namespaces: Api<Namespace> = Api::all(env.client());
    let team = Namespace {
        metadata: ObjectMeta {
            name: Some("team-a".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &team)
        .await
        .expect("create ns");
    eventually("team-a engaged", || async {
        engaged(&mgr).contains(&"team-a".to_string())
    })
    .await;

    // The cluster "team-a" sees the ConfigMaps of its namespace only.
    create(&env, "in-default").await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "team-a");
    let mut cm = config_map("in-team-a");
    cm.metadata.namespace = Some("team-a".into());
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let cluster = mgr.cluster(&ClusterName::new("team-a")).expect("team-a");
    eventually("team-a's cache holds its object only", || async {
        let names: Vec<String> = cluster
            .cache()
            .list::<ConfigMap>(&ListOptions::new())
            .await
            .map(|l| l.iter().filter_map(|c| c.metadata.name.clone()).collect())
            .unwrap_or_default();
        names.iter().any(|n| n == "in-team-a") && !names.iter().any(|n| n == "in-default")
    })
    .await;

    namespaces
        .delete("team-a", &DeleteParams::default())
        .await
        .expect("delete ns");
    eventually("team-a disengaged", || async {
        !engaged(&mgr).contains(&"team-a".to_string())
    })
    .await;
    assert!(cluster.is_disengaged());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_list_and_the_local_cluster_by_name() {
    let hub = Environment::start().await.expect("hub");
    let member = Environment::start().await.expect("member");
    let (local, mgr) = manager(&hub);
    mgr.add_provider(StaticProvider::new().with_cluster("member", member.client()))
        .expect("static");
    mgr.add_provider(LocalProvider::new("hub")).expect("local");
    let stop = run(&local);
    eventually("both engaged", || async {
        engaged(&mgr) == ["hub", "member"]
    })
    .await;
    let hub_cluster = mgr.cluster(&ClusterName::new("hub")).expect("hub");
    assert!(hub_cluster.is_local());
    assert!(
        !mgr.cluster(&ClusterName::new("member"))
            .expect("member")
            .is_local()
    );
    assert!(matches!(
        mgr.cluster(&ClusterName::new("nowhere")),
        Err(multicluster::Error::ClusterNotFound(_))
    ));
    stop.cancel();
}
