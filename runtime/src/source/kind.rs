//! [`Kind`]: the cache-backed source (controller-runtime's `source.Kind`).
//!
//! Registers a handler on the shared informer of `K` ([`crate::cache`]), so any number
//! of controllers watching `K` share one watch. Events pass the predicates
//! ([`crate::predicate`]) and go to the event handler ([`crate::handler`]), which fills the
//! controller's queue. If the type is not served yet (a CRD installed later), `start`
//! keeps checking every [`KIND_RETRY_INTERVAL`] until it is, and the controller's
//! `cache_sync_timeout` bounds the wait in `wait_for_sync`, which is event-driven: it
//! wakes when the handler registration has been given the informer's initial list
//! ([`HandlerRegistration::wait_synced`]).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube::Resource;
use kube::api::ListParams;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::trigger::{EventInfo, with_trigger};
use super::{Error, Source};
use crate::cache::{Cache, CacheObject, HandlerRegistration, Notification, Scoped, gvk_string};
use crate::handler::{BoxHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::reconcile::{Request, TypedRequest};
use crate::workqueue::Queue;
use crate::workqueue::triggers::{Event, Kind as ObjectKind};

/// How often `Kind` checks whether a type not yet served has appeared
/// (controller-runtime retries every 10 s).
pub const KIND_RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// A [`Source`] of the events of every object of type `K` in the cache, mapped to
/// requests of type `R` by its handler (Go's `source.Kind` / `TypedKind[K, R]`).
pub struct Kind<K: CacheObject, R: TypedRequest = Request> {
    cache: Cache,
    dt: K::DynamicType,
    handler: BoxHandler<K, R>,
    predicates: Vec<BoxPredicate<K>>,
    registered: watch::Sender<Option<HandlerRegistration<K>>>,
}

impl<K: CacheObject<DynamicType = ()>, R: TypedRequest> Kind<K, R> {
    /// A source of `K` events from `cache`, handled by `handler`.
    pub fn new(cache: &Cache, handler: impl EventHandler<K, R>) -> Self {
        Self::new_with(cache, (), handler)
    }
}

impl<K: CacheObject, R: TypedRequest> Kind<K, R> {
    /// A source of events for `K` with dynamic type `dt` (an `ApiResource` for
    /// `DynamicObject`).
    pub fn new_with(cache: &Cache, dt: K::DynamicType, handler: impl EventHandler<K, R>) -> Self {
        cache.record_watch::<K>(&dt);
        Self {
            cache: cache.clone(),
            dt,
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

    /// Adds predicates every event must pass.
    pub fn with_predicates(
        mut self,
        predicates: impl IntoIterator<Item = BoxPredicate<K>>,
    ) -> Self {
        self.predicates.extend(predicates);
        self
    }

    /// Waits until the server serves `K` (true) or `ctx` is cancelled (false).
    async fn wait_for_type(cache: &Cache, dt: &K::DynamicType, ctx: &CancellationToken) -> bool {
        let api = <K::Scope as Scoped>::api::<K>(cache.kube_client().clone(), None, dt);
        loop {
            match api.list_metadata(&ListParams::default().limit(1)).await {
                Err(kube::Error::Api(s)) if s.is_not_found() => {
                    tracing::info!(
                        kind = %gvk_string::<K>(dt),
                        retry_in = ?KIND_RETRY_INTERVAL,
                        "kind is not served yet; waiting for it to be installed"
                    );
                }
                // Served (or another error, which the informer retries with backoff).
                _ => return true,
            }
            tokio::select! {
                _ = tokio::time::sleep(KIND_RETRY_INTERVAL) => {}
                _ = ctx.cancelled() => return false,
            }
        }
    }
}

/// Passes one informer notification through `preds` to `handler` (shared with
/// `super::informer`); when the queue keeps triggers, the handler's adds carry the event
/// (an update that keeps the resourceVersion is a resync) about an object of `kind`.
pub(super) fn deliver<K: Resource + 'static, R: TypedRequest>(
    n: Notification<K>,
    preds: &[BoxPredicate<K>],
    handler: &dyn EventHandler<K, R>,
    queue: &(dyn Queue<R> + 'static),
    kind: ObjectKind,
) {
    let origin = handler.trigger_origin();
    let info = |event, initial_list, object| EventInfo {
        origin,
        event,
        initial_list,
        kind,
        object,
    };
    match n {
        Notification::Create(e) => {
            if preds.iter().all(|p| p.create(&e)) {
                let i = info(Event::Create, e.is_in_initial_list, &*e.object);
                with_trigger(queue, i, |q| handler.create(&e, q))
            }
        }
        Notification::Update(e) => {
            if preds.iter().all(|p| p.update(&e)) {
                let same =
                    e.object_old.meta().resource_version == e.object_new.meta().resource_version;
                let event = if same { Event::Resync } else { Event::Update };
                let i = info(event, false, &*e.object_new);
                with_trigger(queue, i, |q| handler.update(&e, q))
            }
        }
        Notification::Delete(e) => {
            if preds.iter().all(|p| p.delete(&e)) {
                let i = info(Event::Delete, false, &*e.object);
                with_trigger(queue, i, |q| handler.delete(&e, q))
            }
        }
    }
}

#[async_trait]
impl<K: CacheObject, R: TypedRequest> Source<R> for Kind<K, R> {
    async fn start(&self, ctx: CancellationToken, queue: Arc<dyn Queue<R>>) -> Result<(), Error> {
        if self.registered.borrow().is_some() {
            return Err(Error::msg(format!("{} was already started", self.name())));
        }
        let cache = self.cache.clone();
        let dt = self.dt.clone();
        let handler = self.handler.clone();
        let preds = self.predicates.clone();
        let registered = self.registered.clone();
        let kind = ObjectKind::intern(&K::kind(&dt));
        crate::task::spawn(async move {
            let already = cache.get_informer_with::<K>(&dt).has_synced();
            if !already && !Self::wait_for_type(&cache, &dt, &ctx).await {
                return;
            }
            let informer = cache.get_informer_with::<K>(&dt);
            let reg = informer.add_quick_event_handler(move |n: Notification<K>| {
                deliver(n, &preds, &*handler, &*queue, kind)
            });
            registered.send_replace(Some(reg.clone()));
            ctx.cancelled().await;
            informer.remove_event_handler(&reg);
        });
        Ok(())
    }

    async fn wait_for_sync(&self, ctx: CancellationToken) -> Result<(), Error> {
        let mut rx = self.registered.subscribe();
        let reg = tokio::select! {
            r = rx.wait_for(|r| r.is_some()) => match r {
                Ok(r) => r.clone(),
                Err(_) => None,
            },
            _ = ctx.cancelled() => None,
        };
        let Some(reg) = reg else {
            return Err(Error::msg(format!(
                "timed out waiting for {} to start",
                self.name()
            )));
        };
        tokio::select! {
            _ = reg.wait_synced() => {
                tracing::debug!(source = %self.name(), "kind source synced");
                Ok(())
            }
            _ = ctx.cancelled() => Err(Error::msg(format!(
                "timed out waiting for {} to sync",
                self.name()
            ))),
        }
    }

    fn name(&self) -> String {
        format!("kind source: {}", gvk_string::<K>(&self.dt))
    }
}
