//! The layering rule of `envtest/src`, checked from the source text (issue 16).
//!
//! Two measures, both read without compiling anything:
//!
//! * **import cycles between top-level modules** — every `crate::X` path (and `super::X` that
//!   climbs to the crate root) in a file under `src/X…` is an edge; a strongly connected
//!   component of more than one module is a knot. `lib.rs` (the root that declares every module)
//!   and `bin/` (its own crate) are not part of the graph.
//! * **function length** — lines from a `fn` to its closing brace.
//!
//! The rule is "no cycle, no function over [`MAX_FN_LINES`] lines"; both are asserted. Run with
//! `--nocapture` to see the report (the module graph and the longest functions).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest function the rule allows.
const MAX_FN_LINES: usize = 80;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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
/// `a/b.rs` → `[a, b]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    segs
}

/// Source text with comments and string/char literal contents blanked (newlines kept), so that
/// braces and paths are counted only in code. Doc comments are code for this purpose when
/// `keep_docs` (an intra-doc link is a dependency a reader follows).
fn strip(src: &str, keep_docs: bool) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let is_doc = matches!(b.get(i + 2), Some('/') | Some('!'));
            while i < b.len() && b[i] != '\n' {
                out.push(if keep_docs && is_doc { b[i] } else { ' ' });
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
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
            continue;
        }
        let ident_before = i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_');
        if c == 'r' && !ident_before && matches!(next, Some('"') | Some('#')) {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                out.push(' ');
                for _ in 0..hashes {
                    out.push(' ');
                }
                out.push('"');
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
                        out.push('"');
                        for _ in 0..hashes {
                            out.push(' ');
                        }
                        j += 1 + hashes;
                        break;
                    }
                    out.push(blank(b[j]));
                    j += 1;
                }
                i = j;
                continue;
            }
        }
        if c == '"' {
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
            i += 1;
            continue;
        }
        if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = close {
                out.push('\'');
                for _ in i + 1..end {
                    out.push(' ');
                }
                out.push('\'');
                i = end + 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Top-level modules a file refers to through `crate::` or root-climbing `super::` paths.
fn imports(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before_ok = at == 0 || {
            let p = rest[..at].chars().last().unwrap_or(' ');
            !(p.is_alphanumeric() || p == '_' || p == '$')
        };
        let after = &rest[at + "crate::".len()..];
        if before_ok {
            if let Some(group) = after.strip_prefix('{') {
                // `crate::{a, b::c, d::{e}}`: the first segment of each item at depth 0.
                let mut depth = 0;
                let mut start = true;
                for (k, ch) in group.char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => start = true,
                        c if start && (c.is_alphanumeric() || c == '_') => {
                            found.insert(ident(&group[k..]));
                            start = false;
                        }
                        c if c.is_whitespace() => {}
                        _ => start = false,
                    }
                }
            } else {
                let name = ident(after);
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
        rest = after;
    }
    // `super::` chains that reach the crate root name a top-level module next.
    let mut rest = code;
    while let Some(at) = rest.find("super::") {
        let before_ok = at == 0 || {
            let p = rest[..at].chars().last().unwrap_or(' ');
            !(p.is_alphanumeric() || p == '_' || p == ':')
        };
        let mut after = &rest[at..];
        let mut ups = 0;
        while let Some(a) = after.strip_prefix("super::") {
            ups += 1;
            after = a;
        }
        if before_ok && ups >= module.len() {
            let name = ident(after);
            if !name.is_empty() {
                found.insert(name);
            }
        }
        rest = &rest[at + "super::".len()..];
    }
    found
}

struct Tree {
    /// top-level module → the top-level modules it imports.
    graph: BTreeMap<String, BTreeSet<String>>,
    /// (file, fn name, first line, lines) of every function.
    functions: Vec<(String, String, usize, usize)>,
}

fn read_tree() -> Tree {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut functions = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src").to_path_buf();
        let text = fs::read_to_string(&path).expect("readable source");
        let shown = rel.display().to_string();
        functions.extend(
            function_lengths(&strip(&text, false))
                .into_iter()
                .map(|(name, line, len)| (shown.clone(), name, line, len)),
        );
        let module = module_path(&rel);
        if module.first().is_none_or(|m| m == "lib" || m == "bin") {
            continue;
        }
        let top = module[0].clone();
        let deps = imports(&strip(&text, true), &module);
        let entry = graph.entry(top.clone()).or_default();
        entry.extend(deps.into_iter().filter(|d| *d != top));
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| known.contains(d));
    }
    Tree { graph, functions }
}

/// (name, first line, line count) of each `fn` with a body.
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
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

/// Modules in strongly connected components of more than one module (Tarjan).
fn knots(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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

#[test]
fn top_level_modules_import_in_layers() {
    let tree = read_tree();
    let knots = knots(&tree.graph);
    let in_cycles: usize = knots.iter().map(Vec::len).sum();
    println!(
        "{} top-level modules, {in_cycles} in import cycles",
        tree.graph.len()
    );
    for knot in &knots {
        println!("cycle: {}", knot.join(", "));
    }
    for (module, deps) in &tree.graph {
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        println!("  {module} -> {}", deps.join(" "));
    }
    assert!(
        knots.is_empty(),
        "{in_cycles} modules in import cycles (imports must point down): {knots:?}"
    );
}

#[test]
fn functions_fit_on_a_screen() {
    let tree = read_tree();
    let mut long: Vec<_> = tree
        .functions
        .iter()
        .filter(|f| f.3 > MAX_FN_LINES)
        .collect();
    long.sort_by_key(|f| std::cmp::Reverse(f.3));
    println!(
        "{} functions, {} over {MAX_FN_LINES} lines",
        tree.functions.len(),
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

#[test]
fn the_checker_sees_cycles_and_long_functions() {
    let a = "use crate::{b::X, c};\nfn f() {\n  let s = \"}\";\n  let c = '{';\n}\n";
    let deps = imports(&strip(a, true), &["a".to_string()]);
    assert_eq!(deps, ["b", "c"].iter().map(|s| s.to_string()).collect());
    assert_eq!(function_lengths(&strip(a, false)), vec![("f".into(), 2, 4)]);
    let up = imports(
        "use super::super::d::Y; use super::e;",
        &["x".into(), "y".into()],
    );
    assert_eq!(up, ["d"].iter().map(|s| s.to_string()).collect());
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(knots(&g), vec![vec!["a".to_string(), "b".to_string()]]);
}
