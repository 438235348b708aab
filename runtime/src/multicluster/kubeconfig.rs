//! Providers of clusters described by kubeconfigs: [`KubeconfigSecretProvider`]
//! (multicluster-runtime's `providers/kubeconfig`: Secrets on the hub) and
//! [`KubeconfigDirProvider`] (files in a directory, multicluster-runtime's `file`
//! provider), and [`client_from_kubeconfig`], which both use.
//!
//! Both engage a cluster per kubeconfig, named after the Secret or the file, and
//! re-engage it when its kubeconfig changes (a content hash tells), as upstream does.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Cluster, ClusterName, Manager, Provider};
use crate::cache;
use crate::error::BoxError;

/// The label that marks a kubeconfig Secret (upstream's `DefaultKubeconfigSecretLabel`);
/// its value must be `"true"`.
pub const DEFAULT_KUBECONFIG_SECRET_LABEL: &str = "sigs.k8s.io/multicluster-runtime-kubeconfig";

/// The Secret's data key holding the kubeconfig (upstream's `DefaultKubeconfigSecretKey`).
pub const DEFAULT_KUBECONFIG_SECRET_KEY: &str = "kubeconfig";

/// A kube client for the current context of the kubeconfig `data` (YAML), with the
/// client metrics of [`crate::metrics::client`] (Go's `clientcmd.RESTConfigFromKubeConfig`).
pub async fn client_from_kubeconfig(data: &[u8]) -> Result<kube::Client, BoxError> {
    let text = std::str::from_utf8(data)?;
    let kubeconfig = Kubeconfig::from_yaml(text)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(crate::metrics::client::new_client(config, false)?)
}

/// The clusters a kubeconfig provider engaged, with the hash of each one's kubeconfig.
#[derive(Default)]
struct Engaged(HashMap<ClusterName, u64>);

impl Engaged {
    /// Engages (or re-engages, when its kubeconfig changed) `name` from `data`.
    async fn apply(
        &mut self,
        mgr: &Manager,
        name: ClusterName,
        data: &[u8],
        opts: &cache::Options,
    ) {
        let hash = xxhash_rust::xxh64::xxh64(data, 0);
        if self.0.get(&name) == Some(&hash) {
            return;
        }
        if self.0.remove(&name).is_some() {
            tracing::info!(cluster = %name, "kubeconfig changed, re-engaging the cluster");
            mgr.disengage(&name);
        }
        let client = match client_from_kubeconfig(data).await {
            Ok(client) => client,
            Err(error) => {
                tracing::error!(cluster = %name, %error, "invalid kubeconfig, cluster not engaged");
                return;
            }
        };
        match mgr.engage(Cluster::new(name.clone(), client, opts.clone())) {
            Ok(()) => {
                self.0.insert(name, hash);
            }
            Err(error) => tracing::error!(cluster = %name, %error, "engaging the cluster failed"),
        }
    }

    /// Disengages `name` if this provider engaged it.
    fn remove(&mut self, mgr: &Manager, name: &ClusterName) {
        if self.0.remove(name).is_some() {
            mgr.disengage(name);
        }
    }

    /// Disengages every cluster not in `keep`.
    fn retain(&mut self, mgr: &Manager, keep: &HashSet<ClusterName>) {
        let gone: Vec<ClusterName> = self
            .0
            .keys()
            .filter(|n| !keep.contains(*n))
            .cloned()
            .collect();
        for name in gone {
            self.remove(mgr, &name);
        }
    }
}

/// Engages a cluster for each Secret in one namespace of the hub that carries the
/// label [`DEFAULT_KUBECONFIG_SECRET_LABEL`]`: "true"`, from the kubeconfig under
/// [`DEFAULT_KUBECONFIG_SECRET_KEY`], named after the Secret (multicluster-runtime's
/// kubeconfig provider). A Secret deleted (or being deleted) disengages its cluster;
/// a Secret whose kubeconfig changes re-engages it; a Secret without the key, or
/// with a kubeconfig that does not parse, is logged and skipped.
pub struct KubeconfigSecretProvider {
    hub: kube::Client,
    namespace: String,
    label: String,
    key: String,
    cache: cache::Options,
    ready: watch::Sender<bool>,
}

impl KubeconfigSecretProvider {
    /// Watches the kubeconfig Secrets of `namespace` on `hub`.
    pub fn new(hub: kube::Client, namespace: impl Into<String>) -> Self {
        Self {
            hub,
            namespace: namespace.into(),
            label: DEFAULT_KUBECONFIG_SECRET_LABEL.into(),
            key: DEFAULT_KUBECONFIG_SECRET_KEY.into(),
            cache: cache::Options::default(),
            ready: watch::channel(false).0,
        }
    }

    /// Another label marks the Secrets (upstream's `KubeconfigSecretLabel`).
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Another data key holds the kubeconfig (upstream's `KubeconfigSecretKey`).
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }

    /// The cache options each member cluster's cache is built with.
    pub fn with_cache_options(mut self, opts: cache::Options) -> Self {
        self.cache = opts;
        self
    }

    /// Handles one watch event; `init` collects the Secrets of a (re)list.
    async fn handle(
        &self,
        mgr: &Manager,
        engaged: &mut Engaged,
        init: &mut Option<HashSet<ClusterName>>,
        event: Event<Secret>,
    ) {
        match event {
            Event::Init => *init = Some(HashSet::new()),
            Event::InitApply(s) => {
                if let Some(seen) = init {
                    seen.insert(ClusterName::new(
                        s.metadata.name.clone().unwrap_or_default(),
                    ));
                }
                self.apply(mgr, engaged, &s).await;
            }
            Event::Apply(s) => self.apply(mgr, engaged, &s).await,
            Event::Delete(s) => {
                engaged.remove(mgr, &ClusterName::new(s.metadata.name.unwrap_or_default()))
            }
            Event::InitDone => {
                engaged.retain(mgr, &init.take().unwrap_or_default());
                self.ready.send_replace(true);
            }
        }
    }

    /// Engages, re-engages or disengages the cluster of `secret`.
    async fn apply(&self, mgr: &Manager, engaged: &mut Engaged, secret: &Secret) {
        let name = ClusterName::new(secret.metadata.name.clone().unwrap_or_default());
        if secret.metadata.deletion_timestamp.is_some() {
            engaged.remove(mgr, &name);
            return;
        }
        let data = secret.data.as_ref().and_then(|d| d.get(&self.key));
        match data.filter(|d| !d.0.is_empty()) {
            Some(data) => engaged.apply(mgr, name, &data.0, &self.cache).await,
            None => {
                tracing::error!(cluster = %name, key = %self.key, "Secret does not contain kubeconfig data, skipping")
            }
        }
    }
}

#[async_trait]
impl Provider for KubeconfigSecretProvider {
    async fn run(&self, ctx: CancellationToken, mgr: Manager) -> Result<(), BoxError> {
        let api: Api<Secret> = Api::namespaced(self.hub.clone(), &self.namespace);
        let config = watcher::Config::default().labels(&format!("{}=true", self.label));
        let mut events = watcher::watcher(api, config).default_backoff().boxed();
        let (mut engaged, mut init) = (Engaged::default(), None);
        loop {
            let event = tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                e = events.next() => e,
            };
            match event {
                Some(Ok(event)) => self.handle(&mgr, &mut engaged, &mut init, event).await,
                Some(Err(error)) => {
                    tracing::warn!(namespace = %self.namespace, %error, "watching kubeconfig Secrets failed")
                }
                None => return Ok(()),
            }
        }
    }

    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        super::provider::wait_ready(&self.ready, ctx).await
    }

    fn name(&self) -> String {
        "kubeconfig-provider".into()
    }
}

/// How often [`KubeconfigDirProvider`] re-reads its directory by default.
pub const DEFAULT_DIR_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Engages a cluster for each file in a directory, from the kubeconfig it holds,
/// named after the file (without its extension); re-reads the directory every
/// interval ([`DEFAULT_DIR_POLL_INTERVAL`]): a new file engages, a changed one
/// re-engages, a removed one disengages. Polling, not inotify: it works the same on
/// every file system and on mounted Secrets, whose files change by symlink swap.
pub struct KubeconfigDirProvider {
    dir: PathBuf,
    interval: Duration,
    cache: cache::Options,
    ready: watch::Sender<bool>,
}

impl KubeconfigDirProvider {
    /// Watches the kubeconfig files of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            interval: DEFAULT_DIR_POLL_INTERVAL,
            cache: cache::Options::default(),
            ready: watch::channel(false).0,
        }
    }

    /// Re-reads the directory every `interval`.
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// One pass: engage what is new or changed, disengage what is gone.
    async fn scan(&self, mgr: &Manager, engaged: &mut Engaged) {
        let files = match read_dir(&self.dir) {
            Ok(files) => files,
            Err(error) => {
                tracing::warn!(dir = %self.dir.display(), %error, "reading the kubeconfig directory failed");
                return;
            }
        };
        let names: HashSet<ClusterName> = files.iter().map(|(n, _)| n.clone()).collect();
        engaged.retain(mgr, &names);
        for (name, data) in files {
            engaged.apply(mgr, name, &data, &self.cache).await;
        }
    }
}

/// The regular files of `dir` (hidden ones skipped), by cluster name.
fn read_dir(dir: &Path) -> std::io::Result<Vec<(ClusterName, Vec<u8>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if stem.starts_with('.') || !path.is_file() {
            continue;
        }
        out.push((ClusterName::new(stem), std::fs::read(&path)?));
    }
    Ok(out)
}

#[async_trait]
impl Provider for KubeconfigDirProvider {
    async fn run(&self, ctx: CancellationToken, mgr: Manager) -> Result<(), BoxError> {
        let mut engaged = Engaged::default();
        loop {
            self.scan(&mgr, &mut engaged).await;
            self.ready.send_replace(true);
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = tokio::time::sleep(self.interval) => {}
            }
        }
    }

    async fn wait_ready(&self, ctx: CancellationToken) -> bool {
        super::provider::wait_ready(&self.ready, ctx).await
    }

    fn name(&self) -> String {
        "file-provider".into()
    }
}
