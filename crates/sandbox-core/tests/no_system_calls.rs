//! `sandbox-core` makes no system call: every rule in it decides from what it is given, and what
//! touches the disk comes in through a trait the caller implements (`Resolver`, `PersonFiles`).
//! This test reads the crate's own `src/**/*.rs` and fails, with file:line, on anything that
//! would reach the operating system: the `std` modules that do (`fs`, `process`, `env`, `net`,
//! `os::fd`, `os::unix::fs|net|process`), the crates that wrap system calls (`libc`, `rustix`,
//! `nix`), the types that open things (`File::`, `Command::`...), and the `Path` methods that
//! ask the disk (`canonicalize`, `metadata`, `exists`, `read_dir`...).
//!
//! It is a textual check, not a proof: it reads code, so `use std::fs as f` then `f::read` is
//! caught (by the `use`), but a call hidden in a macro of another crate is not. `unsafe` is
//! already forbidden in the crate (`#![forbid(unsafe_code)]`), so no raw system call can be
//! made either. What it does not read: comments (a `//` to the end of the line, outside a
//! string) and `include_str!`, which reads a file at build time, not at run time.
//!
//! What is allowed, and why: a method of the same name called on a value that is not a path.
//! `resolver.canonicalize(...)` and `resolver.is_dir(...)` are the `Resolver` trait, the door the
//! caller opens onto its disk; `pattern.is_dir()` is `RefusedPattern::is_dir`, whether the
//! pattern ends with `/`.

use std::path::{Path, PathBuf};

/// Paths (as written in code) that reach the operating system.
const PATHS: &[&str] = &[
    "std::fs",
    "std::process",
    "std::env",
    "std::net",
    "std::os::fd",
    "std::os::unix::fs",
    "std::os::unix::net",
    "std::os::unix::process",
    "std::thread::spawn",
    "libc::",
    "rustix::",
    "nix::",
    "File::",
    "OpenOptions::",
    "DirBuilder::",
    "Command::",
    "TcpStream::",
    "TcpListener::",
    "UdpSocket::",
    "UnixStream::",
    "UnixListener::",
];

/// The short forms, after `use std::{fs, env}` (a whole word followed by `::`).
const SHORT_PATHS: &[&str] = &["fs::", "env::", "process::", "net::"];

/// The modules a `use std::{...}` group may not name.
const GROUPED: &[&str] = &["fs", "process", "env", "net"];

/// `Path`/`PathBuf` methods that ask the disk.
const METHODS: &[&str] = &[
    "canonicalize",
    "metadata",
    "symlink_metadata",
    "read_dir",
    "read_link",
    "exists",
    "try_exists",
    "is_dir",
    "is_file",
    "is_symlink",
];

/// Receivers whose method of one of those names is not the disk (see the module doc).
const NOT_A_PATH: &[&str] = &["resolver", "pattern"];

/// One line that reaches the operating system.
#[derive(Debug, PartialEq)]
struct Finding {
    line: usize,
    what: String,
}

/// The findings in one file's text.
fn system_calls(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let code = without_comment(raw);
        let mut say = |what: String| out.push(Finding { line: i + 1, what });
        for p in PATHS {
            if contains_word(code, p) {
                say(format!("`{p}`"));
            }
        }
        for p in SHORT_PATHS {
            // `std::fs::` is reported above already; this catches `fs::` on its own.
            if contains_short(code, p) {
                say(format!("`{p}` (a `use std::{{...}}` import?)"));
            }
        }
        if let Some(group) = std_group(code) {
            for m in GROUPED {
                if group
                    .split([',', ' ', '{', '}'])
                    .any(|name| name.trim() == *m)
                {
                    say(format!("`use std::{{{m}}}`"));
                }
            }
        }
        for m in METHODS {
            for receiver in method_receivers(code, m) {
                if !NOT_A_PATH.contains(&receiver.as_str()) {
                    say(format!("`.{m}(` on `{receiver}`"));
                }
            }
        }
    }
    out
}

/// The line up to a `//` that is not inside a string literal.
fn without_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// Whether `needle` occurs in `code` not preceded by a character of an identifier (so `fs::`
/// is not found in `xfs::`, nor `File::` in `ProfileFile::`).
fn contains_word(code: &str, needle: &str) -> bool {
    code.match_indices(needle).any(|(at, _)| {
        code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Whether `needle` occurs in `code` as the first segment of a path (`fs::read`, not
/// `std::fs::read`, which [`contains_word`] reports, nor `xfs::`).
fn contains_short(code: &str, needle: &str) -> bool {
    code.match_indices(needle).any(|(at, _)| {
        code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
    })
}

/// What is between the braces of a `std::{...}` on this line, if any.
fn std_group(code: &str) -> Option<&str> {
    let start = code.find("std::{")? + "std::{".len();
    let end = code[start..].rfind('}').map_or(code.len(), |e| start + e);
    Some(&code[start..end])
}

/// The identifier before each `.NAME(` on the line (`""` when it is not an identifier, e.g. a
/// call's result: `x.join(y).exists()`).
fn method_receivers(code: &str, name: &str) -> Vec<String> {
    let call = format!(".{name}(");
    code.match_indices(&call)
        .map(|(at, _)| {
            code[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
                .chars()
                .rev()
                .collect()
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
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

#[test]
fn sandbox_core_makes_no_system_call() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 5,
        "found only {} source files under {}: is the walk broken?",
        files.len(),
        src.display()
    );
    let mut report = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for f in system_calls(&text) {
            let shown = file
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap_or(file);
            report.push(format!("{}:{}: {}", shown.display(), f.line, f.what));
        }
    }
    assert!(
        report.is_empty(),
        "sandbox-core must make no system call (take what touches the disk through a trait the \
         caller implements, as `Resolver` does):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_checker_finds_a_planted_call() {
    let planted = r#"use std::path::Path;
use std::os::unix::ffi::OsStrExt;
fn decide(p: &Path) -> bool {
    let a = std::fs::metadata(p).is_ok();
    let b = p.canonicalize().is_ok();
    let c = p.join("x").exists();
    let d = std::env::var("HOME").is_ok();
    a && b && c && d
}
use std::{collections::BTreeMap, fs};
fn more() { let _ = fs::read("x"); let _ = libc::getpid(); let _ = File::open("x"); }
fn allowed(resolver: &dyn Resolver, pattern: &RefusedPattern, p: &Path) -> bool {
    // std::fs in a comment is fine; so is "a string with // in it" then code:
    let s = "std::fs is named in a string // not a comment"; // std::process here is a comment
    resolver.is_dir(p) && pattern.is_dir() && resolver.canonicalize(p).is_ok() && s.is_empty()
}
"#;
    let found: Vec<(usize, String)> = system_calls(planted)
        .into_iter()
        .map(|f| (f.line, f.what))
        .collect();
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    // Lines 4 (`std::fs::metadata`), 5 (`.canonicalize` on a path), 6 (`.exists` on a call's
    // result), 7 (`std::env`), 10 (`fs` in a `std::{...}` group), 11 (`fs::`, `libc::`, `File::`).
    for line in [4, 5, 6, 7, 10, 11] {
        assert!(lines.contains(&line), "line {line} not found: {found:?}");
    }
    // Line 14 names std::fs only inside a string: a string is reported (the checker does not
    // parse strings; rephrase the text), so the planted string is the only finding there.
    assert!(
        found.iter().filter(|(l, _)| *l == 14).count() == 1,
        "line 14: {found:?}"
    );
    // The comment, the trait's methods and the pattern's own `is_dir` are not findings.
    for line in [1, 2, 3, 12, 13, 15] {
        assert!(
            !lines.contains(&line),
            "line {line} wrongly found: {found:?}"
        );
    }
    assert_eq!(
        found.iter().filter(|(l, _)| *l == 11).count(),
        3,
        "fs::, libc:: and File:: on line 11: {found:?}"
    );
}
