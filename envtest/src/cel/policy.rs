//! The CEL half of a ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`): compiling its
//! expressions when the policy is written ([`check_policy`]) and evaluating them on one request
//! ([`evaluate`]): `matchConditions` (any false skips the policy), `variables` (in order, each
//! seeing the earlier ones as `variables.<name>`), then `validations` with `message`,
//! `messageExpression` and `reason`. Expressions see `object`, `oldObject`, `request`, `params`
//! and `namespaceObject` (null where absent). Matching requests to policies and bindings,
//! finding params, and turning failures into denials or warnings is the admission layer's.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value;
use cel::objects::Map;
use serde_json::Value as Json;

use crate::api::validation::FieldCause;

use super::PER_CALL_LIMIT;
use super::env::Meter;
use super::program::{self, Bound, Scope};
use super::rules::wording;
use super::values::plain;

/// The variables every policy expression may use.
const VARS: [&str; 7] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "authorizer",
    "variables",
];

fn scope() -> Scope<'static> {
    static NULL: Json = Json::Null;
    VARS.iter().fold(Scope::default(), |s, v| s.with(v, &NULL))
}

/// What one request looks like to a policy's expressions.
#[derive(Debug, Default)]
pub(crate) struct Activation {
    /// The object after the write (`null` on delete).
    pub(crate) object: Json,
    /// The object before the write (`null` on create).
    pub(crate) old_object: Json,
    /// The `request` (an `AdmissionRequest` without the objects).
    pub(crate) request: Json,
    /// The binding's param object, `null` if none.
    pub(crate) params: Json,
    /// The request's namespace object, `null` for cluster-scoped resources.
    pub(crate) namespace_object: Json,
}

/// A validation that did not pass.
#[derive(Debug, PartialEq)]
pub(crate) struct Failure {
    /// The message the denial or warning carries.
    pub(crate) message: String,
    /// The validation's `reason` (`Invalid` when unset).
    pub(crate) reason: String,
    /// True if the expression failed to evaluate (subject to `failurePolicy`), false if it
    /// evaluated to false.
    pub(crate) error: bool,
}

/// What a policy said about a request.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// A match condition was false: the policy does not apply.
    Skipped,
    /// The validations ran; empty means admitted.
    Failures(Vec<Failure>),
}

/// Checks that every expression of a policy's `spec` compiles.
pub(crate) fn check_policy(spec: &Json) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let lists = [
        ("matchConditions", "expression"),
        ("variables", "expression"),
        ("validations", "expression"),
        ("validations", "messageExpression"),
        ("auditAnnotations", "valueExpression"),
    ];
    for (list, key) in lists {
        for (i, item) in spec
            .get(list)
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(src) = item.get(key).and_then(Json::as_str) else {
                continue;
            };
            if let Err(e) = program::compile(src, &scope()) {
                let field = format!("spec.{list}[{i}].{key}");
                out.push(FieldCause::invalid(
                    field,
                    &Json::String(src.into()),
                    &format!("compilation failed: {e}"),
                ));
            }
        }
    }
    out
}

struct Run {
    vars: Vec<(&'static str, Bound)>,
}

impl Run {
    fn eval(&self, src: &str) -> Result<Value, String> {
        let p = program::compile(src, &scope())?;
        p.run(&self.vars, &Meter::new(PER_CALL_LIMIT))
            .map_err(|e| wording(&e))
    }
}

/// Evaluates policy `spec` on a request.
pub(crate) fn evaluate(spec: &Json, a: &Activation) -> Verdict {
    let mut run = Run {
        vars: vec![
            ("object", Bound::Value(plain(&a.object))),
            ("oldObject", Bound::Value(plain(&a.old_object))),
            ("request", Bound::Value(plain(&a.request))),
            ("params", Bound::Value(plain(&a.params))),
            ("namespaceObject", Bound::Value(plain(&a.namespace_object))),
            (
                "variables",
                Bound::Value(Value::Map(Map {
                    map: Arc::new(HashMap::new()),
                })),
            ),
        ],
    };
    let list = |k: &str| {
        spec.get(k)
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for cond in list("matchConditions") {
        let expr = cond.get("expression").and_then(Json::as_str).unwrap_or("");
        match run.eval(expr) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => return Verdict::Skipped,
            Err(e) => return Verdict::Failures(vec![error(expr, &e)]),
        }
    }
    bind_variables(&mut run, &list("variables"));
    let failures = list("validations")
        .iter()
        .filter_map(|v| validation(&run, v))
        .collect();
    Verdict::Failures(failures)
}

fn bind_variables(run: &mut Run, vars: &[Json]) {
    let mut bound: HashMap<cel::objects::Key, Value> = HashMap::new();
    for v in vars {
        let (Some(name), Some(expr)) = (
            v.get("name").and_then(Json::as_str),
            v.get("expression").and_then(Json::as_str),
        ) else {
            continue;
        };
        if let Ok(value) = run.eval(expr) {
            bound.insert(name.to_string().into(), value);
            run.vars[5] = (
                "variables",
                Bound::Value(Value::Map(Map {
                    map: Arc::new(bound.clone()),
                })),
            );
        }
    }
}

fn error(expr: &str, e: &str) -> Failure {
    Failure {
        message: format!("expression '{expr}' resulted in error: {e}"),
        reason: "Invalid".into(),
        error: true,
    }
}

fn validation(run: &Run, v: &Json) -> Option<Failure> {
    let s = |k: &str| v.get(k).and_then(Json::as_str).filter(|s| !s.is_empty());
    let expr = s("expression").unwrap_or("");
    let reason = s("reason").unwrap_or("Invalid").to_string();
    match run.eval(expr) {
        Ok(Value::Bool(true)) => None,
        Ok(Value::Bool(false)) => {
            let from_expr = s("messageExpression").and_then(|m| match run.eval(m) {
                Ok(Value::String(msg)) if !msg.trim().is_empty() && !msg.contains('\n') => {
                    Some(msg.trim().to_string())
                }
                _ => None,
            });
            let message = from_expr
                .or_else(|| s("message").map(|m| m.trim().to_string()))
                .unwrap_or_else(|| format!("failed expression: {}", expr.trim()));
            Some(Failure {
                message,
                reason,
                error: false,
            })
        }
        Ok(other) => Some(error(expr, &format!("expected a bool, got {other:?}"))),
        Err(e) => Some(error(expr, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn act(object: Json, params: Json) -> Activation {
        Activation {
            object,
            params,
            request: json!({"operation": "CREATE"}),
            ..Default::default()
        }
    }

    #[test]
    fn validations_messages_and_reasons() {
        let spec = json!({"validations": [
            {"expression": "object.spec.replicas <= 5"},
            {"expression": "object.spec.replicas <= 4", "message": "too many", "reason": "Forbidden"},
            {"expression": "object.spec.replicas <= 3", "messageExpression": "'replicas is ' + string(object.spec.replicas)"},
            {"expression": "object.spec.replicas >= 1"}]});
        let Verdict::Failures(f) =
            evaluate(&spec, &act(json!({"spec": {"replicas": 6}}), Json::Null))
        else {
            panic!()
        };
        let msgs: Vec<_> = f
            .iter()
            .map(|f| (f.message.as_str(), f.reason.as_str(), f.error))
            .collect();
        assert_eq!(
            msgs,
            [
                (
                    "failed expression: object.spec.replicas <= 5",
                    "Invalid",
                    false
                ),
                ("too many", "Forbidden", false),
                ("replicas is 6", "Invalid", false),
            ]
        );
    }

    #[test]
    fn match_conditions_variables_and_params() {
        let spec = json!({
            "matchConditions": [{"name": "only-create", "expression": "request.operation == 'CREATE'"}],
            "variables": [{"name": "n", "expression": "object.spec.replicas"}, {"name": "twice", "expression": "variables.n * 2"}],
            "validations": [{"expression": "variables.twice <= params.max"}]});
        let v = |r: i64| {
            evaluate(
                &spec,
                &act(json!({"spec": {"replicas": r}}), json!({"max": 6})),
            )
        };
        assert_eq!(v(3), Verdict::Failures(vec![]));
        assert!(matches!(v(4), Verdict::Failures(f) if f.len() == 1));
        let mut update = act(json!({"spec": {"replicas": 9}}), json!({"max": 6}));
        update.request = json!({"operation": "UPDATE"});
        assert_eq!(evaluate(&spec, &update), Verdict::Skipped);
    }

    #[test]
    fn errors_are_marked_for_the_failure_policy() {
        let spec = json!({"validations": [{"expression": "object.spec.missing > 1"}]});
        let Verdict::Failures(f) = evaluate(&spec, &act(json!({"spec": {}}), Json::Null)) else {
            panic!()
        };
        assert_eq!(
            f[0].message,
            "expression 'object.spec.missing > 1' resulted in error: no such key: missing"
        );
        assert!(f[0].error);
    }

    #[test]
    fn compile_errors_name_the_expression() {
        let got = check_policy(
            &json!({"validations": [{"expression": "object.x >"}, {"expression": "foo"}]}),
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].field, "spec.validations[0].expression");
        assert!(
            got[1].message.contains("undeclared reference to 'foo'"),
            "{}",
            got[1].message
        );
    }
}
