//! The Manager: runs every part of an operator — caches, controllers, webhook and
//! HTTP servers, your own runnables — and starts and stops them in the right order
//! (controller-runtime's `pkg/manager`).
//!
//! A [`Manager`] is built from a `kube::Client` and [`Options`]; it makes the shared
//! [`Cache`] ([`crate::cache`]) and the [`Client`] over it ([`crate::client`]), and serves metrics ([`crate::metricsserver`]),
//! health probes ([`crate::healthz`]) and, if asked, profiles ([`crate::pprof`]) on
//! listeners bound in [`Manager::new`].
//! Everything it runs is a [`Runnable`] in one of six [`Group`]s, started in
//! [`Group::START_ORDER`] (`start`) and stopped in [`Group::STOP_ORDER`] within the
//! grace period. Controllers
//! ([`crate::controller`]) are runnables; the builder adds them for you. The webhook
//! server (feature `webhook`: `crate::webhook`) is `Options::webhook_server`, handed out by
//! `Manager::webhook_server` (`webhooks`) and run in the webhooks group. Leader
//! election plugs in at one seam (`leader`); [`shutdown_signal`] and the
//! [`Args`] flags cover `main`. [`Manager::rbac_rules`] (`rbac`) says which RBAC
//! rules all of this needs ([`crate::rbac`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use clap::Parser;
//! use ctrl_runtime::manager::{Args, Manager, shutdown_signal};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     manager: Args,
//! }
//! let cli = Cli::parse();
//! let mgr = Manager::new(cli.manager.client().await?, cli.manager.options())?;
//! mgr.add_healthz_check("ping", ctrl_runtime::healthz::ping())?;
//! // ... add controllers ...
//! mgr.start(shutdown_signal()).await?;
//! # Ok(()) }
//! ```

mod adapters;
mod error;
mod flags;
mod group;
mod leader;
mod options;
mod rbac;
mod runnable;
mod signals;
mod start;
#[cfg(feature = "webhook")]
mod webhooks;

use std::future::Future;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cache::Cache;
use crate::client::{ApiReader, Client};
use crate::healthz::{self, Checker};
use crate::http::{self, Handler};
use crate::metricsserver::ExtraHandlers;
use crate::recorder;

/// The error a runnable fails with (the crate's one boxed error, [`crate::error::BoxError`]).
pub use crate::error::BoxError;
pub use error::Error;
pub use flags::{Args, ConfigError, load_config};
pub use options::{
    CACHE_SYNC_CHECK, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT, DEFAULT_LIVENESS_ENDPOINT,
    DEFAULT_READINESS_ENDPOINT, Options,
};
pub use runnable::{Group, Runnable, RunnableFunc};
pub use signals::shutdown_signal;

use group::RunnableGroup;

/// Runs an operator's runnables (controller-runtime's `manager.Manager`). Cheap to
/// clone: clones share one manager.
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

struct Inner {
    kube: kube::Client,
    cache: Cache,
    client: Client,
    opts: Options,
    groups: [Arc<RunnableGroup>; 6],
    errors_rx: Mutex<Option<mpsc::UnboundedReceiver<Error>>>,
    elected: CancellationToken,
    leader: leader::Leader,
    metrics_addr: Option<SocketAddr>,
    probe_addr: Option<SocketAddr>,
    pprof_addr: Option<SocketAddr>,
    recorder: recorder::Provider,
    #[cfg(feature = "webhook")]
    webhook: webhooks::Slot,
    /// Whether a recorder was handed out (its Events need RBAC, `rbac_rules`).
    events_used: std::sync::atomic::AtomicBool,
    state: Mutex<State>,
}

struct State {
    started: bool,
    healthz: healthz::Handler,
    readyz: healthz::Handler,
    metrics_extra: ExtraHandlers,
    metrics_listener: Option<StdListener>,
    probe_listener: Option<StdListener>,
    pprof_listener: Option<StdListener>,
    rbac: Vec<crate::rbac::Rule>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("metrics_addr", &self.inner.metrics_addr)
            .field("health_probe_addr", &self.inner.probe_addr)
            .field("started", &self.inner.state.lock().started)
            .finish_non_exhaustive()
    }
}

fn bind(kind: &'static str, addr: Option<&str>) -> Result<Option<StdListener>, Error> {
    let Some(addr) = addr else { return Ok(None) };
    http::bind(addr).map(Some).map_err(|source| Error::Bind {
        kind,
        addr: addr.to_string(),
        source,
    })
}

impl Manager {
    /// A manager talking to the cluster through `client`. Builds the cache and binds
    /// the metrics and health probe listeners now, so an address in use is reported
    /// here (and port 0 can be read back with [`Manager::metrics_addr`]).
    pub fn new(client: kube::Client, opts: Options) -> Result<Self, Error> {
        let metrics = bind("metrics", opts.metrics_addr())?;
        let probe = bind("health probe", opts.probe_addr())?;
        let pprof = bind("pprof", opts.pprof_addr())?;
        let metrics_addr = metrics.as_ref().and_then(|l| l.local_addr().ok());
        let probe_addr = probe.as_ref().and_then(|l| l.local_addr().ok());
        let pprof_addr = pprof.as_ref().and_then(|l| l.local_addr().ok());
        let cache = Cache::new(client.clone(), opts.cache.clone());
        let cached_client = Client::new(client.clone(), cache.clone()).with_options(&opts.client);
        let mut readyz = healthz::Handler::new();
        let synced = cache.clone();
        readyz.add_check(
            CACHE_SYNC_CHECK,
            healthz::from_fn(move |_| {
                if synced.has_synced() {
                    Ok(())
                } else {
                    Err("the cache has not synced yet".into())
                }
            }),
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let groups = Group::START_ORDER.map(|g| RunnableGroup::new(g, tx.clone()));
        let leader = leader::Leader::new(&client, &opts, tx.clone())?;
        let recorder = recorder::Provider::new(client.clone());
        #[cfg(feature = "webhook")]
        let webhook = webhooks::Slot::new(&opts);
        Ok(Self {
            inner: Arc::new(Inner {
                kube: client,
                cache,
                client: cached_client,
                opts,
                groups,
                errors_rx: Mutex::new(Some(rx)),
                elected: CancellationToken::new(),
                leader,
                metrics_addr,
                probe_addr,
                pprof_addr,
                recorder,
                #[cfg(feature = "webhook")]
                webhook,
                events_used: std::sync::atomic::AtomicBool::new(false),
                state: Mutex::new(State {
                    started: false,
                    healthz: healthz::Handler::new(),
                    readyz,
                    metrics_extra: ExtraHandlers::default(),
                    metrics_listener: metrics,
                    probe_listener: probe,
                    pprof_listener: pprof,
                    rbac: Vec::new(),
                }),
            }),
        })
    }

    /// Adds a runnable to its [`Group`]. Before `start` it waits for its group to
    /// start; after, it starts at once. Fails once the manager is stopping. A
    /// runnable that [needs warmup](Runnable::need_warmup) also has its
    /// [`warmup`](Runnable::warmup) added to [`Group::Warmup`].
    pub fn add(&self, runnable: impl Runnable) -> Result<(), Error> {
        let r: Arc<dyn Runnable> = Arc::new(runnable);
        if r.need_warmup() {
            self.inner
                .group(Group::Warmup)
                .add(Arc::new(adapters::Warmup(r.clone())))?;
        }
        let g = r.group();
        tracing::debug!(runnable = %r.name(), group = g.as_str(), "Adding runnable");
        self.inner.group(g).add(r)
    }

    /// Adds a liveness check, served at the liveness endpoint and `/<endpoint>/<name>`.
    /// Only before `start`.
    pub fn add_healthz_check(
        &self,
        name: impl Into<String>,
        check: impl Checker,
    ) -> Result<(), Error> {
        self.before_start(Error::CheckAfterStart, |st| {
            st.healthz.add_check(name, check);
            Ok(())
        })
    }

    /// Adds a readiness check, served at the readiness endpoint and
    /// `/<endpoint>/<name>`. The manager already has one, [`CACHE_SYNC_CHECK`], for the
    /// cache's sync. Only before `start`.
    pub fn add_readyz_check(
        &self,
        name: impl Into<String>,
        check: impl Checker,
    ) -> Result<(), Error> {
        self.before_start(Error::CheckAfterStart, |st| {
            st.readyz.add_check(name, check);
            Ok(())
        })
    }

    /// Serves `handler` at `path` on the metrics server too (Go's
    /// `AddMetricsServerExtraHandler`). Only before `start`; not `/metrics`; one
    /// handler per path.
    pub fn add_metrics_extra_handler(
        &self,
        path: impl Into<String>,
        handler: impl Handler,
    ) -> Result<(), Error> {
        self.before_start(Error::MetricsHandlerAfterStart, |st| {
            Ok(st.metrics_extra.add(path, handler)?)
        })
    }

    /// Runs `f` on the state unless the manager has started (then `late`).
    fn before_start(
        &self,
        late: Error,
        f: impl FnOnce(&mut State) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut st = self.inner.state.lock();
        if st.started {
            return Err(late);
        }
        f(&mut st)
    }

    /// The client: reads from the cache, writes to the API server (see
    /// [`crate::client`] for how stale a read can be).
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// A reader that goes straight to the API server, bypassing the cache (Go's
    /// `GetAPIReader`), for reads that must not be stale.
    pub fn api_reader(&self) -> ApiReader {
        self.inner.client.api_reader()
    }

    /// The shared cache. The manager runs it (in the caches group); do not `add` it
    /// yourself, or it is started twice and the manager stops with an error.
    pub fn cache(&self) -> Cache {
        self.inner.cache.clone()
    }

    /// The kube client the manager was built with (uncached).
    pub fn kube_client(&self) -> kube::Client {
        self.inner.kube.clone()
    }

    /// An Events recorder whose Events name `name` as their reporting controller
    /// (Go's `mgr.GetEventRecorder(name)`). All recorders share one bounded queue and
    /// writer, started on the first Event and flushed when the manager stops; see
    /// [`crate::recorder`].
    pub fn event_recorder(&self, name: impl Into<String>) -> recorder::Recorder {
        self.inner
            .events_used
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.inner.recorder.event_recorder(name)
    }

    /// The options the manager was built with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// Where the metrics server listens, if enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.inner.metrics_addr
    }

    /// Where the health probe server listens, if enabled.
    pub fn health_probe_addr(&self) -> Option<SocketAddr> {
        self.inner.probe_addr
    }

    /// Where the profiling server ([`crate::pprof`]) listens, if enabled.
    pub fn pprof_addr(&self) -> Option<SocketAddr> {
        self.inner.pprof_addr
    }

    /// Resolves once this manager is the leader and its leader-election runnables
    /// have started (at once after the caches sync while leader election is off);
    /// never on a standby.
    pub fn elected(&self) -> impl Future<Output = ()> + Send + 'static {
        self.inner.elected.clone().cancelled_owned()
    }

    /// This manager's leader-election identity (`<hostname>_<uuid>`, the Lease's
    /// `holderIdentity` while it leads), or `None` with leader election off.
    pub fn leader_election_identity(&self) -> Option<&str> {
        self.inner.leader.identity()
    }

    /// Whether [`Manager::start`] has been called.
    pub fn is_started(&self) -> bool {
        self.inner.state.lock().started
    }

    /// Whether the given group has started (for tests and diagnostics).
    pub fn group_started(&self, group: Group) -> bool {
        self.inner.group(group).is_started()
    }
}
