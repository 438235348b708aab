//! Go's text forms of time: `metav1.Time` (RFC 3339, seconds), `metav1.MicroTime` (RFC 3339,
//! microseconds) and `time.Duration` (`1h2m3.5s`), as the JSON of those types spells them.

use k8s_openapi::jiff::Timestamp;

/// The Unix second of Go's zero `time.Time` (0001-01-01T00:00:00Z), which a non-pointer
/// `metav1.Time` that was never set encodes as in protobuf; its JSON is `null`.
pub(super) const GO_ZERO: i64 = -62_135_596_800;

/// RFC 3339 in UTC, with microseconds when `micro`.
pub(super) fn format_time(seconds: i64, nanos: i32, micro: bool) -> Option<String> {
    let t = Timestamp::new(seconds, if micro { nanos } else { 0 }).ok()?;
    if micro {
        let base = t.strftime("%Y-%m-%dT%H:%M:%S");
        Some(format!("{base}.{:06}Z", nanos.max(0) / 1000))
    } else {
        Some(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
    }
}

/// (seconds, nanos) of an RFC 3339 time.
pub(super) fn parse_time(s: &str) -> Result<(i64, i32), String> {
    let t: Timestamp = s.parse().map_err(|e| format!("time {s:?}: {e}"))?;
    Ok((t.as_second(), t.subsec_nanosecond()))
}

/// Go's `time.Duration.String()`.
pub(super) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, div) = match n {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", fraction(n, div));
    }
    let (h, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (m, s) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let secs = format!("{}s", fraction(s, 1_000_000_000));
    match (h, m) {
        (0, 0) => format!("{sign}{secs}"),
        (0, m) => format!("{sign}{m}m{secs}"),
        (h, m) => format!("{sign}{h}h{m}m{secs}"),
    }
}

/// `n / div` with the fraction's trailing zeros dropped (`1.5`, `2`).
fn fraction(n: u64, div: u64) -> String {
    let (whole, frac) = (n / div, n % div);
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`: signed decimal numbers with units ns, us (µs), ms, s, m, h.
pub(super) fn parse_duration(s: &str) -> Result<i64, String> {
    let bad = || format!("time: invalid duration {s:?}");
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let value: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &rest[unit_end..];
    }
    let n = total.round() as i64;
    Ok(if neg { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_print_as_go() {
        for (nanos, text) in [
            (0, "0s"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (500_000_000, "500ms"),
            (1_500, "1.5µs"),
            (-2_000_000_000, "-2s"),
        ] {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text), Ok(nanos), "{text}");
        }
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn times_read_and_print_as_go() {
        let (s, n) = parse_time("2024-05-06T07:08:09.123456Z").unwrap();
        assert_eq!(
            format_time(s, n, true).as_deref(),
            Some("2024-05-06T07:08:09.123456Z")
        );
        assert_eq!(
            format_time(s, n, false).as_deref(),
            Some("2024-05-06T07:08:09Z")
        );
    }
}
