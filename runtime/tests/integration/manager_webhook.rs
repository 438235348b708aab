//! The manager's webhook server (Go's `Options.WebhookServer` and
//! `mgr.GetWebhookServer()`): the server given in the options is the one the
//! manager hands out and runs; without one the manager makes a default server that
//! stays quiet until a handler is registered.

use crate::manager_common;

use std::time::Duration;

use ctrl_envtest::wait::Wait;
use ctrl_runtime::manager::Options;
use ctrl_runtime::webhook::admission::{self, Response};
use ctrl_runtime::webhook::{self, DEFAULT_PORT, Server, certs};
use manager_common::{elected, env, finished, get, manager, quiet, run};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn the_options_server_is_the_one_the_manager_hands_out_and_runs() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = env().await;
    let dir = certs::temp_cert_dir().unwrap();
    certs::generate_self_signed(&dir, &[]).unwrap();
    let server = Server::new(webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Default::default()
    });
    let mgr = manager(
        &env,
        Options {
            health_probe_bind_address: "127.0.0.1:0".into(),
            webhook_server: Some(server.clone()),
            ..quiet()
        },
    );
    // Registered through one handle, seen through the others: one server.
    let handed_out = mgr.webhook_server();
    handed_out
        .register(
            "/validate-anything",
            admission::Webhook::new(admission::handler_fn(|_| Response::allowed(""))),
        )
        .unwrap();
    assert_eq!(server.paths(), vec!["/validate-anything".to_string()]);
    assert_eq!(mgr.webhook_server().paths(), server.paths());
    assert!(server.local_addr().is_none(), "nothing serves before start");
    mgr.add_readyz_check("webhook", server.started_checker())
        .unwrap();
    let probes = mgr.health_probe_addr().unwrap();

    let ctx = CancellationToken::new();
    let running = run(&mgr, &ctx);
    elected(&mgr).await;
    // The manager started the server (Webhooks group): it accepts TLS connections.
    let readyz = || get(probes, "/readyz/webhook");
    Wait::new()
        .timeout(Duration::from_secs(10))
        .until("the webhook server to be reachable", readyz, |r| {
            r.status == 200
        })
        .await;
    assert!(server.local_addr().is_some());
    ctx.cancel();
    finished(running).await.unwrap();
}

#[tokio::test]
async fn the_default_server_stays_quiet_without_handlers() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let server = mgr.webhook_server();
    assert_eq!(server.options().port, DEFAULT_PORT);
    assert_eq!(server.options().cert_dir, webhook::default_cert_dir());
    assert!(server.paths().is_empty());

    let ctx = CancellationToken::new();
    let running = run(&mgr, &ctx);
    elected(&mgr).await;
    assert!(
        server.local_addr().is_none(),
        "no handler registered: the server must not listen"
    );
    ctx.cancel();
    finished(running).await.unwrap();
}
