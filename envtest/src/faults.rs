//! Fault injection and the request log, reached through `Environment::faults()`.
//!
//! A test uses the cloneable [`Faults`] handle to make the server misbehave on purpose: fail the
//! next N requests that match a [`FaultMatch`] with a chosen [`FaultStatus`] (500, 429 with
//! `Retry-After`, 409, …), slow matching requests down, close every open watch, or compact the
//! watch history so that resumes get an in-stream `410 Expired`. It also reads the
//! [`RequestRecord`] log of every request the server answered (e.g. to count re-lists).
//!
//! The server calls two crate-visible hooks per request: [`Faults::intercept`] before handling it
//! (one relaxed atomic load when no fault is set) and [`Faults::record`] once the status is known.
//! Watch closing and compaction are delegated to the store through the [`WatchControl`] trait.
//! A leaf: it imports nothing else of the crate (the store implements its trait).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// How many request records are kept at most (the oldest are dropped first).
const MAX_RECORDS: usize = 200_000;

/// How many bytes the request log may hold (its records' strings plus their fixed size); the
/// oldest records are dropped first, so a flood of long URLs cannot grow the server's memory.
pub const REQUEST_LOG_MAX_BYTES: usize = 32 * 1024 * 1024;

/// What the store offers the fault injector.
pub(crate) trait WatchControl: Send + Sync {
    /// Ends every open watch stream (clients see a clean end of stream and resume).
    fn close_all_watches(&self);
    /// Raises the history floor to the current resourceVersion, so that a watch or an exact list
    /// from any earlier resourceVersion gets `410 Expired`.
    fn compact(&self);
}

/// A Kubernetes API verb, as the server classifies a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object (or a subresource).
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST to a collection.
    Create,
    /// PUT of an object.
    Update,
    /// PATCH of an object (any patch type, including server-side apply).
    Patch,
    /// DELETE of an object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// The verb as Kubernetes spells it (`get`, `list`, `watch`, `create`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which requests a fault applies to. Every field that is set must match; an unset field matches
/// anything, so `FaultMatch::default()` matches every API request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultMatch {
    /// The verb, e.g. [`Verb::Create`].
    pub verb: Option<Verb>,
    /// The resource plural, e.g. `configmaps` (any API group).
    pub resource: Option<String>,
    /// The subresource, e.g. `status`; unset matches requests with or without one.
    pub subresource: Option<String>,
    /// The object name from the URL (collections have none, so they never match a name).
    pub name: Option<String>,
    /// The namespace from the URL.
    pub namespace: Option<String>,
}

impl FaultMatch {
    /// Matches every API request.
    pub fn any() -> FaultMatch {
        FaultMatch::default()
    }

    /// Only requests with this verb.
    pub fn verb(mut self, verb: Verb) -> FaultMatch {
        self.verb = Some(verb);
        self
    }

    /// Only requests for this resource plural (`configmaps`, `widgets`).
    pub fn resource(mut self, resource: impl Into<String>) -> FaultMatch {
        self.resource = Some(resource.into());
        self
    }

    /// Only requests for this subresource (`status`, `scale`).
    pub fn subresource(mut self, subresource: impl Into<String>) -> FaultMatch {
        self.subresource = Some(subresource.into());
        self
    }

    /// Only requests for the object with this name.
    pub fn name(mut self, name: impl Into<String>) -> FaultMatch {
        self.name = Some(name.into());
        self
    }

    /// Only requests in this namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> FaultMatch {
        self.namespace = Some(namespace.into());
        self
    }

    fn matches(&self, f: &RequestFacts<'_>) -> bool {
        fn eq(want: &Option<String>, have: Option<&str>) -> bool {
            match want {
                None => true,
                Some(w) => have == Some(w.as_str()),
            }
        }
        (self.verb.is_none() || self.verb == f.verb)
            && eq(&self.resource, f.resource)
            && eq(&self.subresource, f.subresource)
            && eq(&self.name, f.name)
            && eq(&self.namespace, f.namespace)
    }
}

/// The error an injected failure answers with: an HTTP code and the `reason`/`message` of the
/// Kubernetes `Status` body, plus an optional `Retry-After` (seconds; header and
/// `details.retryAfterSeconds`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultStatus {
    /// HTTP status code, also the Status `code`.
    pub code: u16,
    /// Status `reason`, e.g. `InternalError`.
    pub reason: String,
    /// Status `message`.
    pub message: String,
    /// `Retry-After` seconds, if any.
    pub retry_after_seconds: Option<u32>,
}

impl FaultStatus {
    /// Any code, reason and message.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> FaultStatus {
        FaultStatus {
            code,
            reason: reason.into(),
            message: message.into(),
            retry_after_seconds: None,
        }
    }

    /// 500 `InternalError`.
    pub fn internal_error() -> FaultStatus {
        FaultStatus::new(
            500,
            "InternalError",
            "Internal error occurred: injected fault",
        )
    }

    /// 429 `TooManyRequests` with `Retry-After`.
    pub fn too_many_requests(retry_after_seconds: u32) -> FaultStatus {
        FaultStatus {
            retry_after_seconds: Some(retry_after_seconds),
            ..FaultStatus::new(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            )
        }
    }

    /// 409 `Conflict`.
    pub fn conflict() -> FaultStatus {
        FaultStatus::new(
            409,
            "Conflict",
            "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 503 `ServiceUnavailable`.
    pub fn service_unavailable() -> FaultStatus {
        FaultStatus::new(
            503,
            "ServiceUnavailable",
            "The server is currently unable to handle the request",
        )
    }

    /// Adds a `Retry-After`.
    pub fn with_retry_after(mut self, seconds: u32) -> FaultStatus {
        self.retry_after_seconds = Some(seconds);
        self
    }

    /// The Kubernetes `Status` JSON body.
    pub(crate) fn body(&self) -> serde_json::Value {
        let mut status = serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(s) = self.retry_after_seconds {
            status["details"] = serde_json::json!({ "retryAfterSeconds": s });
        }
        status
    }
}

/// One request the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method (`GET`, `POST`, …).
    pub method: String,
    /// URL path, e.g. `/api/v1/namespaces/default/configmaps`.
    pub path: String,
    /// Raw query string without `?` (kube's start with `&`), empty if none.
    pub query: String,
    /// HTTP status code sent (200 for a watch whose stream then ended with an ERROR event).
    pub status: u16,
    /// The API verb, for resource requests.
    pub verb: Option<Verb>,
    /// The resource plural, for resource requests.
    pub resource: Option<String>,
    /// True if the response was an injected fault.
    pub injected: bool,
    /// The W3C `traceparent` header the request carried, if any (a traced client's
    /// context, for tests of trace propagation).
    pub traceparent: Option<String>,
}

impl RequestRecord {
    /// The memory a record holds: its fixed size plus its strings.
    pub fn size(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.method.len()
            + self.path.len()
            + self.query.len()
            + self.resource.as_ref().map_or(0, String::len)
            + self.traceparent.as_ref().map_or(0, String::len)
    }

    /// Whether this was a watch request (`verb == Watch`).
    pub fn is_watch(&self) -> bool {
        self.verb == Some(Verb::Watch)
    }

    /// Whether this was a list request (`verb == List`).
    pub fn is_list(&self) -> bool {
        self.verb == Some(Verb::List)
    }
}

/// What the server knows about a request before handling it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RequestFacts<'a> {
    /// HTTP method.
    pub method: &'a str,
    /// URL path.
    pub path: &'a str,
    /// The API verb, if this is a resource request.
    pub verb: Option<Verb>,
    /// Resource plural.
    pub resource: Option<&'a str>,
    /// Subresource.
    pub subresource: Option<&'a str>,
    /// Object name.
    pub name: Option<&'a str>,
    /// Namespace.
    pub namespace: Option<&'a str>,
}

/// A failure to send instead of handling the request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Injected {
    /// HTTP status code.
    pub code: u16,
    /// `Retry-After` header value, in seconds.
    pub retry_after_seconds: Option<u32>,
    /// The `Status` JSON body.
    pub body: serde_json::Value,
}

struct FailRule {
    matcher: FaultMatch,
    remaining: usize,
    status: FaultStatus,
}

struct LatencyRule {
    matcher: FaultMatch,
    delay: Duration,
}

#[derive(Default)]
struct Rules {
    fail: Vec<FailRule>,
    latency: Vec<LatencyRule>,
    /// Delays of watch delivery: matched against the watch request (verb `watch`).
    watch_delay: Vec<LatencyRule>,
}

struct Inner {
    active: AtomicBool,
    /// Whether any watch delivery delay is set ([`Faults::delay_watch_delivery`]).
    watch_delays: AtomicBool,
    rules: Mutex<Rules>,
    log: Mutex<RequestLog>,
    control: Arc<dyn WatchControl>,
    /// Pod faults the simulated kubelet plays: (namespace, name prefix, fault).
    pods: Mutex<Vec<(String, String, PodFault)>>,
}

/// A fault the simulated kubelet (`EnvironmentBuilder::simulate_pods`) plays on the Pods a
/// test names with [`Faults::pod_fault`], so that an operator's handling of unhealthy
/// workloads can be tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PodFault {
    /// The containers crash (exit code 1) each time they start: the Pod stays `Running`, not
    /// ready, its containers `waiting` with reason `CrashLoopBackOff`, `lastState`
    /// `terminated` with reason `Error`, and `restartCount` going up.
    CrashLoop,
    /// The containers are killed for memory (exit code 137, reason `OOMKilled`): a Pod that
    /// runs to completion fails; another restarts, and keeps being killed, as `CrashLoop`.
    OomKilled,
    /// Readiness flaps: the `Ready` and `ContainersReady` conditions and the containers'
    /// `ready` turn `False` and `True` again every `period`.
    FlappingReadiness {
        /// How long each state lasts.
        period: Duration,
    },
}

/// Fault injection for one environment; clones share state. Obtain it from
/// `Environment::faults()`.
#[derive(Clone)]
pub struct Faults {
    inner: Arc<Inner>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("active", &self.inner.active.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Faults {
    /// A handle with no faults, closing watches and compacting through `control`.
    pub(crate) fn new(control: Arc<dyn WatchControl>) -> Faults {
        Faults {
            inner: Arc::new(Inner {
                active: AtomicBool::new(false),
                watch_delays: AtomicBool::new(false),
                rules: Mutex::new(Rules::default()),
                log: Mutex::new(RequestLog::default()),
                control,
                pods: Mutex::new(Vec::new()),
            }),
        }
    }

    fn refresh_active(&self, rules: &Rules) {
        let active = !rules.fail.is_empty() || !rules.latency.is_empty();
        self.inner.active.store(active, Ordering::Release);
    }

    /// Fails the next `n` requests that match `matcher` with `status` (each failure uses one of
    /// the `n`; rules added earlier are consulted first).
    pub fn fail_next(&self, n: usize, matcher: FaultMatch, status: FaultStatus) {
        if n == 0 {
            return;
        }
        let mut rules = self.inner.rules.lock();
        rules.fail.push(FailRule {
            matcher,
            remaining: n,
            status,
        });
        self.refresh_active(&rules);
    }

    /// Delays every matching request by `delay` before it is handled (until [`Faults::clear`]).
    /// Several matching latencies add up.
    pub fn add_latency(&self, matcher: FaultMatch, delay: Duration) {
        let mut rules = self.inner.rules.lock();
        rules.latency.push(LatencyRule { matcher, delay });
        self.refresh_active(&rules);
    }

    /// Delays the delivery of every watch event on matching watches by `delay` (until
    /// [`Faults::clear`]): each chunk of events a watch sends leaves the server `delay` after
    /// it was ready, in order, so events arrive late but do not pile up delays. Applies to
    /// watches already open as well as new ones; the initial events of a watch are not
    /// delayed. This is the lag of a loaded API server's watch cache that makes a client's
    /// informer miss its own write for a while. Several matching delays add up.
    pub fn delay_watch_delivery(&self, matcher: FaultMatch, delay: Duration) {
        self.inner
            .rules
            .lock()
            .watch_delay
            .push(LatencyRule { matcher, delay });
        self.inner.watch_delays.store(true, Ordering::Release);
    }

    /// The delivery delay of a watch on `resource` in `namespace` (zero when none is set).
    pub(crate) fn watch_delay(&self, resource: &str, namespace: Option<&str>) -> Duration {
        if !self.inner.watch_delays.load(Ordering::Acquire) {
            return Duration::ZERO;
        }
        let facts = RequestFacts {
            verb: Some(Verb::Watch),
            resource: Some(resource),
            namespace,
            ..Default::default()
        };
        let rules = self.inner.rules.lock();
        rules
            .watch_delay
            .iter()
            .filter(|l| l.matcher.matches(&facts))
            .map(|l| l.delay)
            .sum()
    }

    /// Ends every open watch stream now; clients resume from their last resourceVersion.
    pub fn close_watches(&self) {
        self.inner.control.close_all_watches();
    }

    /// Forgets the watch history up to the current resourceVersion: a watch from any earlier
    /// resourceVersion then gets HTTP 200 and a single in-stream `ERROR` 410 `Expired`.
    pub fn compact_history(&self) {
        self.inner.control.compact();
    }

    /// The requests answered so far, oldest first: the most recent 200,000 are kept, fewer when
    /// they would take more than [`REQUEST_LOG_MAX_BYTES`] (long URLs).
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.inner.log.lock().records.iter().cloned().collect()
    }

    /// How many logged requests satisfy `pred`.
    pub fn count_requests(&self, pred: impl Fn(&RequestRecord) -> bool) -> usize {
        self.inner
            .log
            .lock()
            .records
            .iter()
            .filter(|r| pred(r))
            .count()
    }

    /// Plays `fault` on the Pods of `namespace` whose names start with `name_prefix` (a Pod
    /// name, or e.g. a ReplicaSet's name and `-`), from their next start on, until
    /// [`Faults::clear`]. The first matching rule applies.
    pub fn pod_fault(&self, namespace: &str, name_prefix: &str, fault: PodFault) {
        let rule = (namespace.to_string(), name_prefix.to_string(), fault);
        self.inner.pods.lock().push(rule);
    }

    /// The fault to play on Pod `namespace/name`, if any (the simulated kubelet asks).
    pub(crate) fn pod_fault_of(&self, namespace: &str, name: &str) -> Option<PodFault> {
        let rules = self.inner.pods.lock();
        rules
            .iter()
            .find(|(ns, prefix, _)| ns == namespace && name.starts_with(prefix.as_str()))
            .map(|(_, _, f)| *f)
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        *self.inner.log.lock() = RequestLog::default();
    }

    /// Removes every pending failure, latency, watch delivery delay and Pod fault and empties the request log.
    pub fn clear(&self) {
        {
            let mut rules = self.inner.rules.lock();
            *rules = Rules::default();
            self.refresh_active(&rules);
            self.inner.watch_delays.store(false, Ordering::Release);
        }
        self.inner.pods.lock().clear();
        self.clear_requests();
    }

    /// Server hook, called before a request is handled: sleeps any matching latency and returns
    /// the failure to send instead, if one is due. Costs one atomic load when nothing is set.
    pub(crate) async fn intercept(&self, facts: &RequestFacts<'_>) -> Option<Injected> {
        if !self.inner.active.load(Ordering::Acquire) {
            return None;
        }
        let (delay, injected) = self.decide(facts);
        if !delay.is_zero() || injected.is_some() {
            tracing::debug!(
                method = facts.method,
                path = facts.path,
                delay_ms = delay.as_millis() as u64,
                code = injected.as_ref().map(|i| i.code),
                "fault injected"
            );
        }
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        injected
    }

    /// The latency and failure due for a request (consumes one failure).
    fn decide(&self, facts: &RequestFacts<'_>) -> (Duration, Option<Injected>) {
        let mut rules = self.inner.rules.lock();
        let delay = rules
            .latency
            .iter()
            .filter(|l| l.matcher.matches(facts))
            .map(|l| l.delay)
            .sum();
        let mut injected = None;
        if let Some(pos) = rules.fail.iter().position(|r| r.matcher.matches(facts)) {
            let rule = &mut rules.fail[pos];
            injected = Some(Injected {
                code: rule.status.code,
                retry_after_seconds: rule.status.retry_after_seconds,
                body: rule.status.body(),
            });
            rule.remaining -= 1;
            if rule.remaining == 0 {
                rules.fail.remove(pos);
            }
        }
        self.refresh_active(&rules);
        (delay, injected)
    }

    /// Server hook, called once per answered request.
    pub(crate) fn record(&self, record: RequestRecord) {
        self.inner.log.lock().push(record);
    }
}

/// The request log: records oldest first and the bytes they hold, both bounded.
#[derive(Default)]
struct RequestLog {
    records: VecDeque<RequestRecord>,
    bytes: usize,
}

impl RequestLog {
    fn push(&mut self, record: RequestRecord) {
        self.bytes += record.size();
        self.records.push_back(record);
        while self.records.len() > MAX_RECORDS || self.bytes > REQUEST_LOG_MAX_BYTES {
            match self.records.pop_front() {
                Some(old) => self.bytes -= old.size(),
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[derive(Default)]
    struct Counting {
        closed: AtomicUsize,
        compacted: AtomicUsize,
    }

    impl WatchControl for Counting {
        fn close_all_watches(&self) {
            self.closed.fetch_add(1, Ordering::SeqCst);
        }
        fn compact(&self) {
            self.compacted.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn facts<'a>(verb: Verb, resource: &'a str, name: Option<&'a str>) -> RequestFacts<'a> {
        RequestFacts {
            method: "GET",
            path: "/api/v1/namespaces/default/configmaps",
            verb: Some(verb),
            resource: Some(resource),
            subresource: None,
            name,
            namespace: Some("default"),
        }
    }

    fn faults() -> (Faults, Arc<Counting>) {
        let c = Arc::new(Counting::default());
        (Faults::new(c.clone()), c)
    }

    #[tokio::test]
    async fn nothing_set_passes_everything() {
        let (f, _) = faults();
        assert!(
            f.intercept(&facts(Verb::Create, "configmaps", None))
                .await
                .is_none()
        );
        assert!(!f.inner.active.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn fail_next_counts_down_and_only_matches() {
        let (f, _) = faults();
        f.fail_next(
            2,
            FaultMatch::any().verb(Verb::Create).resource("configmaps"),
            FaultStatus::internal_error(),
        );
        assert!(
            f.intercept(&facts(Verb::Get, "configmaps", Some("a")))
                .await
                .is_none()
        );
        assert!(
            f.intercept(&facts(Verb::Create, "secrets", None))
                .await
                .is_none()
        );
        let i = f.intercept(&facts(Verb::Create, "configmaps", None)).await;
        let Some(i) = i else {
            panic!("expected an injected failure")
        };
        assert_eq!(i.code, 500);
        assert_eq!(i.body["kind"], "Status");
        assert_eq!(i.body["reason"], "InternalError");
        assert_eq!(i.body["code"], 500);
        assert!(
            f.intercept(&facts(Verb::Create, "configmaps", None))
                .await
                .is_some()
        );
        assert!(
            f.intercept(&facts(Verb::Create, "configmaps", None))
                .await
                .is_none()
        );
        assert!(!f.inner.active.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn name_namespace_and_subresource_matching() {
        let m = FaultMatch::any().name("x").namespace("default");
        assert!(m.matches(&facts(Verb::Get, "pods", Some("x"))));
        assert!(!m.matches(&facts(Verb::Get, "pods", Some("y"))));
        assert!(!m.matches(&facts(Verb::List, "pods", None)));
        let m = FaultMatch::any().namespace("other");
        assert!(!m.matches(&facts(Verb::Get, "pods", Some("x"))));
        let mut status = facts(Verb::Update, "pods", Some("x"));
        status.subresource = Some("status");
        assert!(FaultMatch::any().subresource("status").matches(&status));
        assert!(FaultMatch::any().resource("pods").matches(&status));
        assert!(!FaultMatch::any().subresource("status").matches(&facts(
            Verb::Update,
            "pods",
            Some("x")
        )));
        // Non-resource requests (no verb) only match the empty matcher.
        let raw = RequestFacts {
            method: "GET",
            path: "/version",
            ..RequestFacts::default()
        };
        assert!(FaultMatch::any().matches(&raw));
        assert!(!FaultMatch::any().verb(Verb::Get).matches(&raw));
    }

    #[tokio::test]
    async fn retry_after_and_ordering() {
        let (f, _) = faults();
        f.fail_next(1, FaultMatch::any(), FaultStatus::too_many_requests(3));
        f.fail_next(1, FaultMatch::any(), FaultStatus::conflict());
        let a = f.intercept(&facts(Verb::Get, "x", None)).await;
        let b = f.intercept(&facts(Verb::Get, "x", None)).await;
        let (Some(a), Some(b)) = (a, b) else {
            panic!("expected two failures")
        };
        assert_eq!(a.code, 429);
        assert_eq!(a.retry_after_seconds, Some(3));
        assert_eq!(a.body["details"]["retryAfterSeconds"], 3);
        assert_eq!(b.code, 409);
        assert_eq!(b.retry_after_seconds, None);
        f.fail_next(0, FaultMatch::any(), FaultStatus::conflict());
        assert!(f.intercept(&facts(Verb::Get, "x", None)).await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn latency_is_slept_and_cleared() {
        let (f, _) = faults();
        f.add_latency(
            FaultMatch::any().verb(Verb::List),
            Duration::from_millis(200),
        );
        f.add_latency(FaultMatch::any(), Duration::from_millis(100));
        let t = tokio::time::Instant::now();
        assert!(f.intercept(&facts(Verb::List, "x", None)).await.is_none());
        assert_eq!(t.elapsed(), Duration::from_millis(300));
        let t = tokio::time::Instant::now();
        f.intercept(&facts(Verb::Get, "x", None)).await;
        assert_eq!(t.elapsed(), Duration::from_millis(100));
        f.clear();
        let t = tokio::time::Instant::now();
        f.intercept(&facts(Verb::List, "x", None)).await;
        assert_eq!(t.elapsed(), Duration::ZERO);
    }

    #[test]
    fn watch_delays_match_the_watch_and_clear() {
        let (f, _) = faults();
        assert_eq!(f.watch_delay("pods", Some("a")), Duration::ZERO);
        f.delay_watch_delivery(
            FaultMatch::any().resource("pods"),
            Duration::from_millis(200),
        );
        f.delay_watch_delivery(FaultMatch::any().namespace("a"), Duration::from_millis(50));
        assert_eq!(f.watch_delay("pods", Some("a")), Duration::from_millis(250));
        assert_eq!(f.watch_delay("pods", None), Duration::from_millis(200));
        assert_eq!(f.watch_delay("secrets", None), Duration::ZERO);
        // A watch delay is not a request latency.
        assert!(!f.inner.active.load(Ordering::Acquire));
        f.clear();
        assert_eq!(f.watch_delay("pods", Some("a")), Duration::ZERO);
    }

    #[test]
    fn log_and_controls() {
        let (f, c) = faults();
        for (i, verb) in [Verb::List, Verb::Watch, Verb::Watch]
            .into_iter()
            .enumerate()
        {
            f.record(RequestRecord {
                method: "GET".into(),
                path: format!("/p/{i}"),
                query: "&watch=true".into(),
                status: 200,
                verb: Some(verb),
                resource: Some("configmaps".into()),
                injected: false,
                traceparent: None,
            });
        }
        assert_eq!(f.requests().len(), 3);
        assert_eq!(f.count_requests(RequestRecord::is_watch), 2);
        assert_eq!(f.count_requests(RequestRecord::is_list), 1);
        assert_eq!(f.requests()[0].path, "/p/0");
        f.clone().close_watches();
        f.compact_history();
        assert_eq!(c.closed.load(Ordering::SeqCst), 1);
        assert_eq!(c.compacted.load(Ordering::SeqCst), 1);
        f.clear();
        assert!(f.requests().is_empty());
        assert_eq!(Verb::DeleteCollection.to_string(), "deletecollection");
        assert!(format!("{f:?}").contains("Faults"));
    }
}
