//! [`Writer`]: the one write path of the client, generic over where a write lands — the
//! object itself or one of its subresources — as controller-runtime's `client.Writer` and
//! `SubResourceWriter` are one REST client underneath.
//!
//! The client's own writes (`write`: create, update, patch, apply), the status writer
//! ([`Client::status`], the subresource `status` with the object as its body: a [`Writer`]
//! itself) and the subresource client ([`SubResourceClient`](super::SubResourceClient), any
//! subresource with a body of its own) each pick a [`Writer`] and hand it the body; the
//! writer builds the request (kube's request builder), applies the client-wide options
//! (`super::options`) and names the verb in errors: `update` on the object, `status update`
//! on its status, `scale patch` on its scale.
//!
//! [`ObjectWriter`] is the trait every writer implements (Go's `client.Writer` /
//! `SubResourceWriter` interfaces): [`Client`], the namespaced client, the status
//! [`Writer`] say where a write lands; the verbs are its provided methods.
//!
//! A write through a read-your-own-writes client is remembered (`super::consistency`)
//! once the server answered it, so that later cached reads wait to see it.
//!
//! It also holds what every write shares: [`WritableWith`] / [`Writable`] (what can be
//! written), the [`Target`] of a write and its [`body`] (a `DynamicObject` gets its
//! `apiVersion`/`kind` from its `ApiResource`).

use std::any::TypeId;
use std::borrow::Cow;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Client, Error, WriteOptions};
use crate::cache::{CacheObject, Scoped, gvk_string, object_key};

/// A resource the client can write given its dynamic type: typed resources (`()`),
/// `DynamicObject` (`ApiResource`).
pub trait WritableWith: CacheObject + Serialize + DeserializeOwned {}
impl<K: CacheObject + Serialize + DeserializeOwned> WritableWith for K {}

/// A typed resource the client can write (no dynamic type needed).
pub trait Writable: WritableWith<DynamicType = ()> {}
impl<K: WritableWith<DynamicType = ()>> Writable for K {}

/// The target of one write: the `Api` for the object's namespace, its name, and the
/// `apiVersion/Kind` and `namespace/name` that name it in errors.
pub(crate) struct Target<K> {
    pub(crate) api: Api<K>,
    pub(crate) name: String,
    kind: String,
    key: String,
}

impl<K: CacheObject> Target<K> {
    pub(crate) fn of(kube: &kube::Client, dt: &K::DynamicType, obj: &K) -> Self {
        let m = obj.meta();
        let name = m.name.as_deref().unwrap_or_default();
        Self::at(kube, dt, m.namespace.as_deref(), name)
    }

    /// The object `name` in `namespace` (`None` or empty: cluster-scoped).
    pub(crate) fn at(
        kube: &kube::Client,
        dt: &K::DynamicType,
        namespace: Option<&str>,
        name: &str,
    ) -> Self {
        let ns = namespace.filter(|n| !n.is_empty());
        Self {
            api: <K::Scope as Scoped>::api::<K>(kube.clone(), ns, dt),
            key: object_key(ns, name),
            name: name.to_string(),
            kind: gvk_string::<K>(dt),
        }
    }

    /// A client error for `verb` on this target.
    pub(crate) fn fail(&self, verb: &str, e: impl Into<super::Source>) -> Error {
        Error::new(verb, self.kind.clone(), self.key.clone(), e)
    }
}

/// `obj` as the body of a write: a typed resource as is (its serializer writes
/// `apiVersion`/`kind`); a dynamic one with `apiVersion`/`kind` from `dt` when it lacks
/// them ([`with_type_meta`]).
///
/// Never decoded back into `K`: a decode here would compile `K`'s whole `Deserialize`
/// through `serde_json::Value` in every operator crate (for a Deployment, ~40 types'
/// visitors), though typed resources never take that path.
pub(crate) fn body<'a, K: WritableWith>(
    dt: &K::DynamicType,
    obj: &'a K,
) -> Result<Body<'a, K>, serde_json::Error> {
    if TypeId::of::<K::DynamicType>() == TypeId::of::<()>() {
        return Ok(Body::Object(obj));
    }
    let bytes = serde_json::to_vec(obj)?;
    Ok(
        match with_type_meta(&bytes, &K::api_version(dt), &K::kind(dt))? {
            Some(v) => Body::Json(v),
            None => Body::Object(obj),
        },
    )
}

/// The JSON bytes of [`body`].
pub(crate) fn body_bytes<K: WritableWith>(
    dt: &K::DynamicType,
    obj: &K,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&body(dt, obj)?)
}

/// What [`body`] sends: the object as it is, or its JSON with `apiVersion` and `kind`
/// added.
#[derive(Debug)]
pub(crate) enum Body<'a, K> {
    /// The object, serialized as it is.
    Object(&'a K),
    /// The object's JSON with its `apiVersion` and `kind`.
    Json(serde_json::Value),
}

impl<K: Serialize> Serialize for Body<'_, K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Object(obj) => obj.serialize(s),
            Self::Json(v) => v.serialize(s),
        }
    }
}

/// The object of JSON `bytes` with `apiVersion` and `kind` set to these when it lacks
/// either; `None` when it has both or is not a JSON object.
fn with_type_meta(
    bytes: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<Option<serde_json::Value>, serde_json::Error> {
    let mut v: serde_json::Value = serde_json::from_slice(bytes)?;
    let Some(map) = v.as_object_mut() else {
        return Ok(None);
    };
    if map.contains_key("apiVersion") && map.contains_key("kind") {
        return Ok(None);
    }
    map.insert("apiVersion".into(), api_version.into());
    map.insert("kind".into(), kind.into());
    Ok(Some(v))
}

/// Patch parameters for a server-side apply.
pub(crate) fn apply_params(field_manager: Option<&str>, force: bool) -> PatchParams {
    PatchParams {
        field_manager: field_manager.map(str::to_string),
        force,
        ..Default::default()
    }
}

/// A write with a body: a create (POST) or an update (PUT).
#[derive(Clone, Copy, Debug)]
pub(crate) enum BodyWrite {
    /// POST.
    Create,
    /// PUT.
    Update,
}

/// Writes to the objects it is given, or to the subresource `sub` of each
/// (controller-runtime's `client.Writer` underneath the client's own writes, and its
/// `SubResourceWriter`: [`Client::status`] returns the one aimed at `status`, which takes the
/// object itself as the body). Its verbs are those of [`ObjectWriter`], as the client's
/// own writes are.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
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

    /// Sends `data` (the JSON of the body, or why it has none) with `how`: a new object
    /// POSTed to its collection or a body to the object's subresource (an `Eviction`), or a
    /// PUT of the object or of its subresource.
    pub(crate) async fn send<K: WritableWith, S: DeserializeOwned>(
        &self,
        how: BodyWrite,
        dt: &K::DynamicType,
        obj: &K,
        data: serde_json::Result<Vec<u8>>,
        opts: &WriteOptions,
    ) -> Result<S, Error> {
        let t = Target::of(self.client.kube_client(), dt, obj);
        let verb = self.verb(match how {
            BodyWrite::Create => "create",
            BodyWrite::Update => "update",
        });
        let data = data.map_err(|e| t.fail(&verb, e))?;
        let req = Request::new(t.api.resource_url());
        let name = t.name.as_str();
        self.client
            .send_json(opts, |pp| match (how, self.sub) {
                (BodyWrite::Create, Some(sub)) => req.create_subresource(sub, name, pp, data),
                (BodyWrite::Create, None) => req.create(pp, data),
                (BodyWrite::Update, Some(sub)) => req.replace_subresource(sub, name, pp, data),
                (BodyWrite::Update, None) => req.replace(name, pp, data),
            })
            .await
            .map_err(|e| t.fail(&verb, e))
    }

    /// Patches the object `obj` names (metadata-only for a `PartialObjectMeta`, as kube's
    /// `Api::patch`), or its subresource, answering with an `S`; `pp` completed with the
    /// client-wide options.
    pub(crate) async fn patch_as<K, P, S>(
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
        self.patch_to(Target::of(self.client.kube_client(), dt, obj), patch, pp)
            .await
    }

    /// The client this writer writes through.
    pub(crate) fn client(&self) -> &'a Client {
        self.client
    }

    /// [`patch_as`](Self::patch_as) of the object `t` names.
    pub(crate) async fn patch_to<K, P, S>(
        &self,
        t: Target<K>,
        patch: &Patch<P>,
        pp: PatchParams,
    ) -> Result<S, Error>
    where
        K: WritableWith,
        P: Serialize + std::fmt::Debug,
        S: DeserializeOwned,
    {
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
}

/// Writes objects: controller-runtime's `client.Writer` on [`Client`] and
/// [`NamespacedClient`](super::NamespacedClient), its `SubResourceWriter` on the status
/// [`Writer`]. An implementation says only where a write lands ([`target`](Self::target));
/// every verb, in its typed form and its `*_with(dt, ..)` form for `DynamicObject`, is
/// provided on top of it. Creates and updates return a [`PendingWrite`] that takes
/// per-call options and is sent when awaited; patches take theirs in `PatchParams`.
pub trait ObjectWriter: Sync {
    /// Where the `verb` of `obj` (of dynamic type `dt`) lands: the [`Writer`] that sends
    /// it and the object as sent (a namespaced client fills in its namespace, or refuses
    /// an object from another one).
    fn target<'a, K: WritableWith>(
        &'a self,
        dt: &K::DynamicType,
        verb: &'static str,
        obj: &'a K,
    ) -> Result<(Writer<'a>, Cow<'a, K>), Error>;

    /// Creates `obj` in its namespace (or POSTs it to its subresource); awaited, returns
    /// the stored object (`client.create(&obj).dry_run_all().await`).
    fn create<'a, K: Writable>(&'a self, obj: &'a K) -> PendingWrite<'a, K> {
        self.create_with(&(), obj)
    }

    /// Creates `obj` of dynamic type `dt` (a `DynamicObject` and its `ApiResource`).
    fn create_with<'a, K: WritableWith>(
        &'a self,
        dt: &'a K::DynamicType,
        obj: &'a K,
    ) -> PendingWrite<'a, K> {
        PendingWrite::new(BodyWrite::Create, dt, self.target(dt, "create", obj))
    }

    /// Replaces `obj` (or its subresource, with `obj` as the body); its
    /// `resourceVersion` guards against lost updates (a stale one fails with 409
    /// Conflict). Awaited, returns the stored object.
    fn update<'a, K: Writable>(&'a self, obj: &'a K) -> PendingWrite<'a, K> {
        self.update_with(&(), obj)
    }

    /// Replaces `obj` of dynamic type `dt`, or its subresource.
    fn update_with<'a, K: WritableWith>(
        &'a self,
        dt: &'a K::DynamicType,
        obj: &'a K,
    ) -> PendingWrite<'a, K> {
        PendingWrite::new(BodyWrite::Update, dt, self.target(dt, "update", obj))
    }

    /// Patches the object `obj` names (or its subresource) with `patch` (merge, JSON,
    /// strategic or apply; `pp` carries the field manager, force and dry-run).
    fn patch<'a, K: Writable, P: Serialize + std::fmt::Debug + Sync>(
        &'a self,
        obj: &'a K,
        patch: &'a Patch<P>,
        pp: PatchParams,
    ) -> impl Future<Output = Result<K, Error>> + Send + 'a {
        self.patch_with(&(), obj, patch, pp)
    }

    /// Patches the object of dynamic type `dt` that `obj` names, or its subresource.
    fn patch_with<'a, K: WritableWith, P: Serialize + std::fmt::Debug + Sync>(
        &'a self,
        dt: &'a K::DynamicType,
        obj: &'a K,
        patch: &'a Patch<P>,
        pp: PatchParams,
    ) -> impl Future<Output = Result<K, Error>> + Send + 'a {
        async move {
            let (writer, obj) = self.target(dt, "patch", obj)?;
            let dry_run = pp.dry_run;
            let written = writer.patch_as(dt, &*obj, patch, pp).await?;
            writer.client.remember_write(dt, &written, dry_run);
            Ok(written)
        }
    }

    /// Server-side applies `obj` (or its subresource) as `field_manager` (falling back
    /// to the client's field owner), taking over conflicting fields when `force` is set.
    fn apply<'a, K: Writable>(
        &'a self,
        obj: &'a K,
        field_manager: Option<&'a str>,
        force: bool,
    ) -> impl Future<Output = Result<K, Error>> + Send + 'a {
        self.apply_with(&(), obj, field_manager, force)
    }

    /// Server-side applies `obj` of dynamic type `dt` (as its own intent).
    fn apply_with<'a, K: WritableWith>(
        &'a self,
        dt: &'a K::DynamicType,
        obj: &'a K,
        field_manager: Option<&'a str>,
        force: bool,
    ) -> impl Future<Output = Result<K, Error>> + Send + 'a {
        async move {
            let (writer, obj) = self.target(dt, "patch", obj)?;
            let intent = body(dt, &*obj).map_err(|e| {
                Target::of(writer.client.kube_client(), dt, &*obj).fail(&writer.verb("patch"), e)
            })?;
            let pp = apply_params(field_manager, force);
            let written = writer
                .patch_as(dt, &*obj, &Patch::Apply(&intent), pp)
                .await?;
            writer.client.remember_write(dt, &written, false);
            Ok(written)
        }
    }
}

impl ObjectWriter for Writer<'_> {
    fn target<'a, K: WritableWith>(
        &'a self,
        _dt: &K::DynamicType,
        _verb: &'static str,
        obj: &'a K,
    ) -> Result<(Writer<'a>, Cow<'a, K>), Error> {
        Ok((*self, Cow::Borrowed(obj)))
    }
}

impl ObjectWriter for Client {
    fn target<'a, K: WritableWith>(
        &'a self,
        _dt: &K::DynamicType,
        _verb: &'static str,
        obj: &'a K,
    ) -> Result<(Writer<'a>, Cow<'a, K>), Error> {
        Ok((Writer::object(self), Cow::Borrowed(obj)))
    }
}

/// A create or update on its way (controller-runtime's `Create` / `Update` and their
/// `CreateOption`s / `UpdateOption`s): per-call options are set on it, and it is sent when
/// awaited — `client.create(&obj).await`, `client.create(&obj).dry_run_all().await`,
/// `client.status().update(&obj).opts(&opts).await`. What [`ObjectWriter::create`] and
/// [`ObjectWriter::update`] and their `*_with` forms return, on every writer.
#[must_use = "a write is sent only when awaited"]
pub struct PendingWrite<'a, K: WritableWith> {
    how: BodyWrite,
    dt: &'a K::DynamicType,
    /// The writer and object to send, or why it may not be (a namespaced client's refusal).
    target: Result<(Writer<'a>, Cow<'a, K>), Error>,
    opts: WriteOptions,
}

impl<'a, K: WritableWith> PendingWrite<'a, K> {
    /// `how` of an object (of dynamic type `dt`) at its `target`, with no per-call options.
    pub(crate) fn new(
        how: BodyWrite,
        dt: &'a K::DynamicType,
        target: Result<(Writer<'a>, Cow<'a, K>), Error>,
    ) -> Self {
        let opts = WriteOptions::new();
        Self {
            how,
            dt,
            target,
            opts,
        }
    }

    /// Sends the write with `opts` (dry-run, field manager, field validation; unset ones
    /// fall back to the client's).
    pub fn opts(mut self, opts: &WriteOptions) -> Self {
        self.opts = opts.clone();
        self
    }

    /// Stores nothing (`dryRun=All`): the server answers with what it would store.
    pub fn dry_run_all(mut self) -> Self {
        self.opts.dry_run = true;
        self
    }
}

impl<K: WritableWith> std::fmt::Debug for PendingWrite<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingWrite")
            .field("how", &self.how)
            .field("sub", &self.target.as_ref().ok().and_then(|(w, _)| w.sub))
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl<'a, K: WritableWith> IntoFuture for PendingWrite<'a, K> {
    type Output = Result<K, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<K, Error>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (writer, obj) = self.target?;
            let data = body_bytes(self.dt, &*obj);
            let written: K = writer
                .send(self.how, self.dt, &*obj, data, &self.opts)
                .await?;
            writer
                .client
                .remember_write(self.dt, &written, self.opts.dry_run);
            Ok(written)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind, TypeMeta};

    fn gizmos() -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("x.io", "v2", "Gizmo"), "gizmos")
    }

    #[test]
    fn a_dynamic_body_gets_its_type_from_the_api_resource() {
        let ar = gizmos();
        let mut obj = DynamicObject::new("g", &ar);
        obj.types = None;
        let sent: DynamicObject = serde_json::from_slice(&body_bytes(&ar, &obj).unwrap()).unwrap();
        let want = TypeMeta {
            api_version: "x.io/v2".into(),
            kind: "Gizmo".into(),
        };
        assert_eq!(sent.types.as_ref(), Some(&want));
        assert_eq!(sent.metadata, obj.metadata);
        assert!(matches!(body(&ar, &obj).unwrap(), Body::Json(_)));
    }

    #[test]
    fn bodies_that_carry_their_type_are_sent_as_they_are() {
        let ar = gizmos();
        let obj = DynamicObject::new("g", &ar);
        assert!(matches!(body(&ar, &obj).unwrap(), Body::Object(_)));
        let cm = ConfigMap::default();
        assert!(matches!(body(&(), &cm).unwrap(), Body::Object(_)));
    }
}
