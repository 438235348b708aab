//! Kubernetes' CEL regex library (`library/regex.go`): `find` and `findAll` on strings.
//! `matches` is in CEL's standard library.

use std::sync::Arc;

use cel::extractors::{Arguments, This};
use cel::{Context, ExecutionError, Value};

use super::fail;

/// Context functions of this library.
pub(super) fn register(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("find", |This(s): This<Arc<String>>, re: Arc<String>| {
        let re = compile("find", &re)?;
        Ok::<_, ExecutionError>(Value::from(re.find(&s).map_or("", |m| m.as_str())))
    })?;
    ctx.add_function(
        "findAll",
        |This(s): This<Arc<String>>, Arguments(args): Arguments| find_all(&s, &args),
    )?;
    Ok(())
}

fn compile(f: &str, re: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(re).map_err(|e| fail(f, e))
}

fn find_all(s: &str, args: &[Value]) -> Result<Value, ExecutionError> {
    let (re, limit) = match args {
        [Value::String(re)] => (re, -1),
        [Value::String(re), Value::Int(n)] => (re, *n),
        _ => return Err(fail("findAll", "expects a regex and an optional limit")),
    };
    let re = compile("findAll", re)?;
    let found = re.find_iter(s).map(|m| Value::from(m.as_str()));
    let found: Vec<Value> = match usize::try_from(limit) {
        Ok(n) => found.take(n).collect(),
        Err(_) => found.collect(),
    };
    Ok(Value::List(Arc::new(found)))
}
