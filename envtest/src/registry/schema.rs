//! Custom-resource schemas: validating, pruning and defaulting an object against the
//! `openAPIV3Schema` of its CRD version, and a basic structural check of the schema itself.
//!
//! The write path for custom resources runs, in upstream's order: [`prune`] (drop unknown fields,
//! report them for `fieldValidation=Strict`/`Warn`), [`apply_defaults`] (`default:` values), then
//! [`validate`], whose [`FieldCause`]s become a 422 through [`crate::api::validation`]. At the root
//! `apiVersion`, `kind` and `metadata` are never pruned or validated here — metadata is checked by
//! [`crate::api::validation::validate_object_meta`]. [`check_schema`] is what the CRD handler can
//! use to reject a schema that is not structural enough to drive the other three.
//!
//! Supported keywords: `type` (object, array, string, integer, number, boolean), `properties`,
//! `required`, `additionalProperties`, `items`, `enum`, `minimum`/`maximum` (+ boolean
//! `exclusiveMinimum`/`exclusiveMaximum`), `multipleOf`, `minLength`/`maxLength`, `pattern`,
//! `minItems`/`maxItems`, `minProperties`/`maxProperties`, `nullable`, `default`, `allOf`,
//! `anyOf`, `oneOf`, `not`, `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`,
//! `x-kubernetes-embedded-resource`, `x-kubernetes-list-type` (`set`/`map` duplicates), `format`
//! (the formats upstream checks, [`super::format`]). CEL `x-kubernetes-validations` are
//! `cel::rules`' (the `cel` feature), which [`super::crd`] runs after these checks.

use std::collections::HashMap;
use std::sync::OnceLock;

use parking_lot::Mutex;
use regex::Regex;
use serde_json::{Map, Value};

use crate::api::validation::FieldCause;

/// Root fields that belong to the API machinery, not to the schema.
const ROOT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn props(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// `additionalProperties` as a schema (an object), if it is one.
fn additional_schema(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|v| v.is_object())
}

fn allows_additional(schema: &Value) -> bool {
    matches!(schema.get("additionalProperties"), Some(Value::Bool(true)))
        || additional_schema(schema).is_some()
}

/// The JSON type name a value has, in OpenAPI words.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// A compiled `pattern`, cached (patterns repeat across every object of a CRD). `None` if the
/// pattern does not compile (the CRD should have been rejected; the value is then not checked).
fn pattern(p: &str) -> Option<Regex> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock();
    if let Some(hit) = cache.get(p) {
        return hit.clone();
    }
    if cache.len() > 4096 {
        cache.clear();
    }
    cache
        .entry(p.to_string())
        .or_insert_with(|| Regex::new(p).ok())
        .clone()
}

/// Validates `obj` against `schema` (a CRD version's `openAPIV3Schema`). Returns every violation
/// with its field path (`spec.replicas`, `spec.items[0].name`); empty means valid.
pub(crate) fn validate(schema: &Value, obj: &Value) -> Vec<FieldCause> {
    let mut out = Vec::new();
    validate_node(schema, obj, "", true, &mut out);
    out
}

/// Validates only `obj`'s `status` against the schema's `properties.status`, at the path
/// `status` (a `/status` write: [`super::crd::validate_custom`]). Nothing without either.
pub(crate) fn validate_status(schema: &Value, obj: &Value) -> Vec<FieldCause> {
    let mut out = Vec::new();
    if let (Some(s), Some(v)) = (
        props(schema).and_then(|p| p.get("status")),
        obj.get("status"),
    ) {
        validate_node(s, v, "status", false, &mut out);
    }
    out
}

fn in_body(path: &str) -> String {
    if path.is_empty() {
        "body".to_string()
    } else {
        format!("{path} in body")
    }
}

fn validate_node(schema: &Value, value: &Value, path: &str, root: bool, out: &mut Vec<FieldCause>) {
    if !schema.is_object() {
        return;
    }
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    let ty = schema.get("type").and_then(Value::as_str);
    if value.is_null() {
        if flag(schema, "nullable") {
            return;
        }
        if let Some(ty) = ty {
            out.push(FieldCause::type_invalid(
                path,
                &Value::String("null".into()),
                &format!("{} must be of type {ty}: \"null\"", in_body(path)),
            ));
            return;
        }
    }
    if int_or_string {
        if !(is_integer(value) || value.is_string() || value.is_null()) {
            out.push(FieldCause::type_invalid(
                path,
                &Value::String(type_name(value).into()),
                &format!(
                    "{} must be of type integer,string: {:?}",
                    in_body(path),
                    type_name(value)
                ),
            ));
            return;
        }
    } else if let Some(ty) = ty
        && !type_matches(ty, value)
    {
        out.push(FieldCause::type_invalid(
            path,
            &Value::String(type_name(value).into()),
            &format!(
                "{} must be of type {ty}: {:?}",
                in_body(path),
                type_name(value)
            ),
        ));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.iter().any(|a| json_eq(a, value))
    {
        out.push(FieldCause::not_supported(path, value, allowed));
    }
    match value {
        Value::String(s) => validate_string(schema, s, value, path, out),
        Value::Number(_) => validate_number(schema, value, path, out),
        Value::Array(items) => validate_array(schema, items, value, path, out),
        Value::Object(map) => validate_object(schema, map, value, path, root, out),
        _ => {}
    }
    validate_combinators(schema, value, path, root, out);
}

/// JSON equality that treats `1` and `1.0` as equal.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn num(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn count(schema: &Value, key: &str) -> Option<usize> {
    schema
        .get(key)
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn show_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn validate_string(schema: &Value, s: &str, value: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let len = s.chars().count();
    if let Some(max) = count(schema, "maxLength")
        && len > max
    {
        out.push(FieldCause::too_long(path, max));
    }
    if let Some(min) = count(schema, "minLength")
        && len < min
    {
        out.push(FieldCause::invalid(
            path,
            value,
            &format!("{} should be at least {min} chars long", in_body(path)),
        ));
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str)
        && let Some(re) = pattern(p)
        && !re.is_match(s)
    {
        out.push(FieldCause::invalid(
            path,
            value,
            &format!("{} should match '{p}'", in_body(path)),
        ));
    }
    if let Some(f) = schema.get("format").and_then(Value::as_str)
        && !super::format::valid(f, s)
    {
        let detail = format!("{} must be of type {f}: {s:?}", in_body(path));
        out.push(FieldCause::type_invalid(path, value, &detail));
    }
}

fn validate_number(schema: &Value, value: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(x) = value.as_f64() else { return };
    if let Some(min) = num(schema, "minimum") {
        let excl = flag(schema, "exclusiveMinimum");
        if (excl && x <= min) || (!excl && x < min) {
            let how = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(FieldCause::invalid(
                path,
                value,
                &format!("{} should be {how} {}", in_body(path), show_num(min)),
            ));
        }
    }
    if let Some(max) = num(schema, "maximum") {
        let excl = flag(schema, "exclusiveMaximum");
        if (excl && x >= max) || (!excl && x > max) {
            let how = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(FieldCause::invalid(
                path,
                value,
                &format!("{} should be {how} {}", in_body(path), show_num(max)),
            ));
        }
    }
    if let Some(m) = num(schema, "multipleOf").filter(|m| *m > 0.0) {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            out.push(FieldCause::invalid(
                path,
                value,
                &format!("{} should be a multiple of {}", in_body(path), show_num(m)),
            ));
        }
    }
}

fn validate_array(
    schema: &Value,
    items: &[Value],
    value: &Value,
    path: &str,
    out: &mut Vec<FieldCause>,
) {
    if let Some(max) = count(schema, "maxItems")
        && items.len() > max
    {
        out.push(FieldCause::too_many(path, items.len(), max));
    }
    if let Some(min) = count(schema, "minItems")
        && items.len() < min
    {
        out.push(FieldCause::invalid(
            path,
            value,
            &format!("{} should have at least {min} items", in_body(path)),
        ));
    }
    if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
        for (i, item) in items.iter().enumerate() {
            validate_node(item_schema, item, &index(path, i), false, out);
        }
    }
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].iter().any(|p| json_eq(p, item)) {
                    out.push(FieldCause::duplicate(index(path, i), item));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if keys.is_empty() {
                return;
            }
            let key_of = |item: &Value| -> Value {
                let mut m = Map::new();
                for k in &keys {
                    if let Some(v) = item.get(*k) {
                        m.insert((*k).to_string(), v.clone());
                    }
                }
                Value::Object(m)
            };
            let all: Vec<Value> = items.iter().map(key_of).collect();
            for (i, k) in all.iter().enumerate() {
                if all[..i].contains(k) {
                    out.push(FieldCause::duplicate(index(path, i), k));
                }
            }
        }
        _ => {}
    }
}

fn validate_object(
    schema: &Value,
    map: &Map<String, Value>,
    value: &Value,
    path: &str,
    root: bool,
    out: &mut Vec<FieldCause>,
) {
    let skip = |k: &str| root && ROOT_FIELDS.contains(&k);
    if let Some(Value::Array(required)) = schema.get("required") {
        for r in required.iter().filter_map(Value::as_str) {
            if !skip(r) && !map.contains_key(r) {
                out.push(FieldCause::required(child(path, r), ""));
            }
        }
    }
    if let Some(max) = count(schema, "maxProperties")
        && map.len() > max
    {
        out.push(FieldCause::too_many(path, map.len(), max));
    }
    if let Some(min) = count(schema, "minProperties")
        && map.len() < min
    {
        out.push(FieldCause::invalid(
            path,
            value,
            &format!("{} should have at least {min} properties", in_body(path)),
        ));
    }
    let properties = props(schema);
    let additional = additional_schema(schema);
    for (k, v) in map {
        if skip(k) {
            continue;
        }
        match properties.and_then(|p| p.get(k)) {
            Some(s) => validate_node(s, v, &child(path, k), false, out),
            None => {
                if let Some(s) = additional {
                    validate_node(s, v, &child(path, k), false, out);
                }
            }
        }
    }
    if flag(schema, "x-kubernetes-embedded-resource") {
        for k in ["apiVersion", "kind"] {
            if map.get(k).and_then(Value::as_str).unwrap_or("").is_empty() {
                out.push(FieldCause::required(child(path, k), "must not be empty"));
            }
        }
    }
}

fn passes(schema: &Value, value: &Value, path: &str, root: bool) -> bool {
    let mut v = Vec::new();
    validate_node(schema, value, path, root, &mut v);
    v.is_empty()
}

fn validate_combinators(
    schema: &Value,
    value: &Value,
    path: &str,
    root: bool,
    out: &mut Vec<FieldCause>,
) {
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for s in all {
            validate_node(s, value, path, root, out);
        }
    }
    if let Some(Value::Array(any)) = schema.get("anyOf")
        && !any.is_empty()
        && !any.iter().any(|s| passes(s, value, path, root))
    {
        out.push(FieldCause::invalid(
            path,
            value,
            &format!(
                "{} must validate at least one schema (anyOf)",
                in_body(path)
            ),
        ));
    }
    if let Some(Value::Array(one)) = schema.get("oneOf") {
        let n = one.iter().filter(|s| passes(s, value, path, root)).count();
        if !one.is_empty() && n != 1 {
            out.push(FieldCause::invalid(
                path,
                value,
                &format!(
                    "{} must validate one and only one schema (oneOf)",
                    in_body(path)
                ),
            ));
        }
    }
    if let Some(not) = schema.get("not").filter(|s| s.is_object())
        && passes(not, value, path, root)
    {
        out.push(FieldCause::invalid(
            path,
            value,
            &format!("{} must not validate the schema (not)", in_body(path)),
        ));
    }
}

/// Drops the fields `schema` does not know (unless `x-kubernetes-preserve-unknown-fields` or
/// `additionalProperties` keeps them) and `null`s of non-nullable fields without a default.
/// Returns the paths of the unknown fields dropped, for `fieldValidation=Strict` (400) and `Warn`
/// (a `Warning` header). Root `apiVersion`/`kind`/`metadata` are always kept, as are those of
/// embedded resources.
pub(crate) fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut dropped = Vec::new();
    prune_node(schema, obj, &mut String::new(), true, &mut dropped);
    dropped
}

/// The paths [`prune`] would report as unknown, without changing (or copying) `obj`: what field
/// validation of a request asks before the write prunes.
pub(crate) fn unknown_fields(schema: &Value, obj: &Value) -> Vec<String> {
    let mut found = Vec::new();
    unknown_node(schema, obj, &mut String::new(), true, &mut found);
    found
}

/// What pruning does with one field of an object.
enum Pruned<'s> {
    /// Kept as it is: a machinery field, or one an open object allows.
    Kept,
    /// A known field, pruned below by its schema.
    Known(&'s Value),
    /// A `null` its schema does not allow (nor defaults): dropped, not reported.
    Null,
    /// Unknown: dropped and reported.
    Unknown,
}

/// The pruning rules of one object node of a schema.
struct ObjectRules<'s> {
    keep_meta: bool,
    properties: Option<&'s Map<String, Value>>,
    additional: Option<&'s Value>,
    open: bool,
}

impl<'s> ObjectRules<'s> {
    fn of(schema: &'s Value, root: bool) -> Self {
        ObjectRules {
            keep_meta: root || flag(schema, "x-kubernetes-embedded-resource"),
            properties: props(schema),
            additional: additional_schema(schema),
            open: flag(schema, "x-kubernetes-preserve-unknown-fields") || allows_additional(schema),
        }
    }

    fn field(&self, k: &str, v: &Value) -> Pruned<'s> {
        if self.keep_meta && ROOT_FIELDS.contains(&k) {
            return Pruned::Kept;
        }
        match self.properties.and_then(|p| p.get(k)).or(self.additional) {
            Some(s) if v.is_null() && !flag(s, "nullable") && s.get("default").is_none() => {
                Pruned::Null
            }
            Some(s) => Pruned::Known(s),
            None if self.open => Pruned::Kept,
            None => Pruned::Unknown,
        }
    }
}

/// Runs `f` with `path` extended by `.key` (or `[i]`), then restores it: one buffer for the
/// whole walk instead of a string per node.
fn at<R>(path: &mut String, step: Step<'_>, f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    match step {
        Step::Key(k) => {
            if len > 0 {
                path.push('.');
            }
            path.push_str(k);
        }
        Step::Index(i) => {
            use std::fmt::Write;
            let _ = write!(path, "[{i}]");
        }
    }
    let r = f(path);
    path.truncate(len);
    r
}

/// One step of a field path.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn prune_node(
    schema: &Value,
    value: &mut Value,
    path: &mut String,
    root: bool,
    dropped: &mut Vec<String>,
) {
    if !schema.is_object() {
        return;
    }
    match value {
        Value::Object(map) => {
            let rules = ObjectRules::of(schema, root);
            map.retain(|k, v| match rules.field(k, v) {
                Pruned::Kept => true,
                Pruned::Known(s) => {
                    at(path, Step::Key(k), |p| prune_node(s, v, p, false, dropped));
                    true
                }
                Pruned::Null => false,
                Pruned::Unknown => {
                    at(path, Step::Key(k), |p| dropped.push(p.clone()));
                    false
                }
            });
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter_mut().enumerate() {
                    at(path, Step::Index(i), |p| {
                        prune_node(s, item, p, false, dropped)
                    });
                }
            }
        }
        _ => {}
    }
}

/// [`prune_node`] reading only: the unknown fields' paths.
fn unknown_node(
    schema: &Value,
    value: &Value,
    path: &mut String,
    root: bool,
    found: &mut Vec<String>,
) {
    if !schema.is_object() {
        return;
    }
    match value {
        Value::Object(map) => {
            let rules = ObjectRules::of(schema, root);
            for (k, v) in map {
                match rules.field(k, v) {
                    Pruned::Known(s) => {
                        at(path, Step::Key(k), |p| unknown_node(s, v, p, false, found));
                    }
                    Pruned::Unknown => at(path, Step::Key(k), |p| found.push(p.clone())),
                    Pruned::Kept | Pruned::Null => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    at(path, Step::Index(i), |p| {
                        unknown_node(s, item, p, false, found)
                    });
                }
            }
        }
        _ => {}
    }
}

/// Fills in `default:` values for missing (or non-nullable `null`) properties, top-down, so
/// defaults nested inside a defaulted object apply too.
pub(crate) fn apply_defaults(schema: &Value, obj: &mut Value) {
    default_node(schema, obj, true);
}

fn default_node(schema: &Value, value: &mut Value, root: bool) {
    if !schema.is_object() {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(properties) = props(schema) {
                for (k, s) in properties {
                    if root && ROOT_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    let Some(d) = s.get("default") else { continue };
                    let missing = match map.get(k) {
                        None => true,
                        Some(Value::Null) => !flag(s, "nullable"),
                        Some(_) => false,
                    };
                    if missing {
                        map.insert(k.clone(), d.clone());
                    }
                }
            }
            let properties = props(schema);
            let additional = additional_schema(schema);
            for (k, v) in map.iter_mut() {
                if root && ROOT_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(s) = properties.and_then(|p| p.get(k)).or(additional) {
                    default_node(s, v, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for item in items {
                    default_node(s, item, false);
                }
            }
        }
        _ => {}
    }
}

const KNOWN_TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

/// A basic structural check of a CRD schema: every `type` is a known one, every node below the
/// root has a `type` unless it is int-or-string, preserve-unknown-fields or an embedded resource,
/// `properties`/`additionalProperties` only on objects and not together, `items` on arrays, and
/// `pattern`s compile. `base` is the path of the schema in the CRD
/// (`spec.versions[0].schema.openAPIV3Schema`).
pub(crate) fn check_schema(schema: &Value, base: &str) -> Vec<FieldCause> {
    let mut out = Vec::new();
    check_node(schema, base, true, &mut out);
    out
}

fn check_node(schema: &Value, path: &str, root: bool, out: &mut Vec<FieldCause>) {
    let Some(map) = schema.as_object() else {
        out.push(FieldCause::invalid(path, schema, "must be an object"));
        return;
    };
    let ty = map.get("type");
    check_type(ty, schema, path, root, out);
    let ty = ty.and_then(Value::as_str);
    if let Some(p) = map.get("properties") {
        match p.as_object() {
            Some(p) => {
                if ty.is_some_and(|t| t != "object") {
                    out.push(FieldCause::forbidden(
                        format!("{path}.properties"),
                        "must be empty for non-object types",
                    ));
                }
                for (k, s) in p {
                    check_node(s, &format!("{path}.properties[{k}]"), false, out);
                }
            }
            None => out.push(FieldCause::invalid(
                format!("{path}.properties"),
                p,
                "must be an object",
            )),
        }
    }
    if let Some(a) = map.get("additionalProperties") {
        if map.contains_key("properties") {
            out.push(FieldCause::forbidden(
                format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if a.is_object() {
            check_node(a, &format!("{path}.additionalProperties"), false, out);
        }
    }
    if let Some(items) = map.get("items") {
        if items.is_object() {
            check_node(items, &format!("{path}.items"), false, out);
        } else {
            out.push(FieldCause::invalid(
                format!("{path}.items"),
                items,
                "must be a schema object",
            ));
        }
    } else if ty == Some("array") {
        out.push(FieldCause::required(
            format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(p) = map.get("pattern").and_then(Value::as_str)
        && pattern(p).is_none()
    {
        out.push(FieldCause::invalid(
            format!("{path}.pattern"),
            &Value::String(p.into()),
            "must be a valid regular expression",
        ));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(subs)) = map.get(key) {
            for (i, s) in subs.iter().enumerate() {
                if s.is_object() {
                    check_value_node(s, &format!("{path}.{key}[{i}]"), out);
                }
            }
        }
    }
}

/// A node's `type`: a known one, or absent where an `x-kubernetes-*` extension or the root
/// allows it.
fn check_type(
    ty: Option<&Value>,
    schema: &Value,
    path: &str,
    root: bool,
    out: &mut Vec<FieldCause>,
) {
    match ty {
        Some(Value::String(t)) if KNOWN_TYPES.contains(&t.as_str()) => {}
        Some(other) => out.push(FieldCause::not_supported(
            format!("{path}.type"),
            other,
            &KNOWN_TYPES.map(|t| Value::String(t.into())),
        )),
        None => {
            let exempt = flag(schema, "x-kubernetes-int-or-string")
                || flag(schema, "x-kubernetes-preserve-unknown-fields")
                || flag(schema, "x-kubernetes-embedded-resource");
            if !root && !exempt {
                out.push(FieldCause::required(
                    format!("{path}.type"),
                    "must not be empty for specified object fields",
                ));
            }
        }
    }
}

/// Sub-schemas of `allOf`/`anyOf`/`oneOf` may omit `type`; only their patterns are checked.
fn check_value_node(schema: &Value, path: &str, out: &mut Vec<FieldCause>) {
    if let Some(p) = schema.get("pattern").and_then(Value::as_str)
        && pattern(p).is_none()
    {
        out.push(FieldCause::invalid(
            format!("{path}.pattern"),
            &Value::String(p.into()),
            "must be a valid regular expression",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
                        "step": {"type": "integer", "multipleOf": 5},
                        "color": {"type": "string", "enum": ["red", "green"]},
                        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                        "enabled": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3, "x-kubernetes-list-type": "set"},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port"],
                            "items": {"type": "object", "required": ["port"], "properties": {
                                "port": {"type": "integer"},
                                "name": {"type": "string", "default": "http"}
                            }}
                        },
                        "target": {"x-kubernetes-int-or-string": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "maybe": {"type": "string", "nullable": true},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                        "mode": {"type": "string", "default": "fast"},
                        "nested": {"type": "object", "default": {}, "properties": {
                            "level": {"type": "integer", "default": 3}
                        }}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        })
    }

    fn obj(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    fn fields(c: &[FieldCause]) -> Vec<String> {
        c.iter()
            .map(|c| format!("{} {}", c.field, c.reason))
            .collect()
    }

    #[test]
    fn valid_object_passes() {
        let o = obj(json!({
            "size": 3, "ratio": 0.5, "step": 10, "color": "red", "name": "abc", "enabled": true,
            "tags": ["a", "b"], "ports": [{"port": 80}, {"port": 81, "name": "x"}],
            "target": "50%", "labels": {"a": "b"}, "free": {"anything": [1, {"x": null}]},
            "maybe": null, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}}
        }));
        assert_eq!(validate(&widget_schema(), &o), vec![]);
        let o = obj(json!({"size": 1, "target": 8080}));
        assert_eq!(validate(&widget_schema(), &o), vec![]);
        // 2.0 is an integer for OpenAPI.
        let o = obj(json!({"size": 2.0}));
        assert_eq!(validate(&widget_schema(), &o), vec![]);
    }

    #[test]
    fn type_errors() {
        let c = validate(&widget_schema(), &obj(json!({"size": "three"})));
        assert_eq!(fields(&c), vec!["spec.size FieldValueTypeInvalid"]);
        assert_eq!(
            c[0].to_string(),
            "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        );
        let c = validate(&widget_schema(), &obj(json!({"size": 1.5})));
        assert_eq!(fields(&c), vec!["spec.size FieldValueTypeInvalid"]);
        let c = validate(
            &widget_schema(),
            &obj(
                json!({"size": 1, "enabled": "yes", "tags": "a", "labels": {"a": 1}, "target": true}),
            ),
        );
        assert_eq!(
            fields(&c),
            vec![
                "spec.enabled FieldValueTypeInvalid",
                "spec.labels.a FieldValueTypeInvalid",
                "spec.tags FieldValueTypeInvalid",
                "spec.target FieldValueTypeInvalid",
            ]
        );
        let c = validate(&widget_schema(), &json!({"kind": "Widget", "spec": []}));
        assert_eq!(fields(&c), vec!["spec FieldValueTypeInvalid"]);
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "color": null})));
        assert_eq!(fields(&c), vec!["spec.color FieldValueTypeInvalid"]);
    }

    #[test]
    fn required_enum_bounds() {
        let c = validate(&widget_schema(), &obj(json!({})));
        assert_eq!(fields(&c), vec!["spec.size FieldValueRequired"]);
        assert_eq!(c[0].to_string(), "spec.size: Required value");
        let c = validate(&widget_schema(), &obj(json!({"size": 0, "color": "blue"})));
        assert_eq!(
            fields(&c),
            vec![
                "spec.color FieldValueNotSupported",
                "spec.size FieldValueInvalid"
            ]
        );
        assert_eq!(
            c[0].message,
            "Unsupported value: \"blue\": supported values: \"red\", \"green\""
        );
        assert_eq!(
            c[1].message,
            "Invalid value: 0: spec.size in body should be greater than or equal to 1"
        );
        let c = validate(&widget_schema(), &obj(json!({"size": 11})));
        assert_eq!(
            c[0].message,
            "Invalid value: 11: spec.size in body should be less than or equal to 10"
        );
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "ratio": 0})));
        assert!(c[0].message.ends_with("should be greater than 0"), "{c:?}");
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "ratio": 1})));
        assert!(c[0].message.ends_with("should be less than 1"), "{c:?}");
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "step": 7})));
        assert!(c[0].message.ends_with("should be a multiple of 5"), "{c:?}");
    }

    #[test]
    fn strings_and_arrays() {
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "name": "a"})));
        assert_eq!(
            c[0].message,
            "Invalid value: \"a\": spec.name in body should be at least 2 chars long"
        );
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "name": "abcdef"})));
        assert_eq!(fields(&c), vec!["spec.name FieldValueTooLong"]);
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "name": "AB"})));
        assert_eq!(
            c[0].message,
            "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"
        );
        let c = validate(&widget_schema(), &obj(json!({"size": 1, "tags": []})));
        assert_eq!(fields(&c), vec!["spec.tags FieldValueInvalid"]);
        let c = validate(
            &widget_schema(),
            &obj(json!({"size": 1, "tags": ["a", "b", "c", "d"]})),
        );
        assert_eq!(fields(&c), vec!["spec.tags FieldValueTooMany"]);
        let c = validate(
            &widget_schema(),
            &obj(json!({"size": 1, "tags": ["a", 1, "a"]})),
        );
        assert_eq!(
            fields(&c),
            vec![
                "spec.tags[1] FieldValueTypeInvalid",
                "spec.tags[2] FieldValueDuplicate"
            ]
        );
        let c = validate(
            &widget_schema(),
            &obj(json!({"size": 1, "ports": [{"port": 1}, {"name": "x"}, {"port": 1}]})),
        );
        assert_eq!(
            fields(&c),
            vec![
                "spec.ports[1].port FieldValueRequired",
                "spec.ports[2] FieldValueDuplicate"
            ]
        );
        let c = validate(
            &widget_schema(),
            &obj(json!({"size": 1, "template": {"kind": "Pod"}})),
        );
        assert_eq!(
            fields(&c),
            vec!["spec.template.apiVersion FieldValueRequired"]
        );
    }

    #[test]
    fn combinators() {
        let s = json!({"type": "object", "properties": {"v": {
            "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+%$"}]
        }, "w": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
           "x": {"type": "string", "not": {"pattern": "^bad"}},
           "y": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}]}}});
        assert!(validate(&s, &json!({"v": 5, "w": "ax", "x": "good", "y": 3})).is_empty());
        assert!(validate(&s, &json!({"v": "50%"})).is_empty());
        let c = validate(&s, &json!({"v": "lots", "w": "ab", "x": "bad!", "y": 9}));
        assert_eq!(
            fields(&c),
            vec![
                "v FieldValueInvalid",
                "w FieldValueInvalid",
                "x FieldValueInvalid",
                "y FieldValueInvalid"
            ]
        );
        assert!(c[0].message.contains("(anyOf)"));
        assert!(c[1].message.contains("(oneOf)"));
        assert!(c[2].message.contains("(not)"));
    }

    #[test]
    fn pruning() {
        let mut o = obj(json!({
            "size": 1, "unknown": 1, "labels": {"k": "v"},
            "free": {"kept": {"deep": 1}},
            "ports": [{"port": 1, "extra": true}],
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
            "color": null, "maybe": null
        }));
        o["extraTop"] = json!(1);
        o["metadata"]["unknownMeta"] = json!(1);
        let dropped = prune(&widget_schema(), &mut o);
        assert_eq!(
            dropped,
            vec!["extraTop", "spec.ports[0].extra", "spec.unknown"]
        );
        assert_eq!(o["apiVersion"], "example.com/v1");
        assert_eq!(o["kind"], "Widget");
        assert_eq!(o["metadata"]["unknownMeta"], 1);
        assert_eq!(o["spec"]["free"]["kept"]["deep"], 1);
        assert_eq!(o["spec"]["labels"]["k"], "v");
        assert_eq!(o["spec"]["template"]["spec"], json!({}));
        assert!(
            o["spec"].get("color").is_none(),
            "non-nullable null dropped"
        );
        assert!(o["spec"]["maybe"].is_null() && o["spec"].get("maybe").is_some());
        assert!(o["spec"]["ports"][0].get("extra").is_none());

        // An object schema without properties prunes everything below it.
        let s = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        let mut o = json!({"spec": {"a": 1}});
        assert_eq!(prune(&s, &mut o), vec!["spec.a"]);
        // Preserve at the root keeps everything.
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut o = json!({"spec": {"a": 1}, "x": 2});
        assert!(prune(&s, &mut o).is_empty());
        assert_eq!(o["spec"]["a"], 1);
    }

    #[test]
    fn defaulting() {
        let mut o = obj(json!({"size": 1, "ports": [{"port": 80}], "maybe": null}));
        apply_defaults(&widget_schema(), &mut o);
        assert_eq!(o["spec"]["mode"], "fast");
        assert_eq!(o["spec"]["nested"], json!({"level": 3}));
        assert_eq!(o["spec"]["ports"][0]["name"], "http");
        assert!(o["spec"]["maybe"].is_null());
        assert!(o.get("status").is_none());
        let mut o = obj(json!({"size": 1, "mode": "slow", "nested": {"level": 1}}));
        apply_defaults(&widget_schema(), &mut o);
        assert_eq!(o["spec"]["mode"], "slow");
        assert_eq!(o["spec"]["nested"]["level"], 1);
        // A null in a non-nullable defaulted field takes the default.
        let mut o = obj(json!({"size": 1, "mode": null}));
        prune(&widget_schema(), &mut o);
        apply_defaults(&widget_schema(), &mut o);
        assert_eq!(o["spec"]["mode"], "fast");
        // Defaults then validate.
        assert!(validate(&widget_schema(), &o).is_empty());
    }

    #[test]
    fn schema_checks() {
        assert!(
            check_schema(&widget_schema(), "s").is_empty(),
            "{:?}",
            check_schema(&widget_schema(), "s")
        );
        let bad = json!({"type": "object", "properties": {
            "a": {"properties": {}},
            "b": {"type": "strng"},
            "c": {"type": "array"},
            "d": {"type": "string", "pattern": "("},
            "e": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
            "f": {"type": "string", "properties": {"x": {"type": "string"}}}
        }});
        let c = check_schema(&bad, "s");
        assert_eq!(
            fields(&c),
            vec![
                "s.properties[a].type FieldValueRequired",
                "s.properties[b].type FieldValueNotSupported",
                "s.properties[c].items FieldValueRequired",
                "s.properties[d].pattern FieldValueInvalid",
                "s.properties[e].additionalProperties FieldValueForbidden",
                "s.properties[f].properties FieldValueForbidden",
            ]
        );
        assert!(!check_schema(&json!("x"), "s").is_empty());
    }
}
