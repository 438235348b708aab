//! Label and field selectors, as the list and watch handlers read them from the
//! `labelSelector` and `fieldSelector` query parameters.
//!
//! The label grammar is apimachinery's `labels.Parse` (equality, set-based, exists, does-not-exist
//! and the integer `>`/`<` comparisons), including its error messages; keys and values are checked
//! with the label syntax rules of [`crate::api::validation`]. Field selectors follow
//! `fields.ParseSelector`: comma-joined `field=value`, `field==value`, `field!=value` terms, with
//! backslash escapes for `\,`, `\=` and `\\` in values. Which fields a type supports is the server's
//! business (it reads [`FieldSelector::fields`] and answers 400 for unsupported ones); this module
//! only parses and matches, looking the fields up in the object's JSON.

use std::fmt;

use serde_json::{Map, Value};

use crate::api::validation::{is_qualified_name, is_valid_label_value};

/// A label selector operator (apimachinery's `selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`
    NotEquals,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>1`
    GreaterThan,
    /// `key<1`
    LessThan,
}

/// One term of a label selector: a key, an operator and its values (sorted, deduplicated for the
/// set operators, exactly one for the equality and comparison operators, none for exists).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement with the checks of apimachinery's `NewRequirement`.
    pub(crate) fn new(key: &str, op: Op, mut values: Vec<String>) -> Result<Requirement, String> {
        let errs = is_qualified_name(key);
        if !errs.is_empty() {
            return Err(format!("invalid label key {key:?}: {}", errs.join("; ")));
        }
        match op {
            Op::In | Op::NotIn => {
                if values.is_empty() {
                    return Err("for 'in', 'notin' operators, values set can't be empty".into());
                }
            }
            Op::Equals | Op::DoubleEquals | Op::NotEquals => {
                if values.len() != 1 {
                    return Err("exact-match compatibility requires one single value".into());
                }
            }
            Op::Exists | Op::DoesNotExist => {
                if !values.is_empty() {
                    return Err("values set must be empty for exists and does not exist".into());
                }
            }
            Op::GreaterThan | Op::LessThan => {
                if values.len() != 1 {
                    return Err("for 'Gt', 'Lt' operators, exactly one value is required".into());
                }
                if values.iter().any(|v| v.parse::<i64>().is_err()) {
                    return Err("for 'Gt', 'Lt' operators, the value must be an integer".into());
                }
            }
        }
        for v in &values {
            let errs = is_valid_label_value(v);
            if !errs.is_empty() {
                return Err(format!(
                    "invalid label value: {v:?}: at key: {key:?}: {}",
                    errs.join("; ")
                ));
            }
        }
        values.sort();
        values.dedup();
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    }

    /// Whether the labels satisfy this requirement (a missing key satisfies only `!=`, `notin`
    /// and `!key`).
    pub(crate) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key)).map(label_text);
        match self.op {
            Op::In | Op::Equals | Op::DoubleEquals => match value {
                Some(v) => self.values.contains(&v),
                None => false,
            },
            Op::NotIn | Op::NotEquals => match value {
                Some(v) => !self.values.contains(&v),
                None => true,
            },
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::GreaterThan | Op::LessThan => {
                let Some(have) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let Some(want) = self.values.first().and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                if self.op == Op::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }

    /// The key this requirement is about.
    #[cfg(test)]
    pub(crate) fn key(&self) -> &str {
        &self.key
    }
}

/// Label values are strings; anything else (a malformed object) is compared by its JSON text.
fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Op::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.op {
            Op::Equals => "=",
            Op::DoubleEquals => "==",
            Op::NotEquals => "!=",
            Op::In => " in ",
            Op::NotIn => " notin ",
            Op::GreaterThan => ">",
            Op::LessThan => "<",
            Op::Exists | Op::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.op, Op::In | Op::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements, sorted by key as apimachinery does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a label selector string (`labels.Parse` grammar). The error text is the parser's
    /// message, ready to go into a 400 `BadRequest` Status.
    pub(crate) fn parse(selector: &str) -> Result<LabelSelector, String> {
        let tokens = lex(selector)?;
        let mut parser = Parser { tokens, pos: 0 };
        let mut requirements = parser
            .parse()
            .map_err(|e| format!("unable to parse requirement: {e}"))?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// Whether the labels (`metadata.labels`, absent for an unlabelled object) match every
    /// requirement. The empty selector matches everything.
    pub(crate) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector has no requirements (matches everything).
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Matches an object's `metadata.labels`.
    pub(crate) fn matches_object(&self, obj: &Value) -> bool {
        if self.is_empty() {
            return true;
        }
        self.matches(
            obj.get("metadata")
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object),
        )
    }

    /// The parsed requirements, sorted by key.
    #[cfg(test)]
    pub(crate) fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosedPar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "in" => Tok::In,
        "<" => Tok::LessThan,
        "!=" => Tok::NotEquals,
        "notin" => Tok::NotIn,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Splits the selector into tokens; the last one is always [`Tok::End`].
fn lex(s: &str) -> Result<Vec<(Tok, String)>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && is_whitespace(chars[i]) {
            i += 1;
        }
        if i >= chars.len() {
            out.push((Tok::End, String::new()));
            return Ok(out);
        }
        if is_special(chars[i]) {
            // Longest special-symbol token.
            let mut buf = String::new();
            let mut last: Option<(Tok, String)> = None;
            while i < chars.len() && is_special(chars[i]) {
                buf.push(chars[i]);
                if let Some(t) = keyword(&buf) {
                    last = Some((t, buf.clone()));
                    i += 1;
                } else if last.is_some() {
                    break;
                } else {
                    i += 1;
                }
            }
            match last {
                Some(t) => out.push(t),
                None => return Err(format!("error expected: keyword found '{buf}'")),
            }
        } else {
            let mut buf = String::new();
            while i < chars.len() && !is_special(chars[i]) && !is_whitespace(chars[i]) {
                buf.push(chars[i]);
                i += 1;
            }
            let tok = match keyword(&buf) {
                Some(t) => t,
                None => Tok::Identifier,
            };
            out.push((tok, buf));
        }
    }
}

struct Parser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

/// In a value context, `in` and `notin` are plain identifiers.
fn as_value(t: Tok) -> Tok {
    match t {
        Tok::In | Tok::NotIn => Tok::Identifier,
        t => t,
    }
}

impl Parser {
    fn peek(&self, values: bool) -> (Tok, String) {
        let (t, l) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        (if values { as_value(t) } else { t }, l)
    }

    fn next(&mut self, values: bool) -> (Tok, String) {
        let r = self.peek(values);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        r
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (t, lit) = self.peek(true);
            match t {
                Tok::Identifier | Tok::DoesNotExist => {
                    reqs.push(self.requirement()?);
                    let (t, lit) = self.next(true);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.peek(true);
                            if t2 != Tok::Identifier && t2 != Tok::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.key_and_inferred_op()?;
        if let Some(op) = inferred {
            return Requirement::new(&key, op, Vec::new());
        }
        let op = self.operator()?;
        let values = match op {
            Op::In | Op::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        Requirement::new(&key, op, values)
    }

    fn key_and_inferred_op(&mut self) -> Result<(String, Option<Op>), String> {
        let (mut t, mut lit) = self.next(true);
        let mut not = false;
        if t == Tok::DoesNotExist {
            not = true;
            (t, lit) = self.next(true);
        }
        if t != Tok::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = is_qualified_name(&lit);
        if !errs.is_empty() {
            return Err(format!("invalid label key {lit:?}: {}", errs.join("; ")));
        }
        let (after, _) = self.peek(true);
        if not {
            return Ok((lit, Some(Op::DoesNotExist)));
        }
        if after == Tok::End || after == Tok::Comma {
            return Ok((lit, Some(Op::Exists)));
        }
        Ok((lit, None))
    }

    fn operator(&mut self) -> Result<Op, String> {
        let (t, lit) = self.next(false);
        Ok(match t {
            Tok::In => Op::In,
            Tok::Equals => Op::Equals,
            Tok::DoubleEquals => Op::DoubleEquals,
            Tok::GreaterThan => Op::GreaterThan,
            Tok::LessThan => Op::LessThan,
            Tok::NotIn => Op::NotIn,
            Tok::NotEquals => Op::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: '=', '!=', '==', 'in', notin'"
                ));
            }
        })
    }

    fn set_values(&mut self) -> Result<Vec<String>, String> {
        let (t, lit) = self.next(true);
        if t != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (t, lit) = self.peek(true);
        match t {
            Tok::Identifier | Tok::Comma => {
                let s = self.identifier_list()?;
                let (t, _) = self.next(true);
                if t != Tok::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Tok::ClosedPar => {
                self.next(true);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifier_list(&mut self) -> Result<Vec<String>, String> {
        let mut s: Vec<String> = Vec::new();
        loop {
            let (t, lit) = self.next(true);
            match t {
                Tok::Identifier => {
                    s.push(lit);
                    let (t2, l2) = self.peek(true);
                    match t2 {
                        Tok::Comma => continue,
                        Tok::ClosedPar => return Ok(s),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if s.is_empty() {
                        s.push(String::new());
                    }
                    let (t2, _) = self.peek(true);
                    if t2 == Tok::ClosedPar {
                        s.push(String::new());
                        return Ok(s);
                    }
                    if t2 == Tok::Comma {
                        self.next(true);
                        s.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (t, _) = self.peek(true);
        if t == Tok::End || t == Tok::Comma {
            return Ok(vec![String::new()]);
        }
        let (t, lit) = self.next(true);
        if t == Tok::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// One field selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    negate: bool,
}

/// A parsed field selector: the AND of `field=value` / `field!=value` terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses a field selector (`fields.ParseSelector` grammar). Empty terms are skipped; a term
    /// without an operator, or a value with an unescaped `,`/`=` or a bad escape, is an error whose
    /// text is ready for a 400 `BadRequest` Status.
    pub(crate) fn parse(selector: &str) -> Result<FieldSelector, String> {
        let mut parts = split_terms(selector);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                ));
            };
            let value = unescape_value(rhs)?;
            terms.push(FieldTerm {
                field: lhs.to_string(),
                value,
                negate: op == "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The field names the selector mentions, in term order (may repeat).
    pub(crate) fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// Whether the selector has no terms.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Matches the object's field values (see [`field_value`]; a missing field reads as `""`).
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.matches_with(|f| field_value(obj, f))
    }

    /// Matches with a caller-supplied field lookup.
    pub(crate) fn matches_with(&self, mut lookup: impl FnMut(&str) -> String) -> bool {
        self.terms.iter().all(|t| {
            let have = lookup(&t.field);
            (have == t.value) != t.negate
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if t.negate { "!=" } else { "=" };
            write!(f, "{}{}{}", t.field, op, escape_value(&t.value))?;
        }
        Ok(())
    }
}

/// Splits on unescaped commas, keeping escapes in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, then `==`, then `=` at each position).
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

/// Escapes `\`, `,` and `=` in a field selector value.
pub(crate) fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`]; unknown escapes, a trailing backslash and unescaped `,`/`=` are errors.
pub(crate) fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
            } else {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {c}"
                ));
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

/// The string value of a selectable field of an object, as the apiserver's field sets render it:
/// a dotted path into the JSON (`metadata.name`, `spec.nodeName`, `status.phase`,
/// `involvedObject.kind`, `type`), strings as they are, booleans and numbers in decimal text,
/// missing as `""` — except the few fields upstream derives from typed structs:
/// `spec.hostNetwork`/`spec.unschedulable` (missing = `false`), `status.replicas` (missing = `0`),
/// Job `status.successful` (read from `status.succeeded`, missing = `0`) and core Event `source`
/// (its `component`).
pub(crate) fn field_value(obj: &Value, field: &str) -> String {
    let (path, default) = match field {
        "spec.hostNetwork" | "spec.unschedulable" => (field, "false"),
        "status.replicas" => (field, "0"),
        "status.successful" => ("status.succeeded", "0"),
        "source" => ("source.component", ""),
        _ => (field, ""),
    };
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return default.to_string(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => default.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect()
    }

    fn matches(sel: &str, labels: &[(&str, &str)]) -> bool {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("parse {sel:?}: {e}"));
        s.matches(Some(&set(labels)))
    }

    fn req(key: &str, op: Op, vals: &[&str]) -> Requirement {
        Requirement::new(key, op, vals.iter().map(|s| s.to_string()).collect())
            .unwrap_or_else(|e| panic!("requirement {key}: {e}"))
    }

    #[test]
    fn label_parse_good_and_bad() {
        for good in [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
        ] {
            let s = LabelSelector::parse(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
            assert_eq!(s.to_string(), good.replace(' ', ""), "restring of {good:?}");
        }
        for bad in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn label_parse_is_deterministic() {
        let a = LabelSelector::parse("x=a,a=x").unwrap_or_default();
        let b = LabelSelector::parse("a=x,x=a").unwrap_or_default();
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.to_string(), "a=x,x=a");
    }

    #[test]
    fn label_matches() {
        assert!(matches("", &[("x", "y")]));
        assert!(matches("x=y", &[("x", "y")]));
        assert!(matches("x=y,z=w", &[("x", "y"), ("z", "w")]));
        assert!(matches("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
        assert!(matches("notin=in", &[("notin", "in")]));
        assert!(matches("x", &[("x", "z")]));
        assert!(matches("!x", &[("y", "z")]));
        assert!(matches("x>1", &[("x", "2")]));
        assert!(matches("x<1", &[("x", "0")]));
        assert!(!matches("x=z", &[]));
        assert!(!matches("x=y", &[("x", "z")]));
        assert!(!matches("x=y,z=w", &[("x", "w"), ("z", "w")]));
        assert!(!matches("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
        assert!(!matches("x", &[("y", "z")]));
        assert!(!matches("!x", &[("x", "z")]));
        assert!(!matches("x>1", &[("x", "0")]));
        assert!(!matches("x<1", &[("x", "2")]));
        assert!(!matches("x>1", &[("x", "v2")]));
        assert!(!matches("x>1", &[]));

        let ls = [("foo", "bar"), ("baz", "blah")];
        assert!(matches("foo=bar", &ls));
        assert!(matches("baz=blah", &ls));
        assert!(matches("foo=bar,baz=blah", &ls));
        assert!(!matches("foo=blah", &ls));
        assert!(!matches("baz=bar", &ls));
        assert!(!matches("foo=bar,foobar=bar,baz=blah", &ls));
    }

    #[test]
    fn missing_labels_object() {
        let s = LabelSelector::parse("!a,b!=c,d notin (e)").unwrap_or_default();
        assert!(s.matches(None));
        let s = LabelSelector::parse("a").unwrap_or_default();
        assert!(!s.matches(None));
        assert!(LabelSelector::default().matches(None));
        assert!(LabelSelector::default().is_empty());
        let obj = json!({"metadata": {"labels": {"app": "a"}}});
        assert!(
            LabelSelector::parse("app in (a,b),!legacy")
                .unwrap_or_default()
                .matches_object(&obj)
        );
        assert!(
            !LabelSelector::parse("app=b")
                .unwrap_or_default()
                .matches_object(&obj)
        );
    }

    #[test]
    fn requirement_constructor() {
        let long_value = "a".repeat(64);
        let cases: Vec<(String, Op, Vec<&str>, bool)> = vec![
            ("x".into(), Op::In, vec![], false),
            ("x".into(), Op::NotIn, vec![], false),
            ("x".into(), Op::In, vec!["foo"], true),
            ("x".into(), Op::NotIn, vec!["foo"], true),
            ("x".into(), Op::Exists, vec![], true),
            ("x".into(), Op::DoesNotExist, vec![], true),
            ("1foo".into(), Op::In, vec!["bar"], true),
            ("1234".into(), Op::In, vec!["bar"], true),
            ("y".into(), Op::GreaterThan, vec!["1"], true),
            ("z".into(), Op::LessThan, vec!["6"], true),
            ("foo".into(), Op::GreaterThan, vec!["bar"], false),
            ("barz".into(), Op::LessThan, vec!["blah"], false),
            ("a".repeat(254), Op::Exists, vec![], false),
            ("x".into(), Op::Equals, vec!["a", "b"], false),
            ("x".into(), Op::Exists, vec!["a"], false),
            ("x".into(), Op::Equals, vec!["bad value"], false),
            ("x".into(), Op::Equals, vec![&long_value], false),
            ("bad key".into(), Op::Exists, vec![], false),
            ("example.com/ok".into(), Op::Exists, vec![], true),
            ("Example.com/ok".into(), Op::Exists, vec![], false),
            ("/x".into(), Op::Exists, vec![], false),
            ("a/b/c".into(), Op::Exists, vec![], false),
        ];
        for (key, op, vals, ok) in cases {
            let r = Requirement::new(&key, op, vals.iter().map(|s| s.to_string()).collect());
            assert_eq!(r.is_ok(), ok, "{key:?} {op:?} {vals:?}: {r:?}");
        }
    }

    #[test]
    fn to_string_forms() {
        let sel = LabelSelector {
            requirements: vec![
                req("x", Op::In, &["def", "abc"]),
                req("y", Op::NotIn, &["jkl"]),
                req("z", Op::Exists, &[]),
            ],
        };
        assert_eq!(sel.to_string(), "x in (abc,def),y notin (jkl),z");
        let sel = LabelSelector {
            requirements: vec![
                req("x", Op::NotIn, &["abc", "def"]),
                req("y", Op::NotEquals, &["jkl"]),
                req("z", Op::DoesNotExist, &[]),
            ],
        };
        assert_eq!(sel.to_string(), "x notin (abc,def),y!=jkl,!z");
        let sel = LabelSelector {
            requirements: vec![
                req("x", Op::NotIn, &["abc"]),
                req("y", Op::In, &["jkl", "mno"]),
                req("z", Op::NotIn, &[""]),
            ],
        };
        assert_eq!(sel.to_string(), "x notin (abc),y in (jkl,mno),z notin ()");
        let sel = LabelSelector {
            requirements: vec![
                req("x", Op::Equals, &["abc"]),
                req("y", Op::DoubleEquals, &["jkl"]),
                req("z", Op::NotEquals, &["a"]),
                req("z", Op::Exists, &[]),
            ],
        };
        assert_eq!(sel.to_string(), "x=abc,y==jkl,z!=a,z");
        let sel = LabelSelector {
            requirements: vec![
                req("x", Op::GreaterThan, &["2"]),
                req("y", Op::LessThan, &["8"]),
                req("z", Op::Exists, &[]),
            ],
        };
        assert_eq!(sel.to_string(), "x>2,y<8,z");
    }

    #[test]
    fn requirement_matching() {
        let l = set(&[("x", "foo"), ("y", "baz")]);
        let sel = |r: Vec<Requirement>| LabelSelector { requirements: r };
        assert!(
            sel(vec![
                req("x", Op::In, &["foo"]),
                req("y", Op::NotIn, &["alpha"])
            ])
            .matches(Some(&l))
        );
        assert!(
            !sel(vec![
                req("x", Op::In, &["foo"]),
                req("y", Op::In, &["alpha"])
            ])
            .matches(Some(&l))
        );
        let l = set(&[("y", "")]);
        assert!(sel(vec![req("x", Op::NotIn, &[""]), req("y", Op::Exists, &[])]).matches(Some(&l)));
        assert!(
            sel(vec![
                req("x", Op::DoesNotExist, &[]),
                req("y", Op::Exists, &[])
            ])
            .matches(Some(&l))
        );
        assert!(
            !sel(vec![
                req("x", Op::NotIn, &[""]),
                req("y", Op::DoesNotExist, &[])
            ])
            .matches(Some(&l))
        );
        assert!(!sel(vec![req("x", Op::In, &[""])]).matches(Some(&set(&[("y", "baz")]))));
        assert!(sel(vec![req("z", Op::GreaterThan, &["1"])]).matches(Some(&set(&[("z", "2")]))));
        assert!(!sel(vec![req("z", Op::GreaterThan, &["1"])]).matches(Some(&set(&[("z", "v2")]))));
    }

    #[test]
    fn set_selector_parser() {
        let cases = set_based_cases()
            .into_iter()
            .chain(equality_and_invalid_cases());
        for (input, want, valid) in cases {
            let got = LabelSelector::parse(input);
            assert_eq!(got.is_ok(), valid, "{input:?}: {got:?}");
            if let (Ok(sel), Some(want)) = (got, want) {
                let want: Vec<Requirement> = want.iter().map(|(k, o, v)| req(k, *o, v)).collect();
                assert_eq!(sel.requirements(), want.as_slice(), "{input:?}");
                assert!(sel.requirements().iter().all(|r| !r.key().is_empty()));
            }
        }
    }

    // (input, expected requirements as (key, op, values), valid)
    type Case = (
        &'static str,
        Option<Vec<(&'static str, Op, Vec<&'static str>)>>,
        bool,
    );

    /// Set-based requirements (upstream's TestSetSelectorParser, first half).
    fn set_based_cases() -> Vec<Case> {
        vec![
            ("", Some(vec![]), true),
            ("\rx", Some(vec![("x", Op::Exists, vec![])]), true),
            (
                "this-is-a-dns.domain.com/key-with-dash",
                Some(vec![(
                    "this-is-a-dns.domain.com/key-with-dash",
                    Op::Exists,
                    vec![],
                )]),
                true,
            ),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                Some(vec![(
                    "this-is-another-dns.domain.com/key-with-dash",
                    Op::In,
                    vec!["so", "what"],
                )]),
                true,
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                Some(vec![(
                    "0.1.2.domain/99",
                    Op::NotIn,
                    vec!["10.10.100.1", "tick.tack.clock"],
                )]),
                true,
            ),
            (
                "foo  in\t (abc)",
                Some(vec![("foo", Op::In, vec!["abc"])]),
                true,
            ),
            (
                "x notin\n (abc)",
                Some(vec![("x", Op::NotIn, vec!["abc"])]),
                true,
            ),
            (
                "x  notin\t\t\t(abc,def)",
                Some(vec![("x", Op::NotIn, vec!["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,def)",
                Some(vec![("x", Op::In, vec!["abc", "def"])]),
                true,
            ),
            (
                "x in (abc,)",
                Some(vec![("x", Op::In, vec!["", "abc"])]),
                true,
            ),
            ("x in ()", Some(vec![("x", Op::In, vec![""])]), true),
            (
                "x notin (abc,def),bar,z in (),w",
                Some(vec![
                    ("bar", Op::Exists, vec![]),
                    ("w", Op::Exists, vec![]),
                    ("x", Op::NotIn, vec!["abc", "def"]),
                    ("z", Op::In, vec![""]),
                ]),
                true,
            ),
            (
                "x,y in (a)",
                Some(vec![("x", Op::Exists, vec![]), ("y", Op::In, vec!["a"])]),
                true,
            ),
        ]
    }

    /// Equality-based requirements and invalid input (upstream's TestSetSelectorParser, rest).
    fn equality_and_invalid_cases() -> Vec<Case> {
        vec![
            ("x=a", Some(vec![("x", Op::Equals, vec!["a"])]), true),
            ("x>1", Some(vec![("x", Op::GreaterThan, vec!["1"])]), true),
            ("x<7", Some(vec![("x", Op::LessThan, vec!["7"])]), true),
            (
                "x=a,y!=b",
                Some(vec![
                    ("x", Op::Equals, vec!["a"]),
                    ("y", Op::NotEquals, vec!["b"]),
                ]),
                true,
            ),
            (
                "x=a,y!=b,z in (h,i,j)",
                Some(vec![
                    ("x", Op::Equals, vec!["a"]),
                    ("y", Op::NotEquals, vec!["b"]),
                    ("z", Op::In, vec!["h", "i", "j"]),
                ]),
                true,
            ),
            ("x=a||y=b", None, false),
            ("x,y", None, true),
            (",x,y", None, false),
            ("x nott in (y)", None, false),
            ("x notin ( )", Some(vec![("x", Op::NotIn, vec![""])]), true),
            (
                "x notin (, a)",
                Some(vec![("x", Op::NotIn, vec!["", "a"])]),
                true,
            ),
            ("a in (xyz),", None, false),
            ("a in (xyz)b notin ()", None, false),
            ("a ", Some(vec![("a", Op::Exists, vec![])]), true),
            (
                "a in (x,y,notin, z,in)",
                Some(vec![("a", Op::In, vec!["in", "notin", "x", "y", "z"])]),
                true,
            ),
            ("a in (xyz abc)", None, false),
            ("a notin(", None, false),
            ("a (", None, false),
            ("(", None, false),
            (
                "x in (a,,b)",
                Some(vec![("x", Op::In, vec!["", "a", "b"])]),
                true,
            ),
            ("x=a b", None, false),
            ("x=(", None, false),
            ("x in a", None, false),
            ("x ~ y", None, false),
            ("!", None, false),
            ("x=\u{e9}", None, false),
        ]
    }

    #[test]
    fn label_error_messages() {
        let e = LabelSelector::parse("x=a||y=b").err().unwrap_or_default();
        assert!(e.starts_with("unable to parse requirement: "), "{e}");
        let e = LabelSelector::parse("a in (xyz),")
            .err()
            .unwrap_or_default();
        assert!(e.contains("expected: identifier after ','"), "{e}");
        let e = LabelSelector::parse("Bad_Key_!").err().unwrap_or_default();
        assert!(!e.is_empty());
        let e = LabelSelector::parse("x=a b").err().unwrap_or_default();
        assert!(
            e.contains("found 'b', expected: ',' or 'end of string'"),
            "{e}"
        );
    }

    #[test]
    fn field_split_terms() {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("a", vec!["a"]),
            ("a=avalue", vec!["a=avalue"]),
            ("a=avalue,b=bvalue", vec!["a=avalue", "b=bvalue"]),
            (
                "a=avalue,b==bvalue,c!=cvalue",
                vec!["a=avalue", "b==bvalue", "c!=cvalue"],
            ),
            ("", vec![]),
            ("a=a,", vec!["a=a", ""]),
            (",a=a", vec!["", "a=a"]),
            (r"k=\,,k2=v2", vec![r"k=\,", "k2=v2"]),
            (r"k=\\,k2=v2", vec![r"k=\\", "k2=v2"]),
            (r"k=\\\,,k2=v2", vec![r"k=\\\,", "k2=v2"]),
            (r"k=\a\b\", vec![r"k=\a\b\"]),
            (r"k=\", vec![r"k=\"]),
            ("함=수,목=록", vec!["함=수", "목=록"]),
        ];
        for (input, want) in cases {
            assert_eq!(split_terms(input), want, "{input:?}");
        }
    }

    #[test]
    fn field_split_term() {
        assert_eq!(split_term("a=value"), Some(("a", "=", "value")));
        assert_eq!(split_term("b==value"), Some(("b", "==", "value")));
        assert_eq!(split_term("c!=value"), Some(("c", "!=", "value")));
        assert_eq!(split_term(""), None);
        assert_eq!(split_term("a"), None);
        assert_eq!(split_term(r"k=\,"), Some(("k", "=", r"\,")));
        assert_eq!(split_term(r"k=\="), Some(("k", "=", r"\=")));
        assert_eq!(
            split_term(r"k=\\\a\b\=\,\"),
            Some(("k", "=", r"\\\a\b\=\,\"))
        );
        assert_eq!(split_term("함=수"), Some(("함", "=", "수")));
    }

    #[test]
    fn field_escape_round_trip() {
        for (raw, escaped) in [
            ("", ""),
            ("a", "a"),
            ("=", r"\="),
            (",", r"\,"),
            (r"\", r"\\"),
            (r"\=\,\", r"\\\=\\\,\\"),
        ] {
            assert_eq!(escape_value(raw), escaped);
            assert_eq!(unescape_value(escaped).as_deref(), Ok(raw));
        }
        for bad in [r"\", r"\\\", r"\a"] {
            let e = unescape_value(bad).err().unwrap_or_default();
            assert!(e.contains("invalid escape sequence"), "{bad:?}: {e}");
        }
        assert!(unescape_value("a,b").is_err());
        assert!(unescape_value("a=b").is_err());
    }

    #[test]
    fn field_parse_good_and_bad() {
        for good in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
            let s = FieldSelector::parse(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
            assert_eq!(s.to_string(), good);
        }
        for bad in [
            "x=a||y=b",
            "x==a==b",
            "x=a,b",
            "x in (a)",
            "x in (a,b,c)",
            "x",
        ] {
            assert!(FieldSelector::parse(bad).is_err(), "{bad:?}");
        }
        let e = FieldSelector::parse("x=a,b").err().unwrap_or_default();
        assert_eq!(e, "invalid selector: 'x=a,b'; can't understand 'b'");
        let a = FieldSelector::parse("x=a,a=x").unwrap_or_default();
        let b = FieldSelector::parse("a=x,x=a").unwrap_or_default();
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.fields().collect::<Vec<_>>(), vec!["a", "x"]);
    }

    fn fmatch(sel: &str, fields: &[(&str, &str)]) -> bool {
        let s = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        s.matches_with(|f| {
            fields
                .iter()
                .find(|(k, _)| *k == f)
                .map(|(_, v)| v.to_string())
                .unwrap_or_default()
        })
    }

    #[test]
    fn field_matches() {
        assert!(fmatch("", &[("x", "y")]));
        assert!(fmatch("x=y", &[("x", "y")]));
        assert!(fmatch("x=y,z=w", &[("x", "y"), ("z", "w")]));
        assert!(fmatch("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
        assert!(fmatch("notin=in", &[("notin", "in")]));
        assert!(!fmatch("x=y", &[("x", "z")]));
        assert!(!fmatch("x=y,z=w", &[("x", "w"), ("z", "w")]));
        assert!(!fmatch("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
        let fs = [("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")];
        assert!(fmatch("foo=bar", &fs));
        assert!(fmatch("baz=blah", &fs));
        assert!(fmatch("foo=bar,baz=blah", &fs));
        assert!(fmatch(r"foo=bar,baz=blah,complex=\=value\\\,\\", &fs));
        assert!(!fmatch("foo=blah", &fs));
        assert!(!fmatch("baz=bar", &fs));
        assert!(!fmatch("foo=bar,foobar=bar,baz=blah", &fs));
        // A missing field reads as "".
        assert!(fmatch("missing=", &fs));
        assert!(fmatch("missing!=x", &fs));
    }

    #[test]
    fn field_lookup_in_objects() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always"},
            "status": {"phase": "Running"}
        });
        let s = |x: &str| FieldSelector::parse(x).unwrap_or_default();
        assert!(s("metadata.name=p,metadata.namespace=ns").matches(&pod));
        assert!(s("spec.nodeName=n1,status.phase!=Pending").matches(&pod));
        assert!(s("spec.hostNetwork=false").matches(&pod));
        assert!(!s("spec.hostNetwork=true").matches(&pod));
        assert!(s("spec.schedulerName=").matches(&pod));
        assert!(!s("metadata.name!=p").matches(&pod));

        let ev = json!({
            "type": "Warning",
            "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"},
            "source": {"component": "kubelet"}
        });
        assert!(s("type=Warning,involvedObject.kind=Pod,involvedObject.uid=u1").matches(&ev));
        assert!(s("source=kubelet").matches(&ev));
        let job = json!({"status": {"succeeded": 3}});
        assert!(s("status.successful=3").matches(&job));
        assert!(s("status.successful=0").matches(&json!({})));
        assert!(s("status.replicas=0").matches(&json!({"status": {}})));
        let node = json!({"spec": {"unschedulable": true}});
        assert!(s("spec.unschedulable=true").matches(&node));
        assert!(s("").is_empty());
    }
}
