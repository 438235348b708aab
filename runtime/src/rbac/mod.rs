//! RBAC rules from the code (what kubebuilder's `// +kubebuilder:rbac:...` markers and
//! controller-gen's `rbac` generator do): [`rule`] reads like a marker,
//! [`normalize`] merges and sorts rules exactly as controller-gen does, and
//! [`Manifest`] turns a manager's [`Rules`] into the ServiceAccount, ClusterRole,
//! Role and bindings to deploy it with.
//!
//! The manager (`Manager::rbac_rules`) gathers the rules: get, list,
//! watch on every resource its cache is asked to watch (the builder's `For`, `Owns`,
//! `Watches`, informers got directly), create and patch on `events.k8s.io` Events once
//! a recorder is handed out, Leases for leader election, TokenReviews and
//! SubjectAccessReviews for the secure metrics filter ([`crate::metricsserver::filters`]), and
//! whatever reconcilers declare with `ControllerBuilder::permissions` or
//! `Manager::add_rbac_rules`. Serving webhooks needs no permission: the API server
//! calls them.

mod manifest;
mod normalize;

use std::collections::BTreeMap;

pub use k8s_openapi::api::rbac::v1::PolicyRule;
pub use manifest::{Manifest, Object};
pub use normalize::normalize;

/// One permission, as a kubebuilder marker states it:
/// `+kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list` is
/// `rule().groups(["apps"]).resources(["deployments"]).verbs(["get", "list"])`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// API groups (`""` or `"core"` for the core group).
    pub groups: Vec<String>,
    /// Resources, `resource/subresource` for subresources.
    pub resources: Vec<String>,
    /// Object names the rule is limited to; empty for all.
    pub resource_names: Vec<String>,
    /// Verbs (`"*"` for all).
    pub verbs: Vec<String>,
    /// Non-resource URLs (`/metrics`).
    pub urls: Vec<String>,
    /// The namespace of a Role to put the rule in; `None` for the ClusterRole.
    pub namespace: Option<String>,
}

/// An empty rule to fill in (a `+kubebuilder:rbac` marker).
pub fn rule() -> Rule {
    Rule::default()
}

fn strings<S: Into<String>>(v: impl IntoIterator<Item = S>) -> Vec<String> {
    v.into_iter().map(Into::into).collect()
}

impl Rule {
    /// The API groups (marker `groups=`).
    pub fn groups<S: Into<String>>(mut self, g: impl IntoIterator<Item = S>) -> Self {
        self.groups = strings(g);
        self
    }
    /// The resources (marker `resources=`).
    pub fn resources<S: Into<String>>(mut self, r: impl IntoIterator<Item = S>) -> Self {
        self.resources = strings(r);
        self
    }
    /// The object names (marker `resourceNames=`).
    pub fn resource_names<S: Into<String>>(mut self, n: impl IntoIterator<Item = S>) -> Self {
        self.resource_names = strings(n);
        self
    }
    /// The verbs (marker `verbs=`).
    pub fn verbs<S: Into<String>>(mut self, v: impl IntoIterator<Item = S>) -> Self {
        self.verbs = strings(v);
        self
    }
    /// The non-resource URLs (marker `urls=`).
    pub fn urls<S: Into<String>>(mut self, u: impl IntoIterator<Item = S>) -> Self {
        self.urls = strings(u);
        self
    }
    /// A namespaced Role's rule (marker `namespace=`).
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }
}

impl IntoIterator for Rule {
    type Item = Rule;
    type IntoIter = std::iter::Once<Rule>;
    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self)
    }
}

/// get, list and watch on `resource` of `group`: what watching it through the cache
/// needs.
pub fn watch_rule(group: &str, resource: &str) -> Rule {
    rule()
        .groups([group])
        .resources([resource])
        .verbs(["get", "list", "watch"])
}

/// What the recorder ([`crate::recorder`], `events.k8s.io/v1` Events folded into
/// series) needs.
pub fn events_rule() -> Rule {
    rule()
        .groups(["events.k8s.io"])
        .resources(["events"])
        .verbs(["create", "patch"])
}

/// What the leader elector ([`crate::leaderelection`]: it reads, creates, renews and
/// watches its Lease) needs in the Lease's namespace.
pub fn leader_election_rule() -> Rule {
    rule()
        .groups(["coordination.k8s.io"])
        .resources(["leases"])
        .verbs(["get", "list", "watch", "create", "update"])
}

/// What the secure metrics filter ([`crate::metricsserver::filters`]) needs (kubebuilder's
/// `metrics-auth-role`).
pub fn metrics_auth_rules() -> Vec<Rule> {
    vec![
        rule()
            .groups(["authentication.k8s.io"])
            .resources(["tokenreviews"])
            .verbs(["create"]),
        rule()
            .groups(["authorization.k8s.io"])
            .resources(["subjectaccessreviews"])
            .verbs(["create"]),
    ]
}

/// What a scraper of a secure metrics endpoint needs (kubebuilder's
/// `metrics-reader` ClusterRole).
pub fn metrics_reader_rule() -> Rule {
    rule()
        .urls([crate::metricsserver::METRICS_PATH])
        .verbs(["get"])
}

/// A manager's minimal permissions, normalized (see [`normalize`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rules {
    /// The ClusterRole's rules.
    pub cluster: Vec<PolicyRule>,
    /// Rules for a Role in the leader-election Lease's namespace (empty without
    /// leader election).
    pub leader_election: Vec<PolicyRule>,
    /// Rules for Roles in given namespaces ([`Rule::namespace`]).
    pub namespaced: BTreeMap<String, Vec<PolicyRule>>,
    /// Whether the metrics endpoint is secure: scrapers then need
    /// [`metrics_reader_rule`].
    pub metrics_reader: bool,
}

impl Rules {
    /// Sorts `rules` into the ClusterRole and namespaced Roles and normalizes each.
    pub fn from_rules(rules: &[Rule], leader_election: &[Rule], metrics_reader: bool) -> Self {
        let (cluster, ns): (Vec<&Rule>, Vec<&Rule>) =
            rules.iter().partition(|r| r.namespace.is_none());
        let mut by_ns: BTreeMap<String, Vec<Rule>> = BTreeMap::new();
        for r in ns {
            let key = r.namespace.clone().unwrap_or_default();
            by_ns.entry(key).or_default().push(r.clone());
        }
        let cluster: Vec<Rule> = cluster.into_iter().cloned().collect();
        Self {
            cluster: normalize(&cluster),
            leader_election: normalize(leader_election),
            namespaced: by_ns
                .iter()
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
            metrics_reader,
        }
    }
}
