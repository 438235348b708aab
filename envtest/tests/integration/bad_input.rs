//! Acceptance checks 37–40, bad input: malformed bodies, wrong kinds, invalid names
//! and oversized requests each get a clear `Status`, leave the stored state, the resourceVersion
//! counter and every watch stream untouched, and the server serves the next request.

use crate::common;

use common::{cm, status_of};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// What must not change when a request is refused.
struct Baseline {
    /// The stored object `x`.
    x: ConfigMap,
    /// The collection (= global) resourceVersion.
    list_rv: String,
}

async fn baseline(api: &Api<ConfigMap>) -> Baseline {
    Baseline {
        x: api.get("x").await.expect("get x"),
        list_rv: list_rv(api).await,
    }
}

async fn list_rv(api: &Api<ConfigMap>) -> String {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default()
}

/// Asserts that nothing changed: `x` is the same object with the same resourceVersion, and the
/// global resourceVersion did not move.
async fn assert_unchanged(api: &Api<ConfigMap>, before: &Baseline, what: &str) {
    let x = api.get("x").await.expect("get x after bad input");
    assert_eq!(x, before.x, "{what}: x changed");
    assert_eq!(
        list_rv(api).await,
        before.list_rv,
        "{what}: resourceVersion moved"
    );
}

/// Opens a watch from the baseline resourceVersion and returns a closure-like checker: after the
/// bad requests, a sentinel create must be the very first event the watch delivers.
async fn assert_no_events_since(api: &Api<ConfigMap>, rv: &str, sentinel: &str) {
    let stream = api
        .watch(&WatchParams::default().timeout(10), rv)
        .await
        .expect("watch from baseline");
    api.create(&PostParams::default(), &cm(sentinel, &[]))
        .await
        .expect("the server still serves writes");
    let mut stream = stream.boxed();
    loop {
        let ev = tokio::time::timeout(std::time::Duration::from_secs(10), stream.try_next())
            .await
            .expect("an event arrives")
            .expect("watch stream ok")
            .expect("watch not ended");
        match ev {
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Added(o) => {
                assert_eq!(o.metadata.name.as_deref(), Some(sentinel), "first event");
                return;
            }
            other => panic!("bad input produced a watch event: {other:?}"),
        }
    }
}

async fn setup() -> (ctrl_envtest::Environment, Api<ConfigMap>, Baseline) {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("x", &[("k", "v")]))
        .await
        .expect("create x");
    let b = baseline(&api).await;
    (env, api, b)
}

fn reason(body: &Value) -> &str {
    body["reason"].as_str().unwrap_or("")
}

#[tokio::test]
async fn malformed_json_is_400_on_post_put_and_every_patch_type() {
    let (env, api, before) = setup().await;
    let item = format!("{CMS}/x");
    let cases: Vec<(&str, &str, &str)> = vec![
        ("POST", CMS, "application/json"),
        ("PUT", &item, "application/json"),
        ("PATCH", &item, "application/merge-patch+json"),
        ("PATCH", &item, "application/json-patch+json"),
        ("PATCH", &item, "application/strategic-merge-patch+json"),
        ("PATCH", &item, "application/apply-patch+yaml"),
    ];
    for (method, path, ct) in &cases {
        let path = if ct.contains("apply") {
            format!("{path}?fieldManager=test")
        } else {
            path.to_string()
        };
        for body in [
            r#"{"kind":"#,
            "{not json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},}"#,
        ] {
            // A trailing comma is valid YAML flow syntax, and apply bodies are YAML.
            if ct.contains("apply") && body.ends_with(",}") {
                continue;
            }
            let (code, status) = common::raw(&env, method, &path, Some(body), ct).await;
            let what = format!("{method} {path} ({ct}) body {body:?}");
            let want = (400, "BadRequest");
            assert_eq!(code, want.0, "{what}: {status}");
            assert_eq!(status["kind"], "Status", "{what}");
            assert_eq!(status["status"], "Failure", "{what}");
            assert_eq!(reason(&status), want.1, "{what}: {status}");
            assert_eq!(status["code"], want.0, "{what}");
            assert!(
                !status["message"].as_str().unwrap_or("").is_empty(),
                "{what}: a message explains the error"
            );
        }
    }
    assert_unchanged(&api, &before, "malformed JSON").await;
    assert_no_events_since(&api, &before.list_rv, "after-malformed").await;
}

#[tokio::test]
async fn wrong_kind_or_api_version_for_the_endpoint_is_400() {
    let (env, api, before) = setup().await;
    // A Secret posted to configmaps.
    let secret =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}});
    let (code, status) = common::raw(
        &env,
        "POST",
        CMS,
        Some(&secret.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(reason(&status), "BadRequest");
    let msg = status["message"].as_str().unwrap_or("");
    assert!(msg.contains("Secret") && msg.contains("ConfigMap"), "{msg}");

    // The same through PUT onto an existing ConfigMap.
    let secret_x = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
    let (code, status) = common::raw(
        &env,
        "PUT",
        &format!("{CMS}/x"),
        Some(&secret_x.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{status}");
    let msg = status["message"].as_str().unwrap_or("");
    assert!(msg.contains("Secret") && msg.contains("ConfigMap"), "{msg}");

    // apps/v1 to a core endpoint: a Deployment, and a ConfigMap claiming apps/v1.
    for (body, mentions) in [
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}),
            "Deployment",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            "apps/v1",
        ),
    ] {
        let (code, status) = common::raw(
            &env,
            "POST",
            CMS,
            Some(&body.to_string()),
            "application/json",
        )
        .await;
        assert_eq!(code, 400, "{body}: {status}");
        assert_eq!(reason(&status), "BadRequest", "{status}");
        let msg = status["message"].as_str().unwrap_or("");
        assert!(msg.contains(mentions), "{msg}");
    }
    // And a core ConfigMap sent to an apps/v1 endpoint.
    let (code, status) = common::raw(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
                .to_string(),
        ),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{status}");

    // A JSON body that is not an object.
    for body in ["[]", "42", "\"x\"", "null"] {
        let (code, status) = common::raw(&env, "POST", CMS, Some(body), "application/json").await;
        assert_eq!(code, 400, "{body}: {status}");
    }
    assert_unchanged(&api, &before, "wrong kind").await;
    assert_no_events_since(&api, &before.list_rv, "after-wrong-kind").await;
}

#[tokio::test]
async fn invalid_names_are_422_with_a_metadata_name_cause() {
    let (env, api, _) = setup().await;
    let long = "a".repeat(254);
    for name in [
        "Bad_Name",
        "-lead",
        long.as_str(),
        "trailing-",
        "a..b",
        "UPPER",
    ] {
        let err = api
            .create(&PostParams::default(), &cm(name, &[]))
            .await
            .expect_err(name);
        let s = status_of(err);
        assert_eq!(s.code, 422, "{name}: {s:?}");
        assert_eq!(s.reason, "Invalid", "{name}");
        assert!(s.is_invalid(), "{name}");
        let details = s.details.clone().expect("details");
        assert_eq!(details.causes[0].field, "metadata.name", "{name}: {s:?}");
        assert_eq!(details.causes[0].reason, "FieldValueInvalid", "{name}");
        assert_eq!(details.kind, "ConfigMap", "{name}");
        assert!(
            s.message.starts_with(&format!(
                "ConfigMap {name:?} is invalid: metadata.name: Invalid value"
            )),
            "{}",
            s.message
        );
    }

    // Namespaces follow the DNS label rule: no dots.
    let ns_api: Api<Namespace> = Api::all(env.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("a.b".into());
    let s = status_of(
        ns_api
            .create(&PostParams::default(), &ns)
            .await
            .expect_err("a.b namespace"),
    );
    assert_eq!(s.code, 422, "{s:?}");
    assert_eq!(
        s.details.clone().expect("details").causes[0].field,
        "metadata.name"
    );
    assert!(ns_api.get_opt("a.b").await.expect("get ns").is_none());
    // ... while a.b is a fine ConfigMap name.
    api.create(&PostParams::default(), &cm("a.b", &[]))
        .await
        .expect("a.b is a valid subdomain");
    api.delete("a.b", &Default::default())
        .await
        .expect("delete a.b");
    let before = baseline(&api).await;

    // Neither name nor generateName.
    let s = status_of(
        api.create(&PostParams::default(), &ConfigMap::default())
            .await
            .expect_err("no name"),
    );
    assert_eq!(s.code, 422);
    assert_eq!(s.details.expect("details").causes[0].field, "metadata.name");

    // Invalid names through a raw POST too (no client-side checks in the way).
    let (code, status) = common::raw(
        &env,
        "POST",
        CMS,
        Some(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#),
        "application/json",
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");

    assert!(api.get_opt("Bad_Name").await.expect("get").is_none());
    assert_unchanged(&api, &before, "invalid names").await;
    assert_no_events_since(&api, &before.list_rv, "after-invalid-names").await;
}

/// Sends `len` bytes of JSON-ish body to `path` over a raw connection, writing from one task
/// and reading the response from another so that an early 413 cannot deadlock the test.
async fn send_big(
    env: &ctrl_envtest::Environment,
    method: &str,
    path: &str,
    len: usize,
    chunked: bool,
) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stream = tokio::net::TcpStream::connect(env.addr())
        .await
        .expect("connect");
    let (mut rd, mut wr) = stream.into_split();
    let token = env.admin_token();
    let head = if chunked {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
    } else {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
        )
    };
    let writer = tokio::spawn(async move {
        wr.write_all(head.as_bytes()).await?;
        let prefix =
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":""#;
        let block = vec![b'a'; 64 * 1024];
        let first = prefix.to_vec();
        let mut sent = first.len();
        if chunked {
            wr.write_all(format!("{:x}\r\n", first.len()).as_bytes())
                .await?;
            wr.write_all(&first).await?;
            wr.write_all(b"\r\n").await?;
        } else {
            wr.write_all(&first).await?;
        }
        while sent < len {
            let n = block.len().min(len - sent);
            let buf = block[..n].to_vec();
            sent += n;
            if chunked {
                wr.write_all(format!("{:x}\r\n", buf.len()).as_bytes())
                    .await?;
                wr.write_all(&buf).await?;
                wr.write_all(b"\r\n").await?;
            } else {
                wr.write_all(&buf).await?;
            }
        }
        if chunked {
            wr.write_all(b"0\r\n\r\n").await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut out = Vec::new();
    // The server may close early; whatever arrived is the response.
    let _ = rd.read_to_end(&mut out).await;
    writer.abort();
    let (code, _, text) = common::parse_response(&out);
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn bodies_over_3_mib_are_413_and_big_data_is_422() {
    let (env, api, before) = setup().await;
    let four_mib = 4 * 1024 * 1024;
    for (method, path) in [("POST", CMS.to_string()), ("PUT", format!("{CMS}/x"))] {
        for chunked in [false, true] {
            let (code, status) = send_big(&env, method, &path, four_mib, chunked).await;
            let what = format!("{method} {path} chunked={chunked}");
            assert_eq!(code, 413, "{what}: {status}");
            assert_eq!(reason(&status), "RequestEntityTooLarge", "{what}");
            assert_eq!(
                status["message"], "Request entity too large: limit is 3145728",
                "{what}"
            );
            // The server is alive and unchanged after each attempt.
            assert_unchanged(&api, &before, &what).await;
        }
    }

    // Through kube as well: the client sees an error (413, or the connection closed on it),
    // never a success.
    let huge = "a".repeat(four_mib);
    let res = api
        .create(&PostParams::default(), &cm("huge", &[("k", &huge)]))
        .await;
    match res {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 413, "{s:?}"),
        Err(_) => {}
        Ok(o) => panic!("a 4 MiB create succeeded: {:?}", o.metadata.name),
    }
    assert!(api.get_opt("huge").await.expect("get").is_none());

    // Just over 1 MiB of data fits in the body limit but not in a ConfigMap.
    let mib = "b".repeat(1024 * 1024 + 1);
    let s = status_of(
        api.create(&PostParams::default(), &cm("big-data", &[("k", &mib)]))
            .await
            .expect_err("1 MiB + 1 of data"),
    );
    assert_eq!(s.code, 422, "{s:?}");
    assert_eq!(s.reason, "Invalid");
    assert_eq!(
        s.details.expect("details").causes[0].reason,
        "FieldValueTooLong"
    );
    // Split over two keys, the total still counts.
    let half = "c".repeat(512 * 1024 + 1);
    let s = status_of(
        api.create(
            &PostParams::default(),
            &cm("big-data", &[("a", &half), ("b", &half)]),
        )
        .await
        .expect_err("two halves over 1 MiB"),
    );
    assert_eq!(s.code, 422);
    // Growing x past the limit by update is refused the same way.
    let mut x = before.x.clone();
    x.data = Some([("k".to_string(), mib.clone())].into());
    let s = status_of(
        api.replace("x", &PostParams::default(), &x)
            .await
            .expect_err("update past 1 MiB"),
    );
    assert_eq!(s.code, 422);
    // Exactly 1 MiB is fine.
    let exact = "d".repeat(1024 * 1024);
    api.create(
        &PostParams::default(),
        &cm("exactly-1mib", &[("k", &exact)]),
    )
    .await
    .expect("1 MiB of data is allowed");
    api.delete("exactly-1mib", &Default::default())
        .await
        .expect("delete");
    let before = baseline(&api).await;
    assert!(api.get_opt("big-data").await.expect("get").is_none());
    assert_unchanged(&api, &before, "oversized").await;
    assert_no_events_since(&api, &before.list_rv, "after-oversized").await;
}

#[tokio::test]
async fn unknown_resources_and_media_types() {
    let (env, api, before) = setup().await;
    let (code, status) = common::raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/nothings",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 404, "{status}");
    assert_eq!(reason(&status), "NotFound");
    let (code, _) = common::raw(
        &env,
        "GET",
        "/apis/nope.example.com/v1/widgets",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 404);
    let (code, _) = common::raw(&env, "GET", "/totally/unknown", None, "application/json").await;
    assert_eq!(code, 404);

    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#;
    for ct in [
        "text/plain",
        "application/vnd.kubernetes.protobuf",
        "application/xml",
    ] {
        let (code, status) = common::raw(&env, "POST", CMS, Some(body), ct).await;
        assert_eq!(code, 415, "{ct}: {status}");
        assert_eq!(reason(&status), "UnsupportedMediaType", "{ct}");
    }
    let (code, status) =
        common::raw(&env, "PATCH", &format!("{CMS}/x"), Some("{}"), "text/plain").await;
    assert_eq!(code, 415, "{status}");
    // Names that are path tricks never reach the store.
    for path in [format!("{CMS}/%2e%2e"), format!("{CMS}/a%2Fb")] {
        let (code, _) = common::raw(&env, "GET", &path, None, "application/json").await;
        assert!(code == 400 || code == 404, "{path}: {code}");
    }
    assert_unchanged(&api, &before, "unknown paths and media types").await;
    assert_no_events_since(&api, &before.list_rv, "after-unknown").await;
}

#[tokio::test]
async fn many_bad_requests_in_a_row_do_not_hurt_the_server() {
    let (env, api, before) = setup().await;
    let bodies = [
        "",
        "{",
        "}",
        "[",
        "{\"metadata\":",
        "\u{0}\u{1}\u{2}",
        "{\"kind\":1}",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":"x"}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":5}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"q","labels":{"bad key":"v"}}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"q"},"data":{"k":1}}"#,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"q","resourceVersion":"5"}}"#,
    ];
    for body in bodies {
        let (code, status) = common::raw(&env, "POST", CMS, Some(body), "application/json").await;
        assert!(
            (400..500).contains(&code),
            "{body:?}: expected a 4xx, got {code} {status}"
        );
        assert_eq!(status["kind"], "Status", "{body:?}");
    }
    assert!(api.get_opt("q").await.expect("get").is_none());
    assert_unchanged(&api, &before, "garbage bodies").await;
    assert_no_events_since(&api, &before.list_rv, "after-garbage").await;
}
