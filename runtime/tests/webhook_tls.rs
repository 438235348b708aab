//! The webhook server's TLS: plain HTTP to the TLS port, certificates rotated on
//! disk served without restart, client-CA (mTLS), h2 by ALPN only when enabled (and only with
//! the `http2` feature: without it enabling it fails the start), the
//! readiness check,
//! graceful shutdown, and serving only when something is registered.

mod webhook_support;

use std::time::Duration;

use ctrl_runtime::healthz::Checker;
use ctrl_runtime::manager::{Group, Runnable};
use ctrl_runtime::webhook::admission::{self, Response};
use ctrl_runtime::webhook::{Options, Server, certs};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use webhook_support::{client_config, configmap, post, review, start, start_with, tls_connect};

fn allow_all(s: &Server) {
    s.register(
        "/allow",
        admission::Webhook::new(admission::handler_fn(|_| Response::allowed(""))),
    )
    .unwrap();
}

async fn leaf(r: &webhook_support::Running) -> Vec<u8> {
    let tls = tls_connect(r.addr, client_config(&r.ca_pem, &[]))
        .await
        .expect("connect");
    let (_, conn) = tls.get_ref();
    conn.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_a_400_and_the_server_keeps_serving() {
    let r = start(allow_all).await;
    let mut tcp = tokio::net::TcpStream::connect(r.addr).await.unwrap();
    tcp.write_all(b"POST /allow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    tcp.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.0 400 Bad Request"), "{text}");
    assert!(text.contains("Client sent an HTTP request to an HTTPS server."));

    // Garbage that is not HTTP either: the handshake fails, nothing else happens.
    let mut tcp = tokio::net::TcpStream::connect(r.addr).await.unwrap();
    tcp.write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        .await
        .unwrap();
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut sink)).await;

    let (code, _) = post(
        &r,
        "/allow",
        "application/json",
        review("CREATE", configmap(serde_json::json!({})), None)
            .to_string()
            .as_bytes(),
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn certificates_replaced_on_disk_are_served_without_restart() {
    let r = start_with(
        |o| Options {
            cert_watch_interval: Duration::from_secs(3600),
            ..o
        },
        allow_all,
    )
    .await;
    let first = leaf(&r).await;
    let rotated = certs::generate_self_signed(&r.dir, &[]).unwrap();
    let mut now = first.clone();
    for _ in 0..100 {
        // The new certificate is signed by a new CA: trust it for the new connection.
        if let Ok(tls) = tls_connect(r.addr, client_config(&rotated.ca_pem, &[])).await {
            now = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(first, now, "a new connection shows the new certificate");

    // A broken pair on disk is counted as an error and the last good one stays.
    std::fs::write(r.dir.join("tls.crt"), "not a certificate").unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let still = tls_connect(r.addr, client_config(&rotated.ca_pem, &[]))
        .await
        .unwrap();
    assert_eq!(
        still.get_ref().1.peer_certificates().unwrap()[0].to_vec(),
        now
    );
}

#[tokio::test]
async fn a_client_ca_requires_client_certificates() {
    let r = start_with(
        |o| Options {
            client_ca_name: Some("ca.crt".into()),
            ..o
        },
        allow_all,
    )
    .await;
    // No client certificate: the handshake (or the first read) fails.
    let res = tls_connect(r.addr, client_config(&r.ca_pem, &[])).await;
    let failed = match res {
        Err(_) => true,
        Ok(mut tls) => {
            let _ = tls.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
            let mut buf = [0u8; 16];
            !matches!(tls.read(&mut buf).await, Ok(n) if n > 0)
        }
    };
    assert!(failed, "a client without a certificate must be refused");
}

#[tokio::test]
async fn h2_is_negotiated_by_alpn_only_when_enabled() {
    // Off by default (kubebuilder's --enable-http2=false): an h2-only client is refused.
    let off = start(allow_all).await;
    let refused = tls_connect(off.addr, client_config(&off.ca_pem, &[b"h2"])).await;
    assert!(refused.is_err(), "h2 must not be negotiated by default");
    let both = tls_connect(off.addr, client_config(&off.ca_pem, &[b"h2", b"http/1.1"]))
        .await
        .unwrap();
    assert_eq!(both.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    #[cfg(feature = "http2")]
    served_over_h2_when_enabled().await;
    #[cfg(not(feature = "http2"))]
    without_the_http2_feature_it_cannot_be_enabled().await;
}

/// With the `http2` feature: `enable_http2` offers h2, and an h2 request is answered.
#[cfg(feature = "http2")]
async fn served_over_h2_when_enabled() {
    use http_body_util::{BodyExt, Full};
    let enable = |o: Options| Options {
        tls: ctrl_runtime::tls::TlsOptions {
            enable_http2: true,
            ..Default::default()
        },
        ..o
    };
    let r = start_with(enable, allow_all).await;
    let tls = tls_connect(r.addr, client_config(&r.ca_pem, &[b"h2"]))
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let body = review("CREATE", configmap(serde_json::json!({})), None).to_string();
    let req = http::Request::post("https://localhost/allow")
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["response"]["allowed"], true);
}

/// Without the `http2` feature (`cargo test -p ctrl-runtime --test webhook_tls`, which
/// `.ci/run` runs; the workspace's test build has it): `enable_http2` fails the start naming the
/// feature, and a hook that offers h2 still gets HTTP/1.1 negotiated and served.
#[cfg(not(feature = "http2"))]
async fn without_the_http2_feature_it_cannot_be_enabled() {
    let dir = certs::temp_cert_dir().expect("temp dir");
    certs::generate_self_signed(&dir, &[]).expect("certs");
    let mut o = webhook_support::options(dir);
    o.tls.enable_http2 = true;
    let server = Server::new(o);
    allow_all(&server);
    let err = server
        .serve(CancellationToken::new())
        .await
        .expect_err("enable_http2 without the feature must fail the start");
    assert!(
        err.to_string()
            .contains(ctrl_runtime::tls::HTTP2_NEEDS_FEATURE),
        "{err}"
    );

    let offer_h2 = |o: Options| Options {
        tls: ctrl_runtime::tls::TlsOptions::default()
            .with_hook(|c| c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()]),
        ..o
    };
    let r = start_with(offer_h2, allow_all).await;
    let refused = tls_connect(r.addr, client_config(&r.ca_pem, &[b"h2"])).await;
    assert!(
        refused.is_err(),
        "h2 must not be negotiated without the feature"
    );
    let both = tls_connect(r.addr, client_config(&r.ca_pem, &[b"h2", b"http/1.1"]))
        .await
        .unwrap();
    assert_eq!(both.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let body = review("CREATE", configmap(serde_json::json!({})), None).to_string();
    let (status, answer) = post(&r, "/allow", "application/json", body.as_bytes()).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test]
async fn started_checker_passes_once_serving_and_shutdown_is_graceful() {
    let r = start(allow_all).await;
    let req = http::Request::new(bytes::Bytes::new());
    let checker = r.server.started_checker();
    let mut ok = false;
    for _ in 0..50 {
        if checker.check(&req).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok);
    assert_eq!(r.server.group(), Group::Webhooks);
    assert!(!r.server.need_leader_election());
    r.ctx.cancel();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !r.task.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("server stops");
    assert!(checker.check(&req).await.is_err());
}

#[tokio::test]
async fn with_nothing_registered_the_server_does_not_listen() {
    let s = Server::new(Options {
        port: 0,
        cert_dir: "/nonexistent".into(),
        ..Options::default()
    });
    let ctx = CancellationToken::new();
    let run = tokio::spawn({
        let s = s.clone();
        let ctx = ctx.clone();
        async move { s.start(ctx).await.map_err(|e| e.to_string()) }
    });
    assert!(s.wait_ready(CancellationToken::new()).await);
    assert!(s.local_addr().is_none());
    ctx.cancel();
    assert!(run.await.unwrap().is_ok());

    // With a handler but no certificates, start fails with a clear error.
    let s = Server::new(Options {
        port: 0,
        cert_dir: "/nonexistent".into(),
        ..Options::default()
    });
    allow_all(&s);
    let err = s
        .start(CancellationToken::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/tls.crt"), "{err}");
}
