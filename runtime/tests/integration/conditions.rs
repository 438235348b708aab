//! `ctrl_runtime::conditions` against apimachinery's own cases
//! (`pkg/api/meta/conditions_test.go`: set, remove, find, present-and-equal), plus
//! the "changed" results and unset-time handling of the newer signatures.

use ctrl_runtime::conditions::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A condition with only a type (Go's `metav1.Condition{Type: t}`: zero time).
fn typed(t: &str) -> Condition {
    cond(t, "", Timestamp::UNIX_EPOCH)
}

fn cond(t: &str, status: &str, at: Timestamp) -> Condition {
    Condition {
        type_: t.into(),
        status: status.into(),
        last_transition_time: Time(at),
        reason: String::new(),
        message: String::new(),
        observed_generation: None,
    }
}

fn with(mut c: Condition, reason: &str, message: &str, generation: Option<i64>) -> Condition {
    c.reason = reason.into();
    c.message = message.into();
    c.observed_generation = generation;
    c
}

fn hours(n: i64) -> Timestamp {
    Timestamp::now() + SignedDuration::from_hours(n)
}

#[test]
fn set_should_add() {
    let before = hours(-1);
    let mut list = vec![typed("first"), typed("third")];
    let add = with(
        cond("second", CONDITION_TRUE, before),
        "reason",
        "message",
        None,
    );
    assert!(set_status_condition(&mut list, add.clone()));
    assert_eq!(list, vec![typed("first"), typed("third"), add]);
}

#[test]
fn set_use_supplied_time() {
    let before = hours(-1);
    let mut list = vec![
        typed("first"),
        cond("second", CONDITION_FALSE, Timestamp::UNIX_EPOCH),
        typed("third"),
    ];
    let add = with(
        cond("second", CONDITION_TRUE, before),
        "reason",
        "message",
        None,
    );
    assert!(set_status_condition(&mut list, add.clone()));
    assert_eq!(list, vec![typed("first"), add, typed("third")]);
}

#[test]
fn set_update_fields_keeps_the_transition_time_when_the_status_is_the_same() {
    let (before, after) = (hours(-1), hours(1));
    let mut list = vec![
        typed("first"),
        cond("second", CONDITION_TRUE, before),
        typed("third"),
    ];
    let add = with(
        cond("second", CONDITION_TRUE, after),
        "reason",
        "message",
        Some(3),
    );
    assert!(set_status_condition(&mut list, add));
    let want = with(
        cond("second", CONDITION_TRUE, before),
        "reason",
        "message",
        Some(3),
    );
    assert_eq!(list, vec![typed("first"), want, typed("third")]);
}

#[test]
fn set_with_nothing_new_reports_no_change() {
    let before = hours(-1);
    let existing = with(cond("Ready", CONDITION_TRUE, before), "Ok", "fine", Some(2));
    let mut list = vec![existing.clone()];
    let again = with(
        cond("Ready", CONDITION_TRUE, hours(1)),
        "Ok",
        "fine",
        Some(2),
    );
    assert!(!set_status_condition(&mut list, again));
    assert_eq!(list, vec![existing]);
}

#[test]
fn set_fills_an_unset_transition_time_with_now() {
    let start = Timestamp::now();
    let mut list = Vec::new();
    assert!(set_status_condition(&mut list, typed("Ready")));
    assert!(list[0].last_transition_time.0 >= start);

    // A status change without a time also gets now.
    list[0].last_transition_time = Time(hours(-5));
    let flip = cond("Ready", CONDITION_FALSE, Timestamp::UNIX_EPOCH);
    assert!(set_status_condition(&mut list, flip));
    assert_eq!(list[0].status, CONDITION_FALSE);
    assert!(list[0].last_transition_time.0 >= start);
}

#[test]
fn set_takes_reason_message_and_generation_each_as_a_change() {
    let base = with(cond("A", CONDITION_TRUE, hours(-1)), "R", "M", Some(1));
    for changed in [
        with(base.clone(), "R2", "M", Some(1)),
        with(base.clone(), "R", "M2", Some(1)),
        with(base.clone(), "R", "M", Some(2)),
        with(base.clone(), "R", "M", None),
    ] {
        let mut list = vec![base.clone()];
        assert!(
            set_status_condition(&mut list, changed.clone()),
            "{changed:?}"
        );
        assert_eq!(list, vec![changed]);
    }
}

#[test]
fn remove_present() {
    let mut list = vec![typed("first"), typed("second"), typed("third")];
    assert!(remove_status_condition(&mut list, "second"));
    assert_eq!(list, vec![typed("first"), typed("third")]);
}

#[test]
fn remove_not_present() {
    let mut list = vec![typed("first"), typed("second"), typed("third")];
    assert!(!remove_status_condition(&mut list, "fourth"));
    assert_eq!(list, vec![typed("first"), typed("second"), typed("third")]);
}

#[test]
fn remove_from_empty_conditions() {
    let mut list = Vec::new();
    assert!(!remove_status_condition(&mut list, "Foo"));
    assert!(list.is_empty());
}

#[test]
fn find_not_present_and_present() {
    let list = vec![typed("first")];
    assert_eq!(find_status_condition(&list, "second"), None);
    let list = vec![typed("first"), typed("second")];
    assert_eq!(
        find_status_condition(&list, "second"),
        Some(&typed("second"))
    );
}

#[test]
fn find_mut_edits_in_place() {
    let mut list = vec![typed("first"), typed("second")];
    if let Some(c) = find_status_condition_mut(&mut list, "second") {
        c.reason = "Edited".into();
    }
    assert_eq!(list[1].reason, "Edited");
    assert!(find_status_condition_mut(&mut list, "third").is_none());
}

#[test]
fn present_and_equal() {
    let unknown = [cond("first", CONDITION_UNKNOWN, Timestamp::UNIX_EPOCH)];
    assert!(!is_status_condition_present_and_equal(
        &unknown,
        "first",
        CONDITION_TRUE
    ));
    let t = [cond("first", CONDITION_TRUE, Timestamp::UNIX_EPOCH)];
    assert!(is_status_condition_present_and_equal(
        &t,
        "first",
        CONDITION_TRUE
    ));
    let f = [cond("first", CONDITION_FALSE, Timestamp::UNIX_EPOCH)];
    assert!(is_status_condition_present_and_equal(
        &f,
        "first",
        CONDITION_FALSE
    ));
    assert!(!is_status_condition_present_and_equal(
        &f,
        "second",
        CONDITION_FALSE
    ));
}

#[test]
fn true_and_false() {
    let list = [
        cond("A", CONDITION_TRUE, Timestamp::UNIX_EPOCH),
        cond("B", CONDITION_FALSE, Timestamp::UNIX_EPOCH),
        cond("C", CONDITION_UNKNOWN, Timestamp::UNIX_EPOCH),
    ];
    assert!(is_status_condition_true(&list, "A"));
    assert!(!is_status_condition_false(&list, "A"));
    assert!(is_status_condition_false(&list, "B"));
    assert!(!is_status_condition_true(&list, "B"));
    assert!(!is_status_condition_true(&list, "C"));
    assert!(!is_status_condition_false(&list, "C"));
    assert!(!is_status_condition_true(&list, "missing"));
    assert!(!is_status_condition_false(&list, "missing"));
}

#[test]
fn go_zero_time_counts_as_unset() {
    let go_zero: Timestamp = "0001-01-01T00:00:00Z".parse().expect("go zero time");
    assert!(is_unset_time(&Time(go_zero)));
    assert!(is_unset_time(&Time(Timestamp::default())));
    assert!(!is_unset_time(&Time(Timestamp::now())));
}

/// An unset transition time is filled from `ctrl::clock`: a plain test makes a fake clock
/// current and steps it, and the condition carries exactly the fake time.
#[test]
fn an_unset_time_reads_the_current_clock() {
    let start = Timestamp::from_second(1_600_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let clock = ctrl_runtime::clock::Clock::fake(start);
    let _current = clock.enter();
    clock.step(std::time::Duration::from_secs(90));
    let mut conditions = Vec::new();
    assert!(set_status_condition(&mut conditions, typed("Ready")));
    let at = conditions[0].last_transition_time.0;
    assert_eq!(at.as_second(), start.as_second() + 90);
    // A status change stamps the time of the change.
    clock.step(std::time::Duration::from_secs(10));
    assert!(set_status_condition(
        &mut conditions,
        cond("Ready", "True", Timestamp::UNIX_EPOCH)
    ));
    assert_eq!(
        conditions[0].last_transition_time.0.as_second(),
        start.as_second() + 100
    );
}
