//! [`shutdown_signal`]: a token cancelled on SIGINT or SIGTERM, for
//! `mgr.start(shutdown_signal())` (controller-runtime's `SetupSignalHandler`).
//!
//! The first signal cancels the token, so the manager stops gracefully; a second
//! one exits the process at once with code 1, for a stuck shutdown.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

/// A token cancelled by the first SIGINT or SIGTERM; a second signal exits the
/// process with code 1. Every call returns the same token (the handler is installed
/// once, on a helper thread, so it works with or without a Tokio runtime).
pub fn shutdown_signal() -> CancellationToken {
    static TOKEN: OnceLock<CancellationToken> = OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let token = CancellationToken::new();
            install(token.clone());
            token
        })
        .clone()
}

/// Waits for signals on a helper thread with its own small runtime, so the handler
/// outlives whichever runtime called [`shutdown_signal`] first.
fn install(token: CancellationToken) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("ctrl-signals".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(watch(token, ready_tx)),
                Err(error) => {
                    tracing::error!(%error, "cannot build a runtime for signal handling")
                }
            }
        });
    match spawned {
        // Return once the handlers are in place (or failed to be), so a signal sent
        // right after this call is not lost to the default action.
        Ok(_) => {
            let _ = ready_rx.recv();
        }
        Err(error) => tracing::error!(%error, "cannot spawn the signal handling thread"),
    }
}

#[cfg(unix)]
async fn watch(token: CancellationToken, ready: std::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut int, mut term) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(i), Ok(t)) => (i, t),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, "cannot install SIGINT/SIGTERM handlers");
            return;
        }
    };
    let _ = ready.send(());
    let name = tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    };
    tracing::info!(
        signal = name,
        "Received signal, shutting down; a second signal exits at once"
    );
    token.cancel();
    let name = tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    };
    tracing::warn!(signal = name, "Received second signal, exiting");
    std::process::exit(1);
}

#[cfg(not(unix))]
async fn watch(token: CancellationToken, ready: std::sync::mpsc::Sender<()>) {
    let _ = ready.send(());
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    token.cancel();
    let _ = tokio::signal::ctrl_c().await;
    std::process::exit(1);
}
