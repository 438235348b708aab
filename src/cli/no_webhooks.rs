//! The stand-in for the local run's webhook server without the `webhook` feature
//! (`local_webhooks.rs` is the real one): an operator built without it serves no webhook, so
//! there is nothing to serve or register, and code written for both builds (a generated
//! project's tests) calls the same three methods.

use crate::manager::{BoxError, Manager, Options};
use crate::tls::TlsOptions;

/// No webhook server (the `webhook` feature is off): [`LocalWebhooks::options`] leaves the
/// options as they are and [`LocalWebhooks::install`] does nothing.
#[derive(Clone, Debug)]
pub struct LocalWebhooks;

impl LocalWebhooks {
    /// The stand-in; `tls` is not used.
    pub fn new(tls: TlsOptions) -> Result<Self, BoxError> {
        let _ = tls;
        Ok(Self)
    }

    /// `opts` unchanged.
    pub fn options(&self, opts: Options) -> Options {
        opts
    }

    /// Nothing to register.
    pub async fn install(
        &self,
        client: kube::Client,
        mgr: &Manager,
        name: &str,
    ) -> Result<(), BoxError> {
        let _ = (client, mgr, name);
        Ok(())
    }
}
