//! Discovery documents, all derived from one `registry` snapshot: `/version`, legacy discovery
//! (`/api`, `/apis`, `/api/v1`, `/apis/G/V`), aggregated discovery v2 (when the Accept header asks
//! for it) and the OpenAPI v3 root (every group-version with a content hash in its URL,
//! `k8s.io/apiserver/pkg/endpoints/discovery/{root,version}.go`, `discovery/aggregated/handler.go`,
//! `k8s.io/kube-openapi/pkg/handler3/handler.go`); the per-group-version documents come from
//! `openapi`.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::endpoints::State;
use crate::endpoints::{self, Body};
use crate::registry::{ResourceType, Snapshot};

/// The Kubernetes version reported: the minor matches the k8s-openapi feature (`v1_35`).
pub(crate) fn version() -> Value {
    json!({
        "major": "1", "minor": "35", "gitVersion": "v1.35.0-ctrl-envtest", "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0", "compiler": "gc",
        "platform": "linux/amd64",
    })
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

pub(crate) fn core_versions(
    state: &Arc<State>,
    snap: &Snapshot,
    aggregated: bool,
) -> Response<Body> {
    if aggregated {
        let items: Vec<Value> = snap
            .groups()
            .iter()
            .filter(|(g, _)| g.is_empty())
            .map(|(g, vs)| agg_group(snap, g, vs))
            .collect();
        return agg_list(items);
    }
    endpoints::json(
        200,
        &json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": state.addr.to_string()}]}),
    )
}

pub(crate) fn groups(snap: &Snapshot, aggregated: bool) -> Response<Body> {
    let groups = snap.groups();
    let named = groups.iter().filter(|(g, _)| !g.is_empty());
    if aggregated {
        return agg_list(named.map(|(g, vs)| agg_group(snap, g, vs)).collect());
    }
    let list: Vec<Value> = named.map(|(g, vs)| legacy_group(g, vs)).collect();
    endpoints::json(
        200,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": list}),
    )
}

fn legacy_group(g: &str, vs: &[String]) -> Value {
    let versions: Vec<Value> = vs
        .iter()
        .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    json!({"name": g, "versions": versions, "preferredVersion": versions.first().cloned().unwrap_or_default()})
}

pub(crate) fn group(snap: &Snapshot, g: &str) -> Value {
    let vs = snap
        .groups()
        .into_iter()
        .find(|(n, _)| n == g)
        .map(|(_, v)| v)
        .unwrap_or_default();
    let mut v = legacy_group(g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    v
}

fn agg_list(items: Vec<Value>) -> Response<Body> {
    let v = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items});
    endpoints::bytes(
        200,
        AGGREGATED,
        bytes::Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
    )
}

fn agg_group(snap: &Snapshot, g: &str, vs: &[String]) -> Value {
    let versions: Vec<Value> = vs
        .iter()
        .map(|v| {
            let resources: Vec<Value> = snap
                .in_group_version(g, v)
                .map(|t| agg_resource(t))
                .collect();
            json!({"version": v, "freshness": "Current", "resources": resources})
        })
        .collect();
    json!({"metadata": {"name": g}, "versions": versions})
}

fn agg_resource(t: &ResourceType) -> Value {
    let subs: Vec<Value> = t
        .subresources()
        .map(|s| {
            let own = (t.group.as_str(), t.version.as_str(), t.kind.as_str());
            let (group, version, kind) = s.kind.unwrap_or(own);
            json!({"subresource": s.name, "responseKind": {"group": group, "version": version, "kind": kind}, "verbs": s.verbs})
        })
        .collect();
    let mut r = json!({
        "resource": t.plural,
        "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": t.verbs(),
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    if !subs.is_empty() {
        r["subresources"] = json!(subs);
    }
    r
}

pub(crate) fn resource_list(snap: &Snapshot, g: &str, v: &str) -> Value {
    let mut resources = Vec::new();
    for t in snap.in_group_version(g, v) {
        let mut r = json!({"name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind, "verbs": t.verbs()});
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        for s in t.subresources() {
            let mut r = json!({"name": format!("{}/{}", t.plural, s.name), "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": s.verbs});
            if let Some((group, version, kind)) = s.kind {
                r["group"] = json!(group);
                r["version"] = json!(version);
                r["kind"] = json!(kind);
            }
            resources.push(r);
        }
    }
    let gv = if g.is_empty() {
        v.to_string()
    } else {
        format!("{g}/{v}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

/// The OpenAPI v3 document of one group-version (built by `openapi`).
pub(crate) fn openapi_doc(snap: &Snapshot, g: &str, v: &str) -> Option<Value> {
    crate::endpoints::openapi::document(snap, g, v).map(|d| d.doc.clone())
}

/// The OpenAPI v3 root: every served group-version with a hash of its document.
pub(crate) fn openapi_root(snap: &Snapshot) -> Value {
    let mut paths = serde_json::Map::new();
    for (g, vs) in snap.groups() {
        for v in vs {
            let Some(doc) = crate::endpoints::openapi::document(snap, &g, &v) else {
                continue;
            };
            let p = crate::endpoints::openapi::gv_path(&g, &v);
            let url = format!("/openapi/v3/{p}?hash={}", doc.hash);
            paths.insert(p, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}
