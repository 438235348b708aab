//! Kubernetes' CEL quantity library (`library/quantity.go`): `quantity(s)`, `isQuantity(s)`, and
//! on a quantity `sign`, `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub`,
//! `isLessThan`, `isGreaterThan`, `compareTo`; `==` compares values (`1Gi == 1024Mi`).
//!
//! The quantity itself (parsing, exact comparison and sums) is [`crate::api::quantity`]'s; this
//! module makes it a CEL value and adds the functions.

use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

use crate::api::quantity::{FORMAT_ERR, Quantity};

use super::fail;

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn of(v: &Value, f: &str) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<Quantity>().copied(),
        Value::Int(i) => Some(Quantity::from_int(*i)),
        _ => None,
    }
    .ok_or_else(|| fail(f, format!("no such overload: {f} on {v:?}")))
}

fn wrap(q: Quantity) -> Value {
    Value::Opaque(Arc::new(q))
}

fn add(f: &str, v: &Value, o: &Value, neg: bool) -> Result<Value, ExecutionError> {
    of(v, f)?
        .checked_add(&of(o, f)?, neg)
        .map(wrap)
        .ok_or_else(|| fail(f, "quantity overflow"))
}

/// Context functions of this library.
pub(super) fn register(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("quantity", |s: Arc<String>| {
        Quantity::parse(&s)
            .map(wrap)
            .ok_or_else(|| fail("quantity", FORMAT_ERR))
    })?;
    ctx.add_function("isQuantity", |s: Arc<String>| Quantity::parse(&s).is_some())?;
    ctx.add_function("sign", |This(v): This<Value>| {
        of(&v, "sign").map(|q| Value::Int(q.sign()))
    })?;
    ctx.add_function("isInteger", |This(v): This<Value>| {
        of(&v, "isInteger").map(|q| q.as_integer().is_some())
    })?;
    ctx.add_function("asInteger", |This(v): This<Value>| {
        of(&v, "asInteger")?
            .as_integer()
            .ok_or_else(|| fail("asInteger", "cannot convert value to integer"))
    })?;
    ctx.add_function("asApproximateFloat", |This(v): This<Value>| {
        of(&v, "asApproximateFloat").map(|q| q.as_float())
    })?;
    register_arithmetic(ctx)
}

fn register_arithmetic(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("add", |This(v): This<Value>, o: Value| {
        add("add", &v, &o, false)
    })?;
    ctx.add_function("sub", |This(v): This<Value>, o: Value| {
        add("sub", &v, &o, true)
    })?;
    ctx.add_function("isLessThan", |This(v): This<Value>, o: Value| {
        Ok::<_, ExecutionError>(of(&v, "isLessThan")?.cmp_to(&of(&o, "isLessThan")?).is_lt())
    })?;
    ctx.add_function("isGreaterThan", |This(v): This<Value>, o: Value| {
        Ok::<_, ExecutionError>(
            of(&v, "isGreaterThan")?
                .cmp_to(&of(&o, "isGreaterThan")?)
                .is_gt(),
        )
    })?;
    ctx.add_function("compareTo", |This(v): This<Value>, o: Value| {
        let ord = of(&v, "compareTo")?.cmp_to(&of(&o, "compareTo")?);
        Ok::<_, ExecutionError>(Value::Int(ord as i64))
    })?;
    Ok(())
}
