//! No module of `sandbox-linux` reaches itself through the others: the plan's file format
//! (`plan/format.rs`) is apart from its compilers (`plan/compile.rs`, `frozen.rs`, with what they
//! share in `plan/common.rs`), and the helper's modules (`seccomp.rs`, `mounts.rs`...) read the
//! format only. Every source is parsed with `syn`; each path it names (`use crate::...`,
//! `use super::...`, `super::frozen::compile(...)` in an expression, a child module named
//! relatively) is an edge to the innermost module of the crate it names. The crate root
//! (`lib.rs`) is left out: it declares every module and re-exports, and the modules reach it
//! only for its macros (`say!`, `phase!`). `a_planted_cycle_is_found` plants each form of edge
//! in a scratch copy and sees the check fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Module path (`plan::format`) of a source file under `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "lib" && stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

struct Paths<'m> {
    /// The file's module, then the inline modules (`mod tests { ... }`) the visitor is inside.
    here: Vec<String>,
    modules: &'m BTreeSet<Vec<String>>,
    found: BTreeSet<Vec<String>>,
}

impl Paths<'_> {
    /// The module of the crate that `segments`, read in the module `self.here`, names.
    fn resolve(&mut self, segments: &[String]) {
        let mut at: Vec<String> = self.here.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                at.clear();
                rest = &rest[1..];
            }
            Some("super") | Some("self") => {
                while let Some(first) = rest.first() {
                    match first.as_str() {
                        "super" => {
                            at.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let mut child = at.clone();
                child.push(first.to_owned());
                if !self.modules.contains(&child) {
                    // Another crate, a local item or a prelude name.
                    return;
                }
            }
            None => return,
        }
        let mut target = at;
        for segment in rest {
            let mut next = target.clone();
            next.push(segment.clone());
            if !self.modules.contains(&next) {
                break;
            }
            target = next;
        }
        self.found.insert(target);
    }
}

fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten(tree, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.here.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.here.pop();
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        flatten(&u.tree, &mut Vec::new(), &mut paths);
        for path in paths {
            self.resolve(&path);
        }
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.resolve(&segments);
        syn::visit::visit_path(self, p);
    }
}

/// Each module of the crate (by path, the root left out) and the modules it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let me = module_of(src, file);
        if me.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read source");
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut paths = Paths {
            here: me.clone(),
            modules: &modules,
            found: BTreeSet::new(),
        };
        paths.visit_file(&ast);
        let to: BTreeSet<String> = paths
            .found
            .into_iter()
            // Itself, an inline module of its own (resolved to a path below it), or the root.
            .filter(|t| !t.is_empty() && !t.starts_with(&me))
            .map(|t| t.join("::"))
            .collect();
        edges.insert(me.join("::"), to);
    }
    edges
}

/// A cycle of the graph, as the modules on it, if there is one.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(c) = visit(node, edges, &mut done, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_module_of_the_crate_reaches_itself() {
    let edges = graph(&src());
    // The check sees the edges that matter (it is not empty by a parsing mistake).
    for (from, to) in [
        ("plan::compile", "frozen"),
        ("plan::compile", "plan::format"),
        ("frozen", "plan::format"),
        ("frozen", "plan::common"),
        ("seccomp", "plan::format"),
        ("plan::common", "seccomp"),
    ] {
        assert!(
            edges[from].contains(to),
            "{from} -> {to} not found: {edges:#?}"
        );
    }
    // The format decides nothing: it reads no compiler, and the helper's modules read no compiler.
    assert!(
        edges["plan::format"].is_empty(),
        "{:?}",
        edges["plan::format"]
    );
    for module in ["seccomp", "mounts", "landlock", "apply"] {
        for compiler in ["plan::compile", "plan::common", "frozen"] {
            assert!(
                !edges[module].contains(compiler),
                "{module} reads the compiler `{compiler}`"
            );
        }
    }
    if let Some(c) = cycle(&edges) {
        panic!(
            "a module of sandbox-linux reaches itself: {}",
            c.join(" -> ")
        );
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read") {
        let path = entry.expect("entry").path();
        let dest = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copy");
        }
    }
}

#[test]
fn a_planted_cycle_is_found() {
    let plants = [
        // `use crate::...` from the format into a compiler.
        ("plan/format.rs", "use crate::frozen::rule_for;\n"),
        // `super::` in an expression, as `compile` calls `frozen`.
        (
            "plan/format.rs",
            "fn planted() { let _ = super::super::frozen::rule_for; }\n",
        ),
        // A group, a glob, and the facade: the format through `plan`'s re-export of `compile`.
        ("plan/format.rs", "use super::{compile::*};\n"),
        // A child module named relatively from its parent (the facade): `plan` -> `compile` is
        // already there, so `common` naming the facade closes the loop.
        ("plan/common.rs", "use crate::plan::compile;\n"),
        // From the helper's side: seccomp reaching the compiler that reads it.
        ("seccomp.rs", "use crate::plan::common::Kernel as K;\n"),
    ];
    for (file, line) in plants {
        let scratch = std::env::temp_dir().join(format!(
            "module-graph-{}-{}",
            std::process::id(),
            file.replace('/', "-")
        ));
        let _ = std::fs::remove_dir_all(&scratch);
        copy(&src(), &scratch);
        assert!(
            cycle(&graph(&scratch)).is_none(),
            "the unplanted copy has a cycle"
        );
        let target = scratch.join(file);
        let mut text = std::fs::read_to_string(&target).expect("read");
        text.push_str(line);
        std::fs::write(&target, text).expect("write");
        let found = cycle(&graph(&scratch));
        std::fs::remove_dir_all(&scratch).expect("clean up");
        assert!(found.is_some(), "{line:?} in {file}: no cycle found");
    }
}
