//! managedFields of non-apply writes
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go`, `Update`), as the
//! apiserver's field manager records them: a POST, PUT or json/merge/strategic PATCH by manager M
//! (the `fieldManager` query, else the User-Agent before its first `/`, else `unknown`) gets an
//! `Update` entry per (M, apiVersion, subresource) holding every field it added or changed
//! (`compare`), and those fields — and the ones it removed — leave every other manager's set.
//! Updates never conflict. `managedFields` sent by the client replace the tracked ones when they
//! decode, and reset tracking when they are `[]` or `[{}]` (upstream's `isResetManagedFields`);
//! subresource writes always start from the stored entries. At most ten `Update` entries are kept:
//! older ones merge into `ancient-changes` (upstream's `capManagersManager`). The generic write
//! path ([`registry::rest`](crate::registry::rest)) calls [`record_update`] from create and update;
//! server-side apply keeps its own `Apply` entries.

use std::borrow::Cow;

use serde_json::Value;

use super::compare;
use super::create::{self, stripped};
use super::fieldset::{self, FieldSet, Shape};
use super::managed::{self, Entry, Unread};
use crate::api::meta;
use crate::registry::ResourceType;

/// Who makes a non-apply write, as its managedFields entry names it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The apiVersion the request was made at.
    pub api_version: &'a str,
    /// `status` or `scale` for subresource writes.
    pub subresource: Option<&'a str>,
}

/// Upstream's `DefaultMaxUpdateManagers`.
const MAX_UPDATE_MANAGERS: usize = 10;
/// The bucket older `Update` entries are merged into.
const ANCIENT: &str = "ancient-changes";
/// Records the write of `new` over `cur` (`None` for a create) by `who` in `new`'s
/// managedFields. `given` is the `metadata.managedFields` the client sent, if any. Stored entries
/// the write takes no field from are written back as they were, without reading their sets.
pub(crate) fn record_update(
    rt: &ResourceType,
    cur: Option<&Value>,
    new: &mut Value,
    given: Option<&Value>,
    who: &Writer,
) {
    let shape = Shape { rt };
    // The list the write carries is replaced below; when it is the stored one (a status patch's
    // is), its unread `fieldsV1` are moved back instead of copied.
    let sent = meta::meta_mut(new).remove("managedFields");
    let mut entries = base_entries(cur, given, who.subresource.is_some(), sent);
    if cur.is_none() && entries.is_empty() {
        // A create that starts from no entries: its own entry is every field, in one walk.
        let fields = create::fields_v1(&shape, new);
        let entry = (!fields.is_empty()).then(|| entry_of(who, meta::now()));
        managed::write_fields(new, entry.map(|e| (e, Value::Object(fields))));
        return;
    }
    let mut cmp = compare::compare(&shape, cur, new);
    for s in [&mut cmp.added, &mut cmp.modified, &mut cmp.removed] {
        s.retain(|p| !stripped(p));
    }
    let (changed, removed) = cmp.split();
    for (e, unread) in &mut entries {
        if unread
            .as_deref()
            .is_some_and(|f| !owns_any(f, &changed) && !owns_any(f, &removed))
        {
            continue;
        }
        read_set(e, unread);
        fieldset::subtract(&mut e.set, &changed);
        fieldset::subtract(&mut e.set, &removed);
    }
    if !changed.is_empty() {
        let now = meta::now();
        let slot = entries.iter_mut().find(|(e, _)| {
            e.same_slot(who.manager, "Update", who.subresource) && e.api_version == who.api_version
        });
        match slot {
            Some((e, unread)) => {
                read_set(e, unread);
                e.set.extend(changed);
                e.time = now;
            }
            None => entries.push((
                Entry {
                    set: changed,
                    ..entry_of(who, now)
                },
                None,
            )),
        }
    }
    let updates = entries
        .iter()
        .filter(|(e, f)| e.operation == "Update" && managed::holds_fields(e, f.as_deref()));
    if updates.count() > MAX_UPDATE_MANAGERS {
        let mut all: Vec<Entry> = entries
            .into_iter()
            .map(|(mut e, mut unread)| {
                read_set(&mut e, &mut unread);
                e
            })
            .collect();
        all.retain(|e| !e.set.is_empty());
        cap_update_managers(&mut all);
        managed::write(new, &all);
        return;
    }
    let parts = entries
        .into_iter()
        .map(|(e, f)| (Cow::Owned(e), f))
        .collect();
    managed::write_parts(new, parts);
}

/// Reads an entry's stored `fieldsV1` into its set, once.
fn read_set(e: &mut Entry, unread: &mut Unread<'_>) {
    if let Some(f) = unread.take() {
        e.set = fieldset::from_fields_v1(&f);
    }
}

/// Whether the set stored as `fields` (`fieldsV1`) holds a path [`fieldset::subtract`] would
/// take for one of `gone`: the path itself, or it with or without its `.`.
fn owns_any(fields: &Value, gone: &FieldSet) -> bool {
    let leaf = |v: &Value| !matches!(v, Value::Object(m) if !m.is_empty());
    gone.iter().any(|g| {
        let dot_less = match g.last().map(String::as_str) {
            Some(".") => &g[..g.len() - 1],
            _ => &g[..],
        };
        let node = dot_less.iter().try_fold(fields, |n, t| n.get(t));
        node.is_some_and(|n| leaf(n) || n.get(".").is_some_and(leaf))
    })
}

/// `who`'s `Update` entry at `time`, with no fields yet.
fn entry_of(who: &Writer, time: String) -> Entry {
    Entry {
        manager: who.manager.to_string(),
        operation: "Update".into(),
        api_version: who.api_version.to_string(),
        time,
        subresource: who.subresource.map(String::from),
        set: Default::default(),
    }
}

/// The entries the write starts from: the client's when it sent valid ones, none when it asked
/// for a reset, else the stored ones (their sets unread: `Some` holds the stored `fieldsV1`,
/// moved out of `sent`, the list the new object carried, when that is the stored one).
fn base_entries<'c>(
    cur: Option<&'c Value>,
    given: Option<&Value>,
    subresource: bool,
    sent: Option<Value>,
) -> Vec<(Entry, Unread<'c>)> {
    let stored = move || {
        let kept = cur.and_then(|c| meta::meta_field(c, "managedFields"));
        match sent {
            Some(s) if kept == Some(&s) => managed::read_owned(s),
            _ => cur.map(managed::read_unparsed).unwrap_or_default(),
        }
    };
    let Some(Value::Array(list)) = given.filter(|_| !subresource) else {
        return stored();
    };
    let reset =
        list.is_empty() || (list.len() == 1 && list[0].as_object().is_some_and(|o| o.is_empty()));
    if reset {
        return Vec::new();
    }
    let valid = list.iter().all(|e| {
        matches!(
            e.get("operation").and_then(Value::as_str),
            Some("Apply" | "Update")
        ) && e
            .get("fieldsType")
            .is_none_or(|t| t.as_str() == Some("FieldsV1"))
    });
    let mut holder = serde_json::json!({});
    meta::set_meta(&mut holder, "managedFields", Value::Array(list.clone()));
    let entries = managed::read(&holder);
    if valid && entries.iter().any(|e| !e.set.is_empty()) {
        entries.into_iter().map(|e| (e, None)).collect()
    } else {
        stored()
    }
}

/// Keeps at most [`MAX_UPDATE_MANAGERS`] `Update` entries: the oldest merge into
/// `ancient-changes`.
fn cap_update_managers(entries: &mut Vec<Entry>) {
    loop {
        let mut updates: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].operation == "Update")
            .collect();
        if updates.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        updates.sort_by(|&a, &b| entries[a].time.cmp(&entries[b].time));
        let mut olds = updates
            .into_iter()
            .filter(|&i| entries[i].manager != ANCIENT);
        let (Some(first), second) = (olds.next(), olds.next()) else {
            return;
        };
        let bucket = entries.iter().position(|b| {
            b.same_slot(ANCIENT, "Update", None) && b.api_version == entries[first].api_version
        });
        let (into, from) = match (bucket, second) {
            (Some(b), _) => (b, first),
            (None, Some(s)) => {
                entries[s].manager = ANCIENT.into();
                entries[s].subresource = None;
                (s, first)
            }
            (None, None) => return,
        };
        let e = entries[from].clone();
        let b = &mut entries[into];
        b.set.extend(e.set);
        b.time = b.time.clone().max(e.time);
        entries.remove(from);
    }
}

/// The field set of an Update entry is what it changed: used by tests of this module.
#[cfg(test)]
fn set_of(paths: &[&[&str]]) -> fieldset::FieldSet {
    paths
        .iter()
        .map(|p| p.iter().map(|s| s.to_string()).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fieldset::Path;
    use super::*;

    #[test]
    fn strip_set_matches_upstream() {
        let s = set_of(&[
            &["f:metadata", "f:name"],
            &["f:metadata", "."],
            &["f:apiVersion"],
            &["f:metadata", "f:labels", "f:a"],
        ]);
        let kept: Vec<&Path> = s.iter().filter(|p| !stripped(p)).collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0][1], "f:labels");
    }
}

#[cfg(test)]
mod record_tests {
    use super::*;
    use serde_json::json;

    fn configmaps() -> ResourceType {
        crate::registry::builtins::builtin_types()
            .into_iter()
            .find(|t| t.plural == "configmaps")
            .unwrap()
    }

    /// A write of a `v1` object by manager `m`.
    fn by(m: &str) -> Writer<'_> {
        Writer {
            manager: m,
            api_version: "v1",
            subresource: None,
        }
    }

    #[test]
    fn create_of_a_configmap() {
        let rt = configmaps();
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"app": "w"}}, "data": {"a": "1"}});
        record_update(&rt, None, &mut obj, None, &by("m"));
        assert_eq!(
            obj["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        );
    }

    /// Updates that leave stored entries unread write what reading every entry would: the same
    /// write with the stored entries given as the client's (which are read eagerly).
    #[test]
    fn unread_entries_match_read_ones() {
        let rt = configmaps();
        let mut cur = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"app": "w"}}, "data": {"a": "1", "b": "2"}});
        record_update(&rt, None, &mut cur, None, &by("m0"));
        let writes = [
            ("m1", json!({"c": "3"})),
            ("m2", json!({"a": "9"})),
            ("m1", json!({"a": "9", "c": "4"})),
            ("m3", json!({})),
        ];
        for (m, data) in writes {
            let mut lazy = cur.clone();
            lazy["data"] = data;
            let mut eager = lazy.clone();
            let given = cur["metadata"]["managedFields"].clone();
            record_update(&rt, Some(&cur), &mut lazy, None, &by(m));
            record_update(&rt, Some(&cur), &mut eager, Some(&given), &by(m));
            let fields = |v: &Value| {
                let mut list = v["metadata"]["managedFields"].clone();
                for e in list.as_array_mut().into_iter().flatten() {
                    e.as_object_mut().unwrap().remove("time");
                }
                list
            };
            assert_eq!(fields(&lazy), fields(&eager), "{m}");
            cur = lazy;
        }
        // The last write removed every field but the creator's `data` and labels.
        let left = cur["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(left.len(), 1, "{cur}");
    }
}
