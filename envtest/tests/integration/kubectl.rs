//! The real `kubectl` against ctrl-envtest (acceptance checks 35–36): a scripted session
//! per area, each command's output checked. Every call has a timeout, its own kubeconfig and
//! its own `HOME`/`KUBECACHEDIR`, so runs share no discovery cache.
//!
//! Also: `kubectl explain` over the OpenAPI v3 schemas, built-in printer columns in `get`, and
//! the generators' protobuf bodies (`create namespace|configmap|secret`).
//!
//! When kubectl is missing the tests print a loud `SKIPPED: kubectl not found` and pass —
//! unless the environment variable `CI` is set, then they fail.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use ctrl_envtest::Environment;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ResourceQuota, Secret};
use kube::api::Api;
use tokio::process::Command;

const KUBECTL: &str = "kubectl";

/// One kubectl session: an environment, a temp dir with its kubeconfig and caches.
struct Session {
    env: Environment,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// What a kubectl call printed.
#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

fn kubectl_found() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(KUBECTL).is_file()));
    if !found {
        if std::env::var_os("CI").is_some() {
            panic!("kubectl not found on PATH, and CI is set: the kubectl tests must run in CI");
        }
        eprintln!(
            "\n*** SKIPPED: kubectl not found (install kubectl to run the kubectl tests) ***\n"
        );
    }
    found
}

impl Session {
    async fn start(env: Environment) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        env.write_kubeconfig(&kubeconfig).unwrap();
        Session {
            env,
            dir,
            kubeconfig,
        }
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(KUBECTL);
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// Runs kubectl with a 60 s timeout.
    async fn run(&self, args: &[&str]) -> Out {
        let child = self.command(args).spawn().expect("spawn kubectl");
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .expect("kubectl output");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs kubectl and requires success and `want` in its output.
    async fn ok(&self, args: &[&str], want: &str) -> Out {
        let out = self.run(args).await;
        assert!(out.ok, "kubectl {args:?} failed: {}", out.all());
        assert!(
            out.all().contains(want),
            "kubectl {args:?}: expected {want:?} in output:\n{}",
            out.all()
        );
        out
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"1\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_session() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    let f = s.file("cm.yaml", CM);
    let f = path_str(&f);
    s.ok(&["apply", "-f", f], "configmap/x created").await;
    s.file("cm.yaml", &CM.replace("\"1\"", "\"2\""));
    s.ok(&["apply", "-f", f], "configmap/x configured").await;
    s.ok(&["apply", "-f", f], "configmap/x unchanged").await;
    let api: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["a"], "2");

    s.ok(&["get", "configmaps"], "x").await;
    let yaml = s
        .ok(&["get", "configmap", "x", "-o", "yaml"], "kind: ConfigMap")
        .await;
    assert!(yaml.stdout.contains("a: \"2\""), "{}", yaml.stdout);
    s.ok(&["describe", "configmap", "x"], "Name:         x")
        .await;

    s.ok(
        &["patch", "configmap", "x", "-p", r#"{"data":{"b":"2"}}"#],
        "configmap/x patched",
    )
    .await;
    s.ok(
        &[
            "patch",
            "configmap",
            "x",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"c":"3"}}"#,
        ],
        "patched",
    )
    .await;
    s.ok(
        &[
            "patch",
            "configmap",
            "x",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/data/d","value":"4"}]"#,
        ],
        "patched",
    )
    .await;
    s.ok(
        &["label", "configmap", "x", "team=a"],
        "configmap/x labeled",
    )
    .await;
    let cm = api.get("x").await.unwrap();
    let data = cm.data.unwrap();
    assert_eq!(
        (data["b"].as_str(), data["c"].as_str(), data["d"].as_str()),
        ("2", "3", "4")
    );
    assert_eq!(cm.metadata.labels.unwrap()["team"], "a");

    // Server-side apply, a conflict between two field managers, then --force-conflicts.
    s.ok(&["apply", "--server-side", "-f", f], "serverside-applied")
        .await;
    s.file("cm.yaml", &CM.replace("\"1\"", "\"3\""));
    let out = s
        .run(&["apply", "--server-side", "--field-manager=other", "-f", f])
        .await;
    assert!(!out.ok, "a conflicting apply fails");
    assert!(
        out.stderr.contains("conflict with \"kubectl\"") && out.stderr.contains(".data.a"),
        "{}",
        out.stderr
    );
    s.ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            f,
        ],
        "serverside-applied",
    )
    .await;
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["a"], "3");

    // get -w sees a later change; the watch is bounded by a timeout and killed.
    let mut watch = s.command(&["get", "configmaps", "-w"]).spawn().unwrap();
    let mut stdout = watch.stdout.take().unwrap();
    let reader = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut seen = String::new();
        let mut buf = [0u8; 4096];
        while let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_secs(30), stdout.read(&mut buf)).await
        {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if seen.contains("later") {
                break;
            }
        }
        seen
    });
    // Let the watch start (its list shows x), then make the change it must print.
    tokio::time::sleep(Duration::from_secs(2)).await;
    api.create(&Default::default(), &common::cm("later", &[]))
        .await
        .unwrap();
    let seen = reader.await.unwrap();
    let _ = watch.kill().await;
    assert!(seen.contains("later"), "get -w printed: {seen}");

    s.ok(&["delete", "configmap", "x"], "configmap \"x\" deleted")
        .await;
    assert!(
        api.get_opt("x").await.unwrap().is_none(),
        "delete returns once gone"
    );
    s.ok(&["get", "--raw", "/healthz"], "ok").await;
    let res = s.ok(&["api-resources"], "configmaps").await;
    assert!(res.stdout.contains("deployments") && res.stdout.contains("customresourcedefinitions"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_finalizer_waits_until_gone() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    let api: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    let mut cm = common::cm("fin", &[]);
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&Default::default(), &cm).await.unwrap();
    let del = s
        .command(&["delete", "configmap", "fin", "--timeout=30s"])
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let held = api.get("fin").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    api.patch(
        "fin",
        &Default::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), del.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("deleted"));
}

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d1
spec:
  replicas: 1
  selector:
    matchLabels: {app: d1}
  template:
    metadata:
      labels: {app: d1}
    spec:
      containers:
      - name: main
        image: nginx:1
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_session() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    let f = s.file("deploy.yaml", DEPLOY);
    let f = path_str(&f);
    s.ok(&["apply", "-f", f], "deployment.apps/d1 created")
        .await;
    // Client-side apply of a changed image goes through strategic merge (containers by name).
    s.file("deploy.yaml", &DEPLOY.replace("nginx:1", "nginx:2"));
    s.ok(&["apply", "-f", f], "deployment.apps/d1 configured")
        .await;
    s.ok(
        &["scale", "deployment", "d1", "--replicas=3"],
        "deployment.apps/d1 scaled",
    )
    .await;
    s.ok(&["get", "deployments"], "d1").await;
    let api: Api<Deployment> = Api::namespaced(s.env.client(), "default");
    let d = api.get("d1").await.unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    let cs = spec.template.spec.unwrap().containers;
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0].image.as_deref(), Some("nginx:2"));
    s.ok(&["delete", "-f", f], "deleted").await;
    assert!(api.get_opt("d1").await.unwrap().is_none());
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired gadget.
            properties:
              size: {type: integer, description: How big the gadget is.}
";

const GADGET: &str = "apiVersion: example.com/v1
kind: Gadget
metadata:
  name: g1
spec:
  size: 3
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_session() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    let crd = s.file("crd.yaml", CRD);
    s.ok(
        &["create", "-f", path_str(&crd)],
        "gadgets.example.com created",
    )
    .await;
    s.ok(
        &[
            "wait",
            "--for=condition=Established",
            "crd/gadgets.example.com",
            "--timeout=30s",
        ],
        "condition met",
    )
    .await;
    let empty = s.run(&["get", "gadgets"]).await;
    assert!(
        empty.ok && empty.stderr.contains("No resources found"),
        "{}",
        empty.all()
    );
    let g = s.file("g.yaml", GADGET);
    s.ok(
        &["apply", "-f", path_str(&g)],
        "gadget.example.com/g1 created",
    )
    .await;
    // Served as a Table: the CRD's additionalPrinterColumns become kubectl's columns.
    let table = s.ok(&["get", "gadgets"], "g1").await;
    assert!(
        table.stdout.contains("SIZE") && table.stdout.contains('3'),
        "{}",
        table.stdout
    );
    s.ok(&["get", "gd"], "g1").await;
    s.file("g.yaml", &GADGET.replace("size: 3", "size: 4"));
    s.ok(
        &["apply", "-f", path_str(&g)],
        "gadget.example.com/g1 configured",
    )
    .await;
    s.ok(&["get", "gd", "g1", "-o", "jsonpath={.spec.size}"], "4")
        .await;
    s.ok(&["delete", "gadget", "g1"], "deleted").await;
}

/// kubectl's generators send protobuf bodies; they are decoded into the same objects a JSON
/// body gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_generators_send_protobuf() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    s.ok(
        &["create", "namespace", "team-a"],
        "namespace/team-a created",
    )
    .await;
    let nss: Api<Namespace> = Api::all(s.env.client());
    let ns = nss.get("team-a").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    s.ok(
        &[
            "create",
            "configmap",
            "c1",
            "-n",
            "team-a",
            "--from-literal=a=1",
            "--from-literal=b=2",
        ],
        "configmap/c1 created",
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "team-a");
    let data = cms.get("c1").await.unwrap().data.unwrap();
    assert_eq!((data["a"].as_str(), data["b"].as_str()), ("1", "2"));
    let bin = s.file("blob.bin", "\u{0}\u{1}binary");
    s.ok(
        &[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=user=admin",
            &format!("--from-file=blob={}", path_str(&bin)),
        ],
        "secret/s1 created",
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(s.env.client(), "default");
    let sec = secrets.get("s1").await.unwrap();
    assert_eq!(sec.type_.as_deref(), Some("Opaque"));
    let data = sec.data.unwrap();
    assert_eq!(data["user"].0, b"admin");
    assert_eq!(data["blob"].0, b"\x00\x01binary");
    let out = s.ok(&["get", "secret", "s1"], "Opaque").await;
    assert!(
        out.stdout.contains("TYPE") && out.stdout.contains(" 2 "),
        "{}",
        out.stdout
    );
    // --dry-run=server goes through the same decoding and stores nothing.
    s.ok(
        &[
            "create",
            "configmap",
            "dry",
            "--from-literal=a=b",
            "--dry-run=server",
        ],
        "configmap/dry created (server dry run)",
    )
    .await;
    assert!(
        Api::<ConfigMap>::namespaced(s.env.client(), "default")
            .get_opt("dry")
            .await
            .unwrap()
            .is_none()
    );
    s.ok(
        &["create", "serviceaccount", "robot"],
        "serviceaccount/robot created",
    )
    .await;
    // Every built-in kind's protobuf body decodes (`api::protobuf`), the quota generator's too.
    s.ok(
        &["create", "quota", "q1", "--hard=pods=2"],
        "resourcequota/q1 created",
    )
    .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(s.env.client(), "default");
    let q = quotas.get("q1").await.unwrap();
    let hard = q.spec.and_then(|s| s.hard).unwrap_or_default();
    assert_eq!(hard["pods"].0, "2");
    // The manifest route always works.
    let ns = s.file(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n",
    );
    s.ok(&["create", "-f", path_str(&ns)], "namespace/team-b created")
        .await;
    let out = s.ok(&["get", "namespaces"], "team-b").await;
    assert!(
        out.stdout.contains("STATUS") && out.stdout.contains("Active"),
        "{}",
        out.stdout
    );
}

/// `kubectl explain` reads the full schemas of the OpenAPI v3 documents: built-ins from
/// k8s-openapi, custom resources from their CRD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_builtins_and_custom_resources() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    s.ok(
        &["explain", "deployment.spec.replicas"],
        "Number of desired pods",
    )
    .await;
    let out = s
        .ok(&["explain", "pods.spec.containers"], "<[]Container>")
        .await;
    assert!(out.stdout.contains("image\t<string>"), "{}", out.stdout);
    s.ok(
        &["explain", "configmap"],
        "ConfigMap holds configuration data",
    )
    .await;
    let crd = s.file("crd.yaml", CRD);
    s.ok(&["create", "-f", path_str(&crd)], "created").await;
    let out = s
        .ok(&["explain", "gadgets.spec"], "The desired gadget.")
        .await;
    assert!(
        out.stdout.contains("size\t<integer>") && out.stdout.contains("How big the gadget is."),
        "{}",
        out.stdout
    );
    // metadata refers to ObjectMeta, served in the same document.
    s.ok(
        &["explain", "gd.metadata.labels"],
        "Map of string keys and values",
    )
    .await;
    let out = s.run(&["explain", "gadgets.spec.nope"]).await;
    assert!(!out.ok && out.stderr.contains("nope"), "{}", out.all());
}

/// `kubectl get` of built-ins prints upstream's printer columns, `-o wide` the priority-1 ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_builtins_prints_their_columns() {
    if !kubectl_found() {
        return;
    }
    let s = Session::start(common::env().await).await;
    let f = s.file(
        "objs.yaml",
        &format!(
            "{}---\n{}",
            DEPLOY.replace("replicas: 1", "replicas: 3"),
            "apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: d1}
  ports: [{port: 80, nodePort: 30080}]
---
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers: [{name: a, image: busybox}, {name: b, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: one}
binaryData: {b: AAE=}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l1}
spec: {holderIdentity: node-7}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j1}
spec:
  completions: 4
  template:
    spec:
      restartPolicy: Never
      containers: [{name: w, image: busybox}]
"
        ),
    );
    s.ok(&["apply", "-f", path_str(&f)], "job.batch/j1 created")
        .await;
    let lines = |out: &Out| -> Vec<Vec<String>> {
        out.stdout
            .lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    };
    let out = s.ok(&["get", "deployments"], "d1").await;
    assert_eq!(
        lines(&out),
        [
            vec!["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            vec!["d1", "0/3", "0", "0", &lines(&out)[1][4]]
        ]
    );
    let out = s.ok(&["get", "deployments", "-o", "wide"], "d1").await;
    assert_eq!(lines(&out)[0][5..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(lines(&out)[1][5..], ["main", "nginx:1", "app=d1"]);
    let out = s.ok(&["get", "pods"], "p1").await;
    assert_eq!(
        lines(&out)[0],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    assert_eq!(lines(&out)[1][..4], ["p1", "0/2", "Pending", "0"]);
    // `default/kubernetes` is listed too, as on every cluster: ask for `web` by name.
    let out = s.ok(&["get", "services", "web"], "web").await;
    assert_eq!(
        lines(&out)[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(lines(&out)[1][1], "NodePort");
    assert_eq!(lines(&out)[1][4], "80:30080/TCP");
    let out = s.ok(&["get", "leases"], "l1").await;
    assert_eq!(lines(&out)[0], ["NAME", "HOLDER", "AGE"]);
    assert_eq!(lines(&out)[1][1], "node-7");
    let out = s.ok(&["get", "jobs"], "j1").await;
    assert_eq!(
        lines(&out)[0],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    );
    assert_eq!(lines(&out)[1][..3], ["j1", "Running", "0/4"]);
    let out = s.ok(&["get", "configmaps", "settings"], "settings").await;
    assert_eq!(
        lines(&out),
        [
            vec!["NAME", "DATA", "AGE"],
            vec!["settings", "2", &lines(&out)[1][2]]
        ]
    );
    let crd = s.file("crd.yaml", CRD);
    s.ok(&["create", "-f", path_str(&crd)], "created").await;
    let out = s.ok(&["get", "crds"], "gadgets.example.com").await;
    assert_eq!(lines(&out)[0], ["NAME", "CREATED", "AT"]);
    assert!(lines(&out)[1][1].ends_with('Z'), "{}", out.stdout);
}
