//! `--print-crd`, `--print-rbac` and `--print-manifests`: what an operator needs in a
//! cluster, generated from its code. The operator builds its manager as deployed —
//! leader election on, secure metrics as its flags say — against a client that is
//! never dialled ([`offline_client`]), sets up its controllers and webhooks, and the
//! manager is asked what it watches and serves: `Manager::rbac_rules` become the
//! ServiceAccount, ClusterRole, Role and bindings of `<name>-system` ([`manifest`]);
//! `--print-manifests` adds the rest of a deployment ([`crate::manifests`]).

use std::collections::BTreeMap;
use std::process::ExitCode;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::program::{Operator, crds as operator_crds};
use crate::manager::{BoxError, Manager, Options};
use crate::rbac::Manifest;

/// Where an operator is deployed: namespace `<name>-system`, ServiceAccount
/// `<name>-controller-manager`, labelled `app.kubernetes.io/name: <name>`.
pub fn manifest(name: &str) -> Manifest {
    Manifest {
        name: name.into(),
        namespace: format!("{name}-system"),
        service_account: format!("{name}-controller-manager"),
        labels: BTreeMap::from([("app.kubernetes.io/name".to_string(), name.to_string())]),
    }
}

/// A client for a manager that is only built, never started: its address is never
/// dialled.
pub fn offline_client() -> Result<kube::Client, kube::Error> {
    let uri = http::Uri::from_static("http://127.0.0.1:9");
    kube::Client::try_from(kube::Config::new(uri))
}

/// `opts` as the operator runs in its Deployment: leader election on (its Lease in
/// `<name>-system`), the metrics listener on a free loopback port (bound, never
/// served), no probes.
pub fn deployed_options(name: &str, opts: Options) -> Options {
    Options {
        leader_election: true,
        leader_election_namespace: Some(format!("{name}-system")),
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "0".into(),
        ..opts
    }
}

/// `objects` as one YAML stream (documents separated by `---`), for `kubectl apply -f -`.
pub fn yaml_stream<T: serde::Serialize>(
    objects: &[T],
) -> Result<String, serde_saphyr::SerializeError> {
    let docs = objects
        .iter()
        .map(serde_saphyr::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(docs.join("---\n"))
}

/// `crds` as one YAML stream: what `--print-crd` prints.
pub fn crds_yaml(
    crds: &[CustomResourceDefinition],
) -> Result<String, serde_saphyr::SerializeError> {
    yaml_stream(crds)
}

/// The YAML stream of `mgr`'s RBAC objects for operator `name`: what `--print-rbac`
/// prints.
pub fn rbac_yaml(mgr: &Manager, name: &str) -> Result<String, serde_saphyr::SerializeError> {
    let objects = manifest(name).objects(&mgr.rbac_rules());
    let header = format!(
        "# What the {name} operator may do, generated from its code by `{name} --print-rbac`\n\
         # (the manager's watches, recorder, leader election and secure metrics, and the\n\
         # reconciler's declared permissions).\n"
    );
    Ok(header + &yaml_stream(&objects)?)
}

/// Prints `text`, or the error and a failure status.
fn emit(text: Result<String, BoxError>, what: &str) -> ExitCode {
    match text {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot print the {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints [`crds_yaml`] of `crds` (`--print-crd`).
pub fn crds(crds: &[CustomResourceDefinition]) -> ExitCode {
    emit(crds_yaml(crds).map_err(Into::into), "CRDs")
}

/// The manager `operator` builds as deployed ([`deployed_options`]) on a client that
/// is never dialled, with the RBAC rules of the cert rotator it runs in the cluster.
pub fn deployed_manager<O: Operator>(operator: &O) -> Result<Manager, BoxError> {
    let base = operator.flags().1.map(|a| a.options()).unwrap_or_default();
    let opts = deployed_options(O::NAME, operator.options(base));
    let mgr = match operator.manager(offline_client()?, opts) {
        Some(built) => built?,
        None => return Err(format!("{} runs no ctrl Manager: nothing to ask", O::NAME).into()),
    };
    #[cfg(feature = "webhook")]
    {
        let args = operator.flags().1.cloned().unwrap_or_default();
        crate::manifests::certs::add_rotator_rules(O::NAME, &mgr, &args);
    }
    Ok(mgr)
}

/// The [`Manifests`](crate::manifests::Manifests) of `operator`'s deployed manager.
fn manifests<O: Operator>(operator: &O) -> Result<crate::manifests::Manifests, BoxError> {
    let mgr = deployed_manager(operator)?;
    let args = operator.flags().1.cloned().unwrap_or_default();
    let crds = operator_crds::<O>();
    Ok(crate::manifests::Manifests::new(O::NAME, &mgr, &args, crds).with_env(operator.env()))
}

/// `--write-manifests <dir>`: writes the `config/` layout of `operator`'s manifests
/// under `dir` and prints the paths written.
pub fn write_manifests<O: Operator>(operator: &O, dir: &std::path::Path) -> ExitCode {
    let written = manifests(operator).and_then(|m| {
        let mut out = String::new();
        for (path, text) in m.files()? {
            let p = dir.join(&path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, text)?;
            out += &format!("{path}\n");
        }
        Ok(out)
    });
    emit(written, "manifests")
}

/// `--print-rbac` ([`rbac_yaml`]) or, with `all`, `--print-manifests`
/// ([`crate::manifests::Manifests`]) of `operator`'s deployed manager.
pub fn deployed<O: Operator>(operator: &O, all: bool) -> ExitCode {
    let text = match all {
        true => manifests(operator).and_then(|m| m.yaml()),
        false => deployed_manager(operator).and_then(|mgr| Ok(rbac_yaml(&mgr, O::NAME)?)),
    };
    emit(text, if all { "manifests" } else { "RBAC rules" })
}
