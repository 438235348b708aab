//! `resource.Quantity` (`k8s.io/apimachinery/pkg/api/resource/quantity.go`): parsing a quantity
//! string (`100m`, `1.5Gi`, `2e3`), comparing and adding exactly. A quantity is kept as
//! `mantissa × 10^exp` in an `i128` (binary suffixes are integers).
//!
//! Three users: the type check of built-in bodies (`registry::builtins::decode`: a quantity
//! field must parse), the built-in defaulting of Pods ([`crate::registry::defaults`]: a container's
//! requests from its limits, the pod's overhead sums) and the CEL quantity library
//! ([`crate::cel`]'s `quantity(s)`, behind the `cel` feature), which adds the CEL functions and
//! the opaque value around this type.

use std::cmp::Ordering;

/// `ParseQuantity`'s `ErrFormatWrong`: the error of a string that is not a quantity.
pub(crate) const FORMAT_ERR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// A parsed `resource.Quantity`; `==` compares values (`1Gi == 1024Mi`).
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

    /// The order of the two values (`q.Cmp(o)`).
    pub(crate) fn cmp_to(&self, o: &Quantity) -> Ordering {
        let (a, b, _) = self.aligned(o);
        a.cmp(&b)
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

    /// Greater than zero (`q.Cmp(zero) == 1`).
    pub(crate) fn is_positive(&self) -> bool {
        self.mantissa > 0
    }
}

/// What only the CEL quantity library asks of a quantity (`quantity(..).add(..)`, `sign()`,
/// `asInteger()`, ...).
#[cfg(feature = "cel")]
impl Quantity {
    /// The integer `i` as a quantity.
    pub(crate) fn from_int(i: i64) -> Quantity {
        Quantity {
            mantissa: i128::from(i),
            exp: 0,
        }
        .normal()
    }

    /// The sum (`neg`: the difference), `None` where it overflows.
    pub(crate) fn checked_add(&self, o: &Quantity, neg: bool) -> Option<Quantity> {
        let (a, b, exp) = self.aligned(o);
        let b = if neg { -b } else { b };
        let mantissa = a.checked_add(b)?;
        Some(Quantity { mantissa, exp }.normal())
    }

    /// -1, 0 or 1 (`q.Sign()`).
    pub(crate) fn sign(&self) -> i64 {
        self.mantissa.signum() as i64
    }

    /// The value as an `i64`, `None` if it is fractional or does not fit (`q.AsInt64()`).
    pub(crate) fn as_integer(&self) -> Option<i64> {
        if self.exp < 0 {
            return None;
        }
        let v = self
            .mantissa
            .checked_mul(10i128.checked_pow(self.exp as u32)?)?;
        i64::try_from(v).ok()
    }

    /// The value as the nearest `f64` (`q.AsApproximateFloat64()`).
    pub(crate) fn as_float(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exp)
    }
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
        assert_eq!(q("1").plus(&q("500m")), q("1.5"));
        assert!(q("1m").is_positive() && !q("0").is_positive() && !q("-1").is_positive());
        for bad in ["", "abc", "1.2.3", "1Xi", "--1"] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }

    #[cfg(feature = "cel")]
    #[test]
    fn converts_and_subtracts_for_cel() {
        let q = |s| Quantity::parse(s).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(Quantity::from_int(1000), q("1k"));
        assert_eq!(q("2").as_integer(), Some(2));
        assert_eq!(q("100m").as_integer(), None);
        assert_eq!(q("1").checked_add(&q("500m"), true), Some(q("0.5")));
        assert_eq!(q("-3m").sign(), -1);
        assert_eq!(q("1500m").as_float(), 1.5);
    }
}
