//! The type check of built-in bodies over HTTP: what kube-apiserver's decode into the Go type
//! refuses is a 400 `BadRequest` with Go's words (`Pod in version "v1" cannot be handled as a
//! Pod: json: cannot unmarshal ...`), on create and on update, and nothing is stored; what it
//! accepts (quantities as numbers, `null`, unknown fields, both forms of an int-or-string) is
//! stored.

use crate::common;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const NS: &str = "/api/v1/namespaces/default";

/// POSTs `body` to `path` and asserts Go's 400: code, reason, and the whole message.
async fn refused(env: &ctrl_envtest::Environment, path: &str, body: &Value, message: &str) {
    let (code, status) = common::raw(
        env,
        "POST",
        path,
        Some(&body.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "BadRequest", "{status}");
    assert_eq!(status["code"], 400, "{status}");
    assert_eq!(status["message"], message, "{status}");
    let name = body["metadata"]["name"].as_str().unwrap_or_default();
    let (code, _) = common::raw(env, "GET", &format!("{path}/{name}"), None, "").await;
    assert_eq!(code, 404, "{path}/{name} was stored");
}

fn pod(name: &str, container: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [container]}})
}

#[tokio::test]
async fn wrong_types_nested_in_a_pod_spec_are_go_decode_errors() {
    let env = common::env().await;
    let pods = format!("{NS}/pods");
    let port = pod(
        "p1",
        json!({"name": "c", "image": "i", "ports": [{"containerPort": "80"}]}),
    );
    refused(&env, &pods, &port, "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32").await;
    let containers = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p2"},
        "spec": {"containers": {"name": "c"}}});
    refused(&env, &pods, &containers, "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container").await;
    let selector = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p3"},
        "spec": {"nodeSelector": {"a": 1}, "containers": [{"name": "c", "image": "i"}]}});
    refused(&env, &pods, &selector, "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field PodSpec.spec.nodeSelector of type string").await;
    let cpu = pod(
        "p4",
        json!({"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}),
    );
    refused(&env, &pods, &cpu, "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'").await;
    let probe = pod(
        "p5",
        json!({"name": "c", "image": "i", "livenessProbe": {"httpGet": {"port": true}}}),
    );
    refused(&env, &pods, &probe, "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal bool into Go struct field HTTPGetAction.spec.containers.livenessProbe.httpGet.port of type int32").await;
}

#[tokio::test]
async fn bad_base64_in_a_secret_is_refused() {
    let env = common::env().await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"k": "not base64!"}});
    refused(&env, &format!("{NS}/secrets"), &secret, "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3").await;
    let short = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"k": "aGVsbG8"}});
    refused(&env, &format!("{NS}/secrets"), &short, "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 4").await;
}

#[tokio::test]
async fn out_of_range_and_fractional_integers_are_refused() {
    let env = common::env().await;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    for (replicas, shown) in [(json!(3_000_000_000u64), "3000000000"), (json!(1.5), "1.5")] {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let want = format!(
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number {shown} into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        refused(&env, deploys, &d, &want).await;
    }
}

#[tokio::test]
async fn bad_rfc3339_times_are_refused_with_go_time_errors() {
    let env = common::env().await;
    let events = format!("{NS}/events");
    let event = |name: &str, first: Value| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "firstTimestamp": first})
    };
    refused(&env, &events, &event("e1", json!("yesterday")), "Event in version \"v1\" cannot be handled as a Event: parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\"").await;
    refused(&env, &events, &event("e2", json!("2024-13-01T00:00:00Z")), "Event in version \"v1\" cannot be handled as a Event: parsing time \"2024-13-01T00:00:00Z\": month out of range").await;
    refused(&env, &events, &event("e3", json!(5)), "Event in version \"v1\" cannot be handled as a Event: json: cannot unmarshal number into Go struct field Event.firstTimestamp of type string").await;
    // A MicroTime wants exactly six fractional digits (metav1.RFC3339Micro).
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"renewTime": "2024-01-02T03:04:05Z"}});
    refused(&env, "/apis/coordination.k8s.io/v1/namespaces/default/leases", &lease, "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"2024-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\"").await;
}

#[tokio::test]
async fn an_update_with_a_wrong_type_is_refused_and_changes_nothing() {
    let env = common::env().await;
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let mut s = Secret::default();
    s.metadata.name = Some("s".into());
    s.string_data = Some([("k".to_string(), "v".to_string())].into());
    let made = secrets.create(&PostParams::default(), &s).await.unwrap();
    let mut body = serde_json::to_value(&made).unwrap();
    body["immutable"] = json!("yes");
    let (code, status) = common::raw(
        &env,
        "PUT",
        &format!("{NS}/secrets/s"),
        Some(&body.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest", "{status}");
    assert_eq!(
        status["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: json: cannot unmarshal string into Go struct field Secret.immutable of type bool"
    );
    let now = secrets.get("s").await.unwrap();
    assert_eq!(
        now.metadata.resource_version,
        made.metadata.resource_version
    );
}

#[tokio::test]
async fn bodies_go_accepts_are_stored() {
    let env = common::env().await;
    // A quantity as a bare number, a null struct, an unknown field, both int-or-string forms.
    let p = pod(
        "ok",
        json!({"name": "c", "image": "i", "bogus": 1,
        "resources": {"limits": {"cpu": 2, "memory": "1Gi"}},
        "securityContext": null,
        "readinessProbe": {"httpGet": {"port": "http"}},
        "livenessProbe": {"tcpSocket": {"port": 8080}}}),
    );
    let (code, created) = common::raw(
        &env,
        "POST",
        &format!("{NS}/pods"),
        Some(&p.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let got = pods.get("ok").await.unwrap();
    let c = &got.spec.unwrap().containers[0];
    assert_eq!(c.image.as_deref(), Some("i"));
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80, "targetPort": "web"}, {"name": "b", "port": 81, "targetPort": 8081}]}});
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
        "data": {"k": "aGVsbG8=", "wrapped": "aGVs\nbG8="}});
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"holderIdentity": "a", "renewTime": "2024-01-02T03:04:05.123456Z"}});
    let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "i"}]}}}}}});
    for (path, body) in [
        (format!("{NS}/services"), svc),
        (format!("{NS}/secrets"), secret),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases".into(),
            lease,
        ),
        ("/apis/batch/v1/namespaces/default/cronjobs".into(), cronjob),
    ] {
        let (code, created) = common::raw(
            &env,
            "POST",
            &path,
            Some(&body.to_string()),
            "application/json",
        )
        .await;
        assert_eq!(code, 201, "{path}: {created}");
        assert_eq!(created["kind"], body["kind"], "{created}");
    }
}
