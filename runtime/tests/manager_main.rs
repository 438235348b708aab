//! What an operator's `main` uses: the kubebuilder flags ([`Args`]), client
//! configuration lookup in controller-runtime's order, and `shutdown_signal` (first
//! SIGTERM cancels, second exits 1). Environment-dependent cases run this test binary
//! again as a child process with a prepared environment.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Parser;
use ctrl_runtime::manager::{Args, ConfigError, load_config, shutdown_signal};

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    manager: Args,
    #[arg(long, default_value_t = 1)]
    workers: usize,
}

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("operator").chain(args.iter().copied())).expect("parse")
}

#[test]
fn flags_have_kubebuilder_names_and_defaults() {
    let cli = parse(&[]);
    assert_eq!(cli.manager, Args::default());
    assert_eq!(cli.manager.metrics_bind_address, ":8080");
    assert_eq!(cli.manager.health_probe_bind_address, ":8081");
    assert!(!cli.manager.leader_elect);
    assert_eq!(cli.manager.kubeconfig, None);

    let cli = parse(&[
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address=:9440",
        "--leader-elect",
        "--kubeconfig",
        "/tmp/kc",
        "--workers",
        "3",
    ]);
    assert_eq!(cli.workers, 3);
    let opts = cli.manager.options();
    assert_eq!(opts.metrics_bind_address, "0");
    assert_eq!(opts.health_probe_bind_address, ":9440");
    assert!(opts.leader_election);
    assert_eq!(
        cli.manager.kubeconfig.as_deref(),
        Some(Path::new("/tmp/kc"))
    );

    assert!(!parse(&["--leader-elect=false"]).manager.leader_elect);
    assert!(parse(&["--leader-elect=true"]).manager.leader_elect);
    assert!(Cli::try_parse_from(["operator", "--leader-elect=maybe"]).is_err());

    // --enable-http2: false by default; true only in a build with the `http2` feature (the
    // workspace's test build has it; `cargo test -p ctrl-runtime --test manager_main` not).
    assert!(!parse(&["--enable-http2=false"]).manager.enable_http2);
    assert!(Cli::try_parse_from(["operator", "--enable-http2=maybe"]).is_err());
    for on in ["--enable-http2=true", "--enable-http2"] {
        let parsed = Cli::try_parse_from(["operator", on]);
        if cfg!(feature = "http2") {
            assert!(parsed.expect("parse").manager.enable_http2, "{on}");
        } else {
            let err = parsed.expect_err(on).to_string();
            assert!(err.contains("needs ctrl's `http2` feature"), "{on}: {err}");
        }
    }
}

#[tokio::test]
async fn the_kubeconfig_flag_builds_a_working_client() {
    let env = ctrl_envtest::Environment::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    env.write_kubeconfig(&path).unwrap();
    let cli = parse(&["--kubeconfig", path.to_str().unwrap()]);
    let client = cli.manager.client().await.expect("client");
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::default_namespaced(client);
    cms.list(&Default::default())
        .await
        .expect("list over the flag's kubeconfig");

    let missing = dir.path().join("missing");
    let err = load_config(Some(&missing)).await.unwrap_err();
    assert!(matches!(err, ConfigError::Kubeconfig { .. }), "{err:?}");
    assert!(err.to_string().contains("missing"), "{err}");
}

const CHILD: &str = "CTRL_MANAGER_MAIN_CHILD";

/// Runs `test` of this binary in a child process with `env` (and no KUBECONFIG or
/// in-cluster variables unless given).
fn child(test: &str, env: &[(&str, &str)]) -> Command {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn kubeconfig(path: &Path, server: &str) {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {{}}\n"
    );
    std::fs::write(path, yaml).unwrap();
}

/// The child side of `config_lookup_follows_controller_runtime_order`.
#[tokio::test]
async fn config_child() {
    let Ok(expect) = std::env::var(CHILD) else {
        return;
    };
    let flag = std::env::var_os("CTRL_FLAG_KUBECONFIG").map(std::path::PathBuf::from);
    let got = load_config(flag.as_deref()).await;
    match expect.as_str() {
        "none" => {
            let err = got.unwrap_err();
            assert!(matches!(err, ConfigError::NotFound { .. }), "{err:?}");
        }
        url => assert_eq!(got.expect("config").cluster_url.to_string(), url),
    }
}

#[test]
fn config_lookup_follows_controller_runtime_order() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    kubeconfig(&home.join(".kube/config"), "http://home.example:1/");
    let env_kc = dir.path().join("env-kubeconfig");
    kubeconfig(&env_kc, "http://env.example:2/");
    let flag_kc = dir.path().join("flag-kubeconfig");
    kubeconfig(&flag_kc, "http://flag.example:3/");
    let empty_home = dir.path().join("empty");
    std::fs::create_dir_all(&empty_home).unwrap();
    let (home, env_kc, flag_kc, empty_home) = (
        home.to_str().unwrap(),
        env_kc.to_str().unwrap(),
        flag_kc.to_str().unwrap(),
        empty_home.to_str().unwrap(),
    );
    let cases: [(&str, Vec<(&str, &str)>); 4] = [
        ("http://home.example:1/", vec![("HOME", home)]),
        (
            "http://env.example:2/",
            vec![("HOME", home), ("KUBECONFIG", env_kc)],
        ),
        (
            "http://flag.example:3/",
            vec![
                ("HOME", home),
                ("KUBECONFIG", env_kc),
                ("CTRL_FLAG_KUBECONFIG", flag_kc),
            ],
        ),
        ("none", vec![("HOME", empty_home)]),
    ];
    for (expect, mut env) in cases {
        env.push((CHILD, expect));
        let out = child("config_child", &env).output().expect("run child");
        assert!(
            out.status.success(),
            "case {expect}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The child side of `first_signal_cancels_second_exits_1`.
#[tokio::test]
async fn signal_child() {
    if std::env::var(CHILD).as_deref() != Ok("signal") {
        return;
    }
    let token = shutdown_signal();
    assert!(!token.is_cancelled());
    println!("READY");
    token.cancelled().await;
    println!("CANCELLED");
    assert!(
        shutdown_signal().is_cancelled(),
        "every call returns the same token"
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    panic!("the second signal should have exited the process");
}

#[test]
fn first_signal_cancels_second_exits_1() {
    let mut proc = child("signal_child", &[(CHILD, "signal")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let pid = proc.id().to_string();
    let mut lines = BufReader::new(proc.stdout.take().expect("stdout")).lines();
    let mut wait_for = |want: &str| loop {
        match lines.next() {
            Some(Ok(line)) if line.contains(want) => return,
            Some(Ok(_)) => {}
            other => panic!("child ended before printing {want}: {other:?}"),
        }
    };
    let term = || {
        let ok = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(ok.success());
    };
    wait_for("READY");
    term();
    wait_for("CANCELLED");
    term();
    let status = proc.wait().expect("child exit");
    assert_eq!(status.code(), Some(1), "{status:?}");
}
