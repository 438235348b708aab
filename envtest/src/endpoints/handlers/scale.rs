//! The `/scale` subresource (`ScaleREST` in
//! `k8s.io/kubernetes/pkg/registry/apps/deployment/storage/storage.go` and
//! `k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go`): an `autoscaling/v1`
//! `Scale` view of a workload or a custom resource with `subresources.scale`. Writes (PUT, merge or
//! JSON patch) set the parent's replicas field through the ordinary update path, so generation,
//! resourceVersion and watch events follow the parent's rules.

use std::sync::Arc;

use http::{Method, Response};
use serde_json::{Value, json};

use crate::api::meta;
use crate::api::patch::{Patch, Target};
use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{self, Body, Req};
use crate::registry::hooks::update_object;
use crate::registry::rest::WriteOpts;
use crate::registry::{ResourceType, ScaleSpec};

/// `.spec.replicas` → `/spec/replicas`.
pub(crate) fn pointer(path: &str) -> String {
    path.trim_start_matches('.')
        .split('.')
        .fold(String::new(), |acc, seg| format!("{acc}/{seg}"))
}

/// A label selector object (`matchLabels`, `matchExpressions`) or string as selector text.
fn selector_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => {
            let mut terms: Vec<String> = Vec::new();
            if let Some(Value::Object(ml)) = o.get("matchLabels") {
                terms.extend(
                    ml.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))),
                );
            }
            if let Some(Value::Array(me)) = o.get("matchExpressions") {
                for e in me {
                    let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                    let vals: Vec<&str> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                        "In" => terms.push(format!("{key} in ({})", vals.join(","))),
                        "NotIn" => terms.push(format!("{key} notin ({})", vals.join(","))),
                        "Exists" => terms.push(key.to_string()),
                        "DoesNotExist" => terms.push(format!("!{key}")),
                        _ => {}
                    }
                }
            }
            terms.join(",")
        }
        _ => String::new(),
    }
}

fn scale_of(obj: &Value, sc: &ScaleSpec) -> Value {
    let m = obj.get("metadata").cloned().unwrap_or_default();
    let mut meta = json!({});
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(f) {
            meta[f] = v.clone();
        }
    }
    let spec_n = obj
        .pointer(&pointer(&sc.spec_replicas))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_n = obj
        .pointer(&pointer(&sc.status_replicas))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let sel = sc
        .label_selector
        .as_deref()
        .map(|p| selector_text(obj.pointer(&pointer(p))))
        .unwrap_or_default();
    let mut status = json!({"replicas": status_n});
    if !sel.is_empty() {
        status["selector"] = json!(sel);
    }
    json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta, "spec": {"replicas": spec_n}, "status": status})
}

pub(crate) fn handle(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let rt: &Arc<ResourceType> = &r.rt;
    let Some(sc) = rt.scale.clone() else {
        return Err(ApiError::unknown_path());
    };
    let key = rt.store_key();
    let okey = crate::registry::objects::okey(rt, r.namespace.as_deref(), name);
    let cur = state
        .store
        .get_value(&key, &okey)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    let current = scale_of(&cur, &sc);
    let wanted = match req.method {
        Method::GET => return Ok(endpoints::object(200, &current, req)),
        Method::PUT => crate::endpoints::decode_body(req)?,
        Method::PATCH if super::is_apply(req) => {
            let out = crate::endpoints::handlers::apply::apply_scale(
                state,
                r,
                name,
                req,
                &pointer(&sc.spec_replicas),
            )?;
            return Ok(endpoints::object(200, &scale_of(&out, &sc), req));
        }
        Method::PATCH => {
            Patch::decode(req.media_type(), &req.body, Target::Scale)?.apply(&current)?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    let Some(n) = wanted.pointer("/spec/replicas").and_then(Value::as_i64) else {
        let cause = crate::api::validation::FieldCause::required("spec.replicas", "");
        return Err(ApiError::invalid("autoscaling", "Scale", name, &[cause]));
    };
    let rv = meta::meta_str(&wanted, "resourceVersion").map(String::from);
    let who = super::Who::of(req, r)?;
    let w = who.opts(&req.query)?;
    let ptr = pointer(&sc.spec_replicas);
    let out = write_parent(state, r, name, w, move |cur| {
        let mut v = cur.clone();
        set_pointer(&mut v, &ptr, json!(n));
        if let Some(rv) = rv {
            meta::set_meta(&mut v, "resourceVersion", json!(rv));
        }
        Ok(v)
    })?;
    Ok(endpoints::object(200, &scale_of(&out, &sc), req))
}

/// Writes the parent of a `/scale` request through the ordinary update path.
pub(crate) fn write_parent(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    w: WriteOpts,
    make: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Arc<Value>, ApiError> {
    let ns = r.namespace.as_deref();
    let (out, _) = update_object(state, &r.rt, ns, name, None, w, false, make)?;
    Ok(out.obj)
}

/// Sets the field at JSON pointer `ptr`, creating the maps on the way.
pub(crate) fn set_pointer(v: &mut Value, ptr: &str, val: Value) {
    let mut cur = v;
    let segs: Vec<&str> = ptr.split('/').skip(1).collect();
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        if i + 1 == segs.len() {
            cur[*seg] = val;
            return;
        }
        cur = &mut cur[*seg];
    }
}
