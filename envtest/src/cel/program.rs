//! One CEL expression made ready to run: parsed in [`super::env`]'s environment, checked against
//! the variables in scope and the schema of `self` ([`Scope`]), costed, and rewritten so that
//! every comprehension charges its iterations to the evaluation's meter. [`super::rules`] and
//! [`super::policy`] compile their expressions here and run them with [`Program::run`].
//!
//! The check is the part of cel-go's type check that rules fail on in practice: fields absent
//! from the schema (`undefined field 'x'`) and unknown variables (`undeclared reference to 'x'`).
//! The cost estimate follows cel-go's shape (a comprehension costs its range's largest size —
//! `maxItems` / `maxProperties`, or what fits in a 3 MiB request — times its body; string
//! functions cost a tenth of the string's `maxLength`) without its exact constants.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, LiteralValue};
use cel::common::types::CelOptional;
use cel::common::value::Val;
use cel::{Context, ExecutionError, Value};
use serde_json::Value as Json;

use super::env::{self, COST_FN, Meter};
use super::values::escape;

/// The largest request kube-apiserver accepts, which bounds an unbounded list or map.
const MAX_REQUEST_BYTES: f64 = 3.0 * 1024.0 * 1024.0;

/// cel-go's type names, which expressions may use as values (`type(x) == string`).
const TYPE_NAMES: [&str; 12] = [
    "bool",
    "bytes",
    "double",
    "duration",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// What an identifier stands for while compiling: a schema node (`Json::Null`: unknown shape).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope<'s> {
    vars: HashMap<String, &'s Json>,
    /// The names whose schema is a resource root (their `metadata` shows name/generateName only).
    roots: Vec<String>,
}

static UNKNOWN: Json = Json::Null;

impl<'s> Scope<'s> {
    /// Declares `name` with `schema` (`&Json::Null` for an unknown shape).
    pub(crate) fn with(mut self, name: &str, schema: &'s Json) -> Scope<'s> {
        self.vars.insert(name.to_string(), schema);
        self
    }

    /// Marks `name` as a resource root.
    pub(crate) fn root(mut self, name: &str) -> Scope<'s> {
        self.roots.push(name.to_string());
        self
    }

    fn is_root(&self, e: &IdedExpr) -> bool {
        matches!(&e.expr, Expr::Ident(n) if self.roots.iter().any(|r| r == n))
    }

    fn lookup(&self, name: &str) -> Option<&'s Json> {
        self.vars.get(name).copied()
    }
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) struct Program {
    expr: IdedExpr,
    /// The estimated worst-case cost of one evaluation.
    pub(crate) estimated_cost: f64,
    vars: Vec<String>,
}

/// A compile error, worded as cel-go's (`ERROR: <input>:1:5: undefined field 'x'`).
pub(crate) type CompileError = String;

/// Parses `source`, remembering the result: the same rules run on every write of a kind, and
/// parsing is what costs (the checks below are quick walks of the tree).
fn parse(source: &str) -> Result<Arc<cel::Program>, CompileError> {
    type Parsed = Result<Arc<cel::Program>, CompileError>;
    static CACHE: LazyLock<Mutex<HashMap<String, Parsed>>> = LazyLock::new(Default::default);
    if let Some(hit) = CACHE.lock().get(source) {
        return hit.clone();
    }
    let parsed = env::env()
        .compile(source)
        .map(Arc::new)
        .map_err(|e| e.to_string());
    let mut cache = CACHE.lock();
    if cache.len() > 4096 {
        cache.clear();
    }
    cache.insert(source.to_string(), parsed.clone());
    parsed
}

/// Compiles `source` for `scope`.
pub(crate) fn compile(source: &str, scope: &Scope) -> Result<Program, CompileError> {
    let parsed = parse(source)?;
    let ast = parsed.expression();
    let mut checker = Checker {
        scope: scope.clone(),
        source,
        info: parsed.source_info(),
    };
    checker.check(ast)?;
    let estimated_cost = estimate(ast, scope, true);
    let vars = parsed
        .references()
        .variables()
        .iter()
        .map(|v| v.to_string())
        .collect();
    let mut expr = ast.clone();
    instrument(&mut expr, scope);
    Ok(Program {
        expr,
        estimated_cost,
        vars,
    })
}

impl Program {
    /// Whether the expression refers to variable `name`.
    pub(crate) fn uses(&self, name: &str) -> bool {
        self.vars.iter().any(|v| v == name)
    }

    /// Evaluates with `vars` bound, charging `meter`.
    pub(crate) fn run(
        &self,
        vars: &[(&str, Bound)],
        meter: &Arc<Meter>,
    ) -> Result<Value, ExecutionError> {
        let mut ctx: Context = env::context(meter);
        for (name, value) in vars {
            let val: Box<dyn Val> = match value {
                Bound::Value(v) => v.clone().try_into()?,
                Bound::Optional(None) => Box::new(CelOptional::none()),
                Bound::Optional(Some(v)) => Box::new(CelOptional::of(v.clone().try_into()?)),
            };
            ctx.add_variable_as_val(*name, val);
        }
        Value::resolve(&self.expr, &ctx)
    }
}

/// A variable's value: a plain value, or an `optional` (`optionalOldSelf`).
#[derive(Clone, Debug)]
pub(crate) enum Bound {
    /// A value.
    Value(Value),
    /// `optional.of(v)`, or `optional.none()`.
    Optional(Option<Value>),
}

struct Checker<'a, 's> {
    scope: Scope<'s>,
    source: &'a str,
    info: &'a cel::common::ast::SourceInfo,
}

impl Checker<'_, '_> {
    fn error(&self, id: u64, msg: String) -> CompileError {
        let offset = self.info.offset_for(id).map_or(0, |(s, _)| s as usize);
        let before = &self.source[..offset.min(self.source.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        format!("ERROR: <input>:{line}:{col}: {msg}")
    }

    fn check(&mut self, e: &IdedExpr) -> Result<(), CompileError> {
        match &e.expr {
            Expr::Ident(name) => {
                if self.scope.lookup(name).is_none() && !TYPE_NAMES.contains(&name.as_str()) {
                    return Err(self.error(
                        e.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    ));
                }
                Ok(())
            }
            Expr::Select(sel) => {
                self.check(&sel.operand)?;
                self.field(e.id, &sel.operand, &sel.field)
            }
            Expr::Call(call) => self.check_call(e.id, call),
            Expr::Comprehension(c) => self.check_comprehension(c),
            Expr::List(l) => l.elements.iter().try_for_each(|x| self.check(x)),
            Expr::Map(m) => m.entries.iter().try_for_each(|entry| match &entry.expr {
                cel::common::ast::EntryExpr::MapEntry(me) => {
                    self.check(&me.key)?;
                    self.check(&me.value)
                }
                cel::common::ast::EntryExpr::StructField(sf) => self.check(&sf.value),
            }),
            _ => Ok(()),
        }
    }

    fn check_call(&mut self, id: u64, call: &CallExpr) -> Result<(), CompileError> {
        if let Some(msg) =
            super::types::mismatch(call, |e| super::types::of_schema(schema_of(e, &self.scope)))
        {
            return Err(self.error(id, msg));
        }
        if let Some(t) = &call.target {
            // `optional.of(x)`, `ip.isCanonical(s)`: the target is a namespace, not a value.
            let namespace = matches!(&t.expr, Expr::Ident(n) if self.scope.lookup(n).is_none());
            if !namespace {
                self.check(t)?;
            }
        }
        call.args.iter().try_for_each(|a| self.check(a))
    }

    fn check_comprehension(&mut self, c: &ComprehensionExpr) -> Result<(), CompileError> {
        self.check(&c.iter_range)?;
        self.check(&c.accu_init)?;
        let saved = self.scope.clone();
        let (key, value) = element_schemas(schema_of(&c.iter_range, &self.scope));
        let (first, second) = match &c.iter_var2 {
            Some(v2) => ((c.iter_var.as_str(), key), Some((v2.as_str(), value))),
            None => (
                (
                    c.iter_var.as_str(),
                    if is_map(schema_of(&c.iter_range, &self.scope)) {
                        key
                    } else {
                        value
                    },
                ),
                None,
            ),
        };
        self.scope.vars.insert(first.0.to_string(), first.1);
        if let Some((n, s)) = second {
            self.scope.vars.insert(n.to_string(), s);
        }
        self.scope.vars.insert(c.accu_var.clone(), &UNKNOWN);
        let out = [&c.loop_cond, &c.loop_step, &c.result]
            .into_iter()
            .try_for_each(|x| self.check(x));
        self.scope = saved;
        out
    }

    fn field(&self, id: u64, operand: &IdedExpr, field: &str) -> Result<(), CompileError> {
        let schema = schema_of(operand, &self.scope);
        if field_schema(schema, field, self.scope.is_root(operand)).is_some() || !closed(schema) {
            return Ok(());
        }
        Err(self.error(id, format!("undefined field '{field}'")))
    }
}

fn is_map(schema: &Json) -> bool {
    schema
        .get("additionalProperties")
        .is_some_and(Json::is_object)
        || schema.get("type").and_then(Json::as_str) == Some("object")
}

/// An object schema whose fields are all known (selecting another is an error).
fn closed(schema: &Json) -> bool {
    schema.get("properties").is_some_and(Json::is_object)
        && schema.get("additionalProperties").is_none()
        && schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Json::as_bool)
            != Some(true)
}

static ROOT_META: std::sync::LazyLock<Json> = std::sync::LazyLock::new(|| {
    serde_json::json!({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 253},
        "generateName": {"type": "string", "maxLength": 253}}})
});
static STRING: std::sync::LazyLock<Json> =
    std::sync::LazyLock::new(|| serde_json::json!({"type": "string"}));

/// The schema of `field` of an object with `schema` (escaped property names, map values).
fn field_schema<'s>(schema: &'s Json, field: &str, root: bool) -> Option<&'s Json> {
    if root && field == "metadata" {
        return Some(&ROOT_META);
    }
    if root && (field == "apiVersion" || field == "kind") {
        return Some(&STRING);
    }
    if let Some(props) = schema.get("properties").and_then(Json::as_object) {
        return props
            .iter()
            .find(|(k, _)| escape(k).as_deref() == Some(field))
            .map(|(_, v)| v);
    }
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// The schema an expression evaluates to, where it can be followed (`&Json::Null` otherwise).
fn schema_of<'s>(e: &IdedExpr, scope: &Scope<'s>) -> &'s Json {
    match &e.expr {
        Expr::Ident(n) => scope.lookup(n).unwrap_or(&UNKNOWN),
        Expr::Select(sel) if !sel.test => field_schema(
            schema_of(&sel.operand, scope),
            &sel.field,
            scope.is_root(&sel.operand),
        )
        .unwrap_or(&UNKNOWN),
        _ => &UNKNOWN,
    }
}

/// The schemas of a collection's keys and elements: a list's items, a map's keys and values.
fn element_schemas(schema: &Json) -> (&Json, &Json) {
    if let Some(items) = schema.get("items") {
        return (&STRING, items);
    }
    (
        &STRING,
        schema
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .unwrap_or(&UNKNOWN),
    )
}

/// The smallest JSON a value of `schema` serializes to (cel-go's `minSerializedSize`).
fn min_size(schema: &Json) -> f64 {
    match schema.get("type").and_then(Json::as_str) {
        Some("string") => {
            2.0 + schema
                .get("minLength")
                .and_then(Json::as_f64)
                .unwrap_or(0.0)
        }
        Some("boolean") => 4.0,
        Some("object") | Some("array") => 2.0,
        _ => 1.0,
    }
}

/// The most elements a collection of `schema` can have.
fn max_size(schema: &Json) -> f64 {
    for key in ["maxItems", "maxProperties"] {
        if let Some(n) = schema.get(key).and_then(Json::as_f64) {
            return n;
        }
    }
    let (_, element) = element_schemas(schema);
    let per = min_size(element)
        + if schema.get("items").is_some() {
            1.0
        } else {
            4.0
        };
    (MAX_REQUEST_BYTES / per).floor()
}

/// The longest a string of `schema` can be.
fn max_length(schema: &Json) -> f64 {
    schema
        .get("maxLength")
        .and_then(Json::as_f64)
        .unwrap_or(MAX_REQUEST_BYTES)
}

const STRING_FNS: [&str; 14] = [
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "find",
    "findAll",
    "split",
    "replace",
    "lowerAscii",
    "upperAscii",
    "trim",
    "indexOf",
    "lastIndexOf",
    "join",
];

/// Estimated cost; `deep` counts comprehension iterations, otherwise a comprehension costs 1
/// (what one iteration of an enclosing comprehension pays before its own loops charge).
fn estimate(e: &IdedExpr, scope: &Scope, deep: bool) -> f64 {
    match &e.expr {
        Expr::Select(sel) => 1.0 + estimate(&sel.operand, scope, deep),
        Expr::Call(call) => {
            let mut cost = 1.0
                + call
                    .args
                    .iter()
                    .map(|a| estimate(a, scope, deep))
                    .sum::<f64>();
            if let Some(t) = &call.target {
                cost += estimate(t, scope, deep);
                if STRING_FNS.contains(&call.func_name.as_str()) {
                    cost += (0.1 * max_length(schema_of(t, scope))).ceil();
                }
            }
            cost
        }
        Expr::Comprehension(c) => estimate_comprehension(c, scope, deep),
        Expr::List(l) => {
            1.0 + l
                .elements
                .iter()
                .map(|x| estimate(x, scope, deep))
                .sum::<f64>()
        }
        _ => 1.0,
    }
}

fn estimate_comprehension(c: &ComprehensionExpr, scope: &Scope, deep: bool) -> f64 {
    if !deep {
        return 1.0 + estimate(&c.iter_range, scope, false);
    }
    let (range, inner) = loop_scope(c, scope);
    let body = estimate(&c.loop_step, &inner, true) + estimate(&c.loop_cond, &inner, true);
    estimate(&c.iter_range, scope, true) + max_size(range) * (1.0 + body)
}

/// The schema of a comprehension's range and the scope of its body (the loop variable an
/// element of the range, the accumulator unknown).
fn loop_scope<'s>(c: &ComprehensionExpr, scope: &Scope<'s>) -> (&'s Json, Scope<'s>) {
    let range = schema_of(&c.iter_range, scope);
    let (_, element) = element_schemas(range);
    let inner = scope
        .clone()
        .with(&c.iter_var, element)
        .with(&c.accu_var, &UNKNOWN);
    (range, inner)
}

/// Rewrites every comprehension range `r` into `@cost(r, w)`, w the cost of one iteration.
fn instrument(e: &mut IdedExpr, scope: &Scope) {
    match &mut e.expr {
        Expr::Comprehension(c) => {
            let (_, inner) = loop_scope(c, scope);
            let weight =
                1.0 + estimate(&c.loop_step, &inner, false) + estimate(&c.loop_cond, &inner, false);
            instrument(&mut c.iter_range, scope);
            for part in [&mut c.loop_step, &mut c.loop_cond, &mut c.result] {
                instrument(part, &inner);
            }
            let range = std::mem::take(&mut c.iter_range);
            let weight = IdedExpr {
                id: 0,
                expr: Expr::Literal(LiteralValue::Int((weight as i64).into())),
            };
            c.iter_range = IdedExpr {
                id: 0,
                expr: Expr::Call(CallExpr {
                    func_name: COST_FN.to_string(),
                    target: None,
                    args: vec![range, weight],
                }),
            };
        }
        Expr::Select(sel) => instrument(&mut sel.operand, scope),
        Expr::Call(call) => {
            if let Some(t) = &mut call.target {
                instrument(t, scope);
            }
            call.args.iter_mut().for_each(|a| instrument(a, scope));
        }
        Expr::List(l) => l.elements.iter_mut().for_each(|x| instrument(x, scope)),
        _ => {}
    }
}
