//! `--print-rbac`: the RBAC objects an example needs in a cluster, generated from its
//! code (`ctrl::rbac`): each example builds its manager as deployed — leader election
//! on, secure metrics as its flags say — against a client that is never dialled, sets
//! up its controllers, and prints `Manager::rbac_rules` as the ServiceAccount,
//! ClusterRole, Role and bindings of `<example>-system`. `examples/manifests/02-rbac.yaml`
//! is this output for storagebucket.

use std::collections::BTreeMap;
use std::process::ExitCode;

use ctrl::manager::{BoxError, Manager, Options};
use ctrl::rbac::Manifest;

/// Where an example is deployed: namespace `<name>-system`, ServiceAccount
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

/// `opts` as the example runs in its Deployment: leader election on (its Lease in
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

/// The YAML stream of `mgr`'s RBAC objects for example `name`.
pub fn yaml(mgr: &Manager, name: &str) -> Result<String, serde_saphyr::SerializeError> {
    let objects = manifest(name).objects(&mgr.rbac_rules());
    let docs = objects
        .iter()
        .map(serde_saphyr::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    let header = format!(
        "# What the {name} operator may do, generated from its code by `{name} --print-rbac`\n\
         # (the manager's watches, recorder, leader election and secure metrics, and the\n\
         # reconciler's declared permissions).\n"
    );
    Ok(header + &docs.join("---\n"))
}

/// Prints [`yaml`] (`--print-rbac`) of the manager `build` returns on a client that
/// is never dialled (`None`: the example runs no Manager, so there is nothing to ask).
pub fn print<F>(name: &str, build: F) -> ExitCode
where
    F: FnOnce(kube::Client) -> Option<Result<Manager, BoxError>>,
{
    let mgr = match offline_client() {
        Ok(client) => match build(client) {
            Some(built) => built.map_err(|e| e.to_string()),
            None => Err(format!("{name} runs no ctrl Manager: no rules to print")),
        },
        Err(e) => Err(e.to_string()),
    };
    match mgr.and_then(|m| yaml(&m, name).map_err(|e| e.to_string())) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot print the RBAC rules: {e}");
            ExitCode::FAILURE
        }
    }
}
