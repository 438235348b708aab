//! The create-only review resources and the ServiceAccount `token` subresource, answered from
//! [`super::Auth`] as kube-apiserver's `pkg/registry/authentication` and
//! `pkg/registry/authorization` do: `TokenReview` (who a token is), `SubjectAccessReview` (may
//! this user do that), `SelfSubjectAccessReview` (`kubectl auth can-i`),
//! `SelfSubjectRulesReview` (`kubectl auth can-i --list`), `SelfSubjectReview`
//! (`kubectl auth whoami`) and `TokenRequest` (`kubectl create token`). The caller decodes
//! the body and type-checks it; these functions fill in `status` (nothing is stored).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::attributes::Attributes;
use super::token::{self, Claims};
use super::{Auth, Authorization, Decision, MASTERS, UserInfo, rbac};
use crate::api::status::ApiError;
use crate::api::validation::FieldCause;

/// The review object `obj` (a create of `plural` by `user`, in `namespace` for the local
/// review) with its `status` filled in.
pub(crate) fn answer(
    auth: &Auth,
    user: &UserInfo,
    plural: &str,
    namespace: &str,
    mut obj: Value,
) -> Result<Value, ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of a review must be an object",
        ));
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let status = match plural {
        "tokenreviews" => token_review(auth, &spec)?,
        "subjectaccessreviews" => subject_access_review(auth, &spec, "SubjectAccessReview", None)?,
        "localsubjectaccessreviews" => {
            subject_access_review(auth, &spec, "LocalSubjectAccessReview", Some(namespace))?
        }
        "selfsubjectaccessreviews" => self_access_review(auth, user, &spec)?,
        "selfsubjectrulesreviews" => self_rules_review(auth, user, &spec)?,
        "selfsubjectreviews" => json!({"userInfo": user.to_value()}),
        _ => return Err(ApiError::method_not_allowed()),
    };
    obj["status"] = status;
    Ok(obj)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn string(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn token_review(auth: &Auth, spec: &Value) -> Result<Value, ApiError> {
    let t = string(spec, "token");
    if t.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    Ok(
        match auth.authn.token_user(&t, &strings(spec.get("audiences"))) {
            Some((u, audiences)) => {
                json!({"authenticated": true, "user": u.to_value(), "audiences": audiences})
            }
            None if t.contains('.') => json!({"user": {}, "error": "invalid bearer token"}),
            None => json!({"user": {}}),
        },
    )
}

/// The attributes a review's `resourceAttributes` or `nonResourceAttributes` name; `kind`
/// names the review in the 422 when neither (or both) is given.
fn review_attributes(
    spec: &Value,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Attributes, ApiError> {
    let (res, non) = (
        spec.get("resourceAttributes").filter(|v| v.is_object()),
        spec.get("nonResourceAttributes").filter(|v| v.is_object()),
    );
    let cause = match (res, non) {
        (Some(_), Some(n)) => Some(FieldCause::invalid(
            "spec.nonResourceAttributes",
            n,
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => Some(FieldCause::invalid(
            "spec.resourceAttributes",
            &Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => None,
    };
    if let Some(c) = cause {
        return Err(ApiError::invalid("authorization.k8s.io", kind, "", &[c]));
    }
    if let Some(n) = non {
        return Ok(Attributes::non_resource(
            &string(n, "verb"),
            &string(n, "path"),
        ));
    }
    let r = res.unwrap_or(&Value::Null);
    let ns = namespace.map_or_else(|| string(r, "namespace"), String::from);
    let mut a = Attributes::resource(
        &string(r, "verb"),
        &string(r, "group"),
        &string(r, "resource"),
        &ns,
    );
    a.api_version = string(r, "version");
    a.subresource = string(r, "subresource");
    a.name = string(r, "name");
    Ok(a)
}

/// `{allowed, reason}` of a decision (empty reasons left out, as upstream).
fn decision_status(d: Decision) -> Value {
    let (allowed, reason) = match d {
        Decision::Allow(r) => (true, r),
        Decision::Deny(r) => (false, r),
    };
    let mut s = json!({"allowed": allowed});
    if !reason.is_empty() {
        s["reason"] = json!(reason);
    }
    s
}

fn subject_access_review(
    auth: &Auth,
    spec: &Value,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Value, ApiError> {
    let attrs = review_attributes(spec, kind, namespace)?;
    let user = UserInfo {
        name: string(spec, "user"),
        uid: string(spec, "uid"),
        groups: strings(spec.get("groups")),
        extra: serde_json::from_value::<BTreeMap<String, Vec<String>>>(
            spec.get("extra").cloned().unwrap_or(json!({})),
        )
        .unwrap_or_default(),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        let c = FieldCause::invalid(
            "spec.user",
            &json!(""),
            "at least one of user or group must be specified",
        );
        return Err(ApiError::invalid("authorization.k8s.io", kind, "", &[c]));
    }
    Ok(decision_status(auth.authorize(&user, &attrs)))
}

fn self_access_review(auth: &Auth, user: &UserInfo, spec: &Value) -> Result<Value, ApiError> {
    let attrs = review_attributes(spec, "SelfSubjectAccessReview", None)?;
    Ok(decision_status(auth.authorize(user, &attrs)))
}

/// Every rule of the user in the namespace: `*` for `system:masters` (and under
/// AlwaysAllow), else the RBAC rules, split into resource and non-resource rules.
fn self_rules_review(auth: &Auth, user: &UserInfo, spec: &Value) -> Result<Value, ApiError> {
    let ns = string(spec, "namespace");
    if ns.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let mut resource = Vec::new();
    let mut non_resource = Vec::new();
    if user.groups.iter().any(|g| g == MASTERS) || auth.mode == Authorization::AlwaysAllow {
        resource.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        non_resource.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    let (rules, errors) = rbac::rules_for(auth.store(), user, &ns);
    for r in rules {
        if r.resources.as_ref().is_some_and(|x| !x.is_empty()) {
            let mut v = json!({"verbs": r.verbs, "apiGroups": r.api_groups.unwrap_or_default(), "resources": r.resources});
            if let Some(n) = r.resource_names.filter(|n| !n.is_empty()) {
                v["resourceNames"] = json!(n);
            }
            resource.push(v);
        }
        if let Some(u) = r.non_resource_urls.filter(|u| !u.is_empty()) {
            non_resource.push(json!({"verbs": r.verbs, "nonResourceURLs": u}));
        }
    }
    let mut status = json!({"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": !errors.is_empty()});
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    Ok(status)
}

/// The shortest and longest lives a TokenRequest may ask for, and the default (1 h).
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;
const DEFAULT_EXPIRATION: i64 = 3600;

/// `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` with the decoded body: a
/// token for the ServiceAccount (404 when it does not exist).
pub(crate) fn token_request_for(
    auth: &Auth,
    ns: &str,
    name: &str,
    body: Value,
) -> Result<Value, ApiError> {
    let kind = body
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("TokenRequest");
    if kind != "TokenRequest" {
        return Err(ApiError::bad_request(format!(
            "the body of a token request must be a TokenRequest, not {kind:?}"
        )));
    }
    let key = crate::storage::store_key("", "serviceaccounts");
    let sa = auth
        .store()
        .get_value(&key, &crate::storage::obj_key(ns, name))
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
    token_request(auth, &sa, body)
}

/// A token for the ServiceAccount `sa` (its stored object), valid for `spec.audiences`
/// (default: this server) for `spec.expirationSeconds`.
fn token_request(auth: &Auth, sa: &Value, mut req: Value) -> Result<Value, ApiError> {
    let mut spec = req.get("spec").cloned().unwrap_or(json!({}));
    if !req.is_object() || !spec.is_object() {
        return Err(ApiError::bad_request(
            "a TokenRequest and its spec must be objects",
        ));
    }
    let seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    let detail = if seconds < MIN_EXPIRATION {
        "may not specify a duration less than 10 minutes"
    } else if seconds > MAX_EXPIRATION {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        ""
    };
    let name = string(&sa["metadata"], "name");
    if !detail.is_empty() {
        let c = FieldCause::invalid("spec.expirationSeconds", &json!(seconds), detail);
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            &name,
            &[c],
        ));
    }
    let mut audiences = strings(spec.get("audiences"));
    if audiences.is_empty() {
        audiences.push(token::ISSUER.to_string());
    }
    let now = token::unix_now();
    let claims = Claims {
        namespace: string(&sa["metadata"], "namespace"),
        name: name.clone(),
        uid: string(&sa["metadata"], "uid"),
        audiences: audiences.clone(),
        id: crate::api::meta::new_uid(),
        expires: now + seconds,
    };
    let expires = k8s_openapi::jiff::Timestamp::from_second(claims.expires)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!("TokenRequest");
    req["metadata"] = json!({"name": name, "namespace": claims.namespace, "creationTimestamp": crate::api::meta::now()});
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(seconds);
    req["spec"] = spec;
    req["status"] =
        json!({"token": auth.authn.signer.issue(&claims, now), "expirationTimestamp": expires});
    Ok(req)
}

#[cfg(test)]
mod tests;
