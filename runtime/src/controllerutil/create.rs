//! [`create_or_update`] and [`create_or_patch`] (controller-runtime's
//! `controllerutil.CreateOrUpdate` / `CreateOrPatch`): get the object through the
//! client (from the cache), let a closure set what it should look like, and write
//! only if that changed anything.
//!
//! Reads come from the cache, as in Go, so a write made a moment ago may not be seen
//! yet: the create then fails with AlreadyExists, or the update with a Conflict, and
//! the reconcile is retried. `create_or_patch` sends JSON merge patches, which every
//! API server (and ctrl-envtest) accepts.

use std::fmt;

use kube::api::{Patch, PatchParams};
use serde_json::{Map, Value};

use super::Error;
use crate::cache::Reader;
use crate::client::{Client, ObjectWriter, Writable, WritableWith};

/// What [`create_or_update`] / [`create_or_patch`] did (Go's `OperationResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// Nothing: the object already looked as asked (Go's `OperationResultNone`).
    Unchanged,
    /// The object did not exist and was created.
    Created,
    /// The object (not its status) was updated.
    Updated,
    /// The object and its status were patched (`create_or_patch` only).
    UpdatedStatus,
    /// Only the status was patched (`create_or_patch` only).
    UpdatedStatusOnly,
}

impl fmt::Display for OperationResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OperationResult::Unchanged => "unchanged",
            OperationResult::Created => "created",
            OperationResult::Updated => "updated",
            OperationResult::UpdatedStatus => "updatedStatus",
            OperationResult::UpdatedStatusOnly => "updatedStatusOnly",
        })
    }
}

/// The `(namespace, name)` of `obj`.
fn key<K: WritableWith>(obj: &K) -> (String, String) {
    let m = obj.meta();
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

/// Runs `mutate` and checks it kept the key (Go's `mutate`).
fn mutate<K: WritableWith>(
    obj: &mut K,
    f: impl FnOnce(&mut K) -> Result<(), Error>,
) -> Result<(), Error> {
    let before = key(obj);
    f(obj)?;
    if key(obj) != before {
        return Err(Error::MutatedKey);
    }
    Ok(())
}

/// Reads the object `obj` names into `obj`; `false` when it does not exist.
async fn get_into<K: WritableWith>(
    client: &Client,
    dt: &K::DynamicType,
    obj: &mut K,
) -> Result<bool, Error> {
    let (ns, name) = key(obj);
    match client.get_with::<K>(dt, &ns, &name).await {
        Ok(current) => {
            *obj = (*current).clone();
            Ok(true)
        }
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Reads the object `obj` names into `obj`; when it does not exist, creates it after
/// `f` and returns `None`, else hands `f` back.
async fn create_if_missing<K: WritableWith, F: FnOnce(&mut K) -> Result<(), Error>>(
    client: &Client,
    dt: &K::DynamicType,
    obj: &mut K,
    f: F,
) -> Result<Option<F>, Error> {
    if get_into(client, dt, obj).await? {
        return Ok(Some(f));
    }
    mutate(obj, f)?;
    *obj = client.create_with(dt, obj).await?;
    tracing::debug!(object = ?key(obj), "created");
    Ok(None)
}

/// Creates `obj` (after `f`) if it does not exist, or updates it if `f` changed it.
/// `obj` needs its name (and namespace); on return it holds what the server stored.
/// The status is never written (the server ignores it on update when the type has a
/// status subresource), so the result is `Unchanged`, `Created` or `Updated`.
pub async fn create_or_update<K: Writable>(
    client: &Client,
    obj: &mut K,
    f: impl FnOnce(&mut K) -> Result<(), Error>,
) -> Result<OperationResult, Error> {
    create_or_update_with(client, &(), obj, f).await
}

/// [`create_or_update`] for an object of dynamic type `dt` (a `DynamicObject` and its
/// `ApiResource`).
pub async fn create_or_update_with<K: WritableWith>(
    client: &Client,
    dt: &K::DynamicType,
    obj: &mut K,
    f: impl FnOnce(&mut K) -> Result<(), Error>,
) -> Result<OperationResult, Error> {
    let Some(f) = create_if_missing(client, dt, obj, f).await? else {
        return Ok(OperationResult::Created);
    };
    let existing = serde_json::to_value(&*obj)?;
    mutate(obj, f)?;
    if serde_json::to_value(&*obj)? == existing {
        return Ok(OperationResult::Unchanged);
    }
    *obj = client.update_with(dt, obj).await?;
    tracing::debug!(object = ?key(obj), "updated");
    Ok(OperationResult::Updated)
}

/// Creates `obj` (after `f`) if it does not exist; otherwise patches what `f` changed:
/// the object with one merge patch, its status with another (through the status
/// subresource). `obj` needs its name (and namespace); on return it holds what the
/// server stored.
pub async fn create_or_patch<K: Writable>(
    client: &Client,
    obj: &mut K,
    f: impl FnOnce(&mut K) -> Result<(), Error>,
) -> Result<OperationResult, Error> {
    create_or_patch_with(client, &(), obj, f).await
}

/// [`create_or_patch`] for an object of dynamic type `dt`.
pub async fn create_or_patch_with<K: WritableWith>(
    client: &Client,
    dt: &K::DynamicType,
    obj: &mut K,
    f: impl FnOnce(&mut K) -> Result<(), Error>,
) -> Result<OperationResult, Error> {
    let Some(f) = create_if_missing(client, dt, obj, f).await? else {
        return Ok(OperationResult::Created);
    };
    let (before, before_status) = split_status(serde_json::to_value(&*obj)?);
    mutate(obj, f)?;
    let (after, after_status) = split_status(serde_json::to_value(&*obj)?);

    let mut result = OperationResult::Unchanged;
    if before != after {
        let patch = merge_diff(&before, &after);
        *obj = client
            .patch_with(dt, obj, &Patch::Merge(&patch), PatchParams::default())
            .await?;
        result = OperationResult::Updated;
    }
    if (before_status.is_some() || after_status.is_some()) && before_status != after_status {
        let status = match (&before_status, &after_status) {
            (Some(b), Some(a)) => merge_diff(b, a),
            (_, a) => a.clone().unwrap_or(Value::Null),
        };
        let patch = serde_json::json!({ "status": status });
        *obj = client
            .status()
            .patch_with(dt, obj, &Patch::Merge(&patch), PatchParams::default())
            .await?;
        result = if result == OperationResult::Updated {
            OperationResult::UpdatedStatus
        } else {
            OperationResult::UpdatedStatusOnly
        };
    }
    if result != OperationResult::Unchanged {
        tracing::debug!(object = ?key(obj), %result, "patched");
    }
    Ok(result)
}

/// The object without its `status`, and the status.
fn split_status(mut v: Value) -> (Value, Option<Value>) {
    let status = v.as_object_mut().and_then(|m| m.remove("status"));
    (v, status.filter(|s| !s.is_null()))
}

/// The JSON merge patch (RFC 7386) that turns `before` into `after`: changed and new
/// keys with their new values, removed keys as `null`, objects recursively; arrays and
/// scalars are replaced whole.
fn merge_diff(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut out = Map::new();
            for (k, bv) in b {
                match a.get(k) {
                    None => {
                        out.insert(k.clone(), Value::Null);
                    }
                    Some(av) if av != bv => {
                        out.insert(k.clone(), merge_diff(bv, av));
                    }
                    Some(_) => {}
                }
            }
            for (k, av) in a {
                if !b.contains_key(k) {
                    out.insert(k.clone(), av.clone());
                }
            }
            Value::Object(out)
        }
        _ => after.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_diff_is_minimal_and_applies_back() {
        let before = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": true});
        let after = json!({"a": 1, "b": {"c": 5, "d": 3}, "e": [1], "new": "x"});
        let patch = merge_diff(&before, &after);
        assert_eq!(
            patch,
            json!({"b": {"c": 5}, "e": [1], "gone": null, "new": "x"})
        );
        let mut applied = before.clone();
        json_patch::merge(&mut applied, &patch);
        assert_eq!(applied, after);
        assert_eq!(merge_diff(&after, &after), json!({}));
    }

    #[test]
    fn status_is_split_off() {
        let (rest, status) = split_status(json!({"spec": 1, "status": {"x": 1}}));
        assert_eq!(rest, json!({"spec": 1}));
        assert_eq!(status, Some(json!({"x": 1})));
        assert_eq!(split_status(json!({"status": null})).1, None);
        assert_eq!(
            OperationResult::UpdatedStatusOnly.to_string(),
            "updatedStatusOnly"
        );
    }
}
