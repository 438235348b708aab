//! What every cluster serves besides the workload kinds (issue 29): APIServices
//! (`apiregistration.k8s.io/v1`, stored and discovered), CertificateSigningRequests with their
//! `approval` subresource (only the conditions change through it), the Pod
//! `ephemeralcontainers` subresource (only `spec.ephemeralContainers` changes through it) and the
//! read-only, deprecated `componentstatuses`.

use crate::common;

use serde_json::{Value, json};

async fn req(
    env: &ctrl_envtest::Environment,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map(|b| b.to_string());
    common::raw(env, method, path, body.as_deref(), "application/json").await
}

#[tokio::test]
async fn api_services_are_stored_listed_and_discovered() {
    let env = common::env().await;
    let (code, groups) = req(&env, "GET", "/apis", None).await;
    assert_eq!(code, 200);
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(
        names.contains(&"apiregistration.k8s.io") && names.contains(&"certificates.k8s.io"),
        "{names:?}"
    );
    let svc = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                 "service": {"namespace": "kube-system", "name": "metrics-server"}}});
    let (code, created) = req(
        &env,
        "POST",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        Some(svc),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["service"]["port"], 443,
        "SetDefaults_ServiceReference"
    );
    let (code, list) = req(
        &env,
        "GET",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        None,
    )
    .await;
    assert_eq!(
        (code, list["items"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{list}"
    );
}

#[tokio::test]
async fn a_csr_is_approved_through_its_approval_subresource() {
    let env = common::env().await;
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "c"},
        "spec": {"username": "someone-else", "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K", "signerName": "example.com/signer", "usages": ["client auth"]}});
    let base = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let (code, created) = req(&env, "POST", base, Some(csr)).await;
    assert_eq!(code, 201, "{created}");
    // The requester is who sent it, whatever the body said.
    assert_eq!(created["spec"]["username"], "admin");
    assert_eq!(
        created["spec"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    let mut approve = created.clone();
    approve["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]});
    approve["spec"]["signerName"] = json!("changed/by-approval");
    let (code, approved) = req(&env, "PUT", &format!("{base}/c/approval"), Some(approve)).await;
    assert_eq!(code, 200, "{approved}");
    let cond = &approved["status"]["conditions"][0];
    assert_eq!(cond["type"], "Approved");
    assert!(
        cond["lastUpdateTime"].is_string(),
        "timestamps filled: {cond}"
    );
    assert_eq!(
        approved["spec"]["signerName"], "example.com/signer",
        "spec kept"
    );
    // A main-resource write keeps the approval.
    let mut main = approved.clone();
    main["status"] = json!({});
    let (code, kept) = req(&env, "PUT", &format!("{base}/c"), Some(main)).await;
    assert_eq!(
        (code, &kept["status"]["conditions"][0]["type"]),
        (200, &json!("Approved")),
        "{kept}"
    );
}

#[tokio::test]
async fn ephemeral_containers_are_written_through_their_subresource() {
    let env = common::env().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x"}]}});
    let (_, created) = req(&env, "POST", "/api/v1/namespaces/default/pods", Some(pod)).await;
    let path = "/api/v1/namespaces/default/pods/p/ephemeralcontainers";
    let (code, got) = req(&env, "GET", path, None).await;
    assert_eq!((code, &got["kind"]), (200, &json!("Pod")), "{got}");
    let mut upd = created.clone();
    upd["spec"]["ephemeralContainers"] =
        json!([{"name": "debug", "image": "busybox", "targetContainerName": "c"}]);
    upd["spec"]["containers"][0]["image"] = json!("changed");
    let (code, out) = req(&env, "PUT", path, Some(upd)).await;
    assert_eq!(code, 200, "{out}");
    let eph = &out["spec"]["ephemeralContainers"][0];
    assert_eq!(eph["name"], "debug");
    assert_eq!(
        eph["terminationMessagePolicy"], "File",
        "defaulted as a container"
    );
    assert_eq!(
        out["spec"]["containers"][0]["image"], "x",
        "nothing else changes"
    );
}

#[tokio::test]
async fn component_statuses_are_read_only_and_healthy() {
    let env = common::env().await;
    let (code, list) = req(&env, "GET", "/api/v1/componentstatuses", None).await;
    assert_eq!(code, 200);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    let (code, s) = req(&env, "GET", "/api/v1/componentstatuses/scheduler", None).await;
    assert_eq!(
        (
            code,
            &s["conditions"][0]["type"],
            &s["conditions"][0]["status"]
        ),
        (200, &json!("Healthy"), &json!("True"))
    );
    let (code, _) = req(&env, "DELETE", "/api/v1/componentstatuses/scheduler", None).await;
    assert_eq!(code, 405);
    let (code, _) = req(&env, "GET", "/api/v1/componentstatuses/scheduler", None).await;
    assert_eq!(code, 200, "still there");
    let (_, discovery) = req(&env, "GET", "/api/v1", None).await;
    let cs = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "componentstatuses")
        .expect("discovered");
    assert_eq!(cs["verbs"], json!(["get", "list"]));
}
