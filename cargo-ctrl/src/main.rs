//! `cargo ctrl`: kubebuilder's workflow for ctrl operators.
//!
//! ```sh
//! cargo ctrl init --domain example.com --name memcached-operator [--ctrl-path <checkout>]
//! cargo ctrl create api --group cache --version v1alpha1 --kind Memcached [--namespaced] [--image memcached:1.6 --port 11211]
//! cargo ctrl create webhook --group cache --version v1alpha1 --kind Memcached --defaulting --validation [--conversion]
//! cargo ctrl manifests
//! ```
//!
//! Installed with `cargo install --path cargo-ctrl`, cargo runs it as `cargo-ctrl ctrl
//! ...` for `cargo ctrl ...`; `cargo-ctrl ...` works too. The project's state is in
//! `.ctrl/project.json` ([`project`]); each command updates it and writes the tree it
//! implies ([`tree`]), skipping every file the user changed ([`files`]).

mod files;
mod project;
mod render;
mod render_webhook;
mod tree;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

use files::Writer;
use project::{Api, Project};

/// `cargo ctrl`: scaffolding for ctrl operators.
#[derive(Parser, Debug)]
#[command(name = "cargo-ctrl", bin_name = "cargo ctrl", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// A new operator project in the current directory.
    Init {
        /// The domain of its API groups (`<group>.<domain>`).
        #[arg(long)]
        domain: String,
        /// The operator's name (package, binary, namespace `<name>-system`).
        #[arg(long)]
        name: String,
        /// Depend on the ctrl checkout at this path instead of the released version.
        #[arg(long, value_name = "DIR")]
        ctrl_path: Option<PathBuf>,
    },
    /// Create an API or a webhook.
    #[command(subcommand)]
    Create(Create),
    /// Build and run the operator with `--write-manifests` and write `config/`.
    Manifests,
}

#[derive(Subcommand, Debug)]
enum Create {
    /// A kind: its types, reconciler, sample and test.
    Api {
        #[command(flatten)]
        gvk: Gvk,
        /// Objects live in namespaces (always with `--image`).
        #[arg(long)]
        namespaced: bool,
        /// The reconciler runs a Deployment of this image (kubebuilder's deploy-image).
        #[arg(long)]
        image: Option<String>,
        /// The container port of `--image`.
        #[arg(long, requires = "image")]
        port: Option<u16>,
    },
    /// Webhooks of a kind: defaulting, validation, conversion.
    Webhook {
        #[command(flatten)]
        gvk: Gvk,
        /// A defaulting (mutating) webhook.
        #[arg(long)]
        defaulting: bool,
        /// A validating webhook.
        #[arg(long)]
        validation: bool,
        /// A conversion webhook with this version as the hub.
        #[arg(long)]
        conversion: bool,
    },
}

/// A kind's group, version and name.
#[derive(clap::Args, Debug)]
struct Gvk {
    /// The group's first label (`cache`: API group `cache.<domain>`).
    #[arg(long)]
    group: String,
    /// The version (`v1alpha1`).
    #[arg(long)]
    version: String,
    /// The kind (`Memcached`).
    #[arg(long)]
    kind: String,
}

/// The arguments with cargo's `ctrl` (as in `cargo-ctrl ctrl init`) removed.
fn args() -> Vec<String> {
    let mut args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "ctrl") {
        args.remove(1);
    }
    args
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(args());
    let root = PathBuf::from(".");
    match run(cli.command, &root) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `cmd` in the project at `root`; returns what it did.
fn run(cmd: Cmd, root: &Path) -> Result<String, String> {
    match cmd {
        Cmd::Init {
            domain,
            name,
            ctrl_path,
        } => init(root, domain, name, ctrl_path),
        Cmd::Create(Create::Api {
            gvk,
            namespaced,
            image,
            port,
        }) => {
            let api = Api {
                group: gvk.group,
                version: gvk.version,
                kind: gvk.kind,
                namespaced: namespaced || image.is_some(),
                port: port.or(image.as_ref().map(|_| 8080)),
                image,
                ..Default::default()
            };
            create_api(root, api)
        }
        Cmd::Create(Create::Webhook {
            gvk,
            defaulting,
            validation,
            conversion,
        }) => {
            if !(defaulting || validation || conversion) {
                return Err("say which webhooks: --defaulting, --validation, --conversion".into());
            }
            let mut p = Project::load(root)?;
            let api = p
                .api_mut(&gvk.group, &gvk.version, &gvk.kind)
                .ok_or_else(|| {
                    format!(
                        "no API {}/{} {}: create it first",
                        gvk.group, gvk.version, gvk.kind
                    )
                })?;
            api.defaulting |= defaulting;
            api.validation |= validation;
            api.conversion |= conversion;
            write_tree(root, p)
        }
        Cmd::Manifests => manifests(root),
    }
}

/// Checks a name: lower-case DNS label characters.
fn check_name(what: &str, s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !s.starts_with(['-', '.']);
    ok.then_some(())
        .ok_or_else(|| format!("--{what} {s:?}: use lower-case letters, digits, '-' and '.'"))
}

fn init(
    root: &Path,
    domain: String,
    name: String,
    ctrl_path: Option<PathBuf>,
) -> Result<String, String> {
    check_name("domain", &domain)?;
    check_name("name", &name)?;
    if root.join(project::STATE_FILE).exists() {
        return Err("already a cargo ctrl project (.ctrl/project.json exists)".into());
    }
    let ctrl_path = match ctrl_path {
        Some(p) => {
            let abs = std::fs::canonicalize(&p)
                .map_err(|e| format!("--ctrl-path {}: {e}", p.display()))?;
            // Start from ctrl's lock file: the same dependency versions, so a shared
            // target dir reuses ctrl's build.
            let _ = std::fs::copy(abs.join("Cargo.lock"), root.join("Cargo.lock"));
            Some(abs.display().to_string())
        }
        None => None,
    };
    let p = Project {
        name,
        domain,
        ctrl_path,
        ..Default::default()
    };
    write_tree(root, p)
}

fn create_api(root: &Path, api: Api) -> Result<String, String> {
    let mut p = Project::load(root)?;
    let first = api
        .kind
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase());
    if !first || !api.kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("--kind {:?}: a CamelCase name", api.kind));
    }
    check_name("group", &api.group)?;
    check_name("version", &api.version)?;
    if p.apis.iter().any(|a| a.kind == api.kind) {
        return Err(format!("kind {} exists already", api.kind));
    }
    p.apis.push(api);
    write_tree(root, p)
}

/// Writes the tree of `p` under `root` and saves `p`; the report of what was written.
fn write_tree(root: &Path, mut p: Project) -> Result<String, String> {
    let files = tree::files(&p);
    let mut w = Writer::new(root, &mut p);
    for (path, contents) in &files {
        w.write(path, contents)?;
    }
    let report = w.report();
    p.save(root)?;
    Ok(report)
}

/// `cargo run -- --write-manifests <tmp>`, then the files copied into `config/`.
fn manifests(root: &Path) -> Result<String, String> {
    let mut p = Project::load(root)?;
    let tmp = root.join("target").join("ctrl-manifests");
    let _ = std::fs::remove_dir_all(&tmp);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["run", "--quiet", "--", "--write-manifests"])
        .arg(&tmp)
        .current_dir(root)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cargo run: {e}"))?;
    if !status.success() {
        return Err(format!("cargo run -- --write-manifests failed: {status}"));
    }
    let mut w = Writer::new(root, &mut p);
    for path in walk(&tmp)? {
        let rel = path.strip_prefix(&tmp).map_err(|e| e.to_string())?;
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        w.write(&rel.to_string_lossy(), &text)?;
    }
    let report = w.report();
    p.save(root)?;
    Ok(report)
}

/// Every file under `dir`, sorted.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let path = e.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            out.extend(walk(&path)?);
        } else {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}
