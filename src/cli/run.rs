//! An operator's life on the cli: the stop token that Ctrl-C, SIGTERM or the end of
//! `--run-for` cancel, the manager run next to the local demo, and the exit status.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::Duration;

use crate::CancellationToken;
use crate::manager::Manager;

/// Where `mgr` serves metrics, `http://` or (secure metrics) `https://`, with a
/// note on how to scrape it.
pub fn metrics_url(mgr: &Manager) -> Option<String> {
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
/// whichever comes first. The whole operator stops gracefully on it.
pub fn stop_token(run_for: Option<Duration>) -> CancellationToken {
    let stop = CancellationToken::new();
    let signal = crate::manager::shutdown_signal();
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
///
/// A thin shell: the script is boxed and the rest compiled once, in ctrl, rather than
/// once per script type in every operator's binary.
pub async fn manager_with_demo<F>(
    mgr: &Manager,
    stop: &CancellationToken,
    script: Option<F>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    F: Future<Output = Result<(), kube::Error>>,
{
    let script = script.map(|s| Box::pin(s) as Script<'_>);
    run_with_demo(mgr, stop, script).await
}

/// A demo script, boxed.
pub(super) type Script<'a> = Pin<Box<dyn Future<Output = Result<(), kube::Error>> + 'a>>;

/// [`manager_with_demo`]'s body, for any script.
pub(super) async fn run_with_demo(
    mgr: &Manager,
    stop: &CancellationToken,
    script: Option<Script<'_>>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
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
