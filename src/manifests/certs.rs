//! Webhook certificates in a deployment. By default the operator makes its own
//! ([`CertRotator`](crate::certrotator::CertRotator)): the manifests ship the empty
//! Secret `<prefix>webhook-server-cert` it keeps them in ([`secret`]), the Deployment
//! gives it a writable `emptyDir` for the files and no `--webhook-cert-path`, and
//! [`rotator_options`] names its Secret, the webhook Service's DNS names and the objects
//! to inject the CA into exactly as the other manifests name them.
//!
//! With `--webhook-cert-path` the operator serves the certificates it is given. The
//! cert-manager overlay ([`certmanager_files`], kubebuilder's `config/certmanager` and the
//! patches its `config/default` enables by uncommenting) has cert-manager issue them into
//! the same Secret, mounts it, passes `--webhook-cert-path`, and has cert-manager's CA
//! injector fill in `caBundle` (`cert-manager.io/inject-ca-from`).

use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use super::deployment::{WEBHOOK_CERT_DIR, WEBHOOK_CERT_SECRET, labels};
use super::{Manifests, Naming};
use crate::certrotator::{self, Target};
use crate::manager::{Args, BoxError, Manager};
use crate::webhook::{self, Registration, WebhookType};

/// Whether the deployed operator makes its own certificates: it serves webhooks and no
/// `--webhook-cert-path` is given.
pub fn rotates(args: &Args, registrations: &[Registration]) -> bool {
    args.webhook_cert_path.is_none() && !registrations.is_empty()
}

/// Adds the RBAC rules of the rotator that operator `name` runs in `<name>-system` to
/// `mgr`'s, if it runs one ([`rotates`]): what `--print-rbac` and the manifests show.
pub fn add_rotator_rules(name: &str, mgr: &Manager, args: &Args) {
    let webhooks = mgr.webhook_registrations();
    if rotates(args, &webhooks) {
        let server = webhook::Options::default();
        let o = rotator_options(&Naming::deployed(name), &webhooks, &server);
        mgr.add_rbac_rules(o.rbac_rules());
    }
}

/// The webhook Service's DNS names in `naming`'s namespace: `<svc>.<ns>.svc` and
/// `<svc>.<ns>.svc.cluster.local`.
pub fn dns_names(naming: &Naming) -> [String; 2] {
    let svc = format!(
        "{}.{}.svc",
        naming.named("webhook-service"),
        naming.namespace
    );
    let local = format!("{svc}.cluster.local");
    [svc, local]
}

/// The objects whose `caBundle` is the operator's CA: the webhook configurations it has
/// webhooks in, and the CRDs its conversion webhook converts (`<resource>.<group>`).
pub fn targets(naming: &Naming, registrations: &[Registration]) -> Vec<Target> {
    let has = |t| registrations.iter().any(|r| r.webhook_type == t);
    let mut out = Vec::new();
    if has(WebhookType::Mutating) {
        out.push(Target::mutating(
            naming.named("mutating-webhook-configuration"),
        ));
    }
    if has(WebhookType::Validating) {
        out.push(Target::validating(
            naming.named("validating-webhook-configuration"),
        ));
    }
    for r in registrations
        .iter()
        .filter(|r| r.webhook_type == WebhookType::Conversion)
    {
        let crd = Target::crd_conversion(format!("{}.{}", r.resource, r.group));
        if !out.contains(&crd) {
            out.push(crd);
        }
    }
    out
}

/// The rotator of operator `naming` serving through `server`: the Secret
/// `<prefix>webhook-server-cert` in its namespace, the Service's names, the targets.
pub fn rotator_options(
    naming: &Naming,
    registrations: &[Registration],
    server: &webhook::Options,
) -> certrotator::Options {
    let [svc, local] = dns_names(naming);
    let mut o =
        certrotator::Options::new(&naming.namespace, naming.named(WEBHOOK_CERT_SECRET), svc)
            .serving(server)
            .extra_dns_names([local]);
    o.ca_name = format!("{}-ca", naming.name);
    o.ca_organization = naming.name.clone();
    o.targets = targets(naming, registrations);
    o
}

/// The empty Secret the certificates are kept in (the rotator fills it; cert-manager
/// writes it in the overlay).
pub fn secret(naming: &Naming) -> Secret {
    Secret {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(naming.named(WEBHOOK_CERT_SECRET)),
            namespace: Some(naming.namespace.clone()),
            labels: Some(labels(&naming.name, false)),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The lines of `config/default/kustomization.yaml` that enable the overlay, commented
/// out (a line that starts with `#` and no space is one to uncomment): the
/// `../certmanager` resource and the patches.
pub fn default_resource_line() -> &'static str {
    "# [CERTMANAGER] To have cert-manager issue the webhook certificate instead of the\n\
     # operator's rotator, uncomment the lines below that start with '#' and no space.\n\
     #- ../certmanager\n"
}

/// The commented `patches:` section of `config/default/kustomization.yaml`.
pub fn default_patch_lines(m: &Manifests) -> String {
    let mut s = String::from(
        "# [CERTMANAGER] The manager mounts the Secret and is given --webhook-cert-path;\n\
         # cert-manager's CA injector fills in caBundle.\n\
         #patches:\n\
         #- {path: cert_manager_deployment_patch.yaml, target: {kind: Deployment, name: controller-manager}}\n",
    );
    if !injected(m).is_empty() {
        s += "#- path: cert_manager_cainjection_patch.yaml\n";
    }
    s
}

/// `(kind, apiVersion, base name)` of every object cert-manager injects the CA into.
fn injected(m: &Manifests) -> Vec<(&'static str, &'static str, String)> {
    let base = Naming::base(&m.name);
    targets(&base, &m.webhooks)
        .into_iter()
        .map(|t| match t.kind {
            certrotator::TargetKind::Mutating => (
                "MutatingWebhookConfiguration",
                "admissionregistration.k8s.io/v1",
                t.name,
            ),
            certrotator::TargetKind::Validating => (
                "ValidatingWebhookConfiguration",
                "admissionregistration.k8s.io/v1",
                t.name,
            ),
            certrotator::TargetKind::CrdConversion => (
                "CustomResourceDefinition",
                "apiextensions.k8s.io/v1",
                t.name,
            ),
        })
        .collect()
}

/// The overlay: `config/certmanager` (a self-signed Issuer and the serving Certificate,
/// with the final names: edit them if you change `config/default`'s namespace or
/// prefix) and the two patches `config/default` enables.
pub fn certmanager_files(m: &Manifests) -> Result<Vec<(String, String)>, BoxError> {
    let deployed = Naming::deployed(&m.name);
    let issuer = json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
        "metadata": {"name": "selfsigned-issuer", "namespace": "system"},
        "spec": {"selfSigned": {}},
    });
    let certificate = json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": "serving-cert", "namespace": "system"},
        "spec": {
            "dnsNames": dns_names(&deployed),
            "issuerRef": {"kind": "Issuer", "name": "selfsigned-issuer"},
            "secretName": deployed.named(WEBHOOK_CERT_SECRET),
        },
    });
    let header = super::kustomize::HEADER;
    let yaml = |objects: &[Value]| -> Result<String, BoxError> {
        Ok(header.to_string() + &crate::cli::print::yaml_stream(objects)?)
    };
    let mut out = vec![
        (
            "config/certmanager/kustomization.yaml".to_string(),
            format!(
                "{header}apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- certificate.yaml\nconfigurations:\n- kustomizeconfig.yaml\n"
            ),
        ),
        (
            "config/certmanager/certificate.yaml".into(),
            yaml(&[issuer, certificate])?,
        ),
        (
            "config/certmanager/kustomizeconfig.yaml".into(),
            format!(
                "{header}# The Certificate's issuerRef follows the Issuer's prefixed name.\nnameReference:\n- kind: Issuer\n  group: cert-manager.io\n  fieldSpecs:\n  - kind: Certificate\n    group: cert-manager.io\n    path: spec/issuerRef/name\n"
            ),
        ),
        (
            "config/default/cert_manager_deployment_patch.yaml".into(),
            yaml(&[deployment_patch()])?,
        ),
    ];
    let inject = format!("{}/{}", deployed.namespace, deployed.named("serving-cert"));
    let patches: Vec<Value> = injected(m)
        .into_iter()
        .map(|(kind, api_version, name)| json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "annotations": {"cert-manager.io/inject-ca-from": inject}},
        }))
        .collect();
    if !patches.is_empty() {
        out.push((
            "config/default/cert_manager_cainjection_patch.yaml".into(),
            yaml(&patches)?,
        ));
    }
    Ok(out)
}

/// The JSON patch of the manager Deployment: the certificate volume becomes the Secret,
/// and the manager is told where it is.
fn deployment_patch() -> Value {
    json!([
        {"op": "replace", "path": "/spec/template/spec/volumes/0", "value": {
            "name": "webhook-certs",
            "secret": {"secretName": WEBHOOK_CERT_SECRET},
        }},
        {"op": "add", "path": "/spec/template/spec/containers/0/args/-",
         "value": format!("--webhook-cert-path={WEBHOOK_CERT_DIR}")},
    ])
}
