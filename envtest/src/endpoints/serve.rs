//! The targets of the router: a routed request (its body already read) goes to the resource
//! handlers, discovery, the OpenAPI documents or the health answer; `Accept` headers that
//! allow no JSON are refused (406) and aggregated discovery is chosen when asked for.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response};

use super::handlers::versioned;
use super::router::Route;
use super::{Body, Req, State, bytes, discovery, json};
use crate::api::status::ApiError;
use crate::registry::Snapshot;

/// Serves a routed request: the resource handlers (through `handlers::versioned`, which
/// converts custom resources served at a non-storage version), discovery, OpenAPI, health.
pub(crate) async fn serve(
    state: &Arc<State>,
    route: Route,
    snap: &Snapshot,
    req: Req,
) -> Result<Response<Body>, ApiError> {
    let accept = req.header(http::header::ACCEPT);
    let protobuf = matches!(&route, Route::Resource(r) if r.rt.crd.is_none());
    if !matches!(route, Route::Health) && !accept.is_empty() && !acceptable(accept, protobuf) {
        let accepted = if protobuf {
            "application/json, application/yaml, application/vnd.kubernetes.protobuf"
        } else {
            "application/json, application/yaml"
        };
        return Err(ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {accepted}"),
        ));
    }
    let is_get = req.method == Method::GET;
    match route {
        // Webhook conversion (`versioned`) wraps the handlers for non-storage versions.
        Route::Resource(r) => versioned::dispatch(state, r, req).await,
        _ if !is_get => Err(ApiError::method_not_allowed()),
        Route::Health => Ok(bytes(
            200,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"ok"),
        )),
        Route::Version => Ok(json(200, &discovery::version())),
        Route::CoreVersions => Ok(discovery::core_versions(state, snap, aggregated(accept))),
        Route::Groups => Ok(discovery::groups(snap, aggregated(accept))),
        Route::Group(g) => Ok(json(200, &discovery::group(snap, &g))),
        Route::ResourceList(g, v) => Ok(json(200, &discovery::resource_list(snap, &g, &v))),
        Route::OpenApiRoot => Ok(json(200, &discovery::openapi_root(snap))),
        Route::OpenApiDoc(g, v) => discovery::openapi_doc(snap, &g, &v)
            .map(|d| json(200, &d))
            .ok_or_else(ApiError::unknown_path),
    }
}

/// JSON is acceptable, and protobuf where the route's kinds have a protobuf form (built-ins;
/// custom resources do not, as upstream's).
fn acceptable(accept: &str, protobuf: bool) -> bool {
    accept.split(',').any(|m| {
        let m = m.trim();
        (protobuf && m.starts_with(crate::api::protobuf::MEDIA))
            || m.starts_with("application/json")
            || m.starts_with("*/*")
            || m.starts_with("application/*")
            || m.starts_with("application/yaml")
            || m.is_empty()
    })
}

fn aggregated(accept: &str) -> bool {
    accept.split(',').any(|m| {
        m.contains("g=apidiscovery.k8s.io")
            && m.contains("v=v2")
            && !m.contains("v=v2beta1")
            && m.contains("as=APIGroupDiscoveryList")
    })
}
