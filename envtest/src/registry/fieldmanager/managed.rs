//! `metadata.managedFields` entries
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/managedfields.go`) read from and written
//! to stored objects, and the apply step itself: conflict detection against the other managers,
//! merging the applied configuration into the live object, and removing the fields a manager
//! stopped applying that nobody else owns. Field sets come from `fieldset`; server-side apply
//! ([`endpoints::handlers::apply`](crate::endpoints::handlers::apply)) runs this inside the store's
//! update path so that it sees exactly the committed state.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::fieldset::{self, FieldSet, Shape};
use crate::api::strategic::ListStrategy;

/// One managedFields entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub set: FieldSet,
}

impl Entry {
    /// The entry as stored, with `fields` as its `fieldsV1` (`None`: `self.set`'s), its names
    /// moved when the entry is owned. (Built by hand: `json!` would copy `fields` by
    /// serializing it.)
    fn into_json(entry: Cow<'_, Entry>, fields: Option<Value>) -> Value {
        let fields = fields.unwrap_or_else(|| fieldset::to_fields_v1(&entry.set));
        let e = match entry {
            Cow::Owned(e) => e,
            Cow::Borrowed(e) => Entry {
                manager: e.manager.clone(),
                operation: e.operation.clone(),
                api_version: e.api_version.clone(),
                time: e.time.clone(),
                subresource: e.subresource.clone(),
                set: FieldSet::new(),
            },
        };
        // Inserted from the last key to the first: each insert then finds its place at the
        // front of the map's node after one comparison.
        let mut v = Map::new();
        // `time` is omitted when unknown (a client-supplied entry without one), as upstream's
        // omitempty does: an empty string is not a valid Time.
        if !e.time.is_empty() {
            v.insert("time".into(), Value::String(e.time));
        }
        if let Some(sub) = e.subresource {
            v.insert("subresource".into(), Value::String(sub));
        }
        v.insert("operation".into(), Value::String(e.operation));
        v.insert("manager".into(), Value::String(e.manager));
        v.insert("fieldsV1".into(), fields);
        v.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        v.insert("apiVersion".into(), Value::String(e.api_version));
        Value::Object(v)
    }

    /// Same manager, operation and subresource.
    pub fn same_slot(&self, manager: &str, operation: &str, sub: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == sub
    }
}

/// The entries of an object.
pub(crate) fn read(obj: &Value) -> Vec<Entry> {
    read_unparsed(obj)
        .into_iter()
        .map(|(mut e, fields)| {
            e.set = fields
                .map(|f| fieldset::from_fields_v1(&f))
                .unwrap_or_default();
            e
        })
        .collect()
}

/// A stored `fieldsV1` not read into a set: borrowed from the stored object, or moved out of a
/// list the write owns.
pub(crate) type Unread<'a> = Option<Cow<'a, Value>>;

/// The entries of an object with their `fieldsV1` not yet read into `set` (left empty), for a
/// write that reads only the entries it changes ([`write_parts`] stores the others as they were).
pub(crate) fn read_unparsed(obj: &Value) -> Vec<(Entry, Unread<'_>)> {
    let Some(items) = obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    items
        .iter()
        .map(|e| (entry_of(e), e.get("fieldsV1").map(Cow::Borrowed)))
        .collect()
}

/// [`read_unparsed`] of a `managedFields` list the caller owns: each `fieldsV1` is moved out,
/// so that [`write_parts`] stores it without a copy.
pub(crate) fn read_owned(list: Value) -> Vec<(Entry, Unread<'static>)> {
    let Value::Array(items) = list else {
        return Vec::new();
    };
    items
        .into_iter()
        .map(|e| {
            let Value::Object(mut m) = e else {
                return (entry_of(&e), None);
            };
            let fields = m.remove("fieldsV1");
            (entry_moved(m), fields.map(Cow::Owned))
        })
        .collect()
}

/// [`entry_of`] of an entry the caller owns: its names moved out, not copied.
fn entry_moved(mut m: Map<String, Value>) -> Entry {
    let mut take = |k: &str| match m.remove(k) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Entry {
        manager: take("manager").unwrap_or_default(),
        operation: take("operation").unwrap_or_default(),
        api_version: take("apiVersion").unwrap_or_default(),
        time: take("time").unwrap_or_default(),
        subresource: take("subresource"),
        set: FieldSet::new(),
    }
}

/// An entry's names and time, its set left empty.
fn entry_of(e: &Value) -> Entry {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Entry {
        manager: s("manager"),
        operation: s("operation"),
        api_version: s("apiVersion"),
        time: s("time"),
        subresource: e
            .get("subresource")
            .and_then(Value::as_str)
            .map(String::from),
        set: FieldSet::new(),
    }
}

/// Stores `entries` (empty ones dropped) in `obj`, ordered as upstream encodes them: by
/// operation (`Apply` first), time, manager, apiVersion, subresource.
pub(crate) fn write(obj: &mut Value, entries: &[Entry]) {
    write_parts(
        obj,
        entries.iter().map(|e| (Cow::Borrowed(e), None)).collect(),
    );
}

/// [`write`] for entries of which some still hold their stored `fieldsV1` (`Some`, as
/// [`read_unparsed`] gave it), written back as stored: the same text `write` would make of the
/// set read from it, since every stored `fieldsV1` was written by `fieldset::to_fields_v1`.
/// Owned entries are moved into the list, borrowed ones copied.
pub(crate) fn write_parts(obj: &mut Value, mut parts: Vec<(Cow<'_, Entry>, Unread<'_>)>) {
    parts.retain(|(e, fields)| holds_fields(e, fields.as_deref()));
    fn order(e: &Entry) -> (&str, &str, &str, &str, Option<&str>) {
        (
            &e.operation,
            &e.time,
            &e.manager,
            &e.api_version,
            e.subresource.as_deref(),
        )
    }
    parts.sort_by(|(a, _), (b, _)| order(a).cmp(&order(b)));
    let list = parts
        .into_iter()
        .map(|(e, fields)| Entry::into_json(e, fields.map(Cow::into_owned)))
        .collect();
    store(obj, list);
}

/// Whether an entry owns any field: its set, or the `fieldsV1` it was stored with when unread.
pub(crate) fn holds_fields(e: &Entry, unread: Option<&Value>) -> bool {
    match unread {
        Some(f) => f.as_object().is_some_and(|m| !m.is_empty()),
        None => !e.set.is_empty(),
    }
}

/// Stores one entry, `e` with `fieldsV1` `fields` built already, or none; as [`write`] would
/// store `e` with the set `fields` describes.
pub(crate) fn write_fields(obj: &mut Value, one: Option<(Entry, Value)>) {
    let one = one.map(|(e, f)| Entry::into_json(Cow::Owned(e), Some(f)));
    store(obj, one.into_iter().collect());
}

fn store(obj: &mut Value, list: Vec<Value>) {
    let m = crate::api::meta::meta_mut(obj);
    if list.is_empty() {
        m.remove("managedFields");
    } else {
        m.insert("managedFields".into(), Value::Array(list));
    }
}

/// A field another manager owns with a different value.
#[derive(Debug, Clone)]
pub(crate) struct Conflict {
    pub manager: String,
    pub api_version: String,
    pub path: Vec<String>,
    /// The other manager's operation and subresource, for the message.
    pub operation: String,
    pub subresource: Option<String>,
}

impl Conflict {
    /// A conflict on `path` with entry `e`.
    pub fn with(e: &Entry, path: &[String]) -> Conflict {
        Conflict {
            manager: e.manager.clone(),
            api_version: e.api_version.clone(),
            path: path.to_vec(),
            operation: e.operation.clone(),
            subresource: e.subresource.clone(),
        }
    }

    /// The manager as upstream's `printManager` names it: `"m"`, `"m" with subresource "s"`,
    /// and ` using <apiVersion>` for `Update` entries.
    pub fn printed(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// Merges the applied configuration `applied` into `live` (maps per key, associative lists per
/// key, sets as unions, everything else replaced).
pub(crate) fn merge(shape: &Shape, live: &mut Value, applied: &Value, names: &mut Vec<String>) {
    let (Some(l), Value::Object(a)) = (live.as_object_mut(), applied) else {
        *live = applied.clone();
        return;
    };
    for (k, v) in a {
        match v {
            Value::Object(_) if shape.atomic_map(names, k) => {
                l.insert(k.clone(), v.clone());
            }
            Value::Object(_) => {
                let slot = l
                    .entry(k.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                names.push(k.clone());
                merge(shape, slot, v, names);
                names.pop();
            }
            Value::Array(items) => {
                let strategy = shape.list(names, k);
                let slot = l
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                let Value::Array(cur) = slot else {
                    continue;
                };
                match strategy {
                    ListStrategy::Atomic => *cur = items.clone(),
                    ListStrategy::Set => {
                        for e in items {
                            if !cur.contains(e) {
                                cur.push(e.clone());
                            }
                        }
                    }
                    ListStrategy::Map(keys) => {
                        names.push(k.clone());
                        names.push("[]".into());
                        for e in items {
                            let tok = fieldset::key_token(e, &keys);
                            let pos = tok.as_ref().and_then(|t| {
                                cur.iter()
                                    .position(|x| fieldset::key_token(x, &keys).as_ref() == Some(t))
                            });
                            match pos {
                                Some(i) => merge(shape, &mut cur[i], e, names),
                                None => cur.push(e.clone()),
                            }
                        }
                        names.pop();
                        names.pop();
                    }
                }
            }
            other => {
                l.insert(k.clone(), other.clone());
            }
        }
    }
}

/// Paths of `set` whose applied value differs from the live value while another entry owns
/// them.
pub(crate) fn conflicts(
    entries: &[Entry],
    mine: Option<usize>,
    set: &FieldSet,
    live: &Value,
    applied: &Value,
) -> Vec<Conflict> {
    let mut out = Vec::new();
    for p in set {
        if p.last().is_some_and(|t| t == "." || t.starts_with("v:")) {
            continue;
        }
        let (lv, av) = (fieldset::get(live, p), fieldset::get(applied, p));
        if lv.is_none() || lv == av {
            continue;
        }
        for (i, e) in entries.iter().enumerate() {
            if Some(i) != mine && e.set.contains(p) {
                out.push(Conflict::with(e, p));
            }
        }
    }
    out
}

/// Whether some entry other than `mine` owns `p` or a field below it.
pub(crate) fn owned_by_others(entries: &[Entry], mine: Option<usize>, p: &[String]) -> bool {
    let base: &[String] = match p.last().map(String::as_str) {
        Some(".") => &p[..p.len() - 1],
        _ => p,
    };
    entries
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != mine)
        .any(|(_, e)| e.set.iter().any(|q| q.starts_with(base)))
}
