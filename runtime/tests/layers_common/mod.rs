//! The layering checker `tests/layers.rs` runs over `runtime/src`, read from the source text
//! (nothing is compiled): the top-level module graph, the layer order written in `lib.rs`'s
//! crate doc, file-level import circles inside a module and function lengths.
//!
//! The text handling (`strip`, `function_lengths`, `knots`) is the envtest checker's
//! (`envtest/tests/layers.rs`), so both crates are measured alike.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest function the rule allows.
pub const MAX_FN_LINES: usize = 80;

/// One source file: where it is, its module path and its text with comments blanked
/// (`code` keeps doc comments: an intra-doc link is a dependency a reader follows).
pub struct File {
    /// Relative to `src`, e.g. `manager/group.rs`.
    pub rel: String,
    /// `[manager, group]`; `lib.rs` is `[lib]`.
    pub module: Vec<String>,
    /// Code and doc comments.
    pub code: String,
    /// Code only.
    pub bare: String,
}

/// Every `.rs` file under `src`, sorted.
pub fn read(src: &Path) -> Vec<File> {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(src).expect("under src").to_path_buf();
            let text = fs::read_to_string(&path).expect("readable source");
            File {
                rel: rel.display().to_string(),
                module: module_path(&rel),
                code: strip(&text, true),
                bare: strip(&text, false),
            }
        })
        .collect()
}

/// top-level module → the top-level modules its files refer to (`lib.rs` and `bin/` are not
/// part of the graph).
pub fn top_graph(files: &[File]) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        if f.module.first().is_none_or(|m| m == "lib" || m == "bin") {
            continue;
        }
        let top = &f.module[0];
        let deps = references(&f.code, &f.module)
            .into_iter()
            .filter_map(|p| p.into_iter().next())
            .filter(|d| d != top);
        graph.entry(top.clone()).or_default().extend(deps);
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| known.contains(d));
    }
    graph
}

/// The layer order drawn in the first ` ```text ` block of `lib.rs`'s crate doc, one module a
/// line (`name` or `name/`, then a description), top first.
pub fn declared_layers(lib_rs: &str) -> Vec<String> {
    let doc = lib_rs
        .lines()
        .map_while(|l| l.trim_start().strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l));
    doc.skip_while(|l| !l.starts_with("```text"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| name.trim_end_matches('/').to_string())
        .collect()
}

/// Imports that do not point down: (from, to) where `to` is drawn above `from` in `layers`
/// (top first), or where either is not drawn at all.
pub fn upward_imports(
    graph: &BTreeMap<String, BTreeSet<String>>,
    layers: &[String],
) -> Vec<(String, String)> {
    let depth = |m: &str| layers.iter().position(|l| l == m);
    let mut out = Vec::new();
    for (from, deps) in graph {
        for to in deps {
            match (depth(from), depth(to)) {
                (Some(f), Some(t)) if t > f => {}
                _ => out.push((from.clone(), to.clone())),
            }
        }
    }
    out
}

/// Circles between the files of one module: an edge joins two siblings (files or
/// sub-directories under the same parent) when the code of one refers to the other by path;
/// a parent and its own children (a `mod.rs` and what it declares) are not an edge. Doc
/// comments do not count here, unlike between top-level modules: a file's doc says where its
/// siblings fit (the store "written only by the informer"), which is a map, not a dependency.
pub fn file_circles(files: &[File]) -> Vec<Vec<String>> {
    knots(&file_graph(files, false))
}

/// The sibling graph [`file_circles`] looks for circles in: `a::b` → `a::c` when a file of
/// `a::b` refers to `a::c` (in its code, and in its doc comments when `docs`).
pub fn file_graph(files: &[File], docs: bool) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        for target in references(if docs { &f.code } else { &f.bare }, &f.module) {
            let Some(to) = (1..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|p| known.contains(p))
            else {
                continue;
            };
            let common = f.module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == 0 || common >= f.module.len() || common >= to.len() {
                continue; // across top-level modules, or an ancestor and its descendant
            }
            let node = |m: &[String]| m[..=common].join("::");
            graph.entry(node(&f.module)).or_default().insert(node(&to));
        }
    }
    graph
}

/// (file, fn name, first line, lines) of every function over [`MAX_FN_LINES`], longest first.
pub fn long_functions(files: &[File]) -> Vec<(String, String, usize, usize)> {
    let mut long: Vec<_> = files
        .iter()
        .flat_map(|f| {
            function_lengths(&f.bare)
                .into_iter()
                .map(|(name, line, len)| (f.rel.clone(), name, line, len))
        })
        .filter(|f| f.3 > MAX_FN_LINES)
        .collect();
    long.sort_by_key(|f| std::cmp::Reverse(f.3));
    long
}

/// The module paths a file's code refers to through `crate::`, `super::` or `self::`, made
/// absolute (`super::b::X` in `a/c.rs` → `[a, b, X]`); a `use` group gives one path per item.
pub fn references(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let before_ok = i == 0 || {
            let p = chars[i - 1];
            !(p.is_alphanumeric() || p == '_' || p == '$' || p == ':')
        };
        let rest = &chars[i..];
        let base = if !before_ok {
            None
        } else if starts(rest, "crate::") {
            i += "crate::".len();
            Some(Vec::new())
        } else if starts(rest, "self::") {
            i += "self::".len();
            Some(module.to_vec())
        } else if starts(rest, "super::") {
            let mut up = module.len();
            while starts(&chars[i..], "super::") {
                up = up.saturating_sub(1);
                i += "super::".len();
            }
            Some(module[..up].to_vec())
        } else {
            None
        };
        match base {
            Some(base) => i = use_tree(&chars, i, base, &mut out),
            None => i += 1,
        }
    }
    out
}

fn starts(chars: &[char], word: &str) -> bool {
    let mut n = 0;
    for (a, b) in chars.iter().zip(word.chars()) {
        if *a != b {
            return false;
        }
        n += 1;
    }
    n == word.chars().count()
}

/// Reads `a::b::{c, d::e}` from `at`, pushing `prefix` + each path; returns where it stopped.
fn use_tree(
    chars: &[char],
    mut at: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        while chars.get(at).is_some_and(|c| c.is_whitespace()) {
            at += 1;
        }
        if chars.get(at) == Some(&'{') {
            at += 1;
            loop {
                while chars
                    .get(at)
                    .is_some_and(|c| c.is_whitespace() || *c == ',')
                {
                    at += 1;
                }
                match chars.get(at) {
                    Some('}') => return at + 1,
                    None => return at,
                    Some(_) => at = use_tree(chars, at, prefix.clone(), out),
                }
            }
        }
        let start = at;
        while chars
            .get(at)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            at += 1;
        }
        let ident: String = chars[start..at].iter().collect();
        if !ident.is_empty() && ident != "self" {
            prefix.push(ident);
        }
        if starts(&chars[at..], "::") {
            at += 2;
            continue;
        }
        if !prefix.is_empty() {
            out.push(prefix);
        }
        return at.max(start + 1);
    }
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
pub fn module_path(rel: &Path) -> Vec<String> {
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
pub fn strip(src: &str, keep_docs: bool) -> String {
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

/// Modules in strongly connected components of more than one module (Tarjan).
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
