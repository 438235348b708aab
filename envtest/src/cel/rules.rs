//! Evaluating a CRD's `x-kubernetes-validations` on an object, as kube-apiserver's
//! `apiextensions-apiserver/pkg/apiserver/schema/cel` does: every rule on every schema node with
//! a non-null value, the node as `self`; transition rules (those naming `oldSelf`) only on
//! update and only where an old value correlates (object fields of non-atomic maps, items of
//! `x-kubernetes-list-type: map` lists by key); `optionalOldSelf` rules always, with `oldSelf` an
//! `optional`. Errors carry upstream's wording and field paths; a rule that fails on a value the
//! update left unchanged is ratcheted into a warning. The evaluation budget is kube-apiserver's.
//!
//! Compiling is [`super::program`]'s; the registry calls [`validate`] after the schema checks.

use serde_json::Value as Json;

use crate::api::validation::FieldCause;

use super::env::{COST_EXCEEDED, COST_FN, Meter};
use super::program::{self, Bound, Scope};
use super::values::to_cel;
use super::{PER_CALL_LIMIT, RUNTIME_BUDGET};

/// What the rules said about an object.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Violations: the write is refused with these (a 422).
    pub(crate) errors: Vec<FieldCause>,
    /// Ratcheted violations, as `Warning` header texts.
    pub(crate) warnings: Vec<String>,
}

/// Evaluates every rule of `schema` (a version's `openAPIV3Schema`) on `obj`; `old` is the stored
/// object on update.
pub(crate) fn validate(schema: &Json, obj: &Json, old: Option<&Json>) -> Outcome {
    let mut walk = Walk {
        out: Outcome::default(),
        budget: RUNTIME_BUDGET,
        stopped: false,
    };
    walk.node(&Node {
        schema,
        value: obj,
        old,
        path: String::new(),
        ratchet: false,
        root: true,
    });
    walk.out
}

/// Whether any node of `schema` has rules: asked once per CRD version, when the registry builds
/// its types (`ResourceType::rules`), so that a write of a CRD without rules skips [`validate`].
pub(crate) fn has_rules(schema: &Json) -> bool {
    match schema {
        Json::Object(m) => m.contains_key("x-kubernetes-validations") || m.values().any(has_rules),
        Json::Array(a) => a.iter().any(has_rules),
        _ => false,
    }
}

struct Node<'a> {
    schema: &'a Json,
    value: &'a Json,
    old: Option<&'a Json>,
    path: String,
    /// Errors here are ratcheted: the nearest correlated node is unchanged.
    ratchet: bool,
    root: bool,
}

impl<'a> Node<'a> {
    /// A property or item of this node: `value` (and its `old` correlate) under `schema`.
    fn child(
        &self,
        schema: &'a Json,
        value: &'a Json,
        old: Option<&'a Json>,
        path: String,
    ) -> Self {
        Node {
            schema,
            value,
            old,
            path,
            ratchet: self.ratchet,
            root: embedded(schema),
        }
    }
}

struct Walk {
    out: Outcome,
    budget: u64,
    stopped: bool,
}

fn type_of(schema: &Json) -> Json {
    Json::String(
        schema
            .get("type")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string(),
    )
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn embedded(schema: &Json) -> bool {
    schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Json::as_bool)
        == Some(true)
}

impl Walk {
    fn node(&mut self, n: &Node) {
        if n.value.is_null() || self.stopped {
            return;
        }
        let ratchet = match n.old {
            Some(old) => old == n.value,
            None => n.ratchet,
        };
        let here = Node {
            ratchet,
            path: n.path.clone(),
            ..*n
        };
        self.rules(&here, n.schema);
        for sub in n
            .schema
            .get("allOf")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            self.rules(&here, sub);
        }
        match n.value {
            Json::Object(map) => self.object(&here, map),
            Json::Array(items) => self.array(&here, items),
            _ => {}
        }
    }

    fn object(&mut self, n: &Node, map: &serde_json::Map<String, Json>) {
        let atomic = n.schema.get("x-kubernetes-map-type").and_then(Json::as_str) == Some("atomic");
        let props = n.schema.get("properties").and_then(Json::as_object);
        let additional = n
            .schema
            .get("additionalProperties")
            .filter(|a| a.is_object());
        for (k, v) in map {
            let (schema, path) = match (props.and_then(|p| p.get(k)), additional) {
                (Some(s), _) => (s, join(&n.path, k)),
                (None, Some(a)) if props.is_none() => (a, format!("{}[{k}]", n.path)),
                _ => continue,
            };
            let old = if atomic {
                None
            } else {
                n.old.and_then(|o| o.get(k))
            };
            self.node(&n.child(schema, v, old, path));
        }
    }

    fn array(&mut self, n: &Node, items: &[Json]) {
        let Some(schema) = n.schema.get("items") else {
            return;
        };
        let keys: Vec<&str> = match n
            .schema
            .get("x-kubernetes-list-type")
            .and_then(Json::as_str)
        {
            Some("map") => n.schema["x-kubernetes-list-map-keys"]
                .as_array()
                .map(|k| k.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let olds = n.old.and_then(Json::as_array);
        for (i, v) in items.iter().enumerate() {
            let old = match (keys.is_empty(), olds) {
                (false, Some(olds)) => olds
                    .iter()
                    .find(|o| keys.iter().all(|k| o.get(k) == v.get(k))),
                _ => None,
            };
            let path = format!("{}[{i}]", n.path);
            self.node(&n.child(schema, v, old, path));
        }
    }

    fn rules(&mut self, n: &Node, schema: &Json) {
        let Some(rules) = schema
            .get("x-kubernetes-validations")
            .and_then(Json::as_array)
        else {
            return;
        };
        let scope = rule_scope(n.schema, n.root);
        for rule in rules {
            if self.stopped {
                return;
            }
            self.rule(n, &Rule::of(rule), &scope);
        }
    }

    fn rule(&mut self, n: &Node, rule: &Rule, scope: &Scope) {
        let ty = type_of(n.schema);
        let program = match program::compile(rule.rule, scope) {
            Ok(p) => p,
            Err(e) => {
                return self.out.errors.push(FieldCause::invalid(
                    &n.path,
                    &ty,
                    &format!("rule compile error: {e}"),
                ));
            }
        };
        let uses_old = program.uses("oldSelf");
        if uses_old && n.old.is_none() && !rule.optional_old_self {
            return;
        }
        let vars = bindings(n, rule.optional_old_self);
        let meter = Meter::new(PER_CALL_LIMIT);
        let mut result = program.run(&vars, &meter);
        if meter.spent() > PER_CALL_LIMIT {
            // cel-rust's `all`/`exists` absorb an element's error a later element may override;
            // cel-go cancels the evaluation outright.
            result = Err(cel::ExecutionError::function_error(COST_FN, COST_EXCEEDED));
        }
        if !self.spend(n, &ty, meter.spent().min(PER_CALL_LIMIT) + 1) {
            return;
        }
        let detail = match result {
            Ok(cel::Value::Bool(true)) => return,
            Ok(cel::Value::Bool(false)) => self.message(rule, scope, &vars),
            Ok(other) => {
                return self.invalid(
                    n,
                    &ty,
                    format!(
                        "rule did not evaluate to a bool: {other:?} evaluating rule: {}",
                        rule.error_string()
                    ),
                );
            }
            Err(e) => return self.eval_error(n, &ty, rule, &e),
        };
        let path = match rule.field_path {
            Some(fp) => join(&n.path, fp),
            None => n.path.clone(),
        };
        let cause = cause_for(rule.reason, &path, &ty, &detail);
        if !uses_old && n.ratchet {
            self.out
                .warnings
                .push(format!("{}: {}", cause.field, cause.message));
        } else {
            self.out.errors.push(cause);
        }
    }

    fn spend(&mut self, n: &Node, ty: &Json, cost: u64) -> bool {
        if cost > self.budget {
            self.invalid(n, ty, "validation failed due to running out of cost budget, no further validation rules will be run".into());
            self.stopped = true;
            return false;
        }
        self.budget -= cost;
        true
    }

    fn invalid(&mut self, n: &Node, ty: &Json, detail: String) {
        self.out
            .errors
            .push(FieldCause::invalid(&n.path, ty, &detail));
    }

    fn eval_error(&mut self, n: &Node, ty: &Json, rule: &Rule, e: &cel::ExecutionError) {
        let text = wording(e);
        if text.contains(COST_EXCEEDED) {
            self.stopped = true;
            let detail = format!(
                "'{COST_EXCEEDED}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                rule.error_string()
            );
            return self.invalid(n, ty, detail);
        }
        self.invalid(
            n,
            ty,
            format!("{text} evaluating rule: {}", rule.error_string()),
        );
    }

    /// The failure detail: `messageExpression` if it evaluates to a usable string, else
    /// `message`, else `failed rule: <rule>`.
    fn message(&mut self, rule: &Rule, scope: &Scope, vars: &[(&str, Bound)]) -> String {
        if let Some(src) = rule.message_expression
            && let Ok(p) = program::compile(src, scope)
        {
            let meter = Meter::new(PER_CALL_LIMIT);
            let result = p.run(vars, &meter);
            self.budget = self.budget.saturating_sub(meter.spent());
            if let Ok(cel::Value::String(s)) = result {
                let s = s.trim();
                if !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024 {
                    return s.to_string();
                }
            }
        }
        match rule.message {
            Some(m) if !m.trim().is_empty() => m.trim().to_string(),
            _ => format!("failed rule: {}", rule.error_string()),
        }
    }
}

/// The scope rules of a node compile in: `self` and `oldSelf` of the node's schema.
pub(crate) fn rule_scope(schema: &Json, root: bool) -> Scope<'_> {
    let scope = Scope::default()
        .with("self", schema)
        .with("oldSelf", schema);
    if root {
        scope.root("self").root("oldSelf")
    } else {
        scope
    }
}

fn bindings(n: &Node, optional_old_self: bool) -> Vec<(&'static str, Bound)> {
    let mut vars = vec![("self", Bound::Value(to_cel(n.schema, n.value, n.root)))];
    let old = n.old.map(|o| to_cel(n.schema, o, n.root));
    match (optional_old_self, old) {
        (true, old) => vars.push(("oldSelf", Bound::Optional(old))),
        (false, Some(old)) => vars.push(("oldSelf", Bound::Value(old))),
        (false, None) => {}
    }
    vars
}

/// A cel-rust error in cel-go's words where they differ.
pub(crate) fn wording(e: &cel::ExecutionError) -> String {
    match e {
        cel::ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        cel::ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn cause_for(reason: Option<&str>, path: &str, ty: &Json, detail: &str) -> FieldCause {
    match reason {
        Some("FieldValueForbidden") => FieldCause::forbidden(path, detail),
        Some("FieldValueRequired") => FieldCause::required(path, detail),
        Some("FieldValueDuplicate") => FieldCause::duplicate(path, ty),
        _ => FieldCause::invalid(path, ty, detail),
    }
}

/// One entry of `x-kubernetes-validations`.
pub(crate) struct Rule<'a> {
    pub(crate) rule: &'a str,
    pub(crate) message: Option<&'a str>,
    pub(crate) message_expression: Option<&'a str>,
    pub(crate) reason: Option<&'a str>,
    /// `fieldPath` without its leading `.`.
    pub(crate) field_path: Option<&'a str>,
    pub(crate) optional_old_self: bool,
}

impl<'a> Rule<'a> {
    /// Reads a rule entry (missing fields are absent).
    pub(crate) fn of(v: &'a Json) -> Rule<'a> {
        let s = |k: &str| v.get(k).and_then(Json::as_str).filter(|s| !s.is_empty());
        Rule {
            rule: s("rule").unwrap_or(""),
            message: s("message"),
            message_expression: s("messageExpression"),
            reason: s("reason"),
            field_path: s("fieldPath").map(|p| p.trim_start_matches('.')),
            optional_old_self: v.get("optionalOldSelf").and_then(Json::as_bool) == Some(true),
        }
    }

    /// upstream's `ruleErrorString`: the message if set, else the rule.
    pub(crate) fn error_string(&self) -> &str {
        self.message.map(str::trim).unwrap_or(self.rule.trim())
    }
}
