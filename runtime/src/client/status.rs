//! [`StatusClient`]: writes to the `status` subresource (controller-runtime's
//! `client.Status()` / `SubResourceWriter`). Got from [`Client::status`]; shares the
//! client's field owner and error reporting (`super::error`).

use kube::api::{Patch, PatchParams, PostParams};
use serde::Serialize;

use super::write::{Writable, api_for, apply_params};
use super::{Client, Error};
use crate::cache::gvk_string;

/// Writes the status subresource of objects.
#[derive(Debug)]
pub struct StatusClient<'a> {
    client: &'a Client,
}

impl<'a> StatusClient<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    fn fail<K: Writable>(verb: &str, key: String, e: kube::Error) -> Error {
        Error::new(verb, gvk_string::<K>(&()), key, e)
    }

    /// Replaces the status of `obj` (the server ignores its spec).
    pub async fn update<K: Writable>(&self, obj: &K) -> Result<K, Error> {
        let (api, name, key) = api_for(self.client.kube_client(), obj);
        let pp = self.client.post_params(PostParams::default());
        api.replace_status(&name, &pp, obj)
            .await
            .map_err(|e| Self::fail::<K>("status update", key, e))
    }

    /// Patches the status of the object `obj` names.
    pub async fn patch<K: Writable, P: Serialize + std::fmt::Debug>(
        &self,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<K, Error> {
        let (api, name, key) = api_for(self.client.kube_client(), obj);
        let pp = self.client.patch_params(pp);
        api.patch_status(&name, &pp, patch)
            .await
            .map_err(|e| Self::fail::<K>("status patch", key, e))
    }

    /// Server-side applies the status of `obj` as `field_manager`.
    pub async fn apply<K: Writable>(
        &self,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        self.patch(obj, &Patch::Apply(obj), apply_params(field_manager, force))
            .await
    }
}
