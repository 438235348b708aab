//! The type check of a built-in request body: what kube-apiserver's JSON decode into the kind's
//! Go type refuses (`k8s.io/apimachinery/pkg/runtime/serializer/json/json.go` decodes with
//! `sigs.k8s.io/json`, a case-sensitive fork of `encoding/json`: `internal/golang/encoding/json/decode.go`),
//! checked by walking the body against the kind's generated schema (the sibling `schemas`)
//! instead of deserializing it into its k8s-openapi type. One non-generic walk serves every
//! kind; a typed decode compiled each kind's whole `Deserialize` tree.
//!
//! The walk keeps Go's rules and words: a JSON value of the wrong type (`json: cannot unmarshal
//! string into Go struct field PodSpec.spec.containers of type []v1.Container`), an integer
//! out of its field's range or with a fraction (`number 3000000000`), bad base64 in a `[]byte`
//! (`illegal base64 data at input byte 4`), and the errors of the types that decode themselves:
//! `metav1.Time` / `MicroTime` (RFC 3339, the sibling `rfc3339`), `intstr.IntOrString` and
//! `resource.Quantity`. As Go: `null` is accepted anywhere, unknown fields are ignored (field
//! validation reports them separately), required fields are not checked (validation does), the
//! first plain type error is the one reported, and a self-decoding type's error ends the walk
//! at once. The caller (`registry::strategy::validate`) wraps the message in upstream's 400
//! (`endpoints/handlers/rest.go` `transformDecodeError`).
//!
//! Go names named string types (`v1.PullPolicy`) where the schema only says `string`: this
//! check says `string`.

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Number, Value};

use super::rfc3339;
use crate::api::quantity;
use crate::storage::FastMap;

/// A Go type, as far as the decode cares.
#[derive(Debug)]
enum Ty {
    /// Decodes anything (`runtime.RawExtension`, `apiextensions.JSON`, `FieldsV1`, a `oneOf`).
    Any,
    Bool,
    Str,
    Int32,
    Int64,
    Float,
    /// `[]byte`: a base64 string.
    Bytes,
    Time,
    MicroTime,
    IntOrString,
    Quantity,
    /// A struct: its Go name (`v1.PodSpec`) and its fields' types.
    Struct(String, FastMap<String, usize>),
    Array(usize),
    Map(usize),
}

/// Every built-in schema compiled into [`Ty`]s, addressed by index.
#[derive(Debug)]
struct Types {
    tys: Vec<Ty>,
    by_name: FastMap<String, usize>,
}

const ANY: usize = 0;
const SCHEMA_PREFIX: &str = "#/components/schemas/";

/// Type-checks `body` as the built-in type whose schema is named `type_name`; the error is Go's
/// decode error text. A type without a schema is not checked.
pub(crate) fn check(type_name: &str, body: &Value) -> Result<(), String> {
    let types = types();
    let Some(&root) = types.by_name.get(type_name) else {
        return Ok(());
    };
    let mut w = Walk {
        types,
        strukt: "",
        fields: Vec::new(),
        saved: None,
    };
    w.value(root, body)?;
    w.saved.map_or(Ok(()), Err)
}

/// Whether a built-in schema named `type_name` exists (the type check covers that kind).
#[cfg(test)]
pub(crate) fn knows(type_name: &str) -> bool {
    types().by_name.contains_key(type_name)
}

fn types() -> &'static Types {
    static TYPES: OnceLock<Types> = OnceLock::new();
    TYPES.get_or_init(|| {
        let defs = &super::schemas::builtins().definitions;
        let mut t = Types {
            tys: vec![Ty::Any],
            by_name: FastMap::default(),
        };
        for name in defs.keys() {
            t.named(name, defs);
        }
        t
    })
}

impl Types {
    /// The index of the named schema, compiling it (and what it references) on first use.
    fn named(&mut self, name: &str, defs: &Map<String, Value>) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        let special = match name.rsplit('.').next() {
            Some("Time") if name.ends_with("meta.v1.Time") => Some(Ty::Time),
            Some("MicroTime") => Some(Ty::MicroTime),
            Some("Quantity") => Some(Ty::Quantity),
            Some("IntOrString") => Some(Ty::IntOrString),
            _ => None,
        };
        let i = self.tys.len();
        self.tys.push(Ty::Any);
        self.by_name.insert(name.to_string(), i);
        self.tys[i] = match (special, defs.get(name)) {
            (Some(t), _) => t,
            (None, Some(s)) => self.compile(s, Some(name), defs),
            (None, None) => Ty::Any,
        };
        i
    }

    /// The index of an inline schema or of the schema it references.
    fn node(&mut self, s: &Value, defs: &Map<String, Value>) -> usize {
        if let Some(name) = reference(s) {
            return self.named(name, defs);
        }
        let ty = self.compile(s, None, defs);
        self.tys.push(ty);
        self.tys.len() - 1
    }

    fn compile(&mut self, s: &Value, name: Option<&str>, defs: &Map<String, Value>) -> Ty {
        let format = s.get("format").and_then(Value::as_str);
        match s.get("type").and_then(Value::as_str) {
            Some("boolean") => Ty::Bool,
            Some("integer") if format == Some("int32") => Ty::Int32,
            Some("integer") => Ty::Int64,
            Some("number") => Ty::Float,
            Some("string") => match format {
                Some("byte") => Ty::Bytes,
                Some("date-time") => Ty::Time,
                _ => Ty::Str,
            },
            Some("array") => Ty::Array(s.get("items").map_or(ANY, |i| self.node(i, defs))),
            Some("object") => self.object(s, name, defs),
            None if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) => {
                Ty::IntOrString
            }
            _ => Ty::Any,
        }
    }

    /// A struct (`properties`), a map (`additionalProperties`), or anything (neither).
    fn object(&mut self, s: &Value, name: Option<&str>, defs: &Map<String, Value>) -> Ty {
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            let fields = props
                .iter()
                .map(|(k, v)| (k.clone(), self.node(v, defs)))
                .collect();
            return Ty::Struct(go_struct_name(name.unwrap_or("")), fields);
        }
        match s.get("additionalProperties") {
            Some(v @ Value::Object(_)) => Ty::Map(self.node(v, defs)),
            _ => Ty::Any,
        }
    }

    /// The Go spelling of a type (`[]v1.Container`, `map[string]string`).
    fn go(&self, i: usize) -> String {
        match &self.tys[i] {
            Ty::Any => "interface {}".into(),
            Ty::Bool => "bool".into(),
            Ty::Str => "string".into(),
            Ty::Int32 => "int32".into(),
            Ty::Int64 => "int64".into(),
            Ty::Float => "float64".into(),
            Ty::Bytes => "[]uint8".into(),
            Ty::Time => "v1.Time".into(),
            Ty::MicroTime => "v1.MicroTime".into(),
            Ty::IntOrString => "intstr.IntOrString".into(),
            Ty::Quantity => "resource.Quantity".into(),
            Ty::Struct(name, _) => name.clone(),
            Ty::Array(e) => format!("[]{}", self.go(*e)),
            Ty::Map(e) => format!("map[string]{}", self.go(*e)),
        }
    }
}

/// The schema a `$ref` (or `allOf: [{$ref}]`, a reference with a description) names.
fn reference(s: &Value) -> Option<&str> {
    let r = match s.get("$ref") {
        Some(r) => r,
        None => s.get("allOf")?.as_array()?.first()?.get("$ref")?,
    };
    r.as_str()?.strip_prefix(SCHEMA_PREFIX)
}

/// `io.k8s.api.core.v1.PodSpec` → `v1.PodSpec` (Go's package name and type name).
fn go_struct_name(schema: &str) -> String {
    let mut parts = schema.rsplit('.');
    match (parts.next(), parts.next()) {
        (Some(n), Some(pkg)) => format!("{pkg}.{n}"),
        (Some(n), None) => n.to_string(),
        _ => String::new(),
    }
}

/// One walk: the decoder's error context (the innermost struct and the field names from the
/// root, as `encoding/json`'s `errorContext`) and the first saved error.
struct Walk<'a> {
    types: &'a Types,
    strukt: &'a str,
    fields: Vec<&'a str>,
    saved: Option<String>,
}

impl<'a> Walk<'a> {
    /// Walks `v` as type `i`; an `Err` ends the walk (a self-decoding type's error), plain type
    /// errors are saved and the walk goes on, as Go's decoder does.
    fn value(&mut self, i: usize, v: &'a Value) -> Result<(), String> {
        let types = self.types;
        match (&types.tys[i], v) {
            (_, Value::Null) | (Ty::Any, _) => {}
            (Ty::Bool, Value::Bool(_)) | (Ty::Str, Value::String(_)) => {}
            (Ty::Float, Value::Number(_)) => {}
            (Ty::Int32, Value::Number(n)) if as_i32(n).is_none() => {
                self.mismatch(&format!("number {n}"), i);
            }
            (Ty::Int64, Value::Number(n)) if n.as_i64().is_none() => {
                self.mismatch(&format!("number {n}"), i);
            }
            (Ty::Int32 | Ty::Int64, Value::Number(_)) => {}
            (Ty::Bytes, Value::String(s)) => {
                if let Err(at) = check_base64(s) {
                    self.save(format!("illegal base64 data at input byte {at}"));
                }
            }
            (Ty::Time, _) => self.time(v, false)?,
            (Ty::MicroTime, _) => self.time(v, true)?,
            (Ty::IntOrString, _) => self.int_or_string(v)?,
            (Ty::Quantity, _) => check_quantity(v)?,
            (Ty::Struct(name, fields), Value::Object(m)) => self.object(name, fields, m)?,
            (Ty::Array(e), Value::Array(a)) => {
                for x in a {
                    self.value(*e, x)?;
                }
            }
            (Ty::Map(e), Value::Object(m)) => {
                for x in m.values() {
                    self.value(*e, x)?;
                }
            }
            _ => self.mismatch(what(v), i),
        }
        Ok(())
    }

    /// A struct's known fields, each with its name on the error context.
    fn object(
        &mut self,
        name: &'a str,
        fields: &'a FastMap<String, usize>,
        m: &'a Map<String, Value>,
    ) -> Result<(), String> {
        let short = name.rsplit('.').next().unwrap_or(name);
        for (k, x) in m {
            let Some(&f) = fields.get(k) else { continue };
            let outer = self.strukt;
            self.strukt = short;
            self.fields.push(k);
            self.value(f, x)?;
            self.fields.pop();
            self.strukt = outer;
        }
        Ok(())
    }

    /// `metav1.Time` / `MicroTime`'s `UnmarshalJSON`: a string, parsed with `time.RFC3339`
    /// (`RFC3339Micro`).
    fn time(&self, v: &Value, micro: bool) -> Result<(), String> {
        match v {
            Value::String(s) => rfc3339::parse(s, micro),
            _ => Err(self.type_error(what(v), "string")),
        }
    }

    /// `intstr.IntOrString`'s `UnmarshalJSON`: a string, else an `int32`.
    fn int_or_string(&self, v: &Value) -> Result<(), String> {
        match v {
            Value::String(_) => Ok(()),
            Value::Number(n) if as_i32(n).is_some() => Ok(()),
            Value::Number(n) => Err(self.type_error(&format!("number {n}"), "int32")),
            _ => Err(self.type_error(what(v), "int32")),
        }
    }

    /// A plain type error (`UnmarshalTypeError`) of a `value` (`string`, `number 1.5`) for type
    /// `i`, saved if it is the first.
    fn mismatch(&mut self, value: &str, i: usize) {
        let msg = self.type_error(value, &self.types.go(i));
        self.save(msg);
    }

    fn save(&mut self, msg: String) {
        self.saved.get_or_insert(msg);
    }

    /// `UnmarshalTypeError.Error()` with the decoder's context.
    fn type_error(&self, value: &str, ty: &str) -> String {
        if self.fields.is_empty() {
            return format!("json: cannot unmarshal {value} into Go value of type {ty}");
        }
        format!(
            "json: cannot unmarshal {value} into Go struct field {}.{} of type {ty}",
            self.strukt,
            self.fields.join(".")
        )
    }
}

/// How `encoding/json` names a JSON value's kind.
fn what(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn as_i32(n: &Number) -> Option<i32> {
    n.as_i64().and_then(|i| i32::try_from(i).ok())
}

/// `base64.StdEncoding.Decode` as `encoding/json` calls it for a `[]byte`: padded, trailing
/// bits allowed, `\r` and `\n` skipped; the error is the offset Go reports.
fn check_base64(s: &str) -> Result<(), usize> {
    static STD: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    let stripped;
    let s = if s.contains(['\r', '\n']) {
        stripped = s.replace(['\r', '\n'], "");
        stripped.as_str()
    } else {
        s
    };
    STD.decode(s).map(drop).map_err(|e| match e {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            at
        }
        base64::DecodeError::InvalidLength(_) => s.len() - s.len() % 4,
        base64::DecodeError::InvalidPadding => s.find('=').unwrap_or(s.len() - s.len() % 4),
    })
}

/// `resource.Quantity`'s `UnmarshalJSON`: a quoted or bare quantity (`ParseQuantity`).
fn check_quantity(v: &Value) -> Result<(), String> {
    let ok = match v {
        Value::String(s) => is_quantity(s.trim()),
        Value::Number(n) => is_quantity(&n.to_string()),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(quantity::FORMAT_ERR.into())
    }
}

/// Whether `s` parses as a quantity.
fn is_quantity(s: &str) -> bool {
    quantity::Quantity::parse(s).is_some()
}
