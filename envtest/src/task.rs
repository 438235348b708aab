//! The server's background tasks (connections, watches, its controllers) spawn boxed, through
//! ctrl-net's one `spawn` (its module doc says why).
//!
//! A leaf: it imports nothing from the crate.

pub(crate) use ctrl_net::task::spawn;
