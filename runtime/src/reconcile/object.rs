//! Reconciling whole objects: a [`Reconciler<Arc<K>>`](Reconciler) over an
//! [`ObjectGetter`] (controller-runtime's `reconcile.ObjectReconciler` and
//! `AsReconciler`).
//!
//! The adapter fetches the object a [`Request`] names and skips the reconcile when it
//! is gone (NotFound), so the reconciler sees only objects that exist. The cache
//! implements [`ObjectGetter`]; tests can use any map.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Action, Error, Reconciler, Request};

/// Reads one object by key: `Ok(None)` means NotFound.
#[async_trait]
pub trait ObjectGetter<K>: Send + Sync + 'static {
    /// The object `req` names, or `None` if it does not exist.
    async fn get(&self, req: &Request) -> Result<Option<Arc<K>>, Error>;
}

/// The [`Reconciler`] [`as_reconciler`] returns.
pub struct ObjectReconcilerAdapter<K, G, R> {
    getter: G,
    reconciler: R,
    _k: PhantomData<fn() -> K>,
}

/// Adapts a reconciler of objects (`Reconciler<Arc<K>>`, Go's `ObjectReconciler`) to
/// one of requests: fetch through `getter`, skip NotFound, reconcile.
pub fn as_reconciler<K, G, R>(getter: G, reconciler: R) -> ObjectReconcilerAdapter<K, G, R>
where
    K: Send + Sync + 'static,
    G: ObjectGetter<K>,
    R: Reconciler<Arc<K>>,
{
    ObjectReconcilerAdapter {
        getter,
        reconciler,
        _k: PhantomData,
    }
}

#[async_trait]
impl<K, G, R> Reconciler for ObjectReconcilerAdapter<K, G, R>
where
    K: Send + Sync + 'static,
    G: ObjectGetter<K>,
    R: Reconciler<Arc<K>>,
{
    async fn reconcile(&self, ctx: CancellationToken, req: Request) -> Result<Action, Error> {
        match self.getter.get(&req).await? {
            Some(obj) => self.reconciler.reconcile(ctx, obj).await,
            None => {
                tracing::debug!(%req, "object not found, skipping reconcile");
                Ok(Action::done())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct MapGetter(HashMap<Request, Arc<String>>);

    #[async_trait]
    impl ObjectGetter<String> for MapGetter {
        async fn get(&self, req: &Request) -> Result<Option<Arc<String>>, Error> {
            if req.name == "broken" {
                return Err(Error::new("read failed"));
            }
            Ok(self.0.get(req).cloned())
        }
    }

    struct Count(Arc<AtomicUsize>);

    #[async_trait]
    impl Reconciler<Arc<String>> for Count {
        async fn reconcile(&self, _: CancellationToken, obj: Arc<String>) -> Result<Action, Error> {
            assert_eq!(*obj, "value");
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(Action::requeue())
        }
    }

    #[tokio::test]
    async fn fetches_and_skips_not_found() {
        let seen = Arc::new(AtomicUsize::new(0));
        let getter = MapGetter(HashMap::from([(
            Request::new("ns", "a"),
            Arc::new("value".to_string()),
        )]));
        let r = as_reconciler(getter, Count(seen.clone()));
        let ctx = CancellationToken::new();
        let found = r.reconcile(ctx.clone(), Request::new("ns", "a")).await;
        assert_eq!(found.ok(), Some(Action::requeue()));
        let missing = r.reconcile(ctx.clone(), Request::new("ns", "b")).await;
        assert_eq!(missing.ok(), Some(Action::done()));
        assert!(
            r.reconcile(ctx, Request::new("ns", "broken"))
                .await
                .is_err()
        );
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }
}
