//! Webhooks: the TLS [`Server`] and the admission and conversion handlers it serves
//! (controller-runtime's `pkg/webhook`).
//!
//! - [`Server`] (`server`): path -> handler over rustls ([`crate::tls`]: HTTP/1.1 only
//!   unless h2 is enabled),
//!   a runnable in the manager's Webhooks group, certificates kept current by
//!   [`crate::certwatcher`], instrumented with controller-runtime's webhook metrics
//!   (`metrics`).
//! - [`admission`]: AdmissionReview v1, `CustomDefaulter` / `CustomValidator`, panic
//!   recovery.
//! - [`conversion`]: `/convert`, hub-and-spoke CRD version conversion.
//! - [`authentication`]: `TokenReview` webhooks (who a bearer token belongs to).
//! - [`certs`]: a self-signed CA + serving certificate for tests and local runs.
//! - [`Registration`] (`registration`): what each served webhook is for, to generate
//!   its configuration from.
//!
//! A manager runs one server: `Manager::webhook_server()` (Go's
//! `mgr.GetWebhookServer()`), chosen up front with `manager::Options::webhook_server`.
//!
//! `ctrl-builder`'s `WebhookBuilder` registers typed webhooks under kubebuilder's
//! paths; `ctrl-envtest` calls them as a real API server does.
//!
//! ```no_run
//! # async fn demo(mgr: ctrl_runtime::manager::Manager) -> Result<(), Box<dyn std::error::Error>> {
//! use ctrl_runtime::webhook::admission;
//! let server = mgr.webhook_server();
//! server.register("/validate-anything", admission::Webhook::new(admission::handler_fn(|_req| {
//!     admission::Response::allowed("")
//! })))?;
//! mgr.add_readyz_check("webhook", server.started_checker())?;
//! # Ok(()) }
//! ```

pub mod admission;
pub mod authentication;
pub mod certs;
pub mod conversion;
mod metrics;
mod registration;
mod server;

pub use registration::{Registration, WebhookType};

pub use server::{
    CONVERT_PATH, DEFAULT_PORT, Error, Options, Server, StartedChecker, default_cert_dir,
};
