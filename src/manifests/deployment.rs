//! The manager's Namespace, Deployment and Services, with kubebuilder's defaults
//! (`config/manager/manager.yaml`, `config/default/metrics_service.yaml`,
//! `config/webhook/service.yaml` and the metrics and webhook patches of
//! `config/default`, folded in): the restricted Pod Security Standard, probes on the
//! health port, resources, leader election, the ports and certificate flags from the
//! manager's [`Args`].

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, HTTPGetAction, Namespace,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile,
    SecretVolumeSource, SecurityContext, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Naming;
use crate::manager::Args;

/// Where the webhook certificates are: the webhook server's default directory, an
/// `emptyDir` the operator's cert rotator writes, or, with `--webhook-cert-path`, the
/// mounted Secret (kubebuilder's `manager_webhook_patch.yaml`).
pub const WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// The Secret holding the webhook certificates (`super::certs`): the cert rotator's,
/// or cert-manager's `serving-cert` writes it in the overlay.
pub const WEBHOOK_CERT_SECRET: &str = "webhook-server-cert";
/// The health probe port of the deployed manager.
pub const HEALTH_PORT: i32 = 8081;

/// The labels of the operator's objects; with `selector`, the manager Pods' selector
/// (`control-plane: controller-manager`) too.
pub fn labels(name: &str, selector: bool) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([("app.kubernetes.io/name".to_string(), name.to_string())]);
    if selector {
        l.insert("control-plane".into(), "controller-manager".into());
    }
    l
}

fn meta(naming: &Naming, name: &str, namespaced: bool) -> ObjectMeta {
    let mut l = labels(&naming.name, true);
    l.insert("app.kubernetes.io/managed-by".into(), "kustomize".into());
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespaced.then(|| naming.namespace.clone()),
        labels: Some(l),
        ..Default::default()
    }
}

/// The operator's namespace.
pub fn namespace(naming: &Naming) -> Namespace {
    Namespace {
        metadata: meta(naming, &naming.namespace, false),
        ..Default::default()
    }
}

/// The metrics port of the deployed manager: kubebuilder's `:8443` (HTTPS) with
/// `--metrics-secure`, else `:8080`.
pub fn metrics_port(args: &Args) -> i32 {
    if args.metrics_secure { 8443 } else { 8080 }
}

/// The manager's command line in its Deployment.
pub fn manager_args(args: &Args, webhooks: bool) -> Vec<String> {
    let mut out = vec![
        "--leader-elect".to_string(),
        format!("--health-probe-bind-address=:{HEALTH_PORT}"),
        format!("--metrics-bind-address=:{}", metrics_port(args)),
    ];
    if !args.metrics_secure {
        out.push("--metrics-secure=false".into());
    }
    if webhooks && args.webhook_cert_path.is_some() {
        out.push(format!("--webhook-cert-path={WEBHOOK_CERT_DIR}"));
    }
    out
}

fn probe(path: &str, initial: i32, period: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::Int(HEALTH_PORT),
            ..Default::default()
        }),
        initial_delay_seconds: Some(initial),
        period_seconds: Some(period),
        ..Default::default()
    }
}

fn quantities(cpu: &str, memory: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.into())),
        ("memory".to_string(), Quantity(memory.into())),
    ])
}

/// The manager container: `/manager` with [`manager_args`], kubebuilder's security
/// context, probes and resources; with webhooks, the webhook port and certificate.
fn container(args: &Args, webhooks: bool) -> Container {
    let mut ports = vec![];
    let mut mounts = vec![];
    if webhooks {
        ports.push(ContainerPort {
            container_port: i32::from(args.webhook_port),
            name: Some("webhook-server".into()),
            protocol: Some("TCP".into()),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            mount_path: WEBHOOK_CERT_DIR.into(),
            name: "webhook-certs".into(),
            // The cert rotator writes the files; a given certificate is only read.
            read_only: Some(args.webhook_cert_path.is_some()),
            ..Default::default()
        });
    }
    Container {
        name: "manager".into(),
        image: Some("controller:latest".into()),
        command: Some(vec!["/manager".into()]),
        args: Some(manager_args(args, webhooks)),
        ports: Some(ports),
        security_context: Some(SecurityContext {
            read_only_root_filesystem: Some(true),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: None,
            }),
            ..Default::default()
        }),
        liveness_probe: Some(probe("/healthz", 15, 20)),
        readiness_probe: Some(probe("/readyz", 5, 10)),
        resources: Some(ResourceRequirements {
            limits: Some(quantities("500m", "128Mi")),
            requests: Some(quantities("10m", "64Mi")),
            ..Default::default()
        }),
        volume_mounts: Some(mounts),
        ..Default::default()
    }
}

/// The certificate volume: the Secret with `--webhook-cert-path`, else an `emptyDir` the
/// operator's cert rotator writes the files into.
fn cert_volume(naming: &Naming, args: &Args) -> Volume {
    let (secret, empty_dir) = match args.webhook_cert_path {
        Some(_) => {
            let s = SecretVolumeSource {
                secret_name: Some(naming.named(WEBHOOK_CERT_SECRET)),
                ..Default::default()
            };
            (Some(s), None)
        }
        None => (None, Some(EmptyDirVolumeSource::default())),
    };
    Volume {
        name: "webhook-certs".into(),
        secret,
        empty_dir,
        ..Default::default()
    }
}

/// The manager Deployment: one replica of the manager container under the restricted Pod
/// Security Standard, as the operator's ServiceAccount.
pub fn deployment(naming: &Naming, args: &Args, webhooks: bool) -> Deployment {
    let selector = labels(&naming.name, true);
    let volumes = webhooks.then(|| cert_volume(naming, args));
    let pod = PodSpec {
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                localhost_profile: None,
            }),
            ..Default::default()
        }),
        containers: vec![container(args, webhooks)],
        volumes: Some(volumes.into_iter().collect()),
        service_account_name: Some(naming.named("controller-manager")),
        termination_grace_period_seconds: Some(10),
        ..Default::default()
    };
    let annotations = BTreeMap::from([(
        "kubectl.kubernetes.io/default-container".to_string(),
        "manager".to_string(),
    )]);
    Deployment {
        metadata: meta(naming, &naming.named("controller-manager"), true),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(selector.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    annotations: Some(annotations),
                    labels: Some(selector),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Sets `env` (name, value) on the manager container of `d`: what the operator's code
/// reads from its environment (kubebuilder's deploy-image `<KIND>_IMAGE`).
pub fn set_env(d: &mut Deployment, env: &[(String, String)]) {
    if env.is_empty() {
        return;
    }
    let pod = d.spec.as_mut().and_then(|s| s.template.spec.as_mut());
    for c in pod.into_iter().flat_map(|p| p.containers.iter_mut()) {
        let vars = c.env.get_or_insert_default();
        for (name, value) in env {
            vars.retain(|v| &v.name != name);
            vars.push(EnvVar {
                name: name.clone(),
                value: Some(value.clone()),
                value_from: None,
            });
        }
    }
}

fn service(naming: &Naming, name: &str, port: ServicePort) -> Service {
    Service {
        metadata: meta(naming, name, true),
        spec: Some(ServiceSpec {
            ports: Some(vec![port]),
            selector: Some(labels(&naming.name, true)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The metrics Service (`<prefix>controller-manager-metrics-service`, `https` 8443 with
/// secure metrics) and, with webhooks, the webhook Service (`<prefix>webhook-service`,
/// 443 to the webhook port).
pub fn services(naming: &Naming, args: &Args, webhooks: bool) -> Vec<Service> {
    let port = metrics_port(args);
    let mut out = vec![service(
        naming,
        &naming.named("controller-manager-metrics-service"),
        ServicePort {
            name: Some(if args.metrics_secure { "https" } else { "http" }.into()),
            port,
            protocol: Some("TCP".into()),
            target_port: Some(IntOrString::Int(port)),
            ..Default::default()
        },
    )];
    if webhooks {
        out.push(service(
            naming,
            &naming.named("webhook-service"),
            ServicePort {
                port: 443,
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(i32::from(args.webhook_port))),
                ..Default::default()
            },
        ));
    }
    out
}

/// The Prometheus Operator's `ServiceMonitor` of the metrics Service (kubebuilder's
/// `config/prometheus/monitor.yaml`): HTTPS with the scraper's ServiceAccount token
/// (the secure metrics' authentication) and the self-signed certificate accepted, or
/// plain HTTP with `--metrics-secure=false`. Optional: it needs the Prometheus
/// Operator's CRDs, so `config/default` leaves it out unless enabled.
pub fn service_monitor(naming: &Naming, args: &Args) -> serde_json::Value {
    let endpoint = if args.metrics_secure {
        serde_json::json!({
            "path": "/metrics",
            "port": "https",
            "scheme": "https",
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "tlsConfig": { "insecureSkipVerify": true },
        })
    } else {
        serde_json::json!({ "path": "/metrics", "port": "http", "scheme": "http" })
    };
    serde_json::json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": meta(naming, &naming.named("controller-manager-metrics-monitor"), true),
        "spec": {
            "endpoints": [endpoint],
            "selector": { "matchLabels": labels(&naming.name, true) },
        },
    })
}
