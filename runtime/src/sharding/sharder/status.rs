//! The ring's status (upstream's controllerring controller): `shards`,
//! `availableShards`, `observedGeneration` and the `Ready` condition, which says
//! whether the sharder's last sync of the ring (and its webhook registration)
//! succeeded.
//!
//! The sharder (`super`) computes the status each tick from its members
//! (`super::members`) and the outcome of the sync (`super::sync`), and writes it only
//! when it changed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};

use super::members::Members;
use crate::conditions::{self, CONDITION_FALSE, CONDITION_TRUE};
use crate::sharding::{ControllerRing, ControllerRingStatus};

/// The type of the ring's readiness condition (upstream's `ControllerRingReady`).
pub const CONDITION_READY: &str = "Ready";

/// The status `ring` should have with `members`; `outcome` is the result of this
/// tick's sync (`None`: no sync this tick, the `Ready` condition stays as it is).
pub(crate) fn desired(
    ring: &ControllerRing,
    members: &Members,
    outcome: Option<&Result<(), String>>,
) -> ControllerRingStatus {
    let mut status = ring.status.clone().unwrap_or_default();
    let generation = ring.metadata.generation.unwrap_or_default();
    status.observed_generation = generation;
    status.shards = i32::try_from(members.shards.len()).unwrap_or(i32::MAX);
    status.available_shards = i32::try_from(members.available()).unwrap_or(i32::MAX);
    let Some(outcome) = outcome else {
        return status;
    };
    let (state, reason, message) = match outcome {
        Ok(()) => (
            CONDITION_TRUE,
            "ReconciliationSucceeded",
            "ControllerRing was successfully reconciled".to_string(),
        ),
        Err(e) => (CONDITION_FALSE, "ReconciliationFailed", capitalize(e)),
    };
    conditions::set_status_condition(
        &mut status.conditions,
        Condition {
            type_: CONDITION_READY.into(),
            status: state.into(),
            reason: reason.into(),
            message,
            observed_generation: Some(generation),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        },
    );
    status
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Writes [`desired`] to the ring's status subresource unless it is already there.
pub(crate) async fn write(
    rings: &Api<ControllerRing>,
    ring: &ControllerRing,
    members: &Members,
    outcome: Option<&Result<(), String>>,
) {
    let status = desired(ring, members, outcome);
    if ring.status.as_ref() == Some(&status) {
        return;
    }
    let patch = serde_json::json!({ "status": status });
    let pp = PatchParams::default();
    if let Err(error) = rings
        .patch_status(ring.ring_name(), &pp, &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(ring = %ring.ring_name(), %error, "Could not write the ring's status");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sharding::ControllerRing;

    fn ring(generation: i64) -> ControllerRing {
        let mut r = ControllerRing::with_resources("r", vec![]);
        r.metadata.generation = Some(generation);
        r
    }

    fn ready(status: &ControllerRingStatus) -> &Condition {
        conditions::find_status_condition(&status.conditions, CONDITION_READY)
            .expect("a Ready condition")
    }

    #[test]
    fn a_successful_sync_makes_the_ring_ready_and_a_failure_not() {
        let members = Members::default();
        let mut r = ring(3);
        let ok = desired(&r, &members, Some(&Ok(())));
        assert_eq!(ok.observed_generation, 3);
        assert_eq!((ok.shards, ok.available_shards), (0, 0));
        assert_eq!(ready(&ok).status, "True");
        assert_eq!(ready(&ok).reason, "ReconciliationSucceeded");
        assert_eq!(ready(&ok).observed_generation, Some(3));
        let since = ready(&ok).last_transition_time.clone();
        r.status = Some(ok);
        // No sync this tick: the condition is kept, the counts are refreshed.
        assert_eq!(
            desired(&r, &members, None),
            r.status.clone().expect("status")
        );
        let failed = desired(&r, &members, Some(&Err("invalid selector".into())));
        assert_eq!(ready(&failed).status, "False");
        assert_eq!(ready(&failed).reason, "ReconciliationFailed");
        assert_eq!(ready(&failed).message, "Invalid selector");
        assert!(ready(&failed).last_transition_time.0 >= since.0);
        assert_eq!(failed.conditions.len(), 1);
    }
}
