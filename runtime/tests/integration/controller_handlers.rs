//! Event handlers and predicates on the cases controller-runtime's own
//! `eventhandler_test.go` and `predicate_test.go` cover, driven through the real queues.

use std::collections::BTreeMap;
use std::sync::Arc;

use ctrl_runtime::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use ctrl_runtime::handler::{
    EnqueueRequestForObject, EnqueueRequestForOwner, EnqueueRequestsFromMapFunc, EventHandler,
    Funcs, with_low_priority_when_unchanged,
};
use ctrl_runtime::predicate::{
    self, AnnotationChanged, BoxPredicate, GenerationChanged, LabelChanged, LabelSelectorPredicate,
    Predicate, ResourceVersionChanged,
};
use ctrl_runtime::reconcile::Request;
use ctrl_runtime::workqueue::{
    AddOpts, LOW_PRIORITY, PriorityQueue, Queue, QueueConfig, RateLimitingQueue,
};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, OwnerReference,
};
use kube::api::ObjectMeta;

fn pod(ns: &str, name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn with_rv(mut p: Pod, rv: &str) -> Pod {
    p.metadata.resource_version = Some(rv.into());
    p
}

fn owned(mut p: Pod, refs: &[(&str, &str, &str, bool)]) -> Pod {
    p.metadata.owner_references = Some(
        refs.iter()
            .map(|(api_version, kind, name, controller)| OwnerReference {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                name: name.to_string(),
                controller: Some(*controller),
                uid: format!("uid-{name}"),
                ..Default::default()
            })
            .collect(),
    );
    p
}

fn pq() -> PriorityQueue<Request> {
    PriorityQueue::new(QueueConfig::default())
}

fn rlq() -> RateLimitingQueue<Request> {
    RateLimitingQueue::new(QueueConfig::default())
}

/// Everything ready in the queue, with priorities, in hand-out order.
async fn drain(q: &dyn Queue<Request>) -> Vec<(Request, i32)> {
    let mut out = Vec::new();
    while !q.is_empty() {
        match q.get_boxed().await {
            Some((r, p)) => {
                q.done(&r);
                out.push((r, p));
            }
            None => break,
        }
    }
    out
}

async fn keys(q: &dyn Queue<Request>) -> Vec<Request> {
    let mut v: Vec<Request> = drain(q).await.into_iter().map(|(r, _)| r).collect();
    v.sort();
    v
}

fn req(ns: &str, name: &str) -> Request {
    Request::new(ns, name)
}

// ---- EnqueueRequestForObject ----

#[tokio::test]
async fn for_object_enqueues_the_object_for_every_event_type() {
    let h = EnqueueRequestForObject;
    let q = rlq();
    h.create(&CreateEvent::new(Arc::new(pod("biz", "baz"))), &q);
    assert_eq!(keys(&q).await, vec![req("biz", "baz")]);
    h.delete(&DeleteEvent::new(Arc::new(pod("biz", "del"))), &q);
    assert_eq!(keys(&q).await, vec![req("biz", "del")]);
    h.generic(&GenericEvent::new(Arc::new(pod("biz", "gen"))), &q);
    assert_eq!(keys(&q).await, vec![req("biz", "gen")]);
    // Updates enqueue the new object only.
    let e = UpdateEvent::new(Arc::new(pod("foo", "old")), Arc::new(pod("biz", "new")));
    h.update(&e, &q);
    assert_eq!(keys(&q).await, vec![req("biz", "new")]);
}

#[tokio::test]
async fn for_object_dedups_in_the_queue() {
    let q = rlq();
    for _ in 0..3 {
        EnqueueRequestForObject.create(&CreateEvent::new(Arc::new(pod("a", "b"))), &q);
    }
    assert_eq!(q.len(), 1);
}

#[tokio::test]
async fn low_priority_for_initial_list_creates_and_resyncs_on_a_priority_queue() {
    let h = EnqueueRequestForObject;
    let q = pq();
    let initial = CreateEvent {
        object: Arc::new(pod("ns", "initial")),
        is_in_initial_list: true,
    };
    h.create(&initial, &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "initial"), LOW_PRIORITY)]);
    h.create(&CreateEvent::new(Arc::new(pod("ns", "fresh"))), &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "fresh"), 0)]);

    let resync = UpdateEvent::new(
        Arc::new(with_rv(pod("ns", "r"), "5")),
        Arc::new(with_rv(pod("ns", "r"), "5")),
    );
    h.update(&resync, &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "r"), LOW_PRIORITY)]);
    let change = UpdateEvent::new(
        Arc::new(with_rv(pod("ns", "c"), "5")),
        Arc::new(with_rv(pod("ns", "c"), "6")),
    );
    h.update(&change, &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "c"), 0)]);
    // Deletes and generic events keep the default priority.
    h.delete(&DeleteEvent::new(Arc::new(pod("ns", "d"))), &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "d"), 0)]);
}

#[tokio::test]
async fn fresh_events_are_handed_out_before_low_priority_ones() {
    let h = EnqueueRequestForObject;
    let q = pq();
    for i in 0..3 {
        let e = CreateEvent {
            object: Arc::new(pod("ns", &format!("old-{i}"))),
            is_in_initial_list: true,
        };
        h.create(&e, &q);
    }
    h.create(&CreateEvent::new(Arc::new(pod("ns", "new"))), &q);
    let order = drain(&q).await;
    assert_eq!(order.first(), Some(&(req("ns", "new"), 0)));
    assert_eq!(order.len(), 4);
}

// ---- EnqueueRequestForOwner ----

fn rs_owner() -> EnqueueRequestForOwner {
    EnqueueRequestForOwner::new::<ReplicaSet>().match_every_owner()
}

#[tokio::test]
async fn owner_enqueues_the_owner_for_create_delete_generic() {
    let q = rlq();
    let p = Arc::new(owned(
        pod("biz", "p"),
        &[("apps/v1", "ReplicaSet", "foo-parent", true)],
    ));
    let h = rs_owner();
    h.create(&CreateEvent::new(p.clone()), &q);
    assert_eq!(keys(&q).await, vec![req("biz", "foo-parent")]);
    h.delete(&DeleteEvent::new(p.clone()), &q);
    assert_eq!(keys(&q).await, vec![req("biz", "foo-parent")]);
    h.generic(&GenericEvent::new(p), &q);
    assert_eq!(keys(&q).await, vec![req("biz", "foo-parent")]);
}

#[tokio::test]
async fn owner_update_enqueues_owners_of_old_and_new() {
    let q = rlq();
    let old = owned(
        pod("foo", "p"),
        &[("apps/v1", "ReplicaSet", "foo1-parent", true)],
    );
    let new = owned(
        pod("biz", "p"),
        &[("apps/v1", "ReplicaSet", "foo2-parent", true)],
    );
    rs_owner().update(&UpdateEvent::new(Arc::new(old), Arc::new(new)), &q);
    assert_eq!(
        keys(&q).await,
        vec![req("biz", "foo2-parent"), req("foo", "foo1-parent")]
    );
}

#[tokio::test]
async fn owner_update_with_the_same_owner_enqueues_it_once() {
    let q = rlq();
    let p = owned(pod("ns", "p"), &[("apps/v1", "ReplicaSet", "parent", true)]);
    rs_owner().update(&UpdateEvent::new(Arc::new(p.clone()), Arc::new(p)), &q);
    assert_eq!(drain(&q).await.len(), 1);
}

#[tokio::test]
async fn owner_ignores_other_kinds_and_groups_but_not_versions() {
    let q = rlq();
    let h = rs_owner();
    let wrong_kind = owned(pod("ns", "p"), &[("apps/v1", "Deployment", "d", true)]);
    h.create(&CreateEvent::new(Arc::new(wrong_kind)), &q);
    let wrong_group = owned(
        pod("ns", "p"),
        &[("extensions/v1beta1", "ReplicaSet", "x", true)],
    );
    h.create(&CreateEvent::new(Arc::new(wrong_group)), &q);
    assert!(q.is_empty());
    let other_version = owned(pod("ns", "p"), &[("apps/v2", "ReplicaSet", "v2", true)]);
    h.create(&CreateEvent::new(Arc::new(other_version)), &q);
    assert_eq!(keys(&q).await, vec![req("ns", "v2")]);
}

#[tokio::test]
async fn owner_without_references_enqueues_nothing() {
    let q = rlq();
    rs_owner().create(&CreateEvent::new(Arc::new(pod("ns", "p"))), &q);
    assert!(q.is_empty());
}

#[tokio::test]
async fn owner_with_unparseable_api_version_enqueues_nothing() {
    let q = rlq();
    let p = owned(
        pod("ns", "p"),
        &[
            ("v1/fail/bad", "ReplicaSet", "bad", true),
            ("apps/v1", "ReplicaSet", "good", false),
        ],
    );
    rs_owner().create(&CreateEvent::new(Arc::new(p)), &q);
    assert!(q.is_empty());
}

#[tokio::test]
async fn owner_enqueues_every_matching_owner_when_asked() {
    let q = rlq();
    let p = owned(
        pod("ns", "p"),
        &[
            ("apps/v1", "ReplicaSet", "a", false),
            ("apps/v1", "ReplicaSet", "b", true),
            ("apps/v1", "Deployment", "c", false),
        ],
    );
    rs_owner().create(&CreateEvent::new(Arc::new(p.clone())), &q);
    assert_eq!(keys(&q).await, vec![req("ns", "a"), req("ns", "b")]);
    // By default only the controller reference counts.
    EnqueueRequestForOwner::new::<ReplicaSet>().create(&CreateEvent::new(Arc::new(p)), &q);
    assert_eq!(keys(&q).await, vec![req("ns", "b")]);
}

#[tokio::test]
async fn owner_controller_only_with_no_controller_reference_enqueues_nothing() {
    let q = rlq();
    let p = owned(pod("ns", "p"), &[("apps/v1", "ReplicaSet", "a", false)]);
    let h = EnqueueRequestForOwner::new::<ReplicaSet>().only_controller_owner();
    h.create(&CreateEvent::new(Arc::new(p)), &q);
    assert!(q.is_empty());
}

#[tokio::test]
async fn cluster_scoped_owner_gets_no_namespace() {
    let q = rlq();
    let p = owned(pod("ns", "p"), &[("v1", "Node", "node-1", true)]);
    EnqueueRequestForOwner::new::<Node>().create(&CreateEvent::new(Arc::new(p)), &q);
    assert_eq!(keys(&q).await, vec![Request::cluster("node-1")]);
}

#[tokio::test]
async fn owner_follows_the_low_priority_rule() {
    let q = pq();
    let p = owned(
        with_rv(pod("ns", "p"), "1"),
        &[("apps/v1", "ReplicaSet", "o", true)],
    );
    let h = rs_owner();
    let e = CreateEvent {
        object: Arc::new(p.clone()),
        is_in_initial_list: true,
    };
    h.create(&e, &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "o"), LOW_PRIORITY)]);
    h.update(&UpdateEvent::new(Arc::new(p.clone()), Arc::new(p)), &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "o"), LOW_PRIORITY)]);
}

// ---- EnqueueRequestsFromMapFunc ----

fn mapper() -> EnqueueRequestsFromMapFunc<Pod> {
    EnqueueRequestsFromMapFunc::new(|p: &Arc<Pod>| {
        let name = p.metadata.name.clone().unwrap_or_default();
        vec![
            Request::new("bar", format!("{name}-1")),
            Request::new("bar", format!("{name}-2")),
            Request::new("bar", format!("{name}-1")),
        ]
    })
}

#[tokio::test]
async fn map_func_enqueues_what_it_maps_to() {
    let q = rlq();
    let h = mapper();
    h.create(&CreateEvent::new(Arc::new(pod("ns", "a"))), &q);
    assert_eq!(keys(&q).await, vec![req("bar", "a-1"), req("bar", "a-2")]);
    h.delete(&DeleteEvent::new(Arc::new(pod("ns", "d"))), &q);
    assert_eq!(keys(&q).await, vec![req("bar", "d-1"), req("bar", "d-2")]);
    h.generic(&GenericEvent::new(Arc::new(pod("ns", "g"))), &q);
    assert_eq!(keys(&q).await, vec![req("bar", "g-1"), req("bar", "g-2")]);
}

#[tokio::test]
async fn map_func_update_maps_old_and_new() {
    let q = rlq();
    let e = UpdateEvent::new(Arc::new(pod("ns", "old")), Arc::new(pod("ns", "new")));
    mapper().update(&e, &q);
    assert_eq!(
        keys(&q).await,
        vec![
            req("bar", "new-1"),
            req("bar", "new-2"),
            req("bar", "old-1"),
            req("bar", "old-2")
        ]
    );
}

#[tokio::test]
async fn map_func_follows_the_low_priority_rule() {
    let q = pq();
    let p = with_rv(pod("ns", "x"), "7");
    mapper().update(&UpdateEvent::new(Arc::new(p.clone()), Arc::new(p)), &q);
    let got = drain(&q).await;
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|(_, prio)| *prio == LOW_PRIORITY));
}

// ---- Funcs ----

#[tokio::test]
async fn funcs_call_only_what_is_set() {
    let q = rlq();
    let empty: Funcs<Pod> = Funcs::default();
    let p = Arc::new(pod("ns", "p"));
    empty.create(&CreateEvent::new(p.clone()), &q);
    empty.update(&UpdateEvent::new(p.clone(), p.clone()), &q);
    empty.delete(&DeleteEvent::new(p.clone()), &q);
    empty.generic(&GenericEvent::new(p.clone()), &q);
    assert!(q.is_empty());

    let h: Funcs<Pod> = Funcs::default()
        .on_create(|_, q| q.add(Request::new("c", "c")))
        .on_update(|_, q| q.add(Request::new("u", "u")))
        .on_delete(|e, q| {
            assert!(e.delete_state_unknown);
            q.add(Request::new("d", "d"))
        })
        .on_generic(|_, q| q.add(Request::new("g", "g")));
    h.create(&CreateEvent::new(p.clone()), &q);
    h.update(&UpdateEvent::new(p.clone(), p.clone()), &q);
    let del = DeleteEvent {
        object: p.clone(),
        delete_state_unknown: true,
    };
    h.delete(&del, &q);
    h.generic(&GenericEvent::new(p), &q);
    assert_eq!(
        keys(&q).await,
        vec![req("c", "c"), req("d", "d"), req("g", "g"), req("u", "u")]
    );
}

#[tokio::test]
async fn funcs_apply_the_low_priority_rule_but_keep_explicit_priorities() {
    let q = pq();
    let h: Funcs<Pod> = Funcs::default().on_create(|_, q| {
        q.add(Request::new("ns", "plain"));
        let opts = AddOpts {
            priority: Some(10),
            ..AddOpts::default()
        };
        q.add_with_opts(opts, Request::new("ns", "explicit"));
    });
    let e = CreateEvent {
        object: Arc::new(pod("ns", "p")),
        is_in_initial_list: true,
    };
    h.create(&e, &q);
    let mut got = drain(&q).await;
    got.sort();
    assert_eq!(
        got,
        vec![
            (req("ns", "explicit"), 10),
            (req("ns", "plain"), LOW_PRIORITY)
        ]
    );
}

struct AddEverything;

impl EventHandler<Pod> for AddEverything {
    fn create(&self, e: &CreateEvent<Pod>, q: &dyn Queue<Request>) {
        q.add(Request::from_obj(&*e.object))
    }
    fn update(&self, e: &UpdateEvent<Pod>, q: &dyn Queue<Request>) {
        q.add(Request::from_obj(&*e.object_new))
    }
    fn delete(&self, e: &DeleteEvent<Pod>, q: &dyn Queue<Request>) {
        q.add(Request::from_obj(&*e.object))
    }
    fn generic(&self, e: &GenericEvent<Pod>, q: &dyn Queue<Request>) {
        q.add(Request::from_obj(&*e.object))
    }
}

#[tokio::test]
async fn wrapping_a_custom_handler_lowers_unchanged_events_only_on_priority_queues() {
    let h = with_low_priority_when_unchanged(AddEverything);
    let e = CreateEvent {
        object: Arc::new(pod("ns", "p")),
        is_in_initial_list: true,
    };
    let q = pq();
    h.create(&e, &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "p"), LOW_PRIORITY)]);
    // Without the wrapper a custom handler adds at the default priority.
    AddEverything.create(&e, &q);
    assert_eq!(drain(&q).await, vec![(req("ns", "p"), 0)]);
    // On a plain queue the wrapper changes nothing.
    let plain = rlq();
    h.create(&e, &plain);
    assert_eq!(drain(&plain).await, vec![(req("ns", "p"), 0)]);
}

// ---- predicates ----

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn labelled(name: &str, pairs: &[(&str, &str)]) -> Pod {
    let mut p = pod("ns", name);
    p.metadata.labels = labels(pairs);
    p
}

fn update(old: Pod, new: Pod) -> UpdateEvent<Pod> {
    UpdateEvent::new(Arc::new(old), Arc::new(new))
}

/// Whether `p` passes create, delete and generic events for `obj`.
fn passes_non_updates(p: &dyn Predicate<Pod>, obj: Pod) -> [bool; 3] {
    let o = Arc::new(obj);
    [
        p.create(&CreateEvent::new(o.clone())),
        p.delete(&DeleteEvent::new(o.clone())),
        p.generic(&GenericEvent::new(o)),
    ]
}

#[test]
fn funcs_pass_by_default_and_use_what_is_set() {
    let all: predicate::Funcs<Pod> = predicate::Funcs::default();
    assert_eq!(passes_non_updates(&all, pod("a", "b")), [true; 3]);
    assert!(all.update(&update(pod("a", "b"), pod("a", "b"))));

    let none: predicate::Funcs<Pod> = predicate::Funcs::default()
        .on_create(|_| false)
        .on_update(|_| false)
        .on_delete(|_| false)
        .on_generic(|_| false);
    assert_eq!(passes_non_updates(&none, pod("a", "b")), [false; 3]);
    assert!(!none.update(&update(pod("a", "b"), pod("a", "b"))));
}

#[test]
fn new_predicate_funcs_filters_every_event_and_judges_updates_by_the_new_object() {
    let p = predicate::new_predicate_funcs(|o: &Pod| o.metadata.name.as_deref() == Some("keep"));
    assert_eq!(passes_non_updates(&p, pod("ns", "keep")), [true; 3]);
    assert_eq!(passes_non_updates(&p, pod("ns", "drop")), [false; 3]);
    assert!(p.update(&update(pod("ns", "drop"), pod("ns", "keep"))));
    assert!(!p.update(&update(pod("ns", "keep"), pod("ns", "drop"))));
}

#[test]
fn resource_version_changed() {
    let p = ResourceVersionChanged;
    assert_eq!(passes_non_updates(&p, pod("a", "b")), [true; 3]);
    let v = |rv: &str| with_rv(pod("a", "b"), rv);
    assert!(!p.update(&update(v("v1"), v("v1"))));
    assert!(p.update(&update(v("v1"), v("v2"))));
    assert!(p.update(&update(pod("a", "b"), v("v2"))));
    assert!(!p.update(&update(pod("a", "b"), pod("a", "b"))));
}

#[test]
fn generation_changed() {
    let p = GenerationChanged;
    assert_eq!(passes_non_updates(&p, pod("a", "b")), [true; 3]);
    let g = |gen_: i64, rv: &str| {
        let mut o = with_rv(pod("a", "b"), rv);
        o.metadata.generation = Some(gen_);
        o
    };
    // A status update bumps the resourceVersion but not the generation.
    assert!(!p.update(&update(g(1, "v1"), g(1, "v2"))));
    assert!(p.update(&update(g(1, "v1"), g(2, "v2"))));
    assert!(!p.update(&update(pod("a", "b"), pod("a", "b"))));
}

#[test]
fn label_changed() {
    let p = LabelChanged;
    assert_eq!(passes_non_updates(&p, pod("a", "b")), [true; 3]);
    let same = update(
        labelled("b", &[("foo", "bar")]),
        labelled("b", &[("foo", "bar")]),
    );
    assert!(!p.update(&same));
    let added = update(
        labelled("b", &[("foo", "bar")]),
        labelled("b", &[("foo", "bar"), ("faa", "bor")]),
    );
    assert!(p.update(&added));
    let removed = update(
        labelled("b", &[("foo", "bar"), ("faa", "bor")]),
        labelled("b", &[("foo", "bar")]),
    );
    assert!(p.update(&removed));
    let changed = update(
        labelled("b", &[("foo", "bar")]),
        labelled("b", &[("foo", "baz")]),
    );
    assert!(p.update(&changed));
    assert!(p.update(&update(pod("a", "b"), labelled("b", &[("foo", "bar")]))));
    assert!(!p.update(&update(pod("a", "b"), pod("a", "b"))));
}

#[test]
fn annotation_changed() {
    let p = AnnotationChanged;
    assert_eq!(passes_non_updates(&p, pod("a", "b")), [true; 3]);
    let ann = |pairs: &[(&str, &str)]| {
        let mut o = pod("a", "b");
        o.metadata.annotations = labels(pairs);
        o
    };
    assert!(!p.update(&update(ann(&[("a", "1")]), ann(&[("a", "1")]))));
    assert!(p.update(&update(ann(&[("a", "1")]), ann(&[("a", "2")]))));
    assert!(p.update(&update(ann(&[("a", "1")]), ann(&[("a", "1"), ("b", "2")]))));
    assert!(p.update(&update(ann(&[("a", "1"), ("b", "2")]), ann(&[("a", "1")]))));
    // A label change is not an annotation change.
    assert!(!p.update(&update(
        labelled("b", &[("x", "1")]),
        labelled("b", &[("x", "2")])
    )));
}

fn selector(match_labels: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> LabelSelector {
    LabelSelector {
        match_labels: labels(match_labels).filter(|m| !m.is_empty()),
        match_expressions: Some(
            exprs
                .iter()
                .map(|(key, op, values)| LabelSelectorRequirement {
                    key: key.to_string(),
                    operator: op.to_string(),
                    values: (!values.is_empty())
                        .then(|| values.iter().map(|v| v.to_string()).collect()),
                })
                .collect(),
        ),
    }
}

#[test]
fn label_selector_matches_labels_and_expressions() {
    let p = LabelSelectorPredicate::new(&selector(&[("foo", "bar")], &[])).expect("valid");
    assert_eq!(
        passes_non_updates(&p, labelled("x", &[("foo", "bar")])),
        [true; 3]
    );
    assert_eq!(
        passes_non_updates(&p, labelled("x", &[("foo", "baz")])),
        [false; 3]
    );
    assert_eq!(passes_non_updates(&p, pod("ns", "x")), [false; 3]);
    assert!(p.update(&update(pod("ns", "x"), labelled("x", &[("foo", "bar")]))));
    assert!(!p.update(&update(labelled("x", &[("foo", "bar")]), pod("ns", "x"))));

    let exprs = selector(
        &[],
        &[
            ("env", "In", &["prod", "staging"]),
            ("tier", "NotIn", &["db"]),
            ("app", "Exists", &[]),
            ("legacy", "DoesNotExist", &[]),
        ],
    );
    let p = LabelSelectorPredicate::new(&exprs).expect("valid");
    let ok = labelled("x", &[("env", "prod"), ("tier", "web"), ("app", "a")]);
    assert!(p.matches(&ok));
    assert!(!p.matches(&labelled("x", &[("env", "dev"), ("app", "a")])));
    assert!(!p.matches(&labelled(
        "x",
        &[("env", "prod"), ("tier", "db"), ("app", "a")]
    )));
    assert!(!p.matches(&labelled("x", &[("env", "prod")])));
    assert!(!p.matches(&labelled(
        "x",
        &[("env", "prod"), ("app", "a"), ("legacy", "y")]
    )));
}

#[test]
fn empty_label_selector_matches_everything() {
    let p = LabelSelectorPredicate::new(&LabelSelector::default()).expect("valid");
    assert!(p.matches(&pod("ns", "unlabelled")));
    assert!(p.matches(&labelled("x", &[("any", "thing")])));
}

#[test]
fn invalid_label_selectors_are_errors() {
    for bad in [
        selector(&[], &[("k", "Equals", &["v"])]),
        selector(&[], &[("k", "In", &[])]),
        selector(&[], &[("k", "NotIn", &[])]),
        selector(&[], &[("k", "Exists", &["v"])]),
        selector(&[], &[("k", "DoesNotExist", &["v"])]),
    ] {
        let err = LabelSelectorPredicate::new(&bad).expect_err("invalid selector");
        assert!(err.to_string().contains("\"k\""), "{err}");
    }
}

fn yes() -> BoxPredicate<Pod> {
    Arc::new(predicate::Funcs::default())
}

fn no() -> BoxPredicate<Pod> {
    Arc::new(predicate::new_predicate_funcs(|_: &Pod| false))
}

#[test]
fn and_or_not() {
    let o = pod("ns", "p");
    assert_eq!(
        passes_non_updates(&predicate::and([yes(), yes()]), o.clone()),
        [true; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::and([yes(), no()]), o.clone()),
        [false; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::and([]), o.clone()),
        [true; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::or([no(), yes()]), o.clone()),
        [true; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::or([no(), no()]), o.clone()),
        [false; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::or([]), o.clone()),
        [false; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::not(yes()), o.clone()),
        [false; 3]
    );
    assert_eq!(
        passes_non_updates(&predicate::not(no()), o.clone()),
        [true; 3]
    );
    let u = update(o.clone(), o);
    assert!(!predicate::and([yes(), no()]).update(&u));
    assert!(predicate::or([yes(), no()]).update(&u));
    // Stateless: the same update judged twice gives the same answer.
    let rv = ResourceVersionChanged;
    let changed = update(with_rv(pod("a", "b"), "1"), with_rv(pod("a", "b"), "2"));
    assert!(Predicate::<Pod>::update(&rv, &changed));
    assert!(Predicate::<Pod>::update(&rv, &changed));
}
