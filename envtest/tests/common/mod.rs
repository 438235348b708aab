//! Shared helpers of the envtest integration tests.
#![allow(dead_code)]

pub mod tls;

use std::collections::BTreeMap;

use ctrl_envtest::Environment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::Status;

/// A fresh environment.
pub async fn env() -> Environment {
    Environment::builder().start().await.expect("start envtest")
}

/// A ConfigMap in `default` with data.
pub fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_string());
    c.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    );
    c
}

/// The Status of an API error.
pub fn status_of(e: kube::Error) -> Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The message of a 422 `Invalid` API error (panics on any other error).
pub fn invalid_message(e: kube::Error) -> String {
    let st = status_of(e);
    assert_eq!(
        (st.code, st.reason.as_str()),
        (422, "Invalid"),
        "{}",
        st.message
    );
    st.message
}

/// A raw HTTP request; returns the status code and the JSON body (Null if not JSON).
pub async fn raw(
    env: &Environment,
    method: &str,
    path: &str,
    body: Option<&str>,
    content_type: &str,
) -> (u16, serde_json::Value) {
    let (code, _, text) = raw_full(env, method, path, body, content_type, &[]).await;
    (
        code,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
    )
}

/// A raw HTTP/1.1 request over a fresh TCP connection as the admin (unless `headers` carry
/// an `Authorization`); returns code, headers and body text.
pub async fn raw_full(
    env: &Environment,
    method: &str,
    path: &str,
    body: Option<&str>,
    content_type: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    let admin = format!("Bearer {}", env.admin_token());
    let mut all = headers.to_vec();
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    {
        all.push(("Authorization", &admin));
    }
    raw_anonymous(env, method, path, body, content_type, &all).await
}

/// The `Warning` header values of a response ([`raw_full`]'s headers).
pub fn warnings(headers: &[(String, String)]) -> Vec<&str> {
    headers
        .iter()
        .filter(|(k, _)| k == "warning")
        .map(|(_, v)| v.as_str())
        .collect()
}

/// [`raw_full`] without credentials (only the `headers` given).
pub async fn raw_anonymous(
    env: &Environment,
    method: &str,
    path: &str,
    body: Option<&str>,
    content_type: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(env.addr()).await.unwrap();
    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    parse_response(&out)
}

/// Splits a raw HTTP/1.1 response (de-chunking the body).
pub fn parse_response(out: &[u8]) -> (u16, Vec<(String, String)>, String) {
    let text = String::from_utf8_lossy(out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (code, headers, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A `widgets.example.com` CRD (namespaced, v1, short name `wg`, category `all`) with or
/// without the status subresource.
pub fn widget_crd(
    status: bool,
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    let subresources = if status {
        serde_json::json!({"status": {}})
    } else {
        serde_json::json!({})
    };
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true, "subresources": subresources,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 0, "maximum": 100},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                    }},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                }}},
            }],
        },
    }))
    .expect("valid CRD")
}

/// The ApiResource of `widgets.example.com/v1`.
pub fn widget_ar() -> kube::core::ApiResource {
    kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

/// A Widget object.
pub fn widget(name: &str, spec: serde_json::Value) -> kube::core::DynamicObject {
    kube::core::DynamicObject::new(name, &widget_ar()).data(serde_json::json!({ "spec": spec }))
}

/// An environment with the Widget CRD (status subresource) and Widget `w` (`size: 1`) in
/// `default`, and the Widget API of `default`.
pub async fn env_with_widget() -> (Environment, kube::Api<kube::core::DynamicObject>) {
    let env = Environment::builder()
        .crd(widget_crd(true))
        .start()
        .await
        .expect("start envtest");
    let api = kube::Api::namespaced_with(env.client(), "default", &widget_ar());
    api.create(
        &Default::default(),
        &widget("w", serde_json::json!({"size": 1})),
    )
    .await
    .expect("create w");
    (env, api)
}

/// A raw watch (or any streaming GET): the response head, then one JSON value per line.
pub struct RawStream {
    pub status: u16,
    pub headers: http::HeaderMap,
    body: hyper::body::Incoming,
    buf: Vec<u8>,
    /// Every chunk received so far ended with a newline.
    pub chunks_line_terminated: bool,
}

impl RawStream {
    /// Opens `GET path` with optional extra headers.
    pub async fn open(env: &Environment, path: &str, headers: &[(&str, &str)]) -> RawStream {
        let stream = tokio::net::TcpStream::connect(env.addr()).await.unwrap();
        let (mut send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let mut req = http::Request::get(path).header("host", "localhost");
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            req = req.header("authorization", format!("Bearer {}", env.admin_token()));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = send
            .send_request(
                req.body(http_body_util::Empty::<bytes::Bytes>::new())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        RawStream {
            status,
            headers,
            body: resp.into_body(),
            buf: Vec::new(),
            chunks_line_terminated: true,
        }
    }

    /// The next line as JSON, or None at the end of the stream.
    pub async fn next(&mut self) -> Option<serde_json::Value> {
        use http_body_util::BodyExt;
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).expect("each line is one JSON object"));
            }
            match self.body.frame().await {
                Some(Ok(f)) => {
                    if let Ok(d) = f.into_data() {
                        if !d.ends_with(b"\n") {
                            self.chunks_line_terminated = false;
                        }
                        self.buf.extend_from_slice(&d);
                    }
                }
                _ => return None,
            }
        }
    }

    /// The next line within `secs` seconds (panics on timeout).
    pub async fn next_within(&mut self, secs: u64) -> Option<serde_json::Value> {
        tokio::time::timeout(std::time::Duration::from_secs(secs), self.next())
            .await
            .expect("watch line in time")
    }
}

/// Turns a `raw_full` answer into (code, JSON body).
pub trait IntoJson {
    /// (code, JSON body or Null).
    fn into_json(self) -> (u16, serde_json::Value);
}

impl IntoJson for (u16, Vec<(String, String)>, String) {
    fn into_json(self) -> (u16, serde_json::Value) {
        (
            self.0,
            serde_json::from_str(&self.2).unwrap_or(serde_json::Value::Null),
        )
    }
}

/// The resourceVersion of a fresh list of `api`.
pub async fn list_rv<K>(api: &kube::Api<K>) -> String
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

/// What a refused request must leave alone: every object of some collections (resourceVersion
/// included) and the global resourceVersion (one counter for all resources, so no write to any
/// resource happened if it did not move).
pub struct Untouched {
    lists: Vec<(String, serde_json::Value)>,
    rv: String,
}

impl Untouched {
    /// Lists each collection path now (e.g. `/api/v1/configmaps`).
    pub async fn take(env: &Environment, paths: &[&str]) -> Untouched {
        let mut lists = Vec::new();
        for p in paths {
            let (code, list) = raw(env, "GET", p, None, "application/json").await;
            assert_eq!(code, 200, "list {p}: {list}");
            lists.push((p.to_string(), list));
        }
        let rv = lists
            .first()
            .and_then(|(_, l)| l["metadata"]["resourceVersion"].as_str())
            .unwrap_or("")
            .to_string();
        Untouched { lists, rv }
    }

    /// Asserts that every collection lists exactly as before.
    pub async fn check(&self, env: &Environment, what: &str) {
        for (p, before) in &self.lists {
            let (code, now) = raw(env, "GET", p, None, "application/json").await;
            assert_eq!(code, 200, "{what}: list {p}");
            assert_eq!(&now, before, "{what}: {p} changed");
        }
    }

    /// Asserts that no watch event happened since: a watch of every ConfigMap from the first
    /// resourceVersion taken sees the sentinel ConfigMap created now as its first event.
    pub async fn check_no_events(&self, env: &Environment, sentinel: &str) {
        let path = format!(
            "/api/v1/configmaps?watch=true&resourceVersion={}&timeoutSeconds=10",
            self.rv
        );
        let mut w = RawStream::open(env, &path, &[]).await;
        assert_eq!(w.status, 200);
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(env.client(), "default");
        api.create(&Default::default(), &cm(sentinel, &[]))
            .await
            .expect("the server still serves writes");
        let ev = w.next_within(10).await.expect("an event");
        assert_eq!(ev["type"], "ADDED", "first event since: {ev}");
        assert_eq!(
            ev["object"]["metadata"]["name"], sentinel,
            "first event: {ev}"
        );
    }
}
