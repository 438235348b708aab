//! Writes through kube's `Api`: create, update, patch, apply, delete, delete-all-of
//! (controller-runtime's `client.Writer`). Each call targets the object's namespace
//! and returns what the server stored; the cache sees it when its watch does.

use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Client, Error};
use crate::cache::{CacheObject, Scoped, gvk_string, object_key};

/// A resource the client can write: typed, serializable.
pub trait Writable: CacheObject<DynamicType = ()> + Serialize + DeserializeOwned {}
impl<K: CacheObject<DynamicType = ()> + Serialize + DeserializeOwned> Writable for K {}

/// The `Api` for `obj`'s namespace and the `namespace/name` naming it in errors.
pub(crate) fn api_for<K: CacheObject<DynamicType = ()>>(
    kube: &kube::Client,
    obj: &K,
) -> (Api<K>, String, String) {
    let m = obj.meta();
    let ns = m.namespace.as_deref().filter(|n| !n.is_empty());
    let name = m.name.clone().unwrap_or_default();
    let api = <K::Scope as Scoped>::api::<K>(kube.clone(), ns, &());
    (api, name.clone(), object_key(ns, &name))
}

/// Patch parameters for a server-side apply.
pub(crate) fn apply_params(field_manager: Option<&str>, force: bool) -> PatchParams {
    PatchParams {
        field_manager: field_manager.map(str::to_string),
        force,
        ..Default::default()
    }
}

impl Client {
    fn fail<K: Resource<DynamicType = ()>>(verb: &str, key: String, e: kube::Error) -> Error {
        Error::new(verb, gvk_string::<K>(&()), key, e)
    }

    /// Creates `obj` in its namespace; returns the stored object.
    pub async fn create<K: Writable>(&self, obj: &K) -> Result<K, Error> {
        let (api, _, key) = api_for(&self.kube, obj);
        let pp = self.post_params(PostParams::default());
        api.create(&pp, obj)
            .await
            .map_err(|e| Self::fail::<K>("create", key, e))
    }

    /// Replaces `obj` (its `resourceVersion` guards against lost updates: a stale one
    /// fails with 409 Conflict).
    pub async fn update<K: Writable>(&self, obj: &K) -> Result<K, Error> {
        let (api, name, key) = api_for(&self.kube, obj);
        let pp = self.post_params(PostParams::default());
        api.replace(&name, &pp, obj)
            .await
            .map_err(|e| Self::fail::<K>("update", key, e))
    }

    /// Patches the object `obj` names with `patch` (merge, JSON, strategic or apply;
    /// `pp` carries the field manager, force and dry-run).
    pub async fn patch<K: Writable, P: Serialize + std::fmt::Debug>(
        &self,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<K, Error> {
        let (api, name, key) = api_for(&self.kube, obj);
        let pp = self.patch_params(pp);
        api.patch(&name, &pp, patch)
            .await
            .map_err(|e| Self::fail::<K>("patch", key, e))
    }

    /// Server-side applies `obj` as `field_manager` (falling back to the client's
    /// field owner), taking over conflicting fields when `force` is set.
    pub async fn apply<K: Writable>(
        &self,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        self.patch(obj, &Patch::Apply(obj), apply_params(field_manager, force))
            .await
    }

    /// Deletes the object `obj` names; `dp` sets propagation, grace period and
    /// preconditions (uid, resourceVersion).
    pub async fn delete<K: Writable>(&self, obj: &K, dp: &DeleteParams) -> Result<(), Error> {
        let (api, name, key) = api_for(&self.kube, obj);
        api.delete(&name, dp)
            .await
            .map(|_| ())
            .map_err(|e| Self::fail::<K>("delete", key, e))
    }

    /// Deletes every object of `K` in `namespace` (`None`: all namespaces, or the
    /// cluster) that `lp` selects (controller-runtime's `DeleteAllOf`).
    pub async fn delete_all_of<K: Writable>(
        &self,
        namespace: Option<&str>,
        lp: &ListParams,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), namespace, &());
        api.delete_collection(dp, lp)
            .await
            .map(|_| ())
            .map_err(|e| {
                Self::fail::<K>(
                    "deletecollection",
                    namespace.unwrap_or_default().to_string(),
                    e,
                )
            })
    }
}
