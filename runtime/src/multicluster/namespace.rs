//! [`NamespaceProvider`]: each namespace of one cluster engaged as a cluster of its own
//! (multicluster-runtime's `providers/namespace`), for trying a multi-cluster
//! controller on one API server.

use std::collections::HashSet;

use async_trait::async_trait;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Cluster, ClusterName, Manager, Provider};
use crate::cache;
use crate::error::BoxError;

/// Engages a cluster named after each namespace of `client`'s cluster, whose cache
/// sees only that namespace; a namespace deleted (or terminating) disengages it.
/// The cluster's client is the whole cluster's: requests name the namespace.
pub struct NamespaceProvider {
    client: kube::Client,
    ready: watch::Sender<bool>,
}

impl NamespaceProvider {
    /// The namespaces of the cluster `client` talks to.
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            ready: watch::channel(false).0,
        }
    }

    fn engage(&self, mgr: &Manager, ns: &Namespace, known: &mut HashSet<ClusterName>) {
        let name = ClusterName::new(ns.metadata.name.clone().unwrap_or_default());
        let terminating = ns.metadata.deletion_timestamp.is_some();
        if terminating {
            if known.remove(&name) {
                mgr.disengage(&name);
            }
            return;
        }
        if known.contains(&name) {
            return;
        }
        let opts = cache::Options {
            default_namespaces: vec![name.to_string()],
            ..Default::default()
        };
        match mgr.engage(Cluster::new(name.clone(), self.client.clone(), opts)) {
            Ok(()) => {
                known.insert(name);
            }
            Err(error) => tracing::error!(cluster = %name, %error, "engaging the namespace failed"),
        }
    }
}

#[async_trait]
impl Provider for NamespaceProvider {
    async fn run(&self, ctx: CancellationToken, mgr: Manager) -> Result<(), BoxError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let mut events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let (mut known, mut seen) = (HashSet::new(), HashSet::new());
        loop {
            let event = tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                e = events.next() => e,
            };
            match event {
                Some(Ok(Event::Init)) => seen.clear(),
                Some(Ok(Event::InitApply(ns))) => {
                    seen.insert(ClusterName::new(
                        ns.metadata.name.clone().unwrap_or_default(),
                    ));
                    self.engage(&mgr, &ns, &mut known);
                }
                Some(Ok(Event::Apply(ns))) => self.engage(&mgr, &ns, &mut known),
                Some(Ok(Event::Delete(ns))) => {
                    let name = ClusterName::new(ns.metadata.name.unwrap_or_default());
                    if known.remove(&name) {
                        mgr.disengage(&name);
                    }
                }
                Some(Ok(Event::InitDone)) => {
                    for gone in known.iter().filter(|n| !seen.contains(*n)) {
                        mgr.disengage(gone);
                    }
                    known.retain(|n| seen.contains(n));
                    self.ready.send_replace(true);
                }
                Some(Err(error)) => tracing::warn!(%error, "watching namespaces failed"),
                None => return Ok(()),
            }
        }
    }

    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        super::provider::wait_ready(&self.ready, ctx).await
    }

    fn name(&self) -> String {
        "namespace-provider".into()
    }
}
