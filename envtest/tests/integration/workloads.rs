//! The workload controllers (`EnvironmentBuilder::simulate_workloads`, on with the simulated
//! kubelet) against the real clients: `kubectl rollout status` / `set image` / `rollout undo`
//! on a Deployment, `kubectl wait --for=condition=complete` on a Job, kube-runtime's
//! `is_deployment_completed` and `is_job_completed`, ReplicaSet adoption and release, a
//! failing Job, and each namespace's `default` ServiceAccount and `kube-root-ca.crt`.

use crate::kubectl_cli;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolumeClaim, Pod, ServiceAccount,
};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

use ctrl_envtest::Environment;
use kubectl_cli::Kubectl;

/// How long a test waits for the controllers.
const WAIT: Duration = Duration::from_secs(60);

async fn env() -> Environment {
    Environment::builder()
        .simulate_pods(true)
        .pod_start_delay(Duration::from_millis(100))
        .pod_stop_delay(Duration::from_millis(100))
        .pod_run_time(Duration::from_millis(300))
        .start()
        .await
        .expect("start envtest")
}

/// Polls `get` until `ok` holds; returns that value.
async fn eventually<T: std::fmt::Debug, F, Fut>(
    what: &str,
    mut get: F,
    ok: impl Fn(&T) -> bool,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got = get().await;
        if ok(&got) {
            return got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {WAIT:?}; last: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  replicas: 3
  selector:
    matchLabels: {app: d}
  template:
    metadata:
      labels: {app: d}
    spec:
      containers:
      - name: app
        image: nginx:1.27
";

/// The ReplicaSets of `default`, by revision.
async fn replicasets(client: &kube::Client) -> Vec<ReplicaSet> {
    let api: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let mut rss = api
        .list(&ListParams::default())
        .await
        .expect("list rs")
        .items;
    rss.sort_by_key(revision);
    rss
}

fn revision(rs: &ReplicaSet) -> i64 {
    (rs.metadata.annotations.as_ref())
        .and_then(|a| a.get("deployment.kubernetes.io/revision"))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(-1)
}

fn image(rs: &ReplicaSet) -> String {
    (rs.spec.as_ref())
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.spec.as_ref())
        .map(|s| s.containers[0].image.clone().unwrap_or_default())
        .unwrap_or_default()
}

/// ReplicaSet `rs` is at `rev` with `n` replicas of `img`.
fn assert_rs(rs: &ReplicaSet, rev: i64, n: i32, img: &str) {
    assert_eq!(
        (revision(rs), replicas(rs), image(rs).as_str()),
        (rev, n, img),
        "{rs:#?}"
    );
}

async fn rollout_status(k: &Kubectl) {
    let out = k
        .run(&["rollout", "status", "deployment/d", "--timeout=60s"])
        .await;
    assert!(out.ok, "rollout status: {out:?}");
    assert!(out.stdout.contains("successfully rolled out"), "{out:?}");
}

/// The status of a rolled-out Deployment of 3 replicas, as upstream writes it.
fn assert_rolled_out(d: &Deployment) {
    let s = d.status.as_ref().expect("status");
    assert_eq!(s.observed_generation, d.metadata.generation);
    assert_eq!(
        (
            s.replicas,
            s.updated_replicas,
            s.ready_replicas,
            s.available_replicas
        ),
        (Some(3), Some(3), Some(3), Some(3))
    );
    assert_eq!(s.unavailable_replicas, None);
    let cond = |t: &str| {
        s.conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == t)
            .cloned()
            .expect(t)
    };
    let available = cond("Available");
    assert_eq!(
        (available.status.as_str(), available.reason.as_deref()),
        ("True", Some("MinimumReplicasAvailable"))
    );
    assert_eq!(
        available.message.as_deref(),
        Some("Deployment has minimum availability.")
    );
    let progressing = cond("Progressing");
    assert_eq!(
        (progressing.status.as_str(), progressing.reason.as_deref()),
        ("True", Some("NewReplicaSetAvailable"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_rolls_out_updates_and_rolls_back_under_kubectl() {
    let env = env().await;
    let Some(k) = Kubectl::new(&env) else { return };
    let client = env.client();
    let file = k.file("d.yaml", DEPLOYMENT);
    let out = k.run(&["apply", "-f", file.to_str().expect("path")]).await;
    assert!(out.ok, "apply: {out:?}");
    rollout_status(&k).await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let done = await_condition(
        deployments.clone(),
        "d",
        conditions::is_deployment_completed(),
    );
    let d = tokio::time::timeout(WAIT, done)
        .await
        .expect("in time")
        .expect("watch")
        .expect("exists");
    assert_rolled_out(&d);
    let rss = replicasets(&client).await;
    assert_eq!(rss.len(), 1, "{rss:#?}");
    let hash = rss[0]
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("pod-template-hash"))
        .cloned()
        .expect("hash label");
    assert_eq!(
        rss[0].metadata.name.as_deref(),
        Some(format!("d-{hash}").as_str())
    );
    assert_eq!((revision(&rss[0]), replicas(&rss[0])), (1, 3));
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let listed = pods
        .list(&ListParams::default().labels(&format!("pod-template-hash={hash}")))
        .await
        .expect("pods");
    assert_eq!(listed.items.len(), 3);

    let out = k
        .run(&["set", "image", "deployment/d", "app=nginx:1.28"])
        .await;
    assert!(out.ok, "set image: {out:?}");
    rollout_status(&k).await;
    let rss = replicasets(&client).await;
    assert_eq!(rss.len(), 2, "{rss:#?}");
    assert_rs(&rss[0], 1, 0, "nginx:1.27");
    assert_rs(&rss[1], 2, 3, "nginx:1.28");
    let d = deployments.get("d").await.expect("get");
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .map(String::as_str),
        Some("2")
    );
    assert_rolled_out(&d);

    let out = k.run(&["rollout", "undo", "deployment/d"]).await;
    assert!(out.ok, "rollout undo: {out:?}");
    rollout_status(&k).await;
    let rss = replicasets(&client).await;
    assert_eq!(rss.len(), 2, "{rss:#?}");
    assert_rs(&rss[0], 2, 0, "nginx:1.28");
    assert_rs(&rss[1], 3, 3, "nginx:1.27");
    let history = rss[1]
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("deployment.kubernetes.io/revision-history"))
        .cloned();
    assert_eq!(history.as_deref(), Some("1"));
    let out = k.run(&["rollout", "history", "deployment/d"]).await;
    assert!(
        out.ok && out.stdout.contains('2') && out.stdout.contains('3'),
        "history: {out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_scales_the_old_replicaset_down_before_the_new_one_up() {
    let env = env().await;
    let client = env.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let mut d = deployment();
    d.spec.as_mut().expect("spec").strategy =
        Some(serde_json::from_value(json!({"type": "Recreate"})).expect("strategy"));
    create_rolled_out(&deployments, d).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}});
    deployments
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patch");
    let rss = eventually(
        "the new ReplicaSet up",
        || replicasets(&client),
        |rss| rss.len() == 2 && replicas(&rss[1]) == 3,
    )
    .await;
    assert_eq!(replicas(&rss[0]), 0);
    let d = eventually(
        "rolled out",
        || async { deployments.get("d").await.expect("get") },
        |d| {
            d.status.as_ref().and_then(|s| s.updated_replicas) == Some(3)
                && d.status.as_ref().and_then(|s| s.available_replicas) == Some(3)
        },
    )
    .await;
    assert_eq!(d.status.as_ref().and_then(|s| s.replicas), Some(3));
}

/// Creates `d` and waits until kube-runtime's `is_deployment_completed` holds.
async fn create_rolled_out(deployments: &Api<Deployment>, d: Deployment) -> Deployment {
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("create");
    let done = await_condition(
        deployments.clone(),
        "d",
        conditions::is_deployment_completed(),
    );
    let got = tokio::time::timeout(WAIT, done)
        .await
        .expect("in time")
        .expect("watch");
    got.expect("exists")
}

/// `DEPLOYMENT` as a typed object.
fn deployment() -> Deployment {
    serde_json::from_value(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}),
    )
    .expect("deployment")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_completes_and_kubectl_wait_returns() {
    let env = env().await;
    let Some(k) = Kubectl::new(&env) else { return };
    let file = k.file(
        "j.yaml",
        "apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  completions: 2
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox
",
    );
    let out = k.run(&["apply", "-f", file.to_str().expect("path")]).await;
    assert!(out.ok, "apply: {out:?}");
    let out = k
        .run(&["wait", "--for=condition=complete", "job/j", "--timeout=60s"])
        .await;
    assert!(out.ok, "wait: {out:?}");
    let jobs: Api<Job> = Api::default_namespaced(env.client());
    let done = await_condition(jobs.clone(), "j", conditions::is_job_completed());
    let job = tokio::time::timeout(WAIT, done)
        .await
        .expect("in time")
        .expect("watch")
        .expect("exists");
    let s = job.status.expect("status");
    assert_eq!(
        (s.succeeded, s.failed, s.active, s.ready, s.terminating),
        (Some(2), None, None, Some(0), Some(0))
    );
    assert!(s.start_time.is_some() && s.completion_time.is_some());
    let types: Vec<(String, String, Option<String>)> = (s.conditions.iter().flatten())
        .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
        .collect();
    let reached = Some("CompletionsReached".to_string());
    assert_eq!(
        types,
        vec![
            ("SuccessCriteriaMet".into(), "True".into(), reached.clone()),
            ("Complete".into(), "True".into(), reached),
        ]
    );
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let listed = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=j"))
        .await
        .expect("pods");
    assert_eq!(listed.items.len(), 2);
    assert!(
        listed
            .items
            .iter()
            .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_pods_fail_fails_past_its_backoff_limit_and_goes_after_its_ttl() {
    let env = env().await;
    let jobs: Api<Job> = Api::default_namespaced(env.client());
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "f"}, "spec": {
        "backoffLimit": 0, "ttlSecondsAfterFinished": 1,
        "template": {"metadata": {"annotations": {"envtest.ctrl/exit-code": "2"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]}}}}))
    .expect("job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    let failed = eventually(
        "Failed",
        || async { jobs.get_opt("f").await.expect("get") },
        |j| {
            j.as_ref()
                .and_then(|j| j.status.as_ref())
                .is_some_and(|s| s.conditions.iter().flatten().any(|c| c.type_ == "Failed"))
        },
    )
    .await
    .expect("job");
    let s = failed.status.expect("status");
    assert_eq!(s.failed, Some(1));
    let conds: Vec<(String, Option<String>)> = (s.conditions.iter().flatten())
        .map(|c| (c.type_.clone(), c.reason.clone()))
        .collect();
    let why = Some("BackoffLimitExceeded".to_string());
    assert_eq!(
        conds,
        vec![
            ("FailureTarget".into(), why.clone()),
            ("Failed".into(), why)
        ]
    );
    eventually(
        "deleted after its TTL",
        || async { jobs.get_opt("f").await.expect("get") },
        Option::is_none,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicaset_adopts_orphans_and_releases_pods_it_no_longer_selects() {
    let env = env().await;
    let client = env.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let orphan: Pod = serde_json::from_value(
        json!({"metadata": {"name": "orphan", "labels": {"app": "r"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .expect("pod");
    pods.create(&PostParams::default(), &orphan)
        .await
        .expect("create pod");
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "r"}, "spec": {"replicas": 2,
        "selector": {"matchLabels": {"app": "r"}},
        "template": {"metadata": {"labels": {"app": "r"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}))
    .expect("rs");
    let rss: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    rss.create(&PostParams::default(), &rs)
        .await
        .expect("create rs");
    let owned = |p: &Pod| {
        p.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.name == "r" && r.controller == Some(true))
    };
    let list = || async {
        pods.list(&ListParams::default().labels("app=r"))
            .await
            .expect("list")
            .items
    };
    let got = eventually("orphan adopted, 2 Pods", list, |ps: &Vec<Pod>| {
        ps.len() == 2 && ps.iter().all(owned)
    })
    .await;
    assert!(
        got.iter()
            .any(|p| p.metadata.name.as_deref() == Some("orphan"))
    );
    let other = got
        .iter()
        .find(|p| p.metadata.name.as_deref() != Some("orphan"))
        .expect("created pod");
    assert!(
        other
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("r-") && n.len() == 7),
        "{other:?}"
    );
    let relabel = json!({"metadata": {"labels": {"app": "elsewhere"}}});
    pods.patch("orphan", &PatchParams::default(), &Patch::Merge(relabel))
        .await
        .expect("relabel");
    eventually(
        "orphan released",
        || async { pods.get("orphan").await.expect("get") },
        |p| !owned(p),
    )
    .await;
    eventually("replaced", list, |ps: &Vec<Pod>| {
        ps.len() == 2 && ps.iter().all(owned)
    })
    .await;
    let rs = eventually(
        "status",
        || async { rss.get("r").await.expect("get") },
        |rs| {
            rs.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(2) && s.available_replicas == Some(2))
        },
    )
    .await;
    let s = rs.status.expect("status");
    assert_eq!(
        (s.replicas, s.fully_labeled_replicas, s.observed_generation),
        (2, Some(2), Some(1))
    );
}

#[tokio::test]
async fn every_namespace_gets_its_default_service_account_and_root_ca() {
    let env = env().await;
    let client = env.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("create ns");
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "team");
    sas.get("default")
        .await
        .expect("the default ServiceAccount is there when the create returns");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let ca = cms.get("kube-root-ca.crt").await.expect("root CA");
    assert_eq!(
        ca.data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .map(String::as_str),
        Some(env.ca_pem())
    );
    let seeded: Api<ServiceAccount> = Api::namespaced(client.clone(), "kube-system");
    seeded.get("default").await.expect("seeded namespaces too");
    sas.delete("default", &DeleteParams::default())
        .await
        .expect("delete");
    sas.get("default").await.expect("made again");
    let tamper = json!({"data": {"ca.crt": "x"}});
    cms.patch(
        "kube-root-ca.crt",
        &PatchParams::default(),
        &Patch::Merge(tamper),
    )
    .await
    .expect("patch");
    let ca = cms.get("kube-root-ca.crt").await.expect("root CA");
    assert_eq!(
        ca.data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .map(String::as_str),
        Some(env.ca_pem())
    );
}

/// The `web` StatefulSet of 3 with a claim template; `image` for its container.
fn stateful_set(image: &str, partition: i32) -> StatefulSet {
    serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {
        "replicas": 3, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": image}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}))
    .expect("statefulset")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_set_pods_come_in_ordinal_order_each_after_the_last_is_ready() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{WatchEvent, WatchParams};
    let env = env().await;
    let client = env.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let rv = pods
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut events = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &stateful_set("nginx:1.27", 0))
        .await
        .expect("create");
    // Each ADDED Pod, with whether every Pod added before it was Ready at that moment.
    let mut ready: std::collections::BTreeMap<String, bool> = Default::default();
    let mut added: Vec<(String, bool)> = Vec::new();
    while added.len() < 3 || ready.values().any(|r| !r) {
        let ev = tokio::time::timeout(WAIT, events.try_next())
            .await
            .expect("event in time")
            .expect("ok")
            .expect("open");
        let (p, is_add) = match ev {
            WatchEvent::Added(p) => (p, true),
            WatchEvent::Modified(p) => (p, false),
            other => panic!("unexpected {other:?}"),
        };
        let name = p.metadata.name.clone().unwrap_or_default();
        if is_add {
            added.push((name.clone(), ready.values().all(|r| *r)));
        }
        let is_ready = p
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True");
        ready.insert(name, is_ready);
    }
    let expected: Vec<(String, bool)> = ["web-0", "web-1", "web-2"]
        .iter()
        .map(|n| (n.to_string(), true))
        .collect();
    assert_eq!(added, expected);
    let pod = pods.get("web-1").await.expect("web-1");
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("apps.kubernetes.io/pod-index")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        labels
            .get("statefulset.kubernetes.io/pod-name")
            .map(String::as_str),
        Some("web-1")
    );
    let spec = pod.spec.expect("spec");
    assert_eq!(
        (spec.hostname.as_deref(), spec.subdomain.as_deref()),
        (Some("web-1"), Some("web"))
    );
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
    for i in 0..3 {
        claims
            .get(&format!("data-web-{i}"))
            .await
            .expect("claim per Pod");
    }
    let set = eventually(
        "status",
        || async { sets.get("web").await.expect("get") },
        |s| {
            s.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(3) && s.current_revision.is_some())
        },
    )
    .await;
    let first = set.status.expect("status");
    assert_eq!(first.current_revision, first.update_revision);
    assert_eq!(
        (
            first.replicas,
            first.current_replicas,
            first.updated_replicas
        ),
        (3, Some(3), Some(3))
    );

    let patch = json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}},
        "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}}}});
    sets.patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patch");
    let set = eventually(
        "partitioned update",
        || async { sets.get("web").await.expect("get") },
        |s| {
            s.status
                .as_ref()
                .is_some_and(|s| s.updated_replicas == Some(2) && s.ready_replicas == Some(3))
        },
    )
    .await;
    let s = set.status.expect("status");
    assert_ne!(s.update_revision, first.update_revision);
    assert_eq!(
        s.current_revision, first.current_revision,
        "not all Pods updated: current stays"
    );
    let image = |p: Pod| {
        p.spec
            .map(|s| s.containers[0].image.clone().unwrap_or_default())
            .unwrap_or_default()
    };
    assert_eq!(
        image(pods.get("web-0").await.expect("web-0")),
        "nginx:1.27",
        "below the partition"
    );
    assert_eq!(image(pods.get("web-2").await.expect("web-2")), "nginx:1.28");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_job_creates_jobs_on_schedule_and_keeps_its_history_limit() {
    use k8s_openapi::api::batch::v1::CronJob;
    let env = env().await;
    let client = env.client();
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    // Six fields: every second (ctrl-envtest's extension for tests; upstream has minutes).
    let cj: CronJob = serde_json::from_value(json!({"metadata": {"name": "tick"}, "spec": {
        "schedule": "* * * * * *", "successfulJobsHistoryLimit": 2, "concurrencyPolicy": "Forbid",
        "jobTemplate": {"spec": {"template": {"metadata": {"annotations": {"envtest.ctrl/run-seconds": "0.1"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}))
    .expect("cronjob");
    cronjobs
        .create(&PostParams::default(), &cj)
        .await
        .expect("create");
    let cj = eventually(
        "a Job succeeded",
        || async { cronjobs.get("tick").await.expect("get") },
        |cj| {
            cj.status
                .as_ref()
                .is_some_and(|s| s.last_successful_time.is_some() && s.last_schedule_time.is_some())
        },
    )
    .await;
    let uid = cj.metadata.uid.expect("uid");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let owned = |j: &Job| {
        j.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.uid == uid && r.controller == Some(true))
    };
    let complete = |j: &Job| {
        j.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Complete")
    };
    let list = || async { jobs.list(&ListParams::default()).await.expect("list").items };
    // Jobs keep coming; the history keeps 2 finished ones.
    let seen = eventually(
        "2 finished Jobs kept",
        || async {
            let items = list().await;
            items.iter().filter(|j| owned(j) && complete(j)).count()
        },
        |n| *n == 2,
    )
    .await;
    assert_eq!(seen, 2);
    let got = list().await;
    for j in got.iter().filter(|j| owned(j)) {
        let at = j
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("batch.kubernetes.io/cronjob-scheduled-timestamp"));
        assert!(at.is_some(), "{j:?}");
        assert!(
            j.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("tick-"))
        );
    }
    let patch = json!({"spec": {"suspend": true}});
    cronjobs
        .patch("tick", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("suspend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_set_runs_a_pod_on_each_of_three_nodes() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use k8s_openapi::api::core::v1::Node;
    let env = Environment::builder()
        .simulate_pods(true)
        .nodes(3)
        .pod_start_delay(Duration::from_millis(100))
        .start()
        .await
        .expect("start envtest");
    let client = env.client();
    let nodes: Api<Node> = Api::all(client.clone());
    let mut names: Vec<String> = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, ["envtest-node", "envtest-node-2", "envtest-node-3"]);
    let node = nodes.get("envtest-node-2").await.expect("node");
    let s = node.status.expect("status");
    let conds: Vec<(String, String)> = (s.conditions.iter().flatten())
        .map(|c| (c.type_.clone(), c.status.clone()))
        .collect();
    for (t, v) in [
        ("MemoryPressure", "False"),
        ("DiskPressure", "False"),
        ("PIDPressure", "False"),
        ("Ready", "True"),
    ] {
        assert!(conds.contains(&(t.to_string(), v.to_string())), "{conds:?}");
    }
    assert!(
        s.capacity.is_some()
            && s.allocatable.is_some()
            && s.node_info.is_some()
            && s.addresses.is_some()
    );

    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    let ds: DaemonSet = serde_json::from_value(json!({"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "agent:1"}]}}}}))
    .expect("ds");
    sets.create(&PostParams::default(), &ds)
        .await
        .expect("create");
    let ds = eventually(
        "3 ready",
        || async { sets.get("agent").await.expect("get") },
        |d| {
            d.status
                .as_ref()
                .is_some_and(|s| s.number_ready == 3 && s.number_available == Some(3))
        },
    )
    .await;
    let s = ds.status.expect("status");
    assert_eq!(
        (
            s.desired_number_scheduled,
            s.current_number_scheduled,
            s.number_misscheduled
        ),
        (3, 3, 0)
    );
    assert_eq!(
        (
            s.updated_number_scheduled,
            s.number_unavailable,
            s.observed_generation
        ),
        (Some(3), None, Some(1))
    );
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut on: Vec<String> = (pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .expect("pods")
        .items
        .into_iter())
    .filter_map(|p| p.spec.and_then(|s| s.node_name))
    .collect();
    on.sort();
    assert_eq!(on, names, "one Pod per Node");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_gets_an_endpoint_slice_of_its_ready_pods() {
    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let env = env().await;
    let client = env.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for n in ["a", "b"] {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": n, "labels": {"app": "s"}},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"name": "http", "containerPort": 8080}]}]}}))
        .expect("pod");
        pods.create(&PostParams::default(), &p).await.expect("pod");
    }
    let svc: Service = serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {
        "selector": {"app": "s"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}))
    .expect("svc");
    Api::<Service>::default_namespaced(client.clone())
        .create(&PostParams::default(), &svc)
        .await
        .expect("svc");
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let list = || async {
        slices
            .list(&ListParams::default().labels("kubernetes.io/service-name=s"))
            .await
            .expect("list")
            .items
    };
    let got = eventually("2 ready endpoints", list, |ss: &Vec<EndpointSlice>| {
        ss.len() == 1
            && ss[0]
                .endpoints
                .iter()
                .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
                .count()
                == 2
    })
    .await;
    let slice = &got[0];
    assert_eq!(slice.address_type, "IPv4");
    let ports: Vec<(Option<String>, Option<i32>)> = slice
        .ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone(), p.port))
        .collect();
    assert_eq!(ports, vec![(Some("web".into()), Some(8080))]);
    let mut targets: Vec<String> = slice
        .endpoints
        .iter()
        .filter_map(|e| e.target_ref.as_ref()?.name.clone())
        .collect();
    targets.sort();
    assert_eq!(targets, ["a", "b"]);
    pods.delete("b", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete");
    eventually("1 endpoint", list, |ss: &Vec<EndpointSlice>| {
        ss.len() == 1 && ss[0].endpoints.len() == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_faults_crash_loop_flap_readiness_and_kill_for_memory() {
    use ctrl_envtest::PodFault;
    let env = env().await;
    let faults = env.faults();
    faults.pod_fault("default", "crash", PodFault::CrashLoop);
    faults.pod_fault(
        "default",
        "flap",
        PodFault::FlappingReadiness {
            period: Duration::from_millis(200),
        },
    );
    faults.pod_fault("default", "oom", PodFault::OomKilled);
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    for (name, policy) in [("crash", "Always"), ("flap", "Always"), ("oom", "Never")] {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "i"}]}}))
        .expect("pod");
        pods.create(&PostParams::default(), &p)
            .await
            .expect("create");
    }
    let get = |n: &'static str| {
        let pods = pods.clone();
        move || {
            let pods = pods.clone();
            async move { pods.get(n).await.expect("get") }
        }
    };
    let container = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default()
            .remove(0)
    };
    let ready = |p: &Pod| {
        p.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Ready" && c.status == "True")
    };
    let crash = eventually("restarted twice", get("crash"), |p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|cs| cs[0].restart_count >= 2)
    })
    .await;
    let c = container(&crash);
    assert_eq!(
        c.state
            .and_then(|s| s.waiting)
            .and_then(|w| w.reason)
            .as_deref(),
        Some("CrashLoopBackOff")
    );
    assert_eq!(
        c.last_state
            .and_then(|s| s.terminated)
            .map(|t| (t.exit_code, t.reason)),
        Some((1, Some("Error".into())))
    );
    assert!(!ready(&crash));
    assert_eq!(
        crash.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Running")
    );
    eventually("flap: ready", get("flap"), ready).await;
    eventually("flap: not ready", get("flap"), |p| !ready(p)).await;
    eventually("flap: ready again", get("flap"), ready).await;
    let oom = eventually("oom: failed", get("oom"), |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")
    })
    .await;
    let t = container(&oom)
        .state
        .and_then(|s| s.terminated)
        .expect("terminated");
    assert_eq!((t.exit_code, t.reason.as_deref()), (137, Some("OOMKilled")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_deployment_only_scales_until_resumed() {
    let env = env().await;
    let client = env.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    create_rolled_out(&deployments, deployment()).await;
    let pause = json!({"spec": {"paused": true, "replicas": 4,
        "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}});
    deployments
        .patch("d", &PatchParams::default(), &Patch::Strategic(pause))
        .await
        .expect("pause");
    let progressing = |d: &Deployment| {
        let s = d.status.as_ref();
        s.and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Progressing").cloned())
    };
    let d = eventually(
        "paused and scaled",
        || async { deployments.get("d").await.expect("get") },
        |d| {
            progressing(d).and_then(|c| c.reason).as_deref() == Some("DeploymentPaused")
                && d.status.as_ref().and_then(|s| s.available_replicas) == Some(4)
        },
    )
    .await;
    let c = progressing(&d).expect("Progressing");
    assert_eq!(
        (c.status.as_str(), c.message.as_deref()),
        ("Unknown", Some("Deployment is paused"))
    );
    let rss = replicasets(&client).await;
    assert_eq!(rss.len(), 1, "paused: no new ReplicaSet: {rss:#?}");
    assert_rs(&rss[0], 1, 4, "nginx:1.27");
    let resume = json!({"spec": {"paused": false}});
    deployments
        .patch("d", &PatchParams::default(), &Patch::Merge(resume))
        .await
        .expect("resume");
    let rss = eventually(
        "rolled out after resuming",
        || replicasets(&client),
        |rss| rss.len() == 2 && replicas(&rss[1]) == 4 && replicas(&rss[0]) == 0,
    )
    .await;
    assert_rs(&rss[1], 2, 4, "nginx:1.28");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_whose_pods_crash_exceeds_its_progress_deadline() {
    let env = env().await;
    let Some(k) = Kubectl::new(&env) else { return };
    env.faults()
        .pod_fault("default", "d-", ctrl_envtest::PodFault::CrashLoop);
    let deployments: Api<Deployment> = Api::default_namespaced(env.client());
    let mut d = deployment();
    d.spec.as_mut().expect("spec").progress_deadline_seconds = Some(1);
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("create");
    let d = eventually(
        "deadline exceeded",
        || async { deployments.get("d").await.expect("get") },
        |d| {
            let conds = d
                .status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            conds.iter().any(|c| {
                c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
            })
        },
    )
    .await;
    let s = d.status.expect("status");
    let cond = |t: &str| {
        s.conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == t)
            .cloned()
            .expect(t)
    };
    assert_eq!(cond("Progressing").status, "False");
    assert_eq!(
        (
            cond("Available").status.as_str(),
            cond("Available").reason.as_deref()
        ),
        ("False", Some("MinimumReplicasUnavailable"))
    );
    assert_eq!(
        (s.available_replicas, s.unavailable_replicas),
        (None, Some(3))
    );
    let out = k
        .run(&["rollout", "status", "deployment/d", "--timeout=30s"])
        .await;
    assert!(
        !out.ok && out.stderr.contains("exceeded its progress deadline"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_on_failure_job_counts_container_restarts_against_its_backoff_limit() {
    let env = env().await;
    let jobs: Api<Job> = Api::default_namespaced(env.client());
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "r"}, "spec": {
        "backoffLimit": 1,
        "template": {"metadata": {"annotations": {"envtest.ctrl/exit-code": "1", "envtest.ctrl/run-seconds": "0.1"}},
            "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "work", "image": "busybox"}]}}}}))
    .expect("job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    let failed = eventually(
        "Failed",
        || async { jobs.get("r").await.expect("get") },
        |j| {
            j.status
                .as_ref()
                .is_some_and(|s| s.conditions.iter().flatten().any(|c| c.type_ == "Failed"))
        },
    )
    .await;
    let s = failed.status.expect("status");
    assert_eq!(s.failed, None, "no Pod failed: its container restarted");
    let reason = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Failed")
        .and_then(|c| c.reason.clone());
    assert_eq!(reason.as_deref(), Some("BackoffLimitExceeded"));
}
