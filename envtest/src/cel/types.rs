//! The slice of cel-go's type check that catches the common mistake of comparing a field with a
//! value of another type (`self == true` on an integer): where both operands of `==`, `!=`, `<`,
//! `<=`, `>`, `>=` or `+` have a type known at compile time (a literal, or a schema node of a
//! scalar type), and the types cannot meet, the expression does not compile, with cel-go's
//! message. Numbers of different kinds are left alone (the runtime compares them).
//! [`super::program`] asks [`mismatch`] about every call while checking.

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value as Json;

const OPERATORS: [&str; 7] = ["_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_+_"];

/// The CEL type of a schema node, for scalar types.
pub(crate) fn of_schema(schema: &Json) -> Option<&'static str> {
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Json::as_bool)
        == Some(true)
    {
        return None;
    }
    let format = schema.get("format").and_then(Json::as_str);
    Some(match (schema.get("type").and_then(Json::as_str)?, format) {
        ("string", Some("byte")) => "bytes",
        ("string", Some("date-time" | "datetime" | "date")) => "google.protobuf.Timestamp",
        ("string", Some("duration")) => "google.protobuf.Duration",
        ("string", _) => "string",
        ("integer", _) => "int",
        ("number", _) => "double",
        ("boolean", _) => "bool",
        _ => return None,
    })
}

fn of_literal(e: &IdedExpr) -> Option<&'static str> {
    match &e.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => Some("bool"),
        Expr::Literal(LiteralValue::Int(_)) => Some("int"),
        Expr::Literal(LiteralValue::UInt(_)) => Some("uint"),
        Expr::Literal(LiteralValue::Double(_)) => Some("double"),
        Expr::Literal(LiteralValue::String(_)) => Some("string"),
        Expr::Literal(LiteralValue::Bytes(_)) => Some("bytes"),
        _ => None,
    }
}

fn numeric(t: &str) -> bool {
    matches!(t, "int" | "uint" | "double")
}

/// cel-go's complaint about `call` if its operands' known types cannot meet; `type_of` gives
/// the type of a non-literal operand (from the schema), if known.
pub(crate) fn mismatch(
    call: &CallExpr,
    type_of: impl Fn(&IdedExpr) -> Option<&'static str>,
) -> Option<String> {
    if !OPERATORS.contains(&call.func_name.as_str()) || call.target.is_some() {
        return None;
    }
    let [a, b] = call.args.as_slice() else {
        return None;
    };
    let ta = of_literal(a).or_else(|| type_of(a))?;
    let tb = of_literal(b).or_else(|| type_of(b))?;
    if ta == tb || (numeric(ta) && numeric(tb)) {
        return None;
    }
    Some(format!(
        "found no matching overload for '{}' applied to '({ta}, {tb})'",
        call.func_name
    ))
}
