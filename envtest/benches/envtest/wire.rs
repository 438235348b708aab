//! Creates/s on the TLS port by wire: HTTP/1.1 (one connection per request in flight, as a
//! connection pool does) vs HTTP/2 (one connection, every request a stream, as client-go holds
//! it), and JSON vs protobuf bodies (client-go's default for built-ins) — the same ConfigMap, the
//! same number in flight, in one run, with the CPU each create costs (client and server, the
//! load-independent measure).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ctrl_envtest::Environment;
use futures::{StreamExt, stream};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

type TlsIo = TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// HTTP/1.1 or HTTP/2.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    H1,
    H2,
}

/// JSON or protobuf bodies.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Json,
    Protobuf,
}

const PB: &str = "application/vnd.kubernetes.protobuf";

async fn tls(env: &Environment, proto: Proto) -> TlsIo {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(env.ca_pem().as_bytes()).expect("the CA");
    roots.add(ca).expect("a root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = match proto {
        Proto::H1 => vec![b"http/1.1".to_vec()],
        Proto::H2 => vec![b"h2".to_vec()],
    };
    let tcp = tokio::net::TcpStream::connect(env.addr())
        .await
        .expect("tcp");
    // As Go's net package does: an h2 request is a HEADERS and a DATA write, which Nagle
    // would hold until the first is acknowledged (a delayed ACK, ~40 ms).
    tcp.set_nodelay(true).expect("nodelay");
    let name = ServerName::try_from("127.0.0.1").expect("a name");
    let s = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    TokioIo::new(s)
}

/// The body and content type of ConfigMap `name`.
fn body(kind: Body, name: &str) -> (Bytes, &'static str) {
    let payload = "x".repeat(64);
    match kind {
        Body::Json => {
            let v = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": {"payload": payload}});
            (Bytes::from(v.to_string()), "application/json")
        }
        Body::Protobuf => {
            use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
            let cm = k8s_pb::api::core::v1::ConfigMap {
                metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some(name.into()),
                    ..Default::default()
                }),
                data: [("payload".to_string(), payload)].into(),
                ..Default::default()
            };
            let u = Unknown {
                type_meta: Some(TypeMeta {
                    api_version: Some("v1".into()),
                    kind: Some("ConfigMap".into()),
                }),
                raw: Some(cm.encode_to_vec()),
                content_encoding: Some(String::new()),
                content_type: Some(String::new()),
            };
            let mut out = b"k8s\0".to_vec();
            out.extend(u.encode_to_vec());
            (Bytes::from(out), PB)
        }
    }
}

fn request(env: &Environment, kind: Body, name: &str) -> http::Request<Full<Bytes>> {
    let (b, ct) = body(kind, name);
    let accept = match kind {
        Body::Json => "application/json".to_string(),
        Body::Protobuf => format!("{PB}, application/json"),
    };
    http::Request::builder()
        .method("POST")
        .uri(format!(
            "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
            env.addr().port()
        ))
        .header("authorization", format!("Bearer {}", env.admin_token()))
        .header("content-type", ct)
        .header("accept", accept)
        .body(Full::new(b))
        .expect("a request")
}

async fn check(resp: hyper::Response<hyper::body::Incoming>) {
    assert_eq!(resp.status().as_u16(), 201, "create");
    let _ = resp.into_body().collect().await;
}

/// Wall and CPU time of `n` creates with `in_flight` outstanding, over `proto` with `kind` bodies.
pub async fn creates(
    env: &Environment,
    proto: Proto,
    kind: Body,
    prefix: &str,
    n: usize,
    in_flight: usize,
) -> (Duration, Duration) {
    let cpu = super::cpu_time();
    let t = Instant::now();
    match proto {
        Proto::H2 => {
            let io = tls(env, proto).await;
            let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .expect("h2");
            tokio::spawn(conn);
            stream::iter(0..n)
                .map(|i| {
                    let mut send = send.clone();
                    let req = request(env, kind, &format!("{prefix}-{i}"));
                    async move { check(send.send_request(req).await.expect("response")).await }
                })
                .buffer_unordered(in_flight)
                .collect::<Vec<()>>()
                .await;
        }
        Proto::H1 => {
            let workers = (0..in_flight).map(|w| async move {
                let io = tls(env, proto).await;
                let (mut send, conn) = hyper::client::conn::http1::handshake(io)
                    .await
                    .expect("http/1.1");
                tokio::spawn(conn);
                for i in (w..n).step_by(in_flight) {
                    send.ready().await.expect("ready");
                    let req = request(env, kind, &format!("{prefix}-{i}"));
                    check(send.send_request(req).await.expect("response")).await;
                }
            });
            futures::future::join_all(workers).await;
        }
    }
    (t.elapsed(), super::cpu_time().saturating_sub(cpu))
}
