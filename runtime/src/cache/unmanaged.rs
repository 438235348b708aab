//! Decoding an informer's objects without their `metadata.managedFields` when the cache
//! would drop them anyway.
//!
//! The default transform ([`super::strip_managed_fields`], controller-runtime's
//! `TransformStripManagedFields`) clears `managedFields` right after an object is decoded.
//! Decoding them first is often most of an object's decode: each entry's `fieldsV1` is a
//! tree of JSON maps, built and freed at once. Every informer watches [`Unmanaged<K>`]
//! instead of `K`; in a scope that strips them, its decode skips the list in the JSON (still
//! read, never built), and what the store holds is identical.
//!
//! The choice cannot travel through `Deserialize`, which takes no argument: the informer's
//! watch stream ([`skipping`]) sets a thread-local flag while it is polled, which is where
//! kube's watcher decodes list pages and watch events. A decode anywhere else builds the
//! whole object, which the transform then strips: the flag only saves work, it never
//! changes what is stored. Its neighbours: `super::watchlist` (the stream it wraps) and
//! `super::informer` (which picks it per scope).

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use kube::Resource;
use kube::api::ObjectMeta;
use kube::runtime::watcher::Event;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

thread_local! {
    /// Whether decodes on this thread skip `metadata.managedFields` (see the module docs).
    static SKIP: Cell<bool> = const { Cell::new(false) };
}

/// `K`, decoded without `metadata.managedFields` while [`skipping`] polls the stream that
/// decodes it (else decoded whole).
#[derive(Clone, Debug)]
pub(crate) struct Unmanaged<K>(pub K);

impl<K: Resource> Resource for Unmanaged<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn metadata_api() -> bool {
        K::metadata_api()
    }
    fn url_path(dt: &Self::DynamicType, namespace: Option<&str>) -> String {
        K::url_path(dt, namespace)
    }
    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Unmanaged<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !SKIP.get() {
            return K::deserialize(d).map(Unmanaged);
        }
        K::deserialize(Filter {
            de: d,
            level: Level::Object,
        })
        .map(Unmanaged)
    }
}

/// The watcher's event about `K`.
pub(crate) fn inner<K>(e: Event<Unmanaged<K>>) -> Event<K> {
    match e {
        Event::Apply(o) => Event::Apply(o.0),
        Event::Delete(o) => Event::Delete(o.0),
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(o.0),
        Event::InitDone => Event::InitDone,
    }
}

/// `events` with [`Unmanaged`] decodes skipping `managedFields` while it is polled.
pub(crate) fn skipping<S: Stream + Unpin>(events: S) -> Skipping<S> {
    Skipping(events)
}

/// See [`skipping`].
pub(crate) struct Skipping<S>(S);

impl<S: Stream + Unpin> Stream for Skipping<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let before = SKIP.replace(true);
        let next = Pin::new(&mut self.0).poll_next(cx);
        SKIP.set(before);
        next
    }
}

/// Where a map being decoded sits: the object itself, or its `metadata`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Object,
    Metadata,
}

/// A deserializer that hands the maps it yields to [`Keys`] at `level`; everything else
/// passes through untouched.
struct Filter<D> {
    de: D,
    level: Level,
}

/// Forwards `deserialize_*` methods to the inner deserializer with the visitor wrapped (the
/// ones that may yield a map).
macro_rules! wrap_visitor {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            let level = self.level;
            self.de.$method($($arg,)* Wrap { visitor, level })
        }
    )*};
}

/// Forwards `deserialize_*` methods to the inner deserializer as they are (no map inside).
macro_rules! forward_plain {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Filter<D> {
    type Error = D::Error;

    wrap_visitor! {
        deserialize_any();
        deserialize_map();
        deserialize_option();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_newtype_struct(name: &'static str);
    }

    forward_plain! {
        deserialize_bool(); deserialize_i8(); deserialize_i16(); deserialize_i32();
        deserialize_i64(); deserialize_i128(); deserialize_u8(); deserialize_u16();
        deserialize_u32(); deserialize_u64(); deserialize_u128(); deserialize_f32();
        deserialize_f64(); deserialize_char(); deserialize_str(); deserialize_string();
        deserialize_bytes(); deserialize_byte_buf(); deserialize_unit(); deserialize_seq();
        deserialize_identifier(); deserialize_ignored_any();
        deserialize_unit_struct(name: &'static str);
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A visitor whose maps are read through [`Keys`] (and whose `Some` / newtype contents
/// through [`Filter`]) at `level`.
struct Wrap<V> {
    visitor: V,
    level: Level,
}

/// Forwards `visit_*` methods of one argument to the inner visitor.
macro_rules! forward_visits {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    forward_visits! {
        visit_bool(bool); visit_i8(i8); visit_i16(i16); visit_i32(i32); visit_i64(i64);
        visit_i128(i128); visit_u8(u8); visit_u16(u16); visit_u32(u32); visit_u64(u64);
        visit_u128(u128); visit_f32(f32); visit_f64(f64); visit_char(char);
        visit_str(&str); visit_borrowed_str(&'de str); visit_string(String);
        visit_bytes(&[u8]); visit_borrowed_bytes(&'de [u8]); visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        let level = self.level;
        self.visitor.visit_some(Filter { de, level })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        let level = self.level;
        self.visitor.visit_newtype_struct(Filter { de, level })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Keys {
            map,
            level: self.level,
            metadata_next: false,
        })
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_enum(data)
    }
}

/// The entries of a map at `level`: at the object's, `metadata`'s value is read at the
/// metadata level; at the metadata's, `managedFields` is skipped.
struct Keys<A> {
    map: A,
    level: Level,
    /// The key just returned was the object's `metadata`.
    metadata_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Keys<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            let name = key.as_str();
            if self.level == Level::Metadata && name == "managedFields" {
                self.map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.metadata_next = self.level == Level::Object && name == "metadata";
            return key.into_seed(seed).map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.metadata_next) {
            return self.map.next_value_seed(Metadata(seed));
        }
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A seed for the object's `metadata`: its map is read at the metadata level.
struct Metadata<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Metadata<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Filter {
            de,
            level: Level::Metadata,
        })
    }
}

/// A map key, borrowed from the input when the decoder can (no copy for JSON without
/// escapes).
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Key<'de> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    /// Hands the key to the map visitor's own key seed.
    fn into_seed<S: DeserializeSeed<'de>, E: de::Error>(self, seed: S) -> Result<S::Value, E> {
        match self {
            Key::Borrowed(s) => seed.deserialize(de::value::BorrowedStrDeserializer::new(s)),
            Key::Owned(s) => seed.deserialize(de::value::StringDeserializer::new(s)),
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(s))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{DynamicObject, ObjectList, WatchEvent};
    use serde_json::json;

    use super::*;

    /// A ConfigMap as the server sends it, with `managedFields`.
    fn config_map() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "a", "namespace": "default", "resourceVersion": "7",
                "labels": {"managedFields": "a label, kept"},
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:k": {}}}}],
                "finalizers": ["x"]
            },
            "data": {"metadata": "not the object's", "managedFields": "kept"}
        })
    }

    /// Decodes `text` with the skip on (as inside [`skipping`]) and off.
    fn both<T: for<'de> Deserialize<'de>>(text: &str) -> (T, T) {
        SKIP.set(true);
        let skipped = serde_json::from_str(text);
        SKIP.set(false);
        (
            skipped.expect("decodes skipping"),
            serde_json::from_str(text).expect("decodes"),
        )
    }

    #[test]
    fn a_typed_object_decodes_as_the_transform_leaves_it() {
        let (skipped, whole) = both::<Unmanaged<ConfigMap>>(&config_map().to_string());
        assert!(whole.0.metadata.managed_fields.is_some());
        let mut want = whole.0;
        want.metadata.managed_fields = None;
        assert_eq!(skipped.0, want);
    }

    #[test]
    fn the_skipped_list_is_never_built() {
        // Not a list of entries: decoding it whole fails; skipping only reads past it.
        let mut v = config_map();
        v["metadata"]["managedFields"] = json!({"not": ["a", "list"]});
        let text = v.to_string();
        SKIP.set(true);
        let skipped = serde_json::from_str::<Unmanaged<ConfigMap>>(&text);
        SKIP.set(false);
        assert!(skipped.is_ok());
        assert!(serde_json::from_str::<Unmanaged<ConfigMap>>(&text).is_err());
    }

    #[test]
    fn dynamic_objects_lists_watch_events_and_escaped_keys_decode_alike() {
        let obj = config_map();
        // Escaped keys reach the key visitor as owned strings.
        let escaped = obj
            .to_string()
            .replace("\"managedFields\":[", "\"managed\\u0046ields\":[");
        let (s, w) = both::<Unmanaged<DynamicObject>>(&escaped);
        assert!(w.0.metadata.managed_fields.is_some());
        assert!(s.0.metadata.managed_fields.is_none());
        assert_eq!(s.0.data, w.0.data);
        assert_eq!(s.0.metadata.labels, w.0.metadata.labels);

        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": [obj, obj]});
        let (s, _) = both::<ObjectList<Unmanaged<ConfigMap>>>(&list.to_string());
        assert!(
            s.items
                .iter()
                .all(|o| o.0.metadata.managed_fields.is_none())
        );
        assert_eq!(s.items.len(), 2);

        // The object before its type: serde buffers it first.
        let ev = format!("{{\"object\":{obj},\"type\":\"MODIFIED\"}}");
        let (s, w) = both::<WatchEvent<Unmanaged<ConfigMap>>>(&ev);
        let (WatchEvent::Modified(s), WatchEvent::Modified(w)) = (s, w) else {
            panic!("not a MODIFIED event");
        };
        assert!(w.0.metadata.managed_fields.is_some());
        let mut want = w.0;
        want.metadata.managed_fields = None;
        assert_eq!(s.0, want);
    }
}
