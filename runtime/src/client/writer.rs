//! [`Writer`]: the one write path of the client, generic over where a write lands — the
//! object itself or one of its subresources — as controller-runtime's `client.Writer` and
//! `SubResourceWriter` are one REST client underneath.
//!
//! The client's own writes (`write`: create, update, patch, apply), the status writer
//! ([`StatusClient`](super::StatusClient), the subresource `status` with the object as its
//! body) and the subresource client ([`SubResourceClient`](super::SubResourceClient), any
//! subresource with a body of its own) each pick a [`Writer`] and hand it the body; the
//! writer builds the request (kube's request builder), applies the client-wide options
//! (`super::options`) and names the verb in errors: `update` on the object, `status update`
//! on its status, `scale patch` on its scale.

use std::borrow::Cow;

use kube::api::{Patch, PatchParams, PostParams};
use kube::core::Request;
use kube::core::request::Error as BuildError;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::write::{Target, WritableWith, apply_params, body};
use super::{Client, Error, WriteOptions};

/// Writes to the objects it is given, or to the subresource `sub` of each.
pub(crate) struct Writer<'a> {
    client: &'a Client,
    sub: Option<&'a str>,
}

impl<'a> Writer<'a> {
    /// Writes to the objects themselves.
    pub(crate) fn object(client: &'a Client) -> Self {
        Self { client, sub: None }
    }

    /// Writes to the subresource `sub` of the objects.
    pub(crate) fn subresource(client: &'a Client, sub: &'a str) -> Self {
        Self {
            client,
            sub: Some(sub),
        }
    }

    /// `verb` as errors name it: `update`, or `status update` on a subresource.
    fn verb(&self, verb: &'static str) -> Cow<'static, str> {
        match self.sub {
            None => Cow::Borrowed(verb),
            Some(sub) => Cow::Owned(format!("{sub} {verb}")),
        }
    }

    /// Reads the subresource of the object `obj` names, straight from the server.
    pub(crate) async fn get<K: WritableWith, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<S, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let verb = self.verb("get");
        let req = Request::new(t.api.resource_url());
        let req = match self.sub {
            Some(sub) => req.get_subresource(sub, &t.name),
            None => req.get(&t.name, &Default::default()),
        };
        let req = req.map_err(|e| t.fail(&verb, kube::Error::BuildRequest(e)))?;
        self.client
            .kube_client()
            .request::<S>(req)
            .await
            .map_err(|e| t.fail(&verb, e))
    }

    /// POSTs `data` (the JSON of `body`, or why it has none): a new object to its
    /// collection, or a body to the object's subresource (an `Eviction`).
    pub(crate) async fn create<K: WritableWith, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        data: serde_json::Result<Vec<u8>>,
        opts: &WriteOptions,
    ) -> Result<S, Error> {
        self.send(
            "create",
            dt,
            obj,
            data,
            opts,
            |req, name, pp, data| match self.sub {
                Some(sub) => req.create_subresource(sub, name, pp, data),
                None => req.create(pp, data),
            },
        )
        .await
    }

    /// PUTs `data` to the object `obj` names, or to its subresource.
    pub(crate) async fn update<K: WritableWith, S: DeserializeOwned>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        data: serde_json::Result<Vec<u8>>,
        opts: &WriteOptions,
    ) -> Result<S, Error> {
        self.send(
            "update",
            dt,
            obj,
            data,
            opts,
            |req, name, pp, data| match self.sub {
                Some(sub) => req.replace_subresource(sub, name, pp, data),
                None => req.replace(name, pp, data),
            },
        )
        .await
    }

    /// Sends the create or update `build` makes of the target's request builder, its
    /// name, the `PostParams` of `opts` and `data`; errors name `verb`.
    async fn send<K: WritableWith, S: DeserializeOwned>(
        &self,
        verb: &'static str,
        dt: &K::DynamicType,
        obj: &K,
        data: serde_json::Result<Vec<u8>>,
        opts: &WriteOptions,
        build: impl FnOnce(
            &Request,
            &str,
            &PostParams,
            Vec<u8>,
        ) -> Result<http::Request<Vec<u8>>, BuildError>,
    ) -> Result<S, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let verb = self.verb(verb);
        let data = data.map_err(|e| t.fail(&verb, e))?;
        let req = Request::new(t.api.resource_url());
        self.client
            .send_json(opts, |pp| build(&req, &t.name, pp, data))
            .await
            .map_err(|e| t.fail(&verb, e))
    }

    /// Patches the object `obj` names (metadata-only for a `PartialObjectMeta`, as kube's
    /// `Api::patch`), or its subresource; `pp` completed with the client-wide options.
    pub(crate) async fn patch<K, P, S>(
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
        let req = Request::new(t.api.resource_url());
        let req = match self.sub {
            Some(sub) => req.patch_subresource(sub, &t.name, &pp, patch),
            None if K::metadata_api() => req.patch_metadata(&t.name, &pp, patch),
            None => req.patch(&t.name, &pp, patch),
        };
        let req = req.map_err(|e| t.fail(&verb, kube::Error::BuildRequest(e)))?;
        self.client
            .kube_client()
            .request::<S>(req)
            .await
            .map_err(|e| t.fail(&verb, e))
    }

    /// Server-side applies `obj` (as its own intent) as `field_manager` (falling back to
    /// the client's field owner), taking over conflicting fields when `force` is set.
    pub(crate) async fn apply<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        field_manager: Option<&str>,
        force: bool,
    ) -> Result<K, Error> {
        let intent = body(dt, obj).map_err(|e| {
            Target::of(self.client.kube_client(), dt, obj).fail(&self.verb("patch"), e)
        })?;
        let pp = apply_params(field_manager, force);
        self.patch(dt, obj, &Patch::Apply(&*intent), pp).await
    }
}
