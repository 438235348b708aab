//! [`CertRotator`]: webhook serving certificates without cert-manager (the design of
//! open-policy-agent's cert-controller, `pkg/rotator`, which Gatekeeper uses).
//!
//! With no certificate given, the rotator makes a CA and a serving certificate for the
//! webhook Service's DNS names and keeps them in a Secret (`ca.crt`, `ca.key`, `tls.crt`,
//! `tls.key`, `keypair`), renews them ahead of expiry, writes the serving pair into the
//! webhook server's certificate directory (where its [`CertWatcher`](crate::certwatcher)
//! picks a new pair up without a restart), and injects the CA bundle as `caBundle` into the
//! webhook configurations and CRD conversion stanzas it is told about ([`Target`],
//! `inject`), putting it back when someone removes it (it watches them). Its readiness
//! check ([`CertRotator::ready_checker`]) fails until the bundle was injected, and
//! [`CertRotator::add_to`] adds it, the check and its RBAC rules ([`CertRotator::rbac_rules`])
//! to a [`Manager`].
//!
//! Differences from upstream, each for a reason:
//! - Every replica runs it (upstream's `RequireLeaderElection` is off by default too): each
//!   needs the files. Writes carry the resourceVersion, so replicas racing to rotate settle
//!   on one result, which every replica reads back from the Secret it watches.
//! - Upstream lets the kubelet project the Secret into the pod; here the rotator writes the
//!   files itself (the Deployment mounts an `emptyDir`), so a rotation is served within the
//!   watcher's change check instead of the kubelet's sync period, and the bundle is injected
//!   *before* the files change (`run`): an API server never meets a certificate its bundle
//!   does not trust.
//! - It runs in the manager's first group
//!   ([`Group::HttpServers`](crate::manager::Group::HttpServers)) and reports ready once the
//!   files exist, so the webhook server (next group) finds them when it loads them.
//!
//! The Secret must exist (the generated manifests ship it empty, as Gatekeeper's do): the
//! rotator only gets and updates it, so its RBAC names it and nothing else.

mod inject;
mod keypair;
mod run;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::certwatcher::{DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use crate::healthz::{CheckError, Checker};
use crate::manager::{self, Manager};
use crate::rbac::{Rule, rule};
use crate::webhook;

pub use inject::{Target, TargetKind};
pub use keypair::{CA_CERT_KEY, CA_KEY_KEY, Rotation};

const DAY: Duration = Duration::from_secs(86_400);

/// How a [`CertRotator`] works. Defaults are cert-controller's.
#[derive(Clone, Debug)]
pub struct Options {
    /// The namespace of the Secret the certificates are kept in.
    pub secret_namespace: String,
    /// The Secret's name.
    pub secret_name: String,
    /// Where the serving pair is written: the webhook server's certificate directory.
    pub cert_dir: PathBuf,
    /// The certificate file, and its key in the Secret; default `tls.crt`.
    pub cert_name: String,
    /// The key file, and its key in the Secret; default `tls.key`.
    pub key_name: String,
    /// The CA's common name; default `ctrl-ca`.
    pub ca_name: String,
    /// The CA's organization; default `ctrl`.
    pub ca_organization: String,
    /// The serving certificate's DNS name: the webhook Service's `<name>.<namespace>.svc`.
    pub dns_name: String,
    /// More names (or IP addresses) the serving certificate is for.
    pub extra_dns_names: Vec<String>,
    /// The objects the CA bundle is injected into.
    pub targets: Vec<Target>,
    /// How long a new CA is valid; default 10 years.
    pub ca_validity: Duration,
    /// How long a new serving certificate is valid; default 1 year.
    pub server_validity: Duration,
    /// How long before its end a certificate is renewed; default 90 days.
    pub lookahead: Duration,
    /// How often the certificates are checked; default 12 hours. (Changes to the Secret
    /// and the targets are acted on as they are seen.)
    pub rotation_check_frequency: Duration,
}

impl Options {
    /// The options for a Secret `namespace/name` and a serving certificate for
    /// `dns_name`, everything else defaulted (the certificate directory is the webhook
    /// server's default).
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        dns_name: impl Into<String>,
    ) -> Self {
        Self {
            secret_namespace: namespace.into(),
            secret_name: name.into(),
            cert_dir: webhook::default_cert_dir(),
            cert_name: DEFAULT_CERT_NAME.into(),
            key_name: DEFAULT_KEY_NAME.into(),
            ca_name: "ctrl-ca".into(),
            ca_organization: "ctrl".into(),
            dns_name: dns_name.into(),
            extra_dns_names: Vec::new(),
            targets: Vec::new(),
            ca_validity: 3650 * DAY,
            server_validity: 365 * DAY,
            lookahead: 90 * DAY,
            rotation_check_frequency: Duration::from_secs(12 * 3600),
        }
    }

    /// Writes the files where `server` reads them (its directory and file names).
    pub fn serving(mut self, server: &webhook::Options) -> Self {
        self.cert_dir = server.cert_dir.clone();
        self.cert_name = server.cert_name.clone();
        self.key_name = server.key_name.clone();
        self
    }

    /// Adds an object to inject the CA bundle into.
    pub fn target(mut self, target: Target) -> Self {
        self.targets.push(target);
        self
    }

    /// Adds names (or IP addresses) to the serving certificate.
    pub fn extra_dns_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.extra_dns_names
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// What a rotator with these options needs: get, list, watch and update on its Secret
    /// in its namespace, and on each target, by name.
    pub fn rbac_rules(&self) -> Vec<Rule> {
        let secret = rule()
            .groups([""])
            .resources(["secrets"])
            .resource_names([self.secret_name.clone()])
            .verbs(["get", "list", "watch", "update"])
            .namespace(self.secret_namespace.clone());
        std::iter::once(secret)
            .chain(self.targets.iter().map(Target::rbac_rule))
            .collect()
    }

    /// The serving certificate's names: the DNS name, then the extra ones.
    fn hosts(&self) -> Vec<String> {
        std::iter::once(self.dns_name.clone())
            .chain(self.extra_dns_names.iter().cloned())
            .collect()
    }
}

/// Whether the serving files were written yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Files {
    Pending,
    Written,
    Failed,
}

struct Inner {
    opts: Options,
    hosts: Vec<String>,
    client: kube::Client,
    injected: AtomicBool,
    files: watch::Sender<Files>,
    forced: Mutex<Rotation>,
    force: Notify,
}

/// The rotator (cert-controller's `CertRotator`). Cheap to clone; clones share one.
#[derive(Clone)]
pub struct CertRotator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CertRotator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertRotator")
            .field("opts", &self.inner.opts)
            .finish_non_exhaustive()
    }
}

impl CertRotator {
    /// A rotator talking to the API server through `client` (it reads directly, not
    /// through the manager's cache, which starts after the webhook server).
    pub fn new(client: kube::Client, opts: Options) -> Self {
        let (files, _) = watch::channel(Files::Pending);
        Self {
            inner: Arc::new(Inner {
                hosts: opts.hosts(),
                opts,
                client,
                injected: AtomicBool::new(false),
                files,
                forced: Mutex::new(Rotation::None),
                force: Notify::new(),
            }),
        }
    }

    /// Adds the rotator to `mgr` (Go's `rotator.AddRotator`): as a runnable, with its
    /// readiness check `cert-rotator`, and with its RBAC rules.
    pub fn add_to(&self, mgr: &Manager) -> Result<(), manager::Error> {
        mgr.add(self.clone())?;
        mgr.add_readyz_check("cert-rotator", self.ready_checker())?;
        mgr.add_rbac_rules(self.rbac_rules());
        Ok(())
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// What the rotator needs ([`Options::rbac_rules`]).
    pub fn rbac_rules(&self) -> Vec<Rule> {
        self.inner.opts.rbac_rules()
    }

    /// A readiness check that fails until the CA bundle was injected into every target
    /// that exists (Go's `IsReady` channel, closed by `ensureReady`).
    pub fn ready_checker(&self) -> ReadyChecker {
        ReadyChecker(self.inner.clone())
    }

    /// Whether the CA bundle was injected into every target that exists.
    pub fn is_injected(&self) -> bool {
        self.inner.injected.load(Ordering::Acquire)
    }

    /// Rotates now, whatever the certificates' dates: a new serving certificate, or with
    /// [`Rotation::Ca`] a new CA too (the old one stays in the bundle while valid).
    pub fn rotate(&self, what: Rotation) {
        {
            let mut forced = self.inner.forced.lock();
            *forced = (*forced).max(what);
        }
        self.inner.force.notify_one();
    }
}

/// The readiness check of [`CertRotator::ready_checker`].
#[derive(Clone)]
pub struct ReadyChecker(Arc<Inner>);

impl std::fmt::Debug for ReadyChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ReadyChecker").finish()
    }
}

#[async_trait]
impl Checker for ReadyChecker {
    async fn check(&self, _req: &crate::http::Request) -> Result<(), CheckError> {
        if self.0.injected.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err("the CA bundle is not injected into the webhook configurations yet".into())
        }
    }
}
