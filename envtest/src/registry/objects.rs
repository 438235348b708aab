//! How the objects of a served type are keyed, typed and served: the store key of an object
//! ([`okey`]), the type check every body passes before it is stored ([`check_type`]) and the form a stored object is served in
//! ([`served`]). Part of the registry: calls `api` and `storage` only.

use serde_json::{Value, json};

use super::{Registry, ResourceType};
use crate::api::meta;
use crate::api::status::ApiError;
use crate::storage::ObjKey;

/// The object's type fields and metadata must decode (`meta::check_types`, else 400), and
/// `apiVersion`/`kind` must name the endpoint's type (missing ones are filled in). Custom
/// resources may carry any served version of their group (looked up in `registry` only when the
/// object names a version other than `rt`'s; with no registry, only `rt`'s is accepted); objects
/// are stored at the storage version.
pub(crate) fn check_type(
    obj: &mut Value,
    rt: &ResourceType,
    registry: Option<&Registry>,
) -> Result<(), ApiError> {
    check_type_unless(obj, rt, registry, None)
}

/// [`check_type`] of an update's new object, whose `metadata`, when equal to `decoded` (the
/// stored object's), is not decoded again ([`meta::check_types`]).
pub(crate) fn check_type_unless(
    obj: &mut Value,
    rt: &ResourceType,
    registry: Option<&Registry>,
    decoded: Option<&Value>,
) -> Result<(), ApiError> {
    meta::check_types(obj, decoded).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: {e}",
            rt.kind, rt.version, rt.kind
        ))
    })?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    let (av, kind) = (text("apiVersion"), text("kind"));
    if !kind.is_empty() && kind != rt.kind {
        let version = if av.is_empty() {
            rt.version.as_str()
        } else {
            av.rsplit('/').next().unwrap_or("")
        };
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {}: the object kind does not match the endpoint",
            rt.kind
        )));
    }
    let ok_av = av.is_empty()
        || rt.is_api_version(av)
        || registry.is_some_and(|r| {
            r.siblings(rt)
                .iter()
                .any(|t| t.is_api_version(av) && t.kind == rt.kind)
        });
    if !ok_av {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    match &rt.view {
        Some(view) => (view.from_view)(obj),
        None => {
            set_text(obj, "apiVersion", &rt.storage_version);
            set_text(obj, "kind", &rt.kind);
        }
    }
    Ok(())
}

/// Sets `obj[key]` to the string `text`, unless it is that already (most bodies).
fn set_text(obj: &mut Value, key: &str, text: &str) {
    if obj.get(key).and_then(Value::as_str) != Some(text) {
        obj[key] = Value::String(text.to_string());
    }
}

/// The store key of an object.
pub(crate) fn okey(rt: &ResourceType, ns: Option<&str>, name: &str) -> ObjKey {
    let ns = if rt.namespaced { ns.unwrap_or("") } else { "" };
    crate::storage::obj_key(ns, name)
}

/// A stored object as served at `rt` (apiVersion of the served version, or the view's form).
pub(crate) fn served<'a>(obj: &'a Value, rt: &ResourceType) -> std::borrow::Cow<'a, Value> {
    if !rt.rewrites() {
        return std::borrow::Cow::Borrowed(obj);
    }
    let mut v = obj.clone();
    match &rt.view {
        Some(view) => (view.to_view)(&mut v),
        None => v["apiVersion"] = json!(rt.api_version()),
    }
    std::borrow::Cow::Owned(v)
}
