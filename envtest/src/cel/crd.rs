//! Checking the rules of a CRD when the CRD is created or updated, as apiextensions'
//! `ValidateCustomResourceDefinition` does: each `x-kubernetes-validations` entry must have a
//! rule that compiles against its schema node (fields must exist), a `messageExpression` that
//! compiles, a known `reason`, a `fieldPath` naming a field, and an estimated cost — the rule's
//! cost times how many times it can run (the sizes of the lists and maps above it) — within the
//! per-rule and per-schema limits. Errors carry upstream's paths and wording.

use serde_json::Value as Json;

use crate::api::validation::FieldCause;

use super::program::{self, Scope};
use super::rules::{Rule, rule_scope};
use super::{STATIC_CRD_LIMIT, STATIC_RULE_LIMIT};

const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Checks every rule of a CRD (`spec.versions[*].schema.openAPIV3Schema`). When all versions
/// share one schema, errors are reported under `spec.validation.openAPIV3Schema`, as the
/// internal CRD type upstream validates has it.
pub(crate) fn check_crd(crd: &Json) -> Vec<FieldCause> {
    let versions = crd.pointer("/spec/versions").and_then(Json::as_array);
    let schemas: Vec<&Json> = versions
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    if schemas.is_empty() {
        return Vec::new();
    }
    if schemas.windows(2).all(|w| w[0] == w[1]) {
        return check_schema(schemas[0], "spec.validation.openAPIV3Schema");
    }
    let mut out = Vec::new();
    for (i, v) in versions.into_iter().flatten().enumerate() {
        if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
            out.extend(check_schema(
                s,
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
            ));
        }
    }
    out
}

/// Checks the rules of one schema, whose path in the CRD is `base`.
pub(crate) fn check_schema(schema: &Json, base: &str) -> Vec<FieldCause> {
    let mut walk = Walk {
        out: Vec::new(),
        total: 0.0,
        heaviest: Vec::new(),
    };
    walk.node(schema, base, 1.0, true);
    if walk.total > STATIC_CRD_LIMIT {
        walk.out.push(FieldCause::forbidden(
            base,
            &format!(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of {}",
                factor(walk.total / STATIC_CRD_LIMIT)
            ),
        ));
        for path in walk.heaviest {
            walk.out.push(FieldCause::forbidden(
                path,
                "contributed to estimated rule & messageExpression cost total exceeding cost limit",
            ));
        }
    }
    walk.out
}

fn factor(f: f64) -> String {
    if f > 100.0 {
        "more than 100x".to_string()
    } else {
        format!("{f:.1}x")
    }
}

struct Walk {
    out: Vec<FieldCause>,
    total: f64,
    /// Rules costing more than 1% of the schema limit (named when the total is over).
    heaviest: Vec<String>,
}

fn max_count(schema: &Json, key: &str, fallback: f64) -> f64 {
    schema.get(key).and_then(Json::as_f64).unwrap_or(fallback)
}

impl Walk {
    fn node(&mut self, s: &Json, path: &str, cardinality: f64, root: bool) {
        self.rules(s, path, cardinality, root);
        if let Some(props) = s.get("properties").and_then(Json::as_object) {
            for (k, v) in props {
                let embedded = v
                    .get("x-kubernetes-embedded-resource")
                    .and_then(Json::as_bool)
                    == Some(true);
                self.node(v, &format!("{path}.properties[{k}]"), cardinality, embedded);
            }
        }
        // How many elements a list or map can hold: its max, else what fits in a request.
        let unbounded = 3.0 * 1024.0 * 1024.0 / 3.0;
        if let Some(items) = s.get("items").filter(|i| i.is_object()) {
            let n = cardinality * max_count(s, "maxItems", unbounded);
            self.node(items, &format!("{path}.items"), n, false);
        }
        if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
            let n = cardinality * max_count(s, "maxProperties", unbounded);
            self.node(add, &format!("{path}.additionalProperties"), n, false);
        }
        for (i, sub) in s
            .get("allOf")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            self.rules(sub, &format!("{path}.allOf[{i}]"), cardinality, root);
        }
    }

    fn rules(&mut self, s: &Json, path: &str, cardinality: f64, root: bool) {
        let Some(rules) = s.get("x-kubernetes-validations").and_then(Json::as_array) else {
            return;
        };
        let scope = rule_scope(s, root);
        for (i, raw) in rules.iter().enumerate() {
            let at = format!("{path}.x-kubernetes-validations[{i}]");
            self.rule(&Rule::of(raw), s, &scope, &at, cardinality);
        }
    }

    fn rule(&mut self, rule: &Rule, s: &Json, scope: &Scope, at: &str, cardinality: f64) {
        if rule.rule.trim().is_empty() {
            return self
                .out
                .push(FieldCause::required(format!("{at}.rule"), ""));
        }
        match program::compile(rule.rule, scope) {
            Err(e) => self.out.push(raw_invalid(
                &format!("{at}.rule"),
                &go_struct(rule),
                &format!("compilation failed: {e}"),
            )),
            Ok(p) => {
                let cost = p.estimated_cost * cardinality;
                self.total += cost;
                if cost > STATIC_CRD_LIMIT / 100.0 {
                    self.heaviest.push(format!("{at}.rule"));
                }
                if cost > STATIC_RULE_LIMIT {
                    let detail = format!(
                        "estimated rule cost exceeds budget by factor of {}",
                        factor(cost / STATIC_RULE_LIMIT)
                    );
                    self.out
                        .push(FieldCause::forbidden(format!("{at}.rule"), &detail));
                }
            }
        }
        if let Some(m) = rule.message_expression
            && let Err(e) = program::compile(m, scope)
        {
            let detail = format!("messageExpression compilation failed: {e}");
            self.out.push(FieldCause::invalid(
                format!("{at}.messageExpression"),
                &Json::String(m.into()),
                &detail,
            ));
        }
        self.check_fields(rule, s, at);
    }

    fn check_fields(&mut self, rule: &Rule, s: &Json, at: &str) {
        if let Some(r) = rule.reason
            && !REASONS.contains(&r)
        {
            let supported: Vec<Json> = REASONS
                .iter()
                .map(|r| Json::String(r.to_string()))
                .collect();
            self.out.push(FieldCause::not_supported(
                format!("{at}.reason"),
                &Json::String(r.into()),
                &supported,
            ));
        }
        if let Some(fp) = rule.field_path
            && !field_exists(s, fp)
        {
            let shown = Json::String(format!(".{fp}"));
            self.out.push(FieldCause::invalid(
                format!("{at}.fieldPath"),
                &shown,
                "fieldPath must be a valid path: does not refer to a valid field",
            ));
        }
    }
}

/// Whether the dotted path `fp` (no leading dot) names a field of `schema`.
fn field_exists(schema: &Json, fp: &str) -> bool {
    let mut s = schema;
    for step in fp.split('.') {
        let props = s.get("properties").and_then(Json::as_object);
        match (
            props.and_then(|p| p.get(step)),
            s.get("additionalProperties").filter(|a| a.is_object()),
        ) {
            (Some(next), _) => s = next,
            (None, Some(add)) if props.is_none() => s = add,
            _ => return false,
        }
    }
    true
}

/// An `Invalid value:` cause whose value is printed as is (Go's `%#v` of a struct).
fn raw_invalid(field: &str, value: &str, detail: &str) -> FieldCause {
    FieldCause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {value}: {detail}"),
        field: field.to_string(),
    }
}

/// A rule as Go prints an `apiextensions.ValidationRule` with `%#v`.
fn go_struct(rule: &Rule) -> String {
    let reason = match rule.reason {
        Some(r) => format!("(*apiextensions.FieldValueErrorReason)({r:?})"),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".to_string(),
    };
    let field_path = rule.field_path.map(|p| format!(".{p}")).unwrap_or_default();
    let optional = if rule.optional_old_self {
        "(*bool)(true)"
    } else {
        "(*bool)(nil)"
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{:?}, Message:{:?}, MessageExpression:{:?}, Reason:{reason}, FieldPath:{field_path:?}, OptionalOldSelf:{optional}}}",
        rule.rule,
        rule.message.unwrap_or(""),
        rule.message_expression.unwrap_or(""),
    )
}

#[cfg(test)]
mod tests {
    use super::check_schema;
    use serde_json::json;

    fn msgs(schema: serde_json::Value) -> Vec<String> {
        check_schema(&schema, "spec.validation.openAPIV3Schema")
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn undefined_fields_and_syntax_errors_refuse_the_crd() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.nonExistingField > 0"}, {"rule": "self.a >"}, {"rule": "self.a > 0"}]}}});
        let got = msgs(s);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.nonExistingField > 0\""), "{}", got[0]);
        assert!(
            got[0].ends_with(
                "compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'"
            ),
            "{}",
            got[0]
        );
        assert!(
            got[1].contains("x-kubernetes-validations[1].rule: Invalid value: ")
                && got[1].contains("compilation failed: ERROR: <input>:1:"),
            "{}",
            got[1]
        );
    }

    #[test]
    fn comparisons_of_mismatched_types_do_not_compile() {
        let s = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.n == true"}, {"rule": "self.s == 1"}, {"rule": "self.n == 1.0 && self.s == 'a' && self.n + 1 > 0"}]});
        let got = msgs(s);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].ends_with("compilation failed: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(int, bool)'"), "{got:?}");
        assert!(
            got[1].ends_with("found no matching overload for '_==_' applied to '(string, int)'"),
            "{got:?}"
        );
    }

    #[test]
    fn unknown_variables_reasons_and_field_paths() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "foo == 1"}, {"rule": "true", "reason": "Nope"}, {"rule": "true", "fieldPath": ".b"}]});
        let got = msgs(s);
        assert!(
            got[0].ends_with("undeclared reference to 'foo' (in container '')"),
            "{got:?}"
        );
        assert!(got[1].starts_with("spec.validation.openAPIV3Schema.x-kubernetes-validations[1].reason: Unsupported value: \"Nope\""), "{got:?}");
        assert!(got[2].starts_with("spec.validation.openAPIV3Schema.x-kubernetes-validations[2].fieldPath: Invalid value: \".b\""), "{got:?}");
    }

    #[test]
    fn unbounded_nested_loops_exceed_the_cost_budget() {
        let list = |max: Option<u64>| {
            let mut l = json!({"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, x == y))"}]});
            if let Some(m) = max {
                l["maxItems"] = json!(m);
            }
            json!({"type": "object", "properties": {"l": l}})
        };
        let got = msgs(list(None));
        assert!(got.iter().any(|m| m == "spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"), "{got:?}");
        assert!(msgs(list(Some(100))).is_empty());
    }

    #[test]
    fn comprehension_variables_are_typed_by_items() {
        let s = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "object", "properties": {"n": {"type": "string", "maxLength": 10}}}}},
            "x-kubernetes-validations": [{"rule": "self.l.all(i, i.n != '')"}, {"rule": "self.l.all(i, i.m != '')"}]});
        let got = msgs(s);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].ends_with("undefined field 'm'"), "{got:?}");
    }
}
