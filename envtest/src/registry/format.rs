//! The `format` keyword of CRD schemas: the formats kube-apiserver checks on custom resources
//! (`apiextensions-apiserver/pkg/apiserver/validation/formats.go`, checked by kube-openapi's
//! `strfmt`): `bsonobjectid`, `uri`, `email`, `hostname`, `ipv4`, `ipv6`, `cidr`, `mac`, `uuid`,
//! `uuid3`, `uuid4`, `uuid5`, `isbn`, `isbn10`, `isbn13`, `creditcard`, `ssn`, `hexcolor`,
//! `rgbcolor`, `byte`, `password`, `date`, `duration`, `datetime` / `date-time`. Other formats
//! (`int32`, `int-or-string`, ...) are not checked, as upstream. The schema walk
//! ([`super::schema`]) asks [`valid`]; addresses and URLs are parsed as the CEL libraries parse
//! them ([`crate::api::net`]), so the checks need no CEL.

use std::collections::HashMap;
use std::sync::LazyLock;

use base64::Engine;
use regex::Regex;

use crate::api::net::{Url, parse_cidr, parse_ip};

const OCTET: &str = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)";

static PATTERNS: LazyLock<HashMap<&'static str, Regex>> = LazyLock::new(|| {
    let rgb = format!(r"^rgb\(\s*{OCTET}\s*,\s*{OCTET}\s*,\s*{OCTET}\s*\)$");
    let table: Vec<(&str, String)> = vec![
        ("bsonobjectid", r"^[0-9a-fA-F]{24}$".into()),
        ("email", r"^[^@\s<>]+@[^@\s<>]+$".into()),
        ("hostname", r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$".into()),
        ("uuid", r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$".into()),
        ("uuid3", r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$".into()),
        ("uuid4", r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$".into()),
        ("uuid5", r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$".into()),
        ("isbn10", r"^(?:[0-9]{9}X|[0-9]{10})$".into()),
        ("isbn13", r"^(?:[0-9]{13})$".into()),
        ("creditcard", r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$".into()),
        ("ssn", r"^\d{3}[- ]?\d{2}[- ]?\d{4}$".into()),
        ("hexcolor", r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$".into()),
        ("rgbcolor", rgb),
        ("mac", r"^([0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(([:-])[0-9a-fA-F]{2}){4}((([:-])[0-9a-fA-F]{2}){2}|(([:-])[0-9a-fA-F]{2}){14})?|[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}|(\.[0-9a-fA-F]{4}){7})?)$".into()),
        ("date", r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$".into()),
        ("datetime", r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?([Zz]|[+-]([01]\d|2[0-3]):?[0-5]\d)?$".into()),
        ("duration", r"^(\s*[0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s|m|h|d|w|seconds?|minutes?|hours?|days?|weeks?)\s*)+$".into()),
    ];
    table
        .into_iter()
        .map(|(k, p)| (k, Regex::new(&p).expect("format patterns compile")))
        .collect()
});

/// Whether `s` is valid for `format`; formats upstream does not check are always valid.
pub(crate) fn valid(format: &str, s: &str) -> bool {
    match format {
        "ipv4" => parse_ip(s).is_ok_and(|ip| ip.is_ipv4()),
        "ipv6" => parse_ip(s).is_ok_and(|ip| ip.is_ipv6()),
        "cidr" => parse_cidr(s).is_ok(),
        "uri" => Url::parse(s).is_some(),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "isbn" => valid("isbn10", s) || valid("isbn13", s),
        "hostname" => s.len() <= 255 && PATTERNS["hostname"].is_match(s),
        "date-time" => valid("datetime", s),
        other => PATTERNS.get(other).is_none_or(|re| re.is_match(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn checks_the_formats_upstream_checks() {
        let good = [
            ("date-time", "2024-01-02T03:04:05Z"),
            ("date-time", "2024-01-02T03:04:05.123+02:00"),
            ("date", "2024-02-29"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
            ("hostname", "example.com"),
            ("ipv4", "10.0.0.1"),
            ("ipv6", "::1"),
            ("cidr", "10.0.0.0/8"),
            ("byte", "aGVsbG8="),
            ("email", "a@b.c"),
            ("uri", "https://x.io/p"),
            ("mac", "00:1a:2b:3c:4d:5e"),
            ("duration", "1h30m"),
            ("hexcolor", "#fff"),
            ("int32", "anything"),
            ("password", "x"),
        ];
        for (f, s) in good {
            assert!(valid(f, s), "{f} {s}");
        }
        let bad = [
            ("date-time", "yesterday"),
            ("date", "2024-13-01"),
            ("uuid", "xyz"),
            ("hostname", "-bad-"),
            ("ipv4", "::1"),
            ("ipv6", "10.0.0.1"),
            ("cidr", "10.0.0.0"),
            ("byte", "%%%"),
            ("email", "nope"),
            ("uri", "not a uri"),
            ("mac", "00:1a"),
            ("duration", "forever"),
        ];
        for (f, s) in bad {
            assert!(!valid(f, s), "{f} {s}");
        }
    }
}
