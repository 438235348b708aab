//! The simulation's transport: a `tower::Layer` over the in-memory transport
//! (`server::InMemory`) that each replica's client goes through. Per request it
//!
//! * waits a seeded delay (virtual time) before handing it to the server, so replicas and
//!   controllers interleave differently under each seed;
//! * delays each frame of a watch stream by a seeded amount (a watcher's cache lags the store,
//!   and watchers see one change at different times);
//! * writes a trace line (`replica VERB path -> status`);
//! * checks that a write comes from the holder of the leader-election Lease, if one is named,
//!   and that a shard writes only its own objects (`shards`);
//! * fails every request, and ends every watch, once its replica has crashed: a dead process
//!   sends nothing more, and what was left running of it (tasks its manager spawned) unwinds
//!   on the error instead of holding a key forever.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response};
use http_body_util::BodyExt;

use super::Shared;
use crate::endpoints::Body;
use crate::server::InMemory;

/// The name the test's own client goes by in the trace (it holds no Lease and never crashes).
pub(crate) const TEST: &str = "test";

/// One replica incarnation's view of the transport.
#[derive(Clone)]
pub(crate) struct SimLayer {
    pub shared: Arc<Shared>,
    pub replica: Arc<str>,
    /// False once this incarnation crashed.
    pub alive: Arc<AtomicBool>,
}

impl tower::Layer<InMemory> for SimLayer {
    type Service = SimService;

    fn layer(&self, inner: InMemory) -> SimService {
        SimService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`SimLayer`] makes.
#[derive(Clone)]
pub(crate) struct SimService {
    inner: InMemory,
    layer: SimLayer,
}

/// The error of a request from a crashed replica.
pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;

type BoxFuture = Pin<Box<dyn std::future::Future<Output = Result<Response<Body>, Error>> + Send>>;

impl tower::Service<Request<kube::client::Body>> for SimService {
    type Response = Response<Body>;
    type Error = Error;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> BoxFuture {
        let mut inner = self.inner.clone();
        let layer = self.layer.clone();
        Box::pin(async move {
            let shared = &layer.shared;
            let (method, path) = (req.method().clone(), req.uri().path().to_string());
            let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
            let replica = &*layer.replica;
            let traced = traced_path(&path);
            tokio::time::sleep(shared.request_delay(replica, &method, &traced)).await;
            if !layer.alive.load(Ordering::Acquire) {
                return Err(format!("{} crashed", layer.replica).into());
            }
            let mut foreign = None;
            let work = is_write(&method) && !housekeeping(&path);
            if work {
                shared.note_write(&layer.replica, &method, &path);
                let content_type = req.headers().get(http::header::CONTENT_TYPE);
                let content_type = content_type.and_then(|v| v.to_str().ok());
                foreign = shared.shard_violation(&layer.replica, &method, &path, content_type);
            }
            let in_flight = work.then(|| InFlight::new(shared));
            let Ok(resp) = tower::Service::call(&mut inner, req).await;
            drop(in_flight);
            if work {
                // A write lasts until it is answered (a slow webhook may hold it for seconds):
                // the run is not quiet while one is in flight, nor just after.
                *shared.last_write.lock() = tokio::time::Instant::now();
            }
            if let Some(v) = foreign.filter(|_| resp.status().is_success()) {
                shared.trace.violation(v);
            }
            let what = if watch { "WATCH" } else { method.as_str() };
            shared.trace(format_args!(
                "{} {what} {traced} -> {}",
                layer.replica,
                resp.status().as_u16()
            ));
            Ok(if watch {
                let key = (shared.seed, replica.to_string(), path.clone());
                let max = shared.watch_delay;
                delayed_frames(resp, (key, max), layer.alive.clone())
            } else {
                resp
            })
        })
    }
}

/// A write on its way: counted in `Shared::writes_in_flight` until answered or dropped (its
/// replica crashed, its caller gave up), so that the run is not steady while it lasts.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn new(shared: &'a Shared) -> Self {
        shared.writes_in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.writes_in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A watch response whose events (one a line) each arrive after a delay of up to `max`, a
/// hash of the seed, the watcher, its path and the event (its type and resourceVersion): the same event reaches the
/// same watcher equally late however the server cut the stream into frames and whatever ran
/// before. The stream ends once the replica crashed.
fn delayed_frames(
    resp: Response<Body>,
    (key, max): ((u64, String, String), Duration),
    alive: Arc<AtomicBool>,
) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let events = body.into_data_stream().flat_map(|frame| {
        let lines: Vec<Result<Bytes, _>> = match frame {
            Ok(bytes) => lines(bytes).into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        futures::stream::iter(lines)
    });
    let frames = events
        .then(move |event| {
            let delay = match &event {
                Ok(line) => millis(max, |m| keyed(&key, event_id(line)) % (m + 1)),
                Err(_) => Duration::ZERO,
            };
            async move {
                tokio::time::sleep(delay).await;
                event.map(http_body::Frame::data)
            }
        })
        .take_while(move |_| std::future::ready(alive.load(Ordering::Acquire)));
    let body = http_body_util::StreamBody::new(frames);
    Response::from_parts(parts, BodyExt::boxed(body))
}

/// `bytes` cut after each newline (the last piece may lack one).
fn lines(bytes: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(i) = rest.iter().position(|b| *b == b'\n') {
        out.push(rest.split_to(i + 1));
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// What names a watch event in a line of the stream: its type (the line's first bytes,
/// `{"type":"ADDED"`) and its object's `resourceVersion` (the rest of the line holds random
/// UIDs), or the whole line when it has no version.
fn event_id(line: &[u8]) -> (&[u8], &[u8]) {
    const RV: &[u8] = b"\"resourceVersion\":\"";
    let Some(at) = line.windows(RV.len()).position(|w| w == RV) else {
        return (line, b"");
    };
    let from = at + RV.len();
    let to = (line[from..].iter().position(|b| *b == b'"')).map_or(line.len(), |n| from + n);
    (&line[..line.len().min(16)], &line[from..to])
}

/// A fixed-key hash of `key` and `event`.
fn keyed(key: &(u64, String, String), event: (&[u8], &[u8])) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (key, event).hash(&mut h);
    h.finish()
}

/// `path` as the trace shows it and as it keys its request's stream of delays: an Event's name
/// left out (`.../events/*`), as kube-runtime's recorder names Events after the system clock's
/// nanoseconds (`<object>.<hex>`), which no seed decides; a series update of an Event would
/// otherwise draw another delay, and trace another line, in each replay.
fn traced_path(path: &str) -> std::borrow::Cow<'_, str> {
    match path.rsplit_once('/') {
        Some((events, _)) if events.ends_with("/events") => format!("{events}/*").into(),
        _ => path.into(),
    }
}

fn is_write(m: &Method) -> bool {
    matches!(
        *m,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// Writes that are not the operator's work: leader election and Events.
fn housekeeping(path: &str) -> bool {
    path.contains("/leases") || path.contains("/events")
}

/// A delay of up to `max` in whole milliseconds, drawn from `draw(0..=max_ms)`.
pub(crate) fn millis(max: Duration, draw: impl FnOnce(u64) -> u64) -> Duration {
    let max_ms = max.as_millis() as u64;
    if max_ms == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(draw(max_ms))
}
