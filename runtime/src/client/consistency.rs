//! Read your own writes (controller-runtime's `client.CacheOptions.ReadYourWritesConsistencyEnabled`,
//! `pkg/client/consistency.go`, PR #3472; design in `designs/read_your_own_write_client.md`).
//!
//! Off by default, as upstream. A [`Client`] built with it on ([`Options`] /
//! [`Client::with_options`], [`Client::with_read_your_writes`], the manager's
//! `Options::client`) remembers, per `apiVersion/Kind` and `namespace/name`, what each of
//! its writes left behind ([`Requirement`]): the `resourceVersion` a create, update,
//! patch, apply or status write produced, or the UID a delete removed. A later cached get
//! of that key — or a list of that kind (in that namespace) — first waits until the
//! informer has observed it (`crate::cache`'s `observed`: woken by the informer's watch,
//! no polling), then reads the cache. So a reconciler that created a child sees it in
//! its next read and does not create it again, and an update does not go out on a stale
//! `resourceVersion` to loop on 409s.
//!
//! - The wait is bounded: [`DEFAULT_READ_YOUR_WRITES_TIMEOUT`] (5 s) or the client's
//!   [`CacheOptions::read_your_writes_timeout`]; per call,
//!   [`Client::with_read_your_writes_timeout`]. A read that times out fails with
//!   `cache::Error::ReadYourWritesTimeout` ([`Error::is_read_your_writes_timeout`]) and
//!   counts in [`READ_YOUR_WRITES_TIMEOUTS`].
//! - Per call opt-out (Go's `client.DisableReadYourWritesConsistency`):
//!   [`Client::without_read_your_writes`] reads at once, as a plain cached client.
//! - A read snapshots the writes recorded when it starts: a write that completes while a
//!   read is already waiting does not extend that read's wait.
//! - **Objects outside the cache's selectors** (a label or field selector, a namespace
//!   the cache does not watch) never reach the informer: a read of one waits until its
//!   scope's watch moves past the write's `resourceVersion` (then it answers NotFound, as
//!   the plain cached client does) or times out with the typed error. Read such objects
//!   through [`Client::api_reader`], or opt out per call.
//! - Not tracked: dry-run writes (they store nothing), `delete_all_of` (it names no keys),
//!   and subresource writes whose body is not the object (`scale`, `eviction`). Reads of
//!   types read uncached ([`Client::disable_for`]) never wait: the server is consistent.
//! - A recorded write is forgotten once a read saw it observed, or after [`FORGET_AFTER`].

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::api::DeleteParams;
use kube::core::Status;
use parking_lot::Mutex;
use prometheus::{IntCounterVec, Opts};
use tokio::time::Instant;

use super::{Client, Error};
use crate::cache::{CacheObject, Requirement, gvk_string, object_key, resource_version};

/// How long a cached read waits for the client's own writes by default (upstream's
/// suggestion for the request context a reconcile read runs under).
pub const DEFAULT_READ_YOUR_WRITES_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a write is remembered when no read saw it observed: a watch that lags by
/// more is broken, not slow.
pub const FORGET_AFTER: Duration = Duration::from_secs(60);

/// The counter of reads that gave up waiting for the client's own writes, by
/// `apiVersion/Kind` (label `kind`). controller-runtime has no metric for this; the
/// name follows its `controller_runtime_` prefix.
pub const READ_YOUR_WRITES_TIMEOUTS: &str =
    "controller_runtime_client_read_your_writes_timeouts_total";

/// The cache side of a client's options (controller-runtime's `client.CacheOptions`).
#[derive(Clone, Debug, Default)]
pub struct CacheOptions {
    /// Cached reads wait until the cache has observed the client's own writes (Go's
    /// `ReadYourWritesConsistencyEnabled`). Defaults to false.
    pub read_your_writes_consistency_enabled: bool,
    /// How long such a read waits at most. Defaults to
    /// [`DEFAULT_READ_YOUR_WRITES_TIMEOUT`].
    pub read_your_writes_timeout: Option<Duration>,
}

/// How a client is built (controller-runtime's `client.Options`; the rest of Go's
/// fields are the client's builder methods: [`Client::with_field_owner`],
/// [`Client::disable_for`], ...).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// How cached reads behave.
    pub cache: CacheOptions,
}

/// One write remembered: what a read must see, and when it was made.
type Remembered = (Requirement, Instant);

/// The writes a read-your-own-writes client made, by `apiVersion/Kind` then key. Shared
/// by the clones of a client.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    by_kind: Mutex<HashMap<String, HashMap<Arc<str>, Remembered>>>,
}

/// A client's read-your-own-writes state: the shared writes and how this clone reads.
#[derive(Clone, Debug)]
pub(crate) struct ReadYourWrites {
    writes: Arc<Writes>,
    timeout: Duration,
    /// False for a clone that opted out ([`Client::without_read_your_writes`]).
    wait: bool,
}

impl ReadYourWrites {
    fn new(timeout: Duration) -> Self {
        Self {
            writes: Arc::default(),
            timeout,
            wait: true,
        }
    }
}

impl Writes {
    fn remember(&self, kind: String, key: String, req: Requirement) {
        let now = Instant::now();
        let mut by_kind = self.by_kind.lock();
        let keys = by_kind.entry(kind).or_default();
        keys.retain(|_, (_, at)| now.duration_since(*at) < FORGET_AFTER);
        keys.insert(Arc::from(key), (req, now));
    }

    /// The writes of `kind` a read must see: the one of `key`, or every one in
    /// `namespace` (`None`: all) for a list.
    fn pending(&self, kind: &str, select: Select<'_>) -> Vec<(Arc<str>, Requirement)> {
        let by_kind = self.by_kind.lock();
        let Some(keys) = by_kind.get(kind) else {
            return Vec::new();
        };
        match select {
            Select::Key(key) => keys
                .get_key_value(key)
                .map(|(k, (r, _))| vec![(k.clone(), r.clone())])
                .unwrap_or_default(),
            Select::Namespace(ns) => keys
                .iter()
                .filter(|(k, _)| {
                    ns.is_none_or(|ns| k.split_once('/').is_some_and(|(n, _)| n == ns))
                })
                .map(|(k, (r, _))| (k.clone(), r.clone()))
                .collect(),
        }
    }

    /// Forgets the writes a read saw observed, unless a newer write replaced them.
    fn forget(&self, kind: &str, seen: &[(Arc<str>, Requirement)]) {
        let mut by_kind = self.by_kind.lock();
        let Some(keys) = by_kind.get_mut(kind) else {
            return;
        };
        for (key, req) in seen {
            if keys.get(key).is_some_and(|(r, _)| r == req) {
                keys.remove(key);
            }
        }
        if keys.is_empty() {
            by_kind.remove(kind);
        }
    }
}

/// Which writes a read waits for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Select<'a> {
    /// A get: the write of this key.
    Key(&'a str),
    /// A list: the writes in this namespace (`None`: all namespaces).
    Namespace(Option<&'a str>),
}

fn timeouts() -> &'static IntCounterVec {
    static M: OnceLock<IntCounterVec> = OnceLock::new();
    M.get_or_init(|| {
        let m = IntCounterVec::new(
            Opts::new(
                READ_YOUR_WRITES_TIMEOUTS,
                "Total number of cached reads that timed out waiting for the cache to observe the client's own writes.",
            ),
            &["kind"],
        )
        .expect("static metric definition is valid");
        let _ = crate::metrics::registry().register(Box::new(m.clone()));
        m
    })
}

impl Client {
    /// Applies `opts` (controller-runtime's `client.New(config, client.Options{..})`):
    /// turns read-your-own-writes on when `opts.cache` asks for it.
    pub fn with_options(self, opts: &Options) -> Self {
        if !opts.cache.read_your_writes_consistency_enabled {
            return self;
        }
        let timeout = opts
            .cache
            .read_your_writes_timeout
            .unwrap_or(DEFAULT_READ_YOUR_WRITES_TIMEOUT);
        Self {
            ryw: Some(ReadYourWrites::new(timeout)),
            ..self
        }
    }

    /// A client whose cached reads see its own writes, waiting up to
    /// [`DEFAULT_READ_YOUR_WRITES_TIMEOUT`] (see the module doc of `consistency`).
    pub fn with_read_your_writes(self) -> Self {
        self.with_options(&Options {
            cache: CacheOptions {
                read_your_writes_consistency_enabled: true,
                read_your_writes_timeout: None,
            },
        })
    }

    /// Whether cached reads wait for this client's own writes.
    pub fn reads_your_writes(&self) -> bool {
        self.ryw.as_ref().is_some_and(|r| r.wait)
    }

    /// This client for one read that does not wait for its own writes (Go's
    /// `client.DisableReadYourWritesConsistency`):
    /// `client.without_read_your_writes().get::<K>(ns, name)`. Its writes are still
    /// remembered. A plain client is returned as is.
    pub fn without_read_your_writes(&self) -> Self {
        let mut c = self.clone();
        if let Some(r) = c.ryw.as_mut() {
            r.wait = false;
        }
        c
    }

    /// This client for reads that wait for its own writes at most `timeout`.
    pub fn with_read_your_writes_timeout(&self, timeout: Duration) -> Self {
        let mut c = self.clone();
        if let Some(r) = c.ryw.as_mut() {
            r.timeout = timeout;
        }
        c
    }

    /// Remembers that `written` (of dynamic type `dt`), as the server answered a write,
    /// must be seen by later reads. Nothing for a dry run or a plain client.
    pub(crate) fn remember_write<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        written: &K,
        dry_run: bool,
    ) {
        let (Some(ryw), false) = (&self.ryw, dry_run || self.dry_run) else {
            return;
        };
        let Some(rv) = resource_version(written) else {
            return;
        };
        let m = written.meta();
        let key = object_key(
            m.namespace.as_deref(),
            m.name.as_deref().unwrap_or_default(),
        );
        ryw.writes
            .remember(gvk_string::<K>(dt), key, Requirement::Written(rv));
    }

    /// Remembers a delete of `obj`: the server answered with the object (still there,
    /// held by finalizers: its new `resourceVersion`; else gone) or a `Status`.
    pub(crate) fn remember_delete<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        answer: either::Either<K, Status>,
        dp: &DeleteParams,
    ) {
        let (Some(ryw), false) = (&self.ryw, dp.dry_run || self.dry_run) else {
            return;
        };
        let m = obj.meta();
        let key = object_key(
            m.namespace.as_deref(),
            m.name.as_deref().unwrap_or_default(),
        );
        let req = match answer {
            either::Either::Left(o)
                if o.meta().deletion_timestamp.is_some() && has_finalizers(&o) =>
            {
                match resource_version(&o) {
                    Some(rv) => Requirement::Written(rv),
                    None => return,
                }
            }
            either::Either::Left(o) => Requirement::Deleted(o.meta().uid.clone().or(m.uid.clone())),
            either::Either::Right(s) => Requirement::Deleted(
                s.details
                    .map(|d| d.uid)
                    .filter(|u| !u.is_empty())
                    .or(m.uid.clone()),
            ),
        };
        ryw.writes.remember(gvk_string::<K>(dt), key, req);
    }

    /// Waits until the cache has observed this client's writes a read of `K` must see
    /// (none for a plain client or an opted-out read); `verb` and `at` name the read in
    /// errors.
    pub(crate) async fn wait_for_own_writes<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        select: Select<'_>,
        verb: &str,
        at: &str,
    ) -> Result<(), Error> {
        let Some(ryw) = self.ryw.as_ref().filter(|r| r.wait) else {
            return Ok(());
        };
        let kind = gvk_string::<K>(dt);
        let pending = ryw.writes.pending(&kind, select);
        if pending.is_empty() {
            return Ok(());
        }
        match self
            .cache
            .wait_for_writes::<K>(dt, &pending, ryw.timeout)
            .await
        {
            Ok(()) => {
                ryw.writes.forget(&kind, &pending);
                Ok(())
            }
            Err(e) => {
                if matches!(e, crate::cache::Error::ReadYourWritesTimeout { .. }) {
                    timeouts().with_label_values(&[kind.as_str()]).inc();
                    tracing::debug!(kind = %kind, key = at, timeout = ?ryw.timeout, "read timed out waiting for the client's own write");
                }
                Err(Error::new(verb, kind, at.to_string(), e))
            }
        }
    }
}

fn has_finalizers<K: CacheObject>(o: &K) -> bool {
    o.meta().finalizers.as_ref().is_some_and(|f| !f.is_empty())
}
