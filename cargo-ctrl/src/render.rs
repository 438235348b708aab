//! The generated files: templates (`templates/`, with `{{key}}` placeholders) filled in
//! from the project state ([`Project`]). Every file is a function of the whole state, so
//! re-running a command regenerates the same tree (and `src/lib.rs` lists every API).

use crate::project::{Api, Project};

/// Fills `{{key}}` placeholders of `template` with `vars`.
pub fn fill(template: &str, vars: &[(&str, String)]) -> String {
    vars.iter().fold(template.to_string(), |s, (k, v)| {
        s.replace(&format!("{{{{{k}}}}}"), v)
    })
}

/// The version of ctrl a generated project depends on when no `--ctrl-path` is given.
pub const CTRL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The project-wide placeholders.
pub(crate) fn project_vars(p: &Project) -> Vec<(&'static str, String)> {
    let ctrl_dep = match &p.ctrl_path {
        Some(path) => format!("path = {path:?}"),
        None => format!("version = \"{CTRL_VERSION}\""),
    };
    // ctrl's `webhook` feature once an API has a webhook (`create webhook`): without one the
    // operator compiles no webhook server, cert rotator or x509-parser.
    let features = match p.apis.iter().any(Api::webhooks) {
        true => ", features = [\"webhook\"]",
        false => "",
    };
    vec![
        ("name", p.name.clone()),
        ("crate", p.crate_name()),
        ("domain", p.domain.clone()),
        ("ctrl_dep", ctrl_dep),
        ("ctrl_features", features.into()),
    ]
}

/// The placeholders of one API, with the project's.
pub(crate) fn api_vars(p: &Project, a: &Api) -> Vec<(&'static str, String)> {
    let mut v = project_vars(p);
    let module = a.module();
    let namespaced = a.namespaced || a.image.is_some();
    v.extend([
        ("fqgroup", format!("{}.{}", a.group, p.domain)),
        ("group", a.group.clone()),
        ("version", a.version.clone()),
        ("kind", a.kind.clone()),
        ("module", module.clone()),
        ("image", a.image.clone().unwrap_or_default()),
        ("port", a.port.unwrap_or(8080).to_string()),
        ("image_env", format!("{}_IMAGE", a.kind.to_uppercase())),
        (
            "namespaced_attr",
            if namespaced { "\n    namespaced," } else { "" }.into(),
        ),
        (
            "sample_namespace",
            if namespaced {
                "Some(\"default\".into())"
            } else {
                "None"
            }
            .into(),
        ),
        (
            "api_ctor",
            if namespaced {
                "Api::namespaced(env.client(), \"default\")"
            } else {
                "Api::all(env.client())"
            }
            .into(),
        ),
    ]);
    v
}

const SPEC_PLAIN: &str =
    "    /// An example field: change it (and the reconciler), then `cargo ctrl manifests`.
    #[serde(default, skip_serializing_if = \"Option::is_none\")]
    pub foo: Option<String>,
";

const SPEC_IMAGE: &str = "    /// How many replicas of the image to run (default 1).
    #[serde(default, skip_serializing_if = \"Option::is_none\")]
    pub size: Option<i32>,
    /// The container port of the image (default the controller's `DEFAULT_PORT`).
    #[serde(default, skip_serializing_if = \"Option::is_none\")]
    pub container_port: Option<i32>,
";

/// `src/api/<version>/<kind>.rs`.
pub fn types(p: &Project, a: &Api) -> String {
    let mut v = api_vars(p, a);
    let fields = if a.image.is_some() {
        SPEC_IMAGE
    } else {
        SPEC_PLAIN
    };
    v.push(("spec_fields", fields.into()));
    fill(include_str!("../templates/types.rs.tmpl"), &v)
}

/// `src/controller/<kind>.rs`.
pub fn controller(p: &Project, a: &Api) -> String {
    let t = match a.image {
        Some(_) => include_str!("../templates/controller_image.rs.tmpl"),
        None => include_str!("../templates/controller.rs.tmpl"),
    };
    fill(t, &api_vars(p, a))
}

/// `config/samples/<group>_<version>_<kind>.yaml`.
pub fn sample(p: &Project, a: &Api) -> String {
    let mut v = api_vars(p, a);
    let spec = if a.image.is_some() {
        "\n  size: 1\n"
    } else {
        "{}\n"
    };
    v.push(("sample_spec", spec.into()));
    fill(include_str!("../templates/sample.yaml.tmpl"), &v)
}

/// The sample's file name under `config/samples/`.
pub fn sample_file(p: &Project, a: &Api) -> String {
    let _ = p;
    format!("{}_{}_{}.yaml", a.group, a.version, a.module())
}

/// `config/samples/kustomization.yaml`.
pub fn samples_kustomization(p: &Project) -> String {
    let mut s = "## Append samples of your project ##\nresources:\n".to_string();
    for a in &p.apis {
        s += &format!("- {}\n", sample_file(p, a));
    }
    s
}

/// `tests/<kind>_controller.rs`.
pub fn controller_test(p: &Project, a: &Api) -> String {
    fill(
        include_str!("../templates/test_controller.rs.tmpl"),
        &api_vars(p, a),
    )
}
