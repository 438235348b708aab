//! Built-in defaulting and create-time status as kube-apiserver applies them (issue 29):
//! a Pod, a Deployment, a Service, a Job and the rest created with the defaulted fields left
//! out read back upstream's defaults (`pkg/apis/<group>/<version>/defaults.go`) and the
//! strategies' create-time status; Services get cluster IPs from 10.0.0.0/24 and node ports,
//! freed on delete; the deleted-object answers of `ReturnDeletedObject` resources.

use crate::common;
use crate::kubectl_cli;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

async fn post(env: &ctrl_envtest::Environment, path: &str, body: Value) -> (u16, Value) {
    common::raw(
        env,
        "POST",
        path,
        Some(&body.to_string()),
        "application/json",
    )
    .await
}

#[tokio::test]
async fn a_pod_reads_back_upstreams_defaults_and_pending_status() {
    let env = common::env().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}],
             "readinessProbe": {"httpGet": {"port": 80}}},
            {"name": "b", "image": "busybox:1.36", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
        ], "volumes": [{"name": "v"}, {"name": "c", "configMap": {"name": "x"}}]}});
    let (code, p) = post(&env, "/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(code, 201, "{p}");
    let spec = &p["spec"];
    for (k, v) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("schedulerName", json!("default-scheduler")),
        ("serviceAccountName", json!("default")),
        ("serviceAccount", json!("default")),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
        ("priority", json!(0)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
    ] {
        assert_eq!(spec[k], v, "spec.{k} in {p}");
    }
    let a = &spec["containers"][0];
    assert_eq!(a["imagePullPolicy"], "Always", "no tag is :latest");
    assert_eq!(a["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(a["terminationMessagePolicy"], "File");
    assert_eq!(a["resources"], json!({}));
    assert_eq!(a["ports"][0]["protocol"], "TCP");
    let probe = &a["readinessProbe"];
    assert_eq!(
        (
            &probe["timeoutSeconds"],
            &probe["periodSeconds"],
            &probe["successThreshold"],
            &probe["failureThreshold"]
        ),
        (&json!(1), &json!(10), &json!(1), &json!(3))
    );
    assert_eq!(probe["httpGet"]["path"], "/");
    assert_eq!(probe["httpGet"]["scheme"], "HTTP");
    let b = &spec["containers"][1];
    assert_eq!(b["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        b["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"}),
        "requests from limits"
    );
    assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(spec["volumes"][1]["configMap"]["defaultMode"], 420);
    let tolerations = spec["tolerations"].as_array().expect("tolerations");
    assert_eq!(tolerations.len(), 2, "{tolerations:?}");
    assert_eq!(tolerations[0]["tolerationSeconds"], 300);
    assert_eq!(
        p["status"],
        json!({"phase": "Pending", "qosClass": "Burstable"})
    );
    // Read back through the kube client: the same stored object.
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let got = pods.get("p").await.unwrap();
    assert_eq!(got.spec.unwrap().restart_policy.as_deref(), Some("Always"));
}

#[tokio::test]
async fn a_pods_qos_class_is_upstreams() {
    let env = common::env().await;
    let cases = [
        (json!({}), "BestEffort"),
        (
            json!({"limits": {"cpu": "500m", "memory": "128Mi"}}),
            "Guaranteed",
        ),
        (
            json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0.5", "memory": "128Mi"}}),
            "Guaranteed",
        ),
        (
            json!({"limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "500m"}}),
            "Burstable",
        ),
        (json!({"requests": {"memory": "1Mi"}}), "Burstable"),
        (json!({"limits": {"cpu": "1"}}), "Burstable"),
    ];
    for (i, (resources, want)) in cases.into_iter().enumerate() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("q{i}")},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}});
        let (code, p) = post(&env, "/api/v1/namespaces/default/pods", pod).await;
        assert_eq!(code, 201, "{p}");
        assert_eq!(p["status"]["qosClass"], want, "case {i}: {resources}");
    }
}

#[tokio::test]
async fn a_pods_create_status_is_reset_and_kept_by_updates() {
    let env = common::env().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"},
        "status": {"phase": "Running"}});
    let (_, p) = post(&env, "/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(
        p["status"]["phase"], "Pending",
        "PrepareForCreate resets status"
    );
    assert_eq!(p["spec"]["restartPolicy"], "Never", "given values stay");
    // An update that leaves the defaults out keeps them (defaulted again), no new generation
    // of fields: the stored spec is unchanged.
    let mut upd = p.clone();
    for k in [
        "dnsPolicy",
        "schedulerName",
        "terminationGracePeriodSeconds",
    ] {
        upd["spec"].as_object_mut().unwrap().remove(k);
    }
    let (code, u) = common::raw(
        &env,
        "PUT",
        "/api/v1/namespaces/default/pods/p",
        Some(&upd.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 200, "{u}");
    assert_eq!(u["spec"], p["spec"]);
    assert_eq!(
        u["metadata"]["resourceVersion"], p["metadata"]["resourceVersion"],
        "nothing changed"
    );
}

#[tokio::test]
async fn workloads_read_back_their_defaults() {
    let env = common::env().await;
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    let selector = json!({"matchLabels": {"app": "a"}});
    let (code, d) = post(
        &env,
        "/apis/apps/v1/namespaces/default/deployments",
        json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": selector, "template": template}}),
    )
    .await;
    assert_eq!(code, 201, "{d}");
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    let tspec = &d["spec"]["template"]["spec"];
    assert_eq!(tspec["restartPolicy"], "Always");
    assert_eq!(tspec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert!(
        tspec.get("enableServiceLinks").is_none(),
        "SetDefaults_Pod is for Pods only: {tspec}"
    );
    assert_eq!(d["status"], json!({}));

    let (_, s) = post(
        &env,
        "/apis/apps/v1/namespaces/default/statefulsets",
        json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
        "spec": {"selector": selector, "template": template, "serviceName": "s"}}),
    )
    .await;
    assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady", "{s}");
    assert_eq!(
        s["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        s["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );

    let (_, ds) = post(
        &env,
        "/apis/apps/v1/namespaces/default/daemonsets",
        json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
        "spec": {"selector": selector, "template": template}}),
    )
    .await;
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
        "{ds}"
    );

    let (_, cj) = post(&env, "/apis/batch/v1/namespaces/default/cronjobs", json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}}}}})).await;
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow", "{cj}");
    assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(cj["spec"]["failedJobsHistoryLimit"], 1);
    assert_eq!(cj["spec"]["jobTemplate"]["spec"]["backoffLimit"], 6);
}

#[tokio::test]
async fn a_job_gets_its_defaults_and_generated_selector() {
    let env = common::env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}}})).unwrap();
    let j = serde_json::to_value(jobs.create(&PostParams::default(), &job).await.unwrap()).unwrap();
    let uid = j["metadata"]["uid"].as_str().unwrap();
    let spec = &j["spec"];
    assert_eq!(
        (
            &spec["completions"],
            &spec["parallelism"],
            &spec["backoffLimit"]
        ),
        (&json!(1), &json!(1), &json!(6))
    );
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = &spec["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/job-name"], "j");
    assert_eq!(labels["controller-uid"], uid);
    assert_eq!(
        j["metadata"]["labels"], *labels,
        "the template's labels become the Job's"
    );
}

#[tokio::test]
async fn services_get_defaults_and_cluster_ips_freed_on_delete() {
    let env = common::env().await;
    let svc = |name: &str, spec: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
    let (code, s) = post(
        &env,
        "/api/v1/namespaces/default/services",
        svc(
            "a",
            json!({"selector": {"app": "a"}, "ports": [{"port": 80}]}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{s}");
    let spec = &s["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(
        spec["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    let ip = spec["clusterIP"].as_str().unwrap().to_string();
    assert!(ip.starts_with("10.0.0.") && ip != "10.0.0.1", "{ip}");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    assert_eq!(s["status"], json!({"loadBalancer": {}}));
    // The creator owns the defaulted fields, not what the storage allocated (upstream's field
    // manager runs between defaulting and the REST storage).
    let owned = &s["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(
        owned.get("f:type").is_some() && owned.get("f:sessionAffinity").is_some(),
        "{owned}"
    );
    assert!(
        owned.get("f:clusterIP").is_none() && owned.get("f:ipFamilies").is_none(),
        "{owned}"
    );

    // Asking for a taken address, or one outside the range, is a 422.
    for (name, want) in [("b", ip.as_str()), ("c", "10.0.0.1"), ("d", "10.9.0.5")] {
        let (code, e) = post(
            &env,
            "/api/v1/namespaces/default/services",
            svc(name, json!({"clusterIP": want, "ports": [{"port": 80}]})),
        )
        .await;
        assert_eq!(code, 422, "{name}: {e}");
    }
    // An update leaving the allocated values out keeps them.
    let mut upd = s.clone();
    upd["spec"]
        .as_object_mut()
        .unwrap()
        .retain(|k, _| k == "ports" || k == "selector");
    upd["metadata"]["labels"] = json!({"x": "y"});
    let (code, u) = common::raw(
        &env,
        "PUT",
        "/api/v1/namespaces/default/services/a",
        Some(&upd.to_string()),
        "application/json",
    )
    .await;
    assert_eq!(code, 200, "{u}");
    assert_eq!(u["spec"], s["spec"]);

    // A Service delete answers with the Service (ReturnDeletedObject); its address is free again.
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let deleted = services
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    let gone = deleted.left().expect("the deleted Service, not a Status");
    assert_eq!(gone.metadata.name.as_deref(), Some("a"));
    let (code, again) = post(
        &env,
        "/api/v1/namespaces/default/services",
        svc("b", json!({"clusterIP": ip, "ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(code, 201, "freed on delete: {again}");
}

#[tokio::test]
async fn node_port_and_headless_services() {
    let env = common::env().await;
    let svc = |name: &str, spec: Value| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
    let (_, np) = post(&env, "/api/v1/namespaces/default/services", svc("np", json!({"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443, "nodePort": 30443}]}))).await;
    let port = np["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .expect("allocated node port");
    assert!((30000..=32767).contains(&port), "{np}");
    assert_eq!(np["spec"]["ports"][1]["nodePort"], 30443);
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(np["spec"]["allocateLoadBalancerNodePorts"], true);
    let (code, dup) = post(
        &env,
        "/api/v1/namespaces/default/services",
        svc(
            "dup",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30443}]}),
        ),
    )
    .await;
    assert_eq!(code, 422, "{dup}");
    let (_, h) = post(
        &env,
        "/api/v1/namespaces/default/services",
        svc("h", json!({"clusterIP": "None", "ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(h["spec"]["clusterIPs"], json!(["None"]), "{h}");
    assert_eq!(
        h["spec"]["ipFamilyPolicy"], "RequireDualStack",
        "headless without selector"
    );
    let (_, x) = post(
        &env,
        "/api/v1/namespaces/default/services",
        svc(
            "x",
            json!({"type": "ExternalName", "externalName": "example.com"}),
        ),
    )
    .await;
    assert!(x["spec"].get("clusterIP").is_none(), "{x}");
}

#[tokio::test]
async fn deletes_answer_the_object_where_upstream_returns_it() {
    let env = common::env().await;
    let (_, _) = post(
        &env,
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}),
    )
    .await;
    let (code, body) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/sa",
        None,
        "application/json",
    )
    .await;
    assert_eq!(
        (code, &body["kind"]),
        (200, &json!("ServiceAccount")),
        "{body}"
    );
    let (_, _) = post(
        &env,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    )
    .await;
    let (code, body) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/c",
        None,
        "application/json",
    )
    .await;
    assert_eq!(
        (code, &body["kind"], &body["status"]),
        (200, &json!("Status"), &json!("Success")),
        "{body}"
    );
}

#[tokio::test]
async fn every_cluster_has_the_kubernetes_service_pointing_at_the_server() {
    let env = common::env().await;
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let k = serde_json::to_value(services.get("kubernetes").await.unwrap()).unwrap();
    assert_eq!(k["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(
        k["spec"]["ports"][0],
        json!({"name": "https", "port": 443, "protocol": "TCP", "targetPort": env.addr().port()})
    );
    let (code, slice) = common::raw(
        &env,
        "GET",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
        None,
        "",
    )
    .await;
    assert_eq!(code, 200, "{slice}");
    assert_eq!(slice["endpoints"][0]["addresses"], json!(["127.0.0.1"]));
    assert_eq!(slice["ports"][0]["port"], env.addr().port());
    let (code, ep) = common::raw(
        &env,
        "GET",
        "/api/v1/namespaces/default/endpoints/kubernetes",
        None,
        "",
    )
    .await;
    assert_eq!(
        (code, &ep["subsets"][0]["ports"][0]["port"]),
        (200, &json!(env.addr().port())),
        "{ep}"
    );
}

#[tokio::test]
async fn other_groups_defaults() {
    let env = common::env().await;
    let (_, rb) = post(&env, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
        "roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]})).await;
    assert_eq!(
        rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io",
        "{rb}"
    );
    assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert!(rb["subjects"][1].get("apiGroup").is_none());
    let (_, sc) = post(&env, "/apis/storage.k8s.io/v1/storageclasses", json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "x"})).await;
    assert_eq!(
        (&sc["reclaimPolicy"], &sc["volumeBindingMode"]),
        (&json!("Delete"), &json!("Immediate")),
        "{sc}"
    );
    let (_, np) = post(
        &env,
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"},
        "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}),
    )
    .await;
    assert_eq!(
        np["spec"]["policyTypes"],
        json!(["Ingress", "Egress"]),
        "{np}"
    );
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    let (_, pvc) = post(
        &env,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(pvc["status"], json!({"phase": "Pending"}), "{pvc}");
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
}

#[tokio::test]
async fn kubectl_reads_back_the_defaults_and_a_service_delete_returns_it() {
    let env = common::env().await;
    let Some(k) = kubectl_cli::Kubectl::new(&env) else {
        return;
    };
    let manifest = k.file("all.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nginx\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels: {app: d}\n  template:\n    metadata:\n      labels: {app: d}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  selector: {app: d}\n  ports:\n  - port: 80\n");
    let out = k
        .run(&["create", "-f", manifest.to_str().unwrap(), "-o", "json"])
        .await;
    assert!(out.ok, "{}", out.stderr);
    let items: Vec<Value> = serde_json::Deserializer::from_str(&out.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("the created objects");
    assert_eq!(items.len(), 3, "{}", out.stdout);
    assert_eq!(items[0]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        items[0]["status"]["phase"], "Pending",
        "from the create response"
    );
    assert_eq!(items[1]["spec"]["replicas"], 1);
    assert_eq!(items[1]["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(items[1]["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(items[2]["spec"]["type"], "ClusterIP");
    let ip = items[2]["spec"]["clusterIP"].as_str().expect("allocated");
    assert!(ip.starts_with("10.0.0."), "{ip}");
    let out = k
        .run(&[
            "get",
            "deployment",
            "d",
            "-o",
            "jsonpath={.spec.progressDeadlineSeconds}",
        ])
        .await;
    assert_eq!(out.stdout, "600", "{}", out.stderr);
    let out = k
        .run(&["delete", "service", "s", "--wait=false", "-v=8"])
        .await;
    assert!(out.ok, "{}", out.stderr);
    let answer = out
        .stderr
        .lines()
        .rfind(|l| l.contains("Response Body"))
        .unwrap_or("");
    assert!(
        answer.contains(r#"\"kind\":\"Service\""#),
        "the DELETE answered with the Service: {answer}"
    );
}
