//! Create (POST on a collection, `k8s.io/apiserver/pkg/endpoints/handlers/create.go`): decode,
//! check type and fields, then the registry's create
//! ([`registry::hooks::create_object`](crate::registry::hooks::create_object): namespace, name or
//! generateName, server-set metadata, type rules, validation, store and emit ADDED).

use std::sync::Arc;

use http::Response;
use serde_json::Value;

use crate::api::status::ApiError;
use crate::endpoints::State;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{Body, Req};
use crate::registry::hooks::create_object;
use crate::registry::rest::WriteOpts;

/// POST of the request's body, or of `admitted`, the object admission produced from it.
pub(crate) fn create(
    state: &Arc<State>,
    r: &ResourceRoute,
    req: &Req,
    admitted: Option<Value>,
) -> Result<Response<Body>, ApiError> {
    let who = super::Who::of(req, r)?;
    let w = WriteOpts {
        user: Some(&req.user),
        ..who.opts(&req.query)?
    };
    let obj = super::body(state, r, req, admitted)?;
    let stored = create_object(state, &r.rt, r.namespace.as_deref(), obj, w)?;
    Ok(super::respond_committed(201, &stored, &r.rt, req))
}
