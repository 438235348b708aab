//! The `Table` representation (`k8s.io/kubernetes/pkg/printers/internalversion/printers.go`,
//! `k8s.io/apiserver/pkg/registry/rest/table.go`) that `kubectl get` asks for with `Accept:
//! application/json;as=Table;g=meta.k8s.io;v=v1`: built-ins get upstream's printer columns
//! (`table::printers`, e.g. pods READY/STATUS/RESTARTS, deployments READY/UP-TO-DATE/ AVAILABLE,
//! priority 1 for `-o wide`), custom resources `Name` then their `additionalPrinterColumns`
//! (JSONPath cells), anything else `Name` and `Age`; rows carry the object as
//! `PartialObjectMetadata`. `handlers::read` renders gets and lists with it and `watch` each event
//! (column definitions only in the first), so `kubectl get -w` lines match the list's header.

use serde_json::{Value, json};

mod format;
mod printers;

use printers::Column;

use crate::endpoints::Req;
use crate::endpoints::State;
use crate::registry::ResourceType;
use crate::storage::partial_metadata;

/// The Table media type of responses.
pub(crate) const MEDIA: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The request asks for a Table.
pub(crate) fn wanted(req: &Req) -> bool {
    req.header(http::header::ACCEPT).contains("as=Table")
}

/// How one column's cell is computed.
#[derive(Debug, Clone)]
enum Cell {
    /// A built-in printer's cell.
    Func(fn(&Value) -> Value),
    /// A CRD printer column's JSONPath; `date` columns print as an age.
    Path { path: String, date: bool },
}

/// The columns of one resource type.
#[derive(Debug, Clone)]
pub(crate) struct Columns {
    defs: Vec<Value>,
    cells: Vec<Cell>,
}

fn def(name: &str, ty: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

impl Columns {
    fn push(&mut self, c: &Column) {
        self.defs
            .push(def(c.name, c.ty, c.format, c.description, c.priority));
        self.cells.push(Cell::Func(c.cell));
    }
}

/// The columns of `rt`: a ported built-in printer, its CRD version's
/// `additionalPrinterColumns`, or Name and Age.
pub(crate) fn columns(state: &State, rt: &ResourceType) -> Columns {
    let mut out = Columns {
        defs: Vec::new(),
        cells: Vec::new(),
    };
    if rt.crd.is_none()
        && let Some(cols) = printers::builtin(&rt.group, &rt.plural)
    {
        cols.iter().for_each(|c| out.push(c));
        return out;
    }
    out.push(&printers::NAME);
    match crd_printer_columns(state, rt).filter(|p| !p.is_empty()) {
        Some(cols) => {
            for c in cols {
                let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                let ty = if s("type").is_empty() {
                    "string"
                } else {
                    s("type")
                };
                let prio = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
                out.defs
                    .push(def(s("name"), ty, s("format"), s("description"), prio));
                out.cells.push(Cell::Path {
                    path: s("jsonPath").to_string(),
                    date: ty == "date",
                });
            }
        }
        None => out.push(&printers::AGE),
    }
    out
}

/// The `additionalPrinterColumns` of the CRD version serving `rt`.
fn crd_printer_columns(state: &State, rt: &ResourceType) -> Option<Vec<Value>> {
    let crd = rt.crd.as_ref()?;
    let crds = state
        .registry
        .snapshot()
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .cloned()?;
    let obj = state
        .store
        .get_value(&crds.store_key(), &crate::storage::obj_key("", crd))?;
    obj.get("spec")?
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(rt.version.as_str()))?
        .get("additionalPrinterColumns")?
        .as_array()
        .cloned()
}

impl Columns {
    /// A Table of `objs`; `defs` includes the column definitions.
    pub fn table(&self, objs: &[Value], metadata: Value, defs: bool) -> Value {
        let rows: Vec<Value> = objs
            .iter()
            .map(|o| {
                let cells: Vec<Value> = self.cells.iter().map(|c| cell(c, o)).collect();
                json!({"cells": cells, "object": partial_metadata(o)})
            })
            .collect();
        let defs = if defs { self.defs.clone() } else { Vec::new() };
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": defs, "rows": rows})
    }
}

fn cell(c: &Cell, obj: &Value) -> Value {
    match c {
        Cell::Func(f) => f(obj),
        Cell::Path { path, date: true } => json!(
            json_path(obj, path)
                .and_then(|v| v.as_str().map(format::age))
                .unwrap_or_default()
        ),
        Cell::Path { path, date: false } => json_path(obj, path).unwrap_or(Value::Null),
    }
}

/// A small JSONPath subset: `.a.b`, `.a[0]`, `.a[?(@.k=="v")].b`.
fn json_path(obj: &Value, path: &str) -> Option<Value> {
    let p = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj.clone();
    let mut rest = p.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let (field, tail) = r.split_at(end);
            if !field.is_empty() {
                cur = cur.get(field)?.clone();
            }
            rest = tail;
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let (inner, tail) = (&r[..end], &r[end + 1..]);
            rest = tail;
            if let Ok(i) = inner.parse::<usize>() {
                cur = cur.get(i)?.clone();
            } else if let Some(f) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (k, v) = f.split_once("==")?;
                let want = v.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|e| {
                        e.get(k.trim()).is_some_and(|x| match x {
                            Value::String(s) => s == want,
                            other => serde_json::to_string(other).is_ok_and(|s| s == want),
                        })
                    })?
                    .clone();
            } else {
                return None;
            }
        } else {
            return None;
        }
    }
    Some(cur)
}
