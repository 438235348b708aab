//! The cert rotator on ctrl-envtest over HTTP: with no certificate given it makes a CA and a
//! serving certificate, keeps them in the Secret, injects the CA into the webhook
//! configuration (the API server then calls the webhook over TLS and a create passes it),
//! survives a forced CA rotation in the middle of 1,000 creates without one failed call, and
//! puts back a `caBundle` someone removed, on the configuration's watch event alone.

use crate::manager_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use ctrl_envtest::Environment;
use ctrl_runtime::certrotator::{self, CA_CERT_KEY, CertRotator, Rotation, Target};
use ctrl_runtime::manager::{Error, Options};
use ctrl_runtime::webhook::admission::{self, Response};
use ctrl_runtime::webhook::{self, Server, certs};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use manager_common::{finished, get, manager, quiet, run};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const SECRET: &str = "webhook-server-cert";
const CONFIG: &str = "rotated-webhooks";
/// A guard against a hang, not a speed assertion.
const HANG: Duration = Duration::from_secs(60);

struct Fixture {
    env: Environment,
    rotator: CertRotator,
    calls: Arc<AtomicUsize>,
    probes: std::net::SocketAddr,
    ctx: CancellationToken,
    running: JoinHandle<Result<(), Error>>,
}

impl Fixture {
    /// An envtest with an empty Secret and a configuration without `caBundle` pointing at a
    /// webhook that counts its calls, and a manager running the rotator and the server.
    async fn start() -> Self {
        Self::start_with(false).await
    }

    /// With `by_service`, the configuration names the webhook Service (as deployed
    /// manifests do) and the API server is routed to the server through it, verifying the
    /// certificate against the Service's DNS name.
    async fn start_with(by_service: bool) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = certs::temp_cert_dir().unwrap();
        let server = Server::new(webhook::Options {
            host: "127.0.0.1".into(),
            port: 0,
            cert_dir: dir,
            ..Default::default()
        });
        let addr = server.bind().unwrap();
        let mut b = Environment::builder();
        if by_service {
            b = b.service_route(NS, "webhook-service", 443, addr);
        }
        let env = b.start().await.expect("envtest");
        let secrets: Api<Secret> = Api::namespaced(env.client(), NS);
        let empty = serde_json::from_value(json!({"metadata": {"name": SECRET}})).unwrap();
        secrets
            .create(&PostParams::default(), &empty)
            .await
            .unwrap();

        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let handler = admission::handler_fn(move |_| {
            c.fetch_add(1, Ordering::Relaxed);
            Response::allowed("")
        });
        // Registered through the manager (below), which then runs the server.
        let register = move |server: &Server| {
            server
                .register("/validate-configmaps", admission::Webhook::new(handler))
                .unwrap()
        };
        configs(&env)
            .create(&PostParams::default(), &configuration(addr, by_service))
            .await
            .unwrap();

        let mgr = manager(
            &env,
            Options {
                health_probe_bind_address: "127.0.0.1:0".into(),
                webhook_server: Some(server.clone()),
                ..quiet()
            },
        );
        register(&mgr.webhook_server());
        let opts = certrotator::Options::new(NS, SECRET, "webhook-service.default.svc")
            .serving(server.options())
            .extra_dns_names(["localhost", "127.0.0.1"])
            .target(Target::validating(CONFIG));
        let rotator = CertRotator::new(env.client(), opts);
        rotator.add_to(&mgr).unwrap();
        assert!(!rotator.is_injected());
        // Its RBAC: the Secret in a Role of its namespace, the configuration by name.
        let rules = mgr.rbac_rules();
        let names = |r: &Vec<k8s_openapi::api::rbac::v1::PolicyRule>| {
            r.iter()
                .flat_map(|r| r.resource_names.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&rules.namespaced[NS]), [SECRET]);
        assert!(
            names(&rules.cluster).contains(&CONFIG.to_string()),
            "{rules:?}"
        );
        let probes = mgr.health_probe_addr().unwrap();
        let ctx = CancellationToken::new();
        let running = run(&mgr, &ctx);
        Self {
            env,
            rotator,
            calls,
            probes,
            ctx,
            running,
        }
    }

    async fn stop(self) {
        self.ctx.cancel();
        finished(self.running).await.unwrap();
    }

    /// The Secret's `ca.crt`, once it has one.
    async fn secret_ca(&self) -> String {
        let secrets: Api<Secret> = Api::namespaced(self.env.client(), NS);
        let s = secrets.get(SECRET).await.unwrap();
        let data = s.data.unwrap_or_default();
        String::from_utf8(
            data.get(CA_CERT_KEY)
                .map(|b| b.0.clone())
                .unwrap_or_default(),
        )
        .unwrap()
    }

    /// Waits (on the configuration's watch) until its webhook's `caBundle` is `pem`.
    async fn bundle_becomes(&self, pem: &str) {
        let want = base64::engine::general_purpose::STANDARD.encode(pem);
        let cond =
            move |c: Option<&ValidatingWebhookConfiguration>| bundle(c) == Some(want.clone());
        let wait = await_condition(configs(&self.env), CONFIG, cond);
        tokio::time::timeout(HANG, wait)
            .await
            .expect("no hang")
            .unwrap();
    }

    /// Creates a labelled ConfigMap, which the API server must have called the webhook for.
    async fn create_through_the_webhook(&self, name: &str) {
        let before = self.calls.load(Ordering::Relaxed);
        self.create(name)
            .await
            .expect("the webhook admits the create");
        assert!(
            self.calls.load(Ordering::Relaxed) > before,
            "the API server called the webhook"
        );
    }

    async fn create(&self, name: &str) -> Result<ConfigMap, kube::Error> {
        let cms: Api<ConfigMap> = Api::namespaced(self.env.client(), NS);
        let cm = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"webhook": "on"}}
        }))
        .unwrap();
        cms.create(&PostParams::default(), &cm).await
    }
}

fn configs(env: &Environment) -> Api<ValidatingWebhookConfiguration> {
    Api::all(env.client())
}

fn bundle(c: Option<&ValidatingWebhookConfiguration>) -> Option<String> {
    let hook = c?.webhooks.as_ref()?.first()?;
    Some(
        base64::engine::general_purpose::STANDARD.encode(&hook.client_config.ca_bundle.as_ref()?.0),
    )
}

/// A validating configuration for labelled ConfigMaps, with no `caBundle`: at the
/// server's URL, or through the Service `default/webhook-service`.
fn configuration(addr: std::net::SocketAddr, by_service: bool) -> ValidatingWebhookConfiguration {
    let client = match by_service {
        true => {
            json!({"service": {"namespace": NS, "name": "webhook-service", "path": "/validate-configmaps"}})
        }
        false => json!({"url": format!("https://{addr}/validate-configmaps")}),
    };
    serde_json::from_value(json!({
        "metadata": {"name": CONFIG},
        "webhooks": [{
            "name": "vconfigmap.kb.io",
            "clientConfig": client,
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"webhook": "on"}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))
    .unwrap()
}

/// Whether the server at `addr` now serves a certificate that `ca_pem` alone verifies.
async fn serves_a_certificate_of(addr: std::net::SocketAddr, ca_pem: &str) -> bool {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()).take(1) {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
    let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    connector.connect(name, tcp).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_certificate_the_configuration_gets_the_ca_and_a_create_passes_the_webhook() {
    let f = Fixture::start().await;
    // The Secret gets a CA and the configuration gets it, seen on the watch.
    let ca = first_ca(&f).await;
    f.bundle_becomes(&ca).await;
    let ready = || get(f.probes, "/readyz/cert-rotator");
    ctrl_envtest::wait::Wait::new()
        .timeout(HANG)
        .until("the rotator to report ready", ready, |r| r.status == 200)
        .await;
    assert!(f.rotator.is_injected());
    f.create_through_the_webhook("through-the-webhook").await;
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_webhook_service_the_certificate_is_verified_for_its_dns_name() {
    let f = Fixture::start_with(true).await;
    let ca = first_ca(&f).await;
    f.bundle_becomes(&ca).await;
    f.create_through_the_webhook("through-the-service").await;
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_ca_rotation_fails_none_of_1000_creates() {
    let f = Fixture::start().await;
    let old_ca = first_ca(&f).await;
    f.bundle_becomes(&old_ca).await;
    let webhook = webhook_addr(&f).await;
    let mut rotated_at = None;
    let mut new_ca = String::new();
    let mut i = 0usize;
    // 1,000 creates, and on past the point where the new certificate is served.
    while i < 1000 || rotated_at.is_none_or(|at| i < at + 100) {
        if i == 100 {
            f.rotator.rotate(Rotation::Ca);
        }
        if i > 100 && rotated_at.is_none() && i.is_multiple_of(20) {
            let ca = f.secret_ca().await;
            if ca != old_ca && serves_a_certificate_of(webhook, &ca).await {
                rotated_at = Some(i);
                new_ca = ca;
            }
        }
        f.create(&format!("cm-{i}"))
            .await
            .unwrap_or_else(|e| panic!("create {i} failed: {e}"));
        i += 1;
    }
    // The new CA heads the bundle, the old one is still trusted, and every create called
    // the webhook.
    let (old, new) = (ders(&old_ca), ders(&new_ca));
    assert_eq!(new.len(), 2, "the new CA, then the old one");
    assert_eq!(new[1], old[0], "the old CA stays in the bundle");
    f.bundle_becomes(&new_ca).await;
    assert!(f.calls.load(Ordering::Relaxed) >= i);
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_ca_bundle_is_put_back_on_the_watch_event() {
    let f = Fixture::start().await;
    let ca = first_ca(&f).await;
    f.bundle_becomes(&ca).await;
    // Someone removes it (the periodic check is 12 h away: only the watch can repair it).
    let remove = json!([{"op": "remove", "path": "/webhooks/0/clientConfig/caBundle"}]);
    let patch: json_patch::Patch = serde_json::from_value(remove).unwrap();
    configs(&f.env)
        .patch(CONFIG, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .unwrap();
    f.bundle_becomes(&ca).await;
    f.create("after-the-repair")
        .await
        .expect("the webhook admits the create");
    f.stop().await;
}

/// The Secret's `ca.crt` once the rotator wrote one (waited for on the Secret's watch).
async fn first_ca(f: &Fixture) -> String {
    let secrets: Api<Secret> = Api::namespaced(f.env.client(), NS);
    let has_ca = |s: Option<&Secret>| {
        s.and_then(|s| s.data.as_ref())
            .is_some_and(|d| d.contains_key(CA_CERT_KEY))
    };
    let wait = await_condition(secrets, SECRET, has_ca);
    tokio::time::timeout(HANG, wait)
        .await
        .expect("no hang")
        .unwrap();
    f.secret_ca().await
}

/// The certificates of a PEM bundle, as DER.
fn ders(pem: &str) -> Vec<Vec<u8>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .map(|c| c.unwrap().to_vec())
        .collect()
}

async fn webhook_addr(f: &Fixture) -> std::net::SocketAddr {
    let c = configs(&f.env).get(CONFIG).await.unwrap();
    let url = c.webhooks.unwrap()[0].client_config.url.clone().unwrap();
    let authority = url
        .trim_start_matches("https://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    authority.parse().unwrap()
}
