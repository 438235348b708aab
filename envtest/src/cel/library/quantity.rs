//! Kubernetes' CEL quantity library (`library/quantity.go`): `quantity(s)`, `isQuantity(s)`, and
//! on a quantity `sign`, `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub`,
//! `isLessThan`, `isGreaterThan`, `compareTo`; `==` compares values (`1Gi == 1024Mi`).
//!
//! A quantity is kept exactly, as `mantissa × 10^exp` in an `i128` (binary suffixes are integers).

use std::cmp::Ordering;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};

use super::fail;

/// A parsed `resource.Quantity`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Quantity {
    mantissa: i128,
    exp: i32,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_to(other) == Ordering::Equal
    }
}
impl Eq for Quantity {}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

const FORMAT_ERR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

fn suffix(s: &str) -> Option<(i128, i32)> {
    Some(match s {
        "" => (1, 0),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        s if s.starts_with(['e', 'E']) => (1, s[1..].parse().ok()?),
        _ => return None,
    })
}

impl Quantity {
    /// Parses a quantity string (`100m`, `1.5Gi`, `2e3`); `None` if it is not one.
    pub(crate) fn parse(s: &str) -> Option<Quantity> {
        let (sign, body) = match s.as_bytes().first()? {
            b'-' => (-1, &s[1..]),
            b'+' => (1, &s[1..]),
            _ => (1, s),
        };
        let end = body
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(body.len());
        let (num, suf) = body.split_at(end);
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        if (int.is_empty() && frac.is_empty()) || frac.contains('.') || num.len() > 30 {
            return None;
        }
        let digits: i128 = format!("{int}{frac}").parse().ok()?;
        let (mult, exp) = suffix(suf)?;
        let exp = exp.checked_sub(i32::try_from(frac.len()).ok()?)?;
        Some(
            Quantity {
                mantissa: sign * digits.checked_mul(mult)?,
                exp,
            }
            .normal(),
        )
    }

    fn normal(mut self) -> Quantity {
        while self.mantissa != 0 && self.mantissa % 10 == 0 && self.exp < 40 {
            self.mantissa /= 10;
            self.exp += 1;
        }
        if self.mantissa == 0 {
            self.exp = 0;
        }
        self
    }

    /// Both mantissas at a common exponent, saturating where i128 overflows.
    fn aligned(&self, o: &Quantity) -> (i128, i128, i32) {
        let e = self.exp.min(o.exp);
        let scale = |q: &Quantity| {
            10i128
                .checked_pow((q.exp - e) as u32)
                .and_then(|p| q.mantissa.checked_mul(p))
                .unwrap_or(if q.mantissa < 0 { i128::MIN } else { i128::MAX })
        };
        (scale(self), scale(o), e)
    }

    fn cmp_to(&self, o: &Quantity) -> Ordering {
        let (a, b, _) = self.aligned(o);
        a.cmp(&b)
    }

    fn add(&self, o: &Quantity, neg: bool) -> Result<Quantity, ExecutionError> {
        let (a, b, exp) = self.aligned(o);
        let b = if neg { -b } else { b };
        let mantissa = a
            .checked_add(b)
            .ok_or_else(|| fail("add", "quantity overflow"))?;
        Ok(Quantity { mantissa, exp }.normal())
    }

    /// Greater than zero (`q.Cmp(zero) == 1`).
    pub(crate) fn is_positive(&self) -> bool {
        self.mantissa > 0
    }

    /// The sum, saturating where it would overflow (resource sums never come near).
    pub(crate) fn plus(&self, o: &Quantity) -> Quantity {
        let (a, b, exp) = self.aligned(o);
        Quantity {
            mantissa: a.saturating_add(b),
            exp,
        }
        .normal()
    }

    fn as_integer(&self) -> Option<i64> {
        if self.exp < 0 {
            return None;
        }
        let v = self
            .mantissa
            .checked_mul(10i128.checked_pow(self.exp as u32)?)?;
        i64::try_from(v).ok()
    }

    fn as_float(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exp)
    }
}

fn of(v: &Value, f: &str) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<Quantity>().copied(),
        Value::Int(i) => Some(
            Quantity {
                mantissa: *i as i128,
                exp: 0,
            }
            .normal(),
        ),
        _ => None,
    }
    .ok_or_else(|| fail(f, format!("no such overload: {f} on {v:?}")))
}

fn wrap(q: Quantity) -> Value {
    Value::Opaque(Arc::new(q))
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
        of(&v, "sign").map(|q| Value::Int(q.mantissa.signum() as i64))
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
        of(&v, "add")?.add(&of(&o, "add")?, false).map(wrap)
    })?;
    ctx.add_function("sub", |This(v): This<Value>, o: Value| {
        of(&v, "sub")?.add(&of(&o, "sub")?, true).map(wrap)
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

#[cfg(test)]
mod tests {
    use super::Quantity;

    #[test]
    fn parses_and_compares_exactly() {
        let q = |s| Quantity::parse(s).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_eq!(q("100m"), q("0.1"));
        assert_eq!(q("1k"), q("1e3"));
        assert!(q("1.5").cmp_to(&q("2")).is_lt());
        assert_eq!(q("2").as_integer(), Some(2));
        assert_eq!(q("100m").as_integer(), None);
        for bad in ["", "abc", "1.2.3", "1Xi", "--1"] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }
}
