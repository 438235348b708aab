//! [`Informer`]: a source fed by an informer the caller already holds
//! (controller-runtime's `source.Informer{Informer: i}`) — one got from
//! [`Cache::get_informer`](crate::cache::Cache::get_informer) of another cache, a cache
//! with other options, or any `cache::Informer` built for the purpose. Unlike
//! [`Kind`](super::Kind), it neither looks the informer up nor waits for the type to be
//! served: it registers its handler at `start` and is synced once that handler has
//! been given the informer's initial list. Predicates and delivery are `Kind`'s.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::kind::deliver;
use super::{Error, Source};
use crate::cache::{self, CacheObject, HandlerRegistration, Notification, gvk_string};
use crate::handler::{BoxHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;
use crate::workqueue::triggers::Kind as ObjectKind;

/// A [`Source`] of the events of one informer.
pub struct Informer<K: CacheObject, R: TypedRequest = Request> {
    informer: cache::Informer<K>,
    handler: BoxHandler<K, R>,
    predicates: Vec<BoxPredicate<K>>,
    registered: watch::Sender<Option<HandlerRegistration<K>>>,
}

impl<K: CacheObject, R: TypedRequest> Informer<K, R> {
    /// A source of `informer`'s events, handled by `handler`.
    pub fn new(informer: cache::Informer<K>, handler: impl EventHandler<K, R>) -> Self {
        Self {
            informer,
            handler: Arc::new(handler),
            predicates: Vec::new(),
            registered: watch::channel(None).0,
        }
    }

    /// Adds a predicate every event must pass.
    pub fn with_predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.predicates.push(Arc::new(predicate));
        self
    }
}

#[async_trait]
impl<K: CacheObject, R: TypedRequest> Source<R> for Informer<K, R> {
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error> {
        if self.registered.borrow().is_some() {
            return Err(Error::msg(format!("{} was already started", self.name())));
        }
        let (handler, preds) = (self.handler.clone(), self.predicates.clone());
        let kind = ObjectKind::intern(&K::kind(self.informer.dynamic_type()));
        let reg = self
            .informer
            .add_quick_event_handler(move |n: Notification<K>| {
                deliver(n, &preds, &*handler, &*queue, kind)
            });
        self.registered.send_replace(Some(reg.clone()));
        let informer = self.informer.clone();
        crate::task::spawn(async move {
            ctx.cancelled().await;
            informer.remove_event_handler(&reg);
        });
        Ok(())
    }

    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), Error> {
        let reg = self.registered.borrow().clone();
        let Some(reg) = reg else {
            return Err(Error::msg(format!("{} was not started", self.name())));
        };
        tokio::select! {
            _ = reg.wait_synced() => Ok(()),
            _ = ctx.cancelled() => Err(Error::msg(format!(
                "timed out waiting for {} to sync",
                self.name()
            ))),
        }
    }

    fn name(&self) -> String {
        format!(
            "informer source: {}",
            gvk_string::<K>(self.informer.dynamic_type())
        )
    }
}
