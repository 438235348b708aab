//! [`SubResourceClient`]: reads and writes any named subresource of an object —
//! `scale`, `status`, `eviction`, `binding`, a custom resource's `scale` —
//! (controller-runtime's `client.SubResource(name)` / `SubResourceClient`). Got from
//! [`Client::sub_resource`]. The subresource's body has its own type, chosen by the
//! caller (`autoscaling/v1` `Scale`, `policy/v1` `Eviction`, or `serde_json::Value`);
//! the object only names the target. It is the client's one writer (`super::writer`)
//! aimed at the subresource, so writes share the client's options and errors;
//! [`Client::status`] is the status-only shorthand that takes the
//! object itself as the body.

use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::writer::{BodyWrite, Writable, WritableWith, Writer};
use super::{Client, Error, WriteOptions};
use crate::cache::typed_form;

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

impl<'a> SubResourceClient<'a> {
    fn writer(&self) -> Writer<'_> {
        Writer::subresource(self.client, &self.name)
    }

    typed_form! {
        /// Reads the subresource of the object `obj` names, straight from the server.
        pub async fn get<K, S>(&self, obj: &K) -> Result<S, Error> = get_with
        where K: Writable, S: DeserializeOwned
    }

    /// [`get`](Self::get) for an object of dynamic type `dt`.
    pub async fn get_with<K: WritableWith, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<S, Error> {
        self.writer().get(dt, obj).await
    }

    typed_form! {
        /// POSTs `body` to the subresource of the object `obj` names (an `Eviction` to
        /// `eviction`, a `Binding` to `binding`); returns the server's answer.
        pub async fn create<K, B, S>(&self, obj: &K, body: &B, opts: &WriteOptions) -> Result<S, Error> = create_with
        where K: Writable, B: Serialize, S: DeserializeOwned
    }

    /// [`create`](Self::create) for an object of dynamic type `dt`.
    pub async fn create_with<K: WritableWith, B: Serialize, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        body: &B,
        opts: &WriteOptions,
    ) -> Result<S, Error> {
        let data = serde_json::to_vec(body);
        self.writer()
            .send(BodyWrite::Create, dt, obj, data, opts)
            .await
    }

    typed_form! {
        /// Replaces the subresource of the object `obj` names with `body` (a `Scale` with
        /// new replicas); returns what the server stored.
        pub async fn update<K, B>(&self, obj: &K, body: &B, opts: &WriteOptions) -> Result<B, Error> = update_with
        where K: Writable, B: Serialize + DeserializeOwned
    }

    /// [`update`](Self::update) for an object of dynamic type `dt`.
    pub async fn update_with<K: WritableWith, B: Serialize + DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        body: &B,
        opts: &WriteOptions,
    ) -> Result<B, Error> {
        let data = serde_json::to_vec(body);
        self.writer()
            .send(BodyWrite::Update, dt, obj, data, opts)
            .await
    }

    typed_form! {
        /// Patches the subresource of the object `obj` names; `S` is the subresource's
        /// type (`Scale`) or the object's (`status`).
        pub async fn patch<K, P, S>(&self, obj: &K, patch: &Patch<P>, pp: PatchParams) -> Result<S, Error> = patch_with
        where K: Writable, P: Serialize + std::fmt::Debug, S: DeserializeOwned
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
        self.writer().patch_as(dt, obj, patch, pp).await
    }
}
