//! `POST pods/{name}/eviction` (`EvictionREST` in
//! `k8s.io/kubernetes/pkg/registry/core/pod/storage/eviction.go`): an `Eviction` (policy/v1 or
//! v1beta1, named as the URL's pod) whose `deleteOptions` are read as a DELETE's would be,
//! together with the request's query ([`delete::options`]: dry run, preconditions, propagation
//! policy, grace period), and drive the pod's deletion through the registry's one delete path
//! ([`hooks::delete_object`]). Answers 201 with a `Success` Status, as upstream. ctrl-envtest
//! reads no PodDisruptionBudget, so no eviction is refused with upstream's 429.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};
use serde_json::{Value, json};

use super::delete;
use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{self, Body, Req};
use crate::registry::hooks;
use crate::{api::meta, api::status};

/// Serves an eviction of the pod `name` (POST only; other methods are a 405).
pub(crate) fn handle(
    state: &Arc<State>,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    if req.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let body = crate::endpoints::decode_body(req)?;
    let kind = body
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Eviction");
    let av = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("policy/v1");
    if kind != "Eviction" || !["policy/v1", "policy/v1beta1"].contains(&av) {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {av:?} cannot be handled as a Eviction"
        )));
    }
    if meta::name(&body) != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let opts = body
        .get("deleteOptions")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let del = Req {
        method: Method::DELETE,
        query: req.query.clone(),
        headers: req.headers.clone(),
        body: Bytes::from(serde_json::to_vec(&opts).unwrap_or_default()),
        warnings: req.warnings.clone(),
        served_as: None,
        user: req.user.clone(),
    };
    let opts = delete::options(&del)?;
    let (pod, _) = hooks::delete_object(state, &r.rt, r.namespace.as_deref(), name, &opts)?;
    let uid = meta::meta_str(&pod.obj, "uid").unwrap_or("");
    let mut out = status::success(&r.rt.group, &r.rt.plural, name, uid);
    out["code"] = json!(201);
    Ok(endpoints::object(201, &out, req))
}
