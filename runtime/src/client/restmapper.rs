//! [`RestMapper`]: which resource serves a kind, found through discovery (controller-
//! runtime's `apiutil.NewDynamicRESTMapper`, the lazy, caching mapper every manager
//! has). A GVK resolves to kube's `ApiResource` (what `DynamicObject` reads and writes
//! need: plural, apiVersion) and `ApiCapabilities` (scope, subresources, verbs).
//!
//! Discovery documents are fetched per group version, on first use, and kept: later
//! lookups in that group version make no request. A miss — a kind the cached document
//! does not list, e.g. a CRD installed since — refetches that group version once
//! before failing with [`RestMapperError::NoKindMatch`], so new CRDs are found without
//! a restart. [`RestMapper::reset`] forgets everything. The client (`super`) and the
//! builder's dynamic watches use `ApiResource`s this mapper resolves.

use std::collections::HashMap;
use std::sync::Arc;

use kube::core::{ApiResource, GroupVersion, GroupVersionKind};
use kube::discovery::{self, ApiCapabilities, Scope};
use parking_lot::RwLock;

/// The resources of one group version, as discovery lists them.
type Resources = Arc<Vec<(ApiResource, ApiCapabilities)>>;

/// Why a kind could not be mapped.
#[derive(Debug, thiserror::Error)]
pub enum RestMapperError {
    /// The server serves no such kind (Go's `meta.NoKindMatchError`).
    #[error("no matches for kind {kind:?} in version {group_version:?}")]
    NoKindMatch {
        /// The kind asked for.
        kind: String,
        /// `group/version` (or `version` for the core group).
        group_version: String,
    },
    /// Discovery failed.
    #[error("discovery failed: {0}")]
    Discovery(#[source] kube::Error),
}

impl RestMapperError {
    /// Whether the kind is not served (as opposed to discovery failing).
    pub fn is_no_match(&self) -> bool {
        matches!(self, RestMapperError::NoKindMatch { .. })
    }
}

/// Maps kinds to resources through discovery, caching per group version. Cheap to
/// clone: clones share the cache.
#[derive(Clone)]
pub struct RestMapper {
    kube: kube::Client,
    versions: Arc<RwLock<HashMap<GroupVersion, Resources>>>,
}

impl std::fmt::Debug for RestMapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached: Vec<String> = self
            .versions
            .read()
            .keys()
            .map(|gv| gv.api_version())
            .collect();
        f.debug_struct("RestMapper")
            .field("cached", &cached)
            .finish_non_exhaustive()
    }
}

impl RestMapper {
    /// A mapper discovering through `kube`; nothing is fetched until first use.
    pub fn new(kube: kube::Client) -> Self {
        Self {
            kube,
            versions: Arc::default(),
        }
    }

    /// The resource serving `gvk` and its capabilities (Go's `RESTMapping(gk,
    /// version)`).
    pub async fn resource_for(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<(ApiResource, ApiCapabilities), RestMapperError> {
        let gv = GroupVersion::gv(&gvk.group, &gvk.version);
        if let Some(hit) = self.cached(&gv, &gvk.kind) {
            return Ok(hit);
        }
        let resources = self.refresh(&gv).await?;
        find(&resources, &gvk.kind).ok_or_else(|| RestMapperError::NoKindMatch {
            kind: gvk.kind.clone(),
            group_version: gv.api_version(),
        })
    }

    /// The `ApiResource` serving `gvk` (what the `*_with` client calls, `Kind::new_with`
    /// and the builder's `*_dynamic` watches take).
    pub async fn api_resource(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<ApiResource, RestMapperError> {
        self.resource_for(gvk).await.map(|(ar, _)| ar)
    }

    /// Whether `gvk` is namespaced (Go's `apiutil.IsGVKNamespaced`).
    pub async fn is_namespaced(&self, gvk: &GroupVersionKind) -> Result<bool, RestMapperError> {
        let (_, caps) = self.resource_for(gvk).await?;
        Ok(caps.scope == Scope::Namespaced)
    }

    /// Forgets every cached discovery document (Go's `Reset`).
    pub fn reset(&self) {
        self.versions.write().clear();
    }

    fn cached(&self, gv: &GroupVersion, kind: &str) -> Option<(ApiResource, ApiCapabilities)> {
        let versions = self.versions.read();
        find(versions.get(gv)?, kind)
    }

    /// Fetches and caches the discovery document of `gv`.
    async fn refresh(&self, gv: &GroupVersion) -> Result<Resources, RestMapperError> {
        tracing::debug!(group_version = %gv.api_version(), "discovering resources");
        let group = match discovery::pinned_group(&self.kube, gv).await {
            Ok(g) => g,
            Err(kube::Error::Api(s)) if s.is_not_found() => {
                self.versions.write().remove(gv);
                return Ok(Arc::default());
            }
            Err(e) => return Err(RestMapperError::Discovery(e)),
        };
        let resources: Resources = Arc::new(group.versioned_resources(&gv.version));
        self.versions.write().insert(gv.clone(), resources.clone());
        Ok(resources)
    }
}

fn find(resources: &Resources, kind: &str) -> Option<(ApiResource, ApiCapabilities)> {
    resources.iter().find(|(ar, _)| ar.kind == kind).cloned()
}
