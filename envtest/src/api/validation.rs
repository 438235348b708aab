//! Object validation shared by every resource: names, `generateName`, labels, annotations,
//! finalizers, owner references and the ConfigMap/Secret data rules, producing the field causes of
//! a 422 `Invalid` Status.
//!
//! The write handlers call [`validate_object`] after decoding and defaulting a body and turn a
//! non-empty result into a 422 with [`invalid_message`] and [`FieldCause::to_cause_json`]; custom
//! resources additionally go through the structural schema
//! ([`registry::schema`](crate::registry::schema)), which reports in the same [`FieldCause`] shape.
//! The syntax checks ([`is_qualified_name`], [`is_valid_label_value`], the DNS name rules) are
//! apimachinery's `util/validation` rules with their messages, and are reused by
//! [`crate::api::selector`] for label selector keys and values.

use serde_json::{Map, Value};

/// Largest total `data` + `binaryData` of a ConfigMap, and `data` of a Secret (1 MiB).
pub(crate) const MAX_DATA_BYTES: usize = 1024 * 1024;
/// Largest total size of an object's annotations, keys plus values (256 KiB).
pub(crate) const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;
/// Characters of a `generateName` suffix (upstream's `utilrand.String` alphabet, no vowels).
pub(crate) const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of the random `generateName` suffix.
pub(crate) const GENERATE_NAME_SUFFIX_LEN: usize = 5;
/// Longest prefix kept from `generateName` (63 − 5, as upstream).
pub(crate) const GENERATE_NAME_MAX_PREFIX: usize = 58;

/// One field error of a 422 response, shaped like apimachinery's `field.Error` and the Status
/// `causes` entry built from it: `reason` is the cause type (`FieldValueInvalid`, …), `message`
/// the error body without the field path (`Invalid value: "x": detail`), `field` the JSON path
/// (`metadata.name`, `spec.replicas`, `spec.items[0].name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldCause {
    /// The Status cause type, e.g. `FieldValueInvalid`, `FieldValueRequired`.
    pub reason: &'static str,
    /// The error text without the field path.
    pub message: String,
    /// The field path the error is about.
    pub field: String,
}

/// Renders a JSON value the way apimachinery's field errors print bad values: strings quoted,
/// numbers and booleans bare, `null` as `null`, compound values as JSON.
pub(crate) fn show_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

impl FieldCause {
    /// `Invalid value: <value>: <detail>`.
    pub(crate) fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> FieldCause {
        let mut message = format!("Invalid value: {}", show_value(value));
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldCause {
            reason: "FieldValueInvalid",
            message,
            field: field.into(),
        }
    }

    /// A type mismatch: reported as an invalid value with reason `FieldValueTypeInvalid`.
    pub(crate) fn type_invalid(
        field: impl Into<String>,
        value: &Value,
        detail: &str,
    ) -> FieldCause {
        FieldCause {
            reason: "FieldValueTypeInvalid",
            ..FieldCause::invalid(field, value, detail)
        }
    }

    /// `Required value[: <detail>]`.
    pub(crate) fn required(field: impl Into<String>, detail: &str) -> FieldCause {
        let mut message = "Required value".to_string();
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldCause {
            reason: "FieldValueRequired",
            message,
            field: field.into(),
        }
    }

    /// `Forbidden: <detail>`.
    pub(crate) fn forbidden(field: impl Into<String>, detail: &str) -> FieldCause {
        FieldCause {
            reason: "FieldValueForbidden",
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub(crate) fn not_supported(
        field: impl Into<String>,
        value: &Value,
        supported: &[Value],
    ) -> FieldCause {
        let list: Vec<String> = supported.iter().map(show_value).collect();
        FieldCause {
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: {}",
                show_value(value),
                list.join(", ")
            ),
            field: field.into(),
        }
    }

    /// `Too long: may not be more than <max> bytes`.
    pub(crate) fn too_long(field: impl Into<String>, max: usize) -> FieldCause {
        FieldCause {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {max} bytes"),
            field: field.into(),
        }
    }

    /// `Too many: <actual>: must have at most <max> items`.
    pub(crate) fn too_many(field: impl Into<String>, actual: usize, max: usize) -> FieldCause {
        FieldCause {
            reason: "FieldValueTooMany",
            message: format!("Too many: {actual}: must have at most {max} items"),
            field: field.into(),
        }
    }

    /// `Duplicate value: <value>`.
    pub(crate) fn duplicate(field: impl Into<String>, value: &Value) -> FieldCause {
        FieldCause {
            reason: "FieldValueDuplicate",
            message: format!("Duplicate value: {}", show_value(value)),
            field: field.into(),
        }
    }

    /// The Status `details.causes[]` entry: `{"reason","message","field"}`.
    pub(crate) fn to_cause_json(&self) -> Value {
        serde_json::json!({"reason": self.reason, "message": self.message, "field": self.field})
    }
}

impl std::fmt::Display for FieldCause {
    /// `<field>: <message>`, as `field.Error.Error()` prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// The message of a 422 `Invalid` Status: `<Kind>[.<group>] "<name>" is invalid: <errors>`, the
/// errors joined as apimachinery's aggregate prints them (one bare, several in `[a, b]`).
pub(crate) fn invalid_message(qualified_kind: &str, name: &str, causes: &[FieldCause]) -> String {
    let errs: Vec<String> = causes.iter().map(|c| c.to_string()).collect();
    let agg = match errs.len() {
        1 => errs[0].clone(),
        _ => format!("[{}]", errs.join(", ")),
    };
    format!("{qualified_kind} {name:?} is invalid: {agg}")
}

/// A complete 422 `Invalid` Status body (`details.kind` is the Kind, as upstream).
pub(crate) fn invalid_status(kind: &str, group: &str, name: &str, causes: &[FieldCause]) -> Value {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let mut details = Map::new();
    details.insert("name".into(), Value::String(name.to_string()));
    if !group.is_empty() {
        details.insert("group".into(), Value::String(group.to_string()));
    }
    details.insert("kind".into(), Value::String(kind.to_string()));
    details.insert(
        "causes".into(),
        Value::Array(causes.iter().map(FieldCause::to_cause_json).collect()),
    );
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": invalid_message(&qualified, name, causes),
        "reason": "Invalid",
        "details": details,
        "code": 422
    })
}

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = msg.to_string();
    out.push_str(" (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qname_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns_label_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    let an = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => an(f) && an(l) && b.iter().all(|c| an(c) || *c == b'-'),
        _ => false,
    }
}

/// Apimachinery's `IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name of at
/// most 63 alphanumerics, `-`, `_`, `.` that starts and ends alphanumeric. Empty result = valid.
pub(crate) fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qname_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Apimachinery's `IsValidLabelValue`: empty, or at most 63 characters of the qualified-name set.
pub(crate) fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !is_qname_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// DNS-1123 label: lowercase alphanumerics and `-`, alphanumeric at both ends, at most 63.
pub(crate) fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !is_dns_label_syntax(value) {
        errs.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

/// DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters.
pub(crate) fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !value.split('.').all(is_dns_label_syntax) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// DNS-1035 label: a DNS-1123 label that starts with a letter.
pub(crate) fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    let starts_alpha = value
        .as_bytes()
        .first()
        .is_some_and(|c| c.is_ascii_lowercase());
    if !is_dns_label_syntax(value) || !starts_alpha {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Path-segment rule (every name, and the only rule for RBAC objects): not `.`/`..`, no `/` or `%`.
pub(crate) fn is_valid_path_segment(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value == "." || value == ".." {
        errs.push(format!("may not be '{value}'"));
        return errs;
    }
    for c in ["/", "%"] {
        if value.contains(c) {
            errs.push(format!("may not contain '{c}'"));
        }
    }
    errs
}

/// Upstream's `IsConfigMapKey`, used for ConfigMap and Secret data keys.
pub(crate) fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !ok {
        errs.push(regex_error(
            CONFIG_MAP_KEY_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if value == "." {
        errs.push("must not be '.'".into());
    } else if value == ".." {
        errs.push("must not be '..'".into());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// Which syntax a resource's object names must follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// DNS-1123 subdomain (most kinds and all custom resources).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
    /// DNS-1035 label (services).
    Dns1035,
    /// Only the path-segment rule (RBAC roles and bindings).
    PathSegment,
}

/// The name rule upstream applies to a resource (`group` empty for core).
pub(crate) fn name_rule_for(group: &str, resource: &str) -> NameRule {
    match (group, resource) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Dns1035,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// The messages for `name` under `rule` (empty = valid). The path-segment rule is always checked.
/// `prefix` is for `generateName`: a trailing `-` is then allowed.
pub(crate) fn validate_name(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    let mut errs = is_valid_path_segment(name);
    if !errs.is_empty() {
        return errs;
    }
    let masked;
    let checked = if prefix && name.len() > 1 && name.ends_with('-') {
        masked = format!("{}a", &name[..name.len() - 1]);
        masked.as_str()
    } else {
        name
    };
    errs.extend(match rule {
        NameRule::Subdomain => is_dns1123_subdomain(checked),
        NameRule::Label => is_dns1123_label(checked),
        NameRule::Dns1035 => is_dns1035_label(checked),
        NameRule::PathSegment => Vec::new(),
    });
    errs
}

/// A name from `generateName`: the prefix cut to 58 characters plus 5 random characters from
/// [`GENERATE_NAME_ALPHABET`].
pub(crate) fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    let mut cut = prefix.len().min(GENERATE_NAME_MAX_PREFIX);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = prefix[..cut].to_string();
    let mut rng = rand::rng();
    for _ in 0..GENERATE_NAME_SUFFIX_LEN {
        let i = rng.random_range(0..GENERATE_NAME_ALPHABET.len());
        out.push(char::from(GENERATE_NAME_ALPHABET[i]));
    }
    out
}

fn meta_str<'a>(meta: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    meta.get(key).and_then(Value::as_str)
}

/// Validates `metadata` (name or generateName, namespace syntax, labels, annotations, finalizers,
/// ownerReferences) of an object about to be stored. The name must already be filled in from
/// `generateName` when that was used.
pub(crate) fn validate_object_meta(
    obj: &Value,
    rule: NameRule,
    namespaced: bool,
) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let empty = Map::new();
    let meta = match obj.get("metadata") {
        Some(Value::Object(m)) => m,
        Some(other) => {
            causes.push(FieldCause::type_invalid(
                "metadata",
                other,
                "must be of type object",
            ));
            return causes;
        }
        None => &empty,
    };
    let name = meta_str(meta, "name").unwrap_or("");
    let generate = meta_str(meta, "generateName").unwrap_or("");
    if name.is_empty() {
        if generate.is_empty() {
            causes.push(FieldCause::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for m in validate_name(rule, name, false) {
            causes.push(FieldCause::invalid(
                "metadata.name",
                &Value::String(name.into()),
                &m,
            ));
        }
    }
    if !generate.is_empty() {
        for m in validate_name(rule, generate, true) {
            causes.push(FieldCause::invalid(
                "metadata.generateName",
                &Value::String(generate.into()),
                &m,
            ));
        }
    }
    if let Some(ns) = meta_str(meta, "namespace").filter(|n| !n.is_empty()) {
        if namespaced {
            for m in is_dns1123_label(ns) {
                causes.push(FieldCause::invalid(
                    "metadata.namespace",
                    &Value::String(ns.into()),
                    &m,
                ));
            }
        } else {
            causes.push(FieldCause::forbidden(
                "metadata.namespace",
                "not allowed on this type",
            ));
        }
    }
    causes.extend(validate_labels(meta.get("labels"), "metadata.labels"));
    causes.extend(validate_annotations(
        meta.get("annotations"),
        "metadata.annotations",
    ));
    causes.extend(validate_finalizers(meta.get("finalizers")));
    causes.extend(validate_owner_references(meta.get("ownerReferences")));
    causes
}

/// Label keys are qualified names, values label values.
pub(crate) fn validate_labels(labels: Option<&Value>, field: &str) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    match labels {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                for e in is_qualified_name(k) {
                    causes.push(FieldCause::invalid(field, &Value::String(k.clone()), &e));
                }
                match v {
                    Value::String(s) => {
                        for e in is_valid_label_value(s) {
                            causes.push(FieldCause::invalid(format!("{field}[{k}]"), v, &e));
                        }
                    }
                    other => causes.push(FieldCause::type_invalid(
                        format!("{field}[{k}]"),
                        other,
                        "must be of type string",
                    )),
                }
            }
        }
        Some(other) => causes.push(FieldCause::type_invalid(
            field,
            other,
            "must be of type object",
        )),
    }
    causes
}

/// Annotation keys are qualified names (checked lower-cased, as upstream); keys plus values may
/// total at most 256 KiB.
pub(crate) fn validate_annotations(annotations: Option<&Value>, field: &str) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    match annotations {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let mut total = 0usize;
            for (k, v) in m {
                for e in is_qualified_name(&k.to_lowercase()) {
                    causes.push(FieldCause::invalid(field, &Value::String(k.clone()), &e));
                }
                total += k.len();
                match v {
                    Value::String(s) => total += s.len(),
                    other => causes.push(FieldCause::type_invalid(
                        format!("{field}[{k}]"),
                        other,
                        "must be of type string",
                    )),
                }
            }
            if total > MAX_ANNOTATIONS_BYTES {
                causes.push(FieldCause::too_long(field, MAX_ANNOTATIONS_BYTES));
            }
        }
        Some(other) => causes.push(FieldCause::type_invalid(
            field,
            other,
            "must be of type object",
        )),
    }
    causes
}

fn validate_finalizers(finalizers: Option<&Value>) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let Some(Value::Array(items)) = finalizers else {
        return causes;
    };
    for (i, f) in items.iter().enumerate() {
        let field = format!("metadata.finalizers[{i}]");
        match f.as_str() {
            Some(s) => {
                for e in is_qualified_name(s) {
                    causes.push(FieldCause::invalid(field.clone(), f, &e));
                }
            }
            None => causes.push(FieldCause::type_invalid(field, f, "must be of type string")),
        }
    }
    causes
}

fn validate_owner_references(refs: Option<&Value>) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let Some(Value::Array(items)) = refs else {
        return causes;
    };
    let mut controllers = Vec::new();
    for (i, r) in items.iter().enumerate() {
        let base = format!("metadata.ownerReferences[{i}]");
        for (key, what) in [
            ("apiVersion", "version"),
            ("kind", "kind"),
            ("name", "name"),
            ("uid", "uid"),
        ] {
            let v = r.get(key).and_then(Value::as_str).unwrap_or("");
            if v.is_empty() {
                causes.push(FieldCause::invalid(
                    format!("{base}.{key}"),
                    &Value::String(String::new()),
                    &format!("{what} must not be empty"),
                ));
            }
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            controllers.push(
                r.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    if controllers.len() > 1 {
        causes.push(FieldCause::invalid(
            "metadata.ownerReferences",
            &Value::Array(items.clone()),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
    causes
}

/// The decoded size of a base64 string (without decoding it).
fn base64_decoded_len(s: &str) -> usize {
    let pad = s.bytes().rev().take_while(|c| *c == b'=').count();
    (s.len() / 4 * 3 + (s.len() % 4) * 3 / 4).saturating_sub(pad)
}

/// ConfigMap `data`/`binaryData` and Secret `data`/`stringData`: key syntax, no key in both maps,
/// total size at most 1 MiB (`kind` is `ConfigMap` or `Secret`; other kinds yield nothing).
pub(crate) fn validate_data(kind: &str, obj: &Value) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let (first, second, first_b64, second_b64) = match kind {
        "ConfigMap" => ("data", "binaryData", false, true),
        "Secret" => ("data", "stringData", true, false),
        _ => return causes,
    };
    let mut total = 0usize;
    let a = obj.get(first).and_then(Value::as_object);
    let b = obj.get(second).and_then(Value::as_object);
    for (field, map, b64) in [(first, a, first_b64), (second, b, second_b64)] {
        let Some(map) = map else { continue };
        for (k, v) in map {
            for e in is_config_map_key(k) {
                causes.push(FieldCause::invalid(field, &Value::String(k.clone()), &e));
            }
            match v {
                Value::String(s) => total += if b64 { base64_decoded_len(s) } else { s.len() },
                other => causes.push(FieldCause::type_invalid(
                    format!("{field}[{k}]"),
                    other,
                    "must be of type string",
                )),
            }
        }
    }
    if let (true, Some(a), Some(b)) = (kind == "ConfigMap", a, b) {
        for k in a.keys().filter(|k| b.contains_key(*k)) {
            causes.push(FieldCause::invalid(
                format!("{first}[{k}]"),
                &Value::String(k.clone()),
                "duplicate of key present in binaryData",
            ));
        }
    }
    if total > MAX_DATA_BYTES {
        causes.push(FieldCause::too_long(first, MAX_DATA_BYTES));
    }
    causes
}

/// All generic checks of a built-in or custom object on create/update: metadata with the
/// resource's name rule, then the data rules for ConfigMaps and Secrets.
pub(crate) fn validate_object(
    group: &str,
    resource: &str,
    kind: &str,
    namespaced: bool,
    obj: &Value,
) -> Vec<FieldCause> {
    let mut causes = validate_object_meta(obj, name_rule_for(group, resource), namespaced);
    if group.is_empty() {
        causes.extend(validate_data(kind, obj));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn qualified_names() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/{}", "a".repeat(253), "b".repeat(63)),
        ] {
            assert!(is_qualified_name(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
            "",
        ] {
            assert!(!is_qualified_name(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn label_values() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "",
            "Uppercase_Is_OK_123",
            &"a".repeat(63),
        ] {
            assert!(is_valid_label_value(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            &"a".repeat(64),
        ] {
            assert!(!is_valid_label_value(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn dns_names() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            &"a".repeat(63),
        ] {
            assert!(is_dns1123_label(good).is_empty(), "{good}");
            assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
        }
        for good in ["a.a", "ab.a", "a-1.a", "0.a", "a.b.c.d.e", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            &"a".repeat(64),
        ] {
            assert!(!is_dns1123_label(bad).is_empty(), "label {bad}");
        }
        for bad in [
            "",
            "A",
            "a.",
            ".a",
            "a..b",
            "Bad_Name",
            "-lead",
            "a_b.c",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad).is_empty(), "subdomain {bad}");
        }
        assert!(is_dns1035_label("my-name").is_empty());
        assert!(!is_dns1035_label("1abc").is_empty());
        assert!(!is_dns1035_label("a.b").is_empty());
    }

    #[test]
    fn subdomain_message_is_upstreams() {
        let e = is_dns1123_subdomain("Bad_Name");
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0],
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254))[0],
            "must be no more than 253 characters"
        );
    }

    #[test]
    fn path_segments_and_rules() {
        assert!(!is_valid_path_segment(".").is_empty());
        assert!(!is_valid_path_segment("..").is_empty());
        assert!(!is_valid_path_segment("a/b").is_empty());
        assert!(!is_valid_path_segment("a%b").is_empty());
        assert!(validate_name(NameRule::PathSegment, "system:controller:x", false).is_empty());
        assert!(!validate_name(NameRule::PathSegment, "a/b", false).is_empty());
        assert_eq!(name_rule_for("", "namespaces"), NameRule::Label);
        assert_eq!(name_rule_for("", "services"), NameRule::Dns1035);
        assert_eq!(name_rule_for("", "configmaps"), NameRule::Subdomain);
        assert_eq!(
            name_rule_for("rbac.authorization.k8s.io", "roles"),
            NameRule::PathSegment
        );
        assert_eq!(name_rule_for("example.com", "widgets"), NameRule::Subdomain);
        assert!(validate_name(NameRule::Label, "a.b", false).len() == 1);
        assert!(validate_name(NameRule::Subdomain, "a.b", false).is_empty());
        // generateName prefixes may end in a dash.
        assert!(validate_name(NameRule::Subdomain, "job-", true).is_empty());
        assert!(!validate_name(NameRule::Subdomain, "job-", false).is_empty());
        assert!(!validate_name(NameRule::Subdomain, "-", true).is_empty());
    }

    #[test]
    fn generated_names() {
        let n = generate_name("job-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("job-"));
        assert!(n[4..].bytes().all(|c| GENERATE_NAME_ALPHABET.contains(&c)));
        let long = "a".repeat(100);
        let n = generate_name(&long);
        assert_eq!(n.len(), 63);
        assert!(is_dns1123_subdomain(&n).is_empty());
    }

    #[test]
    fn object_meta_names() {
        let cm = |name: &str| json!({"metadata": {"name": name, "namespace": "default"}});
        for bad in ["Bad_Name", "-lead", &"a".repeat(254)] {
            let c = validate_object("", "configmaps", "ConfigMap", true, &cm(bad));
            assert!(!c.is_empty(), "{bad}");
            assert_eq!(c[0].field, "metadata.name");
            assert_eq!(c[0].reason, "FieldValueInvalid");
        }
        assert!(validate_object("", "configmaps", "ConfigMap", true, &cm("ok.name")).is_empty());
        let ns = json!({"metadata": {"name": "a.b"}});
        let c = validate_object("", "namespaces", "Namespace", false, &ns);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].field, "metadata.name");
        assert!(
            c[0].message
                .starts_with("Invalid value: \"a.b\": a lowercase RFC 1123 label")
        );
        let none = json!({"metadata": {}});
        let c = validate_object("", "configmaps", "ConfigMap", true, &none);
        assert_eq!(c[0].reason, "FieldValueRequired");
        assert_eq!(
            c[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        let generated = json!({"metadata": {"generateName": "Bad_"}});
        let c = validate_object("", "configmaps", "ConfigMap", true, &generated);
        assert_eq!(c[0].field, "metadata.generateName");
        let ns_bad = json!({"metadata": {"name": "x", "namespace": "Bad"}});
        let c = validate_object("", "configmaps", "ConfigMap", true, &ns_bad);
        assert_eq!(c[0].field, "metadata.namespace");
    }

    #[test]
    fn labels_annotations_finalizers_owners() {
        let obj = json!({"metadata": {
            "name": "x",
            "labels": {"good": "v", "bad key": "v", "k": "bad value", "n": 1},
            "annotations": {"example.com/Fine": "any text at all", "/bad": ""},
            "finalizers": ["example.com/f", "bad finalizer"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true},
                {"kind": "C", "name": "c", "uid": "3"}
            ]
        }});
        let c = validate_object_meta(&obj, NameRule::Subdomain, true);
        let fields: Vec<&str> = c.iter().map(|c| c.field.as_str()).collect();
        assert!(fields.contains(&"metadata.labels"), "{fields:?}");
        assert!(fields.contains(&"metadata.labels[k]"), "{fields:?}");
        assert!(fields.contains(&"metadata.labels[n]"), "{fields:?}");
        assert!(fields.contains(&"metadata.annotations"), "{fields:?}");
        assert!(fields.contains(&"metadata.finalizers[1]"), "{fields:?}");
        assert!(
            fields.contains(&"metadata.ownerReferences[2].apiVersion"),
            "{fields:?}"
        );
        assert!(fields.contains(&"metadata.ownerReferences"), "{fields:?}");

        let big = "x".repeat(MAX_ANNOTATIONS_BYTES);
        let obj = json!({"metadata": {"name": "x", "annotations": {"a": big}}});
        let c = validate_object_meta(&obj, NameRule::Subdomain, true);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].reason, "FieldValueTooLong");
    }

    #[test]
    fn data_limits() {
        let small = json!({"metadata": {"name": "x"}, "data": {"a.b_c-D": "v"}});
        assert!(validate_data("ConfigMap", &small).is_empty());
        let big = json!({"metadata": {"name": "x"}, "data": {"a": "x".repeat(MAX_DATA_BYTES + 1)}});
        let c = validate_object("", "configmaps", "ConfigMap", true, &big);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].reason, "FieldValueTooLong");
        let exact = json!({"metadata": {"name": "x"}, "data": {"a": "x".repeat(MAX_DATA_BYTES)}});
        assert!(validate_data("ConfigMap", &exact).is_empty());
        let bad_key = json!({"data": {"a/b": "v", "..x": "v"}});
        assert_eq!(validate_data("ConfigMap", &bad_key).len(), 2);
        let typed = json!({"data": {"a": 1, "b": null}});
        assert_eq!(validate_data("ConfigMap", &typed).len(), 2);
        let dup = json!({"data": {"a": "v"}, "binaryData": {"a": "dg=="}});
        assert_eq!(validate_data("ConfigMap", &dup).len(), 1);
        // Secret data is base64: 4 chars = 3 bytes.
        let n = MAX_DATA_BYTES / 3 * 4 + 8;
        let secret = json!({"data": {"a": "A".repeat(n)}});
        assert_eq!(validate_data("Secret", &secret).len(), 1);
        let secret = json!({"data": {"a": "AAAA"}, "stringData": {"b": "x"}});
        assert!(validate_data("Secret", &secret).is_empty());
        assert_eq!(base64_decoded_len("dg=="), 1);
        assert_eq!(base64_decoded_len("dmE="), 2);
        assert_eq!(base64_decoded_len("dmFs"), 3);
        assert!(validate_data("Pod", &big).is_empty());
    }

    #[test]
    fn messages_and_status() {
        let c = FieldCause::invalid("metadata.name", &json!("Bad_Name"), "detail");
        assert_eq!(
            c.to_string(),
            "metadata.name: Invalid value: \"Bad_Name\": detail"
        );
        assert_eq!(
            invalid_message("ConfigMap", "Bad_Name", std::slice::from_ref(&c)),
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": detail"
        );
        let two = [c.clone(), FieldCause::required("spec.x", "")];
        assert_eq!(
            invalid_message("Widget.example.com", "w", &two),
            "Widget.example.com \"w\" is invalid: [metadata.name: Invalid value: \"Bad_Name\": detail, spec.x: Required value]"
        );
        let s = invalid_status("Widget", "example.com", "w", &two);
        assert_eq!(s["code"], 422);
        assert_eq!(s["reason"], "Invalid");
        assert_eq!(s["details"]["kind"], "Widget");
        assert_eq!(s["details"]["group"], "example.com");
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        assert_eq!(s["details"]["causes"][1]["reason"], "FieldValueRequired");
        let ns = FieldCause::not_supported("spec.a", &json!("c"), &[json!("a"), json!("b")]);
        assert_eq!(
            ns.message,
            "Unsupported value: \"c\": supported values: \"a\", \"b\""
        );
        assert_eq!(
            FieldCause::invalid("x", &json!(5), "d").message,
            "Invalid value: 5: d"
        );
        assert_eq!(
            FieldCause::too_many("x", 5, 3).message,
            "Too many: 5: must have at most 3 items"
        );
        assert_eq!(
            FieldCause::duplicate("x", &json!("a")).reason,
            "FieldValueDuplicate"
        );
        assert_eq!(
            FieldCause::forbidden("x", "no").to_string(),
            "x: Forbidden: no"
        );
    }
}
