//! [`StatusClient`]: writes to the `status` subresource (controller-runtime's
//! `client.Status()` / `SubResourceWriter`). Got from [`Client::status`]; shares the
//! client's field owner, error reporting (`super::error`) and, like the writes in
//! `super::write`, comes in a typed form and a `*_with(dt, ..)` form for
//! `DynamicObject`.

use kube::api::{Patch, PatchParams};
use serde::Serialize;

use super::write::{Target, Writable, WritableWith, apply_params, body, body_bytes};
use super::{Client, Error, WriteOptions};

/// Writes the status subresource of objects.
#[derive(Debug)]
pub struct StatusClient<'a> {
    client: &'a Client,
}

impl<'a> StatusClient<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    /// Replaces the status of `obj` (the server ignores its spec).
    pub async fn update<K: Writable>(&self, obj: &K) -> Result<K, Error> {
        self.update_with(&(), obj).await
    }

    /// Replaces the status of `obj` of dynamic type `dt`.
    pub async fn update_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<K, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let data = body_bytes(dt, obj).map_err(|e| t.fail("status update", e))?;
        let req = kube::core::Request::new(t.api.resource_url());
        self.client
            .send_json(&WriteOptions::new(), |pp| {
                req.replace_subresource("status", &t.name, pp, data)
            })
            .await
            .map_err(|e| t.fail("status update", e))
    }

    /// Patches the status of the object `obj` names.
    pub async fn patch<K: Writable, P: Serialize + std::fmt::Debug>(
        &self,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<K, Error> {
        self.patch_with(&(), obj, patch, pp).await
    }

    /// Patches the status of the object of dynamic type `dt` that `obj` names.
    pub async fn patch_with<K: WritableWith, P: Serialize + std::fmt::Debug>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<K, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let pp = self.client.patch_params(pp);
        t.api
            .patch_status(&t.name, &pp, patch)
            .await
            .map_err(|e| t.fail("status patch", e))
    }

    /// Server-side applies the status of `obj` as `field_manager`.
    pub async fn apply<K: Writable>(
        &self,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        self.apply_with(&(), obj, field_manager, force).await
    }

    /// Server-side applies the status of `obj` of dynamic type `dt`.
    pub async fn apply_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let intent = body(dt, obj).map_err(|e| t.fail("status patch", e))?;
        self.patch_with(
            dt,
            obj,
            &Patch::Apply(&*intent),
            apply_params(field_manager, force),
        )
        .await
    }
}
