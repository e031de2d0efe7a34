//! Writes the registry's list of adapters (`src/registry.rs` includes it) from this crate's own
//! `[dependencies]`: every dependency whose name starts with `adapter-`, in the manifest's order,
//! is one registered CLI, `<crate>::ADAPTER` (the item each adapter crate exports). So adding a
//! CLI is its crate and its one dependency line in `crates/launch/Cargo.toml`; nothing else lists
//! the CLIs.
//!
//! What it is not: a search of the workspace. A crate directory `crates/adapter-*` without its
//! line here is not registered (the registry's test names the line to add).

use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let manifest = Path::new(&dir).join("Cargo.toml");
    println!("cargo::rerun-if-changed={}", manifest.display());
    println!("cargo::rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest.display()));
    let doc: toml_edit::DocumentMut = text
        .parse()
        .unwrap_or_else(|e| panic!("{} cannot be parsed: {e}", manifest.display()));
    let crates: Vec<&str> = doc
        .get("dependencies")
        .and_then(|d| d.as_table_like())
        .map(|deps| {
            deps.iter()
                .map(|(name, _)| name)
                .filter(|name| name.starts_with("adapter-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !crates.is_empty(),
        "{} lists no `adapter-*` dependency, so no CLI would be registered: add one line per adapter crate, `adapter-x = {{ path = \"../adapter-x\" }}`",
        manifest.display()
    );
    let mut out = String::from(
        "// Written by crates/launch/build.rs from the `adapter-*` lines of crates/launch/Cargo.toml.\n\n",
    );
    out.push_str(
        "/// The registered adapters, in the order of their lines in `crates/launch/Cargo.toml`\n\
         /// (the order `cli-sandbox adapters` lists them).\n\
         pub static ADAPTERS: &[&dyn CliAdapter] = &[\n",
    );
    for name in &crates {
        writeln!(out, "    {}::ADAPTER,", name.replace('-', "_")).unwrap();
    }
    out.push_str("];\n\n/// The crate of each registered adapter, in the same order.\n");
    out.push_str("pub const ADAPTER_CRATES: &[&str] = &[\n");
    for name in &crates {
        writeln!(out, "    {name:?},").unwrap();
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let file = Path::new(&out_dir).join("adapters.rs");
    std::fs::write(&file, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
}
