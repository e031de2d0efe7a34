//! The public surface of `launch`, pinned: every `pub` item and re-export of its `lib.rs`, and
//! every `pub` item of each public module, read with `syn` and compared to the snapshot
//! `snapshots/public_surface__launch_public_surface.snap`. A provider's contract that grows (or
//! shrinks) is then a change a reviewer sees: run `INSTA_UPDATE=always cargo test -p launch
//! --test public_surface` and commit the new snapshot with the reason.

use std::path::{Path, PathBuf};

/// `pub` (not `pub(crate)` or narrower).
fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

/// Each leaf of a `use` tree, as written (`a::b::{c, d as e}` gives `a::b::c`, `a::b::d as e`).
fn use_leaves(prefix: &str, tree: &syn::UseTree, out: &mut Vec<String>) {
    let join = |name: String| {
        if prefix.is_empty() {
            name
        } else {
            format!("{prefix}::{name}")
        }
    };
    match tree {
        syn::UseTree::Path(p) => use_leaves(&join(p.ident.to_string()), &p.tree, out),
        syn::UseTree::Name(n) => out.push(join(n.ident.to_string())),
        syn::UseTree::Rename(r) => {
            out.push(format!("{} as {}", join(r.ident.to_string()), r.rename))
        }
        syn::UseTree::Glob(_) => out.push(join("*".into())),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_leaves(prefix, tree, out);
            }
        }
    }
}

/// The `pub` items of one file, each as `KIND path`, with the public modules it declares.
fn surface_of(file: &Path, module: &str, out: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_str().unwrap();
    let at = |name: &dyn std::fmt::Display| {
        if module.is_empty() {
            name.to_string()
        } else {
            format!("{module}::{name}")
        }
    };
    for item in &parsed.items {
        let (kind, name, vis) = match item {
            syn::Item::Const(i) => ("const", i.ident.to_string(), &i.vis),
            syn::Item::Enum(i) => ("enum", i.ident.to_string(), &i.vis),
            syn::Item::Fn(i) => ("fn", i.sig.ident.to_string(), &i.vis),
            syn::Item::Static(i) => ("static", i.ident.to_string(), &i.vis),
            syn::Item::Struct(i) => ("struct", i.ident.to_string(), &i.vis),
            syn::Item::Trait(i) => ("trait", i.ident.to_string(), &i.vis),
            syn::Item::Type(i) => ("type", i.ident.to_string(), &i.vis),
            syn::Item::Macro(i) if i.mac.path.is_ident("macro_rules") => {
                out.push(format!("macro {}", at(&i.ident.as_ref().unwrap())));
                continue;
            }
            syn::Item::Use(i) if is_pub(&i.vis) => {
                let mut leaves = Vec::new();
                use_leaves("", &i.tree, &mut leaves);
                for leaf in leaves {
                    out.push(format!("use {} = {leaf}", at(&module_of(&leaf))));
                }
                continue;
            }
            syn::Item::Mod(i) if is_pub(&i.vis) => {
                let name = i.ident.to_string();
                out.push(format!("mod {}", at(&name)));
                if i.content.is_none() {
                    let base = if stem == "lib" || stem == "mod" {
                        dir.to_owned()
                    } else {
                        dir.join(stem)
                    };
                    let file = [
                        base.join(format!("{name}.rs")),
                        base.join(&name).join("mod.rs"),
                    ]
                    .into_iter()
                    .find(|p| p.is_file())
                    .unwrap_or_else(|| panic!("the file of module {name}"));
                    surface_of(&file, &at(&name), out);
                }
                continue;
            }
            _ => continue,
        };
        if is_pub(vis) {
            out.push(format!("{kind} {}", at(&name)));
        }
    }
}

/// The name a `use` leaf is known by (`a::b as c` is `c`, `a::b` is `b`).
fn module_of(leaf: &str) -> String {
    match leaf.split_once(" as ") {
        Some((_, rename)) => rename.to_owned(),
        None => leaf.rsplit("::").next().unwrap_or(leaf).to_owned(),
    }
}

#[test]
fn launch_public_surface() {
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let mut surface = Vec::new();
    surface_of(&lib, "", &mut surface);
    surface.sort();
    let top = surface
        .iter()
        .filter(|s| {
            !s.contains("::")
                || s.starts_with("use ") && !s[4..].split(" = ").next().unwrap().contains("::")
        })
        .count();
    insta::assert_snapshot!(format!(
        "{} items at the crate's root, {} in all\n{}",
        top,
        surface.len(),
        surface.join("\n")
    ));
}
