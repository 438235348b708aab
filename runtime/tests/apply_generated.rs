//! The generator of the built-in apply configurations (`runtime/src/client/apply/generated.rs`),
//! and the check that the checked-in file is what it generates today.
//!
//! It reads k8s-openapi's schemas (its `schemars` impls, offline, as ctrl-envtest's OpenAPI
//! documents do), walks every type the roots reference, and writes one `XApply` struct per
//! object type — every field an `Option`, skipped when unset, with its JSON name — plus
//! builder methods and the `ApplyConfiguration` impl of the k8s-openapi type. Types without
//! properties (`Quantity`, `Time`, `IntOrString`, `FieldsV1`) stay k8s-openapi's own. The
//! roots also get `new(name, namespace)` and `ObjectApply`. k8s-openapi's schemas carry no
//! `x-kubernetes-list-map-keys`, so the list-map keys come from [`LIST_MAP_KEYS`] (upstream's
//! `+listMapKey` markers in `k8s.io/api`'s `types.go`).
//!
//! Regenerate: `CTRL_BLESS=1 cargo test -p ctrl-runtime --test apply_generated`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use k8s_openapi::api::{apps, batch, core, rbac};
use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

const GENERATED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/client/apply/generated.rs");

/// (object type, list field) -> the keys of its items (upstream's `+listType=map`).
const LIST_MAP_KEYS: &[(&str, &str, &[&str])] = &[
    ("PodSpec", "containers", &["name"]),
    ("PodSpec", "initContainers", &["name"]),
    ("PodSpec", "ephemeralContainers", &["name"]),
    ("PodSpec", "volumes", &["name"]),
    ("PodSpec", "imagePullSecrets", &["name"]),
    ("PodSpec", "hostAliases", &["ip"]),
    ("PodSpec", "resourceClaims", &["name"]),
    (
        "PodSpec",
        "topologySpreadConstraints",
        &["topologyKey", "whenUnsatisfiable"],
    ),
    ("Container", "ports", &["containerPort", "protocol"]),
    ("Container", "env", &["name"]),
    ("Container", "volumeMounts", &["mountPath"]),
    ("Container", "volumeDevices", &["devicePath"]),
    ("Container", "resizePolicy", &["resourceName"]),
    ("ServiceSpec", "ports", &["port", "protocol"]),
    ("ObjectMeta", "ownerReferences", &["uid"]),
];

/// The roots: schema name -> (apiVersion, kind).
fn roots(generator: &mut SchemaGenerator) -> BTreeMap<String, (String, String)> {
    fn add<K: k8s_openapi::Resource + JsonSchema>(
        g: &mut SchemaGenerator,
        out: &mut BTreeMap<String, (String, String)>,
    ) {
        g.subschema_for::<K>();
        out.insert(
            K::schema_name().into_owned(),
            (K::API_VERSION.into(), K::KIND.into()),
        );
    }
    let mut out = BTreeMap::new();
    let g = generator;
    add::<apps::v1::Deployment>(g, &mut out);
    add::<apps::v1::StatefulSet>(g, &mut out);
    add::<core::v1::Service>(g, &mut out);
    add::<core::v1::ConfigMap>(g, &mut out);
    add::<core::v1::Secret>(g, &mut out);
    add::<core::v1::Pod>(g, &mut out);
    add::<core::v1::ServiceAccount>(g, &mut out);
    add::<batch::v1::Job>(g, &mut out);
    add::<rbac::v1::Role>(g, &mut out);
    add::<rbac::v1::RoleBinding>(g, &mut out);
    out
}

/// `io.k8s.api.apps.v1.DeploymentSpec` -> (`apps::v1`, `DeploymentSpec`).
fn split(schema: &str) -> (String, String) {
    let parts: Vec<&str> = schema.split('.').collect();
    let n = parts.len();
    (
        format!("{}::{}", parts[n - 3], parts[n - 2]),
        parts[n - 1].to_string(),
    )
}

/// The k8s-openapi path of a schema name.
fn openapi_path(schema: &str) -> String {
    format!(
        "k8s_openapi::{}",
        schema.trim_start_matches("io.k8s.").replace('.', "::")
    )
}

/// The Rust field name of a JSON name (`externalIPs` -> `external_ips`).
fn snake(json: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in json.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_lowercase());
    }
    match out.as_str() {
        "type" | "ref" | "override" | "continue" | "final" | "async" | "await" | "static" => {
            format!("r#{out}")
        }
        _ => out,
    }
}

struct Gen<'a> {
    defs: &'a Map<String, Value>,
}

impl Gen<'_> {
    fn is_object(&self, schema: &str) -> bool {
        self.defs
            .get(schema)
            .and_then(|d| d.get("properties"))
            .is_some()
    }

    fn reference(p: &Value) -> Option<&str> {
        let r = p
            .get("$ref")
            .or_else(|| p.get("allOf")?.get(0)?.get("$ref"))?;
        r.as_str()?.rsplit('/').next()
    }

    /// The Rust type of a property's apply form.
    fn ty(&self, p: &Value) -> String {
        if let Some(r) = Self::reference(p) {
            return match self.is_object(r) {
                true => {
                    let (module, name) = split(r);
                    format!("crate::client::apply::{module}::{name}Apply")
                }
                false => openapi_path(r),
            };
        }
        let format = p.get("format").and_then(Value::as_str);
        match (p.get("type").and_then(Value::as_str), format) {
            (Some("string"), Some("byte")) => "k8s_openapi::ByteString".into(),
            (Some("string"), _) => "String".into(),
            (Some("integer"), Some("int64")) => "i64".into(),
            (Some("integer"), _) => "i32".into(),
            (Some("number"), _) => "f64".into(),
            (Some("boolean"), _) => "bool".into(),
            (Some("array"), _) => format!("Vec<{}>", self.ty(&p["items"])),
            (Some("object"), _) if p.get("additionalProperties").is_some() => {
                format!(
                    "std::collections::BTreeMap<String, {}>",
                    self.ty(&p["additionalProperties"])
                )
            }
            _ => "serde_json::Value".into(),
        }
    }
}

/// The first sentence of a description, as one doc line.
fn first_sentence(p: &Value) -> String {
    let d = p
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let end = d.find(". ").map(|i| i + 1).unwrap_or(d.len());
    d[..end]
        .replace('\n', " ")
        .replace('[', "\\[")
        .replace(']', "\\]")
}

fn list_map_keys(owner: &str, field: &str) -> Option<&'static [&'static str]> {
    LIST_MAP_KEYS
        .iter()
        .find(|(o, f, _)| *o == owner && *f == field)
        .map(|(_, _, k)| *k)
}

/// The struct of one object schema and its builder methods.
fn object(g: &Gen<'_>, schema: &str, root: Option<&(String, String)>) -> String {
    let def = &g.defs[schema];
    let (_, name) = split(schema);
    let props = def["properties"].as_object().cloned().unwrap_or_default();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/// `{schema}` with every field optional (server-side apply)."
    );
    let _ = writeln!(
        s,
        "#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]"
    );
    let _ = writeln!(s, "pub struct {name}Apply {{");
    for (json, p) in &props {
        let _ = writeln!(s, "    /// {}", first_sentence(p));
        let _ = writeln!(
            s,
            "    #[serde(rename = \"{json}\", default, skip_serializing_if = \"Option::is_none\")]"
        );
        let _ = writeln!(s, "    pub {}: Option<{}>,", snake(json), g.ty(p));
    }
    let _ = writeln!(s, "}}\n\nimpl {name}Apply {{");
    if let Some((api_version, kind)) = root {
        s.push_str(&constructor(api_version, kind));
    }
    for (json, p) in &props {
        s.push_str(&builder(&name, json, &g.ty(p)));
    }
    let _ = writeln!(s, "}}\n");
    let _ = writeln!(
        s,
        "impl crate::client::apply::ApplyConfiguration for {} {{\n    type Apply = {name}Apply;\n}}\n",
        openapi_path(schema)
    );
    if root.is_some() {
        let _ = writeln!(
            s,
            "impl crate::client::apply::ObjectApply for {name}Apply {{\n    type Resource = {};\n\n    fn metadata(&self) -> Option<&crate::client::apply::meta::v1::ObjectMetaApply> {{\n        self.metadata.as_ref()\n    }}\n}}\n",
            openapi_path(schema)
        );
    }
    s
}

fn constructor(api_version: &str, kind: &str) -> String {
    format!(
        "    /// A `{kind}` named `name` in `namespace` (client-go's `{kind}(name, namespace)`).
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> Self {{
        Self {{
            api_version: Some(\"{api_version}\".into()),
            kind: Some(\"{kind}\".into()),
            metadata: Some(crate::client::apply::meta::v1::ObjectMetaApply {{
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }}),
            ..Default::default()
        }}
    }}

"
    )
}

/// The builder method of one field: set it, or add to a list or a map.
fn builder(owner: &str, json: &str, ty: &str) -> String {
    let field = snake(json);
    if let Some(item) = ty.strip_prefix("Vec<").and_then(|t| t.strip_suffix('>')) {
        let keys = match list_map_keys(owner, json) {
            Some(k) => format!(
                " A list-map keyed by `{}`: each item sets its keys.",
                k.join("`, `")
            ),
            None => String::new(),
        };
        return format!(
            "    /// Adds to `{json}`.{keys}
    pub fn {field}(mut self, items: impl IntoIterator<Item = {item}>) -> Self {{
        self.{field}.get_or_insert_with(Vec::new).extend(items);
        self
    }}

"
        );
    }
    if let Some(value) = ty
        .strip_prefix("std::collections::BTreeMap<String, ")
        .and_then(|t| t.strip_suffix('>'))
    {
        return format!(
            "    /// Adds to `{json}`.
    pub fn {field}<K: Into<String>>(mut self, entries: impl IntoIterator<Item = (K, {value})>) -> Self {{
        let map = self.{field}.get_or_insert_with(Default::default);
        map.extend(entries.into_iter().map(|(k, v)| (k.into(), v)));
        self
    }}

"
        );
    }
    let (arg, conv) = match ty {
        "String" => ("impl Into<String>".to_string(), ".into()"),
        _ => (ty.to_string(), ""),
    };
    format!(
        "    /// Sets `{json}`.
    pub fn {field}(mut self, value: {arg}) -> Self {{
        self.{field} = Some(value{conv});
        self
    }}

"
    )
}

/// Every object schema reachable from the roots, by module.
fn reachable(g: &Gen<'_>, roots: &BTreeMap<String, (String, String)>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.keys().cloned().collect();
    while let Some(s) = todo.pop() {
        if !g.is_object(&s) || !seen.insert(s.clone()) {
            continue;
        }
        let mut refs = Vec::new();
        collect_refs(&g.defs[&s], &mut refs);
        todo.extend(refs);
    }
    seen
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                out.extend(r.rsplit('/').next().map(str::to_string));
            }
            m.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

fn generate() -> String {
    let mut generator = SchemaGenerator::new(SchemaSettings::openapi3());
    let roots = roots(&mut generator);
    let defs = generator.take_definitions(true);
    let g = Gen { defs: &defs };
    let mut modules: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for schema in reachable(&g, &roots) {
        let (module, _) = split(&schema);
        modules
            .entry(module)
            .or_default()
            .push(object(&g, &schema, roots.get(&schema)));
    }
    let mut out = String::from(
        "//! The built-in apply configurations, generated by `runtime/tests/apply_generated.rs` from\n\
         //! k8s-openapi's schemas. Do not edit: `CTRL_BLESS=1 cargo test -p ctrl-runtime --test\n\
         //! apply_generated` rewrites it.\n\n\
         // Field names are upstream's: `Capabilities` has a list `add`.\n\
         #![allow(clippy::should_implement_trait)]\n\n",
    );
    let mut by_group: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for (module, items) in modules {
        let (group, version) = module.split_once("::").expect("group::version");
        by_group
            .entry(group.into())
            .or_default()
            .push((version.into(), items));
    }
    for (group, versions) in by_group {
        // `meta` is what every object's configuration (and `#[derive(ApplyConfiguration)]`)
        // names; the built-in kinds compile only with the `apply-configurations` feature.
        let gate = if group == "meta" {
            ""
        } else {
            "#[cfg(feature = \"apply-configurations\")]\n"
        };
        let _ = writeln!(
            out,
            "/// Apply configurations of the `{group}` API group.\n{gate}pub mod {group} {{"
        );
        for (version, items) in versions {
            let _ = writeln!(out, "/// `{group}/{version}`.\npub mod {version} {{");
            out.push_str(&items.concat());
            let _ = writeln!(out, "}}");
        }
        let _ = writeln!(out, "}}\n");
    }
    out
}

#[test]
fn the_checked_in_apply_configurations_are_generated_from_k8s_openapi() {
    let want = generate();
    if std::env::var_os("CTRL_BLESS").is_some() {
        std::fs::write(GENERATED, &want).expect("write generated.rs");
        let status = std::process::Command::new("rustfmt")
            .args(["--edition", "2024", GENERATED])
            .status()
            .expect("rustfmt");
        assert!(status.success(), "rustfmt failed");
        return;
    }
    let have = std::fs::read_to_string(GENERATED).expect("read generated.rs");
    let formatted = rustfmt(&want);
    assert!(
        have == formatted,
        "{GENERATED} is stale: CTRL_BLESS=1 cargo test -p ctrl-runtime --test apply_generated"
    );
}

/// `src` as rustfmt writes it.
fn rustfmt(src: &str) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("rustfmt");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(src.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("rustfmt output");
    String::from_utf8(out.stdout).expect("utf-8")
}
