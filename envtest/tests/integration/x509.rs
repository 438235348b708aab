//! X.509 client-certificate authentication on the TLS port (issue 29), as kube-apiserver's
//! `--client-ca-file` authenticator: a certificate signed by the environment's CA is the user of
//! its Common Name in the groups of its Organizations; the admin kubeconfig carries one (CN
//! `admin`, O `system:masters`) as Go envtest's does; RBAC decides what such a user may do; a
//! connection without a certificate still authenticates by bearer token.

use crate::common;
use crate::kubectl_cli;

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, UserInfo};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, PostParams};

async fn whoami(c: Client) -> UserInfo {
    let api: Api<SelfSubjectReview> = Api::all(c);
    let r = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("whoami");
    r.status.and_then(|s| s.user_info).expect("userInfo")
}

#[tokio::test]
async fn a_certificate_user_is_its_common_name_in_its_organizations() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = common::env().await;
    let cfg = env
        .add_user_certificate("carol", &["devs", "ops"])
        .expect("certificate");
    assert!(
        cfg.auth_info.token.is_none(),
        "authenticated by the certificate alone"
    );
    let client = Client::try_from(cfg).expect("client");
    let carol = whoami(client.clone()).await;
    assert_eq!(carol.username.as_deref(), Some("carol"));
    assert_eq!(
        carol.groups,
        Some(vec![
            "devs".into(),
            "ops".into(),
            "system:authenticated".into()
        ])
    );
    // Authenticated, not authorized: a 403 naming the user, not a 401.
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let e = common::status_of(cms.list(&Default::default()).await.unwrap_err());
    assert_eq!(e.code, 403, "{e:?}");
    assert!(e.message.contains("\"carol\""), "{}", e.message);
}

#[tokio::test]
async fn kubectl_authenticates_with_the_kubeconfigs_client_certificate() {
    let env = common::env().await;
    let Some(k) = kubectl_cli::Kubectl::new(&env) else {
        return;
    };
    // The admin kubeconfig carries a certificate and a token; without the token the
    // certificate alone is the admin.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin");
    env.write_kubeconfig(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("client-certificate-data: "), "{text}");
    let cert_only: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("token:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let kc = k.file("cert-only", &cert_only);
    let out = k
        .run(&[
            "--kubeconfig",
            kc.to_str().unwrap(),
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .await;
    assert!(out.ok, "{}", out.stderr);
    assert_eq!(out.stdout, "admin");
    let out = k
        .run(&[
            "--kubeconfig",
            kc.to_str().unwrap(),
            "create",
            "configmap",
            "by-cert",
        ])
        .await;
    assert!(out.ok, "system:masters by its certificate: {}", out.stderr);
    // A user added by certificate, written as a kubeconfig.
    let carol = env.add_user_certificate("carol", &["devs"]).unwrap();
    let path = dir.path().join("carol");
    env.write_user_kubeconfig(&carol, &path).unwrap();
    let out = k
        .run(&[
            "--kubeconfig",
            path.to_str().unwrap(),
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
        ])
        .await;
    assert!(out.ok, "{}", out.stderr);
    assert_eq!(out.stdout, r#"carol ["devs","system:authenticated"]"#);
}
