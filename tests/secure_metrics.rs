//! The secure metrics server and the TLS hardening of the manager's servers, over real
//! TLS connections to a manager on ctrl-envtest: HTTPS with the certificate from
//! `cert_dir` (verified against its CA) or a self-signed one; a plain-HTTP request and
//! garbage on the TLS port get an error and leave the server serving; HTTP/2 is not
//! negotiated unless enabled (then it is, and an h2 request is answered); a minimum of
//! TLS 1.3 refuses a TLS 1.2-only client; the webhook server is hardened the same way.
//! With kubebuilder's `--metrics-secure` options, scrapes are reviewed by the API server:
//! no or a bad token 401, a ServiceAccount without the `/metrics` permission 403, one
//! with it (and the admin) 200 with the usual series.

mod support;
mod tls_support;

use std::net::SocketAddr;
use std::path::Path;

use ctrl::manager::{Manager, Options};
use ctrl::metrics::server::Options as MetricsOptions;
use ctrl::tls::{TlsOptions, TlsVersion};
use ctrl::webhook;
use ctrl_envtest::Environment;
use tls_support::{
    Versions, ca_client, connect, get, grant_metrics_reader, insecure_client, sa_token,
    scrape_secure, send_raw,
};

async fn secure_manager(env: &Environment, metrics: MetricsOptions) -> support::Running {
    let mgr = Manager::new(
        env.client(),
        Options {
            metrics_bind_address: "127.0.0.1:0".into(),
            health_probe_bind_address: "0".into(),
            metrics,
            ..Default::default()
        },
    )
    .expect("manager");
    support::run(&mgr).await
}

fn from_dir(dir: &Path, tls: TlsOptions) -> MetricsOptions {
    MetricsOptions {
        secure_serving: true,
        cert_dir: dir.to_path_buf(),
        tls,
        ..Default::default()
    }
}

fn self_signed(tls: TlsOptions) -> MetricsOptions {
    from_dir(Path::new("/nonexistent/ctrl-metrics-certs"), tls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_cert_dir_and_garbage_does_not_kill_it() {
    let env = Environment::builder().start().await.expect("envtest");
    let dir = tempfile::tempdir().expect("temp dir");
    let certs = webhook::certs::generate_self_signed(dir.path(), &[]).expect("certs");
    let running = secure_manager(&env, from_dir(dir.path(), TlsOptions::default())).await;
    let addr = running.metrics;
    let client = ca_client(&certs.ca_pem, Versions::Any);

    // The certificate served is the one in the directory: a client trusting only its
    // CA gets through.
    let (status, body) = get(connect(addr, client.clone()).await.expect("tls"), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("certwatcher_read_certificate_total"),
        "{body}"
    );

    // Plain HTTP on the TLS port: Go's 400, then the connection closes.
    let reply = send_raw(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(
        reply.starts_with("HTTP/1.0 400 Bad Request")
            && reply.contains("Client sent an HTTP request to an HTTPS server."),
        "{reply}"
    );
    // Garbage, and a TLS record header followed by garbage: dropped.
    for junk in [
        &[0u8, 1, 2, 3, 255, 254][..],
        &[0x16, 3, 1, 0, 5, 9, 9, 9, 9, 9][..],
    ] {
        let reply = send_raw(addr, junk).await;
        assert!(!reply.contains("200"), "{reply}");
    }
    // ... and the server still serves.
    let (status, _) = get(connect(addr, client).await.expect("tls"), None).await;
    assert_eq!(status, 200);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_is_refused_by_default_and_offered_when_enabled() {
    let env = Environment::builder().start().await.expect("envtest");
    let off = secure_manager(&env, self_signed(TlsOptions::default())).await;

    // A client offering h2 and http/1.1 gets http/1.1, and an answer to it.
    let both = insecure_client(&[b"h2", b"http/1.1"]);
    let tls = connect(off.metrics, both.clone()).await.expect("tls");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(get(tls, None).await.0, 200);
    // A client offering only h2 gets no h2: rustls ends the handshake
    // (no_application_protocol).
    match connect(off.metrics, insecure_client(&[b"h2"])).await {
        Err(e) => assert!(e.to_string().contains("NoApplicationProtocol"), "{e}"),
        Ok(t) => assert_ne!(t.get_ref().1.alpn_protocol(), Some(&b"h2"[..])),
    }
    off.stop().await;

    let on = TlsOptions {
        enable_http2: true,
        ..Default::default()
    };
    let on = secure_manager(&env, self_signed(on)).await;
    let tls = connect(on.metrics, both).await.expect("tls");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (status, body) = tls_support::get_h2(tls).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("process_") || body.contains("tokio_"),
        "{body}"
    );
    on.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minimum_of_tls13_refuses_a_tls12_client() {
    let env = Environment::builder().start().await.expect("envtest");
    let dir = tempfile::tempdir().expect("temp dir");
    let certs = webhook::certs::generate_self_signed(dir.path(), &[]).expect("certs");
    let tls12_only = ca_client(&certs.ca_pem, Versions::Tls12Only);

    let default = secure_manager(&env, from_dir(dir.path(), TlsOptions::default())).await;
    let tls = connect(default.metrics, tls12_only.clone()).await;
    let tls = tls.expect("TLS 1.2 is accepted by default");
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    default.stop().await;

    let min13 = TlsOptions {
        min_version: TlsVersion::Tls13,
        ..Default::default()
    };
    let strict = secure_manager(&env, from_dir(dir.path(), min13)).await;
    assert!(connect(strict.metrics, tls12_only).await.is_err());
    let tls13 = ca_client(&certs.ca_pem, Versions::Tls13Only);
    assert_eq!(
        get(connect(strict.metrics, tls13).await.expect("tls"), None)
            .await
            .0,
        200
    );
    strict.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_server_offers_http1_only_unless_http2_is_enabled() {
    for enable_http2 in [false, true] {
        let dir = tempfile::tempdir().expect("temp dir");
        webhook::certs::generate_self_signed(dir.path(), &[]).expect("certs");
        let server = webhook::Server::new(webhook::Options {
            host: "127.0.0.1".into(),
            port: 0,
            cert_dir: dir.path().to_path_buf(),
            tls: TlsOptions {
                enable_http2,
                ..Default::default()
            },
            ..Default::default()
        });
        let ok = ctrl::http::handler_fn(|_| ctrl::http::text(http::StatusCode::OK, "ok"));
        server.register("/ok", ok).expect("register");
        let addr: SocketAddr = server.bind().expect("bind");
        let stop = tokio_util::sync::CancellationToken::new();
        let task = {
            let (server, stop) = (server.clone(), stop.clone());
            tokio::spawn(async move { server.serve(stop).await })
        };
        let tls = connect(addr, insecure_client(&[b"h2", b"http/1.1"]))
            .await
            .expect("tls");
        let want: &[u8] = if enable_http2 { b"h2" } else { b"http/1.1" };
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(want));
        drop(tls);
        stop.cancel();
        task.await.expect("join").expect("serve");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_are_reviewed_401_403_200() {
    let env = Environment::builder().start().await.expect("envtest");
    let admin = env.client();
    let opts = Options {
        metrics_bind_address: "127.0.0.1:0".into(),
        health_probe_bind_address: "0".into(),
        ..ctrl::manager::Args::default().options() // --metrics-secure (default true)
    };
    let mgr = Manager::new(env.client(), opts).expect("manager");
    ctrl::ControllerBuilder::new(&mgr)
        .for_::<k8s_openapi::api::core::v1::ConfigMap>()
        .named("secure-cm")
        .complete(ctrl::reconcile::func(|_ctx, _req| async move {
            Ok(ctrl::reconcile::Action::done())
        }))
        .expect("controller");
    let running = support::run(&mgr).await;
    let addr = running.metrics;

    assert_eq!(
        scrape_secure(addr, None).await,
        (401, "Unauthorized\n".into())
    );
    let bad = scrape_secure(addr, Some("not-a-token")).await;
    assert_eq!(bad, (401, "Unauthorized\n".into()));

    let stranger = sa_token(&admin, "default", "stranger").await;
    let (status, body) = scrape_secure(addr, Some(&stranger)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body,
        "Authorization denied for user system:serviceaccount:default:stranger\n"
    );

    let reader = sa_token(&admin, "default", "reader").await;
    grant_metrics_reader(&admin, "default", "reader").await;
    for token in [reader.as_str(), env.admin_token()] {
        let (status, body) = scrape_secure(addr, Some(token)).await;
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains("controller_runtime_reconcile_total{controller=\"secure-cm\""),
            "{body}"
        );
    }
    // Denials are not cached: the stranger, granted the permission, gets in at once.
    assert_eq!(scrape_secure(addr, Some(&stranger)).await.0, 403);
    grant_metrics_reader(&admin, "default", "stranger").await;
    assert_eq!(scrape_secure(addr, Some(&stranger)).await.0, 200);
    running.stop().await;
}
