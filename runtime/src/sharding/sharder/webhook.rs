//! The sharder's mutating webhook (upstream's `webhook/sharder`): labels an object
//! that has no shard yet with the shard the ring picks, on create and update.
//!
//! Registered with `failurePolicy: Ignore` and an `objectSelector` matching only
//! objects without the shard label ([`webhook_configuration`]), so it is on the path
//! of new objects and of objects a shard just let go (drain acknowledged), and a
//! sharder that is down only delays assignment until the next sync (`super::sync`).
//! It reads the ring and the shard leases from watches (`super::view`) it starts on
//! the first request, as upstream's webhook reads them from informer caches: every
//! replica's webhook server can answer for the ring, and admitting an object costs no
//! request to the API server.

use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use super::assign::{Decision, decide, key, role};
use super::view::RingView;
use crate::sharding::{ControllerRing, label_shard, metrics};
use crate::webhook::admission::{Handler, Operation, Request, Response};

/// The path the sharder's webhook for `ring` is served at (upstream's).
pub fn webhook_path(ring: &str) -> String {
    format!("/webhooks/sharder/controllerring/{ring}")
}

/// The admission handler of one ring.
pub(crate) struct SharderWebhook {
    pub client: kube::Client,
    pub ring: String,
    pub lease_namespace: String,
    /// The watched ring and leases, started by the first request.
    pub view: tokio::sync::OnceCell<RingView>,
}

impl SharderWebhook {
    /// The handler of `ring`, its shard leases in `lease_namespace`.
    pub fn new(client: kube::Client, ring: &str, lease_namespace: &str) -> Self {
        Self {
            client,
            ring: ring.to_string(),
            lease_namespace: lease_namespace.to_string(),
            view: tokio::sync::OnceCell::new(),
        }
    }

    async fn assign(&self, req: &Request, meta: &ObjectMeta) -> Result<Option<String>, String> {
        let view = self
            .view
            .get_or_try_init(|| RingView::start(&self.client, &self.ring, &self.lease_namespace))
            .await?;
        let ring = view
            .ring(&self.ring)
            .ok_or_else(|| format!("ControllerRing {:?} not found", self.ring))?;
        let (group, resource) = (&req.resource.group, &req.resource.resource);
        let Some(role) = role(&ring, group, resource) else {
            return Ok(None);
        };
        // No key (generateName on a main object, no controller owner): admitted as is;
        // the sync assigns it once it has a name.
        let Ok(Some(k)) = key(role, &req.kind.group, &req.kind.kind, meta) else {
            return Ok(None);
        };
        match decide(&view.members(), &self.ring, role, &k, meta) {
            Decision::Assign(shard) => {
                metrics::ASSIGNMENTS
                    .with_label_values(&[&self.ring, group, resource])
                    .inc();
                Ok(Some(shard))
            }
            _ => Ok(None),
        }
    }
}

#[async_trait]
impl Handler for SharderWebhook {
    async fn handle(&self, req: &Request) -> Response {
        if !matches!(req.operation, Operation::Create | Operation::Update) {
            return Response::allowed("");
        }
        let Some(obj) = &req.object else {
            return Response::allowed("");
        };
        let meta: ObjectMeta = match obj.get("metadata").cloned().map(serde_json::from_value) {
            Some(Ok(m)) => m,
            _ => return Response::errored(400, "the object has no valid metadata"),
        };
        if meta
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(&label_shard(&self.ring)))
        {
            return Response::allowed("object is already assigned");
        }
        match self.assign(req, &meta).await {
            Ok(Some(shard)) => {
                tracing::debug!(ring = %self.ring, namespace = ?meta.namespace, name = ?meta.name, shard = %shard, "Assigning object");
                Response::patched(&label_patch(&meta, &label_shard(&self.ring), &shard))
            }
            Ok(None) => Response::allowed("object is not assigned"),
            Err(message) => Response::errored(500, message),
        }
    }
}

/// A JSON patch adding label `key=value`.
fn label_patch(meta: &ObjectMeta, key: &str, value: &str) -> json_patch::Patch {
    let op = if meta.labels.is_none() {
        serde_json::json!([{ "op": "add", "path": "/metadata/labels", "value": { key: value } }])
    } else {
        let escaped = key.replace('~', "~0").replace('/', "~1");
        serde_json::json!([{ "op": "add", "path": format!("/metadata/labels/{escaped}"), "value": value }])
    };
    serde_json::from_value(op).unwrap_or(json_patch::Patch(Vec::new()))
}

/// The MutatingWebhookConfiguration `controllerring-<ring>` sending creates and
/// updates of the ring's unassigned objects to `base_url` + [`webhook_path`], trusted
/// with `ca_pem`.
pub fn webhook_configuration(
    ring: &ControllerRing,
    base_url: &str,
    ca_pem: &str,
) -> MutatingWebhookConfiguration {
    let name = ring.ring_name();
    let rule = |group: &str, resource: &str| RuleWithOperations {
        api_groups: Some(vec![group.to_string()]),
        api_versions: Some(vec!["*".into()]),
        operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
        resources: Some(vec![resource.to_string()]),
        scope: Some("*".into()),
    };
    let mut rules = Vec::new();
    for r in &ring.spec.resources {
        rules.push(rule(&r.group_resource.group, &r.group_resource.resource));
        rules.extend(
            r.controlled_resources
                .iter()
                .map(|c| rule(&c.group, &c.resource)),
        );
    }
    MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(format!("controllerring-{name}")),
            ..Default::default()
        },
        webhooks: Some(vec![MutatingWebhook {
            name: "sharder.sharding.timebertt.dev".into(),
            admission_review_versions: vec!["v1".into()],
            client_config: WebhookClientConfig {
                url: Some(format!(
                    "{}{}",
                    base_url.trim_end_matches('/'),
                    webhook_path(name)
                )),
                ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                service: None,
            },
            failure_policy: Some("Ignore".into()),
            side_effects: "None".into(),
            namespace_selector: ring.spec.namespace_selector.clone(),
            object_selector: Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: label_shard(name),
                    operator: "DoesNotExist".into(),
                    values: None,
                }]),
                match_labels: None,
            }),
            rules: Some(rules),
            timeout_seconds: Some(10),
            ..Default::default()
        }]),
    }
}
