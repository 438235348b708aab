//! `Manager::rbac_rules`: what a manager with a controller (`For` / `Owns` / `Watches`),
//! a recorder, leader election, secure metrics and declared permissions needs, merged
//! as controller-gen merges it; and what a bare manager needs (nothing). No API server
//! is needed: the rules come from the code, before anything starts.

use std::sync::Arc;

use ctrl::ControllerBuilder;
use ctrl::handler::EnqueueRequestsFromMapFunc;
use ctrl::manager::{Manager, Options};
use ctrl::rbac::{self, PolicyRule};
use ctrl::reconcile::{self, Action};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

fn offline_client() -> kube::Client {
    let cfg = kube::Config::new(http::Uri::from_static("http://127.0.0.1:9"));
    kube::Client::try_from(cfg).expect("client")
}

fn show(rules: &[PolicyRule]) -> Vec<String> {
    rules
        .iter()
        .map(|r| {
            let groups = r.api_groups.clone().unwrap_or_default();
            let res = r.resources.clone().unwrap_or_default();
            let names = r.resource_names.clone().unwrap_or_default();
            let urls = r.non_resource_urls.clone().unwrap_or_default();
            format!("{groups:?} {res:?} {names:?} {urls:?} {:?}", r.verbs)
        })
        .collect()
}

#[tokio::test]
async fn a_controller_with_everything_gets_exactly_what_it_uses() {
    let opts = Options {
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "0".into(),
        leader_election: true,
        leader_election_id: "rules-test".into(),
        leader_election_namespace: Some("ops".into()),
        ..ctrl::manager::Args::default().options() // secure metrics, as kubebuilder's default
    };
    let mgr = Manager::new(offline_client(), opts).expect("manager");
    let no_requests = EnqueueRequestsFromMapFunc::new(|_d: &Arc<Deployment>| Vec::new());
    ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .owns::<Secret>()
        .watches::<Deployment>(no_requests)
        .permissions([
            // Writes of its own, as +kubebuilder:rbac markers; `core` is the core group,
            // the duplicate `get` merges, the `update` on configmaps joins the watch verbs.
            rbac::rule()
                .groups(["core"])
                .resources(["secrets"])
                .verbs(["create", "delete", "get"]),
            rbac::rule()
                .groups([""])
                .resources(["configmaps"])
                .verbs(["update"]),
            rbac::rule()
                .groups([""])
                .resources(["configmaps"])
                .resource_names(["settings"])
                .verbs(["patch"]),
            rbac::rule()
                .groups(["apps"])
                .resources(["deployments/scale"])
                .verbs(["update"])
                .namespace("ops"),
        ])
        .named("rules")
        .complete(reconcile::func(
            |_ctx, _req| async move { Ok(Action::done()) },
        ))
        .expect("controller");
    let _recorder = mgr.event_recorder("rules");

    let rules = mgr.rbac_rules();
    assert_eq!(
        show(&rules.cluster),
        [
            r#"[""] ["configmaps"] [] [] ["get", "list", "update", "watch"]"#,
            r#"[""] ["configmaps"] ["settings"] [] ["patch"]"#,
            r#"[""] ["secrets"] [] [] ["create", "delete", "get", "list", "watch"]"#,
            r#"["apps"] ["deployments"] [] [] ["get", "list", "watch"]"#,
            r#"["authentication.k8s.io"] ["tokenreviews"] [] [] ["create"]"#,
            r#"["authorization.k8s.io"] ["subjectaccessreviews"] [] [] ["create"]"#,
            r#"["events.k8s.io"] ["events"] [] [] ["create", "patch"]"#,
        ]
    );
    assert_eq!(
        show(&rules.leader_election),
        [
            r#"["coordination.k8s.io"] ["leases"] [] [] ["create", "get", "list", "update", "watch"]"#
        ]
    );
    let ops = rules.namespaced.get("ops").expect("a Role in ops");
    assert_eq!(
        show(ops),
        [r#"["apps"] ["deployments/scale"] [] [] ["update"]"#]
    );
    assert!(rules.metrics_reader);

    // The manifest: SA, ClusterRole + binding, leader-election Role + binding, the
    // namespaced Role + binding, the metrics reader.
    let manifest = rbac::Manifest {
        name: "rules".into(),
        namespace: "ops".into(),
        service_account: "rules-controller-manager".into(),
        labels: Default::default(),
    };
    let kinds: Vec<String> = manifest
        .objects(&rules)
        .iter()
        .map(|o| {
            let v = serde_json::to_value(o).expect("json");
            format!(
                "{}/{}",
                v["kind"].as_str().unwrap_or(""),
                v["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount/rules-controller-manager",
            "ClusterRole/rules-manager-role",
            "ClusterRoleBinding/rules-manager-rolebinding",
            "Role/rules-leader-election-role",
            "RoleBinding/rules-leader-election-rolebinding",
            "Role/rules-manager-role",
            "RoleBinding/rules-manager-rolebinding",
            "ClusterRole/rules-metrics-reader",
        ]
    );
}

#[tokio::test]
async fn a_bare_manager_with_plain_metrics_needs_nothing() {
    let opts = Options {
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::new(offline_client(), opts).expect("manager");
    let rules = mgr.rbac_rules();
    assert!(rules.cluster.is_empty(), "{:?}", show(&rules.cluster));
    assert!(rules.leader_election.is_empty());
    assert!(rules.namespaced.is_empty());
    assert!(!rules.metrics_reader);
}
