//! The example's manifests (`examples/manifests/`): the CRD YAML committed there is
//! exactly what `storagebucket --print-crd` generates from the Rust type, the RBAC YAML
//! exactly what `storagebucket --print-rbac` generates from its code, and the
//! real `kubectl apply -f` of every file works against ctrl-envtest started as the
//! README starts it (`serve --crd-dir examples/manifests`): first created (or
//! configured, for the CRD already installed), then unchanged, and `kubectl get`
//! shows every object.

use crate::common;
use crate::examples_storagebucket as operator;

use std::path::PathBuf;

use common::kubectl::{self, Kubectl, path_str};
use ctrl_envtest::Environment;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use serde_json::Value;

fn manifests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/manifests")
}

/// Every manifest file, in the order `kubectl apply -f <dir>` takes them.
fn manifest_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifests_dir())
        .expect("examples/manifests")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    files
}

/// `kind/name` of every object in the manifests, as kubectl names them in `get`.
fn manifest_objects() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in manifest_files() {
        let text = std::fs::read_to_string(&f).expect("read manifest");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("parse manifest");
        for d in docs {
            let kind = d["kind"].as_str().expect("kind").to_ascii_lowercase();
            let name = d["metadata"]["name"].as_str().expect("name").to_string();
            out.push((kind, name));
        }
    }
    out
}

#[test]
fn the_committed_crd_is_the_generated_one() {
    let committed = std::fs::read_to_string(manifests_dir().join("01-storagebucket-crd.yaml"))
        .expect("committed CRD");
    let generated = ctrl::cli::print::crds_yaml(&[operator::crd::crd()]).expect("generate CRD");
    assert!(
        committed == generated,
        "examples/manifests/01-storagebucket-crd.yaml is stale; regenerate it with\n  \
         cargo run --example storagebucket -- --print-crd > examples/manifests/01-storagebucket-crd.yaml"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_rbac_is_the_generated_one() {
    let committed =
        std::fs::read_to_string(manifests_dir().join("02-rbac.yaml")).expect("committed RBAC");
    let opts = ctrl::cli::print::deployed_options(
        "storagebucket",
        ctrl::manager::Options {
            leader_election_id: operator::LEASE_NAME.into(),
            ..ctrl::manager::Args::default().options()
        },
    );
    let client = ctrl::cli::print::offline_client().expect("offline client");
    let cfg = operator::controller::Config::default();
    let mgr = operator::setup::manager(client, opts, &cfg, true).expect("the operator's manager");
    // As `--print-rbac` builds it: with the rules of the cert rotator it runs in a cluster.
    ctrl::manifests::certs::add_rotator_rules(
        "storagebucket",
        &mgr,
        &ctrl::manager::Args::default(),
    );
    let generated = ctrl::cli::print::rbac_yaml(&mgr, "storagebucket").expect("generate RBAC");
    assert!(
        committed == generated,
        "examples/manifests/02-rbac.yaml is stale; regenerate it with\n  \
         cargo run --example storagebucket -- --print-rbac > examples/manifests/02-rbac.yaml"
    );
    // The rules are what the code does, and no more.
    let rules = mgr.rbac_rules();
    let show: Vec<String> = rules
        .cluster
        .iter()
        .map(|r| {
            format!(
                "{:?} {:?} {:?}",
                r.api_groups.clone().unwrap_or_default(),
                r.resources.clone().unwrap_or_default(),
                r.verbs
            )
        })
        .collect();
    assert_eq!(
        show,
        [
            r#"["admissionregistration.k8s.io"] ["mutatingwebhookconfigurations"] ["get", "list", "update", "watch"]"#,
            r#"["admissionregistration.k8s.io"] ["validatingwebhookconfigurations"] ["get", "list", "update", "watch"]"#,
            r#"["authentication.k8s.io"] ["tokenreviews"] ["create"]"#,
            r#"["authorization.k8s.io"] ["subjectaccessreviews"] ["create"]"#,
            r#"["events.k8s.io"] ["events"] ["create", "patch"]"#,
            r#"["storage.example.com"] ["storagebuckets"] ["get", "list", "update", "watch"]"#,
            r#"["storage.example.com"] ["storagebuckets/status"] ["patch"]"#,
        ]
    );
    assert_eq!(rules.leader_election.len(), 1);
    assert_eq!(
        rules.namespaced["storagebucket-system"].len(),
        1,
        "the rotator's Secret"
    );
    assert!(rules.metrics_reader);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_every_manifest_then_unchanged() {
    if !kubectl::found() {
        return;
    }
    let env = Environment::builder()
        .crd_dir(manifests_dir())
        .start()
        .await
        .expect("envtest with the manifests' CRDs");
    let k = Kubectl::new(&env);
    let objects = manifest_objects();

    // First apply: every object created (the CRD, installed at start, configured).
    let mut first = String::new();
    for f in manifest_files() {
        first += &k.ok(&["apply", "-f", path_str(&f)]).await;
    }
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), objects.len(), "one line per object:\n{first}");
    for line in &lines {
        assert!(
            line.ends_with(" created") || line.ends_with(" configured"),
            "first apply: {line}\n{first}"
        );
    }
    for (kind, name) in &objects {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(kind.as_str()) && l.contains(&format!("/{name} "))),
            "first apply did not mention {kind}/{name}:\n{first}"
        );
    }

    // Second apply, of the whole directory: nothing changes.
    let second = k.ok(&["apply", "-f", path_str(&manifests_dir())]).await;
    assert_eq!(second.lines().count(), objects.len(), "{second}");
    for line in second.lines() {
        assert!(
            line.ends_with(" unchanged"),
            "second apply: {line}\n{second}"
        );
    }

    // kubectl get shows them all.
    let got = k
        .ok(&["get", "-f", path_str(&manifests_dir()), "-o", "name"])
        .await;
    for (kind, name) in &objects {
        assert!(
            got.lines()
                .any(|l| l.starts_with(kind.as_str()) && l.ends_with(&format!("/{name}"))),
            "kubectl get did not show {kind}/{name}:\n{got}"
        );
    }
    let buckets = k.ok(&["get", "storagebuckets", "-n", "default"]).await;
    assert!(
        buckets.contains("photos") && buckets.contains("backups"),
        "{buckets}"
    );

    // ... and so does the API: the Deployment runs two replicas with --leader-elect.
    let deploy = Api::<Deployment>::namespaced(env.client(), "storagebucket-system")
        .get("storagebucket-controller-manager")
        .await
        .expect("deployment");
    let spec = deploy.spec.expect("spec");
    assert_eq!(spec.replicas, Some(2));
    let args = spec.template.spec.expect("pod spec").containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(args.iter().any(|a| a == "--leader-elect"), "{args:?}");
}
