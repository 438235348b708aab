//! Writes through kube's `Api`: create, update, patch, apply, delete, delete-all-of
//! (controller-runtime's `client.Writer`). Each call targets the object's namespace
//! and returns what the server stored; the cache sees it when its watch does.
//!
//! Every verb comes twice, as the reads in `super` do: `create(&obj)` for typed
//! resources ([`Writable`]) and `create_with(&dt, &obj)` for any [`WritableWith`],
//! notably `DynamicObject` with its `ApiResource` (controller-runtime's unstructured
//! client). The typed form is the dynamic form with `dt = ()`. A `DynamicObject`
//! without `apiVersion`/`kind` gets them from its `ApiResource` before it is sent, as
//! the server (and server-side apply) needs them.
//!
//! Creates and updates return a [`PendingWrite`], sent when awaited, that takes per-call
//! [`WriteOptions`](super::WriteOptions) (dry-run, field manager, field validation;
//! `super::options`) first; patches take them in kube's `PatchParams`, deletes in
//! `DeleteParams`. A dry-run client dry-runs them all. Creates,
//! updates, patches and applies go through the one writer (`super::writer`) the status
//! and subresource clients use too.

use std::borrow::Cow;

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde::Serialize;

use super::writer::{BodyWrite, PendingWrite, Target, Writable, WritableWith, Writer};
use super::{Client, Error};
use crate::cache::{Scoped, gvk_string, typed_form};

impl Client {
    /// Creates `obj` in its namespace; awaited, returns the stored object. Per-call options
    /// go on the [`PendingWrite`] (`client.create(&obj).dry_run_all().await`).
    pub fn create<'a, K: Writable>(&'a self, obj: &'a K) -> PendingWrite<'a, K> {
        self.create_with(&(), obj)
    }

    /// Creates `obj` of dynamic type `dt` (e.g. a `DynamicObject` and its `ApiResource`)
    /// in its namespace.
    pub fn create_with<'a, K: WritableWith>(
        &'a self,
        dt: &'a K::DynamicType,
        obj: &'a K,
    ) -> PendingWrite<'a, K> {
        PendingWrite::new(
            Writer::object(self),
            BodyWrite::Create,
            dt,
            Ok(Cow::Borrowed(obj)),
        )
    }

    /// Replaces `obj` (its `resourceVersion` guards against lost updates: a stale one
    /// fails with 409 Conflict); awaited, returns the stored object.
    pub fn update<'a, K: Writable>(&'a self, obj: &'a K) -> PendingWrite<'a, K> {
        self.update_with(&(), obj)
    }

    /// Replaces `obj` of dynamic type `dt`, guarded by its `resourceVersion`.
    pub fn update_with<'a, K: WritableWith>(
        &'a self,
        dt: &'a K::DynamicType,
        obj: &'a K,
    ) -> PendingWrite<'a, K> {
        PendingWrite::new(
            Writer::object(self),
            BodyWrite::Update,
            dt,
            Ok(Cow::Borrowed(obj)),
        )
    }

    typed_form! {
        /// Patches the object `obj` names with `patch` (merge, JSON, strategic or apply;
        /// `pp` carries the field manager, force and dry-run).
        pub async fn patch<K, P>(&self, obj: &K, patch: &Patch<P>, pp: PatchParams) -> Result<K, Error> = patch_with
        where K: Writable, P: Serialize + std::fmt::Debug
    }

    /// Patches the object of dynamic type `dt` that `obj` names with `patch`.
    pub async fn patch_with<K: WritableWith, P: Serialize + std::fmt::Debug>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<K, Error> {
        Writer::object(self).patch_with(dt, obj, patch, pp).await
    }

    typed_form! {
        /// Server-side applies `obj` as `field_manager` (falling back to the client's
        /// field owner), taking over conflicting fields when `force` is set.
        pub async fn apply<K>(&self, obj: &K, field_manager: Option<&str>, force: bool) -> Result<K, Error> = apply_with
        where K: Writable
    }

    /// Server-side applies `obj` of dynamic type `dt` as `field_manager`.
    pub async fn apply_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        Writer::object(self)
            .apply_with(dt, obj, field_manager, force)
            .await
    }

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
        t.api
            .delete(&t.name, &self.delete_params(dp))
            .await
            .map(|_| ())
            .map_err(|e| t.fail("delete", e))
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
