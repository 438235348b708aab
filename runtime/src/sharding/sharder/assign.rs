//! What the sharder does with one object (upstream's sharder reconciler's
//! `resyncObject` and webhook `Handle`), as a pure decision both the webhook
//! (`super::webhook`) and the periodic sync (`super::sync`) act on.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::members::Members;
use crate::sharding::{
    ControllerRing, KeyError, key_for_controller, key_for_object, label_drain, label_shard,
};

/// What to do with an object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing: correctly assigned, not sharded, or no shard available.
    Keep,
    /// Label it with this shard (it has none, or its shard is gone).
    Assign(String),
    /// Ask its current, still available shard to let it go.
    Drain,
}

/// How the ring keys objects of one resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A main resource: keyed by itself, moved by draining.
    Main,
    /// A controlled resource: keyed by its controller, moved directly.
    Controlled,
}

/// The role of `group`/`resource` in `ring`, if it is sharded there.
pub(crate) fn role(ring: &ControllerRing, group: &str, resource: &str) -> Option<Role> {
    let mut role = None;
    for r in &ring.spec.resources {
        if r.group_resource.group == group && r.group_resource.resource == resource {
            return Some(Role::Main);
        }
        if r.controlled_resources
            .iter()
            .any(|c| c.group == group && c.resource == resource)
        {
            role = Some(Role::Controlled);
        }
    }
    role
}

/// The hash key of an object of `group`/`kind` in `role` (`Ok(None)`: not assigned).
pub(crate) fn key(
    role: Role,
    group: &str,
    kind: &str,
    meta: &ObjectMeta,
) -> Result<Option<String>, KeyError> {
    match role {
        Role::Main => key_for_object(group, kind, meta).map(Some),
        Role::Controlled => key_for_controller(meta),
    }
}

/// The decision for an object with hash key `key` and labels from `meta` in `ring`.
pub(crate) fn decide(
    members: &Members,
    ring: &str,
    role: Role,
    key: &str,
    meta: &ObjectMeta,
) -> Decision {
    let Some(desired) = members.ring.shard_for(key) else {
        return Decision::Keep;
    };
    let labels = meta.labels.as_ref();
    let current = labels.and_then(|l| l.get(&label_shard(ring)));
    let draining = labels.is_some_and(|l| l.contains_key(&label_drain(ring)));
    match current {
        Some(c) if c == desired && !draining => Decision::Keep,
        Some(c) if c == desired => Decision::Assign(desired.to_string()),
        Some(c) if role == Role::Main && members.state(c).is_available() => {
            if draining {
                Decision::Keep
            } else {
                Decision::Drain
            }
        }
        _ => Decision::Assign(desired.to_string()),
    }
}
