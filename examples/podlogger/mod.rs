//! The PodLogger controller, as modules the example's `main` and its integration
//! test (`tests/podlogger.rs`) share: the manager with one controller for Pods
//! whose reconciler is a plain function ([`manager`]), and the demo that does what
//! `kubectl run nginx --image=nginx` and `kubectl delete pod nginx` do ([`demo`]).
//! What every example shares (flags, the local API server) is in
//! `ctrl::cli`; logging goes through `ctrl::log`.

use std::time::Duration;

use ctrl::ControllerBuilder;
use ctrl::manager::{BoxError, Manager, Options};
use ctrl::reconcile::{self, Action};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};

/// The Lease replicas share with `--leader-elect` (kubebuilder sets `LeaderElectionID` in
/// `main` the same way).
pub const LEASE: &str = "podlogger.ctrl.example.com";

/// The Pod the demo creates and deletes.
pub const DEMO_POD: &str = "nginx";

/// A manager on `client` with the Pod controller (named `pod`, after the kind): Go's
/// `NewControllerManagedBy(mgr).For(&corev1.Pod{}).Complete(reconcile.Func(...))`.
/// The Lease is [`LEASE`] unless `opts` names one.
pub fn manager(client: kube::Client, mut opts: Options) -> Result<Manager, BoxError> {
    if opts.leader_election_id.is_empty() {
        opts.leader_election_id = LEASE.into();
    }
    // Reads see the controller's own writes (client::CacheOptions; docs/cache-and-client.md).
    opts.client.cache.read_your_writes_consistency_enabled = true;
    let mgr = Manager::new(client, opts)?;
    ControllerBuilder::new(&mgr)
        .for_::<Pod>()
        .complete(reconcile::func(|_ctx, req| async move {
            tracing::info!(name = %req.name, namespace = %req.namespace, "Reconciler is called");
            Ok(Action::done())
        }))?;
    Ok(mgr)
}

/// Pod `name` as `kubectl run <name> --image=<image>` makes it: one container named
/// after the Pod, label `run=<name>`.
pub fn pod(name: &str, image: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("run".to_string(), name.to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: name.into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The article's kubectl session in namespace `default`: creates Pod [`DEMO_POD`],
/// waits `pause`, deletes it.
pub async fn demo(client: kube::Client, pause: Duration) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client, "default");
    tracing::info!("kubectl run {DEMO_POD} --image=nginx");
    pods.create(&PostParams::default(), &pod(DEMO_POD, "nginx"))
        .await?;
    tokio::time::sleep(pause).await;
    tracing::info!("kubectl delete pod {DEMO_POD}");
    pods.delete(DEMO_POD, &DeleteParams::default()).await?;
    Ok(())
}
