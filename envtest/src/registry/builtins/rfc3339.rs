//! Go's `time.Parse` with the two layouts Kubernetes times decode with: `time.RFC3339`
//! (`metav1.Time`) and `metav1.RFC3339Micro` (`metav1.MicroTime`: exactly six fractional
//! digits), with Go's error texts (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot
//! parse "x" as "2006"`, `parsing time "...": month out of range`), as Go's `time/format.go`
//! walks a layout element by element. Only checks: the sibling `decode` needs the verdict.

const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// One element of a layout.
#[derive(Clone, Copy)]
enum El {
    Lit(&'static str),
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    /// `.000000`: a separator and exactly six digits.
    Micros,
    Zone,
}

impl El {
    fn layout(self) -> &'static str {
        match self {
            El::Lit(s) => s,
            El::Year => "2006",
            El::Month => "01",
            El::Day => "02",
            El::Hour => "15",
            El::Minute => "04",
            El::Second => "05",
            El::Micros => ".000000",
            El::Zone => "Z07:00",
        }
    }
}

const ELEMENTS: [El; 11] = [
    El::Year,
    El::Lit("-"),
    El::Month,
    El::Lit("-"),
    El::Day,
    El::Lit("T"),
    El::Hour,
    El::Lit(":"),
    El::Minute,
    El::Lit(":"),
    El::Second,
];

/// Parses `value` as Go's `time.Parse(time.RFC3339, value)` (or `RFC3339Micro`) would.
pub(crate) fn parse(value: &str, micro: bool) -> Result<(), String> {
    let layout = if micro { RFC3339_MICRO } else { RFC3339 };
    let tail: &[El] = if micro {
        &[El::Micros, El::Zone]
    } else {
        &[El::Zone]
    };
    let cannot = |rest: &str, el: El| {
        format!(
            "parsing time {value:?} as {layout:?}: cannot parse {rest:?} as {:?}",
            el.layout()
        )
    };
    let out_of_range = |what: &str| format!("parsing time {value:?}: {what} out of range");
    let mut rest = value;
    let mut n = [0u32; 3];
    for el in ELEMENTS.iter().chain(tail) {
        let (num, after) = element(rest, *el, micro).ok_or_else(|| cannot(rest, *el))?;
        if let Some(what) = range_error(*el, num) {
            return Err(out_of_range(what));
        }
        match el {
            El::Year => n[0] = num,
            El::Month => n[1] = num,
            El::Day => n[2] = num,
            _ => {}
        }
        rest = after;
    }
    if !rest.is_empty() {
        return Err(format!("parsing time {value:?}: extra text: {rest:?}"));
    }
    if n[2] < 1 || n[2] > days_in(n[1], n[0]) {
        return Err(out_of_range("day"));
    }
    Ok(())
}

/// Reads one element at the start of `s`: its number (0 for literals) and what follows.
fn element(s: &str, el: El, micro: bool) -> Option<(u32, &str)> {
    match el {
        El::Lit(l) => Some((0, s.strip_prefix(l)?)),
        El::Year => {
            let digits = s.get(..4)?;
            digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| (digits.parse().unwrap_or(0), &s[4..]))
        }
        El::Month | El::Day | El::Minute => two_digits(s),
        El::Hour => one_or_two_digits(s),
        El::Second => {
            let (sec, rest) = two_digits(s)?;
            Some((sec, if micro { rest } else { fraction(rest) }))
        }
        El::Micros => {
            let digits = s.strip_prefix(['.', ','])?.get(..6)?;
            digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| (0, &s[7..]))
        }
        El::Zone => zone(s),
    }
}

/// Go's `getnum(s, true)`.
fn two_digits(s: &str) -> Option<(u32, &str)> {
    let b = s.as_bytes();
    (b.len() >= 2 && b[0].is_ascii_digit() && b[1].is_ascii_digit()).then(|| {
        (
            u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0'),
            &s[2..],
        )
    })
}

/// Go's `getnum(s, false)`.
fn one_or_two_digits(s: &str) -> Option<(u32, &str)> {
    two_digits(s).or_else(|| {
        let b = *s.as_bytes().first()?;
        b.is_ascii_digit().then(|| (u32::from(b - b'0'), &s[1..]))
    })
}

/// The fractional seconds `time.Parse` accepts after the seconds of a layout without them.
fn fraction(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2 && (b[0] == b'.' || b[0] == b',') && b[1].is_ascii_digit() {
        let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        return &s[n..];
    }
    s
}

/// `Z07:00`: `Z`, or a sign, two digits, `:`, two digits.
fn zone(s: &str) -> Option<(u32, &str)> {
    if let Some(rest) = s.strip_prefix('Z') {
        return Some((0, rest));
    }
    let b = s.as_bytes();
    if b.len() < 6 || b[3] != b':' || !(b[0] == b'+' || b[0] == b'-') {
        return None;
    }
    let (h, _) = two_digits(&s[1..3])?;
    let (m, _) = two_digits(&s[4..6])?;
    Some((h * 100 + m, &s[6..]))
}

/// Go's range checks, in its words.
fn range_error(el: El, n: u32) -> Option<&'static str> {
    match el {
        El::Month if !(1..=12).contains(&n) => Some("month"),
        El::Hour if n >= 24 => Some("hour"),
        El::Minute if n >= 60 => Some("minute"),
        El::Second if n >= 60 => Some("second"),
        El::Zone if n / 100 > 24 => Some("time zone offset hour"),
        El::Zone if n % 100 > 60 => Some("time zone offset minute"),
        _ => None,
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn go_accepts_and_refuses_the_same_times() {
        for ok in [
            "2024-01-02T03:04:05Z",
            "2024-02-29T23:59:59+02:00",
            "2024-01-02T3:04:05.123456789-07:30",
        ] {
            assert_eq!(parse(ok, false), Ok(()), "{ok}");
        }
        assert_eq!(parse("2024-01-02T03:04:05.123456Z", true), Ok(()));
        let layout = "\"2006-01-02T15:04:05Z07:00\"";
        for (bad, want) in [
            (
                "yesterday",
                format!(
                    "parsing time \"yesterday\" as {layout}: cannot parse \"yesterday\" as \"2006\""
                ),
            ),
            (
                "2024-01-02 03:04:05Z",
                format!(
                    "parsing time \"2024-01-02 03:04:05Z\" as {layout}: cannot parse \" 03:04:05Z\" as \"T\""
                ),
            ),
            (
                "2024-13-02T03:04:05Z",
                "parsing time \"2024-13-02T03:04:05Z\": month out of range".into(),
            ),
            (
                "2023-02-29T03:04:05Z",
                "parsing time \"2023-02-29T03:04:05Z\": day out of range".into(),
            ),
            (
                "2024-01-02T03:04:05Zx",
                "parsing time \"2024-01-02T03:04:05Zx\": extra text: \"x\"".into(),
            ),
            (
                "2024-01-02T03:04:05",
                format!(
                    "parsing time \"2024-01-02T03:04:05\" as {layout}: cannot parse \"\" as \"Z07:00\""
                ),
            ),
        ] {
            assert_eq!(parse(bad, false), Err(want), "{bad}");
        }
        assert_eq!(
            parse("2024-01-02T03:04:05Z", true),
            Err("parsing time \"2024-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\"".into())
        );
    }
}
