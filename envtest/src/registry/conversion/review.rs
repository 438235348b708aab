//! One `ConversionReview` round trip, as kube-apiserver's `webhookConverter.Convert` does it:
//! only the objects not already at the desired version are sent (a list in one review), the
//! answer must echo the request's uid (v1 reviews), report `Success`, return as many objects
//! as were sent, each at the desired version with the same kind, name, namespace and uid;
//! the original metadata is then restored except labels and annotations, which the webhook
//! may change. The call itself goes through the admission webhook client
//! ([`crate::webhook_client`]). Used by [`super::convert_to`] and the handlers that serve at a
//! non-storage version ([`endpoints::handlers::versioned`](crate::endpoints::handlers::versioned)).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::Conversion;
use crate::api::status::ApiError;

/// Upstream's default webhook timeout (conversion webhooks have no `timeoutSeconds`).
const TIMEOUT: Duration = Duration::from_secs(30);

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Go's `GroupVersionKind.String()`: `group/version, Kind=Kind`.
fn gvk(api_version: &str, kind: &str) -> String {
    format!("{api_version}, Kind={kind}")
}

/// Converts one object to `desired` (an apiVersion); objects already there come back as is.
pub(crate) async fn convert_one(
    conv: &Conversion,
    obj: Value,
    desired: &str,
) -> Result<Value, ApiError> {
    let what = gvk(s(&obj, "apiVersion"), s(&obj, "kind"));
    let mut out = convert(conv, vec![obj], desired, &what).await?;
    out.pop().ok_or_else(|| {
        ApiError::internal(format!(
            "conversion webhook for {what} failed, no objects returned"
        ))
    })
}

/// Converts the items of a list (`what` names the list's kind in errors) in one review.
pub(crate) async fn convert(
    conv: &Conversion,
    mut items: Vec<Value>,
    desired: &str,
    what: &str,
) -> Result<Vec<Value>, ApiError> {
    let todo: Vec<usize> = (0..items.len())
        .filter(|i| s(&items[*i], "apiVersion") != desired)
        .collect();
    if todo.is_empty() {
        return Ok(items);
    }
    let fail = |e: String| ApiError::internal(format!("conversion webhook for {what} failed: {e}"));
    let url = conv.url.as_ref().map_err(|e| fail(e.clone()))?;
    let uid = crate::api::meta::new_uid();
    let review_av = format!("apiextensions.k8s.io/{}", conv.review_version);
    let objects: Vec<Value> = todo.iter().map(|i| items[*i].clone()).collect();
    let review = json!({
        "apiVersion": review_av,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    });
    tracing::debug!(crd = %conv.crd, desired, objects = todo.len(), "calling the conversion webhook");
    let answer = crate::webhook_client::call(url, &conv.ca_bundle, &review, TIMEOUT)
        .await
        .map_err(|e| fail(e.trim_start_matches("failed to call webhook: ").to_string()))?;
    let converted = converted_objects(&answer, &review_av, &uid).map_err(fail)?;
    if converted.len() != todo.len() {
        return Err(ApiError::internal(format!(
            "conversion webhook for {what} returned {} objects, expected {}",
            converted.len(),
            todo.len()
        )));
    }
    for (n, (i, mut out)) in todo.into_iter().zip(converted).enumerate() {
        let original = &items[i];
        let bad = |e: String| {
            ApiError::internal(format!(
                "conversion webhook for {what} returned invalid converted object at index {n}: {e}"
            ))
        };
        if s(&out, "apiVersion") != desired {
            return Err(bad(format!(
                "invalid groupVersion (expected {desired}, received {})",
                s(&out, "apiVersion")
            )));
        }
        if s(&out, "kind") != s(original, "kind") {
            return Err(bad(format!(
                "invalid kind (expected {}, received {})",
                s(original, "kind"),
                s(&out, "kind")
            )));
        }
        same_identity(original, &out).map_err(bad)?;
        restore_meta(original, &mut out).map_err(|e| {
            ApiError::internal(format!(
                "conversion webhook for {what} returned invalid metadata in object at index {n}: {e}"
            ))
        })?;
        items[i] = out;
    }
    Ok(items)
}

/// Upstream's `getConvertedObjectsFromResponse`.
fn converted_objects(answer: &Value, review_av: &str, uid: &str) -> Result<Vec<Value>, String> {
    let v1 = review_av.ends_with("/v1");
    if v1 && (s(answer, "apiVersion") != review_av || s(answer, "kind") != "ConversionReview") {
        return Err(format!(
            "expected webhook response of {}, got {}",
            gvk(review_av, "ConversionReview"),
            gvk(s(answer, "apiVersion"), s(answer, "kind"))
        ));
    }
    let Some(resp) = answer.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    if v1 && s(resp, "uid") != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            s(resp, "uid")
        ));
    }
    let result = resp.get("result").cloned().unwrap_or_default();
    if s(&result, "status") != "Success" {
        let msg = s(&result, "message");
        return Err(if msg.is_empty() {
            format!(
                "response.result.status was '{}', not 'Success'",
                s(&result, "status")
            )
        } else {
            msg.to_string()
        });
    }
    Ok(resp
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn meta_str<'a>(v: &'a Value, key: &str) -> &'a str {
    v.pointer(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Upstream's `validateConvertedObject`: name, namespace and uid must not change.
fn same_identity(original: &Value, out: &Value) -> Result<(), String> {
    for (key, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta_str(original, key), meta_str(out, key));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// Upstream's `restoreObjectMeta`: the original metadata, with the converted object's labels
/// and annotations (which must be string maps).
fn restore_meta(original: &Value, out: &mut Value) -> Result<(), String> {
    let Some(theirs) = out.get("metadata") else {
        return Err("missing metadata in converted object".into());
    };
    let Some(theirs) = theirs.as_object().cloned() else {
        return Err("invalid metadata in converted object".into());
    };
    let mut meta: Map<String, Value> = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match theirs.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string in converted object"
                    ));
                }
                meta.insert(field.to_string(), Value::Object(m.clone()));
            }
            Some(_) => return Err(format!("invalid metadata.{field} in converted object")),
        }
    }
    out["metadata"] = Value::Object(meta);
    Ok(())
}
