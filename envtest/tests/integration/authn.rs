//! Authentication against ctrl-envtest: anonymous and bad credentials (401), the admin user,
//! users added at run time and their kubeconfig, ServiceAccount tokens from the TokenRequest
//! subresource, the review APIs (TokenReview, SubjectAccessReview, SelfSubjectReview,
//! SelfSubjectAccessReview) — and the real kubectl: `create token`, a Forbidden with upstream's
//! message, `auth can-i`, `auth can-i --list`, `auth whoami`, `--as`.

use crate::common;
use crate::kubectl_cli;
use crate::webhook_server;

use common::status_of;
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest, TokenReview};
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SubjectAccessReview};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

fn client(cfg: kube::Config) -> Client {
    Client::try_from(cfg).expect("client")
}

/// A request with `headers` is a 401 `Unauthorized`.
async fn unauthorized(env: &ctrl_envtest::Environment, headers: &[(&str, &str)]) {
    let (code, _, body) = common::raw_anonymous(
        env,
        "GET",
        "/api/v1/namespaces",
        None,
        "application/json",
        headers,
    )
    .await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(code, 401, "{headers:?}");
    assert_eq!(v["reason"], "Unauthorized");
    assert_eq!(v["message"], "Unauthorized");
}

#[tokio::test]
async fn anonymous_and_unknown_credentials_are_unauthorized() {
    let env = common::env().await;
    for headers in [
        &[][..],
        &[("Authorization", "Bearer wrong")][..],
        &[("Authorization", "Basic YWRtaW46YWRtaW4=")][..],
    ] {
        unauthorized(&env, headers).await;
    }
    // Two spaces: upstream's bearer authenticator splits on single spaces and reads an empty
    // token, so the admin's token after them is not accepted.
    let two_spaces = format!("Bearer  {}", env.admin_token());
    unauthorized(&env, &[("Authorization", two_spaces.as_str())]).await;
    let (code, _, _) = common::raw_full(
        &env,
        "DELETE",
        "/api/v1/namespaces/default",
        None,
        "application/json",
        &[("Authorization", &two_spaces)],
    )
    .await;
    assert_eq!(code, 401, "a delete with it deletes nothing");
    let (code, ns) = common::raw(&env, "GET", "/api/v1/namespaces/default", None, "").await;
    assert_eq!(
        (code, &ns["status"]["phase"]),
        (200, &serde_json::json!("Active"))
    );
    // A write without credentials changes nothing.
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"anon"}}"#;
    let (code, _, _) = common::raw_anonymous(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(cm),
        "application/json",
        &[],
    )
    .await;
    assert_eq!(code, 401);
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(env.client());
    assert!(cms.get_opt("anon").await.unwrap().is_none());
    // Health and version stay public, as upstream's system:public-info-viewer.
    for p in ["/healthz", "/readyz", "/livez", "/version"] {
        let (code, _, _) =
            common::raw_anonymous(&env, "GET", p, None, "application/json", &[]).await;
        assert_eq!(code, 200, "{p}");
    }
}

#[tokio::test]
async fn the_admin_is_in_system_masters_and_added_users_are_who_they_say() {
    let env = common::env().await;
    let whoami = |c: Client| async move {
        let api: Api<SelfSubjectReview> = Api::all(c);
        let r = api
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .expect("whoami");
        r.status.and_then(|s| s.user_info).expect("userInfo")
    };
    let admin = whoami(env.client()).await;
    assert_eq!(admin.username.as_deref(), Some("admin"));
    assert_eq!(
        admin.groups,
        Some(vec![
            "system:masters".to_string(),
            "system:authenticated".into()
        ])
    );
    let cfg = env.add_user("alice", &["devs"]);
    let alice = whoami(client(cfg.clone())).await;
    assert_eq!(alice.username.as_deref(), Some("alice"));
    assert_eq!(
        alice.groups,
        Some(vec!["devs".to_string(), "system:authenticated".into()])
    );

    // The user's kubeconfig file authenticates the same way.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alice.kubeconfig");
    env.write_user_kubeconfig(&cfg, &path).unwrap();
    let kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    let from_file = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        whoami(client(from_file)).await.username.as_deref(),
        Some("alice")
    );
}

async fn service_account(admin: &Client, name: &str) -> ServiceAccount {
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<ServiceAccount>::default_namespaced(admin.clone())
        .create(&PostParams::default(), &sa)
        .await
        .unwrap()
}

async fn token(admin: &Client, name: &str, spec: serde_json::Value) -> Result<String, kube::Error> {
    let sas: Api<ServiceAccount> = Api::default_namespaced(admin.clone());
    let tr: TokenRequest = serde_json::from_value(json!({"spec": spec})).unwrap();
    let out = sas
        .create_token_request(name, &PostParams::default(), &tr)
        .await?;
    Ok(out.status.expect("status").token)
}

fn as_token(env: &ctrl_envtest::Environment, token: &str) -> Client {
    let mut cfg = env.config();
    cfg.auth_info.token = Some(token.to_string().into());
    client(cfg)
}

#[tokio::test]
async fn service_account_tokens_from_token_requests() {
    let env = common::env().await;
    let admin = env.client();
    let sa = service_account(&admin, "robot").await;
    let t = token(&admin, "robot", json!({})).await.unwrap();
    assert_eq!(t.split('.').count(), 3, "a JWT");
    let pods: Api<Pod> = Api::default_namespaced(as_token(&env, &t));
    let s = status_of(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        r#"pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default""#
    );

    let rb: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "robot-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}))
    .unwrap();
    Api::<RoleBinding>::default_namespaced(admin.clone())
        .create(&PostParams::default(), &rb)
        .await
        .unwrap();
    pods.list(&ListParams::default())
        .await
        .expect("allowed after the RoleBinding");

    // TokenReview and SubjectAccessReview, as a secure metrics endpoint asks them.
    let review: TokenReview = serde_json::from_value(json!({"spec": {"token": t}})).unwrap();
    let r = Api::<TokenReview>::all(admin.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let st = r.status.unwrap();
    assert_eq!(st.authenticated, Some(true));
    let u = st.user.unwrap();
    assert_eq!(
        u.username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    assert_eq!(u.uid, sa.metadata.uid);
    assert_eq!(
        u.groups,
        Some(vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:default".into(),
            "system:authenticated".into()
        ])
    );
    let sar = |verb: &str, path: &str| -> SubjectAccessReview {
        serde_json::from_value(json!({"spec": {"user": "system:serviceaccount:default:robot", "groups": ["system:serviceaccounts", "system:authenticated"],
            "nonResourceAttributes": {"verb": verb, "path": path}}})).unwrap()
    };
    let sars: Api<SubjectAccessReview> = Api::all(admin.clone());
    assert!(
        !sars
            .create(&PostParams::default(), &sar("get", "/metrics"))
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );
    assert!(
        sars.create(&PostParams::default(), &sar("get", "/healthz"))
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );

    // A deleted ServiceAccount's tokens stop working.
    Api::<ServiceAccount>::default_namespaced(admin.clone())
        .delete("robot", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        status_of(pods.list(&ListParams::default()).await.unwrap_err()).code,
        401
    );
    let r = Api::<TokenReview>::all(admin)
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    assert_eq!(r.status.unwrap().authenticated, None);
}

#[tokio::test]
async fn token_requests_are_validated() {
    let env = common::env().await;
    let admin = env.client();
    let s = status_of(token(&admin, "nobody", json!({})).await.unwrap_err());
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, r#"serviceaccounts "nobody" not found"#)
    );
    service_account(&admin, "robot").await;
    let s = status_of(
        token(&admin, "robot", json!({"expirationSeconds": 60}))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 422);
    assert!(s.message.contains("spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"), "{}", s.message);
    // A token for another audience is not one this server accepts.
    let t = token(
        &admin,
        "robot",
        json!({"audiences": ["vault"], "expirationSeconds": 600}),
    )
    .await
    .unwrap();
    let s = status_of(
        Api::<Pod>::default_namespaced(as_token(&env, &t))
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 401);
    // Asking for a token is itself authorized.
    let alice = client(env.add_user("alice", &[]));
    let s = status_of(token(&alice, "robot", json!({})).await.unwrap_err());
    assert_eq!(
        s.message,
        r#"serviceaccounts "robot" is forbidden: User "alice" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default""#
    );
}

#[tokio::test]
async fn self_subject_access_reviews_answer_can_i() {
    let env = common::env().await;
    let alice = client(env.add_user("alice", &[]));
    let can_i = |verb: &str, resource: &str| -> SelfSubjectAccessReview {
        serde_json::from_value(json!({"spec": {"resourceAttributes": {"namespace": "default", "verb": verb, "resource": resource}}})).unwrap()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(alice);
    let r = api
        .create(&PostParams::default(), &can_i("list", "pods"))
        .await
        .unwrap();
    assert!(!r.status.unwrap().allowed);
    let r = Api::<SelfSubjectAccessReview>::all(env.client())
        .create(&PostParams::default(), &can_i("list", "pods"))
        .await
        .unwrap();
    assert!(r.status.unwrap().allowed);
}

#[tokio::test]
async fn kubectl_service_account_token_can_i_whoami_and_as() {
    let env = common::env().await;
    let Some(k) = kubectl_cli::Kubectl::new(&env) else {
        return;
    };
    let out = k.run(&["create", "serviceaccount", "robot"]).await;
    assert!(out.ok, "{out:?}");
    let out = k.run(&["create", "token", "robot"]).await;
    assert!(out.ok, "{out:?}");
    let t = out.stdout.trim().to_string();
    let tok = token_kubeconfig(&env, &k, &t);
    let out = k.run(&[&tok, "get", "pods"]).await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods" in API group "" in the namespace "default""#),
        "{out:?}"
    );
    let out = k.run(&[&tok, "auth", "can-i", "list", "pods"]).await;
    assert_eq!(out.stdout.trim(), "no", "{out:?}");
    let rb = k.file("rb.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: robot-view\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\nsubjects:\n- kind: ServiceAccount\n  name: robot\n  namespace: default\n");
    let out = k.run(&["apply", "-f", rb.to_str().unwrap()]).await;
    assert!(out.ok, "{out:?}");
    let out = k.run(&[&tok, "get", "pods"]).await;
    assert!(
        out.ok
            && out
                .stderr
                .contains("No resources found in default namespace."),
        "{out:?}"
    );
    let out = k.run(&[&tok, "auth", "can-i", "list", "pods"]).await;
    assert_eq!(out.stdout.trim(), "yes", "{out:?}");
    let out = k.run(&[&tok, "auth", "can-i", "create", "pods"]).await;
    assert_eq!(out.stdout.trim(), "no", "{out:?}");
    let out = k.run(&[&tok, "auth", "can-i", "--list"]).await;
    assert!(
        out.ok
            && out.stdout.contains("pods")
            && out
                .stdout
                .contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{out:?}"
    );
    let out = k.run(&[&tok, "auth", "whoami"]).await;
    assert!(
        out.ok
            && out.stdout.contains("system:serviceaccount:default:robot")
            && out.stdout.contains("system:serviceaccounts:default"),
        "{out:?}"
    );
    let out = k.run(&["auth", "whoami"]).await;
    assert!(
        out.ok && out.stdout.contains("admin") && out.stdout.contains("system:masters"),
        "{out:?}"
    );
    // The admin impersonates: as the ServiceAccount it may list pods, as bob it may not.
    let out = k
        .run(&[
            "--as=system:serviceaccount:default:robot",
            "auth",
            "can-i",
            "list",
            "pods",
        ])
        .await;
    assert_eq!(out.stdout.trim(), "yes", "{out:?}");
    let out = k.run(&["--as=bob", "--as-group=devs", "get", "pods"]).await;
    assert!(out.stderr.contains(r#"pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default""#), "{out:?}");
    // A restricted user may not impersonate.
    let out = k.run(&[&tok, "--as=bob", "get", "pods"]).await;
    assert!(out.stderr.contains(r#"users "bob" is forbidden: User "system:serviceaccount:default:robot" cannot impersonate resource "users" in API group "" at the cluster scope"#), "{out:?}");
}

/// kubectl's RBAC generators send protobuf bodies: each is decoded into the object a JSON body
/// would give, and the grants they make take effect for a ServiceAccount's token.
#[tokio::test]
async fn kubectl_create_role_and_bindings_grant_a_service_account() {
    let env = common::env().await;
    let Some(k) = kubectl_cli::Kubectl::new(&env) else {
        return;
    };
    let run = |args: &'static [&'static str]| k.run(args);
    for args in [
        &["create", "serviceaccount", "reader"][..],
        &[
            "create",
            "role",
            "pod-reader",
            "--verb=get,list",
            "--resource=pods",
        ],
        &[
            "create",
            "rolebinding",
            "read-pods",
            "--role=pod-reader",
            "--serviceaccount=default:reader",
        ],
        &[
            "create",
            "clusterrole",
            "node-reader",
            "--verb=list",
            "--resource=nodes",
        ],
        &[
            "create",
            "clusterrolebinding",
            "read-nodes",
            "--clusterrole=node-reader",
            "--serviceaccount=default:reader",
        ],
        &[
            "create",
            "clusterrole",
            "aggregate",
            "--aggregation-rule=team=a",
        ],
    ] {
        let out = run(args).await;
        assert!(out.ok, "{args:?}: {out:?}");
    }
    let role = Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(env.client(), "default")
        .get("pod-reader")
        .await
        .unwrap();
    let rule = &role.rules.unwrap()[0];
    assert_eq!(rule.verbs, ["get", "list"]);
    assert_eq!(rule.resources.as_deref(), Some(&["pods".to_string()][..]));
    let binding = Api::<RoleBinding>::namespaced(env.client(), "default")
        .get("read-pods")
        .await
        .unwrap();
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(binding.subjects.unwrap()[0].name, "reader");
    let agg = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client())
        .get("aggregate")
        .await
        .unwrap();
    let sel = &agg
        .aggregation_rule
        .unwrap()
        .cluster_role_selectors
        .unwrap()[0];
    assert_eq!(sel.match_labels.as_ref().unwrap()["team"], "a");
    let out = k.run(&["create", "token", "reader"]).await;
    let tok = token_kubeconfig(&env, &k, out.stdout.trim());
    let out = k.run(&[&tok, "get", "pods"]).await;
    assert!(out.ok, "{out:?}");
    let out = k.run(&[&tok, "get", "nodes"]).await;
    assert!(out.ok, "{out:?}");
    let out = k.run(&[&tok, "get", "secrets"]).await;
    assert!(out.stderr.contains(r#"secrets is forbidden: User "system:serviceaccount:default:reader" cannot list resource "secrets""#), "{out:?}");
}

/// A user name and groups, as an AdmissionReview's `userInfo` names them.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<String>)>>>;

/// Records who each admission request says is writing.
struct Who(Seen);

#[async_trait::async_trait]
impl ctrl_runtime::webhook::admission::Handler for Who {
    async fn handle(
        &self,
        req: &ctrl_runtime::webhook::admission::Request,
    ) -> ctrl_runtime::webhook::admission::Response {
        let u = &req.user_info;
        let entry = (
            u.username.clone().unwrap_or_default(),
            u.groups.clone().unwrap_or_default(),
        );
        self.0.lock().unwrap().push(entry);
        ctrl_runtime::webhook::admission::Response::allowed("")
    }
}

#[tokio::test]
async fn admission_webhooks_are_told_who_writes() {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    use k8s_openapi::api::core::v1::ConfigMap;
    let seen = Seen::default();
    let who = Who(seen.clone());
    let hook = webhook_server::start(|s| {
        s.register("/who", ctrl_runtime::webhook::admission::Webhook::new(who))
            .unwrap();
    })
    .await;
    let env = common::env().await;
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "who"},
        "webhooks": [{"name": "who.ctrl.dev", "clientConfig": {"url": format!("{}/who", hook.url), "caBundle": hook.ca_bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}],
    }))
    .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(env.client())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    let admin: Api<ConfigMap> = Api::default_namespaced(env.client());
    admin
        .create(&PostParams::default(), &common::cm("by-admin", &[]))
        .await
        .unwrap();
    let rb: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "alice-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "name": "alice"}]}))
    .unwrap();
    Api::<RoleBinding>::default_namespaced(env.client())
        .create(&PostParams::default(), &rb)
        .await
        .unwrap();
    let alice: Api<ConfigMap> = Api::default_namespaced(client(env.add_user("alice", &["devs"])));
    alice
        .create(&PostParams::default(), &common::cm("by-alice", &[]))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (
                "admin".to_string(),
                vec!["system:masters".to_string(), "system:authenticated".into()]
            ),
            (
                "alice".to_string(),
                vec!["devs".to_string(), "system:authenticated".into()]
            ),
        ]
    );
}

/// `--kubeconfig=<file>` of a kubeconfig that authenticates with `token` alone. (`--token` on
/// the admin kubeconfig would not do: it carries a client certificate, which kube-apiserver's
/// authenticators ask before any token, as ctrl-envtest's do.)
fn token_kubeconfig(
    env: &ctrl_envtest::Environment,
    k: &kubectl_cli::Kubectl,
    token: &str,
) -> String {
    let path = k.file(&format!("token-{}", token.len()), "");
    let mut cfg = env.config();
    cfg.auth_info.token = Some(token.to_string().into());
    env.write_user_kubeconfig(&cfg, &path).expect("kubeconfig");
    format!("--kubeconfig={}", path.display())
}
