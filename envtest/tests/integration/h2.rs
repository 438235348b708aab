//! HTTP/2 on the TLS port, as kube-apiserver serves it (`k8s.io/apiserver/pkg/server/
//! secure_serving.go`): ALPN `h2` and `http/1.1`, curl negotiates h2, the server advertises 250
//! concurrent streams, the request limits of HTTP/1.1 hold per stream (a body over 3 MiB is
//! a 413 and the connection goes on serving), and a rapid-reset flood ends its connection.

use crate::common;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;

#[tokio::test]
async fn curl_and_an_http1_client_each_get_their_protocol() {
    let env = common::env().await;
    let out = tokio::process::Command::new("curl")
        .args(["--http2", "-sk", "-o", "/dev/null", "-w", "%{http_version}"])
        .arg(format!("{}/version", env.https_url()))
        .output()
        .await;
    match out {
        Ok(out) => assert_eq!(String::from_utf8_lossy(&out.stdout), "2"),
        Err(e) => eprintln!("curl could not run ({e}); its check is skipped"),
    }
    let (_, alpn) = common::tls::connect(&env, &[b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    let (_, alpn) = common::tls::connect(&env, &[b"h2", b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
}

#[tokio::test]
async fn the_server_advertises_upstreams_stream_limit() {
    let env = common::env().await;
    let (io, _) = common::tls::connect(&env, &[b"h2"]).await;
    let (send, conn) = h2::client::handshake(io).await.expect("h2 handshake");
    tokio::spawn(conn);
    let mut send = send.ready().await.expect("ready");
    // The server's SETTINGS arrive right after the handshake; wait for them (bounded).
    for _ in 0..200 {
        if send.current_max_send_streams() != usize::MAX {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        send = send.ready().await.expect("ready");
    }
    assert_eq!(send.current_max_send_streams(), 250);
}

fn post(env: &ctrl_envtest::Environment, body: Full<Bytes>) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method("POST")
        .uri(format!(
            "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
            env.addr().port()
        ))
        .header("authorization", format!("Bearer {}", env.admin_token()))
        .header("content-type", "application/json")
        .body(body)
        .expect("a request")
}

#[tokio::test]
async fn the_body_limit_holds_per_stream_and_the_connection_goes_on() {
    let env = common::env().await;
    let mut c = common::tls::h2(&env).await;
    let big = format!(
        "{{\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{}\"}}}}",
        "a".repeat(4 << 20)
    );
    // A declared length over the limit.
    c.ready().await.expect("open");
    let resp = c
        .send_request(post(&env, Full::new(Bytes::from(big.clone()))))
        .await
        .expect("a response");
    assert_eq!(resp.status().as_u16(), 413);
    // The same body streamed with no declared length.
    let (io, _) = common::tls::connect(&env, &[b"h2"]).await;
    let (mut raw, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(io),
    )
    .await
    .expect("h2");
    tokio::spawn(conn);
    let chunks: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = big
        .into_bytes()
        .chunks(64 * 1024)
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let streamed = StreamBody::new(futures::stream::iter(chunks));
    let req = http::Request::builder()
        .method("POST")
        .uri(format!(
            "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
            env.addr().port()
        ))
        .header("authorization", format!("Bearer {}", env.admin_token()))
        .header("content-type", "application/json")
        .body(streamed)
        .expect("a request");
    raw.ready().await.expect("open");
    let resp = raw.send_request(req).await.expect("a response");
    assert_eq!(resp.status().as_u16(), 413);
    // Both connections still serve, and nothing was stored.
    let get = |c: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>| {
        let req = http::Request::builder()
            .uri(format!(
                "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps/big",
                env.addr().port()
            ))
            .header("authorization", format!("Bearer {}", env.admin_token()))
            .body(Full::new(Bytes::new()))
            .expect("a request");
        c.send_request(req)
    };
    c.ready().await.expect("still open");
    let resp = get(&mut c).await.expect("a response");
    assert_eq!(resp.status().as_u16(), 404);
    let _ = resp.into_body().collect().await;
}

#[tokio::test]
async fn rapid_reset_closes_the_connection_and_the_server_serves_on() {
    let env = common::env().await;
    let (io, _) = common::tls::connect(&env, &[b"h2"]).await;
    let (mut send, conn) = h2::client::handshake(io).await.expect("h2 handshake");
    let conn = tokio::spawn(conn);
    // CVE-2023-44487: open a stream and reset it at once, over and over. More than
    // ctrl_net::HTTP2_MAX_PENDING_RESETS (20) not yet served ends the connection (GOAWAY).
    let mut sent = 0;
    for _ in 0..10_000 {
        let Ok(ready) = send.ready().await else {
            break;
        };
        send = ready;
        let req = http::Request::builder()
            .method("POST")
            .uri(format!(
                "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
                env.addr().port()
            ))
            .body(())
            .expect("a request");
        let Ok((_, mut stream)) = send.send_request(req, false) else {
            break;
        };
        stream.send_reset(h2::Reason::CANCEL);
        sent += 1;
    }
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), conn)
        .await
        .expect("the server ends the connection");
    // The client queues its frames; it sees the GOAWAY, or the closed socket when it was still
    // writing. Without the bound the connection would stay open and the timeout above fail.
    let err = ended
        .expect("the connection task")
        .expect_err("the server closed it");
    assert!(
        err.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) || err.is_io(),
        "{err} after {sent} resets"
    );
    // Other clients are served as before.
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(env.client(), "default");
    cms.list(&Default::default()).await.expect("a list");
}
