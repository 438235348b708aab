//! The client's deletes through kube's `Api`: delete, delete-all-of (the rest of
//! controller-runtime's `client.Writer`: create, update, patch and apply are the
//! provided methods of [`ObjectWriter`](super::ObjectWriter)). Each call targets the object's namespace
//! and returns what the server stored; the cache sees it when its watch does.
//!
//! Every verb comes twice, as the reads in `super` do: `create(&obj)` for typed
//! resources ([`Writable`]) and `create_with(&dt, &obj)` for any [`WritableWith`],
//! notably `DynamicObject` with its `ApiResource` (controller-runtime's unstructured
//! client). The typed form is the dynamic form with `dt = ()`. A `DynamicObject`
//! without `apiVersion`/`kind` gets them from its `ApiResource` before it is sent, as
//! the server (and server-side apply) needs them.
//!
//! Creates and updates return a [`PendingWrite`](super::PendingWrite), sent when awaited,
//! that takes per-call [`WriteOptions`](super::WriteOptions) (dry-run, field manager,
//! field validation; `super::options`) first; patches take them in kube's `PatchParams`,
//! deletes in `DeleteParams`. A dry-run client dry-runs them all. Creates, updates,
//! patches and applies go through the one writer (`super::writer`) the status and
//! subresource clients use too.

use kube::api::{DeleteParams, ListParams};

use super::writer::{Target, Writable, WritableWith};
use super::{Client, Error};
use crate::cache::{Scoped, gvk_string, typed_form};

impl Client {
    typed_form! {
        /// Deletes the object `obj` names; `dp` sets propagation, grace period and
        /// preconditions (uid, resourceVersion).
        pub async fn delete<K>(&self, obj: &K, dp: &DeleteParams) -> Result<(), Error> = delete_with
        where K: Writable
    }

    /// Deletes the object of dynamic type `dt` that `obj` names.
    pub async fn delete_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        let t = Target::of(&self.kube, dt, obj);
        let answer = t
            .api
            .delete(&t.name, &self.delete_params(dp))
            .await
            .map_err(|e| t.fail("delete", e))?;
        self.remember_delete(dt, obj, answer, dp);
        Ok(())
    }

    typed_form! {
        /// Deletes every object of `K` in `namespace` (`None`: all namespaces, or the
        /// cluster) that `lp` selects (controller-runtime's `DeleteAllOf`).
        pub async fn delete_all_of<K>(&self, namespace: Option<&str>, lp: &ListParams, dp: &DeleteParams) -> Result<(), Error> = delete_all_of_with
        where K: Writable
    }

    /// Deletes every object of `K` with dynamic type `dt` in `namespace` that `lp`
    /// selects.
    pub async fn delete_all_of_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        namespace: Option<&str>,
        lp: &ListParams,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), namespace, dt);
        api.delete_collection(&self.delete_params(dp), lp)
            .await
            .map(|_| ())
            .map_err(|e| {
                Error::new(
                    "deletecollection",
                    gvk_string::<K>(dt),
                    namespace.unwrap_or_default().to_string(),
                    e,
                )
            })
    }
}
