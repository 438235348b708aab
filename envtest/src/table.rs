//! The `Table` representation (spec §1.19) that `kubectl get` asks for with
//! `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`: columns `Name`, then a custom
//! resource's `additionalPrinterColumns` (JSONPath cells) or `Age`; rows carry the object as
//! `PartialObjectMetadata`. `verbs::read` renders gets and lists with it and `watch` each event
//! (column definitions only in the first), so `kubectl get -w` lines match the list's header.

use serde_json::{Value, json};

use crate::registry::ResourceType;
use crate::server::{Req, State};
use crate::store::partial_metadata;

/// The Table media type of responses.
pub(crate) const MEDIA: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The request asks for a Table.
pub(crate) fn wanted(req: &Req) -> bool {
    req.header("accept").contains("as=Table")
}

/// How one column's cell is computed.
#[derive(Debug, Clone)]
enum Cell {
    Name,
    Age,
    Path(String),
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

/// The columns of `rt`: its CRD version's `additionalPrinterColumns` when it has some.
pub(crate) fn columns(state: &State, rt: &ResourceType) -> Columns {
    let mut defs = vec![def(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
        0,
    )];
    let mut cells = vec![Cell::Name];
    let printer = rt.crd.as_ref().and_then(|crd| {
        let crds = state
            .registry
            .snapshot()
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .cloned()?;
        let obj = state
            .store
            .get_value(&crds.store_key(), &(String::new(), crd.clone()))?;
        obj.get("spec")?
            .get("versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(rt.version.as_str()))?
            .get("additionalPrinterColumns")?
            .as_array()
            .cloned()
    });
    match printer.filter(|p| !p.is_empty()) {
        Some(cols) => {
            for c in cols {
                let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                let ty = if s("type").is_empty() {
                    "string"
                } else {
                    s("type")
                };
                let prio = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
                defs.push(def(s("name"), ty, s("format"), s("description"), prio));
                cells.push(if ty == "date" {
                    Cell::Path(format!("date:{}", s("jsonPath")))
                } else {
                    Cell::Path(s("jsonPath").to_string())
                });
            }
        }
        None => {
            defs.push(def(
                "Age",
                "string",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
                0,
            ));
            cells.push(Cell::Age);
        }
    }
    Columns { defs, cells }
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
        Cell::Name => json!(crate::meta::name(obj)),
        Cell::Age => json!(age(
            crate::meta::meta_str(obj, "creationTimestamp").unwrap_or("")
        )),
        Cell::Path(p) => match p.strip_prefix("date:") {
            Some(p) => json!(
                json_path(obj, p)
                    .and_then(|v| v.as_str().map(age))
                    .unwrap_or_default()
            ),
            None => json_path(obj, p).unwrap_or(Value::Null),
        },
    }
}

/// A short age like kubectl prints: `42s`, `5m`, `3h`, `2d`.
fn age(ts: &str) -> String {
    let Ok(t) = ts.parse::<k8s_openapi::jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let secs = (k8s_openapi::jiff::Timestamp::now().as_second() - t.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
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
