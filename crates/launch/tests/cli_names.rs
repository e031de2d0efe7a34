//! Architecture check: one CLI's knowledge lives in its own crate (`crates/adapter-NAME`), and
//! every list of CLIs comes from the registry (`launch::registry`). Outside the adapter crates,
//! no source may hold
//!
//! - a `match` arm whose pattern is a registered CLI's name (`"codex" => ...`),
//! - a comparison with one (`cli == "pi"`), or
//! - a hand-kept list of them: an array, slice or `vec![]` naming two or more (`["claude",
//!   "codex"]`, or in tuples `[("claude", "@anthropic-ai/claude-code"), ...]`).
//!
//! The sources are parsed (`syn`), not searched as text, so a line break or a macro does not hide
//! a case. The files that name a CLI on purpose are in [`ALLOWED`], each with its reason; an entry
//! that no longer needs its place fails too. `a_planted_match_and_list_are_caught` shows the check
//! catches what it is meant to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{Expr, ExprLit, Lit, Pat, Token};

/// The files that name a CLI on purpose, relative to the repository, with why.
const ALLOWED: &[(&str, &str)] = &[
    (
        "tests/agents.rs",
        "drives each pinned real CLI through the scripted model and checks the wire dialect it speaks (Codex: responses, Claude: messages, Gemini: its own)",
    ),
    (
        "tests/screens.rs",
        "checks each real CLI's own first-run and trust screens by their text",
    ),
    (
        "tests/steering.rs",
        "plants, per real CLI, what a chat could leave in that CLI's own settings places",
    ),
    (
        "tests/environments.rs",
        "checks each real CLI in each environment it is documented to run in",
    ),
    (
        "tests/person_files_attacks.rs",
        "plants links into each CLI's own files in the person's home",
    ),
    (
        "crates/cli-sandbox/tests/cli.rs",
        "runs the binary for named CLIs and checks their adapters' documented argv and files",
    ),
    (
        "tests/end.rs",
        "pre-trusts the three CLIs whose pre-trust edits the person's files (Codex, Claude, Gemini), each on purpose",
    ),
    (
        "tests/locks.rs",
        "races the pre-trust edits of Codex, Claude and Gemini, whose files and locks differ (Codex's per-launch entry, Gemini's one entry)",
    ),
    (
        "tests/person_files.rs",
        "an unparsable settings file per CLI that has one, with the line the error must name",
    ),
    (
        "crates/cli-sandbox/benches/launch.rs",
        "times the start of two chosen real CLIs side by side (a benchmark, not a list of the CLIs)",
    ),
    (
        "crates/sandbox-core/src/config.rs",
        "a unit test of the configuration's `[cli.NAME]` table with two example names (sandbox-core cannot see the registry)",
    ),
    (
        "crates/cli-sandbox/src/contract.rs",
        "a rendering fixture (tests module) with a made-up report naming CLIs",
    ),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The registered CLIs' names.
fn names() -> Vec<String> {
    launch::registry::names()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// What a source holds that only an adapter crate or the registry should: one line per case.
fn violations(source: &str, names: &[String]) -> Result<Vec<String>, syn::Error> {
    let file = syn::parse_file(source)?;
    let mut scan = Scan {
        names,
        found: Vec::new(),
    };
    scan.visit_file(&file);
    Ok(scan.found)
}

struct Scan<'a> {
    names: &'a [String],
    found: Vec<String>,
}

impl Scan<'_> {
    fn cli_name(&self, lit: &Lit) -> Option<String> {
        match lit {
            Lit::Str(s) if self.names.contains(&s.value()) => Some(s.value()),
            _ => None,
        }
    }

    fn expr_cli_name(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Lit(ExprLit { lit, .. }) => self.cli_name(lit),
            Expr::Reference(r) => self.expr_cli_name(&r.expr),
            Expr::Paren(p) => self.expr_cli_name(&p.expr),
            _ => None,
        }
    }

    fn pat_names(&self, pat: &Pat, out: &mut Vec<String>) {
        match pat {
            Pat::Lit(ExprLit { lit, .. }) => out.extend(self.cli_name(lit)),
            Pat::Or(or) => or.cases.iter().for_each(|p| self.pat_names(p, out)),
            Pat::Tuple(t) => t.elems.iter().for_each(|p| self.pat_names(p, out)),
            Pat::Paren(p) => self.pat_names(&p.pat, out),
            Pat::Reference(r) => self.pat_names(&r.pat, out),
            _ => {}
        }
    }

    /// The CLI names an element of a list holds: itself, or in a tuple or a nested list.
    fn elem_names(&self, expr: &Expr, out: &mut Vec<String>) {
        match expr {
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.elem_names(e, out)),
            Expr::Array(a) => a.elems.iter().for_each(|e| self.elem_names(e, out)),
            other => out.extend(self.expr_cli_name(other)),
        }
    }

    fn list<'e>(&mut self, what: &str, elems: impl Iterator<Item = &'e Expr>) {
        let mut found = Vec::new();
        for e in elems {
            self.elem_names(e, &mut found);
        }
        found.sort();
        found.dedup();
        if found.len() >= 2 {
            self.found
                .push(format!("a hand-kept {what} of CLIs: {}", found.join(", ")));
        }
    }
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        let mut found = Vec::new();
        self.pat_names(&arm.pat, &mut found);
        if !found.is_empty() {
            self.found
                .push(format!("a match arm on a CLI's name: {}", found.join(", ")));
        }
        syn::visit::visit_arm(self, arm);
    }

    fn visit_expr_binary(&mut self, bin: &'ast syn::ExprBinary) {
        if matches!(bin.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_))
            && let Some(name) = self
                .expr_cli_name(&bin.left)
                .or_else(|| self.expr_cli_name(&bin.right))
        {
            self.found
                .push(format!("a comparison with a CLI's name: {name}"));
        }
        syn::visit::visit_expr_binary(self, bin);
    }

    fn visit_expr_array(&mut self, array: &'ast syn::ExprArray) {
        self.list("list", array.elems.iter());
        syn::visit::visit_expr_array(self, array);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // `vec![...]`, `assert_eq!(x, [...])` and the like: their arguments as expressions, where
        // they parse as such.
        if let Ok(args) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            let is_vec = mac.path.is_ident("vec");
            if is_vec {
                self.list("vec!", args.iter());
            }
            for arg in &args {
                if !is_vec || !matches!(arg, Expr::Lit(_)) {
                    self.visit_expr(arg);
                }
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// Every `.rs` file of the workspace outside the adapter crates, `target` and `node_modules`.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name == "target" || name == "node_modules" || name.starts_with('.') {
                    continue;
                }
                walk(&path, out);
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    let root = repo_root();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && !name.starts_with("adapter-") {
            walk(&path, &mut out);
        }
    }
    walk(&root.join("tests"), &mut out);
    walk(&root.join("examples"), &mut out);
    out.sort();
    out
}

#[test]
fn no_match_or_list_of_cli_names_outside_the_adapter_crates() {
    let names = names();
    let root = repo_root().canonicalize().unwrap();
    let allowed: BTreeMap<&str, &str> = ALLOWED.iter().copied().collect();
    let mut bad = Vec::new();
    let mut needed = Vec::new();
    for path in sources() {
        let relative = path
            .canonicalize()
            .unwrap()
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let source = std::fs::read_to_string(&path).unwrap();
        let found = violations(&source, &names)
            .unwrap_or_else(|e| panic!("{relative} does not parse: {e}"));
        if found.is_empty() {
            continue;
        }
        if allowed.contains_key(relative.as_str()) {
            needed.push(relative);
            continue;
        }
        for f in found {
            bad.push(format!("{relative}: {f}"));
        }
    }
    assert!(
        bad.is_empty(),
        "what one CLI needs belongs in its adapter crate (crates/adapter-NAME, e.g. its \
         `driving()` data) and every list of CLIs comes from `launch::registry` \
         (docs/adding-a-cli.md); found:\n{}\n(a test that names a CLI on purpose goes into \
         ALLOWED in crates/launch/tests/cli_names.rs, with its reason)",
        bad.join("\n")
    );
    let stale: Vec<_> = allowed
        .keys()
        .filter(|f| !needed.iter().any(|n| n == *f))
        .collect();
    assert!(
        stale.is_empty(),
        "these ALLOWED entries name no CLI any more: remove them: {stale:?}"
    );
}

#[test]
fn a_planted_match_and_list_are_caught() {
    let names = names();
    let [a, b, ..] = &names[..] else {
        panic!("fewer than two CLIs registered")
    };
    let planted = [
        format!("fn f(cli: &str) -> u8 {{ match cli {{ {a:?} => 1, _ => 0 }} }}"),
        format!("fn f(cli: &str) -> u8 {{ match cli {{ {a:?} | {b:?} => 1, _ => 0 }} }}"),
        format!("const L: [&str; 2] = [{a:?}, {b:?}];"),
        format!("const L: &[(&str, &str)] = &[({a:?}, \"@x/a\"), ({b:?}, \"@x/b\")];"),
        format!("fn f() -> Vec<&'static str> {{ vec![\n    {a:?},\n    {b:?},\n] }}"),
        format!("fn f(cli: &str) -> bool {{ cli == {a:?} }}"),
        format!("fn f(cli: &str) -> bool {{ {a:?} != cli }}"),
        format!("fn f(cli: &str) {{ assert!(cli == {a:?}); }}"),
    ];
    for source in &planted {
        let found = violations(source, &names).unwrap();
        assert!(!found.is_empty(), "not caught: {source}");
    }
    let clean = [
        format!("fn f() {{ let _ = launch::registry::find({a:?}); }}"),
        "fn f(x: &str) -> u8 { match x { \"other\" => 1, _ => 0 } }".to_owned(),
        "const L: [&str; 2] = [\"a\", \"b\"];".to_owned(),
    ];
    for source in &clean {
        let found = violations(source, &names).unwrap();
        assert!(found.is_empty(), "caught by mistake: {source}: {found:?}");
    }
}
