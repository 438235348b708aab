//! The layering rule of `runtime/src` (issue 28), checked from the source text: the layer
//! order drawn in `src/lib.rs` names exactly the top-level modules, every import (and every
//! `crate::` path in a doc comment) points down that order, no two files of a module import
//! each other in a circle (in code), and no function is over 80 lines. Run with `--nocapture` to see
//! the module graph and the longest functions.

mod layers_common;

use std::path::{Path, PathBuf};

use layers_common as check;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn declared() -> Vec<String> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("lib.rs");
    check::declared_layers(&lib)
}

#[test]
fn the_layer_diagram_names_the_real_modules() {
    let files = check::read(&src_dir());
    let real: std::collections::BTreeSet<String> = check::top_graph(&files).into_keys().collect();
    let layers = declared();
    let drawn: std::collections::BTreeSet<String> = layers.iter().cloned().collect();
    assert_eq!(
        drawn.len(),
        layers.len(),
        "a module drawn twice: {layers:?}"
    );
    assert_eq!(drawn, real, "lib.rs's layer diagram against src/");
}

#[test]
fn imports_point_down_the_layers() {
    let graph = check::top_graph(&check::read(&src_dir()));
    let layers = declared();
    for module in &layers {
        let deps: Vec<&str> = graph
            .get(module)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        println!("  {module} -> {}", deps.join(" "));
    }
    let knots = check::knots(&graph);
    assert!(knots.is_empty(), "modules in import cycles: {knots:?}");
    let up = check::upward_imports(&graph, &layers);
    assert!(
        up.is_empty(),
        "imports that do not point down the layers of lib.rs: {up:?}"
    );
}

#[test]
fn no_file_imports_in_a_circle() {
    let files = check::read(&src_dir());
    let circles = check::file_circles(&files);
    let graph = check::file_graph(&files, false);
    for circle in &circles {
        for node in circle {
            let deps = graph[node].iter().filter(|d| circle.contains(d));
            println!(
                "  {node} -> {}",
                deps.cloned().collect::<Vec<_>>().join(" ")
            );
        }
    }
    assert!(
        circles.is_empty(),
        "files importing each other in a circle: {circles:?}"
    );
}

#[test]
fn functions_fit_on_a_screen() {
    let long = check::long_functions(&check::read(&src_dir()));
    for (file, name, line, len) in &long {
        println!("  {len:4} {file}:{line} {name}");
    }
    assert!(
        long.is_empty(),
        "{} functions over {} lines: {long:?}",
        long.len(),
        check::MAX_FN_LINES
    );
}

#[test]
fn the_checker_sees_paths_circles_and_order() {
    let module = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let code = check::strip(
        "use crate::{b::X, c::{self, d::Y}};\nuse super::e::Z;\n",
        true,
    );
    let refs = check::references(&code, &module(&["a", "f"]));
    let want: Vec<Vec<String>> = vec![
        module(&["b", "X"]),
        module(&["c"]),
        module(&["c", "d", "Y"]),
        module(&["a", "e", "Z"]),
    ];
    assert_eq!(refs, want);
    let lib = "//! x\n//! ```text\n//! top/   the top\n//! leaf   the leaf\n//! ```\n";
    assert_eq!(check::declared_layers(lib), module(&["top", "leaf"]));
    let mut g = std::collections::BTreeMap::new();
    g.insert("top".to_string(), ["leaf".to_string()].into());
    g.insert("leaf".to_string(), ["top".to_string()].into());
    assert_eq!(
        check::upward_imports(&g, &module(&["top", "leaf"])),
        vec![("leaf".to_string(), "top".to_string())]
    );
    let file = |rel: &str, m: &[&str], text: &str| check::File {
        rel: rel.into(),
        module: module(m),
        code: check::strip(text, true),
        bare: check::strip(text, false),
    };
    let files = [
        file("a/mod.rs", &["a"], "use b::X;"),
        file("a/b.rs", &["a", "b"], "use super::c::Y; use super::Z;"),
        file("a/c.rs", &["a", "c"], "use crate::a::b::X;"),
    ];
    assert_eq!(check::file_circles(&files), vec![module(&["a::b", "a::c"])]);
}
