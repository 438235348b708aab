//! Webhooks under the deterministic simulation (`ctrl_envtest::sim`): a replica's manager
//! serves admission webhooks with ctrl's webhook server in memory (`Server::in_memory`,
//! `Replica::serve_webhooks`), and ctrl-envtest calls them as it calls any webhook — by the
//! URL of the stored configuration, with the same AdmissionReview JSON — with no socket. A
//! mutating webhook's patch lands, a validating webhook's denial reaches the client, a crashed
//! replica's webhook is refused (`failurePolicy: Fail`: the write fails), a slow webhook
//! outlasts `timeoutSeconds`, and one seed gives one trace with its webhook calls in it.

use std::time::Duration;

use ctrl_envtest::WebhookConfiguration;
use ctrl_envtest::sim::{self, FaultKind, FaultPlan, Replica, Simulation};
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::webhook::{self, admission};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

/// Where the replica's webhooks are served: the `host:port` of their URLs.
const AT: &str = "webhooks.sim.example:9443";

/// The label the mutating webhook adds.
const DEFAULTED: &str = "sim.ctrl.rs/defaulted";

/// A CA certificate for the configurations' `caBundle` (in memory nothing is verified
/// against it, but it must hold a certificate, as a real call needs).
fn ca_bundle() -> ByteString {
    let (ca, _, _) = webhook::certs::new_ca("sim test CA", "", None).expect("a CA");
    ByteString(ca.into_bytes())
}

fn client_config(path: &str, ca: &ByteString) -> WebhookClientConfig {
    WebhookClientConfig {
        url: Some(format!("https://{AT}{path}")),
        ca_bundle: Some(ca.clone()),
        service: None,
    }
}

fn configmap_rule() -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(vec![String::new()]),
        api_versions: Some(vec!["v1".into()]),
        operations: Some(vec!["CREATE".into()]),
        resources: Some(vec!["configmaps".into()]),
        scope: Some("*".into()),
    }
}

/// A mutating webhook at `/mutate` and a validating one at `/validate`, both on ConfigMap
/// creates, failing closed, with a 10 s timeout.
fn configurations() -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let ca = ca_bundle();
    let mut mutating = MutatingWebhookConfiguration::default();
    mutating.metadata.name = Some("sim-mutate".into());
    mutating.webhooks = Some(vec![MutatingWebhook {
        name: "mutate.sim.ctrl.rs".into(),
        admission_review_versions: vec!["v1".into()],
        client_config: client_config("/mutate", &ca),
        failure_policy: Some("Fail".into()),
        side_effects: "None".into(),
        rules: Some(vec![configmap_rule()]),
        timeout_seconds: Some(10),
        ..Default::default()
    }]);
    let mut validating = ValidatingWebhookConfiguration::default();
    validating.metadata.name = Some("sim-validate".into());
    validating.webhooks = Some(vec![ValidatingWebhook {
        name: "validate.sim.ctrl.rs".into(),
        admission_review_versions: vec!["v1".into()],
        client_config: client_config("/validate", &ca),
        failure_policy: Some("Fail".into()),
        side_effects: "None".into(),
        rules: Some(vec![configmap_rule()]),
        timeout_seconds: Some(10),
        ..Default::default()
    }]);
    (mutating, validating)
}

/// The label patch of the mutating webhook.
fn label_patch() -> admission::Response {
    let patch = serde_json::json!([
        {"op": "add", "path": "/metadata/labels", "value": {DEFAULTED: "yes"}}
    ]);
    match serde_json::from_value(patch) {
        Ok(p) => admission::Response::patched(&p),
        Err(e) => admission::Response::errored(500, e.to_string()),
    }
}

/// A replica whose manager serves the two webhooks in memory: ConfigMaps get the label, and
/// one named `forbidden` is denied.
async fn replica(r: Replica) {
    let opts = Options {
        metrics_bind_address: "0".into(),
        webhook_server: Some(webhook::Server::in_memory(Default::default())),
        ..Default::default()
    };
    let mgr = match Manager::new(r.client.clone(), opts) {
        Ok(mgr) => mgr,
        Err(e) => return r.note(format_args!("manager: {e}")),
    };
    let server = mgr.webhook_server();
    let mutate = admission::Webhook::new(admission::handler_fn(|_| label_patch()));
    let validate = admission::Webhook::new(admission::handler_fn(|req| {
        if req.name == "forbidden" {
            admission::Response::denied("forbidden is not a good name")
        } else {
            admission::Response::allowed("")
        }
    }));
    let registered =
        (server.register("/mutate", mutate)).and_then(|()| server.register("/validate", validate));
    if let Err(e) = registered {
        return r.note(format_args!("webhooks: {e}"));
    }
    r.serve_webhooks(AT, server.service());
    if let Err(e) = mgr.start(r.shutdown.clone()).await {
        r.note(format_args!("stopped: {e}"));
    }
}

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

/// Creates ConfigMap `name` through the test's client.
async fn create(sim: &Simulation, name: &str) -> Result<ConfigMap, kube::Error> {
    let cms: Api<ConfigMap> = Api::default_namespaced(sim.client());
    cms.create(&PostParams::default(), &configmap(name)).await
}

fn simulation(seed: u64) -> sim::SimulationBuilder {
    let (mutating, validating) = configurations();
    let configs = [
        WebhookConfiguration::from(mutating),
        WebhookConfiguration::from(validating),
    ];
    Simulation::builder(seed).environment(|env| env.webhooks(configs))
}

/// The webhooks answer in memory: the label is added, `forbidden` is denied with the
/// webhook's message; after the replica crashed, a create fails closed.
async fn admits_denies_and_fails_closed(sim: Simulation) -> Result<(), String> {
    sim.add_replica("r1", replica);
    sim.advance(Duration::from_secs(2)).await?;
    let cm = create(&sim, "allowed").await.map_err(|e| e.to_string())?;
    let labels = cm.metadata.labels.unwrap_or_default();
    if labels.get(DEFAULTED).map(String::as_str) != Some("yes") {
        return Err(format!("not defaulted: {labels:?}"));
    }
    match create(&sim, "forbidden").await {
        Err(kube::Error::Api(s)) if s.message.contains("forbidden is not a good name") => {}
        other => return Err(format!("forbidden was not denied: {other:?}")),
    }
    sim.crash("r1");
    match create(&sim, "after-crash").await {
        Err(kube::Error::Api(s)) if s.code == 500 && s.message.contains("connection refused") => {
            Ok(())
        }
        other => Err(format!("a crashed webhook server answered: {other:?}")),
    }
}

#[test]
fn admission_webhooks_are_called_in_memory_and_a_crashed_server_fails_closed() {
    let run = || {
        simulation(4)
            .run(admits_denies_and_fails_closed)
            .unwrap_or_else(|f| panic!("{f}"))
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b, "one seed, one trace");
}

/// Under a stream of slow-webhook faults some create outlasts the 10 s timeout and fails
/// with the API server's deadline error, and later ones pass again.
async fn slow_webhooks(sim: Simulation) -> Result<(), String> {
    sim.add_replica("r1", replica);
    sim.advance(Duration::from_secs(1)).await?;
    let (mut timed_out, mut passed) = (0, 0);
    // A create a virtual second for 40 s, while the faults last.
    for i in 0..40 {
        match create(&sim, &format!("cm-{i}")).await {
            Ok(_) => passed += 1,
            Err(kube::Error::Api(s)) if s.message.contains("context deadline exceeded") => {
                timed_out += 1
            }
            Err(e) => return Err(format!("create {i}: {e}")),
        }
        sim.advance(Duration::from_secs(1)).await?;
    }
    if timed_out == 0 || passed == 0 {
        return Err(format!("{timed_out} timed out and {passed} passed"));
    }
    Ok(())
}

#[test]
fn a_slow_webhook_outlasts_its_timeout_in_virtual_time() {
    let plan = FaultPlan {
        kinds: vec![FaultKind::SlowWebhook],
        every: Duration::from_secs(4),
        until: Duration::from_secs(40),
    };
    let wall = std::time::Instant::now();
    sim::check(
        0..3,
        |seed| simulation(seed).faults(plan.clone()),
        slow_webhooks,
    )
    .unwrap_or_else(|f| panic!("{f}"));
    println!(
        "3 seeds of slow webhooks in {:?} of wall time",
        wall.elapsed()
    );
}
