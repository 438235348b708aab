//! An example's life: `--print-crd` output, and the stop token that Ctrl-C,
//! SIGTERM or the end of `--run-for` cancel.

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use ctrl::CancellationToken;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// `crds` as one YAML stream (documents separated by `---`), for `kubectl apply -f
/// -`; what `--print-crd` prints and `examples/manifests/` holds.
pub fn crds_yaml(
    crds: &[CustomResourceDefinition],
) -> Result<String, serde_saphyr::SerializeError> {
    let docs = crds
        .iter()
        .map(serde_saphyr::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(docs.join("---\n"))
}

/// Prints [`crds_yaml`] of `crds` (`--print-crd`).
pub fn print_crds(crds: &[CustomResourceDefinition]) -> ExitCode {
    match crds_yaml(crds) {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot print the CRDs: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Where `mgr` serves metrics, `http://` or (secure metrics) `https://`, with a
/// note on how to scrape it.
pub fn metrics_url(mgr: &ctrl::manager::Manager) -> Option<String> {
    let addr = mgr.metrics_addr()?;
    let m = &mgr.options().metrics;
    Some(match (m.secure_serving, m.filter_provider.is_some()) {
        (false, _) => format!("http://{addr}/metrics"),
        (true, false) => format!("https://{addr}/metrics (self-signed: curl -k)"),
        (true, true) => format!(
            "https://{addr}/metrics (curl -k with a bearer token allowed to get /metrics; --metrics-secure=false serves plain HTTP)"
        ),
    })
}

/// A token cancelled on Ctrl-C / SIGTERM or, with `run_for`, after that long —
/// whichever comes first. The whole example stops gracefully on it.
pub fn stop_token(run_for: Option<Duration>) -> CancellationToken {
    let stop = CancellationToken::new();
    let signal = ctrl::manager::shutdown_signal();
    let token = stop.clone();
    tokio::spawn(async move {
        let deadline = async {
            match run_for {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = signal.cancelled() => tracing::info!("signal received, shutting down"),
            _ = deadline => tracing::info!("--run-for elapsed, shutting down"),
        }
        token.cancel();
    });
    stop
}

/// The process's exit: success, or the error logged and a failure status.
pub fn exit(result: Result<(), Box<dyn std::error::Error + Send + Sync>>) -> ExitCode {
    match result {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!("{error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `mgr` until `stop` and, once it leads (at once without leader election), the
/// demo's `script`, unless stopped first. Returns when the manager has stopped.
pub async fn manager_with_demo<F>(
    mgr: &ctrl::manager::Manager,
    stop: &CancellationToken,
    script: Option<F>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    F: Future<Output = Result<(), kube::Error>>,
{
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    if let Some(script) = script {
        tokio::select! {
            r = async {
                mgr.elected().await;
                script.await
            } => r?,
            _ = stop.cancelled() => {}
        }
    }
    running.await??;
    Ok(())
}
