//! The whole generated tree of a project state: every file `init`, `create api` and
//! `create webhook` write, as `(path, contents)`. A command updates the state, then
//! writes the tree ([`crate::files::Writer`] skips files the user changed).

use crate::project::Project;
use crate::render::{self, api_vars, fill};
use crate::render_webhook;

/// The files of `init`: they depend on the project alone (and the list of APIs).
fn project_files(p: &Project) -> Vec<(String, String)> {
    let v = render::project_vars(p);
    let t = |s: &str| fill(s, &v);
    vec![
        (
            "Cargo.toml".into(),
            t(include_str!("../templates/Cargo.toml.tmpl")),
        ),
        (
            "src/main.rs".into(),
            t(include_str!("../templates/main.rs.tmpl")),
        ),
        (
            "Dockerfile".into(),
            t(include_str!("../templates/Dockerfile.tmpl")),
        ),
        (
            "examples/envtest.rs".into(),
            t(include_str!("../templates/example_envtest.rs.tmpl")),
        ),
        (
            ".dockerignore".into(),
            t(include_str!("../templates/dockerignore.tmpl")),
        ),
        (
            ".gitignore".into(),
            t(include_str!("../templates/gitignore.tmpl")),
        ),
        (
            ".github/workflows/test.yml".into(),
            t(include_str!("../templates/github/test.yml.tmpl")),
        ),
        (
            "README.md".into(),
            t(include_str!("../templates/README.md.tmpl")),
        ),
        (
            "AGENTS.md".into(),
            t(include_str!("../templates/AGENTS.md.tmpl")),
        ),
        ("src/lib.rs".into(), lib_rs(p, &v)),
        ("src/api/mod.rs".into(), api_mod(p)),
        (
            "src/controller/mod.rs".into(),
            mods(p, false, "The controllers, one per kind."),
        ),
        (
            "src/webhook/mod.rs".into(),
            mods(p, true, "The webhooks, one module per kind that has some."),
        ),
        (
            "config/samples/kustomization.yaml".into(),
            render::samples_kustomization(p),
        ),
    ]
}

/// `src/lib.rs`: the CRDs, the manager with every setup, the samples.
fn lib_rs(p: &Project, v: &[(&'static str, String)]) -> String {
    let mut crds = Vec::new();
    let (mut setups, mut samples) = (String::new(), String::new());
    let mut env = Vec::new();
    for a in &p.apis {
        let (ver, m) = (&a.version, a.module());
        crds.push(format!("api::{ver}::{m}::{}::crd", a.kind));
        setups += &format!("    controller::{m}::setup(&mgr)?;\n");
        if a.image.is_some() {
            let c = format!("controller::{m}");
            env.push(format!(
                "({c}::IMAGE_ENV.into(), {c}::DEFAULT_IMAGE.into())"
            ));
        }
        if a.webhooks() {
            setups += &format!("    webhook::{m}::setup(&mgr)?;\n");
        }
        let api = match a.namespaced || a.image.is_some() {
            true => "kube::Api::namespaced(client.clone(), \"default\")",
            false => "kube::Api::all(client.clone())",
        };
        samples += &format!(
            "    let api: kube::Api<api::{ver}::{m}::{}> = {api};\n    \
             api.create(&Default::default(), &api::{ver}::{m}::sample()).await?;\n",
            a.kind
        );
    }
    let mut v = v.to_vec();
    v.extend([
        ("crds", crds.join(", ")),
        ("setups", setups),
        ("samples", samples),
        ("env", env.join(", ")),
    ]);
    fill(include_str!("../templates/lib.rs.tmpl"), &v)
}

/// `src/api/mod.rs` and the version modules' list.
fn api_mod(p: &Project) -> String {
    let mut s = "//! The operator's custom resources, one module per version.\n\n".to_string();
    for ver in p.versions() {
        s += &format!("pub mod {ver};\n");
    }
    s
}

/// `src/api/<version>/mod.rs`.
fn version_mod(p: &Project, version: &str) -> String {
    let mut s = format!("//! The {version} custom resources, one module per kind.\n\n");
    for a in p.apis.iter().filter(|a| a.version == version) {
        s += &format!("pub mod {};\n", a.module());
    }
    s
}

/// `src/controller/mod.rs` or (`webhooks`) `src/webhook/mod.rs`.
fn mods(p: &Project, webhooks: bool, doc: &str) -> String {
    let mut s = format!("//! {doc}\n\n");
    for a in p.apis.iter().filter(|a| !webhooks || a.webhooks()) {
        s += &format!("pub mod {};\n", a.module());
    }
    s
}

/// Every file of the project in state `p`.
pub fn files(p: &Project) -> Vec<(String, String)> {
    let mut out = project_files(p);
    for ver in p.versions() {
        out.push((format!("src/api/{ver}/mod.rs"), version_mod(p, &ver)));
    }
    for a in &p.apis {
        let (ver, m) = (&a.version, a.module());
        out.push((format!("src/api/{ver}/{m}.rs"), render::types(p, a)));
        out.push((format!("src/controller/{m}.rs"), render::controller(p, a)));
        out.push((
            format!("tests/{m}_controller.rs"),
            render::controller_test(p, a),
        ));
        out.push((
            format!("config/samples/{}", render::sample_file(p, a)),
            render::sample(p, a),
        ));
        if a.webhooks() {
            let v = api_vars(p, a);
            out.push((
                format!("src/webhook/{m}.rs"),
                render_webhook::webhook(p, a, &v),
            ));
            if a.defaulting || a.validation {
                out.push((
                    format!("tests/{m}_webhook.rs"),
                    render_webhook::webhook_test(a, &v),
                ));
            }
        }
    }
    out
}
