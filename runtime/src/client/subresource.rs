//! [`SubResourceClient`]: reads and writes any named subresource of an object —
//! `scale`, `status`, `eviction`, `binding`, a custom resource's `scale` —
//! (controller-runtime's `client.SubResource(name)` / `SubResourceClient`). Got from
//! [`Client::sub_resource`]. The subresource's body has its own type, chosen by the
//! caller (`autoscaling/v1` `Scale`, `policy/v1` `Eviction`, or `serde_json::Value`);
//! the object only names the target. Writes share the client's options
//! (`super::options`) and errors (`super::error`); [`Client::status`]
//! (`super::status`) is the status-only shorthand that takes the object itself as
//! the body.

use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::write::{Target, Writable, WritableWith};
use super::{Client, Error, WriteOptions};

/// Reads and writes the subresource `name` of objects.
#[derive(Debug)]
pub struct SubResourceClient<'a> {
    client: &'a Client,
    name: String,
}

impl Client {
    /// A client for the subresource `name` (`"scale"`, `"status"`, `"eviction"`, ...)
    /// of the objects it is given (Go's `client.SubResource(name)`).
    pub fn sub_resource(&self, name: impl Into<String>) -> SubResourceClient<'_> {
        SubResourceClient {
            client: self,
            name: name.into(),
        }
    }
}

impl SubResourceClient<'_> {
    fn verb(&self, verb: &str) -> String {
        format!("{} {verb}", self.name)
    }

    /// Reads the subresource of the object `obj` names, straight from the server.
    pub async fn get<K: Writable, S: DeserializeOwned>(&self, obj: &K) -> Result<S, Error> {
        self.get_with(&(), obj).await
    }

    /// [`get`](Self::get) for an object of dynamic type `dt`.
    pub async fn get_with<K: WritableWith, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<S, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let req = kube::core::Request::new(t.api.resource_url())
            .get_subresource(&self.name, &t.name)
            .map_err(|e| t.fail(&self.verb("get"), kube::Error::BuildRequest(e)))?;
        self.client
            .kube_client()
            .request::<S>(req)
            .await
            .map_err(|e| t.fail(&self.verb("get"), e))
    }

    /// POSTs `body` to the subresource of the object `obj` names (an `Eviction` to
    /// `eviction`, a `Binding` to `binding`); returns the server's answer.
    pub async fn create<K: Writable, B: Serialize, S: DeserializeOwned>(
        &self,
        obj: &K,
        body: &B,
        opts: &WriteOptions,
    ) -> Result<S, Error> {
        self.create_with(&(), obj, body, opts).await
    }

    /// [`create`](Self::create) for an object of dynamic type `dt`.
    pub async fn create_with<K: WritableWith, B: Serialize, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        body: &B,
        opts: &WriteOptions,
    ) -> Result<S, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let verb = self.verb("create");
        let data = serde_json::to_vec(body).map_err(|e| t.fail(&verb, e))?;
        let req = kube::core::Request::new(t.api.resource_url());
        self.client
            .send_json(opts, |pp| {
                req.create_subresource(&self.name, &t.name, pp, data)
            })
            .await
            .map_err(|e| t.fail(&verb, e))
    }

    /// Replaces the subresource of the object `obj` names with `body` (a `Scale` with
    /// new replicas); returns what the server stored.
    pub async fn update<K: Writable, B: Serialize + DeserializeOwned>(
        &self,
        obj: &K,
        body: &B,
        opts: &WriteOptions,
    ) -> Result<B, Error> {
        self.update_with(&(), obj, body, opts).await
    }

    /// [`update`](Self::update) for an object of dynamic type `dt`.
    pub async fn update_with<K: WritableWith, B: Serialize + DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        body: &B,
        opts: &WriteOptions,
    ) -> Result<B, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let verb = self.verb("update");
        let data = serde_json::to_vec(body).map_err(|e| t.fail(&verb, e))?;
        let req = kube::core::Request::new(t.api.resource_url());
        self.client
            .send_json(opts, |pp| {
                req.replace_subresource(&self.name, &t.name, pp, data)
            })
            .await
            .map_err(|e| t.fail(&verb, e))
    }

    /// Patches the subresource of the object `obj` names; `S` is the subresource's
    /// type (`Scale`) or the object's (`status`).
    pub async fn patch<K: Writable, P: Serialize + std::fmt::Debug, S: DeserializeOwned>(
        &self,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<S, Error> {
        self.patch_with(&(), obj, patch, pp).await
    }

    /// [`patch`](Self::patch) for an object of dynamic type `dt`.
    pub async fn patch_with<K, P, S>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<S, Error>
    where
        K: WritableWith,
        P: Serialize + std::fmt::Debug,
        S: DeserializeOwned,
    {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let verb = self.verb("patch");
        let pp = self.client.patch_params(pp);
        let req = kube::core::Request::new(t.api.resource_url())
            .patch_subresource(&self.name, &t.name, &pp, patch)
            .map_err(|e| t.fail(&verb, kube::Error::BuildRequest(e)))?;
        self.client
            .kube_client()
            .request::<S>(req)
            .await
            .map_err(|e| t.fail(&verb, e))
    }
}
