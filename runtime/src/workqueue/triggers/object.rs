//! The object a trigger is about, kept so that copying a trigger through the queue costs no
//! allocation and, for the common case, no reference count: the kind is interned (a
//! `&'static` pointer), a numeric resourceVersion is held as a number, and the object's name
//! is not kept at all when it is the reconciled object itself (a `For` trigger: the request
//! names it). What is left — another object's namespace and name, a resourceVersion that is
//! not a plain number, a stored trace context — is shared behind one `Arc`, built only when
//! there is something to put in it.
//!
//! Its neighbour: `super` (the trigger and the set that carry it). Sources, a layer above,
//! build one per event.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// An interned object kind (`ConfigMap`): one pointer, compared by address, never freed
/// (a process sees few kinds; each is interned once by the source that watches it).
#[derive(Clone, Copy)]
pub struct Kind(&'static String);

/// Every kind interned so far.
static KINDS: Mutex<Vec<&'static String>> = Mutex::new(Vec::new());

impl Kind {
    /// The interned `name`: the same pointer for the same name, however often asked.
    pub fn intern(name: &str) -> Self {
        let mut kinds = KINDS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = kinds.iter().find(|k| k.as_str() == name) {
            return Self(k);
        }
        let k: &'static String = Box::leak(Box::new(name.to_string()));
        kinds.push(k);
        Self(k)
    }

    /// The kind of `K` from its Rust type name (`k8s_openapi::…::ConfigMap` ->
    /// `ConfigMap`), for sources that have no dynamic type to ask.
    pub fn of_type<K>() -> Self {
        let full = std::any::type_name::<K>();
        let plain = full.split('<').next().unwrap_or(full);
        Self::intern(plain.rsplit("::").next().unwrap_or(plain))
    }

    /// The kind's name (empty when the source could not tell).
    pub fn as_str(self) -> &'static str {
        self.0.as_str()
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Kind {}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A resourceVersion held as a number: this value means "not a plain decimal number", and
/// the text is then in [`Detail::resource_version`] (empty when there is no detail).
const RV_TEXT: u64 = u64::MAX;

/// The object an event was about, as far as a trigger remembers it (see the module doc).
#[derive(Clone, PartialEq, Eq)]
pub struct ObjectRef {
    kind: Kind,
    rv: u64,
    detail: Option<Arc<Detail>>,
}

/// What an [`ObjectRef`] shares behind its `Arc` when it has any of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Detail {
    /// Namespace and name, when the object is not the reconciled one.
    named: Option<(String, String)>,
    /// The resourceVersion when it is not a plain number.
    resource_version: Option<String>,
    traceparent: Option<String>,
}

/// `rv` as [`ObjectRef::rv`] holds it: the number, or [`RV_TEXT`] and the text to keep.
fn encode_rv(rv: &str) -> (u64, Option<String>) {
    let canonical = !rv.is_empty() && (rv == "0" || !rv.starts_with('0'));
    match rv.parse::<u64>() {
        Ok(n) if canonical && n != RV_TEXT && rv.bytes().all(|b| b.is_ascii_digit()) => (n, None),
        _ if rv.is_empty() => (RV_TEXT, None),
        _ => (RV_TEXT, Some(rv.to_string())),
    }
}

impl ObjectRef {
    /// Another object than the reconciled one (what `Owns`, `Watches`, map funcs and
    /// channels trigger on): its kind, namespace (empty for cluster-scoped), name and
    /// resourceVersion.
    pub fn named(kind: Kind, namespace: &str, name: &str, resource_version: &str) -> Self {
        let (rv, text) = encode_rv(resource_version);
        let detail = Detail {
            named: Some((namespace.to_string(), name.to_string())),
            resource_version: text,
            traceparent: None,
        };
        Self {
            kind,
            rv,
            detail: Some(Arc::new(detail)),
        }
    }

    /// The reconciled object itself (a `For` trigger): its kind and resourceVersion; its
    /// namespace and name are the request's.
    pub fn reconciled(kind: Kind, resource_version: &str) -> Self {
        let (rv, text) = encode_rv(resource_version);
        let detail = text.map(|t| {
            Arc::new(Detail {
                resource_version: Some(t),
                ..Detail::default()
            })
        });
        Self { kind, rv, detail }
    }

    /// This reference with the trace context stored on the object, if any.
    pub fn with_traceparent(mut self, traceparent: Option<String>) -> Self {
        if traceparent.is_some() {
            let mut d = self
                .detail
                .take()
                .map_or_else(Detail::default, Arc::unwrap_or_clone);
            d.traceparent = traceparent;
            self.detail = Some(Arc::new(d));
        }
        self
    }

    /// Its kind (`ConfigMap`), empty when the source cannot tell.
    pub fn kind(&self) -> &'static str {
        self.kind.as_str()
    }

    /// Its namespace (empty for cluster-scoped objects), or `None` when it is the
    /// reconciled object itself (a `For` trigger: the request names it).
    pub fn namespace(&self) -> Option<&str> {
        self.ns_name().map(|(ns, _)| ns)
    }

    /// Its name, or `None` when it is the reconciled object itself (see
    /// [`ObjectRef::namespace`]).
    pub fn name(&self) -> Option<&str> {
        self.ns_name().map(|(_, n)| n)
    }

    fn ns_name(&self) -> Option<(&str, &str)> {
        let (ns, n) = self.detail.as_ref()?.named.as_ref()?;
        Some((ns, n))
    }

    /// Its resourceVersion as the event carried it (for merged triggers: the newest).
    pub fn resource_version(&self) -> Cow<'_, str> {
        if self.rv != RV_TEXT {
            return Cow::Owned(self.rv.to_string());
        }
        let text = self
            .detail
            .as_ref()
            .and_then(|d| d.resource_version.as_deref());
        Cow::Borrowed(text.unwrap_or(""))
    }

    /// The W3C trace context stored on the object (KEP-5915's `tracing.k8s.io/traceparent`
    /// annotation, or another of [`TRACEPARENT_ANNOTATIONS`]), if any.
    pub fn traceparent(&self) -> Option<&str> {
        self.detail.as_ref()?.traceparent.as_deref()
    }

    /// Whether `other` is the very same reference (what a source lends for each add of one
    /// event): compared by address and number, no string read.
    #[inline]
    pub(super) fn is(&self, other: &ObjectRef) -> bool {
        self.kind == other.kind
            && self.rv == other.rv
            && match (&self.detail, &other.detail) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }

    /// Whether `other` is about the same object (perhaps at another resourceVersion).
    #[inline]
    pub(super) fn same_object(&self, other: &ObjectRef) -> bool {
        self.kind == other.kind && self.ns_name() == other.ns_name()
    }
}

impl fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectRef")
            .field("kind", &self.kind())
            .field("named", &self.ns_name())
            .field("resource_version", &self.resource_version())
            .field("traceparent", &self.traceparent())
            .finish()
    }
}

impl fmt::Display for ObjectRef {
    /// `ConfigMap ns/name@rv`; the reconciled object itself is `ConfigMap@rv`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())?;
        if let Some((ns, name)) = self.ns_name() {
            if !self.kind().is_empty() {
                f.write_str(" ")?;
            }
            if !ns.is_empty() {
                write!(f, "{ns}/")?;
            }
            f.write_str(name)?;
        }
        let rv = self.resource_version();
        if !rv.is_empty() {
            write!(f, "@{rv}")?;
        }
        Ok(())
    }
}

/// The annotations a trigger reads a trace context from, first match wins. KEP-5915
/// (kubernetes/enhancements#5916) stores the W3C `traceparent` as
/// `tracing.k8s.io/traceparent`; projects that did this before it used names of their own:
/// sbomscanner `sbomscanner.kubewarden.io/traceparent` (kubewarden/sbomscanner#1280),
/// agent-sandbox `opentelemetry.io/trace-context` (a JSON map of W3C headers,
/// kubernetes-sigs/agent-sandbox#234), openkruise agents `agents.kruise.io/trace-context`
/// (openkruise/agents#604). A value is either a `traceparent` or such a JSON map.
pub const TRACEPARENT_ANNOTATIONS: &[&str] = &[
    "tracing.k8s.io/traceparent",
    "sbomscanner.kubewarden.io/traceparent",
    "opentelemetry.io/trace-context",
    "agents.kruise.io/trace-context",
];

/// The W3C `traceparent` stored in `annotations` under one of
/// [`TRACEPARENT_ANNOTATIONS`], if any: the value itself, or the `traceparent` entry of a
/// JSON map. Only the shape is checked (`version-traceid-spanid-flags`, 55 characters).
pub fn traceparent_from_annotations(annotations: &BTreeMap<String, String>) -> Option<String> {
    TRACEPARENT_ANNOTATIONS.iter().find_map(|name| {
        let value = annotations.get(*name)?.trim();
        let tp = if value.starts_with('{') {
            let map: BTreeMap<String, String> = serde_json::from_str(value).ok()?;
            map.get("traceparent")?.clone()
        } else {
            value.to_string()
        };
        let parts: Vec<&str> = tp.split('-').collect();
        let shaped = parts.len() == 4
            && [2, 32, 16, 2]
                .iter()
                .zip(&parts)
                .all(|(n, p)| p.len() == *n && p.bytes().all(|b| b.is_ascii_hexdigit()));
        shaped.then_some(tp)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_interned_and_come_from_type_names() {
        use k8s_openapi::api::core::v1::ConfigMap;
        assert_eq!(Kind::intern("ConfigMap"), Kind::of_type::<ConfigMap>());
        assert_ne!(Kind::intern("ConfigMap"), Kind::intern("Secret"));
        assert_eq!(
            Kind::of_type::<kube::core::PartialObjectMeta<ConfigMap>>().as_str(),
            "PartialObjectMeta"
        );
    }

    #[test]
    fn resource_versions_read_back_as_they_came() {
        let kind = Kind::intern("ConfigMap");
        for rv in [
            "",
            "0",
            "12345",
            "007",
            "18446744073709551615",
            "+1",
            "abc-1",
        ] {
            let own = ObjectRef::reconciled(kind, rv);
            assert_eq!(own.resource_version(), rv);
            assert_eq!(ObjectRef::named(kind, "ns", "a", rv).resource_version(), rv);
        }
        // A plain number needs nothing shared.
        assert!(ObjectRef::reconciled(kind, "12345").detail.is_none());
        assert!(ObjectRef::reconciled(kind, "007").detail.is_some());
    }

    #[test]
    fn references_print_compactly_and_keep_their_trace_context() {
        let kind = Kind::intern("ConfigMap");
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let named = ObjectRef::named(kind, "ns", "child", "37").with_traceparent(Some(tp.into()));
        assert_eq!(named.to_string(), "ConfigMap ns/child@37");
        assert_eq!(
            (named.name(), named.traceparent()),
            (Some("child"), Some(tp))
        );
        let own = ObjectRef::reconciled(kind, "x1").with_traceparent(Some(tp.into()));
        assert_eq!(own.to_string(), "ConfigMap@x1");
        assert_eq!((own.name(), own.traceparent()), (None, Some(tp)));
        assert!(own.same_object(&ObjectRef::reconciled(kind, "2")));
        assert!(!own.same_object(&named));
    }

    #[test]
    fn traceparents_are_read_from_every_known_annotation_shape() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let one = |k: &str, v: &str| [(k.to_string(), v.to_string())].into_iter().collect();
        assert_eq!(
            traceparent_from_annotations(&one("tracing.k8s.io/traceparent", tp)).as_deref(),
            Some(tp)
        );
        let json = format!("{{\"traceparent\":\"{tp}\"}}");
        assert_eq!(
            traceparent_from_annotations(&one("opentelemetry.io/trace-context", &json)).as_deref(),
            Some(tp)
        );
        assert_eq!(
            traceparent_from_annotations(&one("tracing.k8s.io/traceparent", "00-zz")),
            None
        );
    }
}
