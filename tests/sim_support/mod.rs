//! Helpers the examples' simulation tests share (`appservice_sim`, `storagebucket_sim`): the
//! allocator, a replica's manager options, and retrying a request of the test's own through
//! injected faults on virtual time.
#![allow(dead_code)] // each test file uses a different part

/// mimalloc, as `benches/e2e.rs` has: a seed allocates and frees some hundred thousand small
/// JSON values, maps and strings, and glibc's malloc spent about a sixth of a seed's CPU on
/// them (more as each seed's server history fragments its free lists).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use ctrl::manager::Options;
use ctrl_envtest::sim::Simulation;

/// A replica's manager options: no metrics port, controller names that may repeat (every
/// replica runs in this one process), and leader election on Lease `default/<lease>` if given.
pub fn options(lease: Option<&str>) -> Options {
    Options {
        metrics_bind_address: "0".into(),
        leader_election: lease.is_some(),
        leader_election_id: lease.unwrap_or_default().into(),
        leader_election_namespace: Some("default".into()),
        controller: ctrl::config::Controller {
            skip_name_validation: Some(true),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Runs `f` until it succeeds, a virtual tick after each failure (an injected fault, a
/// webhook that is down), as a user retries; `Err` is a checker's finding.
pub async fn retried<T, F, Fut>(sim: &Simulation, mut f: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) => sim.tick().await.map_err(|v| format!("{v} (after {e})"))?,
        }
    }
}
