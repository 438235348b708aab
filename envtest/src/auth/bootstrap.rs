//! The default RBAC policy kube-apiserver's bootstrap controller writes at start
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`), the part tests and kubectl rely on:
//! `cluster-admin` (bound to `system:masters`), `system:discovery`, `system:basic-user` (may
//! create the self reviews, so `kubectl auth can-i` / `whoami` work for everyone) and
//! `system:public-info-viewer`, bound to every authenticated user; and the user-facing
//! `admin`, `edit` and `view` ClusterRoles, aggregated from the `system:aggregate-to-*` roles
//! by their `rbac.authorization.k8s.io/aggregate-to-*` labels. The environment seeds these
//! objects; they are ordinary objects afterwards.

use serde_json::{Value, json};

const API_VERSION: &str = "rbac.authorization.k8s.io/v1";
const AGGREGATE: &str = "rbac.authorization.k8s.io/aggregate-to-";

fn meta(name: &str, labels: Value) -> Value {
    let mut l = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    if let (Some(m), Some(extra)) = (l.as_object_mut(), labels.as_object()) {
        m.extend(extra.clone());
    }
    json!({"name": name, "labels": l, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
}

fn role(name: &str, labels: Value, rules: Value) -> (&'static str, Value) {
    (
        "clusterroles",
        json!({"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": meta(name, labels), "rules": rules}),
    )
}

fn aggregated(name: &str, to: &str, labels: Value) -> (&'static str, Value) {
    let selector = json!({"matchLabels": {format!("{AGGREGATE}{to}"): "true"}});
    let (plural, mut v) = role(name, labels, json!([]));
    v["aggregationRule"] = json!({"clusterRoleSelectors": [selector]});
    (plural, v)
}

fn binding(role: &str, groups: &[&str]) -> (&'static str, Value) {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    (
        "clusterrolebindings",
        json!({"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": meta(role, json!({})),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}, "subjects": subjects}),
    )
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// What `view` may read (upstream's `system:aggregate-to-view`, the common groups).
fn view_rules() -> Value {
    json!([
        rule(
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status"
            ],
            READ
        ),
        rule(
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status"
            ],
            READ
        ),
        rule(&[""], &["namespaces"], READ),
        rule(&["discovery.k8s.io"], &["endpointslices"], READ),
        rule(
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status"
            ],
            READ
        ),
        rule(
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status"
            ],
            READ
        ),
        rule(
            &["batch"],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
            READ
        ),
        rule(
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
            READ
        ),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
            READ
        ),
    ])
}

/// What `edit` may change besides (upstream's `system:aggregate-to-edit`, the common groups).
fn edit_rules() -> Value {
    json!([
        rule(
            &[""],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy"
            ],
            READ
        ),
        rule(&[""], &["serviceaccounts"], &["impersonate"]),
        rule(
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["pods/eviction"], &["create"]),
        rule(
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["serviceaccounts/token"], &["create"]),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale"
            ],
            WRITE
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], WRITE),
        rule(&["policy"], &["poddisruptionbudgets"], WRITE),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
            WRITE
        ),
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]
        ),
    ])
}

/// The default ClusterRoles and ClusterRoleBindings, as (plural, object).
pub(crate) fn objects() -> Vec<(&'static str, Value)> {
    let all = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let to = |names: &[&str]| {
        Value::Object(
            names
                .iter()
                .map(|n| (format!("{AGGREGATE}{n}"), json!("true")))
                .collect(),
        )
    };
    vec![
        role(
            "cluster-admin",
            json!({}),
            json!([rule(&["*"], &["*"], &["*"]), {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        ),
        role(
            "system:discovery",
            json!({}),
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        role(
            "system:basic-user",
            json!({}),
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"]
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"]
                ),
            ]),
        ),
        role(
            "system:public-info-viewer",
            json!({}),
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        aggregated("admin", "admin", json!({})),
        aggregated("edit", "edit", to(&["admin"])),
        aggregated("view", "view", to(&["admin", "edit"])),
        role(
            "system:aggregate-to-admin",
            to(&["admin"]),
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"]
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                    &all
                ),
            ]),
        ),
        role(
            "system:aggregate-to-edit",
            to(&["admin", "edit"]),
            edit_rules(),
        ),
        role(
            "system:aggregate-to-view",
            to(&["admin", "edit", "view"]),
            view_rules(),
        ),
        binding("cluster-admin", &["system:masters"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]
}
