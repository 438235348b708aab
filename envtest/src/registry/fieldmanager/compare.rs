//! The difference between two versions of an object as field sets, as structured-merge-diff's
//! `TypedValue.Compare` computes it: fields `added` (leaves and maps, lists and list elements
//! that did not exist), `modified` (leaves and atomic values whose value changed) and `removed`.
//! Non-apply writes (`update`) record `added ∪ modified` for their manager and take those
//! fields from everyone else. Paths use `fieldset`'s tokens; [`Shape`] says which lists are
//! associative and which maps are atomic.

use std::cmp::Ordering;

use serde_json::Value;

use super::fieldset::{self, FieldSet, ITEM, Path, Shape};
use crate::api::strategic::ListStrategy;

/// Fields added, modified and removed between two objects.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// `added ∪ modified`: what the writer now owns (`added`, moved, with `modified` moved in),
    /// and `removed`.
    pub fn split(self) -> (FieldSet, FieldSet) {
        let Comparison {
            mut added,
            mut modified,
            removed,
        } = self;
        added.append(&mut modified);
        (added, removed)
    }
}

/// Compares `old` (the stored object, or nothing for a create) with `new`.
pub(crate) fn compare(shape: &Shape, old: Option<&Value>, new: &Value) -> Comparison {
    let mut w = Walk {
        shape,
        at: Vec::new(),
        names: Vec::new(),
        out: Comparison::default(),
    };
    w.children(old, Some(new));
    w.out
}

/// The fields of two maps (either may be missing or not a map) in key order, each with its value
/// in `old` and in `new`: both maps walked side by side (their keys are sorted), no lookups.
fn fields<'v>(
    old: Option<&'v Value>,
    new: Option<&'v Value>,
) -> impl Iterator<Item = (&'v String, Option<&'v Value>, Option<&'v Value>)> {
    let mut a = old
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .peekable();
    let mut b = new
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .peekable();
    std::iter::from_fn(move || {
        let order = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
        };
        Some(match order {
            Ordering::Less => a.next().map(|(k, v)| (k, Some(v), None))?,
            Ordering::Greater => b.next().map(|(k, v)| (k, None, Some(v)))?,
            Ordering::Equal => {
                let ((k, o), (_, n)) = (a.next()?, b.next()?);
                (k, Some(o), Some(n))
            }
        })
    })
}

struct Walk<'a, 'b> {
    shape: &'a Shape<'b>,
    at: Path,
    names: Vec<String>,
    out: Comparison,
}

impl Walk<'_, '_> {
    /// The fields of two maps (either may be missing).
    fn children(&mut self, old: Option<&Value>, new: Option<&Value>) {
        for (k, o, n) in fields(old, new) {
            // Ownership is never tracked for the managedFields themselves.
            if k == "managedFields" && self.at.len() == 1 && self.at[0] == "f:metadata" {
                continue;
            }
            // An unchanged field adds, modifies and removes nothing (checked before its path
            // is built: most fields of an update).
            if let (Some(a), Some(b)) = (o, n)
                && a == b
            {
                continue;
            }
            self.at.push(fieldset::field_token(k));
            self.field(k, o, n);
            self.at.pop();
        }
    }

    fn field(&mut self, field: &str, o: Option<&Value>, n: Option<&Value>) {
        // An unchanged subtree adds, modifies and removes nothing: most of an update.
        if let (Some(a), Some(b)) = (o, n)
            && a == b
        {
            return;
        }
        let obj = |v: Option<&Value>| v.is_none_or(Value::is_object);
        let arr = |v: Option<&Value>| v.is_none_or(Value::is_array);
        if obj(o) && obj(n) && !self.shape.atomic_map(&self.names, field) {
            let tracked = self.shape.tracks_new_node(field);
            self.names.push(field.to_string());
            self.children(o, n);
            self.names.pop();
            if tracked {
                self.node(o, n);
            }
            return;
        }
        if arr(o) && arr(n) {
            let tracked = self.shape.tracks_new_node(field);
            match self.shape.list(&self.names, field) {
                ListStrategy::Set => {
                    self.set(o, n, tracked);
                    return;
                }
                ListStrategy::Map(keys) if self.keyed(o, &keys) && self.keyed(n, &keys) => {
                    self.names.push(field.to_string());
                    self.names.push(ITEM.into());
                    self.map_list(o, n, &keys);
                    self.names.pop();
                    self.names.pop();
                    if tracked {
                        self.node(o, n);
                    }
                    return;
                }
                _ => {}
            }
        }
        self.leaf(o, n);
    }

    /// Whether every element of a list has a key.
    fn keyed(&self, v: Option<&Value>, keys: &[String]) -> bool {
        v.and_then(Value::as_array).is_none_or(|a| {
            a.iter()
                .all(|e| fieldset::key_token(e, keys).is_some() && e.is_object())
        })
    }

    fn leaf(&mut self, o: Option<&Value>, n: Option<&Value>) {
        match (o, n) {
            (None, Some(_)) => self.out.added.insert(self.at.clone()),
            (Some(_), None) => self.out.removed.insert(self.at.clone()),
            (Some(a), Some(b)) if a != b => self.out.modified.insert(self.at.clone()),
            _ => false,
        };
    }

    /// A map, list or list element that appeared or went away is itself added or removed;
    /// `.` marks it when fields below it are in the same set.
    fn node(&mut self, o: Option<&Value>, n: Option<&Value>) {
        let target = match (o, n) {
            (None, Some(_)) => &mut self.out.added,
            (Some(_), None) => &mut self.out.removed,
            _ => return,
        };
        let has_children = target
            .range(self.at.clone()..)
            .take_while(|p| p.starts_with(&self.at))
            .any(|p| p.len() > self.at.len());
        let mut p = self.at.clone();
        if has_children {
            p.push(".".into());
        }
        target.insert(p);
    }

    fn set(&mut self, o: Option<&Value>, n: Option<&Value>, tracked: bool) {
        let items = |v: Option<&Value>| -> Vec<Value> {
            v.and_then(Value::as_array).cloned().unwrap_or_default()
        };
        let (old, new) = (items(o), items(n));
        for e in &new {
            if !old.contains(e) {
                self.out.added.insert(self.elem(format!("v:{e}")));
            }
        }
        for e in &old {
            if !new.contains(e) {
                self.out.removed.insert(self.elem(format!("v:{e}")));
            }
        }
        if tracked {
            self.node(o, n);
        }
    }

    fn elem(&self, token: String) -> Path {
        let mut p = self.at.clone();
        p.push(token);
        p
    }

    fn map_list(&mut self, o: Option<&Value>, n: Option<&Value>, keys: &[String]) {
        let index = |v: Option<&Value>| -> Vec<(String, Value)> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|e| fieldset::key_token(e, keys).map(|t| (t, e.clone())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (old, new) = (index(o), index(n));
        let mut tokens: Vec<&String> = old.iter().chain(new.iter()).map(|(t, _)| t).collect();
        tokens.sort();
        tokens.dedup();
        for t in tokens {
            let find =
                |l: &[(String, Value)]| l.iter().find(|(k, _)| k == t).map(|(_, v)| v.clone());
            let (oe, ne) = (find(&old), find(&new));
            self.at.push(t.clone());
            self.children(oe.as_ref(), ne.as_ref());
            self.node(oe.as_ref(), ne.as_ref());
            self.at.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn keys(
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Vec<(String, Option<Value>, Option<Value>)> {
        fields(old, new)
            .map(|(k, o, n)| (k.clone(), o.cloned(), n.cloned()))
            .collect()
    }

    #[test]
    fn fields_of_two_maps_side_by_side_in_key_order() {
        let old = json!({"a": 1, "c": 3, "e": 5});
        let new = json!({"b": 2, "c": 4, "f": 6, "g": 7});
        assert_eq!(
            keys(Some(&old), Some(&new)),
            vec![
                ("a".into(), Some(json!(1)), None),
                ("b".into(), None, Some(json!(2))),
                ("c".into(), Some(json!(3)), Some(json!(4))),
                ("e".into(), Some(json!(5)), None),
                ("f".into(), None, Some(json!(6))),
                ("g".into(), None, Some(json!(7))),
            ]
        );
        assert_eq!(
            keys(None, Some(&json!({"x": 1}))),
            vec![("x".into(), None, Some(json!(1)))]
        );
        assert_eq!(
            keys(Some(&json!("s")), Some(&json!({"x": 1}))),
            vec![("x".into(), None, Some(json!(1)))]
        );
        assert_eq!(
            keys(Some(&json!({"x": 1})), None),
            vec![("x".into(), Some(json!(1)), None)]
        );
        assert!(keys(None, None).is_empty());
    }
}
