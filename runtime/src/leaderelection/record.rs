//! [`LeaderElectionRecord`]: the election state a Lease carries, and its mapping to
//! and from `coordination.k8s.io/v1` `LeaseSpec` (client-go's
//! `resourcelock.LeaderElectionRecord` and `LeaseSpecToLeaderElectionRecord`).
//!
//! The lock (`lock`) reads and writes it; the elector (`elector`) compares records to
//! decide whether the holder has renewed.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// Who holds a lease and since when, as written in a Lease's spec.
///
/// An empty `holder_identity` means nobody holds the lease (it was released).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// The identity of the holder; empty when released.
    pub holder_identity: String,
    /// How long candidates wait, after last seeing the record change, before they
    /// may take the lease over.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease.
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lease. Informational only: expiry is
    /// judged by the observer's own clock, never by this value.
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub leader_transitions: i32,
}

impl LeaderElectionRecord {
    /// The record a Lease spec describes (missing fields read as zero or empty).
    pub fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let Some(s) = spec else {
            return Self::default();
        };
        Self {
            holder_identity: s.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: s.lease_duration_seconds.unwrap_or_default(),
            acquire_time: s.acquire_time.as_ref().map(|t| t.0),
            renew_time: s.renew_time.as_ref().map(|t| t.0),
            leader_transitions: s.lease_transitions.unwrap_or_default(),
        }
    }

    /// Writes the record into `spec`, leaving fields it does not own (strategy,
    /// preferred holder) as they are.
    pub fn apply_to(&self, spec: &mut LeaseSpec) {
        spec.holder_identity = Some(self.holder_identity.clone());
        spec.lease_duration_seconds = Some(self.lease_duration_seconds);
        spec.acquire_time = self.acquire_time.map(MicroTime);
        spec.renew_time = self.renew_time.map(MicroTime);
        spec.lease_transitions = Some(self.leader_transitions);
    }

    /// The record as a fresh Lease spec.
    pub fn to_spec(&self) -> LeaseSpec {
        let mut spec = LeaseSpec::default();
        self.apply_to(&mut spec);
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_a_lease_spec() {
        let now = ctrl_clock::now();
        let rec = LeaderElectionRecord {
            holder_identity: "foo".into(),
            lease_duration_seconds: 10,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 1,
        };
        let spec = rec.to_spec();
        assert_eq!(LeaderElectionRecord::from_spec(Some(&spec)), rec);
        assert_eq!(
            LeaderElectionRecord::from_spec(None),
            LeaderElectionRecord::default()
        );
    }
}
