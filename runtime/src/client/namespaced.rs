//! [`NamespacedClient`]: a [`Client`] pinned to one namespace (controller-runtime's
//! `client.NewNamespacedClient`). Reads and lists of namespaced types are confined to
//! it; writes fill in an object's empty namespace and refuse one from elsewhere
//! ([`Source::Refused`](super::Source::Refused)), before anything is sent.
//! Cluster-scoped types pass through unchanged. `DynamicObject`s count as namespaced
//! (their `ApiResource` does not say). Everything else — cache,
//! options, status and subresource clients — is the wrapped client's (`super`).

use std::borrow::Cow;
use std::sync::Arc;

use kube::api::DeleteParams;

use super::writer::{ObjectWriter, Writable, WritableWith, Writer};
use super::{Client, Error, Source};
use crate::cache::{CacheObject, ListOptions, Reader, Scoped, gvk_string, object_key, typed_form};

/// A client whose every call happens in one namespace. Cheap to clone.
#[derive(Clone, Debug)]
pub struct NamespacedClient {
    client: Client,
    namespace: String,
}

impl Client {
    /// This client confined to `namespace` (Go's `client.NewNamespacedClient`).
    pub fn namespaced(&self, namespace: impl Into<String>) -> NamespacedClient {
        NamespacedClient {
            client: self.clone(),
            namespace: namespace.into(),
        }
    }
}

impl NamespacedClient {
    /// The namespace every call happens in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The wrapped client (for its status and subresource clients).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `obj` in the client's namespace: as is, with the namespace filled in, or
    /// refused when it names another one.
    pub(super) fn scoped<'a, K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        verb: &str,
        obj: &'a K,
    ) -> Result<Cow<'a, K>, Error> {
        if <K::Scope as Scoped>::CLUSTER {
            return Ok(Cow::Borrowed(obj));
        }
        let m = obj.meta();
        let name = m.name.as_deref().unwrap_or_default();
        match m.namespace.as_deref().unwrap_or_default() {
            ns if ns == self.namespace => Ok(Cow::Borrowed(obj)),
            "" => {
                let mut owned = obj.clone();
                owned.meta_mut().namespace = Some(self.namespace.clone());
                Ok(Cow::Owned(owned))
            }
            other => Err(Error::new(
                verb,
                gvk_string::<K>(dt),
                object_key(Some(other), name),
                Source::Refused(format!(
                    "namespace {other} of the object {name} does not match the namespace {} on the client",
                    self.namespace
                )),
            )),
        }
    }

    typed_form! {
        /// Deletes the object `obj` names in the namespace.
        pub async fn delete<K>(&self, obj: &K, dp: &DeleteParams) -> Result<(), Error> = delete_with
        where K: Writable
    }

    /// Deletes the object of dynamic type `dt` that `obj` names in the namespace.
    pub async fn delete_with<K: WritableWith>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        dp: &DeleteParams,
    ) -> Result<(), Error> {
        let obj = self.scoped(dt, "delete", obj)?;
        self.client.delete_with(dt, &*obj, dp).await
    }
}

impl ObjectWriter for NamespacedClient {
    fn target<'a, K: WritableWith>(
        &'a self,
        dt: &K::DynamicType,
        verb: &'static str,
        obj: &'a K,
    ) -> Result<(Writer<'a>, Cow<'a, K>), Error> {
        let obj = self.scoped(dt, verb, obj)?;
        Ok((Writer::object(&self.client), obj))
    }
}

impl Reader for NamespacedClient {
    type Object<K: CacheObject> = Arc<K>;
    type Error = Error;

    /// The object `name` in the client's namespace: `namespace` must be empty or the
    /// client's (any namespace of a cluster-scoped type is dropped), as in Go's
    /// `namespacedClient.Get`.
    async fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, Error> {
        if <K::Scope as Scoped>::CLUSTER {
            return self.client.get_with::<K>(dt, "", name).await;
        }
        if !namespace.is_empty() && namespace != self.namespace {
            return Err(Error::new(
                "get",
                gvk_string::<K>(dt),
                object_key(Some(namespace), name),
                Source::Refused(format!(
                    "namespace {namespace} of the object {name} does not match the namespace {} on the client",
                    self.namespace
                )),
            ));
        }
        self.client.get_with::<K>(dt, &self.namespace, name).await
    }

    /// Objects in the namespace matching `opts` (whose namespace must be unset or the
    /// client's).
    async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        if <K::Scope as Scoped>::CLUSTER {
            return self.client.list_with::<K>(dt, opts).await;
        }
        match opts.namespace.as_deref() {
            Some(ns) if !ns.is_empty() && ns != self.namespace => Err(Error::new(
                "list",
                gvk_string::<K>(dt),
                ns.to_string(),
                Source::Refused(format!(
                    "cannot list in namespace {ns}: the client is restricted to namespace {}",
                    self.namespace
                )),
            )),
            _ => {
                let opts = opts.clone().in_namespace(self.namespace.clone());
                self.client.list_with::<K>(dt, &opts).await
            }
        }
    }
}
