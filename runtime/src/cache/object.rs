//! What the cache can hold: [`CacheObject`], a resource kube's watcher can stream, and
//! [`Scoped`], which builds the right `Api` for the resource's scope.
//!
//! Every informer (`super::informer`) and every client call is
//! generic over `K: CacheObject`. Typed resources (`ConfigMap`, a `CustomResource`),
//! `DynamicObject` (with an `ApiResource` as its dynamic type) and metadata-only
//! `PartialObjectMeta<K>` all qualify.

use std::fmt::Debug;
use std::hash::Hash;

use kube::Api;
use kube::core::{
    ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope, NamespaceScope,
};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

/// The scope marker of a resource type (`NamespaceResourceScope`,
/// `ClusterResourceScope`, `DynamicResourceScope`), taught to build an `Api`.
pub trait Scoped: 'static {
    /// True for cluster-scoped types: namespace restrictions do not apply to them.
    const CLUSTER: bool;

    /// An `Api` over `ns` (or every namespace / the cluster when `None`).
    fn api<K>(client: Client, ns: Option<&str>, dt: &K::DynamicType) -> Api<K>
    where
        K: Resource<Scope = Self>;
}

/// `Api::all_with`, constrained to `ns` when given.
fn constrained<K>(client: Client, ns: Option<&str>, dt: &K::DynamicType) -> Api<K>
where
    K: Resource<Scope: NamespaceScope>,
{
    let api = Api::all_with(client, dt);
    match ns {
        Some(ns) => api.constrain(ns),
        None => api,
    }
}

impl Scoped for NamespaceResourceScope {
    const CLUSTER: bool = false;
    fn api<K>(client: Client, ns: Option<&str>, dt: &K::DynamicType) -> Api<K>
    where
        K: Resource<Scope = Self>,
    {
        constrained(client, ns, dt)
    }
}

impl Scoped for DynamicResourceScope {
    const CLUSTER: bool = false;
    fn api<K>(client: Client, ns: Option<&str>, dt: &K::DynamicType) -> Api<K>
    where
        K: Resource<Scope = Self>,
    {
        constrained(client, ns, dt)
    }
}

impl Scoped for ClusterResourceScope {
    const CLUSTER: bool = true;
    fn api<K>(client: Client, _ns: Option<&str>, dt: &K::DynamicType) -> Api<K>
    where
        K: Resource<Scope = Self>,
    {
        Api::all_with(client, dt)
    }
}

/// A resource type the cache can watch and store.
///
/// Implemented for every `K` that kube's watcher accepts whose dynamic type can key a
/// map: typed resources (`DynamicType = ()`), `DynamicObject` (`ApiResource`) and
/// `PartialObjectMeta<K>`.
pub trait CacheObject:
    Resource<DynamicType: Clone + Eq + Hash + Debug + Send + Sync + 'static, Scope: Scoped>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> CacheObject for K where
    K: Resource<DynamicType: Clone + Eq + Hash + Debug + Send + Sync + 'static, Scope: Scoped>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// The store key of an object: `namespace/name`, or `name` when cluster-scoped
/// (client-go's `MetaNamespaceKeyFunc`).
pub fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        // Built by hand, not with `format!`: the informer keys every object it stores and
        // each cached read keys its request (the formatting machinery was ~1 % of a
        // 100,000-object start).
        Some(ns) if !ns.is_empty() => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_string(),
    }
}

/// `apiVersion/kind` (or `apiVersion/kind` of the dynamic type) for logs and errors.
pub fn gvk_string<K: Resource>(dt: &K::DynamicType) -> String {
    format!("{}/{}", K::api_version(dt), K::kind(dt))
}

/// Writes the typed form of a `*_with` method: the same call with the dynamic type `()`,
/// for resources whose type is known at compile time (`ConfigMap`, a `CustomResource`),
/// so that each reader and writer states once what its typed forms are. The dynamic form
/// (`get_with(&api_resource, ..)`) serves `DynamicObject` and friends.
///
/// `typed_form! { /// doc  pub async fn get<K>(&self, name: &str) -> R = get_with where K: .. }`
/// writes `pub async fn get<K>(&self, name: &str) -> R where K: .. { self.get_with::<K>(&(), name).await }`.
macro_rules! typed_form {
    ($(#[$doc:meta])* $vis:vis async fn $name:ident<$($g:ident),+>(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty
        = $with:ident where $($bound:tt)+) => {
        $(#[$doc])*
        $vis async fn $name<$($g),+>(&self $(, $arg: $ty)*) -> $ret
        where
            $($bound)+
        {
            self.$with::<$($g),+>(&() $(, $arg)*).await
        }
    };
}
pub(crate) use typed_form;

#[cfg(test)]
mod tests {
    use super::object_key;

    #[test]
    fn keys_are_client_go_s_namespace_slash_name() {
        assert_eq!(object_key(Some("team-a"), "web"), "team-a/web");
        assert_eq!(object_key(Some(""), "node-1"), "node-1");
        assert_eq!(object_key(None, "node-1"), "node-1");
        assert_eq!(object_key(Some("ns"), ""), "ns/");
    }
}
