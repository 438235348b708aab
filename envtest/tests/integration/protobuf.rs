//! A Go-default client, simulated: client-go v0.36 sends built-in kinds as protobuf
//! (`Content-Type: application/vnd.kubernetes.protobuf`, `Accept:
//! application/vnd.kubernetes.protobuf, application/json`) over one HTTP/2 connection (ALPN
//! `h2`). Bodies are k8s-pb messages in the `k8s\0` + `runtime.Unknown` envelope, as Go's
//! protobuf serializer writes them; answers are decoded with k8s-pb and compared with what the
//! kube client (JSON) reads back. `tests/integration/h2.rs` has the transport's own tests.

use crate::common;

use bytes::Bytes;
use ctrl_envtest::Environment;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::coordination::v1 as coord;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use prost::Message;

const PB: &str = "application/vnd.kubernetes.protobuf";

/// `k8s\0` + `runtime.Unknown{typeMeta, raw}`, as Go's protobuf serializer frames an object.
fn wrap(api_version: &str, kind: &str, msg: &impl Message) -> Vec<u8> {
    let u = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(msg.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(u.encode_to_vec());
    out
}

/// The (apiVersion, kind) and message of a protobuf object body.
fn unwrap<T: Message + Default>(body: &[u8]) -> (String, String, T) {
    let rest = body.strip_prefix(b"k8s\0").expect("the protobuf magic");
    let u = Unknown::decode(rest).expect("a runtime.Unknown");
    let tm = u.type_meta.unwrap_or_default();
    let msg = T::decode(u.raw.unwrap_or_default().as_slice()).expect("the message");
    (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
        msg,
    )
}

/// A request as client-go's typed clients send it; returns code, content type and body.
async fn go(
    env: &Environment,
    c: &mut SendRequest<Full<Bytes>>,
    method: &str,
    path: &str,
    body: Option<Vec<u8>>,
) -> (u16, String, Bytes) {
    let req = http::Request::builder()
        .method(method)
        .uri(format!("https://127.0.0.1:{}{path}", env.addr().port()))
        .header("authorization", format!("Bearer {}", env.admin_token()))
        .header("accept", format!("{PB}, application/json"))
        .header("content-type", PB)
        .header(
            "user-agent",
            "manager/v0.0.0 (linux/amd64) kubernetes/$Format",
        )
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("a request");
    c.ready().await.expect("the connection is open");
    let resp = c.send_request(req).await.expect("a response");
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.into_body().collect().await.expect("a body").to_bytes();
    (code, ct, body)
}

fn om(name: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        // Go's encoder writes every non-pointer field, set or not.
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        resource_version: Some(String::new()),
        labels: [("app".to_string(), name.to_string())].into(),
        ..Default::default()
    })
}

fn delete_options() -> Vec<u8> {
    let o = meta::DeleteOptions {
        propagation_policy: Some("Background".into()),
        ..Default::default()
    };
    wrap("meta.k8s.io/v1", "DeleteOptions", &o)
}

#[tokio::test]
async fn leader_election_lease_in_protobuf() {
    let env = common::env().await;
    let mut c = common::tls::h2(&env).await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let renew = meta::MicroTime {
        seconds: Some(1_700_000_000),
        nanos: Some(123_456_000),
    };
    let lease = coord::Lease {
        metadata: om("manager-lock"),
        spec: Some(coord::LeaseSpec {
            holder_identity: Some("pod-a_1".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(renew),
            renew_time: Some(renew),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let body = wrap("coordination.k8s.io/v1", "Lease", &lease);
    let (code, ct, out) = go(&env, &mut c, "POST", path, Some(body)).await;
    assert_eq!((code, ct.as_str()), (201, PB), "{out:?}");
    let (av, kind, mut created) = unwrap::<coord::Lease>(&out);
    assert_eq!(
        (av.as_str(), kind.as_str()),
        ("coordination.k8s.io/v1", "Lease")
    );
    let spec = created.spec.clone().unwrap_or_default();
    assert_eq!(spec.holder_identity.as_deref(), Some("pod-a_1"));
    assert_eq!(spec.renew_time, Some(renew));
    assert_eq!(spec.lease_transitions, Some(0), "a pointer's zero is kept");
    // Renew as the elector does: PUT of the object read back, holder and time changed.
    if let Some(s) = created.spec.as_mut() {
        s.holder_identity = Some("pod-b_2".into());
        s.lease_transitions = Some(1);
    }
    let body = wrap("coordination.k8s.io/v1", "Lease", &created);
    let (code, _, out) = go(
        &env,
        &mut c,
        "PUT",
        &format!("{path}/manager-lock"),
        Some(body),
    )
    .await;
    assert_eq!(code, 200, "{out:?}");
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");
    let json = leases.get("manager-lock").await.expect("read back as JSON");
    let spec = json.spec.expect("a spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("pod-b_2"));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.lease_transitions, Some(1));
    let renew = spec.renew_time.expect("renewTime").0;
    assert_eq!(renew.as_second(), 1_700_000_000);
    assert_eq!(
        renew.subsec_microsecond(),
        123_456,
        "MicroTime keeps microseconds"
    );
    let meta = json.metadata;
    assert_eq!(meta.labels.unwrap_or_default()["app"], "manager-lock");
    assert!(
        meta.generate_name.is_none(),
        "empty strings are unset, as in Go"
    );
    let (code, _, out) = go(&env, &mut c, "GET", &format!("{path}/nope"), None).await;
    let (_, kind, status) = unwrap::<meta::Status>(&out);
    assert_eq!((code, kind.as_str()), (404, "Status"));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(status.code, Some(404));
}

#[tokio::test]
async fn events_api_event_in_protobuf() {
    let env = common::env().await;
    let mut c = common::tls::h2(&env).await;
    let ev = events::Event {
        metadata: om("ev.1"),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_100),
            nanos: Some(0),
        }),
        reporting_controller: Some("example.com/manager".into()),
        reporting_instance: Some("manager-pod".into()),
        action: Some("Reconcile".into()),
        reason: Some("Synced".into()),
        note: Some("synced <ok> & done".into()),
        r#type: Some("Normal".into()),
        regarding: Some(core::ObjectReference {
            kind: Some("ConfigMap".into()),
            namespace: Some("default".into()),
            name: Some("cm".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let body = wrap("events.k8s.io/v1", "Event", &ev);
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let (code, ct, out) = go(&env, &mut c, "POST", path, Some(body)).await;
    assert_eq!((code, ct.as_str()), (201, PB), "{out:?}");
    let (_, kind, created) = unwrap::<events::Event>(&out);
    assert_eq!(kind, "Event");
    assert_eq!(created.note.as_deref(), Some("synced <ok> & done"));
    assert_eq!(
        created.regarding.and_then(|r| r.name).as_deref(),
        Some("cm")
    );
    let core_events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(env.client(), "default");
    let e = core_events.get("ev.1").await.expect("the core view");
    assert_eq!(e.reason.as_deref(), Some("Synced"));
}

fn deployment(name: &str) -> apps::Deployment {
    let labels: std::collections::BTreeMap<String, String> =
        [("app".to_string(), name.to_string())].into();
    apps::Deployment {
        metadata: om(name),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: labels.clone(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels,
                    ..Default::default()
                }),
                spec: Some(pod_spec()),
            }),
            ..Default::default()
        }),
        status: Some(Default::default()),
    }
}

fn pod_spec() -> core::PodSpec {
    core::PodSpec {
        containers: vec![core::Container {
            name: Some("app".into()),
            image: Some("nginx:1.27".into()),
            ports: vec![core::ContainerPort {
                container_port: Some(8080),
                name: Some("http".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        termination_grace_period_seconds: Some(0),
        // Go writes non-pointer fields unset too; Go's JSON leaves their zero out.
        host_network: Some(false),
        node_name: Some(String::new()),
        ..Default::default()
    }
}

#[tokio::test]
async fn workloads_create_update_and_delete_in_protobuf() {
    let env = common::env().await;
    let mut c = common::tls::h2(&env).await;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let body = wrap("apps/v1", "Deployment", &deployment("web"));
    let (code, _, out) = go(&env, &mut c, "POST", deploys, Some(body)).await;
    assert_eq!(code, 201, "{out:?}");
    let (_, _, mut d) = unwrap::<apps::Deployment>(&out);
    if let Some(s) = d.spec.as_mut() {
        s.replicas = Some(3);
    }
    let body = wrap("apps/v1", "Deployment", &d);
    let (code, _, out) = go(&env, &mut c, "PUT", &format!("{deploys}/web"), Some(body)).await;
    assert_eq!(code, 200, "{out:?}");
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let json = api.get("web").await.expect("read back");
    let spec = json.spec.expect("spec");
    assert_eq!(spec.replicas, Some(3));
    let pod = spec.template.spec.expect("pod spec");
    assert_eq!(pod.termination_grace_period_seconds, Some(0));
    assert_eq!(
        pod.containers[0].ports.as_ref().expect("ports")[0].container_port,
        8080
    );

    let svc = core::Service {
        metadata: om("web"),
        spec: Some(core::ServiceSpec {
            ports: vec![core::ServicePort {
                port: Some(80),
                target_port: Some(IntOrString {
                    r#type: Some(1),
                    int_val: Some(0),
                    str_val: Some("http".into()),
                }),
                ..Default::default()
            }],
            selector: [("app".to_string(), "web".to_string())].into(),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    let services = "/api/v1/namespaces/default/services";
    let body = wrap("v1", "Service", &svc);
    let (code, _, out) = go(&env, &mut c, "POST", services, Some(body)).await;
    assert_eq!(code, 201, "{out:?}");
    let s: Api<Service> = Api::namespaced(env.client(), "default");
    let port = &s
        .get("web")
        .await
        .expect("svc")
        .spec
        .expect("spec")
        .ports
        .expect("ports")[0];
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("http".into()))
    );

    let pod = core::Pod {
        metadata: om("web-0"),
        spec: Some(pod_spec()),
        status: Some(Default::default()),
    };
    let pods = "/api/v1/namespaces/default/pods";
    let (code, _, out) = go(&env, &mut c, "POST", pods, Some(wrap("v1", "Pod", &pod))).await;
    assert_eq!(code, 201, "{out:?}");
    let p: Api<Pod> = Api::namespaced(env.client(), "default");
    let read = p.get("web-0").await.expect("pod");
    let spec = read.spec.expect("spec");
    assert_eq!(spec.containers[0].image.as_deref(), Some("nginx:1.27"));
    assert_eq!(
        spec.termination_grace_period_seconds,
        Some(0),
        "a pointer's zero"
    );
    assert_eq!(spec.host_network, None, "a non-pointer omitempty zero");
    assert_eq!(spec.node_name, None);

    for path in [
        format!("{deploys}/web"),
        format!("{services}/web"),
        format!("{pods}/web-0"),
    ] {
        let (code, _, out) = go(&env, &mut c, "DELETE", &path, Some(delete_options())).await;
        assert!(code == 200 || code == 202, "{path}: {code} {out:?}");
        let (code, _, _) = go(&env, &mut c, "GET", &path, None).await;
        assert_eq!(code, 404, "{path} is gone");
    }
}

/// The next length-delimited frame of a protobuf watch, decoded with k8s-pb.
async fn frame(body: &mut hyper::body::Incoming, buf: &mut Vec<u8>) -> Option<meta::WatchEvent> {
    loop {
        if buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() >= 4 + len {
                let ev = meta::WatchEvent::decode(&buf[4..4 + len]).expect("a WatchEvent");
                buf.drain(..4 + len);
                return Some(ev);
            }
        }
        let f = tokio::time::timeout(std::time::Duration::from_secs(20), body.frame())
            .await
            .ok()??
            .ok()?;
        if let Ok(data) = f.into_data() {
            buf.extend_from_slice(&data);
        }
    }
}

fn event_pod(ev: &meta::WatchEvent) -> (String, core::Pod) {
    let raw = ev
        .object
        .as_ref()
        .and_then(|o| o.raw.clone())
        .unwrap_or_default();
    let (_, kind, pod) = unwrap::<core::Pod>(&raw);
    assert_eq!(kind, "Pod");
    (ev.r#type.clone().unwrap_or_default(), pod)
}

#[tokio::test]
async fn protobuf_watch_frames_with_bookmarks_and_requests_on_one_h2_connection() {
    let env = common::env().await;
    let mut c = common::tls::h2(&env).await;
    let pods = "/api/v1/namespaces/default/pods";
    let pod = core::Pod {
        metadata: om("first"),
        spec: Some(pod_spec()),
        status: None,
    };
    let (code, _, _) = go(&env, &mut c, "POST", pods, Some(wrap("v1", "Pod", &pod))).await;
    assert_eq!(code, 201);
    let watch = format!(
        "https://127.0.0.1:{}{pods}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
        env.addr().port()
    );
    let req = http::Request::builder()
        .uri(watch)
        .header("authorization", format!("Bearer {}", env.admin_token()))
        .header("accept", format!("{PB};stream=watch, application/json"))
        .body(Full::new(Bytes::new()))
        .expect("a request");
    c.ready().await.expect("open");
    let resp = c.send_request(req).await.expect("the watch");
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let (ty, p) = event_pod(&frame(&mut body, &mut buf).await.expect("the initial event"));
    assert_eq!(
        (ty.as_str(), p.metadata.and_then(|m| m.name).as_deref()),
        ("ADDED", Some("first"))
    );
    let (ty, end) = event_pod(&frame(&mut body, &mut buf).await.expect("the end bookmark"));
    assert_eq!(ty, "BOOKMARK");
    let annotations = end.metadata.unwrap_or_default().annotations;
    assert_eq!(annotations["k8s.io/initial-events-end"], "true");
    // 100 requests at once on the same connection as the open watch.
    let gets = (0..100).map(|_| {
        let mut c = c.clone();
        let env = &env;
        async move {
            go(
                env,
                &mut c,
                "GET",
                "/api/v1/namespaces/default/pods/first",
                None,
            )
            .await
            .0
        }
    });
    let codes = futures::future::join_all(gets).await;
    assert!(codes.iter().all(|c| *c == 200), "{codes:?}");
    let second = core::Pod {
        metadata: om("second"),
        ..pod
    };
    let (code, _, _) = go(&env, &mut c, "POST", pods, Some(wrap("v1", "Pod", &second))).await;
    assert_eq!(code, 201);
    let (ty, p) = event_pod(&frame(&mut body, &mut buf).await.expect("the live event"));
    assert_eq!(
        (ty.as_str(), p.metadata.and_then(|m| m.name).as_deref()),
        ("ADDED", Some("second"))
    );
}

#[tokio::test]
async fn custom_resources_stay_json_and_status_bytes_are_gos() {
    let (env, _) = common::env_with_widget().await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let body = wrap("example.com/v1", "Widget", &meta::ObjectMeta::default());
    let mut c = common::tls::h2(&env).await;
    let (code, _, out) = go(&env, &mut c, "POST", widgets, Some(body)).await;
    assert_eq!(code, 415, "{out:?}");
    let (code, ct, _) = go(&env, &mut c, "GET", widgets, None).await;
    assert_eq!(
        (code, ct.as_str()),
        (200, "application/json"),
        "JSON when protobuf is first"
    );
    let only_pb = [("Accept", PB)];
    let (code, _, _) = common::raw_full(&env, "GET", widgets, None, "", &only_pb).await;
    assert_eq!(code, 406);
    let (code, _, text) = common::raw_full(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps/nope",
        None,
        "",
        &[],
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        text,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps \\\"nope\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );
}
