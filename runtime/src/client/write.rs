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
//! Creates and updates also come as `*_opts` forms taking [`WriteOptions`] (dry-run,
//! field manager, field validation; `super::options`); patches take them in kube's
//! `PatchParams`, deletes in `DeleteParams`. A dry-run client dry-runs them all. Creates,
//! updates, patches and applies go through the one writer (`super::writer`) the status
//! and subresource clients use too.

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde::Serialize;

use super::writer::{BodyWrite, Target, Writable, WritableWith, Writer, body_bytes};
use super::{Client, Error, WriteOptions};
use crate::cache::{Scoped, gvk_string, typed_form};

impl Client {
    typed_form! {
        /// Creates `obj` in its namespace; returns the stored object.
        pub async fn create<K>(&self, obj: &K) -> Result<K, Error> = create_with
        where K: Writable
    }

    typed_form! {
        /// [`create`](Self::create) with per-call options (dry-run, field manager, field
        /// validation).
        pub async fn create_opts<K>(&self, obj: &K, opts: &WriteOptions) -> Result<K, Error> = create_with_opts
        where K: Writable
    }

    /// Creates `obj` of dynamic type `dt` (e.g. a `DynamicObject` and its
    /// `ApiResource`) in its namespace; returns the stored object.
    pub async fn create_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<K, Error> {
        self.create_with_opts(dt, obj, &WriteOptions::new()).await
    }

    /// [`create_with`](Self::create_with) with per-call options.
    pub async fn create_with_opts<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        opts: &WriteOptions,
    ) -> Result<K, Error> {
        Writer::object(self)
            .send(BodyWrite::Create, dt, obj, body_bytes(dt, obj), opts)
            .await
    }

    typed_form! {
        /// Replaces `obj` (its `resourceVersion` guards against lost updates: a stale one
        /// fails with 409 Conflict).
        pub async fn update<K>(&self, obj: &K) -> Result<K, Error> = update_with
        where K: Writable
    }

    typed_form! {
        /// [`update`](Self::update) with per-call options.
        pub async fn update_opts<K>(&self, obj: &K, opts: &WriteOptions) -> Result<K, Error> = update_with_opts
        where K: Writable
    }

    /// Replaces `obj` of dynamic type `dt`, guarded by its `resourceVersion`.
    pub async fn update_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<K, Error> {
        self.update_with_opts(dt, obj, &WriteOptions::new()).await
    }

    /// [`update_with`](Self::update_with) with per-call options.
    pub async fn update_with_opts<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        opts: &WriteOptions,
    ) -> Result<K, Error> {
        Writer::object(self)
            .send(BodyWrite::Update, dt, obj, body_bytes(dt, obj), opts)
            .await
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
        Writer::object(self).patch(dt, obj, patch, pp).await
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
            .apply(dt, obj, field_manager, force)
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
