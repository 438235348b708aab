//! kubebuilder's `config/` layout of [`Manifests`]: kustomize bases with unprefixed
//! names in namespace `system` ([`Naming::base`]) — `config/crd`, `config/rbac`,
//! `config/manager`, `config/webhook`, `config/prometheus` (a ServiceMonitor, left out of
//! `config/default` unless enabled, as kubebuilder's), `config/certmanager` (the
//! cert-manager overlay, `certs`, enabled by uncommenting its lines in `config/default`)
//! — and `config/default`, the kustomization to
//! apply (`kubectl apply -k config/default`), which puts everything in
//! `<name>-system` and prefixes every name with `<name>-`, as kubebuilder's does.
//! (`config/samples` is the user's, written by `cargo ctrl create api`, not generated
//! from the code.)

use serde_json::Value;

use super::{Manifests, Naming, deployment};
#[cfg(feature = "webhook")]
use super::{certs, webhooks};
use crate::cli::print::yaml_stream;
use crate::manager::BoxError;

/// The comment at the top of every generated file.
pub const HEADER: &str = "# Generated from the operator's code (`--print-manifests`); regenerate with `cargo ctrl manifests`.\n";

/// One file of a base: its name and its objects.
type File = (String, Vec<Value>);

fn kustomization(resources: &[String], extra: &str) -> String {
    let mut s = format!(
        "{HEADER}apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n{extra}resources:\n"
    );
    for r in resources {
        s += &format!("- {r}\n");
    }
    s
}

/// The files of base `dir` (`config/<dir>/...`) and its `kustomization.yaml`.
fn base(dir: &str, files: Vec<File>, extra: &str) -> Result<Vec<(String, String)>, BoxError> {
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    let mut out = vec![(
        format!("config/{dir}/kustomization.yaml"),
        kustomization(&names, extra),
    )];
    for (name, objects) in files {
        out.push((
            format!("config/{dir}/{name}"),
            HEADER.to_string() + &yaml_stream(&objects)?,
        ));
    }
    Ok(out)
}

fn value<T: serde::Serialize>(o: T) -> Result<Value, serde_json::Error> {
    serde_json::to_value(o)
}

/// `config/crd`: one file per CRD, `bases/<group>_<plural>.yaml` (controller-gen's).
fn crd_files(m: &Manifests, naming: &Naming) -> Result<Vec<File>, BoxError> {
    let mut out = Vec::new();
    for crd in m.crds(naming) {
        let name = format!("bases/{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
        out.push((name, vec![value(crd)?]));
    }
    Ok(out)
}

/// `config/rbac`: one file per object name (`service_account.yaml`,
/// `manager_role.yaml`, `leader_election_role.yaml`, ...); Roles of the same name in
/// several namespaces share a file.
fn rbac_files(m: &Manifests, naming: &Naming) -> Result<Vec<File>, BoxError> {
    let mut out: Vec<File> = Vec::new();
    for o in naming.rbac().objects(&m.rules) {
        let v = value(o)?;
        let name = match v["kind"].as_str() {
            Some("ServiceAccount") => "service_account".to_string(),
            _ => v["metadata"]["name"]
                .as_str()
                .unwrap_or("rbac")
                .replace('-', "_"),
        };
        let file = format!("{name}.yaml");
        match out.iter_mut().find(|(n, _)| *n == file) {
            Some((_, objects)) => objects.push(v),
            None => out.push((file, vec![v])),
        }
    }
    Ok(out)
}

/// `config/manager`: the Namespace and the manager Deployment.
fn manager_files(m: &Manifests, naming: &Naming) -> Result<Vec<File>, BoxError> {
    let objects = vec![
        value(deployment::namespace(naming))?,
        value(m.deployment(naming))?,
    ];
    Ok(vec![("manager.yaml".into(), objects)])
}

/// `config/webhook`: the configurations, the webhook Service and the certificate Secret.
#[cfg(feature = "webhook")]
fn webhook_files(m: &Manifests, naming: &Naming) -> Result<Vec<File>, BoxError> {
    let client = webhooks::service_client(naming);
    let configs = webhooks::configurations(&m.webhooks, naming, &client)
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let services = deployment::services(naming, &m.args, true);
    let service = services
        .into_iter()
        .skip(1)
        .map(value)
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    if !configs.is_empty() {
        out.push(("manifests.yaml".to_string(), configs));
    }
    out.push(("service.yaml".to_string(), service));
    out.push((
        "secret.yaml".to_string(),
        vec![value(certs::secret(naming))?],
    ));
    Ok(out)
}

/// `config/default`: the kustomization over the bases, with the metrics Service.
fn default_files(m: &Manifests, naming: &Naming) -> Result<Vec<(String, String)>, BoxError> {
    let metrics = deployment::services(naming, &m.args, false);
    let mut resources: Vec<String> = ["../crd", "../rbac", "../manager"].map(String::from).into();
    if m.serves_webhooks() {
        resources.push("../webhook".into());
    }
    resources.push("metrics_service.yaml".into());
    let extra = format!("namespace: {}-system\nnamePrefix: {}-\n", m.name, m.name);
    #[cfg_attr(not(feature = "webhook"), expect(unused_mut))]
    let mut text = kustomization(&resources, &extra);
    #[cfg(feature = "webhook")]
    if m.serves_webhooks() {
        text += certs::default_resource_line();
        text += &certs::default_patch_lines(m);
    }
    Ok(vec![
        ("config/default/kustomization.yaml".into(), text),
        (
            "config/default/metrics_service.yaml".into(),
            HEADER.to_string() + &yaml_stream(&metrics)?,
        ),
    ])
}

/// Every file of `config/` (see the module doc), as `(path, contents)`.
pub fn files(m: &Manifests) -> Result<Vec<(String, String)>, BoxError> {
    let naming = Naming::base(&m.name);
    let mut out = Vec::new();
    if !m.crds.is_empty() {
        out.extend(base("crd", crd_files(m, &naming)?, "")?);
    }
    out.extend(base("rbac", rbac_files(m, &naming)?, "")?);
    let images = "images:\n- name: controller\n  newName: controller\n  newTag: latest\n";
    out.extend(base("manager", manager_files(m, &naming)?, images)?);
    #[cfg(feature = "webhook")]
    if m.serves_webhooks() {
        out.extend(base("webhook", webhook_files(m, &naming)?, "")?);
    }
    let monitor = vec![deployment::service_monitor(&naming, &m.args)];
    out.extend(base(
        "prometheus",
        vec![("monitor.yaml".into(), monitor)],
        "",
    )?);
    out.extend(default_files(m, &naming)?);
    #[cfg(feature = "webhook")]
    if m.serves_webhooks() {
        out.extend(certs::certmanager_files(m)?);
    }
    Ok(out)
}
