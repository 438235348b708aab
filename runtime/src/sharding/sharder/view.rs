//! What the webhook (`super::webhook`) decides on: the ring and its shard leases, kept
//! current by watches (upstream's webhook reads them from its informer caches), so
//! admitting an object costs no request to the API server.
//!
//! [`RingView::start`] lists and watches the ring's `ControllerRing` and its shard
//! leases (kube-runtime reflectors) and waits until both stores are filled; the
//! watches stop when the view is dropped. [`RingView::members`] judges the leases at
//! the moment of the call (`super::members::Members::judge`), so a lease expiring
//! between two watch events still counts as expired.
//!
//! A watched view can lag the API server by a moment: a lease the sharder just took
//! over may still look held here, and the webhook may assign an object to that shard
//! after the sharder's sync listed the objects. The sharder therefore syncs once more
//! on the tick after every membership change (`super::Sharder`), which moves such an
//! object on; the sync itself never reads this view.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::members::{self, Members};
use crate::sharding::ControllerRing;

/// How long [`RingView::start`] waits for the first lists (less than the webhook's
/// 10 s timeout, so a slow start answers with an error instead of timing out).
const SYNC_TIMEOUT: Duration = Duration::from_secs(5);

/// Watched copies of one ControllerRing and of its shard leases.
pub(crate) struct RingView {
    rings: Store<ControllerRing>,
    leases: Store<Lease>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for RingView {
    fn drop(&mut self) {
        self.tasks.iter().for_each(JoinHandle::abort);
    }
}

/// Runs a reflector of `api` (with `cfg`) in the background; returns its store.
fn reflect<K>(api: Api<K>, cfg: watcher::Config) -> (Store<K>, JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, cfg))
        .backoff(crate::cache::WatchBackoff::default())
        .applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    (reader, task)
}

impl RingView {
    /// Watches ring `ring` and its leases in `lease_namespace`; returns once both are
    /// listed.
    pub async fn start(
        client: &kube::Client,
        ring: &str,
        lease_namespace: &str,
    ) -> Result<Self, String> {
        let (rings, a) = reflect(
            Api::<ControllerRing>::all(client.clone()),
            watcher::Config::default().fields(&format!("metadata.name={ring}")),
        );
        let (leases, b) = reflect(
            Api::<Lease>::namespaced(client.clone(), lease_namespace),
            watcher::Config::default().labels(&members::selector(ring)),
        );
        let view = Self {
            rings,
            leases,
            tasks: vec![a, b],
        };
        let ready = async {
            view.rings.wait_until_ready().await?;
            view.leases.wait_until_ready().await
        };
        match tokio::time::timeout(SYNC_TIMEOUT, ready).await {
            Ok(Ok(())) => Ok(view),
            Ok(Err(e)) => Err(format!("watching the ring: {e}")),
            Err(_) => Err("the ring and its leases were not listed in time".into()),
        }
    }

    /// The ring named `name`, if it exists.
    pub fn ring(&self, name: &str) -> Option<ControllerRing> {
        self.rings
            .get(&reflector::ObjectRef::new(name))
            .map(|r| (*r).clone())
    }

    /// The ring's members now.
    pub fn members(&self) -> Members {
        let leases = self.leases.state().into_iter().map(|l| (*l).clone());
        Members::judge(leases, ctrl_clock::now())
    }
}
