//! The check that each crate's `tests/integration/main.rs` declares every file beside it:
//! a file left out compiles into nothing and its tests never run, silently. Shared by the
//! crates' integration binaries (docs/testing.md, "What the repository's tests show").

/// Panics naming each `.rs` file of `dir` (other than `main.rs`) that `dir/main.rs` does not
/// declare as a module.
pub fn assert_every_file_is_a_module(dir: &str) {
    let main = std::fs::read_to_string(format!("{dir}/main.rs")).expect("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the tests directory") {
        let name = entry
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if let Some(stem) = name.strip_suffix(".rs").filter(|s| *s != "main")
            && !main.contains(&format!("\nmod {stem};\n"))
        {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "{dir}/main.rs does not declare {missing:?}"
    );
}
