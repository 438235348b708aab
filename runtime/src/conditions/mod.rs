//! `metav1.Condition` helpers (apimachinery's `k8s.io/apimachinery/pkg/api/meta`
//! conditions functions): set, find and remove one condition of a type in a
//! `status.conditions` list, and ask whether it is `True` / `False` / some status.
//!
//! A reconciler builds the condition it observed and hands it to
//! [`set_status_condition`], which keeps `lastTransitionTime` unless the status
//! changed and says whether anything changed, so the status write that follows
//! (through [`client::Client::status`](crate::client::Client::status)) can be skipped
//! when nothing did. The functions work on the `Vec<Condition>` of any status struct
//! (k8s-openapi's [`Condition`]); they never write to the API server themselves —
//! like [`controllerutil`](crate::controllerutil)'s finalizer helpers, they only edit
//! the object in hand.
//!
//! ```
//! use ctrl_runtime::conditions::{self, CONDITION_TRUE};
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
//! use k8s_openapi::jiff::Timestamp;
//!
//! let mut list: Vec<Condition> = Vec::new();
//! let available = Condition {
//!     type_: "Available".into(),
//!     status: CONDITION_TRUE.into(),
//!     reason: "PodsReady".into(),
//!     message: "3/3 Pods ready".into(),
//!     observed_generation: Some(2),
//!     last_transition_time: Time(Timestamp::UNIX_EPOCH), // unset: becomes now
//! };
//! assert!(conditions::set_status_condition(&mut list, available.clone()));
//! assert!(!conditions::set_status_condition(&mut list, available)); // no change
//! assert!(conditions::is_status_condition_true(&list, "Available"));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// `status: True` (Go's `metav1.ConditionTrue`).
pub const CONDITION_TRUE: &str = "True";
/// `status: False` (Go's `metav1.ConditionFalse`).
pub const CONDITION_FALSE: &str = "False";
/// `status: Unknown` (Go's `metav1.ConditionUnknown`).
pub const CONDITION_UNKNOWN: &str = "Unknown";

/// Whether `t` counts as an unset `lastTransitionTime` (Go's `Time.IsZero`). k8s-openapi's
/// `Time` has no zero value, so every instant at or before the Unix epoch counts:
/// `Timestamp::UNIX_EPOCH` (`Timestamp::default()`), Go's zero time
/// `0001-01-01T00:00:00Z` as it arrives over the wire, and `Timestamp::MIN`.
pub fn is_unset_time(t: &Time) -> bool {
    t.0 <= Timestamp::UNIX_EPOCH
}

/// Sets the condition of `new.type_` in `conditions` (Go's `meta.SetStatusCondition`);
/// returns whether anything changed.
///
/// - No condition of that type yet: `new` is appended, its `lastTransitionTime` set to
///   now if unset ([`is_unset_time`]).
/// - One exists: when the status differs it takes the new status and the new
///   `lastTransitionTime` (now if unset); the old `lastTransitionTime` is kept when the
///   status is the same. `reason`, `message` and `observedGeneration` are always
///   taken from `new`.
pub fn set_status_condition(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    let Some(existing) = find_status_condition_mut(conditions, &new.type_) else {
        if is_unset_time(&new.last_transition_time) {
            new.last_transition_time = Time(ctrl_clock::now());
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if is_unset_time(&new.last_transition_time) {
            Time(ctrl_clock::now())
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    changed |= replace(&mut existing.reason, new.reason);
    changed |= replace(&mut existing.message, new.message);
    changed |= replace(&mut existing.observed_generation, new.observed_generation);
    changed
}

/// Stores `new` in `slot`; whether it differed.
fn replace<T: PartialEq>(slot: &mut T, new: T) -> bool {
    if *slot == new {
        return false;
    }
    *slot = new;
    true
}

/// Removes every condition of `type_` (Go's `meta.RemoveStatusCondition`); returns
/// whether one was there.
pub fn remove_status_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The condition of `type_`, if present (Go's `meta.FindStatusCondition`).
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    type_: &str,
) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The condition of `type_` to edit in place, if present (Go's `FindStatusCondition`
/// returns a pointer into the slice; this is that use).
pub fn find_status_condition_mut<'a>(
    conditions: &'a mut [Condition],
    type_: &str,
) -> Option<&'a mut Condition> {
    conditions.iter_mut().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is present with status `True` (Go's
/// `meta.IsStatusConditionTrue`).
pub fn is_status_condition_true(conditions: &[Condition], type_: &str) -> bool {
    is_status_condition_present_and_equal(conditions, type_, CONDITION_TRUE)
}

/// Whether the condition of `type_` is present with status `False` (Go's
/// `meta.IsStatusConditionFalse`).
pub fn is_status_condition_false(conditions: &[Condition], type_: &str) -> bool {
    is_status_condition_present_and_equal(conditions, type_, CONDITION_FALSE)
}

/// Whether the condition of `type_` is present with status `status` (Go's
/// `meta.IsStatusConditionPresentAndEqual`).
pub fn is_status_condition_present_and_equal(
    conditions: &[Condition],
    type_: &str,
    status: &str,
) -> bool {
    find_status_condition(conditions, type_).is_some_and(|c| c.status == status)
}
