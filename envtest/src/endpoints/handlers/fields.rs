//! Field validation of a create, update or patch body (`?fieldValidation=`, upstream's
//! `metav1.FieldValidation*`): unknown fields of custom resources (what the CRD schema's pruning
//! would drop, `schema::prune`) and duplicate fields in a JSON body (found while the body is decoded,
//! [`api::json`](crate::api::json)). `Strict` fails with 400
//! `strict decoding error: unknown field "spec.x", duplicate field "spec.y"`; `Warn` (the default,
//! as upstream) answers each as a `Warning` header
//! ([`endpoints::Warnings`](crate::endpoints::Warnings)); `Ignore` says nothing. The write itself
//! then prunes as before
//! ([`registry::crd::validate_custom`](crate::registry::crd::validate_custom)). Built-in types are
//! checked for duplicates only: their unknown fields are dropped by their decoder without a trace.
//! A write to a multi-version CRD at a non-storage version is pruned by the conversion layer
//! ([`super::versioned`]) before it reaches the verbs, so there `Warn` says nothing (`Strict` still
//! fails).

use serde_json::Value;

use crate::api::status::ApiError;
use crate::endpoints::Req;
use crate::registry::ResourceType;

/// `?fieldValidation=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Ignore,
    Warn,
    Strict,
}

/// The mode the request asks for (`Warn` when unset).
pub(crate) fn mode(req: &Req) -> Result<Mode, ApiError> {
    match req.query.value("fieldValidation") {
        None | Some("Warn") => Ok(Mode::Warn),
        Some("Ignore") => Ok(Mode::Ignore),
        Some("Strict") => Ok(Mode::Strict),
        Some(v) => Err(ApiError::bad_request(format!(
            "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {v:?}"
        ))),
    }
}

/// Checks `obj` (the request's body as decoded, or the object its patch made) with `duplicates`,
/// the keys the body gives twice as its decoder found them
/// ([`endpoints::decode_body_noting_duplicates`](crate::endpoints::decode_body_noting_duplicates),
/// [`Patch::decode_noting_duplicates`](crate::api::patch::Patch::decode_noting_duplicates)), by the
/// request's mode.
pub(crate) fn check_decoded(
    rt: &ResourceType,
    obj: &Value,
    req: &Req,
    duplicates: Vec<String>,
) -> Result<(), ApiError> {
    check_with(rt, obj, req, || duplicates)
}

/// Checks `obj`, an object that is not the request's body (one an admission webhook returned),
/// by the request's mode: unknown fields only.
pub(crate) fn check_object(rt: &ResourceType, obj: &Value, req: &Req) -> Result<(), ApiError> {
    check_with(rt, obj, req, Vec::new)
}

fn check_with(
    rt: &ResourceType,
    obj: &Value,
    req: &Req,
    duplicates: impl FnOnce() -> Vec<String>,
) -> Result<(), ApiError> {
    let mode = mode(req)?;
    if mode == Mode::Ignore {
        return Ok(());
    }
    let mut problems: Vec<String> = unknown_fields(rt, obj)
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    problems.extend(
        duplicates()
            .iter()
            .map(|f| format!("duplicate field {f:?}")),
    );
    if problems.is_empty() {
        return Ok(());
    }
    if mode == Mode::Strict {
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            problems.join(", ")
        )));
    }
    for p in &problems {
        req.warnings.add(p);
    }
    Ok(())
}

/// The fields of a custom object its schema does not know.
fn unknown_fields(rt: &ResourceType, obj: &Value) -> Vec<String> {
    match (&rt.crd, &rt.schema) {
        (Some(_), Some(sch)) => crate::registry::schema::unknown_fields(sch, obj),
        _ => Vec::new(),
    }
}
