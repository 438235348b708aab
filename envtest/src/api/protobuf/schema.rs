//! The message descriptors of every built-in kind (the vendored `generated.proto` files, compiled
//! into `proto/k8s.fds`), indexed by group, version and kind, and the few places where Kubernetes' JSON
//! is not the plain field-for-field image of its protobuf message: the types with their own
//! JSON form ([`Special`]), embedded Go structs whose fields JSON inlines ([`inline`]) and field
//! names that differ ([`json_name`]), and which scalar fields are Go pointers or always written
//! ([`keeps_zero`], from `proto/presence.txt`). Everything else follows from the descriptors.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};

/// The compiled descriptor set: `proto/*.proto` compiled by protox, checked in so that a build
/// needs no proto compiler (`tests/integration/protobuf_descriptors.rs` recompiles it and compares;
/// `UPDATE_GOLDEN=1` rewrites it after `proto/vendor.sh`).
static FDS: &[u8] = include_bytes!("../../../proto/k8s.fds");

/// (group, version, kind) -> message.
type Kinds = HashMap<(String, String, String), MessageDescriptor>;

static KINDS: LazyLock<Kinds> = LazyLock::new(|| {
    // The set is compiled from files in this crate (and checked by a test), so it decodes; were it not
    // to, every protobuf body would be an unknown kind (415), never a panic.
    let pool = DescriptorPool::decode(FDS).unwrap_or_default();
    let mut kinds = HashMap::new();
    for m in pool.all_messages() {
        let pkg: Vec<&str> = m.package_name().split('.').collect();
        let [.., label, version] = pkg.as_slice() else {
            continue;
        };
        if !version.starts_with('v') {
            continue;
        }
        let key = (group_of(label), version.to_string(), m.name().to_string());
        kinds.insert(key, m);
    }
    kinds
});

/// The API group of a proto package's group segment (`api.<label>.<version>`): Go's package
/// directories are named after the group's first label.
fn group_of(label: &str) -> String {
    match label {
        "core" => String::new(),
        "apps" | "batch" | "policy" | "autoscaling" => label.to_string(),
        "rbac" => "rbac.authorization.k8s.io".into(),
        "flowcontrol" => "flowcontrol.apiserver.k8s.io".into(),
        _ => format!("{label}.k8s.io"),
    }
}

/// The message of `kind` at `api_version`; the `meta.k8s.io/v1` kinds every group version
/// serves (`Status`, `DeleteOptions`, `WatchEvent`, ...) are found at any group version, as
/// upstream registers them in each.
pub(super) fn message(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let key = |g: &str, v: &str| (g.to_string(), v.to_string(), kind.to_string());
    KINDS
        .get(&key(group, version))
        .or_else(|| KINDS.get(&key("meta.k8s.io", "v1")))
        .cloned()
}

/// A message with a JSON form of its own (upstream's custom `MarshalJSON`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Special {
    /// `metav1.Time`: RFC 3339 with seconds.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration`: Go's duration string.
    Duration,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions' `JSON`: the JSON bytes inline.
    RawJson,
    /// `JSONSchemaPropsOrArray`: a schema or an array of schemas.
    OrArray,
    /// `JSONSchemaPropsOrBool`: a schema or a boolean.
    OrBool,
    /// `JSONSchemaPropsOrStringArray`: a schema or an array of strings.
    OrStringArray,
    /// A named Go slice (`type ExtraValue []string`, `Verbs`): the message's repeated `items`.
    Slice,
}

/// The special JSON form of messages of type `m`, if it has one.
pub(super) fn special(m: &MessageDescriptor) -> Option<Special> {
    const EXT: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.";
    let s = match m.full_name() {
        "apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
        "apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
        "apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
        "apimachinery.pkg.api.resource.Quantity"
        | "apimachinery.pkg.api.resource.QuantityValue" => Special::Quantity,
        "apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "apimachinery.pkg.runtime.RawExtension" | "apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            Special::RawJson
        }
        n => match n.strip_prefix(EXT) {
            Some("JSON") => Special::RawJson,
            Some("JSONSchemaPropsOrArray") => Special::OrArray,
            Some("JSONSchemaPropsOrBool") => Special::OrBool,
            Some("JSONSchemaPropsOrStringArray") => Special::OrStringArray,
            _ if m.name() == "ExtraValue" || n == "apimachinery.pkg.apis.meta.v1.Verbs" => {
                Special::Slice
            }
            _ => return None,
        },
    };
    Some(s)
}

/// The embedded Go structs whose fields JSON inlines into the outer object (an embedded field
/// tagged `json:""` with a protobuf name, in `k8s.io/api`'s `types.go`).
const INLINE: &[&str] = &[
    "api.core.v1.Volume.volumeSource",
    "api.core.v1.PersistentVolumeSpec.persistentVolumeSource",
    "api.core.v1.Probe.handler",
    "api.core.v1.EphemeralContainer.ephemeralContainerCommon",
    "api.core.v1.SecretProjection.localObjectReference",
    "api.core.v1.ConfigMapVolumeSource.localObjectReference",
    "api.core.v1.ConfigMapProjection.localObjectReference",
    "api.core.v1.ConfigMapKeySelector.localObjectReference",
    "api.core.v1.SecretKeySelector.localObjectReference",
    "api.core.v1.ConfigMapEnvSource.localObjectReference",
    "api.core.v1.SecretEnvSource.localObjectReference",
    "api.networking.v1.IngressRule.ingressRuleValue",
    "api.admissionregistration.v1.NamedRuleWithOperations.ruleWithOperations",
    "api.admissionregistration.v1.RuleWithOperations.rule",
    "api.resource.v1.DeviceClaimConfiguration.deviceConfiguration",
    "api.resource.v1.DeviceAllocationConfiguration.deviceConfiguration",
    "api.resource.v1.DeviceClassConfiguration.deviceConfiguration",
];

/// Whether `f` is an embedded struct whose fields JSON inlines (see [`INLINE`]).
pub(super) fn inline(f: &FieldDescriptor) -> bool {
    matches!(f.kind(), Kind::Message(_)) && INLINE.contains(&f.full_name())
}

/// The JSON name of field `f`: its proto name (go-to-protobuf names fields after their JSON
/// tag), but for the few Go fields whose protobuf name was taken from the Go name, and
/// `JSONSchemaProps`' `$ref`, `$schema` and `x-kubernetes-*`.
pub(super) fn json_name(f: &FieldDescriptor) -> Cow<'_, str> {
    let name = f.name();
    let renamed = match name {
        "uID" => "uid",
        "aPIGroup" => "apiGroup",
        "Expression" => "expression",
        "Name" => "name",
        "JSONPath" => "jsonPath",
        "Webhooks" => "webhooks",
        _ => name,
    };
    if f.parent_message().full_name()
        != "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    {
        return Cow::Borrowed(renamed);
    }
    match name {
        "ref" => Cow::Borrowed("$ref"),
        "schema" => Cow::Borrowed("$schema"),
        _ => match name.strip_prefix("xKubernetes") {
            Some(rest) => Cow::Owned(format!("x-kubernetes{}", kebab(rest))),
            None => Cow::Borrowed(name),
        },
    }
}

/// `PreserveUnknownFields` -> `-preserve-unknown-fields`.
fn kebab(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `proto/presence.txt` (written by `proto/presence.py` from `k8s.io/api`'s `types.go`).
static PRESENCE_TXT: &str = include_str!("../../../proto/presence.txt");

/// `proto/presence-meta.txt`: the same for the `meta/v1` messages objects embed (`ObjectMeta`,
/// `OwnerReference`, `LabelSelector`, `Condition`, ...), read off apimachinery's `types.go` by
/// hand, so that Go's `generation: 0` in a protobuf pod template is left out as its JSON does.
static PRESENCE_META_TXT: &str = include_str!("../../../proto/presence-meta.txt");

/// Messages the presence table covers, and their fields that keep a zero value.
struct Presence {
    messages: HashSet<&'static str>,
    keep: HashSet<String>,
}

static PRESENCE: LazyLock<Presence> = LazyLock::new(|| {
    let mut p = Presence {
        messages: HashSet::new(),
        keep: HashSet::new(),
    };
    for line in PRESENCE_TXT.lines().chain(PRESENCE_META_TXT.lines()) {
        let mut parts = line.split(' ');
        let Some(msg) = parts.next().filter(|m| !m.is_empty()) else {
            continue;
        };
        p.messages.insert(msg);
        for list in parts {
            let names = list.split_once('=').map(|(_, v)| v).unwrap_or("");
            for f in names.split(',').filter(|f| !f.is_empty()) {
                p.keep.insert(format!("{msg}.{f}"));
            }
        }
    }
    p
});

/// Whether a zero value (`""`, `0`, `false`) of scalar field `f` that is present on the wire is
/// kept in JSON: `Some(true)` for Go pointers (`replicas: 0` means something) and fields Go's
/// JSON always writes (no `omitempty`), `Some(false)` for the other fields of a message the
/// presence table covers (Go's encoder writes every non-pointer field; its JSON leaves their
/// zero out), `None` for messages it does not cover.
pub(super) fn keeps_zero(f: &FieldDescriptor) -> Option<bool> {
    let p = &*PRESENCE;
    if !p.messages.contains(f.parent_message().full_name()) {
        return None;
    }
    Some(p.keep.contains(f.full_name()))
}

/// Whether the descriptors have `kind` at exactly `api_version` (no `meta.k8s.io` fallback).
#[cfg(test)]
pub(super) fn known(api_version: &str, kind: &str) -> bool {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    KINDS.contains_key(&(group.to_string(), version.to_string(), kind.to_string()))
}
