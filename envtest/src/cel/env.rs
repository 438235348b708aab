//! The CEL environment every rule and policy expression compiles and runs in: cel-rust's standard
//! library with its strings, lists and math extensions, plus [`super::library`]; and the
//! per-evaluation [`Context`] that binds variables and meters cost ([`Meter`]).
//!
//! Cost: cel-rust has no cost tracking, so [`super::program`] rewrites every comprehension's
//! range `r` into `@cost(r, w)`, and `@cost` charges `size(r) × w` (w: the estimated cost of one
//! iteration) to the evaluation's [`Meter`], failing as cel-go does once the limit is passed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cel::{Context, Env, ExecutionError, Value, extensions};

use super::library;

/// The name of the cost-charging function the program rewrite inserts.
pub(crate) const COST_FN: &str = "@cost";

/// cel-go's error when an evaluation passes its cost limit.
pub(crate) const COST_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// The shared environment (built once).
pub(crate) fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(build().expect("the CEL libraries declare without conflicts")))
        .clone()
}

fn build() -> Result<Env, cel::DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(extensions::strings)?;
    env.add_extension(extensions::lists)?;
    env.add_extension(extensions::math)?;
    library::declare(&mut env)?;
    Ok(env)
}

/// The cost spent by one evaluation, against its limit.
#[derive(Debug)]
pub(crate) struct Meter {
    spent: AtomicU64,
    limit: u64,
}

impl Meter {
    /// A meter allowing `limit` units.
    pub(crate) fn new(limit: u64) -> Arc<Meter> {
        Arc::new(Meter {
            spent: AtomicU64::new(0),
            limit,
        })
    }

    /// Units spent so far.
    pub(crate) fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }

    fn charge(&self, units: u64) -> Result<(), ExecutionError> {
        let total = self
            .spent
            .fetch_add(units, Ordering::Relaxed)
            .saturating_add(units);
        if total > self.limit {
            return Err(ExecutionError::function_error(COST_FN, COST_EXCEEDED));
        }
        Ok(())
    }
}

fn size_of(v: &Value) -> u64 {
    match v {
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.map.len() as u64,
        _ => 1,
    }
}

/// A fresh context with the libraries and the cost meter; callers add their variables.
pub(crate) fn context(meter: &Arc<Meter>) -> Context<'static, 'static> {
    let mut ctx = Context::with_env(env());
    library::register(&mut ctx).expect("the CEL libraries register without conflicts");
    let meter = meter.clone();
    ctx.add_function(COST_FN, move |range: Value, weight: i64| {
        meter.charge(size_of(&range).saturating_mul(weight.max(1) as u64))?;
        Ok::<_, ExecutionError>(range)
    })
    .expect("the cost function has a reserved name");
    ctx
}
