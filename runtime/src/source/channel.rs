//! [`Channel`]: a source of generic events from a stream or channel
//! (controller-runtime's `source.Channel`).
//!
//! One task reads the stream and fans each event out to every controller the source
//! was started for, each through its own buffer (default [`DEFAULT_BUFFER_SIZE`]); a
//! task per start applies the predicates and calls the handler.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{BoxStream, Stream, StreamExt};
use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::trigger::{EventInfo, with_trigger};
use super::{Error, Source};
use crate::event::GenericEvent;
use crate::handler::{BoxHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;
use crate::workqueue::triggers::{Event, Kind as ObjectKind, Origin};

/// The per-destination buffer controller-runtime uses.
pub const DEFAULT_BUFFER_SIZE: usize = 1024;

struct Fanout<K> {
    stream: Option<BoxStream<'static, GenericEvent<K>>>,
    dests: Vec<mpsc::Sender<GenericEvent<K>>>,
    closed: bool,
}

/// A [`Source`] of [`GenericEvent`]s read from a stream (e.g. a `tokio::sync::mpsc`
/// receiver fed by a webhook or timer), mapped to requests of type `R` by its handler
/// (Go's `source.Channel` / `TypedChannel`).
pub struct Channel<K, R: TypedRequest = Request> {
    fanout: Arc<Mutex<Fanout<K>>>,
    handler: BoxHandler<K, R>,
    predicates: Vec<BoxPredicate<K>>,
    buffer_size: usize,
}

impl<K: Send + Sync + 'static, R: TypedRequest> Channel<K, R> {
    /// A source reading `rx`, passing its events to `handler`.
    pub fn new(rx: mpsc::Receiver<GenericEvent<K>>, handler: impl EventHandler<K, R>) -> Self {
        let stream =
            futures::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|evt| (evt, rx)) },
            );
        Self::from_stream(stream, handler)
    }

    /// A source reading any stream of generic events.
    pub fn from_stream(
        stream: impl Stream<Item = GenericEvent<K>> + Send + 'static,
        handler: impl EventHandler<K, R>,
    ) -> Self {
        Self {
            fanout: Arc::new(Mutex::new(Fanout {
                stream: Some(stream.boxed()),
                dests: Vec::new(),
                closed: false,
            })),
            handler: Arc::new(handler),
            predicates: Vec::new(),
            buffer_size: DEFAULT_BUFFER_SIZE,
        }
    }

    /// Sets the per-destination buffer size (at least 1).
    pub fn with_buffer_size(mut self, size: usize) -> Self {
        self.buffer_size = size.max(1);
        self
    }

    /// Adds a predicate every event must pass.
    pub fn with_predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.predicates.push(Arc::new(predicate));
        self
    }

    /// Adds predicates every event must pass.
    pub fn with_predicates(
        mut self,
        predicates: impl IntoIterator<Item = BoxPredicate<K>>,
    ) -> Self {
        self.predicates.extend(predicates);
        self
    }
}

/// Reads the stream until it ends or `ctx` is cancelled, sending every event to every
/// destination (waiting for buffer room, as Go's blocking channel send does).
async fn sync_loop<K: Send + Sync + 'static>(
    ctx: CancellationToken,
    mut stream: BoxStream<'static, GenericEvent<K>>,
    fanout: Arc<Mutex<Fanout<K>>>,
) {
    loop {
        let next = tokio::select! {
            _ = ctx.cancelled() => None,
            evt = stream.next() => evt,
        };
        let Some(evt) = next else { break };
        let dests = fanout.lock().dests.clone();
        for d in dests {
            // A closed destination means its controller stopped; skip it.
            let _ = d.send(evt.clone()).await;
        }
    }
    let mut f = fanout.lock();
    f.dests.clear();
    f.closed = true;
}

#[async_trait]
impl<K: Resource + Send + Sync + 'static, R: TypedRequest> Source<R> for Channel<K, R> {
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error> {
        let (tx, mut rx) = mpsc::channel(self.buffer_size);
        {
            let mut f = self.fanout.lock();
            if f.closed {
                return Err(Error::Drained(self.name()));
            }
            f.dests.push(tx);
            if let Some(stream) = f.stream.take() {
                crate::task::spawn(sync_loop(ctx.clone(), stream, self.fanout.clone()));
            }
        }
        let handler = self.handler.clone();
        let predicates = self.predicates.clone();
        let kind = ObjectKind::of_type::<K>();
        crate::task::spawn(async move {
            while let Some(evt) = rx.recv().await {
                if predicates.iter().all(|p| p.generic(&evt)) {
                    let info = EventInfo {
                        origin: Origin::Channel,
                        event: Event::Generic,
                        initial_list: false,
                        kind,
                        object: &*evt.object,
                    };
                    with_trigger(&*queue, info, |q| handler.generic(&evt, q));
                }
            }
        });
        Ok(())
    }

    fn name(&self) -> String {
        format!("channel source: {:p}", Arc::as_ptr(&self.fanout))
    }
}
