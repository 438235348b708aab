//! The layering checker: reads a crate's `src` as text (nothing is compiled) and reports what
//! breaks its declared layer order. Shared by every crate that declares one:
//!
//! ```ignore
//! // in another crate's tests/integration/main.rs; its layers.rs says `use crate::check;`
//! #[path = "../../../envtest/tests/layers/check.rs"]
//! mod check;
//!
//! /// Top-level modules of `src`, highest layer first; a line naming several modules holds peers.
//! const LAYERS: &[&str] = &["env", "controllers", "server", "api faults"];
//!
//! fn report() -> check::Report {
//!     let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
//!     check::check(&src, LAYERS)
//! }
//!
//! // the three tests: layers, no file circle, functions that fit ([`layer_tests`])
//! check::layer_tests!(report());
//! ```
//!
//! [`check`]`(src, LAYERS)` reads every `.rs` file under `src` and returns a [`Report`]; its
//! `assert_*` methods print what they measure (run with `--nocapture`) and panic on a breach:
//!
//! * [`Report::assert_layers`] — every top-level module is in `LAYERS` and every name in
//!   `LAYERS` is a module; a file's reference to another top-level module points to a strictly
//!   lower layer (peers on one line may not import each other); no import cycle between
//!   top-level modules.
//! * [`Report::assert_no_file_circle`] — no circle between files (a file is a module: `a/b.rs`
//!   is `a::b`, `a/mod.rs` is `a`); a path to a name that a `mod.rs` re-exports (`pub use`) is
//!   a reference to the file that defines it, and a `mod.rs`'s references to the files of its
//!   own folder are no edges (it is the folder's face: the files below may use its types).
//! * [`Report::assert_functions_fit`] — no `fn` body longer than [`MAX_FN_LINES`] lines (from the
//!   `fn` line to the closing brace).
//!
//! [`diagram`] reads the module names of a layer diagram (a ```` ```text ```` block in a doc
//! comment or a Markdown file), so a test can compare it with `LAYERS`.
//!
//! A reference is a path starting `crate::`, `super::`, `self::` or with the name of a module the
//! file declares (`mod x;`), in code and in `use` trees; comments, doc comments and string
//! literals are not code (a module's doc may name the layer above it). `super::` inside an
//! inline `mod tests { .. }` climbs from that inline module. `lib.rs` (the root that declares every module) and `bin/` (crates of their own)
//! are no nodes of the graphs; their functions are measured.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest function the rule allows.
pub const MAX_FN_LINES: usize = 80;

/// A module path from the crate root (`["registry", "rest"]`).
pub type ModPath = Vec<String>;

/// What [`check`] found in one crate.
pub struct Report {
    /// The declared layers, highest first, each the set of its peer modules.
    pub layers: Vec<Vec<String>>,
    /// Top-level module → the top-level modules its files refer to.
    pub modules: BTreeMap<String, BTreeSet<String>>,
    /// File module → the file modules it refers to.
    pub files: BTreeMap<ModPath, BTreeSet<ModPath>>,
    /// (file, fn name, first line, lines) of every function with a body.
    pub functions: Vec<(String, String, usize, usize)>,
}

/// Reads every `.rs` file under `src` and measures it against `layers` (top-level module names,
/// highest layer first; one entry may name several peers separated by spaces).
pub fn check(src: &Path, layers: &[&str]) -> Report {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    let mut functions = Vec::new();
    let mut sources = BTreeMap::new();
    for path in paths {
        let rel = path.strip_prefix(src).expect("under src").to_path_buf();
        let text = fs::read_to_string(&path).expect("readable source");
        let shown = rel.display().to_string();
        functions.extend(
            function_lengths(&strip(&text, false))
                .into_iter()
                .map(|(name, line, len)| (shown.clone(), name, line, len)),
        );
        if rel.starts_with("bin") {
            continue;
        }
        sources.insert(module_path(&rel), strip(&text, false));
    }
    let files = file_graph(&sources);
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in &files {
        let Some(top) = from.first() else { continue };
        let deps = modules.entry(top.clone()).or_default();
        deps.extend(
            tos.iter()
                .filter_map(|t| t.first())
                .filter(|t| *t != top)
                .cloned(),
        );
    }
    let layers = layers
        .iter()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    Report {
        layers,
        modules,
        files,
        functions,
    }
}

impl Report {
    /// The index of `module`'s layer (0 = highest), if declared.
    pub fn layer_of(&self, module: &str) -> Option<usize> {
        self.layers
            .iter()
            .position(|l| l.iter().any(|m| m == module))
    }

    /// Every declared module, in `LAYERS` order.
    pub fn declared(&self) -> Vec<String> {
        self.layers.iter().flatten().cloned().collect()
    }

    /// Modules of `src` missing from the layers, and names in the layers that are no module.
    pub fn undeclared(&self) -> (Vec<String>, Vec<String>) {
        let declared: BTreeSet<String> = self.declared().into_iter().collect();
        let real: BTreeSet<String> = self.modules.keys().cloned().collect();
        (
            real.difference(&declared).cloned().collect(),
            declared.difference(&real).cloned().collect(),
        )
    }

    /// (file, referenced file) pairs whose target is not in a strictly lower layer.
    pub fn upward(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (from, tos) in &self.files {
            let Some(lf) = self.layer_of(&from[0]) else {
                continue;
            };
            for to in tos.iter().filter(|t| t[0] != from[0]) {
                if self.layer_of(&to[0]).is_some_and(|lt| lt <= lf) {
                    out.push((from.join("::"), to.join("::")));
                }
            }
        }
        out
    }

    /// Prints the module graph by layer and panics on an undeclared module, an upward or
    /// sideways reference, or a cycle between top-level modules.
    pub fn assert_layers(&self) {
        for (n, layer) in self.layers.iter().enumerate() {
            for m in layer {
                let deps = self.modules.get(m).into_iter().flatten();
                let deps: Vec<&str> = deps.map(String::as_str).collect();
                println!("{n:2} {m} -> {}", deps.join(" "));
            }
        }
        let (missing, unknown) = self.undeclared();
        assert!(missing.is_empty(), "modules not in LAYERS: {missing:?}");
        assert!(
            unknown.is_empty(),
            "LAYERS names no such module: {unknown:?}"
        );
        let upward = self.upward();
        for (from, to) in &upward {
            println!("up: {from} -> {to}");
        }
        assert!(
            upward.is_empty(),
            "{} references not pointing down the layers: {upward:?}",
            upward.len()
        );
        let knots = knots(&self.modules);
        assert!(
            knots.is_empty(),
            "top-level modules in import cycles: {knots:?}"
        );
    }

    /// Panics on a circle between files.
    pub fn assert_no_file_circle(&self) {
        let graph: BTreeMap<String, BTreeSet<String>> = self
            .files
            .iter()
            .map(|(f, tos)| (f.join("::"), tos.iter().map(|t| t.join("::")).collect()))
            .collect();
        let knots = knots(&graph);
        println!("{} files, {} file circles", graph.len(), knots.len());
        for knot in &knots {
            println!("circle: {}", knot.join(", "));
            for from in knot {
                let tos = graph[from].iter().filter(|t| knot.contains(t));
                println!(
                    "    {from} -> {}",
                    tos.cloned().collect::<Vec<_>>().join(" ")
                );
            }
        }
        assert!(knots.is_empty(), "files in import circles: {knots:?}");
    }

    /// Prints the functions over [`MAX_FN_LINES`] lines and panics if there is one.
    pub fn assert_functions_fit(&self) {
        let mut long: Vec<_> = self
            .functions
            .iter()
            .filter(|f| f.3 > MAX_FN_LINES)
            .collect();
        long.sort_by_key(|f| std::cmp::Reverse(f.3));
        println!(
            "{} functions, {} over {MAX_FN_LINES} lines",
            self.functions.len(),
            long.len()
        );
        for (file, name, line, len) in &long {
            println!("  {len:4} {file}:{line} {name}");
        }
        assert!(
            long.is_empty(),
            "{} functions over {MAX_FN_LINES} lines: {long:?}",
            long.len()
        );
    }
}

/// The module names of the first ```` ```text ```` block after the line containing `heading` in
/// `text` (a Markdown file or Rust source whose `//!` prefixes are dropped): the first word of
/// each line that does not start with a space, a trailing `/` or `.rs` removed.
pub fn diagram(text: &str, heading: &str) -> Vec<String> {
    let lines = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix("//!") {
            Some(rest) => rest.strip_prefix(' ').unwrap_or(rest),
            None => l,
        });
    let mut lines = lines.skip_while(|l| !l.contains(heading));
    let mut lines = lines
        .by_ref()
        .skip_while(|l| !l.trim_start().starts_with("```text"));
    lines.next();
    lines
        .take_while(|l| !l.trim_start().starts_with("```"))
        .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.trim_end_matches('/').trim_end_matches(".rs").to_string())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file relative to `src`: `a.rs` → `[a]`, `a/mod.rs` → `[a]`,
/// `a/b.rs` → `[a, b]`, `lib.rs` → `[]`.
pub fn module_path(rel: &Path) -> ModPath {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") || segs == ["lib"] || segs == ["main"] {
        segs.pop();
    }
    segs
}

/// Source text with comments and string/char literal contents blanked (newlines kept), so that
/// braces and paths are counted only in code. Doc comments are kept when `keep_docs`.
pub fn strip(src: &str, keep_docs: bool) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        i = if c == '/' && next == Some('/') {
            line_comment(&b, i, keep_docs, &mut out)
        } else if c == '/' && next == Some('*') {
            block_comment(&b, i, &mut out)
        } else if let Some(end) = raw_string(&b, i, &mut out) {
            end
        } else if c == '"' {
            string(&b, i, &mut out)
        } else if let Some(end) = char_literal(&b, i, &mut out) {
            end
        } else {
            out.push(c);
            i + 1
        };
    }
    out
}

fn blank(c: char) -> char {
    if c == '\n' { '\n' } else { ' ' }
}

fn line_comment(b: &[char], mut i: usize, keep_docs: bool, out: &mut String) -> usize {
    let is_doc = matches!(b.get(i + 2), Some('/') | Some('!'));
    while i < b.len() && b[i] != '\n' {
        out.push(if keep_docs && is_doc { b[i] } else { ' ' });
        i += 1;
    }
    i
}

fn block_comment(b: &[char], mut i: usize, out: &mut String) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i] == '/' && b.get(i + 1) == Some(&'*') {
            depth += 1;
            out.push_str("  ");
            i += 2;
        } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
            depth -= 1;
            out.push_str("  ");
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            out.push(blank(b[i]));
            i += 1;
        }
    }
    i
}

/// `r"…"` / `r#"…"#` at `i`: blanked, returning the index after it.
fn raw_string(b: &[char], i: usize, out: &mut String) -> Option<usize> {
    let ident_before = i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_');
    if b[i] != 'r' || ident_before || !matches!(b.get(i + 1), Some('"') | Some('#')) {
        return None;
    }
    let mut j = i + 1;
    let mut hashes = 0;
    while b.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&'"') {
        return None;
    }
    out.push_str(&" ".repeat(hashes + 1));
    out.push('"');
    j += 1;
    while j < b.len() {
        if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
            out.push('"');
            out.push_str(&" ".repeat(hashes));
            return Some(j + 1 + hashes);
        }
        out.push(blank(b[j]));
        j += 1;
    }
    Some(j)
}

fn string(b: &[char], mut i: usize, out: &mut String) -> usize {
    out.push('"');
    i += 1;
    while i < b.len() && b[i] != '"' {
        if b[i] == '\\' {
            out.push(' ');
            i += 1;
        }
        if i < b.len() {
            out.push(blank(b[i]));
            i += 1;
        }
    }
    out.push('"');
    i + 1
}

/// A char literal (`'x'`, `'\n'`, `'\u{..}'`) at `i`, blanked; a lifetime (`'a`) is none.
fn char_literal(b: &[char], i: usize, out: &mut String) -> Option<usize> {
    if b[i] != '\'' {
        return None;
    }
    let end = if b.get(i + 1) == Some(&'\\') {
        (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')?
    } else if b.get(i + 2) == Some(&'\'') {
        i + 2
    } else {
        return None;
    };
    out.push('\'');
    out.push_str(&" ".repeat(end - i - 1));
    out.push('\'');
    Some(end + 1)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// One file's view of paths: its module, the inline modules in it (name, `{`, `}` offsets in
/// chars), the modules it declares (`mod x;`), and the names its `use` items bind.
struct FileScope {
    module: ModPath,
    inline: Vec<(String, usize, usize)>,
    children: BTreeSet<String>,
}

impl FileScope {
    fn new(module: &[String], code: &[char]) -> Self {
        let mut inline = Vec::new();
        let mut children = BTreeSet::new();
        let mut i = 0;
        while let Some(at) = find_word(code, i, "mod") {
            let mut j = skip_ws(code, at + 3);
            let name: String = code[j..].iter().take_while(|c| is_ident(**c)).collect();
            j = skip_ws(code, j + name.len());
            match code.get(j) {
                Some(';') if !name.is_empty() => {
                    children.insert(name);
                }
                Some('{') if !name.is_empty() => {
                    inline.push((name, j, matching_brace(code, j)));
                }
                _ => {}
            }
            i = at + 3;
        }
        FileScope {
            module: module.to_vec(),
            inline,
            children,
        }
    }

    /// The module the code at `at` is in (the file's, or an inline module inside it).
    fn module_at(&self, at: usize) -> ModPath {
        let mut m = self.module.clone();
        m.extend(
            self.inline
                .iter()
                .filter(|(_, open, close)| *open < at && at < *close)
                .map(|(n, _, _)| n.clone()),
        );
        m
    }
}

fn skip_ws(code: &[char], mut i: usize) -> usize {
    while code.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

fn matching_brace(code: &[char], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, c) in code.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The next occurrence of the identifier `word` from `from`, not part of a longer identifier
/// nor the tail of a path (`a::word`) or a macro variable (`$word`).
fn find_word(code: &[char], from: usize, word: &str) -> Option<usize> {
    let w: Vec<char> = word.chars().collect();
    (from..code.len().saturating_sub(w.len() - 1)).find(|&i| {
        code[i..i + w.len()] == w[..]
            && !code.get(i + w.len()).is_some_and(|c| is_ident(*c))
            && (i == 0 || !(is_ident(code[i - 1]) || code[i - 1] == '$' || code[i - 1] == ':'))
    })
}

/// A use tree (or a plain path) at `i`: every path it names with the name it binds (the alias,
/// the last segment, or `*`), and the index after it. `a::{b, c::d as e, f::*}` →
/// `[a,b] b`, `[a,c,d] e`, `[a,f] *`.
fn use_tree(code: &[char], mut i: usize) -> (Vec<(ModPath, String)>, usize) {
    let mut prefix: ModPath = Vec::new();
    loop {
        i = skip_ws(code, i);
        match code.get(i) {
            Some('{') => {
                let mut out = Vec::new();
                i += 1;
                loop {
                    i = skip_ws(code, i);
                    match code.get(i) {
                        Some('}') | None => return (with_prefix(&prefix, out), i + 1),
                        Some(',') => i += 1,
                        _ => {
                            let (items, end) = use_tree(code, i);
                            out.extend(items);
                            i = end.max(i + 1);
                        }
                    }
                }
            }
            Some('*') => return (vec![(prefix, "*".into())], i + 1),
            _ => {}
        }
        let seg: String = code[i..].iter().take_while(|c| is_ident(**c)).collect();
        if seg.is_empty() {
            let name = prefix.last().cloned().unwrap_or_default();
            return (vec![(prefix, name)], i);
        }
        i += seg.len();
        prefix.push(seg);
        if code.get(i) == Some(&':') && code.get(i + 1) == Some(&':') {
            i += 2;
            continue;
        }
        let after = skip_ws(code, i);
        if find_word(code, after, "as") == Some(after) {
            let at = skip_ws(code, after + 2);
            let alias: String = code[at..].iter().take_while(|c| is_ident(**c)).collect();
            let end = at + alias.len();
            return (vec![(prefix, alias)], end);
        }
        let name = prefix.last().cloned().unwrap_or_default();
        return (vec![(prefix, name)], i);
    }
}

/// The items of a group after `prefix::`; `self` in the group is the prefix itself.
fn with_prefix(prefix: &[String], items: Vec<(ModPath, String)>) -> Vec<(ModPath, String)> {
    let last = prefix.last().cloned().unwrap_or_default();
    items
        .into_iter()
        .map(|(p, n)| {
            let is_self = p == ["self"];
            let n = if is_self && n == "self" {
                last.clone()
            } else {
                n
            };
            let p = p.into_iter().filter(|_| !is_self);
            (prefix.iter().cloned().chain(p).collect(), n)
        })
        .collect()
}

/// `path` (as written in the module `at`) from the crate root, or `None` when it does not start
/// at `crate`, `super`, `self` or a module `children` names.
fn absolute(path: &[String], at: &[String], children: &BTreeSet<String>) -> Option<ModPath> {
    let first = path.first()?;
    let mut base: ModPath = at.to_vec();
    let rest = match first.as_str() {
        "crate" => {
            base.clear();
            &path[1..]
        }
        "self" => &path[1..],
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            base.truncate(base.len().checked_sub(ups)?);
            &path[ups..]
        }
        name if children.contains(name) => path,
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Every path a file refers to, from the crate root, with the name it binds (`None` for a path
/// outside a `use` item).
fn references(module: &[String], code: &str) -> Vec<(ModPath, Option<String>)> {
    let code: Vec<char> = code.chars().collect();
    let scope = FileScope::new(module, &code);
    let mut starts: Vec<usize> = Vec::new();
    let mut words: Vec<&str> = vec!["crate", "super", "self"];
    words.extend(scope.children.iter().map(String::as_str));
    for w in words {
        let mut from = 0;
        while let Some(at) = find_word(&code, from, w) {
            if code.get(at + w.len()) == Some(&':') && code.get(at + w.len() + 1) == Some(&':') {
                starts.push(at);
            }
            from = at + w.len();
        }
    }
    // `use` trees: parse each once, from its `use` (the paths inside it are no new start).
    let mut uses = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = find_word(&code, from, "use") {
        starts.push(at + 3);
        uses.insert(at + 3);
        from = at + 3;
    }
    starts.sort_unstable();
    let mut out = Vec::new();
    let mut done = 0;
    for at in starts {
        if at < done {
            continue;
        }
        let (items, end) = use_tree(&code, at);
        done = end;
        let here = scope.module_at(at);
        for (path, name) in items {
            if let Some(abs) = absolute(&path, &here, &scope.children) {
                out.push((abs, Some(name).filter(|_| uses.contains(&at))));
            }
        }
    }
    out
}

/// File module → the file modules it refers to (re-exports followed to the defining file). A
/// file's references to the files below it (a `mod.rs` to its folder) are no edges: a folder's
/// `mod.rs` is its face, declaring, re-exporting and composing what is below it, and the files
/// below may use the types it holds.
fn file_graph(sources: &BTreeMap<ModPath, String>) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let refs: BTreeMap<&ModPath, Vec<(ModPath, Option<String>)>> = sources
        .iter()
        .map(|(m, code)| (m, references(m, code)))
        .collect();
    // What each file's `use` items bind: a path through `m::name` continues at the target.
    let binds: BTreeMap<&ModPath, BTreeMap<&str, &ModPath>> = refs
        .iter()
        .map(|(m, rs)| {
            let bound = rs.iter().filter_map(|(p, n)| Some((n.as_deref()?, p)));
            (*m, bound.filter(|(n, _)| *n != "*").collect())
        })
        .collect();
    let resolve = |path: &ModPath| -> Option<ModPath> {
        let mut path = path.clone();
        for _ in 0..8 {
            let len = (0..=path.len())
                .rev()
                .find(|&l| sources.contains_key(&path[..l]))?;
            let file = path[..len].to_vec();
            let next = path.get(len).map(String::as_str);
            match next.and_then(|n| binds.get(&file)?.get(n)) {
                Some(target) if target.as_slice() != path.as_slice() => {
                    let mut p = (*target).clone();
                    p.extend(path[len + 1..].iter().cloned());
                    path = p;
                }
                _ => return Some(file),
            }
        }
        None
    };
    let mut graph = BTreeMap::new();
    for (m, rs) in &refs {
        if m.is_empty() {
            continue;
        }
        let tos: BTreeSet<ModPath> = rs
            .iter()
            .filter_map(|(p, _)| resolve(p))
            .filter(|t| !t.is_empty() && !t.starts_with(m))
            .collect();
        graph.insert((*m).clone(), tos);
    }
    graph
}

/// (name, first line, line count) of each `fn` with a body.
pub fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let mut search = *line;
        let mut offset = 0;
        while let Some(at) = search.find("fn ") {
            let abs = offset + at;
            let before_ok = abs == 0 || {
                let p = line[..abs].chars().last().unwrap_or(' ');
                !(p.is_alphanumeric() || p == '_')
            };
            let name: String = line[abs + 3..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if before_ok
                && !name.is_empty()
                && let Some(end) = body_end(&lines, n, abs + 3)
            {
                out.push((name, n + 1, end - n + 1));
            }
            offset = abs + 3;
            search = &line[offset..];
        }
    }
    out
}

/// The line of the brace closing the body that starts after (`line`, `col`), or `None` for a
/// declaration without a body.
fn body_end(lines: &[&str], line: usize, col: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    let mut parens = 0i32;
    for (n, text) in lines.iter().enumerate().skip(line) {
        let start = if n == line { col } else { 0 };
        for ch in text[start..].chars() {
            match ch {
                '(' | '[' | '<' if !opened => parens += i32::from(ch != '<'),
                ')' | ']' if !opened => parens -= 1,
                ';' if !opened && parens == 0 => return None,
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' if opened => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(n);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// Nodes in strongly connected components of more than one node (Tarjan), each sorted.
pub fn knots(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            let graph = self.graph;
            for w in graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// The checker's own parsing, on small sources (runs in every crate that includes this file).
#[test]
fn the_checker_reads_paths_functions_and_cycles() {
    let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let a = "use crate::{b::X, c as d};\nfn f() {\n  let s = \"}\";\n  let c = '{';\n}\n";
    let refs = references(&strs(&["a"]), &strip(a, true));
    let bound = |p: &[&str], n: &str| (strs(p), Some(n.to_string()));
    assert_eq!(refs, vec![bound(&["b", "X"], "X"), bound(&["c"], "d")]);
    let group = references(
        &strs(&["a"]),
        "use super::b::{self, C}; fn f() { crate::d::e(); }",
    );
    assert_eq!(
        group,
        vec![
            bound(&["b"], "b"),
            bound(&["b", "C"], "C"),
            (strs(&["d", "e"]), None)
        ]
    );
    assert_eq!(function_lengths(&strip(a, false)), vec![("f".into(), 2, 4)]);
    let up = "use super::super::d::Y; use super::e; mod t { use super::*; }";
    let refs: Vec<ModPath> = references(&strs(&["x", "y"]), up)
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(
        refs,
        vec![strs(&["d", "Y"]), strs(&["x", "e"]), strs(&["x", "y"])]
    );
    let mut sources = BTreeMap::new();
    sources.insert(strs(&["p"]), "mod q; mod r; pub use q::Q;".to_string());
    sources.insert(strs(&["p", "q"]), "pub struct Q;".to_string());
    sources.insert(
        strs(&["p", "r"]),
        "use super::Q; fn g() { crate::p::q::h(); }".to_string(),
    );
    let files = file_graph(&sources);
    assert_eq!(
        files[&strs(&["p", "r"])],
        BTreeSet::from([strs(&["p", "q"])])
    );
    assert_eq!(
        files[&strs(&["p"])],
        BTreeSet::new(),
        "a folder's face is above its files"
    );
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(knots(&g), vec![vec!["a".to_string(), "b".to_string()]]);
    let doc = "//! # Inside\n//!\n//! ```text\n//! env    top\n//!        more\n//! api/   low\n//! ```\n";
    assert_eq!(diagram(doc, "# Inside"), strs(&["env", "api"]));
}

/// The three tests a crate's `tests/integration/layers.rs` runs over its [`Report`] (`$report` is
/// evaluated in each): references point down the layers ([`Report::assert_layers`]), no circle
/// between files ([`Report::assert_no_file_circle`]), no function over [`MAX_FN_LINES`] lines
/// ([`Report::assert_functions_fit`]).
macro_rules! layer_tests {
    ($report:expr) => {
        #[test]
        fn top_level_modules_import_down_the_declared_layers() {
            $report.assert_layers();
        }

        #[test]
        fn no_circle_between_files() {
            $report.assert_no_file_circle();
        }

        #[test]
        fn functions_fit_on_a_screen() {
            $report.assert_functions_fit();
        }
    };
}
pub(crate) use layer_tests;
