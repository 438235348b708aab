//! Triggers: what queued a key, kept through the queue's de-duplication so a reconcile can
//! say why it ran (controller-runtime #1186 asks for this; its queue forgets).
//!
//! A [`Trigger`] is one cause: an event a source delivered (where from — `For`, `Owns`,
//! `Watches`, a map func, a channel, a func source — which event, and the object: an
//! [`ObjectRef`], its kind, resourceVersion and stored trace context, and its namespace and
//! name unless it is the reconciled object itself), or a requeue the controller made (error backoff,
//! `requeue_after`, `requeue`). [`Triggers`] is the set of one queued key: adds that the
//! queue de-duplicates are merged into it (same origin, event and object: one entry, its
//! count up and its resourceVersion the newest), and it holds at most [`MAX_TRIGGERS`]
//! entries, counting the rest as dropped.
//!
//! The priority queue keeps a key's set in the key's own slot (a `Kept`: the first cause
//! inline, no allocation until a second distinct cause joins, and copying a trigger in costs
//! no allocation: see `object`); [`super::Triggered`] keeps them beside any other
//! [`super::Queue`]. Sources stamp their adds with [`super::Stamped`]. The controller
//! hands the set of each key it takes to the reconcile, which reads it with
//! `reconcile::triggers()`.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

mod object;

pub use object::{Kind, ObjectRef, TRACEPARENT_ANNOTATIONS, traceparent_from_annotations};

/// The most distinct triggers a queued key keeps; further ones are counted in
/// [`Triggers::dropped`].
pub const MAX_TRIGGERS: usize = 16;

/// Where a trigger came from: the handler of a cache-backed source, another kind of
/// source, or the controller's own requeue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// `EnqueueRequestForObject` on a cache-backed source (what the builder's `For` uses).
    For,
    /// `EnqueueRequestForOwner` (the builder's `Owns`).
    Owns,
    /// `EnqueueRequestsFromMapFunc` on a cache-backed source.
    MapFunc,
    /// Any other handler on a cache-backed source (the builder's `Watches`).
    Watches,
    /// A `source::Channel`.
    Channel,
    /// A `source::Func`, or a caller adding to the queue directly.
    Func,
    /// The controller, after a reconcile (see [`Event`] for why).
    Requeue,
}

impl Origin {
    /// The lower-case name used in logs and as the `source` metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::For => "for",
            Self::Owns => "owns",
            Self::MapFunc => "map-func",
            Self::Watches => "watches",
            Self::Channel => "channel",
            Self::Func => "func",
            Self::Requeue => "requeue",
        }
    }
}

/// What happened: an event type, or the cause of a requeue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// An object was created (or listed: see [`Trigger::initial_list`]).
    Create,
    /// An object changed.
    Update,
    /// An update that kept the resourceVersion: the informer's resync (the sync period).
    Resync,
    /// An object was deleted.
    Delete,
    /// A generic event (channels, func sources).
    Generic,
    /// The last reconcile failed: re-added with the rate limiter's backoff.
    ErrorBackoff,
    /// The last reconcile asked for `requeue_after(d)`.
    RequeueAfter,
    /// The last reconcile asked for `requeue()`: re-added through the rate limiter.
    RateLimited,
}

impl Event {
    /// The lower-case name used in logs and as the `event` metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Resync => "resync",
            Self::Delete => "delete",
            Self::Generic => "generic",
            Self::ErrorBackoff => "error_backoff",
            Self::RequeueAfter => "requeue_after",
            Self::RateLimited => "rate_limited",
        }
    }
}

/// One cause of a queued key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// Where it came from.
    pub origin: Origin,
    /// What happened.
    pub event: Event,
    /// True for a create from the informer's initial list (a start-up or relist), not
    /// from a watch event.
    pub initial_list: bool,
    /// The object the event was about (none for requeues and func sources). Copying it
    /// allocates nothing (see [`ObjectRef`]).
    pub object: Option<ObjectRef>,
    /// How many adds were merged into this trigger (at least 1).
    pub count: u32,
}

impl Trigger {
    /// A trigger with no object.
    pub fn new(origin: Origin, event: Event) -> Self {
        Self {
            origin,
            event,
            initial_list: false,
            object: None,
            count: 1,
        }
    }

    /// The controller's requeue for `cause`.
    pub fn requeue(cause: Event) -> Self {
        Self::new(Origin::Requeue, cause)
    }

    /// This trigger about `object`.
    pub fn with_object(mut self, object: ObjectRef) -> Self {
        self.object = Some(object);
        self
    }

    /// This trigger marked as coming from the informer's initial list.
    pub fn in_initial_list(mut self, initial: bool) -> Self {
        self.initial_list = initial;
        self
    }

    /// Whether `other` is this very add again: the same cause about the same object
    /// reference (what a source lends for each add of one event), so merging it only counts
    /// it. The dedup hit's fast path: byte, pointer and number compares.
    #[inline]
    fn repeats(&self, other: &Trigger) -> bool {
        (self.origin, self.event, self.initial_list)
            == (other.origin, other.event, other.initial_list)
            && match (&self.object, &other.object) {
                (Some(a), Some(b)) => a.is(b),
                (None, None) => true,
                _ => false,
            }
    }

    /// Whether `other` is the same cause (it merges into this one).
    #[inline]
    fn same_cause(&self, other: &Trigger) -> bool {
        self.origin == other.origin
            && self.event == other.event
            && self.initial_list == other.initial_list
            && match (&self.object, &other.object) {
                (None, None) => true,
                (Some(a), Some(b)) => a.is(b) || a.same_object(b),
                _ => false,
            }
    }

    /// Merges `newer`, the same cause seen again (owned or borrowed): counts it, keeps its
    /// view of the object (the newer resourceVersion and trace context); a borrowed one's
    /// object is cloned only if it is not the one kept already.
    #[inline]
    fn merge_from(&mut self, newer: Cow<'_, Trigger>) {
        self.count = self.count.saturating_add(newer.count);
        let same = match (&self.object, &newer.object) {
            (_, None) => true,
            (Some(a), Some(b)) => a.is(b),
            (None, Some(_)) => false,
        };
        if !same {
            self.object = newer.into_owned().object;
        }
    }
}

impl fmt::Display for Trigger {
    /// `owns:update ConfigMap ns/name@rv`, `for:create(initial) ConfigMap@rv` (the
    /// reconciled object itself: the request names it), `requeue:requeue_after`, with `×n`
    /// when `n` adds were merged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.origin.as_str(), self.event.as_str())?;
        if self.initial_list {
            f.write_str("(initial)")?;
        }
        if let Some(o) = &self.object {
            write!(f, " {o}")?;
        }
        if self.count > 1 {
            write!(f, " ×{}", self.count)?;
        }
        Ok(())
    }
}

/// The bounded, merged set of triggers of one queued key (what a reconcile reads).
///
/// Inside it is the queue's own slot contents (a `Kept`, moved out at hand-out, nothing
/// rebuilt) and the raw stamps of the key's queue wait, turned into a `Duration` only when
/// [`Triggers::waited`] is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Triggers {
    kept: Kept,
    wait: Wait,
}

/// How long a key waited, as far as the queue measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Wait {
    /// Not measured.
    #[default]
    Unmeasured,
    /// The metrics' (ready, hand-out) clock stamps (`metrics::clock::now_ticks`).
    Ticks(u64, u64),
    /// Measured by the caller.
    Measured(Duration),
}

impl Triggers {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `t`: merged into the entry of the same cause if there is one, else appended
    /// while fewer than [`MAX_TRIGGERS`] are kept, else counted as dropped.
    pub fn push(&mut self, t: Trigger) {
        self.kept.push(Cow::Owned(t))
    }

    /// Counts `t` as dropped without looking for room.
    pub(crate) fn push_dropped(&mut self, t: Trigger) {
        self.kept.many().dropped += u64::from(t.count);
    }

    /// Adds every trigger of `other` (and its dropped count).
    pub fn extend(&mut self, other: Triggers) {
        match other.kept {
            Kept::None => {}
            Kept::One(t) => self.push(t),
            Kept::Many(m) => {
                if m.dropped > 0 {
                    self.kept.many().dropped += m.dropped;
                }
                m.items.into_iter().for_each(|t| self.push(t));
            }
        }
    }

    /// The kept triggers, oldest cause first.
    pub fn iter(&self) -> std::slice::Iter<'_, Trigger> {
        self.kept.items().iter()
    }

    /// How many distinct triggers are kept.
    pub fn len(&self) -> usize {
        self.kept.items().len()
    }

    /// Whether nothing is kept (and nothing dropped).
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.dropped() == 0
    }

    /// How long the key waited in the queue: from when it became ready (added with no
    /// delay, or the delay of a `requeue_after` or a back-off ended) to the `get` that took
    /// it, as client-go's `workqueue_queue_duration_seconds` counts. `None` when the queue
    /// did not measure it: the priority queue reads it from the stamps its metrics take
    /// (a controller's queue has metrics), so without metrics it stays unmeasured.
    pub fn waited(&self) -> Option<Duration> {
        match self.wait {
            Wait::Unmeasured => None,
            Wait::Ticks(ready, out) => Some(super::metrics::duration_between(ready, out)),
            Wait::Measured(d) => Some(d),
        }
    }

    /// Sets [`Triggers::waited`].
    pub(crate) fn set_waited(&mut self, waited: Duration) {
        self.wait = Wait::Measured(waited);
    }

    /// How many adds were not kept because the set was full.
    pub fn dropped(&self) -> u64 {
        match &self.kept {
            Kept::Many(m) => m.dropped,
            _ => 0,
        }
    }

    /// The trace contexts of the objects behind the triggers, each once.
    pub fn traceparents(&self) -> impl Iterator<Item = &str> {
        let mut seen: Vec<&str> = Vec::new();
        self.iter()
            .filter_map(|t| t.object.as_ref()?.traceparent())
            .filter(move |tp| {
                let new = !seen.contains(tp);
                if new {
                    seen.push(tp);
                }
                new
            })
    }
}

/// The triggers a queue holds for one key until the key is taken, as the priority queue
/// keeps them in each key's slot (and what a [`Triggers`] holds): nothing, the first
/// trigger inline (most keys are queued for one cause, or for one cause many times over:
/// no allocation), or a boxed set once a second cause joins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Kept {
    /// No trigger since the key was last taken.
    #[default]
    None,
    /// One cause (merged adds included).
    One(Trigger),
    /// Two causes or more, or some dropped.
    Many(Box<Many>),
}

/// Two causes or more: at most [`MAX_TRIGGERS`] kept, the rest counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Many {
    items: Vec<Trigger>,
    dropped: u64,
}

impl Kept {
    /// Records `t`: merged into the cause it repeats, else added to the set. A borrowed
    /// trigger is cloned only when it is stored or brings a newer object: a repeat of the
    /// same add (the same object) touches no reference count.
    #[inline]
    pub(crate) fn push(&mut self, t: Cow<'_, Trigger>) {
        match self {
            Kept::None => *self = Kept::One(t.into_owned()),
            Kept::One(first) if first.repeats(&t) => {
                first.count = first.count.saturating_add(t.count)
            }
            Kept::One(first) if first.same_cause(&t) => first.merge_from(t),
            Kept::One(_) => self.many().push(t),
            Kept::Many(m) => m.push(t),
        }
    }

    /// The set as [`Many`], converted if it was not.
    fn many(&mut self) -> &mut Many {
        if !matches!(self, Kept::Many(_)) {
            let items = match std::mem::take(self) {
                Kept::One(t) => vec![t],
                _ => Vec::new(),
            };
            *self = Kept::Many(Box::new(Many { items, dropped: 0 }));
        }
        match self {
            Kept::Many(m) => m,
            _ => unreachable!("converted above"),
        }
    }

    /// The kept triggers.
    fn items(&self) -> &[Trigger] {
        match self {
            Kept::None => &[],
            Kept::One(t) => std::slice::from_ref(t),
            Kept::Many(m) => &m.items,
        }
    }

    /// The set recorded (`None` if nothing was), with the (ready, hand-out) stamps of the
    /// key's queue wait if they were taken: a move, nothing rebuilt.
    #[inline]
    pub(crate) fn into_triggers(self, wait: Option<(u64, u64)>) -> Option<Triggers> {
        if matches!(self, Kept::None) {
            return None;
        }
        let wait = wait.map_or(Wait::Unmeasured, |(r, o)| Wait::Ticks(r, o));
        Some(Triggers { kept: self, wait })
    }
}

impl Many {
    /// [`Kept::push`] into a set of two or more.
    fn push(&mut self, t: Cow<'_, Trigger>) {
        // Most adds repeat the last cause: check it first.
        if let Some(last) = self.items.last_mut()
            && last.same_cause(&t)
        {
            last.merge_from(t);
        } else if let Some(same) = self.items.iter_mut().find(|x| x.same_cause(&t)) {
            same.merge_from(t);
        } else if self.items.len() < MAX_TRIGGERS {
            self.items.push(t.into_owned());
        } else {
            self.dropped += u64::from(t.count);
        }
    }
}

impl<'a> IntoIterator for &'a Triggers {
    type Item = &'a Trigger;
    type IntoIter = std::slice::Iter<'a, Trigger>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Display for Triggers {
    /// The triggers joined by `, `, then `(+n dropped)` if any were; `none` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, t) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}")?;
        }
        if self.dropped() > 0 {
            let sep = if self.kept.items().is_empty() {
                ""
            } else {
                " "
            };
            write!(f, "{sep}(+{} dropped)", self.dropped())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str, rv: &str) -> ObjectRef {
        ObjectRef::named(Kind::intern("ConfigMap"), "ns", name, rv)
    }

    #[test]
    fn same_cause_merges_keeping_the_newest_version() {
        let mut s = Triggers::new();
        s.push(Trigger::new(Origin::Owns, Event::Update).with_object(cm("a", "1")));
        s.push(Trigger::new(Origin::Owns, Event::Update).with_object(cm("a", "2")));
        s.push(Trigger::requeue(Event::RequeueAfter));
        assert_eq!(s.len(), 2);
        assert_eq!(
            s.to_string(),
            "owns:update ConfigMap ns/a@2 ×2, requeue:requeue_after"
        );
    }

    #[test]
    fn a_trigger_fits_in_four_words() {
        // What each queued key's slot holds inline: a larger trigger would cost every key.
        assert!(std::mem::size_of::<Trigger>() <= 32);
        assert_eq!(std::mem::size_of::<Kept>(), std::mem::size_of::<Trigger>());
    }

    #[test]
    fn distinct_causes_beyond_the_cap_are_counted_as_dropped() {
        let mut s = Triggers::new();
        for i in 0..MAX_TRIGGERS + 5 {
            s.push(Trigger::new(Origin::For, Event::Create).with_object(cm(&i.to_string(), "1")));
        }
        assert_eq!((s.len(), s.dropped()), (MAX_TRIGGERS, 5));
        assert!(s.to_string().ends_with("(+5 dropped)"));
    }

    #[test]
    fn extend_merges_sets_and_keeps_their_dropped_counts() {
        let mut full = Triggers::new();
        for i in 0..MAX_TRIGGERS + 2 {
            full.push(
                Trigger::new(Origin::For, Event::Create).with_object(cm(&i.to_string(), "1")),
            );
        }
        let mut one = Triggers::new();
        one.push(Trigger::new(Origin::For, Event::Create).with_object(cm("0", "2")));
        one.extend(full);
        // "0" merged (the later add's resourceVersion kept), 1..15 appended up to the cap,
        // the full set's two dropped carried over.
        assert_eq!((one.len(), one.dropped()), (MAX_TRIGGERS, 2));
        let first = one.iter().next().map(ToString::to_string);
        assert_eq!(first.as_deref(), Some("for:create ConfigMap ns/0@1 ×2"));
        let mut dropped_only = Triggers::new();
        dropped_only.push_dropped(Trigger::requeue(Event::RateLimited));
        assert!(!dropped_only.is_empty());
        assert_eq!(
            (dropped_only.len(), dropped_only.to_string()),
            (0, "(+1 dropped)".into())
        );
    }
}
