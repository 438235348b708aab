//! The public entry point: [`Environment::builder`] configures and starts an embedded API
//! server on 127.0.0.1 (built-in types, namespaces `default`, `kube-system`, `kube-public`,
//! `kube-node-lease`, the `default/kubernetes` Service pointing at the server, and the CRDs
//! given), and [`Environment`] hands out a `kube::Client`, the URL
//! and a kubeconfig. Every environment is independent, so each test can start its own.
//!
//! The top layer: it builds every layer below — the store, the registry with the built-in
//! types, the shared `State` with the controllers registered as write observers — seeds the
//! namespaces, CRDs and webhook configurations through the registry, and starts the server and
//! the simulated kubelet.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::{Auth, Authorization};
use crate::endpoints::{Settings, State};
use crate::faults::Faults;
use crate::registry::Registry;
use crate::registry::builtins::builtin_types;
use crate::registry::context::Apiserver;
use crate::registry::hooks::create_object;
use crate::storage::Store;
use crate::{controllers, server};

/// Why an environment could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding the port or reading a CRD file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or address concerned.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A CRD document could not be parsed.
    #[error("cannot parse CRD from {path}: {message}")]
    Parse {
        /// Where the document came from.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// The server rejected a CRD.
    #[error("CRD {name} rejected: {message}")]
    Crd {
        /// The CRD's name.
        name: String,
        /// The Status message.
        message: String,
    },
    /// Building the client failed.
    #[error("client error: {0}")]
    Client(#[from] kube::Error),
}

/// Configures an [`Environment`].
#[derive(Debug, Clone)]
pub struct EnvironmentBuilder {
    crd_paths: Vec<PathBuf>,
    crds: Vec<Value>,
    crd_texts: Vec<String>,
    port: u16,
    history: usize,
    watch_buffer: usize,
    token: Option<String>,
    bookmark_interval: Duration,
    max_watch: Duration,
    header_read_timeout: Duration,
    stamp_traceparent: bool,
    controllers: bool,
    webhooks: Vec<crate::admission::WebhookConfiguration>,
    simulate_pods: bool,
    simulate_workloads: Option<bool>,
    kubelet: controllers::kubelet::Config,
    authorization: Authorization,
}

impl Default for EnvironmentBuilder {
    fn default() -> Self {
        EnvironmentBuilder {
            crd_paths: Vec::new(),
            crds: Vec::new(),
            crd_texts: Vec::new(),
            port: 0,
            history: 20_000,
            watch_buffer: 4096,
            token: None,
            bookmark_interval: Duration::from_secs(60),
            max_watch: Duration::from_secs(1800),
            header_read_timeout: ctrl_net::DEFAULT_HEADER_READ_TIMEOUT,
            stamp_traceparent: false,
            controllers: true,
            webhooks: Vec::new(),
            simulate_pods: false,
            simulate_workloads: None,
            kubelet: controllers::kubelet::Config::default(),
            authorization: Authorization::Rbac,
        }
    }
}

impl EnvironmentBuilder {
    /// Installs the CRDs of a YAML/JSON file (several documents allowed) or of every `.yaml`,
    /// `.yml` and `.json` file in a directory (like envtest's `CRDDirectoryPaths`).
    pub fn crd_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.crd_paths.push(path.into());
        self
    }

    /// Alias of [`crd_path`](Self::crd_path) for a directory.
    pub fn crd_dir(self, dir: impl Into<PathBuf>) -> Self {
        self.crd_path(dir)
    }

    /// Installs a CRD object (e.g. `MyKind::crd()` from kube's `CustomResource` derive).
    pub fn crd(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds
            .push(serde_json::to_value(crd).unwrap_or_default());
        self
    }

    /// Installs the CRDs of a YAML or JSON text (several `---` documents allowed; documents of
    /// other kinds are skipped).
    pub fn crd_yaml(mut self, text: impl Into<String>) -> Self {
        self.crd_texts.push(text.into());
        self
    }

    /// Listens on this port (0, the default, lets the OS choose).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How many change events each resource keeps for watch resume and paginated lists
    /// (default 20,000). Older starting points get 410 Expired.
    pub fn history_window(mut self, events: usize) -> Self {
        self.history = events;
        self
    }

    /// How many events a watcher may fall behind before it is dropped (default 4,096).
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events;
        self
    }

    /// Webhook calls to port `port` of Service `namespace/name` (a `clientConfig.service`,
    /// called at `https://<name>.<namespace>.svc:<port>` and verified against that name, as
    /// kube-apiserver calls it) connect to `addr`: where the test runs the operator. There is
    /// no cluster DNS, so a Service without a route cannot be called. Process-wide.
    pub fn service_route(
        self,
        namespace: &str,
        name: &str,
        port: u16,
        addr: std::net::SocketAddr,
    ) -> Self {
        crate::webhook_client::add_route(namespace, name, port, addr);
        self
    }

    /// The admin user's bearer token (default: a random one). Every request needs a token the
    /// server knows (the client and kubeconfig carry the admin's: user `admin` in
    /// `system:masters`); without one it is a 401.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How often watches with `allowWatchBookmarks=true` get a BOOKMARK (default 60 s).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// The longest a watch stays open without `timeoutSeconds` (default 30 min).
    pub fn max_watch_duration(mut self, d: Duration) -> Self {
        self.max_watch = d;
        self
    }

    /// How long a connection may take to send a request head, and may sit idle between
    /// requests, before the server closes it (default 32 s, kube-apiserver's
    /// `ReadHeaderTimeout`). Watches and requests in flight are not affected.
    pub fn header_read_timeout(mut self, d: Duration) -> Self {
        self.header_read_timeout = d;
        self
    }

    /// Stamps the W3C `traceparent` header of a create or update on the object it writes,
    /// as the annotation `tracing.k8s.io/traceparent` (KEP-5915), so a traced client's
    /// context reaches the controllers that reconcile the object (default off; the request
    /// log records the header either way, [`RequestRecord::traceparent`](crate::faults::RequestRecord::traceparent)).
    pub fn stamp_traceparent(mut self, on: bool) -> Self {
        self.stamp_traceparent = on;
        self
    }

    /// Runs the garbage collector (ownerReferences; Background, Foreground, Orphan),
    /// namespace finalization (a deleted namespace's objects are deleted, then it goes) and
    /// ClusterRole aggregation — on by default. `false` gives Go envtest's behaviour: no
    /// controllers (the workload controllers neither), deleted namespaces stay `Terminating`,
    /// `orphan`/`foregroundDeletion` finalizers stay.
    pub fn controllers(mut self, on: bool) -> Self {
        self.controllers = on;
        self
    }

    /// Runs the simulated kubelet (off by default, as in Go's envtest): a Node named
    /// [`SIMULATED_NODE`](crate::SIMULATED_NODE) exists (more with [`nodes`](Self::nodes));
    /// each Pod created is bound to one in one write (`spec.nodeName`, phase `Pending`,
    /// `PodScheduled`) and after
    /// [`pod_start_delay`](Self::pod_start_delay) is `Running` with `Ready`,
    /// `ContainersReady`, `Initialized`, `podIP`, `hostIP`, `startTime` and container
    /// statuses. Deleting a bound Pod is graceful, as upstream: `deletionTimestamp` and
    /// `deletionGracePeriodSeconds` are set (grace from the DeleteOptions, else
    /// `spec.terminationGracePeriodSeconds`, else 30 s; 0 or an unbound Pod goes at once) and
    /// the Pod is removed after min(grace, [`pod_stop_delay`](Self::pod_stop_delay)):
    /// containers stop quickly. Pods whose `restartPolicy` is not `Always` run for
    /// [`pod_run_time`](Self::pod_run_time), then succeed (or fail). Turns the
    /// [workload controllers](Self::simulate_workloads) on too, unless said otherwise.
    pub fn simulate_pods(mut self, on: bool) -> Self {
        self.simulate_pods = on;
        self
    }

    /// With [`simulate_pods`](Self::simulate_pods): how long a bound Pod stays `Pending`
    /// before it runs (default 500 ms).
    pub fn pod_start_delay(mut self, d: Duration) -> Self {
        self.kubelet.start_delay = d;
        self
    }

    /// With [`simulate_pods`](Self::simulate_pods): the longest a deleted Pod's containers
    /// take to stop; the Pod goes after min(its grace period, this) (default 1 s).
    pub fn pod_stop_delay(mut self, d: Duration) -> Self {
        self.kubelet.stop_delay = d;
        self
    }

    /// Runs kube-controller-manager's workload controllers (default: on when
    /// [`simulate_pods`](Self::simulate_pods) is, and only with
    /// [`controllers`](Self::controllers) on): Deployments roll out through ReplicaSets,
    /// ReplicaSets and Jobs make Pods (which the simulated kubelet runs), with upstream's
    /// status fields and conditions, and every namespace gets its `default` ServiceAccount and
    /// `kube-root-ca.crt` ConfigMap. docs/envtest.md says what each controller does and does
    /// not simulate.
    pub fn simulate_workloads(mut self, on: bool) -> Self {
        self.simulate_workloads = Some(on);
        self
    }

    /// With [`simulate_pods`](Self::simulate_pods): how many Nodes the kubelet runs (default
    /// 1: [`SIMULATED_NODE`](crate::SIMULATED_NODE); then `envtest-node-2`, ...). Pods are
    /// spread over them in turn unless they name one.
    pub fn nodes(mut self, n: usize) -> Self {
        self.kubelet.nodes = n.max(1);
        self
    }

    /// With [`simulate_pods`](Self::simulate_pods): how long a Pod that runs to completion
    /// (`restartPolicy` `Never` or `OnFailure`, as Job Pods) runs before its containers exit
    /// (default 1 s; a Pod's `envtest.ctrl/run-seconds` annotation overrides it, and its
    /// `envtest.ctrl/exit-code` annotation makes it fail).
    pub fn pod_run_time(mut self, d: Duration) -> Self {
        self.kubelet.run_time = d;
        self
    }

    /// How requests are authorized: [`Authorization::Rbac`] (the default, as Go's envtest:
    /// Roles, ClusterRoles and their bindings decide; the admin is in `system:masters`) or
    /// [`Authorization::AlwaysAllow`] (every authenticated request may do anything).
    pub fn authorization(mut self, mode: Authorization) -> Self {
        self.authorization = mode;
        self
    }

    /// Installs admission webhook configurations at start (as if created through the
    /// API): writes of matching resources then call the webhooks over TLS; see
    /// [`WebhookConfiguration`](crate::WebhookConfiguration).
    pub fn webhooks(
        mut self,
        configs: impl IntoIterator<Item = impl Into<crate::admission::WebhookConfiguration>>,
    ) -> Self {
        self.webhooks.extend(configs.into_iter().map(Into::into));
        self
    }

    /// Every CRD the builder was given: objects, files and directories, YAML texts.
    fn all_crds(&self) -> Result<Vec<Value>, Error> {
        let mut crds = self.crds.clone();
        for p in &self.crd_paths {
            crds.extend(read_crds(p)?);
        }
        for t in &self.crd_texts {
            crds.extend(parse_crds(t, "crd_yaml")?);
        }
        Ok(crds)
    }

    /// Starts the server and installs the CRDs.
    pub async fn start(self) -> Result<Environment, Error> {
        let crds = self.all_crds()?;
        let (listener, addr) = bind(self.port)?;
        let tls = crate::tls::Tls::self_signed().map_err(|message| Error::Parse {
            path: "serving certificate".into(),
            message,
        })?;
        let workloads = self.controllers && self.simulate_workloads.unwrap_or(self.simulate_pods);
        let store = Arc::new(Store::new(self.history, self.watch_buffer));
        let api = Arc::new(Apiserver {
            registry: Registry::new(builtin_types()),
            store: store.clone(),
            kubelet: self.simulate_pods.then_some(self.kubelet),
            observers: controllers::observers(
                self.controllers,
                workloads.then_some(tls.cert_pem.as_str()),
            ),
            allocations: Default::default(),
        });
        let token = self
            .token
            .clone()
            .unwrap_or_else(crate::auth::authn::random_token);
        let auth = Arc::new(Auth::new(token, store.clone(), self.authorization));
        let state = Arc::new(State {
            api: api.clone(),
            auth: auth.clone(),
            admission: crate::admission::Configured::new(&store),
            faults: Faults::new(store),
            settings: Settings {
                bookmark_interval: self.bookmark_interval,
                max_watch: self.max_watch,
                header_read_timeout: self.header_read_timeout,
                stamp_traceparent: self.stamp_traceparent,
            },
            shutdown: CancellationToken::new(),
            addr,
        });
        seed(&api, crds)?;
        seed_rbac(&api);
        seed_kubernetes_service(&api, addr.port());
        crate::admission::seed(&api, &self.webhooks).map_err(|message| Error::Parse {
            path: "webhooks".into(),
            message,
        })?;
        if let Some(cfg) = api.kubelet {
            controllers::kubelet::start(&api, state.shutdown.clone(), cfg, state.faults.clone());
        }
        if workloads {
            controllers::start_workloads(&api, &state.shutdown);
        }
        let ca_pem = tls.cert_pem.clone();
        let tls = Arc::new(tls);
        let admin_cert = tls
            .issue_client(crate::auth::ADMIN_USER, &[crate::auth::MASTERS])
            .map_err(|message| Error::Parse {
                path: "admin client certificate".into(),
                message,
            })?;
        crate::task::spawn(server::serve(listener, state.clone(), tls.clone()));
        Ok(Environment {
            state,
            addr,
            auth,
            ca_pem,
            tls,
            admin_cert,
        })
    }
}

/// The listener on `127.0.0.1:port` (0: a port the OS picks) and the address it got.
fn bind(port: u16) -> Result<(TcpListener, SocketAddr), Error> {
    let io = |source| Error::Io {
        path: format!("127.0.0.1:{port}"),
        source,
    };
    let listener = ctrl_net::listen(SocketAddr::from(([127, 0, 0, 1], port)))
        .and_then(TcpListener::from_std)
        .map_err(io)?;
    let addr = listener.local_addr().map_err(io)?;
    Ok((listener, addr))
}

fn read_crds(path: &Path) -> Result<Vec<Value>, Error> {
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
            })
            .collect();
        files.sort();
        let mut out = Vec::new();
        for f in files {
            out.extend(read_crds(&f)?);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    parse_crds(&text, &path.display().to_string())
}

/// The CustomResourceDefinition documents of a YAML/JSON text.
fn parse_crds(text: &str, origin: &str) -> Result<Vec<Value>, Error> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| Error::Parse {
        path: origin.to_string(),
        message: e.to_string(),
    })?;
    Ok(docs
        .into_iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .collect())
}

/// Namespaces present at start, then the CRDs.
fn seed(state: &Apiserver, crds: Vec<Value>) -> Result<(), Error> {
    let snap = state.registry.snapshot();
    let find = |g: &str, p: &str| {
        snap.types
            .iter()
            .find(|t| t.group == g && t.plural == p && t.crd.is_none())
            .cloned()
    };
    if let Some(ns) = find("", "namespaces") {
        for n in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
            let _ = create_object(state, &ns, None, obj, Default::default());
        }
    }
    if let Some(crd_rt) = find("apiextensions.k8s.io", "customresourcedefinitions") {
        for mut c in crds {
            let name = crate::api::meta::name(&c).to_string();
            let crd_err = |e: crate::api::status::ApiError| Error::Crd {
                name: name.clone(),
                message: e.message,
            };
            crate::registry::objects::check_type(&mut c, &crd_rt, None).map_err(crd_err)?;
            create_object(state, &crd_rt, None, c, Default::default()).map_err(crd_err)?;
        }
    }
    Ok(())
}

/// The default ClusterRoles and ClusterRoleBindings ([`auth::bootstrap`](crate::auth::bootstrap)),
/// as kube-apiserver's bootstrap controller writes them at start.
fn seed_rbac(api: &Apiserver) {
    let snap = api.registry.snapshot();
    for (plural, obj) in crate::auth::bootstrap::objects() {
        if let Some(rt) = snap.get("rbac.authorization.k8s.io", "v1", plural) {
            let _ = create_object(api, rt, None, obj, Default::default());
        }
    }
}

/// The `default/kubernetes` Service (cluster IP
/// [`KUBERNETES_IP`](crate::registry::defaults::service::KUBERNETES_IP), port 443 `https` to
/// this server's port) with its Endpoints and EndpointSlice pointing at this server, as
/// kube-apiserver's bootstrap controller keeps them (`pkg/controlplane/controller/kubernetesservice`).
fn seed_kubernetes_service(api: &Apiserver, port: u16) {
    use crate::registry::defaults::service::KUBERNETES_IP;
    let snap = api.registry.snapshot();
    let meta =
        |labels: Value| json!({"name": "kubernetes", "namespace": "default", "labels": labels});
    let objects = [
        (
            "",
            "services",
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": meta(json!({"component": "apiserver", "provider": "kubernetes"})),
                "spec": {"clusterIP": KUBERNETES_IP, "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
            }),
        ),
        (
            "",
            "endpoints",
            json!({
                "apiVersion": "v1", "kind": "Endpoints",
                "metadata": meta(json!({"endpointslice.kubernetes.io/skip-mirror": "true"})),
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
            }),
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": meta(json!({"kubernetes.io/service-name": "kubernetes"})),
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            }),
        ),
    ];
    if let Some(rt) = snap.get("", "v1", "componentstatuses") {
        for cs in crate::registry::builtins::component_statuses() {
            let _ = create_object(api, rt, None, cs, Default::default());
        }
    }
    for (group, plural, obj) in objects {
        if let Some(rt) = snap.get(group, "v1", plural)
            && let Err(e) = create_object(api, rt, Some("default"), obj, Default::default())
        {
            tracing::warn!(plural, error = %e.message, "seeding default/kubernetes");
        }
    }
}

/// Base64 of a PEM text (a kubeconfig's `*-data` fields).
fn b64(pem: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// A running embedded API server. Dropping it (or [`stop`](Self::stop)) shuts it down.
pub struct Environment {
    state: Arc<State>,
    addr: SocketAddr,
    auth: Arc<Auth>,
    /// The serving certificate (PEM), which kubeconfigs trust.
    ca_pem: String,
    /// Issues client certificates.
    tls: Arc<crate::tls::Tls>,
    /// The admin's client certificate and key (PEM), which the admin kubeconfig carries.
    admin_cert: (String, String),
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Environment {
    /// A builder with defaults: OS-chosen port, no CRDs, a random admin token, RBAC.
    pub fn builder() -> EnvironmentBuilder {
        EnvironmentBuilder::default()
    }

    /// Starts an environment with defaults.
    pub async fn start() -> Result<Environment, Error> {
        Self::builder().start().await
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A `kube::Config` for this server as the admin (user `admin` in `system:masters`):
    /// plain HTTP, namespace `default`, the admin's bearer token, and `default_retry = false`
    /// so that error statuses reach the caller unretried.
    pub fn config(&self) -> kube::Config {
        self.config_with_token(self.auth.authn.admin_token())
    }

    fn config_with_token(&self, token: &str) -> kube::Config {
        let uri: http::Uri = self.url().parse().unwrap_or_default();
        let mut cfg = kube::Config::new(uri);
        cfg.default_namespace = "default".into();
        cfg.default_retry = false;
        cfg.auth_info.token = Some(token.to_string().into());
        cfg
    }

    /// The admin user's bearer token (for raw HTTP requests: `Authorization: Bearer <it>`).
    pub fn admin_token(&self) -> &str {
        self.auth.authn.admin_token()
    }

    /// A real `kube::Client` talking HTTP to this server as the admin. It is built on a
    /// plain-HTTP hyper client with kube's base-URI layer and the token as a header — no TLS
    /// stack is set up, which keeps creating one cheap.
    pub fn client(&self) -> kube::Client {
        use kube::client::{ClientBuilder, ConfigExt};
        let mut cfg = self.config();
        if let Ok(v) = http::HeaderValue::from_str(&format!("Bearer {}", self.admin_token())) {
            cfg.headers.push((http::header::AUTHORIZATION, v));
        }
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<kube::client::Body>();
        let builder = ClientBuilder::new(http, cfg.default_namespace.clone())
            .with_layer(&cfg.base_uri_layer());
        match cfg.extra_headers_layer() {
            Ok(headers) => builder.with_layer(&headers).build(),
            // The only header is the admin's token, URL-safe base64: always valid.
            Err(e) => panic!("headers of the envtest client: {e}"),
        }
    }

    /// A real `kube::Client` as the admin, like [`client`](Self::client), whose requests never
    /// touch a socket: each is handed to the server's handler directly (authentication,
    /// faults, the request log, routing and the codecs are the same, so a test sees what HTTP
    /// would give). This is the transport of the simulation; it also spares a test the
    /// connection set-up.
    pub fn in_memory_client(&self) -> kube::Client {
        self.in_memory_client_with(tower::layer::util::Identity::new())
    }

    /// Every stored object of kind `K`, read from the store with no request (so no request log
    /// entry and no injected fault): for invariants checked between steps of a test or a
    /// simulation. Objects are as stored, at their storage version; those that do not decode
    /// as `K` (a custom resource served at another version) are left out.
    pub fn stored<K>(&self) -> Vec<K>
    where
        K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let snap = self.state.registry.snapshot();
        let Some(rt) = snap.get(&K::group(&()), &K::version(&()), &K::plural(&())) else {
            return Vec::new();
        };
        let Ok((_, items)) = self.state.store.list(&rt.store_key(), None, None) else {
            return Vec::new();
        };
        (items.iter())
            .filter_map(|(_, bytes)| serde_json::from_slice(bytes).ok())
            .collect()
    }

    /// The metadata of the stored object `namespace/name` of `group/version/plural` (`None` when
    /// there is no such object), read with no request: for the simulation's checkers.
    pub(crate) fn stored_meta(
        &self,
        (group, version, plural): (&str, &str, &str),
        namespace: &str,
        name: &str,
    ) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        let rt = self
            .state
            .registry
            .snapshot()
            .get(group, version, plural)?
            .clone();
        let key = crate::storage::obj_key(namespace, name);
        let bytes = self.state.store.get(&rt.store_key(), &key)?;
        #[derive(serde::Deserialize)]
        struct Meta {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        }
        Some(serde_json::from_slice::<Meta>(&bytes).ok()?.metadata)
    }

    /// The plural of kind `kind` served at `apiVersion` `api_version` (`group/version`, or
    /// `version` for the core group).
    pub(crate) fn plural_of(&self, api_version: &str, kind: &str) -> Option<String> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let snap = self.state.registry.snapshot();
        let mut types = snap.in_group_version(group, version);
        types.find(|t| t.kind == kind).map(|t| t.plural.clone())
    }

    /// The store's revision (the last resourceVersion written): unchanged means nothing was
    /// written.
    pub(crate) fn store_revision(&self) -> u64 {
        self.state.store.current_rv()
    }

    /// How often the collection of kind `K` was listed and watched, and how many of its watchers
    /// the server dropped for falling behind, since the server started: a client's relists and
    /// watch restarts, counted where they arrive (the benches take them per repetition).
    pub fn watch_stats<K>(&self) -> crate::storage::WatchStats
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let snap = self.state.registry.snapshot();
        snap.get(&K::group(&()), &K::version(&()), &K::plural(&()))
            .map(|rt| self.state.store.watch_stats(&rt.store_key()))
            .unwrap_or_default()
    }

    /// [`in_memory_client`](Self::in_memory_client) with `layer` around the transport (e.g. to
    /// see or delay each request and response).
    pub(crate) fn in_memory_client_with<L>(&self, layer: L) -> kube::Client
    where
        L: tower::Layer<server::InMemory>,
        L::Service: tower::Service<
                http::Request<kube::client::Body>,
                Response = http::Response<crate::endpoints::Body>,
            > + Send
            + 'static,
        <L::Service as tower::Service<http::Request<kube::client::Body>>>::Error:
            Into<Box<dyn std::error::Error + Send + Sync>>,
        <L::Service as tower::Service<http::Request<kube::client::Body>>>::Future: Send + 'static,
    {
        let token = format!("Bearer {}", self.admin_token());
        let auth = http::HeaderValue::from_str(&token).ok();
        let svc = layer.layer(server::InMemory::new(self.state.clone()));
        let svc = tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<kube::client::Body>| {
                if let Some(v) = &auth {
                    req.headers_mut()
                        .insert(http::header::AUTHORIZATION, v.clone());
                }
                req
            })
            .service(svc);
        kube::Client::new(svc, "default")
    }

    /// Adds a user with these groups (and `system:authenticated`), as Go's `envtest.AddUser`,
    /// and returns a `kube::Config` that authenticates as it (a new bearer token; use it with
    /// `kube::Client::try_from`). What the user may do is up to RBAC: bind it with Roles or
    /// ClusterRoles (members of `system:masters` may do anything).
    /// [`write_user_kubeconfig`](Self::write_user_kubeconfig) writes it for kubectl.
    pub fn add_user(&self, name: &str, groups: &[&str]) -> kube::Config {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        self.config_with_token(&self.auth.authn.add_user(name, &groups))
    }

    /// `https://127.0.0.1:<port>`: the same port over TLS. Kubeconfigs use it, as kubectl sends
    /// credentials only over TLS.
    pub fn https_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The server's CA certificate (PEM), which signed its serving certificate (for `127.0.0.1`
    /// and `localhost`) and the client certificates: what to trust when connecting over TLS.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Writes a kubeconfig (context `envtest`, namespace `default`) for the admin: this server
    /// over TLS, trusting its CA, with the admin's bearer token and a client certificate (CN
    /// `admin`, O `system:masters`), as Go envtest's admin kubeconfig carries one.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let mut admin = self.config();
        admin.auth_info.client_certificate_data = Some(b64(&self.admin_cert.0));
        admin.auth_info.client_key_data = Some(b64(&self.admin_cert.1).into());
        self.write_user_kubeconfig(&admin, path)
    }

    /// Writes a kubeconfig (context `envtest`, namespace `default`) for `user` (a config from
    /// [`add_user`](Self::add_user) or [`add_user_certificate`](Self::add_user_certificate)):
    /// this server over TLS, trusting its CA, with the user's bearer token and client
    /// certificate, whichever it has.
    pub fn write_user_kubeconfig(
        &self,
        user: &kube::Config,
        path: impl AsRef<Path>,
    ) -> std::io::Result<()> {
        use secrecy::ExposeSecret;
        let a = &user.auth_info;
        let mut creds = String::new();
        if let Some(t) = &a.token {
            creds.push_str(&format!("    token: {}\n", t.expose_secret()));
        }
        if let (Some(c), Some(k)) = (&a.client_certificate_data, &a.client_key_data) {
            creds.push_str(&format!(
                "    client-certificate-data: {c}\n    client-key-data: {}\n",
                k.expose_secret()
            ));
        }
        if creds.is_empty() {
            creds.push_str("    token: \"\"\n");
        }
        let ca = b64(&self.ca_pem);
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: envtest\n    namespace: default\ncurrent-context: envtest\nusers:\n- name: envtest\n  user:\n{creds}",
            self.https_url()
        );
        std::fs::write(path, text)
    }

    /// Adds a user authenticated by an X.509 client certificate signed by this server's CA,
    /// as kube-apiserver's `--client-ca-file` authenticator reads it: the certificate's Common
    /// Name is the user and its Organizations are the groups (the first two of `groups` are
    /// written), plus `system:authenticated`. Returns a `kube::Config` over TLS carrying the
    /// certificate (use it with `kube::Client::try_from`, or write it with
    /// [`write_user_kubeconfig`](Self::write_user_kubeconfig)). What the user may do is up to
    /// RBAC, as for [`add_user`](Self::add_user).
    pub fn add_user_certificate(&self, name: &str, groups: &[&str]) -> Result<kube::Config, Error> {
        let (cert, key) = self
            .tls
            .issue_client(name, groups)
            .map_err(|message| Error::Parse {
                path: "client certificate".into(),
                message,
            })?;
        let uri: http::Uri = self.https_url().parse().unwrap_or_default();
        let mut cfg = kube::Config::new(uri);
        cfg.default_namespace = "default".into();
        cfg.default_retry = false;
        let ca = rustls::pki_types::pem::PemObject::from_pem_slice(self.ca_pem.as_bytes())
            .map(|c: rustls::pki_types::CertificateDer<'static>| c.to_vec());
        cfg.root_cert = ca.ok().map(|c| vec![c]);
        cfg.auth_info.client_certificate_data = Some(b64(&cert));
        cfg.auth_info.client_key_data = Some(b64(&key).into());
        Ok(cfg)
    }

    /// Fault injection and the request log of this server.
    pub fn faults(&self) -> Faults {
        self.state.faults.clone()
    }

    /// Stops serving: the listener closes and open connections and watches end.
    pub fn stop(&self) {
        self.state.shutdown.cancel();
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        self.stop();
    }
}
