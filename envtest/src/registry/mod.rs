//! Layer 2, the registry (kube-apiserver's `registry/{generic,rest}` plus
//! apiextensions-apiserver): what is served and how an object is written. It may call `api`,
//! `storage` and `webhook_client` (conversion webhooks), never the HTTP side, admission or the
//! controllers.
//!
//! * this file: the table of served resource types, one immutable [`Snapshot`] behind a lock
//!   that is swapped whole on every change, so routing, discovery, OpenAPI and the store always
//!   read one consistent table — including the webhook conversions of CRDs, swapped together
//!   with the CRD's types. Built-ins ([`builtins`]) are registered at start, CRDs ([`crd`]) add
//!   and remove theirs at run time.
//! * [`context`]: [`context::Apiserver`], what the registry works on (types, store, options,
//!   observers); the layers above take it by reference.
//! * [`objects`]: store keys, type checks and the served form of objects.
//! * [`rest`]: the generic create / update / delete of one object, with the per-kind rules of
//!   [`strategy`] and [`crd`], the managedFields of [`fieldmanager`] and the structural schemas
//!   of [`schema`] (with its [`format`] checks and the [`ratchet`] of its errors on update);
//!   [`hooks`] runs the write observers (the controllers) after each write.
//! * [`defaults`]: built-in defaulting and the strategies' create-time status
//!   (`PrepareForCreate`), Service cluster IP and node port allocation.
//! * [`conversion`]: CRD webhook conversion (data, validation, the conversion call).
//! * `without_cel` (built without the `cel` feature): the 422 for a CRD with CEL rules and for
//!   ValidatingAdmissionPolicies, which need it.
pub(crate) mod builtins;
pub(crate) mod context;
pub(crate) mod conversion;
pub(crate) mod crd;
pub(crate) mod defaults;
pub(crate) mod fieldmanager;
pub(crate) mod format;
pub(crate) mod hooks;
pub(crate) mod objects;
pub(crate) mod ratchet;
pub(crate) mod rest;
pub(crate) mod schema;
pub(crate) mod strategy;
#[cfg(not(feature = "cel"))]
pub(crate) mod without_cel;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use crate::api::status::ApiError;
use crate::api::validation::FieldCause;

use crate::storage::FastMap;
pub(crate) use crate::storage::StoreKey;
pub(crate) use conversion::Conversion;

/// The `/scale` subresource of a custom resource (JSON paths like `.spec.replicas`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScaleSpec {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// A built-in served as a view of another resource's objects: events.k8s.io/v1 Events are
/// stored as core/v1 Events, as upstream does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View {
    /// The (group, plural) whose collection holds the objects.
    pub store: (&'static str, &'static str),
    /// Stored form → this resource's form (apiVersion and kind included).
    pub to_view: fn(&mut Value),
    /// This resource's form → stored form.
    pub from_view: fn(&mut Value),
}

/// One served resource at one group/version.
#[derive(Debug, Clone)]
pub(crate) struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource.
    pub status: bool,
    pub scale: Option<ScaleSpec>,
    /// `metadata.generation` is maintained.
    pub generation: bool,
    /// A custom resource (served from a CRD); holds the CRD's name.
    pub crd: Option<String>,
    /// The CRD version's `openAPIV3Schema`.
    pub schema: Option<Arc<Value>>,
    /// The schema has CEL rules (`x-kubernetes-validations` on some node): found once, when the
    /// CRD version's types are built ([`crd::after_commit`] builds them anew on every write of
    /// the CRD), so a write of an object whose schema has none skips walking the schema for them.
    pub rules: bool,
    /// The apiVersion objects are stored at.
    pub storage_version: String,
    /// Only `create` (tokenreviews, subjectaccessreviews): nothing is stored.
    pub virtual_create: bool,
    /// Field selector fields besides metadata.name / metadata.namespace.
    pub fields: Vec<String>,
    /// Built-ins: the schema name of the Go type a body decodes into
    /// (`io.k8s.api.core.v1.Pod`); [`builtins::decode::check`] type-checks bodies against it
    /// (type errors become 400s).
    pub decode: Option<String>,
    /// Served as a view of another resource's collection.
    pub view: Option<View>,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn store_key(&self) -> StoreKey {
        match &self.view {
            Some(v) => crate::storage::store_key(v.store.0, v.store.1),
            None => crate::storage::store_key(&self.group, &self.plural),
        }
    }

    /// Whether `av` is this type's apiVersion ([`Self::api_version`], without building it).
    pub fn is_api_version(&self, av: &str) -> bool {
        if self.group.is_empty() {
            return av == self.version;
        }
        av.strip_prefix(self.group.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(self.version.as_str())
    }

    /// Stored objects must be reshaped before they are served at this resource.
    pub fn rewrites(&self) -> bool {
        self.view.is_some() || !self.is_api_version(&self.storage_version)
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        if self.virtual_create {
            return vec!["create"];
        }
        if builtins::read_only(self) {
            return vec!["get", "list"];
        }
        let mut v = vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ];
        if self.is("", "namespaces") {
            v.retain(|x| *x != "deletecollection");
        }
        v
    }

    /// `Ok` when `causes` is empty, else the 422 `Invalid` of the object `name` of this type.
    pub fn invalid_if_any(&self, name: &str, causes: &[FieldCause]) -> Result<(), ApiError> {
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(&self.group, &self.kind, name, causes))
    }

    /// This is the built-in resource `group`/`plural` (a custom resource never is).
    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.group == group && self.plural == plural && self.crd.is_none()
    }

    /// The subresources this type serves, in discovery's order: `status` and `scale` as
    /// declared, `pods/ephemeralcontainers`, `pods/eviction`, `serviceaccounts/token` and
    /// `certificatesigningrequests/approval`.
    pub fn subresources(&self) -> impl Iterator<Item = &'static Subresource> + '_ {
        let pods = self.is("", "pods");
        let has = [
            self.status,
            self.scale.is_some(),
            pods,
            pods,
            self.is("", "serviceaccounts"),
            self.is("certificates.k8s.io", "certificatesigningrequests"),
        ];
        [
            &STATUS,
            &SCALE,
            &EPHEMERAL_CONTAINERS,
            &EVICTION,
            &TOKEN,
            &APPROVAL,
        ]
        .into_iter()
        .zip(has)
        .filter_map(|(s, has)| has.then_some(s))
    }
}

/// A subresource a type serves beside its objects: discovery lists it, the handlers route to
/// it (kube-apiserver's `APIResource` entries named `<plural>/<subresource>`).
#[derive(Debug)]
pub(crate) struct Subresource {
    /// The path segment after the object's name.
    pub name: &'static str,
    /// The (group, version, kind) its requests and responses carry; `None` for the type's own.
    pub kind: Option<(&'static str, &'static str, &'static str)>,
    pub verbs: &'static [&'static str],
}

const STATUS: Subresource = Subresource {
    name: "status",
    kind: None,
    verbs: &["get", "patch", "update"],
};
const SCALE: Subresource = Subresource {
    name: "scale",
    kind: Some(("autoscaling", "v1", "Scale")),
    verbs: &["get", "patch", "update"],
};
/// A Pod's ephemeral containers, written under their own rules (`strategy::subresource_rules`).
const EPHEMERAL_CONTAINERS: Subresource = Subresource {
    name: "ephemeralcontainers",
    kind: None,
    verbs: &["get", "patch", "update"],
};
/// A CSR's approval conditions, written under their own rules (`strategy::subresource_rules`).
const APPROVAL: Subresource = Subresource {
    name: "approval",
    kind: None,
    verbs: &["get", "patch", "update"],
};
const EVICTION: Subresource = Subresource {
    name: "eviction",
    kind: Some(("policy", "v1", "Eviction")),
    verbs: &["create"],
};
const TOKEN: Subresource = Subresource {
    name: "token",
    kind: Some(("authentication.k8s.io", "v1", "TokenRequest")),
    verbs: &["create"],
};

/// An immutable view of every served type.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub types: Vec<Arc<ResourceType>>,
    /// Each type by group, then version, then plural: looked up on every request without
    /// copying the three into a key.
    by_gvr: FastMap<String, FastMap<String, FastMap<String, Arc<ResourceType>>>>,
    /// The served versions of each (group, plural), in registration order.
    by_gr: HashMap<(String, String), Vec<Arc<ResourceType>>>,
    /// Bumped on every change (part of the OpenAPI hashes).
    pub revision: u64,
    /// Webhook conversions of CRDs with `conversion.strategy: Webhook`, by CRD name.
    pub conversions: HashMap<String, Arc<Conversion>>,
}

impl Snapshot {
    fn build(
        types: Vec<Arc<ResourceType>>,
        revision: u64,
        conversions: HashMap<String, Arc<Conversion>>,
    ) -> Self {
        let mut by_gvr: FastMap<String, FastMap<String, FastMap<String, Arc<ResourceType>>>> =
            FastMap::default();
        for t in &types {
            by_gvr
                .entry(t.group.clone())
                .or_default()
                .entry(t.version.clone())
                .or_default()
                .insert(t.plural.clone(), t.clone());
        }
        let mut by_gr: HashMap<(String, String), Vec<Arc<ResourceType>>> = HashMap::new();
        for t in &types {
            by_gr
                .entry((t.group.clone(), t.plural.clone()))
                .or_default()
                .push(t.clone());
        }
        Snapshot {
            types,
            by_gvr,
            by_gr,
            revision,
            conversions,
        }
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceType>> {
        self.by_gvr.get(group)?.get(version)?.get(plural)
    }

    /// The webhook conversion of a custom resource type, if its CRD has one.
    pub fn conversion(&self, rt: &ResourceType) -> Option<&Arc<Conversion>> {
        rt.crd.as_ref().and_then(|c| self.conversions.get(c))
    }

    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.by_gvr
            .get(group)
            .is_some_and(|versions| versions.contains_key(version))
    }

    /// Groups in registration order, each with its versions in preference order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, vs)) => {
                    if !vs.contains(&t.version) {
                        vs.push(t.version.clone());
                    }
                }
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        out
    }

    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceType>> {
        self.types
            .iter()
            .filter(move |t| t.group == group && t.version == version)
    }
}

/// The shared, atomically replaced table of resource types.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    current: RwLock<Arc<Snapshot>>,
}

impl Registry {
    pub fn new(types: Vec<ResourceType>) -> Self {
        let types = types.into_iter().map(Arc::new).collect();
        Registry {
            current: RwLock::new(Arc::new(Snapshot::build(types, 1, HashMap::new()))),
        }
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().clone()
    }

    /// The served versions of `rt`'s resource, `rt` included (more than one for multi-version
    /// custom resources).
    pub fn siblings(&self, rt: &ResourceType) -> Vec<Arc<ResourceType>> {
        self.snapshot()
            .by_gr
            .get(&(rt.group.clone(), rt.plural.clone()))
            .cloned()
            .unwrap_or_default()
    }

    /// One type per stored collection (views and virtual types skipped).
    pub fn collections(&self) -> Vec<Arc<ResourceType>> {
        let snap = self.snapshot();
        let mut out: Vec<Arc<ResourceType>> = Vec::new();
        for t in &snap.types {
            if t.virtual_create || t.view.is_some() {
                continue;
            }
            if !out.iter().any(|o| o.store_key() == t.store_key()) {
                out.push(t.clone());
            }
        }
        out
    }

    /// Replace every type served for CRD `crd` by `types` (empty = remove it), and its
    /// webhook conversion by `conversion`.
    pub fn set_crd(&self, crd: &str, types: Vec<ResourceType>, conversion: Option<Conversion>) {
        let mut cur = self.current.write();
        let mut all: Vec<Arc<ResourceType>> = cur
            .types
            .iter()
            .filter(|t| t.crd.as_deref() != Some(crd))
            .cloned()
            .collect();
        all.extend(types.into_iter().map(Arc::new));
        let rev = cur.revision + 1;
        let mut conversions = cur.conversions.clone();
        match conversion {
            Some(c) => conversions.insert(crd.to_string(), Arc::new(c)),
            None => conversions.remove(crd),
        };
        *cur = Arc::new(Snapshot::build(all, rev, conversions));
    }
}
