//! The attributes of a request that authorization decides on — upstream's `RequestInfo`
//! (`apiserver/pkg/endpoints/request/requestinfo.go`), derived from the URL alone, before
//! routing, so that an unknown path is refused (403) before it is found missing (404) — and the
//! 403 `Forbidden` Status upstream answers (`responsewriters.Forbidden`).

use serde_json::json;

use super::UserInfo;
use crate::api::status::ApiError;

/// What a request does, as the RBAC authorizer sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`, …; for non-resource requests the lower-cased HTTP method.
    pub verb: String,
    /// A request for an API resource (else a non-resource URL such as `/healthz`).
    pub resource_request: bool,
    /// The URL path (non-resource requests match rules by it).
    pub path: String,
    pub namespace: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
}

impl Attributes {
    /// A resource request (as a SubjectAccessReview's `resourceAttributes` names one).
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> Self {
        Attributes {
            verb: verb.to_string(),
            resource_request: true,
            api_group: group.to_string(),
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            ..Default::default()
        }
    }

    /// A non-resource request.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes {
            verb: verb.to_string(),
            path: path.to_string(),
            ..Default::default()
        }
    }

    /// The attributes of an HTTP request: `path`, and `param` looks up a decoded query
    /// parameter (`watch` and a `metadata.name` field selector make a list a watch or name
    /// one object).
    pub fn from_request<'q>(
        method: &str,
        path: &str,
        param: impl Fn(&str) -> Option<&'q str>,
    ) -> Self {
        let mut a = Attributes::non_resource(&method.to_ascii_lowercase(), path);
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let rest: &[&str] = match parts.as_slice() {
            ["api", v, rest @ ..] if !rest.is_empty() => {
                a.api_version = v.to_string();
                rest
            }
            ["apis", g, v, rest @ ..] if !rest.is_empty() => {
                a.api_group = g.to_string();
                a.api_version = v.to_string();
                rest
            }
            _ => return Attributes::non_resource(&method.to_ascii_lowercase(), path),
        };
        a.resource_request = true;
        let rest = a.verb_and_namespace(method, rest);
        if !a.resource_request {
            return Attributes::non_resource(&method.to_ascii_lowercase(), path);
        }
        a.resource = rest.first().map(|s| s.to_string()).unwrap_or_default();
        a.name = rest.get(1).map(|s| s.to_string()).unwrap_or_default();
        a.subresource = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
        a.collection_verb(param("watch"), param("fieldSelector"));
        a
    }

    /// Sets the verb (from `/watch/` or the method) and the namespace; returns the parts from
    /// the resource on. An empty `/watch/` is not a resource request.
    fn verb_and_namespace<'p>(&mut self, method: &str, mut rest: &'p [&'p str]) -> &'p [&'p str] {
        if rest.first() == Some(&"watch") {
            if rest.len() < 2 {
                self.resource_request = false;
                return rest;
            }
            self.verb = "watch".into();
            rest = &rest[1..];
        } else {
            self.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .into();
        }
        if rest.first() == Some(&"namespaces") && rest.len() > 1 {
            self.namespace = rest[1].to_string();
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        rest
    }

    /// A `get` without a name is a `list` or `watch` (a `metadata.name=` field selector names
    /// the object); a `delete` without one is a `deletecollection`.
    fn collection_verb(&mut self, watch: Option<&str>, field_selector: Option<&str>) {
        if !self.name.is_empty() {
            return;
        }
        if self.verb == "get" {
            let watch = matches!(watch, Some("true" | "1" | "t" | "True" | "TRUE"));
            self.verb = if watch { "watch" } else { "list" }.into();
            self.name = selected_name(field_selector.unwrap_or(""));
        } else if self.verb == "delete" {
            self.verb = "deletecollection".into();
        }
    }

    /// `resource` or `resource/subresource`, as rules and messages name it.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// The name a field selector requires exactly (`metadata.name=x` or `==x` among its terms),
/// if it is a valid path segment.
fn selected_name(selector: &str) -> String {
    selector
        .split(',')
        .filter_map(|t| t.trim().strip_prefix("metadata.name"))
        .filter_map(|v| v.strip_prefix("==").or_else(|| v.strip_prefix('=')))
        .find(|n| !n.is_empty() && *n != "." && *n != ".." && !n.contains(['/', '%']))
        .unwrap_or_default()
        .to_string()
}

/// Upstream's `forbiddenMessage`: who cannot do what, where.
pub(crate) fn forbidden_message(user: &UserInfo, a: &Attributes) -> String {
    let who = &user.name;
    if !a.resource_request {
        return format!("User {who:?} cannot {} path {:?}", a.verb, a.path);
    }
    let resource = a.combined_resource();
    if a.namespace.is_empty() {
        format!(
            "User {who:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
            a.verb, a.api_group
        )
    } else {
        format!(
            "User {who:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
            a.verb, a.api_group, a.namespace
        )
    }
}

/// The 403 `Forbidden` Status (apimachinery's `NewForbidden` over the message, with the
/// authorizer's reason after a colon when there is one).
pub(crate) fn forbidden(user: &UserInfo, a: &Attributes, reason: &str) -> ApiError {
    let mut err = forbidden_message(user, a);
    if !reason.is_empty() {
        err = format!("{err}: {reason}");
    }
    let qualified = match (a.resource.as_str(), a.api_group.as_str()) {
        ("", "") => String::new(),
        (r, "") => r.to_string(),
        (r, g) => format!("{r}.{g}"),
    };
    let message = if qualified.is_empty() {
        format!("forbidden: {err}")
    } else if a.name.is_empty() {
        format!("{qualified} is forbidden: {err}")
    } else {
        format!("{qualified} {:?} is forbidden: {err}", a.name)
    };
    let mut details = json!({});
    for (k, v) in [
        ("name", &a.name),
        ("group", &a.api_group),
        ("kind", &a.resource),
    ] {
        if !v.is_empty() {
            details[k] = json!(v);
        }
    }
    ApiError::new(403, "Forbidden", message).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: &str, url: &str) -> Attributes {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let pairs: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
        Attributes::from_request(method, path, |k| {
            pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| *v)
        })
    }

    #[test]
    fn verbs_and_scopes_come_from_the_url() {
        let a = attrs("GET", "/api/v1/namespaces/default/pods");
        assert_eq!(
            (a.verb.as_str(), a.namespace.as_str(), a.resource.as_str()),
            ("list", "default", "pods")
        );
        assert!(a.resource_request);
        assert_eq!(attrs("GET", "/api/v1/pods?&watch=true").verb, "watch");
        assert_eq!(
            attrs("GET", "/api/v1/watch/namespaces/a/pods").verb,
            "watch"
        );
        assert_eq!(
            attrs("GET", "/api/v1/watch/namespaces/a/pods").namespace,
            "a"
        );
        assert_eq!(
            attrs("DELETE", "/apis/apps/v1/namespaces/a/deployments").verb,
            "deletecollection"
        );
        let s = attrs("PUT", "/apis/apps/v1/namespaces/a/deployments/d/scale");
        assert_eq!(
            (
                s.verb.as_str(),
                s.api_group.as_str(),
                s.name.as_str(),
                s.subresource.as_str()
            ),
            ("update", "apps", "d", "scale")
        );
        let n = attrs("GET", "/api/v1/namespaces/foo");
        assert_eq!(
            (n.resource.as_str(), n.name.as_str(), n.namespace.as_str()),
            ("namespaces", "foo", "foo")
        );
        let f = attrs("PUT", "/api/v1/namespaces/foo/finalize");
        assert_eq!(
            (f.resource.as_str(), f.name.as_str(), f.subresource.as_str()),
            ("namespaces", "foo", "finalize")
        );
        let c = attrs("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles");
        assert_eq!((c.verb.as_str(), c.namespace.as_str()), ("create", ""));
    }

    #[test]
    fn a_name_field_selector_names_the_object() {
        let a = attrs(
            "GET",
            "/api/v1/namespaces/d/pods?fieldSelector=metadata.name=p1&watch=1",
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "p1"));
        assert_eq!(
            attrs("GET", "/api/v1/pods?fieldSelector=spec.nodeName=n").name,
            ""
        );
    }

    #[test]
    fn non_resource_paths() {
        for p in [
            "/healthz",
            "/api",
            "/apis",
            "/apis/apps",
            "/version",
            "/metrics",
            "/openapi/v3",
            "/api/v1",
            "/apis/apps/v1",
            "/api/v1/watch",
        ] {
            let a = attrs("GET", p);
            assert!(!a.resource_request, "{p}");
            assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", p));
        }
    }

    #[test]
    fn forbidden_messages_are_upstreams() {
        let sa = UserInfo::new("system:serviceaccount:default:sa", vec![]);
        let e = forbidden(&sa, &attrs("GET", "/api/v1/namespaces/default/pods"), "");
        assert_eq!(
            e.message,
            r#"pods is forbidden: User "system:serviceaccount:default:sa" cannot list resource "pods" in API group "" in the namespace "default""#
        );
        assert_eq!(e.code, 403);
        let u = UserInfo::new("bob", vec![]);
        let e = forbidden(
            &u,
            &attrs("GET", "/apis/apps/v1/namespaces/x/deployments/d/scale"),
            "",
        );
        assert_eq!(
            e.message,
            r#"deployments.apps "d" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "x""#
        );
        assert_eq!(
            e.details,
            Some(json!({"name": "d", "group": "apps", "kind": "deployments"}))
        );
        let e = forbidden(
            &u,
            &attrs("GET", "/api/v1/nodes"),
            "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found",
        );
        assert_eq!(
            e.message,
            r#"nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
        );
        let e = forbidden(&u, &attrs("GET", "/metrics"), "");
        assert_eq!(
            e.message,
            r#"forbidden: User "bob" cannot get path "/metrics""#
        );
    }
}
