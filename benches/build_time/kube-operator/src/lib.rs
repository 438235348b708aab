//! The Memcached operator on kube-runtime (the peer of a `cargo ctrl` project in
//! benches/build_time/run.sh).

pub mod api;
pub mod controller;
pub mod serve;
