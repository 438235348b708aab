//! The shard-ownership checker: under object-level sharding (ctrl's `sharding`, upstream's
//! kubernetes-controller-sharding) each replica is a shard that may write only the objects
//! labelled with its name, and this checker fails a run when one writes another's.
//!
//! [`Simulation::check_shards`] names the shard label and the ring's resources;
//! [`Replica::shard`] says which shard a replica is. Every successful write by a shard (not a
//! create: the object does not exist yet) to an existing object of those resources is checked
//! against the shard label in the store as the write reaches the server — the object's own,
//! or for an object with a controller its controller's (the ring hashes a controlled object by
//! its controller and moves the two together) — naming another shard, or none (the object was
//! let go), is a violation. The sharder writes labels of
//! objects it does not own — that is its job — so a metadata merge patch by the holder of the
//! sharder's Lease is not checked.

use std::collections::HashMap;

use super::{Replica, Shared, Simulation};

/// What [`Simulation::check_shards`] was told.
#[derive(Clone, Debug, Default)]
pub(super) struct ShardCheck {
    /// The label naming an object's shard.
    label: String,
    /// The ring's resources (plurals: `appservices`, `pods`).
    resources: Vec<String>,
    /// The sharder's leader-election Lease (namespace, name).
    sharder_lease: Option<(String, String)>,
    /// The shard of each replica, by replica name.
    shards: HashMap<String, String>,
}

impl Simulation {
    /// Checks shard ownership from now on (see the module doc): `label` is the shard label
    /// (`shard.alpha.sharding.timebertt.dev/<ring>`), `resources` the plurals of the ring's
    /// objects and of the objects they control, `sharder_lease` the Lease whose holder runs
    /// the sharder, whose label patches are its own to make.
    pub fn check_shards(&self, label: &str, resources: &[&str], sharder_lease: (&str, &str)) {
        let mut check = self.shared.shards.lock();
        check.label = label.to_string();
        check.resources = resources.iter().map(|r| r.to_string()).collect();
        check.sharder_lease = Some((sharder_lease.0.into(), sharder_lease.1.into()));
    }
}

impl Replica {
    /// Tells the shard checker that this replica is shard `id` (every incarnation of it).
    pub fn shard(&self, id: &str) {
        let mut check = self.shared.shards.lock();
        check.shards.insert(self.name.clone(), id.to_string());
    }
}

/// Labels, as stored.
type Labels = std::collections::BTreeMap<String, String>;

/// The object a request path names: (group, version, plural), namespace, name, subresource.
struct Target<'a> {
    gvr: (&'a str, &'a str, &'a str),
    namespace: &'a str,
    name: &'a str,
    subresource: Option<&'a str>,
}

/// Parses `/api/v1/[namespaces/<ns>/]<plural>/<name>[/<sub>]` and the `/apis/<group>/<version>/`
/// equivalent; `None` for a collection (a create) or anything else.
fn target(path: &str) -> Option<Target<'_>> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (*ns, rest),
        _ => ("", rest),
    };
    match rest {
        [plural, name] => Some(Target {
            gvr: (group, version, plural),
            namespace,
            name,
            subresource: None,
        }),
        [plural, name, sub] => Some(Target {
            gvr: (group, version, plural),
            namespace,
            name,
            subresource: Some(sub),
        }),
        _ => None,
    }
}

impl Shared {
    /// The violation a write by `replica` would be, judged before it reaches the server (the
    /// transport reports it only if the write succeeds).
    pub(super) fn shard_violation(
        &self,
        replica: &str,
        method: &http::Method,
        path: &str,
        content_type: Option<&str>,
    ) -> Option<String> {
        let check = self.shards.lock().clone();
        let shard = check.shards.get(replica)?;
        let t = target(path)?;
        if !check.resources.iter().any(|r| r == t.gvr.2) {
            return None;
        }
        let merge = content_type == Some("application/merge-patch+json");
        if *method == http::Method::PATCH && t.subresource.is_none() && merge {
            let sharder = check.sharder_lease.as_ref();
            if sharder.is_some_and(|(ns, name)| self.holder(ns, name).as_deref() == Some(replica)) {
                return None;
            }
        }
        let meta = self.env.stored_meta(t.gvr, t.namespace, t.name)?;
        let labels = self.owning_labels(&t, meta);
        let owner = labels.get(&check.label);
        if owner == Some(shard) {
            return None;
        }
        Some(format!(
            "shard {shard} ({replica}) wrote ({method} {path}, {}) an object of shard {}",
            content_type.unwrap_or("no body"),
            owner.map_or("none", String::as_str)
        ))
    }
}

impl Shared {
    /// The labels that say who owns the object `t` names (its metadata `meta`): its controller's
    /// when it has one that is stored (a controlled object belongs to its controller's shard,
    /// as the ring hashes it by its controller's key, and moves with it), else its own.
    fn owning_labels(
        &self,
        t: &Target<'_>,
        meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Labels {
        let mut owners = meta.owner_references.iter().flatten();
        let controller = owners.find(|o| o.controller == Some(true));
        let controller_labels = controller.and_then(|c| {
            let plural = self.env.plural_of(&c.api_version, &c.kind)?;
            let (group, version) =
                (c.api_version.split_once('/')).unwrap_or(("", c.api_version.as_str()));
            let gvr = (group, version, plural.as_str());
            self.env.stored_meta(gvr, t.namespace, &c.name)
        });
        match controller_labels {
            Some(owner) => owner.labels.unwrap_or_default(),
            None => meta.labels.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn paths_name_their_object() {
        let t = target("/apis/app.example.com/v1/namespaces/default/appservices/shop/status");
        let t = t.expect("an object");
        assert_eq!(t.gvr, ("app.example.com", "v1", "appservices"));
        assert_eq!(
            (t.namespace, t.name, t.subresource),
            ("default", "shop", Some("status"))
        );
        let t = target("/api/v1/namespaces/default/pods/shop-pod-0").expect("an object");
        assert_eq!(
            (t.gvr.2, t.name, t.subresource),
            ("pods", "shop-pod-0", None)
        );
        let t = target("/apis/rbac.authorization.k8s.io/v1/clusterroles/view").expect("cluster");
        assert_eq!((t.namespace, t.name), ("", "view"));
        assert!(
            target("/api/v1/namespaces/default/pods").is_none(),
            "a collection"
        );
    }
}
