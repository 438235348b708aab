//! `cargo ctrl` as a user runs it, in temporary directories: the generated tree is the
//! golden one (`tests/golden/`, regenerate with `UPDATE_GOLDEN=1`) and every YAML file
//! in it parses as Kubernetes objects; a file the user changed is never overwritten;
//! and (`slow_` tests: minutes, CI runs them, `--skip slow_` leaves them out) the
//! generated project's `cargo test` passes with zero edits, `cargo run -- --run-for 5s`
//! starts on the in-process API server and exits 0, and `cargo ctrl manifests` writes a
//! `config/` that the real `kubectl apply --dry-run=server -k config/default` accepts.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

mod support;
use support::{cargo_ctrl, scaffold, workspace};

/// Every file under `dir` (relative paths, sorted), `target/` left out.
fn tree(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read dir") {
            let path = e.expect("entry").path();
            if path.ends_with("target") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).expect("under root").to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/memcached-operator")
}

#[test]
fn the_generated_tree_is_the_golden_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path(), None);
    let golden = golden_dir();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&golden);
        for f in tree(dir.path()) {
            let to = golden.join(&f);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::copy(dir.path().join(&f), to).expect("copy");
        }
    }
    assert_eq!(tree(dir.path()), tree(&golden), "the generated files");
    for f in tree(&golden) {
        let want = std::fs::read_to_string(golden.join(&f)).expect("golden file");
        let got = std::fs::read_to_string(dir.path().join(&f)).expect("generated file");
        assert!(
            got == want,
            "{} differs from tests/golden (UPDATE_GOLDEN=1 cargo test -p cargo-ctrl regenerates it):\n{got}",
            f.display()
        );
    }
}

#[test]
fn every_generated_yaml_file_parses() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path(), None);
    let yaml: Vec<PathBuf> = tree(dir.path())
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    assert!(yaml.len() >= 3, "{yaml:?}");
    for f in yaml {
        let text = std::fs::read_to_string(dir.path().join(&f)).expect("read");
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if f.starts_with("config") && name != "kustomization.yaml" {
            for d in docs {
                for key in ["apiVersion", "kind"] {
                    assert!(d[key].is_string(), "{}: no {key}", f.display());
                }
                assert!(
                    d["metadata"]["name"].is_string(),
                    "{}: no name",
                    f.display()
                );
            }
        }
    }
    let project: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".ctrl/project.json")).expect("state"),
    )
    .expect("project.json");
    assert_eq!(project["apis"][0]["kind"], "Memcached");
    assert_eq!(project["apis"][0]["defaulting"], true);
}

#[test]
fn a_changed_file_is_skipped_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path(), None);
    let lib = dir.path().join("src/lib.rs");
    let mine = std::fs::read_to_string(&lib).expect("lib.rs") + "\n// my change\n";
    std::fs::write(&lib, &mine).expect("change lib.rs");
    let readme = std::fs::read_to_string(dir.path().join("README.md")).expect("README");
    let report = cargo_ctrl(
        dir.path(),
        &[
            "ctrl",
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Cache",
        ],
    );
    assert!(
        report.contains("skipped  src/lib.rs (changed since cargo ctrl wrote it"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(&lib).expect("lib.rs"),
        mine,
        "lib.rs was overwritten"
    );
    // Unchanged generated files are regenerated: the new kind is in the module lists.
    assert!(
        report.contains("updated  src/controller/mod.rs"),
        "{report}"
    );
    assert!(
        report.contains("created  src/controller/cache.rs"),
        "{report}"
    );
    // ... and files with nothing new are left as they are, unmentioned.
    assert!(!report.contains("README.md"), "{report}");
    let again = std::fs::read_to_string(dir.path().join("README.md")).expect("README");
    assert_eq!(again, readme);
}

/// The workspace's target dir (this test binary is in `<target>/<profile>/deps/`): the
/// generated project builds into it, so it reuses the workspace's dependencies.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    exe.ancestors().nth(3).expect("<target>").to_path_buf()
}

/// `cargo <args>` in `dir` with the shared target dir; stdout and stderr.
fn cargo(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG");
    cmd
}

#[test]
fn slow_the_generated_project_tests_pass_and_it_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path(), Some(&workspace()));
    let out = cargo(dir.path(), &["test"]).output().expect("cargo test");
    let log =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "cargo test in the generated project failed:\n{log}"
    );
    assert!(
        log.contains("test the_sample_becomes_available ... ok"),
        "{log}"
    );
    assert!(
        log.contains("test the_api_server_calls_the_webhooks ... ok"),
        "{log}"
    );

    let out = cargo(dir.path(), &["run", "--", "--run-for", "5s"])
        .output()
        .expect("cargo run");
    let log =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "cargo run -- --run-for 5s failed:\n{log}"
    );
    assert!(log.contains("--kubeconfig "), "no kubeconfig line:\n{log}");
    assert!(
        log.contains("created Deployment"),
        "the sample was not reconciled:\n{log}"
    );

    let report = cargo_ctrl(dir.path(), &["ctrl", "manifests"]);
    assert!(
        report.contains("created  config/default/kustomization.yaml"),
        "{report}"
    );
    // The manager Deployment sets the image the controller reads (deploy-image's env).
    let env = manager_env(dir.path());
    assert!(
        env.contains(&("MEMCACHED_IMAGE".into(), "memcached:1.6".into())),
        "{env:?}"
    );
    if kubectl_accepts(dir.path()) {
        deployed_without_a_forbidden(dir.path());
    }
}

/// The (name, value) env of the manager container in `config/manager/manager.yaml`.
fn manager_env(dir: &Path) -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(dir.join("config/manager/manager.yaml")).expect("manager.yaml");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("parse manager.yaml");
    let d = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    let env = d
        .pointer("/spec/template/spec/containers/0/env")
        .and_then(Value::as_array);
    let pair = |e: &Value| {
        Some((
            e["name"].as_str()?.to_string(),
            e["value"].as_str()?.to_string(),
        ))
    };
    env.into_iter().flatten().filter_map(pair).collect()
}

/// The operator's own in-process API server (`--no-demo`), and the real kubectl
/// applying `config/default` to it with `--dry-run=server`; false if kubectl is missing.
fn kubectl_accepts(dir: &Path) -> bool {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl missing in CI"
        );
        eprintln!("*** SKIPPED the kubectl part: kubectl not found ***");
        return false;
    }
    let kc = dir.join("kubeconfig");
    let mut child = cargo(dir, &["run", "-q", "--", "--no-demo", "--run-for", "60s"])
        .args(["--write-kubeconfig", kc.to_str().expect("utf-8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the operator");
    let stdout = child.stdout.take().expect("stdout");
    assert!(
        line_then_drain(stdout, |l| l.contains("--kubeconfig ")),
        "no kubeconfig line"
    );
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &kc)
            .output()
            .expect("kubectl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "kubectl {args:?}:\n{text}");
        text
    };
    kubectl(&["create", "namespace", "memcached-operator-system"]);
    let default = dir.join("config/default");
    let out = kubectl(&[
        "apply",
        "--dry-run=server",
        "-k",
        default.to_str().expect("utf-8"),
    ]);
    // Every object accepted: created, or configured where the running operator made
    // it already (the CRD; the webhook configurations of its local run, same names).
    for want in [
        "deployment.apps/memcached-operator-controller-manager",
        "serviceaccount/memcached-operator-controller-manager",
        "clusterrole.rbac.authorization.k8s.io/memcached-operator-manager-role",
        "service/memcached-operator-webhook-service",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/memcached-operator-mutating-webhook-configuration",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/memcached-operator-validating-webhook-configuration",
        "customresourcedefinition.apiextensions.k8s.io/memcacheds.cache.example.com",
    ] {
        let line = out.lines().find(|l| l.starts_with(&format!("{want} ")));
        assert!(
            line.is_some_and(|l| l.ends_with(" (server dry run)")),
            "{want}:\n{out}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    true
}

/// Reads `stdout` until a line matches `want` (false if it ends first), then keeps reading it
/// to the end on a thread of its own. The pipe must stay open: a Rust program whose stdout is
/// closed panics on its next `println!` ("failed printing to stdout: Broken pipe"), so dropping
/// the reader at the matching line killed `ctrl-envtest serve` whenever it was descheduled
/// between that line and the next, and the kubectl call after it found no server.
fn line_then_drain(stdout: std::process::ChildStdout, want: impl Fn(&str) -> bool) -> bool {
    let mut lines = BufReader::new(stdout).lines();
    let found = lines.by_ref().map_while(Result::ok).any(|l| want(&l));
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    found
}

/// `kubectl` with `kubeconfig`: its output, asserting success.
fn kubectl_at(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("kubectl");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl {args:?}:\n{text}");
    text
}

/// Kills a child process when dropped (a failed assertion must not leave it running).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The bar's last clause: `config/default` applied for real with kubectl to `ctrl-envtest
/// serve` (RBAC on, workloads simulated, the webhook Service routed to the operator), then
/// the generated operator run against that server as its ServiceAccount (a TokenRequest
/// token: only the RBAC its code generated) reconciles the sample through its webhooks,
/// with its certificates from its own rotator, and logs not one Forbidden.
fn deployed_without_a_forbidden(dir: &Path) {
    let built = cargo(
        &workspace(),
        &["build", "-q", "-p", "ctrl-envtest", "--bin", "ctrl-envtest"],
    )
    .status()
    .expect("cargo build ctrl-envtest");
    assert!(built.success());
    // A copy of our own: the named binary is shared with other checkouts' builds.
    let envtest = dir.join("ctrl-envtest");
    std::fs::copy(target_dir().join("debug/ctrl-envtest"), &envtest).expect("copy ctrl-envtest");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let admin = dir.join("admin.kubeconfig");
    let route = format!(
        "memcached-operator-system/memcached-operator-webhook-service:443=127.0.0.1:{port}"
    );
    let mut server = Killed(
        Command::new(&envtest)
            .args(["serve", "--simulate-pods", "--service-route", &route])
            .arg("--kubeconfig-out")
            .arg(&admin)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctrl-envtest serve"),
    );
    let stdout = server.0.stdout.take().expect("stdout");
    let serving = line_then_drain(stdout, |l| l.starts_with("kubeconfig: "));
    assert!(serving, "ctrl-envtest serve did not start");

    let default = dir.join("config/default");
    kubectl_at(&admin, &["apply", "-k", default.to_str().expect("utf-8")]);
    let sa = dir.join("sa.kubeconfig");
    write_service_account_kubeconfig(&admin, &sa);

    // The operator as its Deployment runs it, but here, as its ServiceAccount (built again
    // and copied: the named binary is shared with other checkouts' builds).
    assert!(
        cargo(dir, &["build", "-q"])
            .status()
            .expect("cargo build")
            .success()
    );
    let binary = dir.join("memcached-operator");
    std::fs::copy(target_dir().join("debug/memcached-operator"), &binary).expect("copy");
    let log_path = dir.join("operator.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let operator = Killed(
        Command::new(&binary)
            .args(["--leader-elect", "--metrics-bind-address=127.0.0.1:0"])
            .args([
                "--health-probe-bind-address=127.0.0.1:0",
                &format!("--webhook-port={port}"),
            ])
            .arg("--kubeconfig")
            .arg(&sa)
            .env("TMPDIR", &tmp)
            .env("POD_NAMESPACE", "memcached-operator-system")
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("run the operator"),
    );
    let samples = dir.join("config/samples");
    // Through its webhooks: served once its rotator made the certificate and injected the CA.
    kubectl_at(
        &admin,
        &[
            "wait",
            "--for=jsonpath={.webhooks[0].clientConfig.caBundle}",
            "--timeout=120s",
            "validatingwebhookconfiguration/memcached-operator-validating-webhook-configuration",
        ],
    );
    apply_until_served(&admin, samples.to_str().expect("utf-8"));
    kubectl_at(
        &admin,
        &[
            "wait",
            "--for=condition=Available",
            "--timeout=120s",
            "memcached/memcached-sample",
        ],
    );
    drop(operator);
    drop(server);
    let text = std::fs::read_to_string(&log_path).expect("operator log");
    let forbidden = text.lines().filter(|l| {
        l.to_ascii_lowercase().contains("forbidden")
            || l.split(|c: char| !c.is_ascii_digit()).any(|n| n == "403")
    });
    let forbidden: Vec<&str> = forbidden.collect();
    assert!(
        forbidden.is_empty(),
        "Forbidden in the operator's log:\n{}",
        forbidden.join("\n")
    );
    assert!(
        text.contains("created Deployment"),
        "the sample was not reconciled:\n{text}"
    );
}

/// `kubectl apply -k dir`, tried again while the webhook server is not up yet (the
/// configuration got its CA before the server listens: the rotator runs first).
fn apply_until_served(kubeconfig: &Path, dir: &str) {
    for _ in 0..60 {
        let out = Command::new("kubectl")
            .args(["apply", "-k", dir])
            .env("KUBECONFIG", kubeconfig)
            .output()
            .expect("kubectl");
        if out.status.success() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    kubectl_at(kubeconfig, &["apply", "-k", dir]);
}

/// A kubeconfig for the operator's ServiceAccount: the server and CA of `admin`, a token
/// from the TokenRequest API (`kubectl create token`).
fn write_service_account_kubeconfig(admin: &Path, out: &Path) {
    let token = kubectl_at(
        admin,
        &[
            "create",
            "token",
            "memcached-operator-controller-manager",
            "-n",
            "memcached-operator-system",
        ],
    );
    let view = |path: &str| {
        kubectl_at(
            admin,
            &["config", "view", "--raw", "-o", &format!("jsonpath={path}")],
        )
    };
    let server = view("{.clusters[0].cluster.server}");
    let ca = view("{.clusters[0].cluster.certificate-authority-data}");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n\
         users:\n- name: operator\n  user:\n    token: {}\ncontexts:\n- name: operator\n  context:\n    cluster: envtest\n    user: operator\n\
         \x20   namespace: memcached-operator-system\ncurrent-context: operator\n",
        token.trim()
    );
    std::fs::write(out, text).expect("write the ServiceAccount's kubeconfig");
}
