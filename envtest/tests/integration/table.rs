//! `as=Table` (`k8s.io/kubernetes/pkg/printers/internalversion/printers.go`): lists, gets and watch
//! events as `meta.k8s.io/v1` Tables with upstream's printer columns for built-ins (priority 1 =
//! `-o wide`), Name/Created At for CRDs, and `additionalPrinterColumns` for custom resources.

use crate::common;

use common::{cm, widget, widget_ar, widget_crd};
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn builtin_list_and_get_are_tables() {
    let env = common::env().await;
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("a", &[("k", "v")]))
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/configmaps";
    let (code, _, text) = common::raw_full(&env, "GET", path, None, "", &[("accept", TABLE)]).await;
    assert_eq!(code, 200);
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["kind"], "Table");
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Data", "Age"]);
    assert_eq!(t["rows"][0]["cells"][0], "a");
    assert_eq!(t["rows"][0]["cells"][1], 1);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let (code, _, text) = common::raw_full(
        &env,
        "GET",
        &format!("{path}/a"),
        None,
        "",
        &[("accept", TABLE)],
    )
    .await;
    assert_eq!(code, 200);
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["rows"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn printer_columns_of_custom_resources() {
    let mut crd = serde_json::to_value(widget_crd(true)).unwrap();
    crd["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
    let env = ctrl_envtest::Environment::builder()
        .crd(serde_json::from_value(crd).unwrap())
        .start()
        .await
        .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    api.create(&PostParams::default(), &widget("w", json!({"size": 7})))
        .await
        .unwrap();
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, _, text) = common::raw_full(&env, "GET", path, None, "", &[("accept", TABLE)]).await;
    assert_eq!(code, 200, "{text}");
    let t: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(t["columnDefinitions"][1]["name"], "Size");
    assert_eq!(t["rows"][0]["cells"], json!(["w", 7]));
}

fn column_names(t: &Value, priority: i64) -> Vec<&str> {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["priority"] == priority)
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

async fn table(env: &ctrl_envtest::Environment, path: &str) -> Value {
    let (code, _, text) = common::raw_full(env, "GET", path, None, "", &[("accept", TABLE)]).await;
    assert_eq!(code, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn workload_printer_columns() {
    use k8s_openapi::api::apps::v1::Deployment;
    let env = common::env().await;
    let deploy: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d1"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "d1"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            "template": {"metadata": {"labels": {"app": "d1", "tier": "a"}}, "spec": {"containers": [
                {"name": "main", "image": "nginx:1"}, {"name": "side", "image": "envoy:2"}]}},
        },
    }))
    .unwrap();
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &deploy).await.unwrap();
    // Status as a controller would write it.
    api.patch_status(
        "d1",
        &Default::default(),
        &kube::api::Patch::Merge(
            json!({"status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 1}}),
        ),
    )
    .await
    .unwrap();
    let t = table(&env, "/apis/apps/v1/namespaces/default/deployments").await;
    assert_eq!(
        column_names(&t, 0),
        ["Name", "Ready", "Up-to-date", "Available", "Age"]
    );
    assert_eq!(column_names(&t, 1), ["Containers", "Images", "Selector"]);
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(
        cells[..4],
        json!(["d1", "2/3", 3, 1]).as_array().unwrap()[..]
    );
    assert_eq!(
        cells[5..],
        json!(["main,side", "nginx:1,envoy:2", "app=d1,tier in (a,b)"])
            .as_array()
            .unwrap()[..]
    );
}

#[tokio::test]
async fn pod_status_and_namespace_columns() {
    use k8s_openapi::api::core::v1::Pod;
    let env = common::env().await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p1", "finalizers": ["example.com/hold"]},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}], "nodeName": "n1"},
    }))
    .unwrap();
    let api: Api<Pod> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &pod).await.unwrap();
    api.patch_status(
        "p1",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"status": {"phase": "Running", "podIP": "10.0.0.7", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 2, "image": "x", "imageID": "", "state": {"running": {}}},
            {"name": "b", "ready": false, "restartCount": 1, "image": "y", "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        ]}})),
    )
    .await
    .unwrap();
    let path = "/api/v1/namespaces/default/pods";
    let t = table(&env, path).await;
    assert_eq!(
        column_names(&t, 0),
        ["Name", "Ready", "Status", "Restarts", "Age"]
    );
    assert_eq!(
        column_names(&t, 1),
        ["IP", "Node", "Nominated Node", "Readiness Gates"]
    );
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(
        cells[..4],
        json!(["p1", "1/2", "CrashLoopBackOff", "3"])
            .as_array()
            .unwrap()[..]
    );
    assert_eq!(
        cells[5..],
        json!(["10.0.0.7", "n1", "<none>", "<none>"])
            .as_array()
            .unwrap()[..]
    );
    // A pod being deleted (held by its finalizer) shows as Terminating.
    api.delete("p1", &Default::default()).await.unwrap();
    let t = table(&env, &format!("{path}/p1")).await;
    assert_eq!(t["rows"][0]["cells"][2], "Terminating");
    let t = table(&env, "/api/v1/namespaces").await;
    assert_eq!(column_names(&t, 0), ["Name", "Status", "Age"]);
    let default = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cells"][0] == "default")
        .unwrap();
    assert_eq!(default["cells"][1], "Active");
}

#[tokio::test]
async fn core_printer_columns() {
    use k8s_openapi::api::core::v1::{Event, Node, Secret, Service};
    let env = common::env().await;
    let c = env.client();
    let pp = PostParams::default();
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "spec": {"unschedulable": true},
    }))
    .unwrap();
    Api::<Node>::all(c.clone())
        .create(&pp, &node)
        .await
        .unwrap();
    let t = table(&env, "/api/v1/nodes").await;
    assert_eq!(
        column_names(&t, 0),
        ["Name", "Status", "Roles", "Age", "Version"]
    );
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(
        cells[..3],
        json!(["n1", "Unknown,SchedulingDisabled", "control-plane"])
            .as_array()
            .unwrap()[..]
    );

    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "selector": {"app": "a"}, "ports": [{"port": 443, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(c.clone(), "default")
        .create(&pp, &svc)
        .await
        .unwrap();
    let t = table(&env, "/api/v1/namespaces/default/services/lb").await;
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(cells[1], "LoadBalancer");
    assert_eq!(cells[3], "<pending>");
    // A LoadBalancer Service gets node ports (30000-32767), printed after each port.
    let ports = cells[4].as_str().unwrap();
    let re = regex::Regex::new(r"^443:3\d{4}/TCP,53:3\d{4}/UDP$").unwrap();
    assert!(re.is_match(ports), "{ports}");
    assert_eq!(cells[6], "app=a");

    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": "c", "tls.key": "k"},
    }))
    .unwrap();
    Api::<Secret>::namespaced(c.clone(), "default")
        .create(&pp, &secret)
        .await
        .unwrap();
    let t = table(&env, "/api/v1/namespaces/default/secrets/tls").await;
    assert_eq!(column_names(&t, 0), ["Name", "Type", "Data", "Age"]);
    assert_eq!(
        t["rows"][0]["cells"].as_array().unwrap()[1..3],
        json!(["kubernetes.io/tls", 2]).as_array().unwrap()[..]
    );

    let ev: Event = serde_json::from_value(json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Pulled", "message": "image pulled", "type": "Normal", "count": 3,
        "source": {"component": "kubelet", "host": "n1"},
    }))
    .unwrap();
    Api::<Event>::namespaced(c.clone(), "default")
        .create(&pp, &ev)
        .await
        .unwrap();
    let t = table(&env, "/api/v1/namespaces/default/events").await;
    assert_eq!(
        column_names(&t, 0),
        ["Last Seen", "Type", "Reason", "Object", "Message"]
    );
    assert_eq!(
        column_names(&t, 1),
        ["Subobject", "Source", "First Seen", "Count", "Name"]
    );
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(
        cells[1..4],
        json!(["Normal", "Pulled", "pod/p1"]).as_array().unwrap()[..]
    );
    assert_eq!(
        cells[5..7],
        json!(["kubelet, n1", "image pulled"]).as_array().unwrap()[..]
    );
    assert_eq!(cells[8..], json!([3, "e1"]).as_array().unwrap()[..]);

    // CRDs get upstream's default table: Name and the raw creation time.
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(c);
    let crd = crds.create(&pp, &widget_crd(false)).await.unwrap();
    let t = table(
        &env,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    assert_eq!(column_names(&t, 0), ["Name", "Created At"]);
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    let created = serde_json::to_value(crd.metadata.creation_timestamp.unwrap()).unwrap();
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["widgets.example.com", created])
    );
}
