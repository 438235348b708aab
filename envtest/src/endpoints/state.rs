//! What the HTTP side of one API server shares ([`State`]): the registry layer
//! ([`registry::context::Apiserver`](crate::registry::context::Apiserver), reached through `Deref`,
//! so a handler reads `state.registry` and `state.store` and passes `state` wherever the registry
//! takes an `&Apiserver`), who may do what (`auth`), fault injection, the settings fixed at start,
//! the shutdown token and the address. Built once by `env`; the server and the handlers take it by
//! `Arc`.

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::auth::Auth;
use crate::faults::Faults;
use crate::registry::context::Apiserver;

/// Server settings fixed at start.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// How often a watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// The longest a watch stays open.
    pub max_watch: Duration,
    /// How long a connection may take to send a request head, or sit idle between requests.
    pub header_read_timeout: Duration,
    /// Write a create's or update's `traceparent` header on the object (KEP-5915's
    /// annotation).
    pub stamp_traceparent: bool,
}

/// Everything a request handler can reach.
pub(crate) struct State {
    /// The registry layer: served types, store, write observers.
    pub api: Arc<Apiserver>,
    /// Authentication and authorization.
    pub auth: Arc<Auth>,
    pub faults: Faults,
    /// Whether any admission webhook or policy is configured (read on every write).
    pub admission: crate::admission::Configured,
    pub settings: Settings,
    pub shutdown: CancellationToken,
    pub addr: SocketAddr,
}

impl Deref for State {
    type Target = Apiserver;

    fn deref(&self) -> &Apiserver {
        &self.api
    }
}
