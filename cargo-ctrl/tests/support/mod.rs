//! What the tests of `cargo ctrl` share: running the binary under test, and the issue's
//! flow (`init` + `create api --image` + `create webhook`) in a directory.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The binary under test.
pub fn cargo_ctrl(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-ctrl"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run cargo-ctrl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "cargo-ctrl {args:?} failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `init` + `create api --image` + `create webhook` in `dir`, as the flow.
pub fn scaffold(dir: &Path, ctrl_path: Option<&Path>) {
    scaffold_api(dir, ctrl_path);
    create_webhook(dir);
}

/// The group, version and kind of the API.
const GVK: [&str; 6] = [
    "--group",
    "cache",
    "--version",
    "v1alpha1",
    "--kind",
    "Memcached",
];

/// `init` + `create api --image` in `dir`: the flow before its webhooks.
pub fn scaffold_api(dir: &Path, ctrl_path: Option<&Path>) {
    let mut init = vec![
        "ctrl",
        "init",
        "--domain",
        "example.com",
        "--name",
        "memcached-operator",
    ];
    if let Some(p) = ctrl_path {
        init.extend(["--ctrl-path", p.to_str().expect("utf-8 path")]);
    }
    cargo_ctrl(dir, &init);
    let mut api = vec!["ctrl", "create", "api"];
    api.extend(GVK);
    api.extend(["--image", "memcached:1.6", "--port", "11211"]);
    cargo_ctrl(dir, &api);
}

/// `create webhook --defaulting --validation` for the API in `dir`.
pub fn create_webhook(dir: &Path) {
    let mut webhook = vec!["create", "webhook"]; // invoked directly, without cargo's `ctrl`
    webhook.extend(GVK);
    webhook.extend(["--defaulting", "--validation"]);
    cargo_ctrl(dir, &webhook);
}

/// The ctrl checkout (the workspace root).
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}
