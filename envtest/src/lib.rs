//! ctrl-envtest: an embedded, in-process Kubernetes API server for tests and local runs — no
//! etcd, no kube-apiserver binaries (Go's envtest needs both).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! let env = ctrl_envtest::Environment::builder().start().await?;
//! let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("x".into());
//! cms.create(&PostParams::default(), &cm).await?;
//! # Ok(()) }
//! ```
//!
//! # Inside: the layers
//!
//! The modules are cut like kube-apiserver's, highest layer first; a reference from one top-level
//! module to another may only point down this list (checked by `tests/integration/layers.rs`, whose
//! `LAYERS` is this list: no upward reference, no circle between files, no function over 80 lines,
//! and this diagram and `docs/envtest.md`'s name exactly these modules in this order):
//!
//! ```text
//! cli            `ctrl-envtest serve` (the binary's flags and main, as a library function)
//! sim/           the deterministic simulation: seed, paused runtime, in-memory transport,
//!                fault schedule, trace, checkers (runs an operator against `env`)
//! env            builds every layer, seeds, starts the server and the controllers
//! controllers/   gc, namespaces, crd_cleanup, clusterrole_aggregation, namespace_defaults
//!                (write observers of the registry), kubelet (watches pods), the workload
//!                controllers (watch-driven loops) — clients of the registry
//!                (registry::hooks), never of HTTP
//! server         in-memory transport; hyper listener (HTTP/1.1 and, on the same port, HTTPS with h2: `tls`), the auth filter,
//!                faults intercept, body limit, request log
//! endpoints/     Req/responses, router, handlers (one per verb, apply, watch, versioned,
//!                admit), filter, table, discovery, openapi
//! admission/     webhooks and ValidatingAdmissionPolicies on the old and new objects of a
//!                write (no request rewriting)
//! registry/      served types, hooks (writes, then the write observers), rest (generic
//!                create/update/delete), strategy, crd, fieldmanager, schema (its format
//!                checks, ratchet), conversion, builtins, context (the Apiserver: types, store,
//!                observers)
//! auth/          authentication (tokens, ServiceAccount JWTs, client certificates),
//!                impersonation, RBAC, the review answers, the bootstrap policy — reads storage,
//!                used by server/endpoints
//! storage/       the store: bytes, resourceVersions, history, watch fan-out
//! cel/           CEL: CRD rules and their ratcheting, policy expressions (on `api` only)
//! webhook_client HTTPS client for AdmissionReview and ConversionReview (a leaf)
//! tls            the serving certificate and the TLS acceptor of `server` (a leaf)
//! api/           status errors, meta rules, selectors, validation, patch, protobuf, warnings,
//!                quantities, addresses
//! faults         fault injection and the request log (a leaf)
//! task           spawn: tokio::spawn of a boxed future, its task code compiled once (a leaf)
//! wait           eventually / wait_until: polling helpers for tests (a leaf)
//! ```
//!
//! A request: `server` authenticates and authorizes it (`auth`), reads the body, routes it
//! (`endpoints::router`) against the `registry` snapshot and dispatches to discovery or, through
//! `endpoints::handlers::versioned` (custom resources served at a non-storage version), to a
//! handler. A write handler decodes the object (or computes it from a patch), hands old and new to
//! `admission` (webhooks), and writes through `registry::hooks`: `registry::rest` reads and writes
//! the `storage` and applies the per-kind strategy, then `hooks` runs the write observers: the
//! controllers react with writes of their own, queued until none is left. The store fans change
//! events out to watch streams. Every patch — PATCH, `/scale`, admission's review of a patched
//! object, a converted patch — is decoded and applied by `api::patch`, with one set of limits.
//!
//! # Behaviour worth knowing
//!
//! * **Three controllers run by default**: the garbage collector (`controllers::gc`:
//!   ownerReferences, Background / Foreground with `foregroundDeletion` and `blockOwnerDeletion` /
//!   Orphan), ClusterRole aggregation (`controllers::clusterrole_aggregation`) and namespace
//!   finalization (`controllers::namespaces`: a deleted namespace is `Terminating`, its objects are
//!   deleted honouring finalizers, then it goes). [`EnvironmentBuilder::controllers`]`(false)`
//!   gives Go envtest's behaviour: nothing is collected, deleted namespaces stay `Terminating`,
//!   aggregated ClusterRoles stay empty, and neither the kubelet nor the workload controllers
//!   run.
//! * **Built-in defaulting as kube-apiserver** (`registry::defaults`): every write of a
//!   built-in is defaulted by upstream's `defaults.go` of its group/version (a Pod's
//!   `restartPolicy`, `dnsPolicy`, container `imagePullPolicy`, ...; a Deployment's `replicas`,
//!   `strategy`, ...), and the strategies' `PrepareForCreate` set create-time status (a Pod
//!   `Pending` with its QoS class, a Service's `loadBalancer: {}`), a Job's selector, and a
//!   Service's cluster IP (10.0.0.0/24) and node ports, freed when it goes. Pods, Services,
//!   ServiceAccounts, Namespaces, PVs, PVCs and StorageClasses answer a delete with the object
//!   (`ReturnDeletedObject`). Every environment has the `default/kubernetes` Service (and its
//!   Endpoints and EndpointSlice) pointing at itself, APIServices, CSRs with `approval`,
//!   `pods/ephemeralcontainers` and read-only `componentstatuses`.
//! * **A simulated kubelet, opt-in** ([`EnvironmentBuilder::simulate_pods`], `controllers::kubelet`): Pods
//!   are bound to a simulated Node ([`SIMULATED_NODE`]; [`EnvironmentBuilder::nodes`] for more)
//!   in one write (`spec.nodeName` and `PodScheduled`), run (`Running`, `Ready`, IPs, container
//!   statuses) after a short delay, run to completion when their `restartPolicy` is not
//!   `Always` ([`EnvironmentBuilder::pod_run_time`]), play the [`PodFault`]s a test asks for
//!   ([`Faults::pod_fault`]), and deleting one is graceful (`deletionTimestamp`, then removal
//!   after min(grace, stop delay)). Off, Pods stay as written, as in Go's envtest.
//! * **Workload controllers, on with the kubelet** ([`EnvironmentBuilder::simulate_workloads`]):
//!   Deployment (ReplicaSets, rolling update, Recreate, rollback, `Available` / `Progressing`),
//!   ReplicaSet, StatefulSet, DaemonSet, Job (with ttl-after-finished), CronJob and EndpointSlice
//!   controllers run as watch-driven loops (`controllers::runner`) writing upstream's status
//!   fields; every namespace gets its `default` ServiceAccount and `kube-root-ca.crt`
//!   (`controllers::namespace_defaults`). docs/envtest.md says what each does not simulate.
//! * **Time and randomness are `ctrl_clock`'s**: timestamps, token expiry, the workload
//!   controllers' deadlines and object UIDs read the current clock, so under a fake clock on a
//!   paused runtime they follow virtual time, and [`sim`] (the deterministic simulation) replays
//!   them from its seed. [`Environment::stored`] reads the store without a request.
//! * One global resourceVersion; every resource keeps a bounded history of change events
//!   ([`EnvironmentBuilder::history_window`]) for watch resume and consistent paginated lists.
//!   A watch from before that history gets HTTP 200 and one in-stream `ERROR` 410 — never an
//!   HTTP 410 — so kube's `watcher` re-lists. [`Faults::compact_history`] forces this.
//! * A watcher more than [`EnvironmentBuilder::watch_buffer`] events behind is dropped (its
//!   stream ends) instead of slowing writers; clients resume from their last resourceVersion.
//! * Bodies are JSON (YAML accepted on POST/PUT). JSON patch (with upstream's rule that a `test` of
//!   a missing path against `null` passes), merge patch, strategic merge patch for built-ins
//!   (`api::strategic`: merge keys of the common fields and the `$patch`, `$retainKeys`,
//!   `$deleteFromPrimitiveList` directives; 415 on custom resources) and server-side apply
//!   (`registry::fieldmanager`: managedFields per manager, conflicts, force, removal of dropped
//!   fields) are served. Protobuf (client-go's default for built-ins) is served for every built-in
//!   kind by one descriptor-driven codec (`api::protobuf`: create/update/DeleteOptions bodies;
//!   objects, lists, `Status` errors and watch frames when `Accept` lists it first); custom
//!   resources answer a protobuf body 415 and protobuf-only `Accept` 406. `Status` bodies are Go's
//!   bytes.
//! * Built-in bodies are type-checked as upstream's decode into their Go type, against their
//!   generated OpenAPI schema, with Go's error texts (`registry::builtins::decode`: 400s); custom
//!   resources are pruned, defaulted and validated against their CRD version's `openAPIV3Schema`
//!   (422). `fieldValidation` is upstream's: unknown fields of custom resources and duplicate
//!   fields of JSON bodies are a 400 under `Strict`, `Warning` headers under `Warn` (the default),
//!   dropped silently under `Ignore` (`endpoints::handlers::fields`). The CRD's CEL rules
//!   (`x-kubernetes-validations`, `messageExpression`, transition rules on `oldSelf`, ratcheting on
//!   update, upstream's cost limits) are evaluated in process (`cel`), as are the expressions of
//!   ValidatingAdmissionPolicies — with the `cel` feature (on by default; ctrl's `envtest`
//!   leaves it off, `envtest-cel` turns it on). Without it a CRD with rules, a policy or a
//!   binding is refused with a 422 naming the feature. `format` checks need no CEL. CRDs with `conversion.strategy: Webhook`
//!   convert through their webhook (`registry::conversion`) wherever a real API server converts;
//!   other multi-version CRDs store one object served at every version. Admission webhook
//!   `warnings` reach clients as `Warning: 299` headers.
//! * Status subresources, `/scale` (workloads and CRDs with `subresources.scale`),
//!   `pods/eviction` (deletes the pod by the eviction's `deleteOptions`; no PDBs), dryRun,
//!   finalizers and delete preconditions follow upstream. events.k8s.io/v1 Events are a view
//!   of the core/v1 Events (one storage, fields mapped), so kube's `Recorder` output shows up
//!   where `kubectl describe` looks. `as=Table` is served (`endpoints::table`: upstream's printer
//!   columns for the common built-ins, `-o wide` included, CRD `additionalPrinterColumns`,
//!   otherwise Name and Age) for lists, gets and watches.
//! * OpenAPI v3 documents carry full schemas (`endpoints::openapi`: built-ins from k8s-openapi's
//!   schemars impls (`registry::builtins::schemas`), custom resources from their CRD's `openAPIV3Schema`), so `kubectl explain`
//!   works; each document's URL hash changes with its content.
//! * [`Environment::client`] has `default_retry` off, so injected 429/5xx reach the caller.
//!   [`Environment::in_memory_client`] is the same client with no socket: each request is handed
//!   to the server's handler directly (`server::InMemory`, a `tower::Service`), through the same
//!   authentication, faults, request log and codecs.
//! * Type errors are refused, never stored: DeleteOptions (body and query) decode into the
//!   typed `meta/v1` struct (400; `dryRun: ["All"]` deletes nothing), every body's
//!   `apiVersion`, `kind` and `metadata` must decode as `ObjectMeta` (400, or 422 on a patch),
//!   an established CRD keeps its scope and kind, and JSON-patch `copy` may add 3 MiB at most.
//! * The transport is `ctrl_net`'s, shared with ctrl's other servers: system-maximum listen
//!   backlog, accept back-off when out of file descriptors, TCP keepalive, and a request-head
//!   and idle timeout ([`EnvironmentBuilder::header_read_timeout`], 32 s). TLS offers ALPN `h2`
//!   and `http/1.1`; HTTP/2 has kube-apiserver's stream limits (`ctrl_net::http2`). That is
//!   the `http2` feature (on by default; ctrl's `envtest` leaves it off): without it ALPN
//!   offers only `http/1.1`, which the kube client and kubectl fall back to.
//! * **Authentication and RBAC are on**, as in Go's envtest: every request needs a bearer
//!   token the server knows or, over TLS, a client certificate signed by the environment's CA
//!   (CN = user, O = groups: [`Environment::add_user_certificate`]; the admin kubeconfig carries
//!   one) (401 otherwise; `Bearer  <token>` with two spaces is an empty token; `/healthz`, `/readyz`, `/livez` and `/version`
//!   stay public). [`Environment::client`], [`Environment::config`] and the kubeconfig are the
//!   admin (user `admin` in `system:masters`); [`Environment::add_user`] adds restricted users,
//!   the `serviceaccounts/<name>/token` subresource issues ServiceAccount tokens, and Roles,
//!   ClusterRoles (with aggregation) and their bindings decide, with kube-apiserver's 403
//!   messages; [`Authorization::AlwaysAllow`] turns RBAC off. Kubeconfigs point at the same
//!   port over HTTPS (a certificate signed by the environment's CA, which they trust): kubectl
//!   sends credentials only over TLS.
//! * Webhook serving certificates are verified as Go's `crypto/x509` does (`webhook_client`):
//!   a self-signed certificate given as its own `caBundle` is accepted.

mod admission;
mod api;
pub(crate) mod auth;
#[cfg(feature = "cel")]
pub(crate) mod cel;
mod controllers;
mod endpoints;
mod env;
mod faults;
mod registry;
mod server;
mod storage;
mod task;
mod tls;
mod webhook_client;

pub mod cli;
pub mod sim;
pub mod wait;

pub use admission::WebhookConfiguration;
pub use auth::Authorization;
pub use controllers::kubelet::NODE_NAME as SIMULATED_NODE;
pub use env::{Environment, EnvironmentBuilder, Error};
pub use faults::{
    FaultMatch, FaultStatus, Faults, PodFault, REQUEST_LOG_MAX_BYTES, RequestRecord, Verb,
};
pub use storage::WatchStats;
