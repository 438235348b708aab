//! Server-side apply (`applyPatcher` in `k8s.io/apiserver/pkg/endpoints/handlers/patch.go`):
//! `PATCH` with `application/apply-patch+yaml`. The request is checked here (fieldManager required,
//! no managedFields in the body, kind and name), the applied configuration's field set is computed
//! ([`registry::fieldmanager::fieldset`](crate::registry::fieldmanager::fieldset)), and the apply
//! step ([`registry::fieldmanager::managed`](crate::registry::fieldmanager::managed): conflicts,
//! merge, removal of fields the manager dropped, the managedFields entries) runs inside the
//! registry's update path
//! ([`registry::hooks::update_object`](crate::registry::hooks::update_object)), so it sees the
//! committed object under the store lock. A missing object is created through
//! [`registry::hooks::create_object`](crate::registry::hooks::create_object) (201).

mod admit;
mod scale;

pub(crate) use scale::apply as apply_scale;

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::api::meta;
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;
use crate::endpoints::State;
use crate::endpoints::handlers::{self as verbs, write_opts};
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{Body, Req};
use crate::registry::ResourceType;
use crate::registry::fieldmanager::fieldset::{self, Shape};
use crate::registry::fieldmanager::managed::{self, Entry};
use crate::registry::hooks;
use crate::registry::rest::WriteOpts;
use crate::storage::Committed;

/// Handles an apply patch of item `name` (or its `/status`): the applied result goes through
/// the admission webhooks (`admit`) like any other write, then is stored.
pub(crate) async fn patch(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let w = write_opts(&req.query)?;
    let apply = Apply::new(state, r, name, req)?;
    if admit::configured(state) {
        let dry = WriteOpts { dry_run: true, ..w };
        let (code, out) = apply.run(state, dry)?;
        if let Some(mutated) = admit::review(state, r, req, code == 201, &out.obj).await? {
            let (code, out) = admit::store(state, r, name, mutated, code == 201, w)?;
            return Ok(verbs::respond_committed(code, &out, &r.rt, req));
        }
        if w.dry_run {
            return Ok(verbs::respond_committed(code, &out, &r.rt, req));
        }
    }
    let (code, out) = apply.run(state, w)?;
    Ok(verbs::respond_committed(code, &out, &r.rt, req))
}

/// A checked apply request: who applies what, with which field set.
struct Apply<'a> {
    rt: &'a Arc<ResourceType>,
    ns: Option<&'a str>,
    name: &'a str,
    sub: Option<&'a str>,
    manager: String,
    force: bool,
    api_version: String,
    body: Value,
    applied: Value,
    set: fieldset::FieldSet,
}

impl<'a> Apply<'a> {
    fn new(
        state: &Arc<State>,
        r: &'a ResourceRoute,
        name: &'a str,
        req: &Req,
    ) -> Result<Apply<'a>, ApiError> {
        let rt = &r.rt;
        let body = decode(req)?;
        let manager = manager(req)?;
        let force = req.query.flag("force");
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
        crate::registry::objects::check_type(&mut body.clone(), rt, Some(&state.registry))?;
        let api_version = body
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| rt.api_version());
        let sub = r.sub.as_deref();
        let applied = restrict(&body, rt, sub);
        let set = fieldset::of_object(&Shape { rt }, &applied);
        Ok(Apply {
            rt,
            ns: r.namespace.as_deref(),
            name,
            sub,
            manager,
            force,
            api_version,
            body,
            applied,
            set,
        })
    }

    /// Creates the object (201) or applies to the stored one (200).
    fn run(&self, state: &Arc<State>, w: WriteOpts) -> Result<(u16, Committed), ApiError> {
        let (rt, ns, name) = (self.rt, self.ns, self.name);
        let exists = state
            .store
            .get(
                &rt.store_key(),
                &crate::registry::objects::okey(rt, ns, name),
            )
            .is_some();
        if !exists && self.sub.is_none() {
            let mut obj = self.applied.clone();
            meta::set_meta(&mut obj, "name", json!(name));
            let entry = Entry {
                manager: self.manager.clone(),
                operation: "Apply".into(),
                api_version: self.api_version.clone(),
                time: meta::now(),
                subresource: None,
                set: self.set.clone(),
            };
            managed::write(&mut obj, &[entry]);
            crate::registry::objects::check_type(&mut obj, rt, Some(&state.registry))?;
            match hooks::create_object(state, rt, ns, obj, w) {
                Ok(out) => return Ok((201, out)),
                Err(e) if e.reason == "AlreadyExists" => {}
                Err(e) => return Err(e),
            }
        }
        let (out, _) = hooks::update_object(state, rt, ns, name, self.sub, w, false, |cur| {
            let cur = crate::registry::objects::served(cur, rt).into_owned();
            let step = Step {
                shape: Shape { rt },
                manager: &self.manager,
                api_version: &self.api_version,
                sub: self.sub,
                force: self.force,
            };
            step.run(&cur, &self.body, &self.applied, &self.set)
        })?;
        Ok((200, out))
    }
}

/// `fieldManager` is required for apply and at most 128 characters long.
fn manager(req: &Req) -> Result<String, ApiError> {
    match req.query.value("fieldManager") {
        None => {
            let c = FieldCause::required("fieldManager", "is required for apply patch");
            Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[c]))
        }
        Some(m) if m.chars().count() > 128 => {
            let c = FieldCause::invalid(
                "fieldManager",
                &json!(m),
                "must be no more than 128 characters",
            );
            Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[c]))
        }
        Some(m) => Ok(m.to_string()),
    }
}

/// The body as JSON or YAML; it must be an object.
fn decode(req: &Req) -> Result<Value, ApiError> {
    let v: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(_) => crate::endpoints::yaml_value(&req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
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

/// 409 Conflict naming every conflicting field and its manager
/// (`k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go`).
pub(crate) fn conflict_error(found: &[managed::Conflict]) -> ApiError {
    let causes: Vec<Value> = found
        .iter()
        .map(|c| {
            json!({"reason": "FieldManagerConflict",
                "message": format!("conflict with {}", c.printed()),
                "field": fieldset::display(&c.path)})
        })
        .collect();
    let message = if let [c] = found {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.printed(),
            fieldset::display(&c.path)
        )
    } else {
        let mut managers: Vec<String> = found.iter().map(managed::Conflict::printed).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for mgr in managers {
            lines.push(format!("conflicts with {mgr}:"));
            for c in found.iter().filter(|c| c.printed() == mgr) {
                lines.push(format!("- {}", fieldset::display(&c.path)));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            found.len(),
            lines.join("\n")
        )
    };
    ApiError::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}
