//! A small HTTP/1.1 server for the manager's own endpoints (controller-runtime's
//! `pkg/internal/httpserver` and `manager.Server`).
//!
//! The metrics server, the health probe server and the profiling server are each a
//! [`Server`] with a [`Router`] of [`Handler`]s (they sit above this module); the
//! manager runs each server as a runnable in its HTTP-servers
//! group. Limits follow controller-runtime's servers: headers must arrive within
//! 32 s and fit in 1 MiB (else `431`), bodies are capped, bad paths get `404`, and a
//! garbage request never takes the server down. The transport limits — system-maximum
//! listen backlog, accept back-off when out of file descriptors, TCP keepalive, the
//! head/idle timeout — are `ctrl_net`'s, shared with the webhook server and ctrl-envtest.

mod handler;
mod router;
mod server;

pub use handler::{Body, Handler, HandlerFn, Request, Response, handler_fn, not_found, text};
pub use router::{Router, clean_path};
// the webhook server's connections (feature `webhook`)
#[cfg(feature = "webhook")]
pub(crate) use server::drive_conn;
pub use server::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_HEADER_BYTES, Server,
    ServerOptions, bind,
};
