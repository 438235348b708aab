//! [`Options`] and [`Error`] for a [`Controller`](super::Controller), with
//! controller-runtime's defaults.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::reconcile::Request;
use crate::workqueue::{Queue, RateLimiter};

/// Builds a controller's queue from its name and rate limiter (Go's `Options.NewQueue`).
pub type NewQueueFn =
    Arc<dyn Fn(&str, Arc<dyn RateLimiter<Request>>) -> Arc<dyn Queue<Request>> + Send + Sync>;

/// How a controller runs (controller-runtime's `controller.Options`).
///
/// Build with struct update syntax: `Options { max_concurrent_reconciles: 4, ..Default::default() }`.
#[derive(Clone)]
pub struct Options {
    /// How many reconciles run at once (workers); 0 means 1. Default 1.
    pub max_concurrent_reconciles: usize,
    /// How long each source gets to start, and then to sync; zero means the default, 2 min.
    pub cache_sync_timeout: Duration,
    /// Turn a panicking reconcile into an error (and a retry). Default true; when false
    /// the panic propagates out of `Controller::start`.
    pub recover_panic: bool,
    /// Cancel a reconcile's context after this long (it must observe the context).
    /// Counted in `controller_runtime_reconcile_timeouts_total`. Default none.
    pub reconciliation_timeout: Option<Duration>,
    /// The queue's rate limiter. Default: the priority queue (the default queue)
    /// takes `default_item_rate_limiter()` (per item 5 ms .. 1000 s, no overall
    /// limit); the rate-limiting queue (`use_priority_queue: false`) takes
    /// `default_controller_rate_limiter()` (that, and 10 qps / burst 100 overall).
    pub rate_limiter: Option<Arc<dyn RateLimiter<Request>>>,
    /// Whether the controller runs only on the elected leader. Default true.
    pub need_leader_election: bool,
    /// Allow a name already used by another controller in this process. Default false.
    pub skip_name_validation: bool,
    /// Use the priority queue (controller-runtime's default); false selects the
    /// client-go style rate-limiting queue. Default true.
    pub use_priority_queue: bool,
    /// Builds the queue instead of the two above (Go's `NewQueue`).
    pub new_queue: Option<NewQueueFn>,
    /// API group of the reconciled type, for the `controllerGroup` span field.
    pub group: String,
    /// Kind of the reconciled type, for the `controllerKind` span field.
    pub kind: String,
}

/// controller-runtime's default cache sync timeout.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for Options {
    fn default() -> Self {
        Self {
            max_concurrent_reconciles: 1,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            recover_panic: true,
            reconciliation_timeout: None,
            rate_limiter: None,
            need_leader_election: true,
            skip_name_validation: false,
            use_priority_queue: true,
            new_queue: None,
            group: String::new(),
            kind: String::new(),
        }
    }
}

impl Options {
    /// Replaces zero values with defaults.
    pub(crate) fn normalized(mut self) -> Self {
        self.max_concurrent_reconciles = self.max_concurrent_reconciles.max(1);
        if self.cache_sync_timeout.is_zero() {
            self.cache_sync_timeout = DEFAULT_CACHE_SYNC_TIMEOUT;
        }
        self
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("recover_panic", &self.recover_panic)
            .field("reconciliation_timeout", &self.reconciliation_timeout)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("need_leader_election", &self.need_leader_election)
            .field("skip_name_validation", &self.skip_name_validation)
            .field("use_priority_queue", &self.use_priority_queue)
            .field("new_queue", &self.new_queue.is_some())
            .field("group", &self.group)
            .field("kind", &self.kind)
            .finish()
    }
}

/// Why a controller could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The name is empty.
    #[error("must specify Name for Controller")]
    EmptyName,
    /// Another controller in this process has the name.
    #[error(
        "controller with name {0} already exists. Controller names must be unique to avoid multiple controllers reporting to the same metric"
    )]
    DuplicateName(String),
    /// `start` was called twice.
    #[error(
        "controller was started more than once. This is likely to be caused by being added to a manager multiple times"
    )]
    AlreadyStarted,
    /// A source's `start` returned an error.
    #[error("failed to start source {source_name}: {error}")]
    SourceStart {
        /// The source's name.
        source_name: String,
        /// What it returned.
        #[source]
        error: crate::source::Error,
    },
    /// A source's `start` did not return within the cache sync timeout.
    #[error(
        "timed out waiting for source {0} to Start. Please ensure that its Start() method is non-blocking"
    )]
    SourceStartTimeout(String),
    /// A source did not sync within the cache sync timeout, or failed to.
    #[error("failed to wait for {controller} caches to sync {source_name}: {reason}")]
    CacheSync {
        /// The controller's name.
        controller: String,
        /// The source's name.
        source_name: String,
        /// What went wrong.
        reason: String,
    },
}

/// Claims `name` for this process unless it is taken (Go's `checkName`).
pub(crate) fn claim_name(name: &str) -> Result<(), Error> {
    static USED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut used = USED.lock();
    let used = used.get_or_insert_with(HashSet::new);
    if !used.insert(name.to_string()) {
        return Err(Error::DuplicateName(name.to_string()));
    }
    Ok(())
}
