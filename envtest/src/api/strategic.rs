//! Strategic merge patch (`k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`) for built-in
//! kinds: like a JSON merge patch, except that lists with a merge key (containers by `name`, ports
//! by `containerPort`, conditions by `type`, …) are merged element by element, lists with the merge
//! strategy on primitives (`finalizers`) are unioned, and the directives `$patch:
//! replace|delete|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//! `$setElementOrder/<field>` are honoured.
//!
//! Upstream reads the strategy of each field from the Go struct tags; here the common fields'
//! strategies are a table keyed by field name and the path that leads to it ([`list_strategy`]).
//! Every other list is replaced wholesale (tolerations and args are atomic upstream too). The one
//! patch module ([`super::patch`]) calls [`apply`] for every path that patches; custom resources
//! never reach it (they get a 415 there). The same table gives server-side apply
//! ([`registry::fieldmanager`](crate::registry::fieldmanager)) its associative lists for built-ins.

use serde_json::{Map, Value};

use crate::api::status::ApiError;

/// How a list field merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// Replaced as a whole.
    Atomic,
    /// Elements are objects merged by the values of these keys.
    Map(Vec<String>),
    /// Elements are primitives forming a set.
    Set,
}

const POD_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// The strategy of list field `field` reached through the map keys `path` (list indices
/// omitted), for a built-in kind.
pub(crate) fn list_strategy<S: AsRef<str>>(path: &[S], field: &str) -> ListStrategy {
    let parent = path.last().map(AsRef::as_ref).unwrap_or("");
    let in_container = path.iter().any(|p| POD_LISTS.contains(&p.as_ref()));
    use ListStrategy::*;
    let map = |k: &[&str]| Map(k.iter().map(|s| s.to_string()).collect());
    match field {
        "finalizers" if parent == "metadata" => Set,
        "ownerReferences" if parent == "metadata" => map(&["uid"]),
        "containers" | "initContainers" | "ephemeralContainers" if !in_container => map(&["name"]),
        "volumes" | "imagePullSecrets" if parent == "spec" => map(&["name"]),
        "hostAliases" if parent == "spec" => map(&["ip"]),
        "env" if in_container => map(&["name"]),
        "ports" if in_container => map(&["containerPort"]),
        "ports" if parent == "spec" => map(&["port"]),
        "volumeMounts" if in_container => map(&["mountPath"]),
        "volumeDevices" if in_container => map(&["devicePath"]),
        "conditions" if path.iter().any(|p| p.as_ref() == "status") => map(&["type"]),
        "addresses" if parent == "status" => map(&["type"]),
        _ => Atomic,
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(msg)
}

/// Applies strategic merge patch `patch` to `original`.
pub(crate) fn apply(original: &Value, patch: &Value) -> Result<Value, ApiError> {
    let Value::Object(p) = patch else {
        return Err(bad("a strategic merge patch must be a JSON object"));
    };
    let base = original.as_object().cloned().unwrap_or_default();
    match merge_map(base, p, &mut Vec::new())? {
        Some(m) => Ok(Value::Object(m)),
        None => Err(bad(
            "a strategic merge patch may not delete the whole object",
        )),
    }
}

/// Merges patch map `p` into `orig`; `None` when the patch deletes the map (`$patch: delete`).
fn merge_map(
    mut orig: Map<String, Value>,
    p: &Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    match p.get("$patch").map(|v| v.as_str()) {
        None | Some(Some("merge")) => {}
        Some(Some("delete")) => return Ok(None),
        Some(Some("replace")) => {
            let mut out = p.clone();
            out.remove("$patch");
            strip_directives(&mut out);
            return Ok(Some(out));
        }
        Some(other) => {
            return Err(bad(format!(
                "unknown patch type: {}",
                other.unwrap_or("<not a string>")
            )));
        }
    }
    if let Some(keep) = p.get("$retainKeys") {
        let Some(keep) = keep.as_array() else {
            return Err(bad("$retainKeys must be a list of field names"));
        };
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        for k in p.keys() {
            if !k.starts_with('$') && !keep.contains(&k.as_str()) {
                return Err(bad(format!(
                    "field {k:?} is in the patch but not in $retainKeys"
                )));
            }
        }
        orig.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (k, v) in p {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let Some(del) = v.as_array() else {
                return Err(bad(format!("{k} must be a list")));
            };
            if let Some(Value::Array(list)) = orig.get_mut(field) {
                list.retain(|x| !del.contains(x));
                if list.is_empty() {
                    orig.remove(field);
                }
            }
            continue;
        }
        if k.starts_with('$') {
            // $patch, $retainKeys (handled above), $setElementOrder/* (an ordering hint).
            continue;
        }
        if v.is_null() {
            orig.remove(k);
            continue;
        }
        let cur = orig.remove(k);
        path.push(k.clone());
        let merged = merge_value(cur, v, k, path);
        path.pop();
        if let Some(m) = merged? {
            orig.insert(k.clone(), m);
        }
    }
    Ok(Some(orig))
}

/// The merged value of field `field` (`None` = remove it).
fn merge_value(
    cur: Option<Value>,
    v: &Value,
    field: &str,
    path: &mut Vec<String>,
) -> Result<Option<Value>, ApiError> {
    match (cur, v) {
        (Some(Value::Object(c)), Value::Object(pm)) => {
            Ok(merge_map(c, pm, path)?.map(Value::Object))
        }
        (None, Value::Object(pm)) => Ok(merge_map(Map::new(), pm, path)?.map(Value::Object)),
        (cur, Value::Array(pl)) => {
            let orig = match cur {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            let parent = path[..path.len().saturating_sub(1)].to_vec();
            let strategy = list_strategy(&parent, field);
            let out = merge_list(orig, pl, &strategy, path)?;
            // Built-in lists are `omitempty`: a merged list left empty disappears.
            let empty = out.as_array().is_some_and(Vec::is_empty);
            Ok((!empty || strategy == ListStrategy::Atomic).then_some(out))
        }
        (_, other) => {
            let mut o = other.clone();
            if let Value::Object(m) = &mut o {
                strip_directives(m);
            }
            Ok(Some(o))
        }
    }
}

fn merge_list(
    orig: Vec<Value>,
    patch: &[Value],
    strategy: &ListStrategy,
    path: &mut Vec<String>,
) -> Result<Value, ApiError> {
    let replace = patch
        .iter()
        .any(|e| e.get("$patch").and_then(Value::as_str) == Some("replace"));
    match strategy {
        ListStrategy::Atomic => {
            let mut out: Vec<Value> = patch.to_vec();
            for e in &mut out {
                if let Value::Object(m) = e {
                    strip_directives(m);
                }
            }
            Ok(Value::Array(out))
        }
        ListStrategy::Set => {
            let mut out = if replace { Vec::new() } else { orig };
            for e in patch {
                if e.is_object() {
                    continue;
                }
                if !out.contains(e) {
                    out.push(e.clone());
                }
            }
            Ok(Value::Array(out))
        }
        ListStrategy::Map(keys) => {
            let mut out = if replace { Vec::new() } else { orig };
            for e in patch {
                let Value::Object(pe) = e else {
                    return Err(bad(format!(
                        "list elements of {} must be objects with the merge key {}",
                        path.join("."),
                        keys.join(",")
                    )));
                };
                let directive = pe.get("$patch").and_then(Value::as_str);
                if directive == Some("replace") && pe.len() == 1 {
                    continue;
                }
                let key: Vec<Option<&Value>> = keys.iter().map(|k| pe.get(k)).collect();
                if key.iter().all(Option::is_none) {
                    return Err(bad(format!(
                        "map: {} does not contain declared merge key: {}",
                        Value::Object(pe.clone()),
                        keys.join(",")
                    )));
                }
                let same = |x: &Value| keys.iter().zip(&key).all(|(k, want)| x.get(k) == *want);
                let pos = out.iter().position(same);
                match (directive, pos) {
                    (Some("delete"), _) => out.retain(|x| !same(x)),
                    (_, Some(i)) => {
                        let c = match std::mem::take(&mut out[i]) {
                            Value::Object(m) => m,
                            _ => Map::new(),
                        };
                        match merge_map(c, pe, path)? {
                            Some(m) => out[i] = Value::Object(m),
                            None => {
                                out.remove(i);
                            }
                        }
                    }
                    (_, None) => {
                        if let Some(m) = merge_map(Map::new(), pe, path)? {
                            out.push(Value::Object(m));
                        }
                    }
                }
            }
            Ok(Value::Array(out))
        }
    }
}

/// Drops `$`-directives left in a value that replaces wholesale.
fn strip_directives(m: &mut Map<String, Value>) {
    m.retain(|k, _| !k.starts_with('$'));
    for v in m.values_mut() {
        match v {
            Value::Object(o) => strip_directives(o),
            Value::Array(a) => {
                for e in a {
                    if let Value::Object(o) = e {
                        strip_directives(o);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_merge_by_name() {
        let orig = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]}
        ]}}}});
        let p = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "env": [{"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1"}
        ]}}}});
        let out = apply(&orig, &p).unwrap_or_default();
        let cs = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(cs[0]["image"], "a:1");
        assert_eq!(cs[0]["env"].as_array().map(Vec::len), Some(2));
        assert_eq!(cs[1]["name"], "b");
    }

    #[test]
    fn directives() {
        let orig = json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"x": 1, "y": 2}});
        let p = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
            "spec": {"$retainKeys": ["x"], "x": 3}});
        let out = apply(&orig, &p).unwrap_or_default();
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"x": 3}})
        );
        let p = json!({"spec": {"$patch": "replace", "z": 1}});
        assert_eq!(
            apply(&orig, &p).unwrap_or_default()["spec"],
            json!({"z": 1})
        );
    }
}
