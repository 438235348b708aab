//! [`StatusClient`]: writes to the `status` subresource (controller-runtime's
//! `client.Status()` / `SubResourceWriter`), the object itself as the body. Got from
//! [`Client::status`]; it is the client's one writer (`super::writer`) aimed at `status`,
//! so it shares the client's field owner and error reporting, and like the writes in
//! `super::write` comes in a typed form and a `*_with(dt, ..)` form for `DynamicObject`.

use std::borrow::Cow;

use kube::api::{Patch, PatchParams};
use serde::Serialize;

use super::writer::{BodyWrite, PendingWrite, Writable, WritableWith, Writer};
use super::{Client, Error};
use crate::cache::typed_form;

/// Writes the status subresource of objects.
#[derive(Debug)]
pub struct StatusClient<'a> {
    client: &'a Client,
}

impl<'a> StatusClient<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    fn writer(&self) -> Writer<'a> {
        Writer::subresource(self.client, "status")
    }

    /// Replaces the status of `obj` (the server ignores its spec); awaited, returns the
    /// stored object. Per-call options go on the [`PendingWrite`].
    pub fn update<K: Writable>(&self, obj: &'a K) -> PendingWrite<'a, K> {
        self.update_with(&(), obj)
    }

    /// Replaces the status of `obj` of dynamic type `dt`.
    pub fn update_with<K: WritableWith>(
        &self,
        dt: &'a K::DynamicType,
        obj: &'a K,
    ) -> PendingWrite<'a, K> {
        PendingWrite::new(self.writer(), BodyWrite::Update, dt, Ok(Cow::Borrowed(obj)))
    }

    typed_form! {
        /// Patches the status of the object `obj` names.
        pub async fn patch<K, P>(&self, obj: &K, patch: &Patch<P>, pp: PatchParams) -> Result<K, Error> = patch_with
        where K: Writable, P: Serialize + std::fmt::Debug
    }

    /// Patches the status of the object of dynamic type `dt` that `obj` names.
    pub async fn patch_with<K: WritableWith, P: Serialize + std::fmt::Debug>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<K, Error> {
        self.writer().patch(dt, obj, patch, pp).await
    }

    typed_form! {
        /// Server-side applies the status of `obj` as `field_manager`.
        pub async fn apply<K>(&self, obj: &K, field_manager: Option<&str>, force: bool) -> Result<K, Error> = apply_with
        where K: Writable
    }

    /// Server-side applies the status of `obj` of dynamic type `dt`.
    pub async fn apply_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        self.writer().apply(dt, obj, field_manager, force).await
    }
}
