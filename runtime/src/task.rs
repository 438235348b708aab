//! Background tasks spawn boxed, through ctrl-net's one [`spawn`] (its module doc says why).
//! Sources, controllers, servers and elections spawn through it; the cache's informers and
//! handler sinks, the webhook server's certificate watch, and the optional multicluster and
//! sharding modules still call `tokio::spawn`.
//!
//! A leaf: it imports nothing from the crate.

pub use ctrl_net::task::{Task, spawn};
