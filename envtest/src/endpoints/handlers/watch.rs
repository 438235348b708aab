//! Watch streams (`k8s.io/apiserver/pkg/endpoints/handlers/watch.go`). A watch registers with the
//! `store` (which hands over the backlog from the requested resourceVersion, or the current
//! objects, plus a bounded live channel) and a task turns those events into newline-delimited JSON
//! on a chunked HTTP 200 response: selector transitions (ADDED/DELETED when an object starts/stops
//! matching), bookmarks, the initial-events-end bookmark of streaming lists, `timeoutSeconds`, and
//! an in-stream ERROR 410 when the start is older than the history. Lines are encoded once per
//! event and shared among watchers; consecutive events are batched into one chunk. A watch
//! delivery delay (`Faults::delay_watch_delivery`) sends each live chunk through a delay line
//! (`DelayLine`): a task that forwards chunks in order, each once its due time has come.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Response;
use serde_json::json;
use tokio::sync::mpsc;

use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::filter::Filter;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::router::parse_rv;
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;
use crate::storage::{
    Event, EventType, Start, Subscription, encode_line, parse, partial_metadata, push_line,
};

const BATCH: usize = 64 * 1024;

struct Watch {
    rt: Arc<ResourceType>,
    filter: Filter,
    meta_only: bool,
    /// Protobuf frames (`api::protobuf::watch_frame`) instead of JSON lines.
    proto: bool,
    /// `as=Table`: the columns, and whether the definitions went out (first event only).
    table: Option<(crate::endpoints::table::Columns, bool)>,
    bookmarks: bool,
    /// RV of the last event sent (or the start position).
    last_rv: u64,
    /// Events at or below this resourceVersion are not sent (a start from the future).
    start_rv: u64,
    buf: BytesMut,
    /// The resource plural and namespace of the watch, for `Faults::watch_delay`.
    scope: (String, Option<String>),
    /// The delay line live chunks go through once a delivery delay was first seen.
    delayed: Option<mpsc::UnboundedSender<(tokio::time::Instant, Bytes)>>,
}

pub(crate) fn serve(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let q = &req.query;
    let rt = r.rt.clone();
    let filter = Filter::parse(q, &rt, r.namespace.clone())?;
    let rv = parse_rv(q)?;
    let (bookmarks, initial_events) = watch_options(q)?;
    let timeout = match q.number("timeoutSeconds")? {
        Some(s) => Duration::from_secs(s).min(state.settings.max_watch),
        None => state.settings.max_watch,
    };
    let start = match (initial_events, rv) {
        (Some(true), _) => Start::Current { initial: true },
        (Some(false), None | Some(0)) => Start::Current { initial: false },
        (_, None | Some(0)) => Start::Current { initial: true },
        (_, Some(n)) => Start::From(n),
    };
    let from = if let Start::From(n) = start {
        Some(n)
    } else {
        None
    };
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let table = crate::endpoints::table::wanted(req)
        .then(|| (crate::endpoints::table::columns(state, &rt), false));
    let proto = table.is_none() && rt.crd.is_none() && req.protobuf();
    let ct = if table.is_some() {
        crate::endpoints::table::MEDIA
    } else if proto {
        crate::api::protobuf::WATCH_MEDIA
    } else if req.meta_only() {
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    } else {
        "application/json"
    };
    let sub = state.store.watch(&rt.store_key(), start);
    let sub = match sub {
        Ok(s) => s,
        Err(floor) => {
            let e = ApiError::expired(format!(
                "too old resource version: {} ({floor})",
                from.unwrap_or(0)
            ));
            let _ = tx.try_send(event(proto, "ERROR", &e.to_value()));
            return Ok(endpoints::stream(ct, rx));
        }
    };
    let w = Watch {
        rt,
        filter,
        meta_only: req.meta_only(),
        proto,
        table,
        bookmarks,
        last_rv: from.unwrap_or(sub.rv),
        start_rv: from.unwrap_or(0),
        buf: BytesMut::new(),
        scope: (r.rt.plural.clone(), r.namespace.clone()),
        delayed: None,
    };
    let state = state.clone();
    crate::task::spawn(run(
        state,
        w,
        sub,
        tx,
        timeout,
        initial_events == Some(true),
    ));
    Ok(endpoints::stream(ct, rx))
}

/// `allowWatchBookmarks` and `sendInitialEvents`, checked against `resourceVersionMatch` as
/// upstream's watch validation does.
fn watch_options(q: &crate::endpoints::router::Query) -> Result<(bool, Option<bool>), ApiError> {
    let bookmarks = q.flag("allowWatchBookmarks");
    let initial_events = q
        .get("sendInitialEvents")
        .map(|_| q.flag("sendInitialEvents"));
    let rvm = q.value("resourceVersionMatch");
    if initial_events.is_some() && rvm != Some("NotOlderThan") {
        return Err(ApiError::new(
            422,
            "Invalid",
            "sendInitialEvents requires resourceVersionMatch=NotOlderThan",
        ));
    }
    if initial_events.is_none() && rvm.is_some() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if initial_events == Some(true) && !bookmarks {
        return Err(ApiError::new(
            422,
            "Invalid",
            "sendInitialEvents requires allowWatchBookmarks=true",
        ));
    }
    Ok((bookmarks, initial_events))
}

async fn run(
    state: Arc<State>,
    mut w: Watch,
    mut sub: Subscription,
    tx: mpsc::Sender<Bytes>,
    timeout: Duration,
    end_bookmark: bool,
) {
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    if w.start_rv > sub.rv && !wait_for_rv(&state, w.start_rv).await {
        let current = state.store.current_rv();
        let e = crate::endpoints::router::too_large(w.start_rv, current);
        let _ = tx.send(event(w.proto, "ERROR", &e.to_value())).await;
        return;
    }
    for (key, obj) in std::mem::take(&mut sub.initial) {
        if w.filter.in_namespace(&key.0)
            && (w.filter.no_selectors() || w.filter.matches(&parse(&obj)))
        {
            w.write(EventType::Added, &obj);
            if w.buf.len() >= BATCH && !w.flush(&tx).await {
                return;
            }
        }
    }
    if end_bookmark {
        w.last_rv = sub.rv;
        w.bookmark(sub.rv, true);
    }
    for ev in std::mem::take(&mut sub.backlog) {
        w.push(&ev);
        if w.buf.len() >= BATCH && !w.flush(&tx).await {
            return;
        }
    }
    if !w.flush(&tx).await {
        return;
    }
    let mut ticker = tokio::time::interval(state.settings.bookmark_interval);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tx.closed() => return,
            _ = &mut deadline => {
                if w.bookmarks && w.drain_for_bookmark(&state, &mut sub) {
                    let _ = w.flush_live(&state, &tx).await;
                }
                return;
            }
            _ = ticker.tick(), if w.bookmarks => {
                if !w.drain_for_bookmark(&state, &mut sub) {
                    let _ = w.flush_live(&state, &tx).await;
                    return;
                }
                if !w.flush_live(&state, &tx).await {
                    return;
                }
            }
            ev = sub.rx.recv() => {
                let Some(ev) = ev else {
                    let _ = w.flush_live(&state, &tx).await;
                    return;
                };
                w.push(&ev);
                while w.buf.len() < BATCH {
                    match sub.rx.try_recv() {
                        Ok(ev) => w.push(&ev),
                        Err(_) => break,
                    }
                }
                if !w.flush_live(&state, &tx).await {
                    return;
                }
            }
        }
    }
}

/// Forwards chunks to the response in order, each once its due time has come (the delay
/// line of a watch delivery delay).
async fn delay_line(
    mut rx: mpsc::UnboundedReceiver<(tokio::time::Instant, Bytes)>,
    tx: mpsc::Sender<Bytes>,
) {
    while let Some((due, chunk)) = rx.recv().await {
        tokio::time::sleep_until(due).await;
        if tx.send(chunk).await.is_err() {
            return;
        }
    }
}

/// A watch from a resourceVersion the store has not reached waits up to 3 s for it, as
/// upstream's watch cache does; false when it never came.
async fn wait_for_rv(state: &State, rv: u64) -> bool {
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < until {
        if state.store.current_rv() >= rv {
            return true;
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return false,
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    state.store.current_rv() >= rv
}

/// One event of a watch stream: a JSON line, or a protobuf frame when `proto` (falling back to
/// the JSON line should the object have no protobuf form).
fn event(proto: bool, ty: &str, v: &serde_json::Value) -> Bytes {
    if proto {
        match crate::api::protobuf::watch_frame(ty, v) {
            Ok(frame) => return frame,
            Err(error) => tracing::warn!(%error, "watch event without a protobuf form"),
        }
    }
    encode_line(ty, v)
}

impl Watch {
    /// Appends the line of one serialized object as this watcher sees it.
    fn write(&mut self, ty: EventType, obj: &Bytes) {
        if let Some((cols, sent)) = &mut self.table {
            let v = parse(obj);
            let md = serde_json::json!({"resourceVersion": crate::api::meta::meta_str(&v, "resourceVersion")});
            let line = encode_line(ty.as_str(), &cols.table(&[v], md, !*sent));
            *sent = true;
            self.buf.extend_from_slice(&line);
        } else if self.meta_only {
            let line = event(self.proto, ty.as_str(), &partial_metadata(&parse(obj)));
            self.buf.extend_from_slice(&line);
        } else if self.rt.rewrites() || self.proto {
            let v = parse(obj);
            let served = crate::registry::objects::served(&v, &self.rt);
            let line = event(self.proto, ty.as_str(), &served);
            self.buf.extend_from_slice(&line);
        } else {
            push_line(&mut self.buf, ty.as_str(), obj);
        }
    }

    /// Appends the line for `ev` as this watcher sees it (or nothing).
    fn push(&mut self, ev: &Arc<Event>) {
        if ev.rv <= self.start_rv {
            return;
        }
        self.last_rv = self.last_rv.max(ev.rv);
        if !self.filter.in_namespace(&ev.key.0) {
            return;
        }
        let ty = if self.filter.no_selectors() {
            Some(ev.ty)
        } else {
            let now = self.filter.matches(&parse(&ev.obj));
            match ev.ty {
                EventType::Added => now.then_some(EventType::Added),
                EventType::Deleted => now.then_some(EventType::Deleted),
                EventType::Modified => {
                    let was = ev
                        .old
                        .as_ref()
                        .is_some_and(|o| self.filter.matches(&parse(o)));
                    match (was, now) {
                        (true, true) => Some(EventType::Modified),
                        (false, true) => Some(EventType::Added),
                        (true, false) => Some(EventType::Deleted),
                        (false, false) => None,
                    }
                }
            }
        };
        if let Some(ty) = ty {
            self.write(ty, &ev.obj);
        }
    }

    /// Takes in every event up to the current resourceVersion, then queues a bookmark at it.
    /// False when the watcher was dropped by the store (no bookmark may then be sent).
    fn drain_for_bookmark(&mut self, state: &State, sub: &mut Subscription) -> bool {
        let now = state.store.current_rv();
        loop {
            match sub.rx.try_recv() {
                Ok(ev) => self.push(&ev),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
        let rv = self.last_rv.max(now);
        self.last_rv = rv;
        self.bookmark(rv, false);
        true
    }

    fn bookmark(&mut self, rv: u64, initial_end: bool) {
        let (kind, av) = if self.meta_only {
            (
                "PartialObjectMetadata".to_string(),
                "meta.k8s.io/v1".to_string(),
            )
        } else {
            (self.rt.kind.clone(), self.rt.api_version())
        };
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let line = event(
            self.proto,
            "BOOKMARK",
            &json!({"kind": kind, "apiVersion": av, "metadata": meta}),
        );
        self.buf.extend_from_slice(&line);
    }

    /// [`flush`](Self::flush) of live events: through the delay line, due after the watch
    /// delivery delay the faults set now, once a delay was ever set on this watch.
    async fn flush_live(&mut self, state: &State, tx: &mpsc::Sender<Bytes>) -> bool {
        let delay = state
            .faults
            .watch_delay(&self.scope.0, self.scope.1.as_deref());
        if self.delayed.is_none() && !delay.is_zero() {
            let (line, rx) = mpsc::unbounded_channel();
            crate::task::spawn(delay_line(rx, tx.clone()));
            self.delayed = Some(line);
        }
        let Some(line) = &self.delayed else {
            return self.flush(tx).await;
        };
        if self.buf.is_empty() {
            return true;
        }
        let due = tokio::time::Instant::now() + delay;
        line.send((due, self.buf.split().freeze())).is_ok()
    }

    async fn flush(&mut self, tx: &mpsc::Sender<Bytes>) -> bool {
        if self.buf.is_empty() {
            return true;
        }
        let chunk = self.buf.split().freeze();
        tx.send(chunk).await.is_ok()
    }
}
