//! Validation ratcheting for the non-CEL schema checks (type, enum, bounds, pattern, format...):
//! on update, kube-apiserver (1.30+, `CRDValidationRatcheting`) lets a value that is invalid but
//! unchanged through. [`keep`] tells, for a schema error's field path, whether the value there
//! changed. As upstream, items of lists are not correlated one by one: an error inside a list
//! is ratcheted only if the whole list is unchanged; a missing value is judged by its parent.
//! CEL rules ratchet in `cel::rules` (the `cel` feature), which sees the correlation as it walks.
//! [`super::crd`] applies it to [`super::schema`]'s errors.

use serde_json::Value as Json;

/// A field path's steps: `spec.items[0].name` → `spec`, `items`, `[0]`, `name`.
fn steps(path: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !name.is_empty() {
            out.push((name, false));
        }
        while let Some(end) = rest.find(']') {
            out.push((&rest[1..end], true));
            rest = &rest[end + 1..];
        }
    }
    out
}

/// Whether a schema error at `field` must be kept on an update from `old` to `new` (false: the
/// value there is unchanged, the error is ratcheted away).
pub(crate) fn keep(field: &str, new: &Json, old: &Json) -> bool {
    let (mut n, mut o) = (new, old);
    for (step, bracket) in steps(field) {
        if bracket && n.is_array() {
            break;
        }
        match (n.get(step), o.get(step)) {
            (Some(nv), Some(ov)) => (n, o) = (nv, ov),
            (None, _) => break,
            (Some(_), None) => return true,
        }
    }
    n != o
}

#[cfg(test)]
mod tests {
    use super::keep;
    use serde_json::json;

    #[test]
    fn unchanged_values_are_ratcheted() {
        let old = json!({"spec": {"a": "bad", "l": ["x", "y"], "m": {"k": 1}}});
        let new = json!({"spec": {"a": "bad", "l": ["x", "z"], "m": {"k": 1}, "b": 2}});
        assert!(!keep("spec.a", &new, &old));
        assert!(!keep("spec.m[k]", &new, &old));
        assert!(keep("spec.l[0]", &new, &old), "the list changed");
        assert!(keep("spec.b", &new, &old), "a new field");
        assert!(!keep(
            "spec.missing",
            &json!({"spec": {"x": 1}}),
            &json!({"spec": {"x": 1}})
        ));
        assert!(keep(
            "spec.missing",
            &json!({"spec": {"x": 2}}),
            &json!({"spec": {"x": 1}})
        ));
    }
}
