//! RBAC against ctrl-envtest through kube clients of restricted users (`Environment::add_user`):
//! every verb allowed and denied, namespaced and cluster scope, resourceNames, subresources,
//! aggregation, non-resource URLs, bindings added and removed at run time, impersonation — and
//! the 403 messages equal kube-apiserver's. Denied writes change nothing.

use crate::common;

use common::status_of;
use ctrl_envtest::{Authorization, Environment};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn client(cfg: kube::Config) -> Client {
    Client::try_from(cfg).expect("client")
}

/// Creates an RBAC object (or any object) from JSON as the admin.
async fn create<K>(admin: &Client, ns: Option<&str>, v: Value) -> K
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(admin.clone(), ns.unwrap_or("default"));
    api.create(
        &PostParams::default(),
        &serde_json::from_value(v).expect("object"),
    )
    .await
    .expect("create")
}

async fn create_cluster<K>(admin: &Client, v: Value) -> K
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(admin.clone());
    api.create(
        &PostParams::default(),
        &serde_json::from_value(v).expect("object"),
    )
    .await
    .expect("create")
}

fn role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

fn binding(name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role}, "subjects": subjects})
}

fn user(name: &str) -> Value {
    json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}])
}

async fn namespace(admin: &Client, name: &str) {
    create_cluster::<k8s_openapi::api::core::v1::Namespace>(
        admin,
        json!({"metadata": {"name": name}}),
    )
    .await;
}

/// The 403 message of a failed call.
fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> String {
    let s = status_of(r.expect_err("expected 403"));
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"), "{s:?}");
    s.message
}

const MSG_NS: &str =
    r#"User "alice" cannot {verb} resource "configmaps" in API group "" in the namespace "team""#;

fn msg(verb: &str) -> String {
    MSG_NS.replace("{verb}", verb)
}

#[tokio::test]
async fn every_verb_is_checked_against_a_namespaced_role() {
    let env = common::env().await;
    let admin = env.client();
    namespace(&admin, "team").await;
    let alice = client(env.add_user("alice", &[]));
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "team");
    admin_cms
        .create(&PostParams::default(), &common::cm("c1", &[("k", "v")]))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(alice.clone(), "team");

    assert_eq!(
        forbidden(cms.list(&ListParams::default()).await),
        format!("configmaps is forbidden: {}", msg("list"))
    );
    create::<Role>(&admin, Some("team"), role("reader", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]))).await;
    create::<RoleBinding>(
        &admin,
        Some("team"),
        binding("alice-reads", "Role", "reader", user("alice")),
    )
    .await;

    assert_eq!(cms.get("c1").await.unwrap().data.unwrap()["k"], "v");
    assert_eq!(
        cms.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let mut w = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));

    let denied_create = forbidden(
        cms.create(&PostParams::default(), &common::cm("c2", &[]))
            .await,
    );
    assert_eq!(
        denied_create,
        format!("configmaps is forbidden: {}", msg("create"))
    );
    let mut changed = common::cm("c1", &[("k", "changed")]);
    changed.metadata.resource_version =
        admin_cms.get("c1").await.unwrap().metadata.resource_version;
    assert_eq!(
        forbidden(cms.replace("c1", &PostParams::default(), &changed).await),
        format!("configmaps \"c1\" is forbidden: {}", msg("update"))
    );
    let p = Patch::Merge(json!({"data": {"k": "patched"}}));
    assert_eq!(
        forbidden(cms.patch("c1", &PatchParams::default(), &p).await),
        format!("configmaps \"c1\" is forbidden: {}", msg("patch"))
    );
    let ssa =
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "applied"}}));
    assert_eq!(
        forbidden(cms.patch("c1", &PatchParams::apply("alice"), &ssa).await),
        format!("configmaps \"c1\" is forbidden: {}", msg("patch"))
    );
    assert_eq!(
        forbidden(cms.delete("c1", &DeleteParams::default()).await),
        format!("configmaps \"c1\" is forbidden: {}", msg("delete"))
    );
    assert_eq!(
        forbidden(
            cms.delete_collection(&DeleteParams::default(), &ListParams::default())
                .await
        ),
        format!("configmaps is forbidden: {}", msg("deletecollection"))
    );

    // Nothing a denied request asked for happened.
    let stored = admin_cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(stored.items.len(), 1);
    assert_eq!(stored.items[0].data.as_ref().unwrap()["k"], "v");
    assert!(
        stored.items[0]
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .all(|m| m.manager.as_deref() != Some("alice"))
    );

    // Another namespace and all namespaces stay out of reach.
    let other: Api<ConfigMap> = Api::namespaced(alice.clone(), "default");
    assert_eq!(
        forbidden(other.list(&ListParams::default()).await),
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    let all: Api<ConfigMap> = Api::all(alice.clone());
    assert_eq!(
        forbidden(all.list(&ListParams::default()).await),
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope"#
    );
}

#[tokio::test]
async fn bindings_added_and_removed_at_run_time_take_effect_at_once() {
    let env = common::env().await;
    let admin = env.client();
    namespace(&admin, "team").await;
    let cms: Api<ConfigMap> = Api::namespaced(client(env.add_user("alice", &["devs"])), "team");
    create::<Role>(
        &admin,
        Some("team"),
        role(
            "writer",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]),
        ),
    )
    .await;
    forbidden(
        cms.create(&PostParams::default(), &common::cm("c", &[]))
            .await,
    );

    // Bound through a group.
    create::<RoleBinding>(
        &admin,
        Some("team"),
        binding(
            "devs-write",
            "Role",
            "writer",
            json!([{"kind": "Group", "name": "devs"}]),
        ),
    )
    .await;
    cms.create(&PostParams::default(), &common::cm("c", &[]))
        .await
        .expect("allowed once bound");
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    cms.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();

    let rbs: Api<RoleBinding> = Api::namespaced(admin.clone(), "team");
    rbs.delete("devs-write", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        forbidden(cms.list(&ListParams::default()).await),
        format!("configmaps is forbidden: {}", msg("list"))
    );

    // A binding to a role that does not exist grants nothing, and the reason says why.
    create::<RoleBinding>(
        &admin,
        Some("team"),
        binding("dangling", "Role", "missing", user("alice")),
    )
    .await;
    assert_eq!(
        forbidden(cms.list(&ListParams::default()).await),
        format!(
            "configmaps is forbidden: {}: RBAC: role.rbac.authorization.k8s.io \"missing\" not found",
            msg("list")
        )
    );
}

#[tokio::test]
async fn cluster_roles_bound_cluster_wide_or_in_one_namespace() {
    let env = common::env().await;
    let admin = env.client();
    namespace(&admin, "team").await;
    let alice = client(env.add_user("alice", &[]));
    let nodes: Api<Node> = Api::all(alice.clone());
    assert_eq!(
        forbidden(nodes.list(&ListParams::default()).await),
        r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
    );
    create_cluster::<ClusterRole>(
        &admin,
        role(
            "node-reader",
            json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]),
        ),
    )
    .await;
    create_cluster::<ClusterRoleBinding>(
        &admin,
        binding("alice-nodes", "ClusterRole", "node-reader", user("alice")),
    )
    .await;
    nodes
        .list(&ListParams::default())
        .await
        .expect("cluster-wide grant");
    assert_eq!(
        forbidden(nodes.get("n").await),
        r#"nodes "n" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope"#
    );

    // A RoleBinding to a ClusterRole grants its rules in the binding's namespace only.
    create_cluster::<ClusterRole>(
        &admin,
        role(
            "secret-reader",
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]),
        ),
    )
    .await;
    create::<RoleBinding>(
        &admin,
        Some("team"),
        binding("secrets", "ClusterRole", "secret-reader", user("alice")),
    )
    .await;
    Api::<Secret>::namespaced(alice.clone(), "team")
        .list(&ListParams::default())
        .await
        .expect("in team");
    forbidden(
        Api::<Secret>::namespaced(alice.clone(), "default")
            .list(&ListParams::default())
            .await,
    );
    forbidden(
        Api::<Secret>::all(alice.clone())
            .list(&ListParams::default())
            .await,
    );

    // Getting a namespace is a request in that namespace (upstream's RequestInfo).
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(alice.clone());
    assert_eq!(
        forbidden(nss.get("team").await),
        r#"namespaces "team" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "team""#
    );
}

#[tokio::test]
async fn resource_names_allow_only_the_named_objects() {
    let env = common::env().await;
    let admin = env.client();
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    for n in ["mine", "theirs"] {
        admin_cms
            .create(&PostParams::default(), &common::cm(n, &[]))
            .await
            .unwrap();
    }
    create::<Role>(&admin, None, role("one", json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["mine"], "verbs": ["get", "update", "patch", "list", "watch"]}]))).await;
    create::<RoleBinding>(&admin, None, binding("one", "Role", "one", user("alice"))).await;
    let cms: Api<ConfigMap> = Api::namespaced(client(env.add_user("alice", &[])), "default");
    cms.get("mine").await.unwrap();
    cms.patch(
        "mine",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        forbidden(cms.get("theirs").await),
        r#"configmaps "theirs" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(
        forbidden(cms.list(&ListParams::default()).await),
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    // A list or watch narrowed to the name by a field selector is a request for that object.
    let one = ListParams::default().fields("metadata.name=mine");
    assert_eq!(cms.list(&one).await.unwrap().items.len(), 1);
    let mut w = cms
        .watch(&WatchParams::default().fields("metadata.name=mine"), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));
    forbidden(
        cms.list(&ListParams::default().fields("metadata.name=theirs"))
            .await,
    );
}

#[tokio::test]
async fn subresources_are_separate_permissions() {
    let env = common::env().await;
    let admin = env.client();
    let deploy: Deployment = serde_json::from_value(json!({"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    .unwrap();
    Api::<Deployment>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &deploy)
        .await
        .unwrap();
    create::<Role>(
        &admin,
        None,
        role(
            "scaler",
            json!([
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["patch"]},
        {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}]),
        ),
    )
    .await;
    create::<RoleBinding>(
        &admin,
        None,
        binding("scaler", "Role", "scaler", user("alice")),
    )
    .await;
    let ds: Api<Deployment> = Api::namespaced(client(env.add_user("alice", &[])), "default");
    ds.get("d").await.unwrap();
    let scale = Patch::Merge(json!({"spec": {"replicas": 3}}));
    assert_eq!(
        ds.patch_scale("d", &PatchParams::default(), &scale)
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(3)
    );
    assert_eq!(
        forbidden(ds.get_scale("d").await),
        r#"deployments.apps "d" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" in the namespace "default""#
    );
    ds.get_status("d").await.expect("*/status");
    assert_eq!(
        forbidden(ds.patch("d", &PatchParams::default(), &scale).await),
        r#"deployments.apps "d" is forbidden: User "alice" cannot patch resource "deployments" in API group "apps" in the namespace "default""#
    );
    assert_eq!(
        forbidden(
            ds.patch_status(
                "d",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"replicas": 9}}))
            )
            .await
        ),
        r#"deployments.apps "d" is forbidden: User "alice" cannot patch resource "deployments/status" in API group "apps" in the namespace "default""#
    );
    let stored = Api::<Deployment>::namespaced(admin, "default")
        .get("d")
        .await
        .unwrap();
    assert_eq!(
        stored.status.and_then(|s| s.replicas),
        None,
        "the denied status patch changed nothing"
    );
}

#[tokio::test]
async fn aggregated_cluster_roles_follow_their_labelled_roles() {
    let env = common::env().await;
    let admin = env.client();
    let pods: Api<Pod> = Api::namespaced(client(env.add_user("alice", &[])), "default");
    create_cluster::<ClusterRole>(&admin, json!({"metadata": {"name": "monitoring"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}]}})).await;
    create_cluster::<ClusterRoleBinding>(
        &admin,
        binding("monitoring", "ClusterRole", "monitoring", user("alice")),
    )
    .await;
    forbidden(pods.list(&ListParams::default()).await);
    create_cluster::<ClusterRole>(&admin, json!({"metadata": {"name": "pod-lister", "labels": {"example.com/aggregate-to-monitoring": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})).await;
    pods.list(&ListParams::default())
        .await
        .expect("aggregated rule");
    // The rules are stored in the aggregated role, as the aggregation controller writes them.
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let stored = roles
        .get("monitoring")
        .await
        .unwrap()
        .rules
        .unwrap_or_default();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].resources, Some(vec!["pods".to_string()]));
    roles
        .delete("pod-lister", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        roles
            .get("monitoring")
            .await
            .unwrap()
            .rules
            .unwrap_or_default()
            .len(),
        0
    );
    forbidden(pods.list(&ListParams::default()).await);
    create_cluster::<ClusterRole>(&admin, json!({"metadata": {"name": "pod-lister", "labels": {"example.com/aggregate-to-monitoring": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})).await;
    forbidden(pods.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})).unwrap()).await);

    // The bootstrapped `view` ClusterRole aggregates system:aggregate-to-view.
    let cms: Api<ConfigMap> = Api::namespaced(client(env.add_user("viewer", &[])), "default");
    create::<RoleBinding>(
        &admin,
        None,
        binding("viewer", "ClusterRole", "view", user("viewer")),
    )
    .await;
    cms.list(&ListParams::default())
        .await
        .expect("view reads configmaps");
    forbidden(
        cms.create(&PostParams::default(), &common::cm("x", &[]))
            .await,
    );
    forbidden(
        Api::<Secret>::namespaced(cms.clone().into_client(), "default")
            .list(&ListParams::default())
            .await,
    );
}

#[tokio::test]
async fn non_resource_urls_are_authorized_by_path() {
    let env = common::env().await;
    let admin = env.client();
    let alice = client(env.add_user("alice", &[]));
    let get = |c: &Client, path: &str| {
        let c = c.clone();
        let req = http::Request::get(path).body(Vec::new()).unwrap();
        async move { c.request_text(req).await }
    };
    assert_eq!(
        forbidden(get(&alice, "/metrics").await),
        r#"forbidden: User "alice" cannot get path "/metrics""#
    );
    get(&alice, "/healthz").await.expect("public info");
    get(&alice, "/version").await.expect("public info");
    get(&alice, "/apis").await.expect("discovery");
    create_cluster::<ClusterRole>(
        &admin,
        role(
            "metrics",
            json!([{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}]),
        ),
    )
    .await;
    create_cluster::<ClusterRoleBinding>(
        &admin,
        binding("metrics", "ClusterRole", "metrics", user("alice")),
    )
    .await;
    // Allowed now, and the path is simply not served here.
    assert_eq!(
        status_of(get(&alice, "/metrics").await.unwrap_err()).code,
        404
    );
    assert_eq!(
        status_of(get(&alice, "/debug/pprof").await.unwrap_err()).code,
        404
    );
    forbidden(get(&alice, "/debugging").await);
}

#[tokio::test]
async fn watches_are_checked_like_lists() {
    let env = common::env().await;
    let admin = env.client();
    create::<Role>(
        &admin,
        None,
        role(
            "watcher",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["watch"]}]),
        ),
    )
    .await;
    create::<RoleBinding>(
        &admin,
        None,
        binding("watcher", "Role", "watcher", user("alice")),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client(env.add_user("alice", &[])), "default");
    forbidden(cms.list(&ListParams::default()).await);
    let mut w = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    Api::<ConfigMap>::namespaced(admin, "default")
        .create(&PostParams::default(), &common::cm("seen", &[]))
        .await
        .unwrap();
    match w.next().await {
        Some(Ok(WatchEvent::Added(cm))) => assert_eq!(cm.metadata.name.as_deref(), Some("seen")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    let bob: Api<ConfigMap> = Api::namespaced(client(env.add_user("bob", &[])), "default");
    assert_eq!(
        forbidden(bob.watch(&WatchParams::default(), "0").await.map(|_| ())),
        r#"configmaps is forbidden: User "bob" cannot watch resource "configmaps" in API group "" in the namespace "default""#
    );
}

#[tokio::test]
async fn masters_and_always_allow_bypass_rbac() {
    let env = common::env().await;
    let root: Api<Secret> = Api::all(client(env.add_user("root", &["system:masters"])));
    root.list(&ListParams::default())
        .await
        .expect("system:masters");
    let open = Environment::builder()
        .authorization(Authorization::AlwaysAllow)
        .start()
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(open.add_user("alice", &[])), "default");
    cms.create(&PostParams::default(), &common::cm("c", &[]))
        .await
        .expect("AlwaysAllow");
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let env = common::env().await;
    let admin = env.client();
    create_cluster::<ClusterRole>(&admin, role("imp", json!([{"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"], "verbs": ["impersonate"]}]))).await;
    create_cluster::<ClusterRoleBinding>(
        &admin,
        binding("imp", "ClusterRole", "imp", user("alice")),
    )
    .await;
    create::<Role>(
        &admin,
        None,
        role(
            "cm",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
        ),
    )
    .await;
    create::<RoleBinding>(&admin, None, binding("bob", "Role", "cm", user("bob"))).await;
    let alice_cfg = env.add_user("alice", &[]);
    forbidden(
        Api::<ConfigMap>::default_namespaced(client(alice_cfg.clone()))
            .list(&ListParams::default())
            .await,
    );
    let mut as_bob = alice_cfg.clone();
    as_bob.auth_info.impersonate = Some("bob".into());
    Api::<ConfigMap>::default_namespaced(client(as_bob))
        .list(&ListParams::default())
        .await
        .expect("alice as bob");
    let mut as_carol = alice_cfg;
    as_carol.auth_info.impersonate = Some("carol".into());
    assert_eq!(
        forbidden(
            Api::<ConfigMap>::default_namespaced(client(as_carol))
                .list(&ListParams::default())
                .await
        ),
        r#"users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    // The admin (system:masters) may impersonate anyone; the impersonated user's rights apply.
    let mut admin_as_dave = env.config();
    admin_as_dave.auth_info.impersonate = Some("dave".into());
    admin_as_dave.auth_info.impersonate_groups = Some(vec!["readers".into()]);
    assert_eq!(
        forbidden(
            Api::<ConfigMap>::default_namespaced(client(admin_as_dave))
                .list(&ListParams::default())
                .await
        ),
        r#"configmaps is forbidden: User "dave" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
}
