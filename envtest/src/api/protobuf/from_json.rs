//! JSON to a protobuf message of a given descriptor ([`DynamicMessage`]): the inverse of
//! `to_json`. Only fields present (and not `null`) in the JSON are written; JSON keys the
//! message has no field for (`kind` and `apiVersion` of nested objects) are ignored, as Go's
//! protobuf encoder never sees them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value as P,
};
use serde_json::{Map, Value};

use super::gotime;
use super::schema::{self, Special};

/// The message `d` that `v` is the JSON of.
pub(super) fn message(d: &MessageDescriptor, v: &Value) -> Result<DynamicMessage, String> {
    let mut m = DynamicMessage::new(d.clone());
    if let Some(s) = schema::special(d) {
        special(s, &mut m, v)?;
        return Ok(m);
    }
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{}: expected an object, got {v}", d.name()))?;
    fields_from(&mut m, obj)?;
    Ok(m)
}

fn fields_from(m: &mut DynamicMessage, obj: &Map<String, Value>) -> Result<(), String> {
    for f in m.descriptor().fields() {
        if schema::inline(&f) {
            if let Kind::Message(inner) = f.kind() {
                let mut im = DynamicMessage::new(inner);
                fields_from(&mut im, obj)?;
                m.set_field(&f, P::Message(im));
            }
            continue;
        }
        match obj.get(schema::json_name(&f).as_ref()) {
            None | Some(Value::Null) => {}
            Some(v) => {
                let value = field(&f, v).map_err(|e| format!("{}: {e}", f.name()))?;
                m.set_field(&f, value);
            }
        }
    }
    Ok(())
}

fn field(f: &FieldDescriptor, v: &Value) -> Result<P, String> {
    let kind = f.kind();
    if f.is_map() {
        let obj = v.as_object().ok_or("expected an object")?;
        let value_kind = match &kind {
            Kind::Message(entry) => entry.map_entry_value_field().kind(),
            k => k.clone(),
        };
        let mut out = std::collections::HashMap::with_capacity(obj.len());
        for (k, x) in obj {
            out.insert(MapKey::String(k.clone()), single(&value_kind, x)?);
        }
        return Ok(P::Map(out));
    }
    if f.is_list() {
        let items = v.as_array().ok_or("expected an array")?;
        return items
            .iter()
            .map(|x| single(&kind, x))
            .collect::<Result<_, _>>()
            .map(P::List);
    }
    single(&kind, v)
}

fn single(kind: &Kind, v: &Value) -> Result<P, String> {
    let int = || {
        v.as_i64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| format!("expected an integer, got {v}"))
    };
    Ok(match kind {
        Kind::String => P::String(v.as_str().ok_or("expected a string")?.to_string()),
        Kind::Bytes => {
            let s = v.as_str().ok_or("expected a base64 string")?;
            P::Bytes(B64.decode(s).map_err(|e| e.to_string())?.into())
        }
        Kind::Bool => P::Bool(v.as_bool().ok_or("expected a boolean")?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            P::I32(i32::try_from(int()?).map_err(|e| e.to_string())?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => P::I64(int()?),
        Kind::Uint32 | Kind::Fixed32 => P::U32(u32::try_from(int()?).map_err(|e| e.to_string())?),
        Kind::Uint64 | Kind::Fixed64 => P::U64(u64::try_from(int()?).map_err(|e| e.to_string())?),
        Kind::Float => P::F32(v.as_f64().ok_or("expected a number")? as f32),
        Kind::Double => P::F64(v.as_f64().ok_or("expected a number")?),
        Kind::Enum(_) => P::EnumNumber(i32::try_from(int()?).map_err(|e| e.to_string())?),
        Kind::Message(d) => P::Message(message(d, v)?),
    })
}

fn special(s: Special, m: &mut DynamicMessage, v: &Value) -> Result<(), String> {
    let text = || {
        v.as_str()
            .ok_or_else(|| format!("expected a string, got {v}"))
    };
    match s {
        Special::Time | Special::MicroTime => {
            let (seconds, nanos) = gotime::parse_time(text()?)?;
            m.set_field_by_number(1, P::I64(seconds));
            m.set_field_by_number(2, P::I32(nanos));
        }
        Special::Duration => {
            m.set_field_by_number(1, P::I64(gotime::parse_duration(text()?)?));
        }
        Special::Quantity => {
            let q = match v {
                Value::Number(n) => n.to_string(),
                _ => text()?.to_string(),
            };
            m.set_field_by_number(1, P::String(q));
        }
        Special::IntOrString => match v {
            Value::String(s) => {
                m.set_field_by_number(1, P::I64(1));
                m.set_field_by_number(3, P::String(s.clone()));
            }
            _ => {
                let n = v
                    .as_i64()
                    .ok_or_else(|| format!("expected int or string, got {v}"))?;
                m.set_field_by_number(1, P::I64(0));
                m.set_field_by_number(2, P::I32(i32::try_from(n).map_err(|e| e.to_string())?));
            }
        },
        Special::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|e| e.to_string())?;
            m.set_field_by_number(1, P::Bytes(raw.into()));
        }
        Special::OrArray | Special::OrBool | Special::OrStringArray => either(s, m, v)?,
        Special::Slice => {
            let f = m
                .descriptor()
                .fields()
                .next()
                .ok_or("empty slice message")?;
            let value = field(&f, v)?;
            m.set_field(&f, value);
        }
    }
    Ok(())
}

/// The schema-or-something types of apiextensions (see `schema::Special`).
fn either(s: Special, m: &mut DynamicMessage, v: &Value) -> Result<(), String> {
    let (schema_number, other_number) = match s {
        Special::OrBool => (2, 1),
        _ => (1, 2),
    };
    let d = m.descriptor();
    let get = |n: u32| {
        d.get_field(n)
            .ok_or_else(|| format!("{}: no field {n}", d.name()))
    };
    match v {
        Value::Object(_) => {
            let f = get(schema_number)?;
            let value = field(&f, v)?;
            m.set_field(&f, value);
            if s == Special::OrBool {
                m.set_field_by_number(1, P::Bool(true));
            }
        }
        _ => {
            let f = get(other_number)?;
            let value = field(&f, v)?;
            m.set_field(&f, value);
        }
    }
    Ok(())
}
