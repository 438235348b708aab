//! Server-side apply (spec §1.10): `PATCH` with `application/apply-patch+yaml`. The request is
//! checked here (fieldManager required, no managedFields in the body, kind and name), the
//! applied configuration's field set is computed (`fieldset`), and the apply step (`managed`:
//! conflicts, merge, removal of fields the manager dropped, the managedFields entries) runs
//! inside the verbs' shared update path (`verbs::update::update_object`), so it sees the
//! committed object under the store lock. A missing object is created through
//! `verbs::create::create_object` (201).

mod fieldset;
mod managed;

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::registry::ResourceType;
use crate::router::ResourceRoute;
use crate::server::{Body, Req, State};
use crate::status::ApiError;
use crate::validation::FieldCause;
use crate::{meta, verbs};
use fieldset::Shape;
use managed::Entry;

/// Handles an apply patch of item `name` (or its `/status`).
pub(crate) fn patch(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let rt = &r.rt;
    let w = verbs::WriteOpts::from_query(&req.query)?;
    let body = decode(req)?;
    let manager = match req.query.value("fieldManager") {
        None => {
            let c = FieldCause::required("fieldManager", "is required for apply patch");
            return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[c]));
        }
        Some(m) if m.len() > 128 => {
            let c = FieldCause::invalid(
                "fieldManager",
                &json!(m),
                "may not be longer than 128 characters",
            );
            return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[c]));
        }
        Some(m) => m.to_string(),
    };
    let force = req.query.flag("force")?;
    if body
        .get("metadata")
        .is_some_and(|m| m.get("managedFields").is_some_and(|f| !f.is_null()))
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    if let Some(n) = meta::meta_str(&body, "name").filter(|n| *n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    // Type errors are reported before anything is read.
    verbs::check_type(&mut body.clone(), rt, &verbs::siblings(state, rt))?;
    let api_version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| rt.api_version());
    let sub = r.sub.clone();
    let applied = restrict(&body, rt, sub.as_deref());
    let shape = Shape { rt };
    let set = fieldset::of_object(&shape, &applied);
    let ns = r.namespace.as_deref();
    let exists = state
        .store
        .get(&rt.store_key(), &verbs::okey(rt, ns, name))
        .is_some();
    if !exists && sub.is_none() {
        let mut obj = applied.clone();
        meta::set_meta(&mut obj, "name", json!(name));
        let entry = Entry {
            manager: manager.clone(),
            operation: "Apply".into(),
            api_version: api_version.clone(),
            time: meta::now(),
            subresource: None,
            set: set.clone(),
        };
        managed::write(&mut obj, &[entry]);
        verbs::check_type(&mut obj, rt, &verbs::siblings(state, rt))?;
        match verbs::create::create_object(state, rt, ns, obj, w) {
            Ok(out) => return Ok(verbs::respond(201, &out, rt, req)),
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    let served_rt = rt.clone();
    let (out, _) =
        verbs::update::update_object(state, rt, ns, name, sub.as_deref(), w, false, |cur| {
            let cur = verbs::served(cur, &served_rt).into_owned();
            let step = Step {
                shape: Shape { rt: &served_rt },
                manager: &manager,
                api_version: &api_version,
                sub: sub.as_deref(),
                force,
            };
            step.run(&cur, &body, &applied, &set)
        })?;
    Ok(verbs::respond(200, &out, rt, req))
}

/// The body as JSON or YAML; it must be an object.
fn decode(req: &Req) -> Result<Value, ApiError> {
    let v: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(_) => {
            let text = std::str::from_utf8(&req.body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: the applied configuration must be an object",
        ));
    }
    Ok(strip_nulls(v))
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// The part of the body this endpoint applies: only `status` on `/status`; everything but
/// `status` on the main endpoint of a kind with a status subresource.
fn restrict(body: &Value, rt: &ResourceType, sub: Option<&str>) -> Value {
    let mut out = body.clone();
    if let Some(m) = out.as_object_mut() {
        if sub == Some("status") {
            m.retain(|k, _| k == "status" || k == "apiVersion" || k == "kind" || k == "metadata");
            if let Some(md) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                md.retain(|k, _| k == "name" || k == "namespace");
            }
        } else if rt.status {
            m.remove("status");
        }
    }
    out
}

/// One apply by one manager.
struct Step<'a> {
    shape: Shape<'a>,
    manager: &'a str,
    api_version: &'a str,
    sub: Option<&'a str>,
    force: bool,
}

impl Step<'_> {
    fn run(
        &self,
        cur: &Value,
        body: &Value,
        applied: &Value,
        set: &fieldset::FieldSet,
    ) -> Result<Value, ApiError> {
        let mut entries = managed::read(cur);
        let mine = entries
            .iter()
            .position(|e| e.same_slot(self.manager, "Apply", self.sub));
        let found = managed::conflicts(&entries, mine, set, cur, applied);
        if !found.is_empty() {
            if !self.force {
                return Err(conflict_error(&found));
            }
            for c in &found {
                for (i, e) in entries.iter_mut().enumerate() {
                    if Some(i) != mine && e.manager == c.manager {
                        e.set.remove(&c.path);
                    }
                }
            }
        }
        let mut new = cur.clone();
        managed::merge(&self.shape, &mut new, applied, &mut Vec::new());
        let prev = mine.map(|i| entries[i].set.clone()).unwrap_or_default();
        for p in prev.difference(set) {
            if !managed::owned_by_others(&entries, mine, p) {
                fieldset::remove(&mut new, p);
            }
        }
        // The resourceVersion of the body is a precondition.
        if let Some(rv) = meta::meta_str(body, "resourceVersion") {
            meta::set_meta(&mut new, "resourceVersion", json!(rv));
        }
        let mut probe = new.clone();
        managed::write(&mut probe, &entries);
        let unchanged = probe == *cur && mine.is_some() && prev == *set;
        if unchanged {
            return Ok(cur.clone());
        }
        let entry = Entry {
            manager: self.manager.to_string(),
            operation: "Apply".into(),
            api_version: self.api_version.to_string(),
            time: meta::now(),
            subresource: self.sub.map(String::from),
            set: set.clone(),
        };
        match mine {
            Some(i) => entries[i] = entry,
            None => entries.push(entry),
        }
        managed::write(&mut new, &entries);
        Ok(new)
    }
}

/// 409 Conflict naming every conflicting field and its manager (spec §1.9).
fn conflict_error(found: &[managed::Conflict]) -> ApiError {
    let causes: Vec<Value> = found
        .iter()
        .map(|c| {
            json!({"reason": "FieldManagerConflict",
                "message": format!("conflict with {:?} using {}", c.manager, c.api_version),
                "field": fieldset::display(&c.path)})
        })
        .collect();
    let message = if found.len() == 1 {
        let c = &found[0];
        format!(
            "Apply failed with 1 conflict: conflict with {:?} using {}: {}",
            c.manager,
            c.api_version,
            fieldset::display(&c.path)
        )
    } else {
        let mut m = format!("Apply failed with {} conflicts: ", found.len());
        let mut managers: Vec<&str> = found.iter().map(|c| c.manager.as_str()).collect();
        managers.dedup();
        for mgr in managers {
            let api = found
                .iter()
                .find(|c| c.manager == mgr)
                .map(|c| c.api_version.as_str())
                .unwrap_or("");
            m.push_str(&format!("conflicts with {mgr:?} using {api}:"));
            for c in found.iter().filter(|c| c.manager == mgr) {
                m.push_str(&format!("\n- {}", fieldset::display(&c.path)));
            }
            m.push('\n');
        }
        m.trim_end().to_string()
    };
    ApiError::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}
