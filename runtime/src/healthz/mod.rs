//! Liveness and readiness checks and the handler that serves them
//! (controller-runtime's `pkg/healthz`).
//!
//! A [`Checker`] answers "are you healthy?"; a [`Handler`] holds named checkers and
//! serves them with controller-runtime's bodies and codes: the aggregate at its root
//! (`ok`, or the verbose list with `?verbose`, `?exclude=<name>` to skip a check,
//! always verbose and `500` on failure) and each check at `/<name>`. The manager
//! mounts one handler at `/healthz` and one at `/readyz` on its
//! health probe server (an [`http::Server`](crate::http::Server)), and registers the
//! cache's sync as a readiness check.

mod handler;

use std::sync::Arc;

use async_trait::async_trait;

pub use handler::Handler;

use crate::http::Request;

/// The error a check fails with: the crate's one boxed error ([`BoxError`](crate::error::BoxError)),
/// under the name Go's `healthz.Checker` signature suggests.
pub use crate::error::BoxError as CheckError;

/// One health or readiness check (Go's `healthz.Checker`). It gets the probe request
/// and fails with an error whose text is shown only on the check's own endpoint
/// (`/healthz/<name>`), never in the aggregate, which is public.
#[async_trait]
pub trait Checker: Send + Sync + 'static {
    /// Runs the check.
    async fn check(&self, req: &Request) -> Result<(), CheckError>;
}

#[async_trait]
impl<C: Checker + ?Sized> Checker for Arc<C> {
    async fn check(&self, req: &Request) -> Result<(), CheckError> {
        (**self).check(req).await
    }
}

/// The check that always passes (Go's `healthz.Ping`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ping;

/// The check that always passes: `mgr.add_healthz_check("ping", healthz::ping())`.
pub fn ping() -> Ping {
    Ping
}

#[async_trait]
impl Checker for Ping {
    async fn check(&self, _req: &Request) -> Result<(), CheckError> {
        Ok(())
    }
}

/// A [`Checker`] from a synchronous closure; see [`from_fn`].
pub struct CheckFn<F>(F);

/// A check from a closure: `healthz::from_fn(|_req| if ready() { Ok(()) } else { Err("not yet".into()) })`.
pub fn from_fn<F>(f: F) -> CheckFn<F>
where
    F: Fn(&Request) -> Result<(), CheckError> + Send + Sync + 'static,
{
    CheckFn(f)
}

#[async_trait]
impl<F> Checker for CheckFn<F>
where
    F: Fn(&Request) -> Result<(), CheckError> + Send + Sync + 'static,
{
    async fn check(&self, req: &Request) -> Result<(), CheckError> {
        (self.0)(req)
    }
}
