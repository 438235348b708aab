//! Kubernetes' CEL list library (`k8s.io/apiserver/pkg/cel/library/lists.go`): `isSorted`, `sum`,
//! `min`, `max`, `indexOf`, `lastIndexOf`. cel-rust's lists extension covers the rest
//! (`slice`, `flatten`, `distinct`, `reverse`, `sort`).

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::extractors::This;
use cel::{Context, Env, ExecutionError, Value};

use super::fail;

/// Context functions of this library.
pub(super) fn register(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("isSorted", |This(l): This<Arc<Vec<Value>>>| is_sorted(&l))?;
    ctx.add_function("sum", |This(l): This<Arc<Vec<Value>>>| sum(&l))?;
    ctx.add_function("min", |This(l): This<Arc<Vec<Value>>>| {
        extreme(&l, "min", Ordering::Less)
    })?;
    ctx.add_function("max", |This(l): This<Arc<Vec<Value>>>| {
        extreme(&l, "max", Ordering::Greater)
    })?;
    Ok(())
}

/// Env overloads: `indexOf` / `lastIndexOf` are also string functions, declared on the env by the
/// strings extension, so the list forms must be overloads too.
pub(super) fn declare(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_member_overload(
        "indexOf",
        "list_indexOf",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_lastIndexOf",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )
}

fn compare(a: &Value, b: &Value, f: &str) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b)
        .ok_or_else(|| fail(f, "list elements must be comparable"))
}

fn is_sorted(l: &[Value]) -> Result<Value, ExecutionError> {
    for w in l.windows(2) {
        if compare(&w[0], &w[1], "isSorted")? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn sum(l: &[Value]) -> Result<Value, ExecutionError> {
    let mut acc = Value::Int(0);
    for (i, v) in l.iter().enumerate() {
        acc = match (acc, v) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| fail("sum", "integer overflow"))?,
            ),
            (Value::Int(_), Value::UInt(b)) if i == 0 => Value::UInt(*b),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| fail("sum", "integer overflow"))?,
            ),
            (Value::Int(_), Value::Float(b)) if i == 0 => Value::Float(*b),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (_, other) => return Err(fail("sum", format!("cannot sum {other:?}"))),
        };
    }
    Ok(acc)
}

fn extreme(l: &[Value], f: &str, want: Ordering) -> Result<Value, ExecutionError> {
    let mut best = l
        .first()
        .ok_or_else(|| fail(f, format!("{f} called on empty list")))?;
    for v in &l[1..] {
        if compare(v, best, f)? == want {
            best = v;
        }
    }
    Ok(best.clone())
}

fn position<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = Value::try_from(args[0].as_ref())?;
    let needle = Value::try_from(args[1].as_ref())?;
    let Value::List(items) = list else {
        return Err(fail("indexOf", "not a list"));
    };
    let mut found = items.iter().enumerate().filter(|(_, v)| **v == needle);
    let at = if last {
        found.next_back()
    } else {
        found.next()
    };
    let index = at.map_or(-1, |(i, _)| i as i64);
    Ok(CowVal::Owned(Value::Int(index).try_into()?))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, true)
}
