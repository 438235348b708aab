//! The `ctrl-envtest` binary: `--help` explains `serve`, and `serve` writes a kubeconfig,
//! prints it with the kubectl command, and answers on the port it reports.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ctrl-envtest");

#[tokio::test]
async fn help_explains_serve() {
    let out = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--port",
        "--kubeconfig-out",
        "--crd-dir",
        "--token",
        "--no-gc",
        "--simulate-pods",
        "kubectl",
    ] {
        assert!(text.contains(flag), "--help mentions {flag}:\n{text}");
    }
}

#[tokio::test]
async fn serve_writes_kubeconfig_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kc");
    let crds = dir.path().join("crds");
    std::fs::create_dir(&crds).unwrap();
    std::fs::write(
        crds.join("gadget.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--kubeconfig-out"])
        .arg(&kc)
        .arg("--crd-dir")
        .arg(&crds)
        .args(["--token", "secret"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    while printed.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("serve prints its banner")
            .unwrap()
            .expect("serve keeps running");
        printed.push(line);
    }
    let url = printed[0].rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{printed:?}");
    assert!(printed[1].contains(kc.to_str().unwrap()), "{printed:?}");
    assert!(printed[2].contains("kubectl --kubeconfig"), "{printed:?}");
    let text = std::fs::read_to_string(&kc).unwrap();
    assert!(
        text.contains(&url.replace("http://", "https://")) && text.contains("token: secret"),
        "{text}"
    );
    // The server answers with the token and serves the CRD from --crd-dir.
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&text).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let _ = rustls_provider();
    let client = kube::Client::try_from(config).unwrap();
    let found =
        kube::discovery::pinned_group(&client, &kube::core::GroupVersion::gv("example.com", "v1"))
            .await
            .unwrap();
    assert!(found.recommended_kind("Gadget").is_some());
    child.kill().await.unwrap();
}

/// `serve` with its stdout closed before it prints (a reader that stopped at the `kubeconfig:`
/// line, as the scaffold test's did): it keeps serving, and Ctrl-C still stops it cleanly
/// (`println!` panicked on the broken pipe and ended the server).
#[tokio::test]
async fn serve_outlives_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kc");
    let mut child = Command::new(BIN)
        .args(["serve", "--kubeconfig-out"])
        .arg(&kc)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut text = String::new();
    for _ in 0..600 {
        text = std::fs::read_to_string(&kc).unwrap_or_default();
        let parsed = kube::config::Kubeconfig::from_yaml(&text);
        if parsed.is_ok_and(|k| k.current_context.is_some()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&text).expect("serve wrote its kubeconfig"),
        &Default::default(),
    )
    .await
    .unwrap();
    let _ = rustls_provider();
    let client = kube::Client::try_from(config).unwrap();
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    let listed = namespaces.list(&Default::default()).await;
    assert!(listed.is_ok(), "serve stopped serving: {listed:?}");
    let pid = child.id().expect("still running").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("Ctrl-C stops serve")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// kube builds a rustls connector even for http:// URLs; make sure a provider is installed.
fn rustls_provider() -> Result<(), std::sync::Arc<rustls::crypto::CryptoProvider>> {
    rustls::crypto::ring::default_provider().install_default()
}
