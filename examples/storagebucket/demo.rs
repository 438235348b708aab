//! The local demo: with no cluster configured, the operator runs in a world of its own —
//! ctrl-envtest (an in-process API server, which `ctrl::cli` starts with the
//! CRD installed), a local object store whose health flips, the admission webhooks
//! ([`super::webhooks`]) served with a self-signed certificate and registered with the
//! API server (by `ctrl::cli`), and sample buckets
//! (one of them rejected by the validating webhook) — and tells you how to watch it
//! with kubectl.

use std::path::Path;
use std::time::Duration;

use ctrl::CancellationToken;
use kube::api::{Api, PostParams};

use super::crd::{StorageBucket, StorageBucketSpec};
use super::store::ObjectStore;

/// A bucket the demo tries to create with an `ftp://` endpoint: the validating
/// webhook rejects it.
pub const REJECTED_BUCKET: &str = "archive";

/// The columns the printed `kubectl get -w` shows: the probe's outcome, which the
/// CRD's printer columns (served by ctrl-envtest as by any API server) show only in part.
pub const WATCH_COLUMNS: &str = "custom-columns=NAME:.metadata.name,AVAILABLE:.status.available,REASON:.status.conditions[0].reason,LAST PROBE:.status.lastProbeTime";

/// The sample buckets the demo creates.
pub const SAMPLE_BUCKETS: [&str; 2] = ["photos", "backups"];

/// The demo's world, running until `stop` is cancelled.
pub struct World {
    /// A client of the local API server (ctrl-envtest, with the StorageBucket CRD).
    pub client: kube::Client,
    /// The local object store.
    pub store: ObjectStore,
}

/// The world on the local API server of `client` (whose kubeconfig is at
/// `kubeconfig`, for the kubectl hints): starts the object store, flipping its health
/// every `flip_every` (never if zero).
pub async fn start(
    client: kube::Client,
    kubeconfig: &Path,
    flip_every: Duration,
    stop: CancellationToken,
) -> Result<World, Box<dyn std::error::Error + Send + Sync>> {
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
    Ok(World { client, store })
}

impl World {
    /// Creates the sample buckets in namespace `default`, as `kubectl apply` would,
    /// without a probe path (the defaulting webhook fills it in), then one with an
    /// `ftp://` endpoint, which the validating webhook rejects.
    pub async fn create_samples(&self) -> Result<(), kube::Error> {
        let api: Api<StorageBucket> = Api::namespaced(self.client.clone(), "default");
        for name in SAMPLE_BUCKETS {
            let bucket =
                StorageBucket::new(name, StorageBucketSpec::new(self.store.bucket_url(name)));
            tracing::info!(target: "storagebucket::demo", "creating StorageBucket default/{name} (endpoint {}, no probePath)", bucket.spec.endpoint);
            let created = api.create(&PostParams::default(), &bucket).await?;
            let path = created.spec.probe_path.as_deref().unwrap_or("<none>");
            tracing::info!(target: "storagebucket::demo", "created default/{name}: the defaulting webhook set probePath {path}");
        }
        let name = REJECTED_BUCKET;
        let bucket = StorageBucket::new(
            name,
            StorageBucketSpec::new(format!("ftp://{}/buckets/{name}", self.store.addr())),
        );
        tracing::info!(target: "storagebucket::demo", "creating StorageBucket default/{name} (endpoint {})", bucket.spec.endpoint);
        match api.create(&PostParams::default(), &bucket).await {
            Err(kube::Error::Api(status)) => {
                tracing::info!(target: "storagebucket::demo", "rejected ({} {}): {}", status.code, status.reason, status.message);
                Ok(())
            }
            Err(e) => Err(e),
            Ok(_) => {
                tracing::warn!(target: "storagebucket::demo", "default/{name} was admitted: is the validating webhook registered?");
                Ok(())
            }
        }
    }
}
