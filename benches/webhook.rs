//! Webhook bench: the latency a defaulting + validating webhook round trip adds to a
//! create through ctrl-envtest, side by side with the same create without webhooks
//! in the same run (same environment, same client; only the object selector differs).
//!
//! A ctrl webhook server (TLS, registered by `WebhookBuilder`) serves
//! `/mutate--v1-configmap` and `/validate--v1-configmap`; envtest calls both over
//! TLS (connections kept alive) for ConfigMaps labelled `webhook=on`. Prints p50 /
//! p90 / p99 of both and the added p50 (the bar: under 5 ms).
//!
//! `cargo bench --bench webhook` runs the full size; without `--bench` (as
//! `cargo test --all-targets` runs it) a quick mode only checks it all works.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine;
use ctrl::manager::{Manager, Options, Runnable};
use ctrl::webhook::admission::{
    CustomDefaulter, CustomValidator, Request, ValidationError, Warnings,
};
use ctrl::webhook::{self, Server, certs};
use ctrl_builder::WebhookBuilder;
use ctrl_envtest::Environment;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Defaults;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Defaults {
    async fn set_defaults(
        &self,
        _req: &Request,
        cm: &mut ConfigMap,
    ) -> Result<(), ValidationError> {
        cm.data
            .get_or_insert_default()
            .entry("probe".into())
            .or_insert_with(|| "/healthz".into());
        Ok(())
    }
}

struct Valid;

#[async_trait]
impl CustomValidator<ConfigMap> for Valid {
    async fn validate_create(
        &self,
        _req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        match cm.data.as_ref().and_then(|d| d.get("v")) {
            Some(v) if v == "bad" => Err(ValidationError::invalid("bad")),
            _ => Ok(vec![]),
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn configmap(name: &str, labelled: bool) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": if labelled { json!({"webhook": "on"}) } else { json!({}) }},
        "data": {"v": "ok"},
    }))
    .expect("configmap")
}

async fn run(n: usize) {
    let env = Environment::builder().start().await.expect("envtest");
    let dir = certs::temp_cert_dir().expect("dir");
    let ca = certs::generate_self_signed(&dir, &[])
        .expect("certs")
        .ca_pem;
    let server = Server::new(webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Default::default()
    });
    let addr = server.bind().expect("bind");
    let mgr = Manager::new(
        env.client(),
        Options {
            metrics_bind_address: "0".into(),
            webhook_server: Some(server.clone()),
            ..Default::default()
        },
    )
    .expect("manager");
    WebhookBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .with_defaulter(Defaults)
        .with_validator(Valid)
        .complete()
        .expect("webhooks");
    let ctx = CancellationToken::new();
    let c = ctx.clone();
    let m = mgr.clone();
    tokio::spawn(async move { m.start(c).await });
    assert!(
        Runnable::wait_ready(&server, ctx.clone()).await,
        "webhook server did not start"
    );

    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let hook = |name: &str, path: &str| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("https://127.0.0.1:{}{path}", addr.port()), "caBundle": bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "objectSelector": {"matchLabels": {"webhook": "on"}},
        })
    };
    let mwc: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "m"}, "webhooks": [hook("m.ctrl.dev", "/mutate--v1-configmap")]}))
    .expect("mwc");
    let vwc: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "v"}, "webhooks": [hook("v.ctrl.dev", "/validate--v1-configmap")]}))
    .expect("vwc");
    let pp = PostParams::default();
    Api::<MutatingWebhookConfiguration>::all(env.client())
        .create(&pp, &mwc)
        .await
        .expect("create mwc");
    Api::<ValidatingWebhookConfiguration>::all(env.client())
        .create(&pp, &vwc)
        .await
        .expect("create vwc");

    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let warmup = (n / 10).max(3);
    let mut plain = Vec::with_capacity(n);
    let mut hooked = Vec::with_capacity(n);
    for i in 0..(n + warmup) {
        // Interleaved, so both see the same machine load.
        let t0 = Instant::now();
        cms.create(&pp, &configmap(&format!("plain-{i}"), false))
            .await
            .expect("plain create");
        let a = t0.elapsed();
        let t1 = Instant::now();
        let made = cms
            .create(&pp, &configmap(&format!("hooked-{i}"), true))
            .await
            .expect("hooked create");
        let b = t1.elapsed();
        assert_eq!(
            made.data
                .as_ref()
                .and_then(|d| d.get("probe"))
                .map(String::as_str),
            Some("/healthz"),
            "defaulted"
        );
        if i >= warmup {
            plain.push(a);
            hooked.push(b);
        }
    }
    plain.sort();
    hooked.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("webhook bench: {n} creates each (after {warmup} warm-up), p50 / p90 / p99 in ms");
    println!("{:<34} {:>8} {:>8} {:>8}", "case", "p50", "p90", "p99");
    for (name, s) in [
        ("create, no webhook", &plain),
        ("create, defaulting + validating", &hooked),
    ] {
        println!(
            "{:<34} {:>8.3} {:>8.3} {:>8.3}",
            name,
            ms(percentile(s, 0.5)),
            ms(percentile(s, 0.9)),
            ms(percentile(s, 0.99))
        );
    }
    let added = ms(percentile(&hooked, 0.5)) - ms(percentile(&plain, 0.5));
    println!("added by the webhook round trip at p50: {added:.3} ms (bar: < 5 ms)");
    ctx.cancel();
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n = if full { 1000 } else { 10 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(n));
}
