//! The create-only review resources (`TokenReview`, `SubjectAccessReview`,
//! `LocalSubjectAccessReview`, `SelfSubjectAccessReview`, `SelfSubjectRulesReview`,
//! `SelfSubjectReview`) and the ServiceAccount `token` subresource (TokenRequest): the body is
//! decoded and type-checked here, [`auth::review`](crate::auth::review) answers for the requesting
//! user, and nothing is stored.

use http::{Method, Response};

use crate::api::status::ApiError;
use crate::endpoints::router::ResourceRoute;
use crate::endpoints::{self, Body, Req, State};

/// POST to a review resource: the review with its `status` filled in.
pub(crate) fn review(
    state: &State,
    r: &ResourceRoute,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    let mut obj = endpoints::decode_body(req)?;
    crate::registry::objects::check_type(&mut obj, &r.rt, None)?;
    let ns = r.namespace.as_deref().unwrap_or("");
    let out = crate::auth::review::answer(&state.auth, &req.user, &r.rt.plural, ns, obj)?;
    Ok(endpoints::object(201, &out, req))
}

/// `POST …/serviceaccounts/<name>/token`: a token for the ServiceAccount (`kubectl create
/// token`).
pub(crate) fn token_request(
    state: &State,
    r: &ResourceRoute,
    name: &str,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    if req.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let body = endpoints::decode_body(req)?;
    let ns = r.namespace.as_deref().unwrap_or("");
    let out = crate::auth::review::token_request_for(&state.auth, ns, name, body)?;
    Ok(endpoints::object(201, &out, req))
}
