//! The local demo: with no cluster configured, the operator brings its own world —
//! ctrl-envtest (an in-process API server) with the CRD installed, a local object
//! store whose health flips, and two sample buckets — and tells you how to watch it
//! with kubectl.

use std::path::Path;
use std::time::Duration;

use ctrl_envtest::Environment;
use kube::api::{Api, PostParams};
use tokio_util::sync::CancellationToken;

use super::crd::{self, StorageBucket, StorageBucketSpec};
use super::store::ObjectStore;

/// The columns the printed `kubectl get -w` shows (ctrl-envtest serves no server-side
/// tables, so the CRD's printer columns would not show).
pub const WATCH_COLUMNS: &str = "custom-columns=NAME:.metadata.name,AVAILABLE:.status.available,REASON:.status.conditions[0].reason,LAST PROBE:.status.lastProbeTime";

/// The sample buckets the demo creates.
pub const SAMPLE_BUCKETS: [&str; 2] = ["photos", "backups"];

/// The demo's world, running until `stop` is cancelled.
pub struct World {
    /// The embedded API server, with the StorageBucket CRD installed.
    pub env: Environment,
    /// The local object store.
    pub store: ObjectStore,
}

/// Starts envtest with the CRD, writes a kubeconfig to `kubeconfig` and starts the
/// object store, flipping its health every `flip_every` (never if zero).
pub async fn start(
    kubeconfig: &Path,
    flip_every: Duration,
    stop: CancellationToken,
) -> Result<World, Box<dyn std::error::Error + Send + Sync>> {
    let env = Environment::builder().crd(crd::crd()).start().await?;
    env.write_kubeconfig(kubeconfig)
        .map_err(|e| format!("cannot write the kubeconfig {}: {e}", kubeconfig.display()))?;
    tracing::info!(target: "storagebucket::envtest", "API server (ctrl-envtest) at {}, StorageBucket CRD installed", env.url());
    let kc = kubeconfig.display();
    tracing::info!(target: "storagebucket::envtest", "watch it:  kubectl --kubeconfig {kc} get storagebuckets -w -o '{WATCH_COLUMNS}'");
    tracing::info!(target: "storagebucket::envtest", "details:   kubectl --kubeconfig {kc} describe storagebucket photos");

    let store = ObjectStore::start(stop.clone()).await?;
    if flip_every.is_zero() {
        tracing::info!(target: "storagebucket::store", "object store at http://{}", store.addr());
    } else {
        tracing::info!(target: "storagebucket::store", "object store at http://{} (its health flips every {flip_every:?})", store.addr());
        store.flip_every(flip_every, stop, |healthy| {
            let now = if healthy {
                "UP: answers 200"
            } else {
                "DOWN: answers 503"
            };
            tracing::info!(target: "storagebucket::store", "object store is {now}");
        });
    }
    Ok(World { env, store })
}

impl World {
    /// Creates the sample buckets in namespace `default`, as `kubectl apply` would.
    pub async fn create_samples(&self) -> Result<(), kube::Error> {
        let api: Api<StorageBucket> = Api::namespaced(self.env.client(), "default");
        for name in SAMPLE_BUCKETS {
            let bucket = StorageBucket::new(
                name,
                StorageBucketSpec {
                    endpoint: self.store.bucket_url(name),
                },
            );
            tracing::info!(target: "storagebucket::demo", "creating StorageBucket default/{name} (endpoint {})", bucket.spec.endpoint);
            api.create(&PostParams::default(), &bucket).await?;
        }
        Ok(())
    }
}
