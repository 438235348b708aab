//! [`Options`] and [`Error`] for a [`Controller`](super::Controller), with
//! controller-runtime's defaults.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::Controller;
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::{Queue, RateLimiter};

/// Builds a controller's queue from its name and rate limiter (Go's `Options.NewQueue`).
pub type NewQueueFn<R = Request> =
    Arc<dyn Fn(&str, Arc<dyn RateLimiter<R>>) -> Arc<dyn Queue<R>> + Send + Sync>;

/// How a controller runs (controller-runtime's `controller.Options`; `TypedOptions[R]`
/// for a controller of requests of type `R`).
///
/// Build with struct update syntax: `Options { max_concurrent_reconciles: 4, ..Default::default() }`.
/// Fields left unset (0, zero, `None`) take the manager's
/// [`config::Controller`](crate::config::Controller) when built against a manager
/// ([`Options::default_from_config`]), and then controller-runtime's defaults.
pub struct Options<R: TypedRequest = Request> {
    /// How many reconciles run at once (workers). 0 means the manager's
    /// `group_kind_concurrency` entry for the `For` kind (the builder looks it up),
    /// else its `max_concurrent_reconciles`, else 1.
    pub max_concurrent_reconciles: usize,
    /// How long each source gets to start, and then to sync; zero means the
    /// manager's, else 2 min.
    pub cache_sync_timeout: Duration,
    /// Turn a panicking reconcile into an error (and a retry); when false the panic
    /// propagates out of `Controller::start`. Unset means the manager's, else true.
    pub recover_panic: Option<bool>,
    /// Drop a reconcile that runs longer than this: its token is cancelled and its
    /// future (with the API calls it awaits) dropped, as a Go context deadline aborts
    /// them; the request is retried with backoff as after an error. Counted in
    /// `controller_runtime_reconcile_timeouts_total`. Unset means the manager's, else
    /// none.
    pub reconciliation_timeout: Option<Duration>,
    /// The queue's rate limiter. Default: the priority queue (the default queue)
    /// takes `default_item_rate_limiter()` (per item 5 ms .. 1000 s, no overall
    /// limit); the rate-limiting queue (`use_priority_queue: false`) takes
    /// `default_controller_rate_limiter()` (that, and 10 qps / burst 100 overall).
    pub rate_limiter: Option<Arc<dyn RateLimiter<R>>>,
    /// Whether the controller runs only on the elected leader. Unset means the
    /// manager's, else true.
    pub need_leader_election: Option<bool>,
    /// Start the sources before leader election, on every replica, so a new leader
    /// reconciles from a synced cache (Go's `EnableWarmup`). Unset means the
    /// manager's, else false.
    pub enable_warmup: Option<bool>,
    /// Allow a name already used by another controller in this process. Unset means
    /// the manager's, else false.
    pub skip_name_validation: Option<bool>,
    /// Use the priority queue (controller-runtime's default); false selects the
    /// client-go style rate-limiting queue. Unset means the manager's, else true.
    pub use_priority_queue: Option<bool>,
    /// Builds the queue instead of the two above (Go's `NewQueue`).
    pub new_queue: Option<NewQueueFn<R>>,
    /// Keep, for each queued request, what queued it (the queue is wrapped in a
    /// [`Triggered`](crate::workqueue::Triggered)), for `reconcile::triggers()`, the
    /// reconcile span's `triggers` field and `controller_runtime_reconcile_triggers_total`.
    /// Unset means true (ctrl's addition: controller-runtime's queue keeps no triggers).
    pub record_triggers: Option<bool>,
    /// API group of the reconciled type, for the `controllerGroup` span field.
    pub group: String,
    /// Kind of the reconciled type, for the `controllerKind` span field.
    pub kind: String,
}

/// controller-runtime's default cache sync timeout.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

impl<R: TypedRequest> Default for Options<R> {
    fn default() -> Self {
        Self {
            max_concurrent_reconciles: 0,
            cache_sync_timeout: Duration::ZERO,
            recover_panic: None,
            reconciliation_timeout: None,
            rate_limiter: None,
            need_leader_election: None,
            enable_warmup: None,
            skip_name_validation: None,
            use_priority_queue: None,
            new_queue: None,
            record_triggers: None,
            group: String::new(),
            kind: String::new(),
        }
    }
}

impl<R: TypedRequest> Clone for Options<R> {
    fn clone(&self) -> Self {
        Self {
            rate_limiter: self.rate_limiter.clone(),
            new_queue: self.new_queue.clone(),
            group: self.group.clone(),
            kind: self.kind.clone(),
            ..*self
        }
    }
}

impl<R: TypedRequest> Options<R> {
    /// Fills every field left unset from the manager-wide `config` (Go's
    /// `Options.DefaultFromConfig`). `group_kind_concurrency` is not read here: it
    /// needs the `For` kind, which the builder knows.
    pub fn default_from_config(mut self, config: &Controller) -> Self {
        fn or<T: Copy>(mine: &mut Option<T>, theirs: Option<T>) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
        if self.max_concurrent_reconciles == 0 {
            self.max_concurrent_reconciles = config.max_concurrent_reconciles;
        }
        if self.cache_sync_timeout.is_zero() {
            self.cache_sync_timeout = config.cache_sync_timeout;
        }
        or(&mut self.skip_name_validation, config.skip_name_validation);
        or(&mut self.recover_panic, config.recover_panic);
        or(&mut self.need_leader_election, config.need_leader_election);
        or(&mut self.enable_warmup, config.enable_warmup);
        or(&mut self.use_priority_queue, config.use_priority_queue);
        or(
            &mut self.reconciliation_timeout,
            config.reconciliation_timeout,
        );
        self
    }

    /// Replaces unset values with controller-runtime's defaults.
    pub(crate) fn normalized(mut self) -> Self {
        self.max_concurrent_reconciles = self.max_concurrent_reconciles.max(1);
        if self.cache_sync_timeout.is_zero() {
            self.cache_sync_timeout = DEFAULT_CACHE_SYNC_TIMEOUT;
        }
        self.recover_panic.get_or_insert(true);
        self.need_leader_election.get_or_insert(true);
        self.enable_warmup.get_or_insert(false);
        self.skip_name_validation.get_or_insert(false);
        self.use_priority_queue.get_or_insert(true);
        self.record_triggers.get_or_insert(true);
        self
    }

    /// `record_triggers`, or its default (true).
    pub fn records_triggers(&self) -> bool {
        self.record_triggers.unwrap_or(true)
    }

    /// `recover_panic`, or its default (true).
    pub fn recovers_panic(&self) -> bool {
        self.recover_panic.unwrap_or(true)
    }

    /// `need_leader_election`, or its default (true).
    pub fn needs_leader_election(&self) -> bool {
        self.need_leader_election.unwrap_or(true)
    }

    /// `enable_warmup`, or its default (false).
    pub fn warms_up(&self) -> bool {
        self.enable_warmup.unwrap_or(false)
    }

    /// `skip_name_validation`, or its default (false).
    pub fn skips_name_validation(&self) -> bool {
        self.skip_name_validation.unwrap_or(false)
    }

    /// `use_priority_queue`, or its default (true).
    pub fn uses_priority_queue(&self) -> bool {
        self.use_priority_queue.unwrap_or(true)
    }
}

impl<R: TypedRequest> fmt::Debug for Options<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("recover_panic", &self.recover_panic)
            .field("reconciliation_timeout", &self.reconciliation_timeout)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("need_leader_election", &self.need_leader_election)
            .field("enable_warmup", &self.enable_warmup)
            .field("skip_name_validation", &self.skip_name_validation)
            .field("use_priority_queue", &self.use_priority_queue)
            .field("new_queue", &self.new_queue.is_some())
            .field("record_triggers", &self.record_triggers)
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
