//! The resource verbs: `dispatch` picks one from the method and the route (collection or item,
//! subresource) and the submodules implement them on the `store` — `read` (get, list), `create`,
//! `update` (PUT and PATCH share one update path, `/status` included), `delete` (delete,
//! deletecollection), `scale` (the `/scale` subresource), `eviction` (`pods/eviction`);
//! `fields` checks bodies by `?fieldValidation=`; watches live in `crate::watch`.
//! The helpers here decode bodies, check apiVersion/kind and namespace, and render stored
//! objects at the served version.

pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod eviction;
pub(crate) mod fields;
pub(crate) mod read;
pub(crate) mod scale;
pub(crate) mod update;

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};
use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::endpoints::{self, Body, Req};
use crate::registry::ResourceType;
use crate::registry::context::State;
use crate::router::ResourceRoute;
use crate::storage::partial_metadata;
use crate::{api::meta, kinds, watch};

pub(crate) async fn dispatch(
    state: &Arc<State>,
    r: ResourceRoute,
    req: Req,
) -> Result<Response<Body>, ApiError> {
    let rt = r.rt.clone();
    if let Some(sub) = &r.sub {
        let ok = match sub.as_str() {
            "status" => rt.status,
            "scale" => rt.scale.is_some(),
            "eviction" => rt.group.is_empty() && rt.plural == "pods",
            _ => false,
        };
        if !ok {
            return Err(ApiError::unknown_path());
        }
        if sub == "scale" {
            let Some(name) = r.name.as_deref() else {
                return Err(ApiError::unknown_path());
            };
            return scale::handle(state, &r, name, &req);
        }
        if sub == "eviction" {
            let Some(name) = r.name.as_deref() else {
                return Err(ApiError::unknown_path());
            };
            return eviction::handle(state, &r, name, &req);
        }
    }
    if rt.virtual_create {
        return match (&req.method, &r.name) {
            (&Method::POST, None) => kinds::review(&rt, &req),
            _ => Err(ApiError::method_not_allowed()),
        };
    }
    // Admission webhooks (`crate::admission`) may rewrite the write first.
    let req = crate::admission::admit(state, &r, req).await?;
    let all_namespaces = rt.namespaced && r.namespace.is_none();
    match (&req.method, r.name.as_deref()) {
        (&Method::GET, None) => {
            if r.watch_prefix || req.query.flag("watch")? {
                watch::serve(state, &r, &req)
            } else {
                read::list(state, &r, &req)
            }
        }
        (&Method::POST, None) if !all_namespaces => create::create(state, &r, &req),
        (&Method::DELETE, None) if !all_namespaces && rt.verbs().contains(&"deletecollection") => {
            delete::delete_collection(state, &r, &req)
        }
        (&Method::GET, Some(name)) => read::get(state, &r, name, &req),
        (&Method::PUT, Some(name)) => update::put(state, &r, name, &req),
        (&Method::PATCH, Some(name)) if is_apply(&req) => {
            crate::apply::patch(state, &r, name, &req).await
        }
        (&Method::PATCH, Some(name)) => update::patch(state, &r, name, &req),
        (&Method::DELETE, Some(name)) if r.sub.is_none() => delete::delete(state, &r, name, &req),
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Whether a PATCH is a server-side apply.
pub(crate) fn is_apply(req: &Req) -> bool {
    req.header("content-type").split(';').next().map(str::trim)
        == Some("application/apply-patch+yaml")
}

/// Options of a write request: `dryRun=All`, `fieldValidation=Strict`, and who writes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriteOpts<'a> {
    pub dry_run: bool,
    /// Unknown fields of custom resources are an error (400) instead of being dropped.
    pub strict: bool,
    /// The field manager whose `Update` entry records the write (`crate::apply::record_update`);
    /// `None` for server-side apply (which keeps its own entries) and the server's own writes.
    pub manager: Option<crate::apply::Writer<'a>>,
}

/// The field manager of a client's non-apply write and the apiVersion and subresource it
/// wrote at (see [`WriteOpts::manager`]).
pub(crate) struct Who {
    manager: String,
    api_version: String,
    sub: Option<String>,
}

impl Who {
    /// `?fieldManager=` (at most 128 characters, else 422), else the User-Agent before its
    /// first `/` (printable characters, at most 128 bytes: upstream's `prefixFromUserAgent`),
    /// else `unknown` (upstream's name when both are empty; kube sends no User-Agent).
    pub fn of(req: &Req, r: &ResourceRoute) -> Result<Who, ApiError> {
        let manager = match req.query.value("fieldManager") {
            Some(m) if m.chars().count() > 128 => {
                let c = crate::api::validation::FieldCause::invalid(
                    "fieldManager",
                    &json!(m),
                    "must be no more than 128 characters",
                );
                return Err(ApiError::invalid("meta.k8s.io", "UpdateOptions", "", &[c]));
            }
            Some(m) if !m.is_empty() => m.to_string(),
            _ => {
                let ua = req.header("user-agent");
                let mut out = String::new();
                for c in ua.split('/').next().unwrap_or("").chars() {
                    if c.is_control() {
                        continue;
                    }
                    if out.len() + c.len_utf8() > 128 {
                        break;
                    }
                    out.push(c);
                }
                if out.is_empty() {
                    "unknown".to_string()
                } else {
                    out
                }
            }
        };
        Ok(Who {
            manager,
            api_version: r.rt.api_version(),
            sub: r.sub.clone(),
        })
    }

    /// The options of the write: the query's, made by this manager.
    pub fn opts(&self, q: &crate::router::Query) -> Result<WriteOpts<'_>, ApiError> {
        Ok(WriteOpts {
            manager: Some(crate::apply::Writer {
                manager: &self.manager,
                api_version: &self.api_version,
                subresource: self.sub.as_deref(),
            }),
            ..WriteOpts::from_query(q)?
        })
    }
}

impl WriteOpts<'_> {
    pub fn from_query(q: &crate::router::Query) -> Result<WriteOpts<'static>, ApiError> {
        let strict = match q.value("fieldValidation") {
            None | Some("Ignore") | Some("Warn") => false,
            Some("Strict") => true,
            Some(v) => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {v:?}"
                )));
            }
        };
        Ok(WriteOpts {
            dry_run: q.dry_run()?,
            strict,
            manager: None,
        })
    }
}

/// An object response (full, or PartialObjectMetadata when asked for).
pub(crate) fn respond(code: u16, obj: &Arc<Value>, rt: &ResourceType, req: &Req) -> Response<Body> {
    if req.meta_only() {
        return endpoints::json(code, &partial_metadata(obj));
    }
    let v = crate::registry::objects::served(obj, rt);
    endpoints::bytes(
        code,
        "application/json",
        Bytes::from(serde_json::to_vec(&*v).unwrap_or_default()),
    )
}

/// A stored object's bytes as a response (parsed only when it must be reshaped).
pub(crate) fn respond_bytes(
    code: u16,
    obj: &Bytes,
    rt: &ResourceType,
    req: &Req,
) -> Response<Body> {
    if req.meta_only() || rt.rewrites() {
        return respond(code, &Arc::new(crate::storage::parse(obj)), rt, req);
    }
    endpoints::bytes(code, "application/json", obj.clone())
}

/// Namespaced creates need an existing namespace that is not terminating.
pub(crate) fn ensure_namespace(
    state: &State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let key = (String::new(), "namespaces".to_string());
    match state.store.get_value(&key, &(String::new(), ns.to_string())) {
        None => Err(ApiError::new(404, "NotFound", format!("namespaces {ns:?} not found")).with_details(json!({"name": ns, "kind": "namespaces"}))),
        Some(n) if meta::meta_str(&n, "deletionTimestamp").is_some() => Err(ApiError::new(
            403,
            "Forbidden",
            format!("{} {name:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated", rt.plural),
        )
        .with_details(json!({"name": name, "kind": rt.plural, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]}))),
        Some(_) => Ok(()),
    }
}

/// The structural checks of every version's `openAPIV3Schema` of a CRD (`schema::check_schema`),
/// as the apiextensions server validates them on create and update.
fn crd_schema_causes(crd: &Value) -> Vec<crate::api::validation::FieldCause> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| {
            let s = v.pointer("/schema/openAPIV3Schema")?;
            let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
            Some(crate::schema::check_schema(s, &base))
        })
        .flatten()
        .collect()
}

/// Generic metadata/data validation, then the CRD schema for custom resources.
pub(crate) fn validate(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    if let Some(decode) = rt.decode {
        decode(obj).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {e}",
                rt.kind, rt.version, rt.kind
            ))
        })?;
    }
    let mut causes = crate::api::validation::validate_object(
        &rt.group,
        &rt.plural,
        &rt.kind,
        rt.namespaced,
        obj,
    );
    if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
        causes.extend(crd_schema_causes(obj));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            meta::name(obj),
            &causes,
        ));
    }
    Ok(())
}
