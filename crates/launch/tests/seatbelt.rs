//! The Seatbelt backend, checked where `sandbox-exec` does not run: the generated profile is read
//! by our SBPL evaluator and must agree with `Policy::decide()` on every probe, under every
//! reading of Seatbelt's precedence, in another case of each refused path, and for swaps. `seatbelt_macos.rs` asks the same probes of the real
//! `sandbox-exec` on a Mac.

mod seatbelt_support;
// The count of skipped tests, shared with the tests in the repository's `tests/` folder.
#[allow(dead_code)] // On macOS this suite records no skip.
#[path = "../../../tests/support/skips.rs"]
mod skips;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use launch::seatbelt::{SANDBOX_EXEC, SeatbeltError, SeatbeltProfile};
use proptest::prelude::*;
use sandbox_core::{Access, Op};

use seatbelt_support::probes::{disagreements, probes, shell_probes, two_path_shell_probes};
use seatbelt_support::sbpl::{Model, Profile, Release, Request, Subject};
use seatbelt_support::world::{Spec, World};

const BASE: &str = "/Users";

fn compile(world: &World) -> (SeatbeltProfile, Profile) {
    let profile = SeatbeltProfile::for_policy(&world.policy).expect("a UTF-8 policy compiles");
    let read = Profile::compile(&profile.text, &profile.params)
        .unwrap_or_else(|e| panic!("{e}\n{}", profile.text));
    (profile, read)
}

fn demo() -> World {
    World::virtual_at(Path::new(BASE), &Spec::demo()).expect("the demo world builds")
}

fn no_params() -> BTreeMap<String, String> {
    BTreeMap::new()
}

fn file(op: &str, path: &str) -> Request<'static> {
    let path: &'static str = Box::leak(path.to_owned().into_boxed_str());
    Request {
        op: Box::leak(op.to_owned().into_boxed_str()),
        subject: Subject::Path(path.as_bytes()),
    }
}

fn allowed(profile: &Profile, request: Request<'_>) -> bool {
    profile.decide_all(request).unwrap().allowed
}

// --- The evaluator itself: the published, measured precedence cases and its refusals. ---

#[test]
fn evaluator_a_filtered_deny_after_a_filtered_allow_on_the_same_path_refuses() {
    let p = Profile::compile(
        "(version 1)(deny default)\
         (allow file-read* (subpath \"/a\"))(deny file-read* (subpath \"/a\"))",
        &no_params(),
    )
    .unwrap();
    assert!(!allowed(&p, file("file-read-data", "/a/x")));
}

#[test]
fn evaluator_a_filtered_allow_after_a_filtered_deny_on_the_same_path_allows() {
    let p = Profile::compile(
        "(version 1)(deny default)\
         (deny file-read* (subpath \"/a\"))(allow file-read* (subpath \"/a\"))",
        &no_params(),
    )
    .unwrap();
    assert!(allowed(&p, file("file-read-data", "/a/x")));
}

#[test]
fn evaluator_a_shallow_deny_with_a_deeper_allow_after_it_allows_the_deeper_path_only() {
    let p = Profile::compile(
        "(version 1)(allow default)\
         (deny file-read* (subpath \"/a\"))(allow file-read* (subpath \"/a/b\"))",
        &no_params(),
    )
    .unwrap();
    assert!(allowed(&p, file("file-read-data", "/a/b/x")));
    assert!(!allowed(&p, file("file-read-data", "/a/c")));
    assert!(
        allowed(&p, file("file-read-data", "/ab")),
        "subpath is per component"
    );
}

#[test]
fn evaluator_a_rule_without_a_filter_is_only_the_fallback_and_lint_says_so() {
    let p = Profile::compile(
        "(version 1)(allow default)\
         (allow file-read* (subpath \"/a\"))(deny file-read*)",
        &no_params(),
    )
    .unwrap();
    assert!(
        allowed(&p, file("file-read-data", "/a/x")),
        "the filtered rule wins"
    );
    assert!(
        !allowed(&p, file("file-read-data", "/b")),
        "the fallback of file-read*"
    );
    assert!(
        allowed(&p, file("file-write-data", "/b")),
        "default for the rest"
    );
    let lint = p.lint();
    assert_eq!(lint.len(), 1, "{lint:?}");
}

/// The operations libsandbox's table makes terminal: they fall back to `default`.
const TERMINAL: [&str; 5] = [
    "file-link",
    "file-clone",
    "file-test-existence",
    "file-map-executable",
    "file-write-setugid",
];

#[test]
fn evaluator_terminal_operations_fall_back_to_default_not_to_file_star() {
    for parent in ["file*", "file-read*", "file-write*"] {
        let p = Profile::compile(
            &format!("(version 1)(allow default)(deny {parent} (subpath \"/a\"))"),
            &no_params(),
        )
        .unwrap();
        for op in TERMINAL {
            assert!(allowed(&p, file(op, "/a/x")), "{parent} covers {op}");
        }
    }
    let p = Profile::compile(
        "(version 1)(allow default)(deny file* (subpath \"/a\"))",
        &no_params(),
    )
    .unwrap();
    for op in [
        "file-read-data",
        "file-read-metadata",
        "file-write-unlink",
        "file-ioctl",
    ] {
        assert!(!allowed(&p, file(op, "/a/x")), "file* does not cover {op}");
    }
    let p = Profile::compile(
        "(version 1)(deny default)(allow file* (subpath \"/\"))",
        &no_params(),
    )
    .unwrap();
    for op in TERMINAL {
        assert!(
            !allowed(&p, file(op, "/a/x")),
            "an allow of file* reaches {op}"
        );
    }
}

#[test]
fn evaluator_asks_both_paths_of_a_link_or_a_clone() {
    let p = Profile::compile(
        "(version 1)(allow default)\
         (deny file-link file-clone (subpath \"/closed\") (with message \"m\"))",
        &no_params(),
    )
    .unwrap();
    let two = |op, source: &'static str, destination: &'static str| {
        p.decide_all(Request {
            op,
            subject: Subject::TwoPaths {
                source: source.as_bytes(),
                destination: destination.as_bytes(),
            },
        })
        .unwrap()
        .allowed
    };
    for op in ["file-link", "file-clone"] {
        assert!(!two(op, "/closed/x", "/open/y"), "{op} from a closed file");
        assert!(
            !two(op, "/open/x", "/closed/y"),
            "{op} into a closed folder"
        );
        assert!(two(op, "/open/x", "/open/y"), "{op} between open paths");
    }
    let err = p
        .decide(
            Model::Positional,
            Request {
                op: "file-read-data",
                subject: Subject::TwoPaths {
                    source: b"/a",
                    destination: b"/b",
                },
            },
        )
        .unwrap_err();
    assert!(err.contains("only file-link and file-clone"), "{err}");
}

#[test]
fn evaluator_a_guard_keeps_a_rule_only_where_the_release_knows_its_operation() {
    let text = "(version 1)(allow default)\
                (if (defined? 'mach-task-read) (deny mach-task-read (with message \"m\")))\
                (if (defined? 'mach-task-read) (allow mach-task-read (target same-sandbox)))";
    let ask = |p: &Profile, same_sandbox| {
        p.decide_all(Request {
            op: "mach-task-read",
            subject: Subject::Process { same_sandbox },
        })
    };
    let later = Profile::compile_for(Release::MacOs11Plus, text, &no_params()).unwrap();
    assert!(!ask(&later, false).unwrap().allowed);
    assert!(ask(&later, true).unwrap().allowed);
    let older = Profile::compile_for(Release::MacOs10_15, text, &no_params()).unwrap();
    assert!(
        ask(&older, false)
            .unwrap_err()
            .contains("unknown operation")
    );
    // Unguarded, the older release refuses the profile, as a Mac of that release does.
    let bare = "(version 1)(allow default)(deny mach-task-read)";
    let err = Profile::compile_for(Release::MacOs10_15, bare, &no_params()).unwrap_err();
    assert!(err.contains("unknown operation"), "{err}");
    assert!(Profile::compile_for(Release::MacOs11Plus, bare, &no_params()).is_ok());
    // A misspelt guard would silently drop its rule on a Mac: here it is an error.
    let typo = "(version 1)(allow default)(if (defined? 'mach-task-reed) (deny mach-task-read))";
    let err = Profile::compile(typo, &no_params()).unwrap_err();
    assert!(err.contains("no release knows"), "{err}");
}

#[test]
fn evaluator_reads_process_exec_as_apples_prelude_does() {
    let p = Profile::compile(
        "(version 1)(allow default)(deny process-exec (literal \"/bin/x\"))",
        &no_params(),
    )
    .unwrap();
    assert!(!allowed(&p, file("process-exec*", "/bin/x")));
    assert!(allowed(&p, file("process-exec*", "/bin/y")));
}

#[test]
fn evaluator_filters_of_one_rule_match_when_any_does_and_params_fill_expressions() {
    let params = BTreeMap::from([("P".to_owned(), "/p (x)".to_owned())]);
    let p = Profile::compile(
        "(version 1)(allow default)\
         (deny file-read* (literal \"/a\") (regex (string-append \"^\" (regex-quote (param \"P\")) \"/[^/]*$\")))",
        &params,
    )
    .unwrap();
    assert!(!allowed(&p, file("file-read-data", "/a")));
    assert!(!allowed(&p, file("file-read-data", "/p (x)/k")));
    assert!(allowed(&p, file("file-read-data", "/p (x)/k/l")));
    assert!(
        allowed(&p, file("file-read-data", "/p x/k")),
        "quoted, not a group"
    );
}

#[test]
fn evaluator_the_four_readings_of_precedence_differ_and_decide_all_refuses_to_choose() {
    let verdicts = |text: &str, request: Request<'_>| -> Vec<bool> {
        let p = Profile::compile(text, &no_params()).unwrap();
        assert!(p.decide_all(request).is_err(), "{text}: decide_all chose");
        Model::ALL
            .iter()
            .map(|m| p.decide(*m, request).unwrap().allowed)
            .collect()
    };
    // A filtered rule on the specific operation, then a later one on its parent.
    let text = "(version 1)(allow default)\
                (deny file-write-unlink (literal \"/a\"))(allow file* (subpath \"/\"))";
    assert_eq!(
        verdicts(text, file("file-write-unlink", "/a")),
        [true, false, false, true]
    );
    // greywall's case: a later deny on the parent does not undo an allow on the child.
    let text = "(version 1)(deny default)\
                (allow file-read-data (subpath \"/a\"))(deny file-read* (literal \"/a/.env\"))";
    assert_eq!(
        verdicts(text, file("file-read-data", "/a/.env")),
        [false, true, true, false]
    );
    // nono's case: an unfiltered rule on the specific operation against a later filtered one
    // on its parent: only the specific-first reading keeps the deny.
    let text = "(version 1)(allow default)\
                (deny file-write-unlink)(allow file-write* (subpath \"/a\"))";
    assert_eq!(
        verdicts(text, file("file-write-unlink", "/a/x")),
        [true, false, true, true]
    );
    // The fourth reading: a require-all allow beats a later plain deny of the same operation.
    let text = "(version 1)(deny default)\
                (allow file-read* (require-all (subpath \"/a\") (regex #\"^/a/x\")))\
                (deny file-read* (literal \"/a/x\"))";
    assert_eq!(
        verdicts(text, file("file-read-data", "/a/x")),
        [false, false, false, true]
    );
    // ... and a require-all deny a later plain allow.
    let text = "(version 1)(allow default)\
                (deny file-read* (require-all (subpath \"/a\") (regex #\"^/a/x\")))\
                (allow file-read* (literal \"/a/x\"))";
    assert_eq!(
        verdicts(text, file("file-read-data", "/a/x")),
        [true, true, true, false]
    );
}

#[test]
fn evaluator_knows_the_196_operation_names_of_macos_14_4_1_and_refuses_any_other() {
    use seatbelt_support::sbpl::{SONOMA_OPERATIONS, sonoma_knows};
    let unique: std::collections::BTreeSet<&str> = SONOMA_OPERATIONS.iter().copied().collect();
    assert_eq!(unique.len(), 196);
    // Every name of the fallback tables exists on 14.4.1 (the prelude's alias included).
    for op in [
        "process-exec",
        "file-unmount",
        "mach-task-read",
        "job-creation",
    ] {
        assert!(sonoma_knows(op), "{op}");
    }
    // Names a profile might plausibly write that 14.4.1 does not have: refused, guarded or not.
    for op in ["file-write-rename", "file-read-stat", "mach-task-control"] {
        let text = format!("(version 1)(allow default)(deny {op} (literal \"/a\"))");
        let err = Profile::compile(&text, &no_params()).unwrap_err();
        assert!(
            err.contains("not an operation of macOS 14.4.1"),
            "{op}: {err}"
        );
        let guarded =
            format!("(version 1)(allow default)(if (defined? '{op}) (deny {op} (literal \"/a\")))");
        let err = Profile::compile(&guarded, &no_params()).unwrap_err();
        assert!(err.contains("no release knows"), "{op}: {err}");
    }
    // A 14.x name whose parent the tables do not give is refused too, rather than guessed.
    let err = Profile::compile(
        "(version 1)(allow default)(deny file-lock (literal \"/a\"))",
        &no_params(),
    )
    .unwrap_err();
    assert!(err.contains("unknown operation"), "{err}");
}

#[test]
fn evaluator_a_swap_is_refused_only_when_both_of_its_readings_as_a_rename_are() {
    let swap = |rules: &str, a: &str, b: &str| {
        let p =
            Profile::compile(&format!("(version 1)(allow default){rules}"), &no_params()).unwrap();
        p.decide_swap_all(a.as_bytes(), b.as_bytes())
            .unwrap()
            .allowed
    };
    let unlink = "(deny file-write-unlink (literal \"/p\"))";
    let create = "(deny file-write-create (literal \"/p\"))";
    let both = "(deny file-write-unlink file-write-create (literal \"/p\"))";
    // Read as a rename of the decoy onto /p, a swap asks only create of /p; read the other way
    // round, only unlink of /p. A deny of one of them leaves the other reading open.
    for rules in [unlink, create] {
        assert!(swap(rules, "/p", "/d"), "{rules}");
        assert!(swap(rules, "/d", "/p"), "{rules}");
    }
    assert!(!swap(both, "/p", "/d"));
    assert!(!swap(both, "/d", "/p"));
    assert!(swap("", "/p", "/d"));
    assert!(swap(both, "/d", "/e"));
}

#[test]
fn evaluator_case_variants_are_the_other_spellings_of_a_name() {
    use seatbelt_support::sbpl::case_variants;
    assert_eq!(
        case_variants(b"/Users/ann/.zshrc"),
        [
            b"/users/ann/.zshrc".to_vec(),
            b"/USERS/ANN/.ZSHRC".to_vec(),
            b"/uSERS/ANN/.ZSHRC".to_vec()
        ]
    );
    assert!(case_variants(b"/1/2").is_empty());
}

#[test]
fn evaluator_fails_loudly_outside_its_subset() {
    let cases = [
        ("(allow default)", "version"),
        ("(version 1)(define x 1)", "allow and deny"),
        (
            "(version 1)(allow file-reed* (subpath \"/\"))",
            "unknown operation",
        ),
        (
            "(version 1)(allow file-read* (vnode-type DIRECTORY))",
            "unknown filter",
        ),
        (
            "(version 1)(allow file-read* (literal (param \"NOPE\")))",
            "false",
        ),
        ("(version 1)(allow file-read* (regex #\"/a\"))", "anchored"),
        ("(version 1)(allow file-read* (regex #\"^(?i)/a\"))", "(?"),
        (
            "(version 1)(allow file-read* (regex #\"^/a\\d\"))",
            "backslash",
        ),
        (
            "(version 1)(allow file-read* (regex #\"^/a{2}\"))",
            "interval",
        ),
        (
            "(version 1)(allow (with report) file-read*)",
            "with message",
        ),
        ("(version 1)(allow file-read* #t)", "boolean"),
        (
            "(version 1)(allow file-read* (literal \"/a\")",
            "never closed",
        ),
    ];
    for (text, expected) in cases {
        let err = Profile::compile(text, &no_params()).unwrap_err();
        assert!(err.contains(expected), "{text}: {err}");
    }
    let p = Profile::compile(
        "(version 1)(allow file-read* (literal \"/a\"))",
        &no_params(),
    )
    .unwrap();
    let err = p
        .decide(Model::Positional, file("file-read-data", "/b"))
        .unwrap_err();
    assert!(err.contains("no rule decides"), "{err}");
    let err = p
        .decide(
            Model::Positional,
            Request {
                op: "file-read-data",
                subject: Subject::Global("com.apple.x"),
            },
        )
        .unwrap_err();
    assert!(err.contains("path filter"), "{err}");
}

// --- The generated profile. ---

#[test]
fn the_demo_profile_is_in_the_subset_clean_and_uses_every_param() {
    let world = demo();
    let (profile, read) = compile(&world);
    assert_eq!(read.lint(), Vec::<String>::new());
    assert_eq!(read.unused_params(&profile.params), Vec::<&str>::new());
}

#[test]
fn no_path_of_the_chat_is_spliced_into_the_text() {
    let world = demo();
    let (profile, _) = compile(&world);
    // Comments may name a program (`/usr/bin/open`); what counts is what Seatbelt reads.
    let rules: String = profile
        .text
        .lines()
        .map(|line| line.split(';').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    // `/` and its folded regex `^` are too short to mean anything in the text.
    for (name, value) in profile
        .params
        .iter()
        .filter(|(_, v)| !matches!(v.as_str(), "/" | "^"))
    {
        assert!(
            !rules.contains(value.as_str()),
            "{name}={value} appears in the text"
        );
    }
    for path in world.dirs.iter().chain(world.files.keys()) {
        let text = path.to_str().unwrap();
        if text.len() > 1 {
            assert!(!rules.contains(text), "{text} appears in the text");
        }
    }
}

#[test]
fn the_demo_profile_agrees_with_decide_on_every_probe() {
    let world = demo();
    let (profile, _) = compile(&world);
    let probes = probes(&world);
    assert!(probes.len() > 500, "only {} probes", probes.len());
    // A Mac of either release compiles it (the task-port rules are guarded) and reads the same.
    for release in Release::ALL {
        let read = Profile::compile_for(release, &profile.text, &profile.params)
            .unwrap_or_else(|e| panic!("{release:?}: {e}"));
        let failures = disagreements(&read, &world);
        assert!(failures.is_empty(), "{release:?}: {}", failures.join("\n"));
    }
}

#[test]
fn hard_links_and_clones_are_refused_at_either_end_where_decide_refuses_writing() {
    let world = demo();
    let (_, read) = compile(&world);
    let p = &world.policy;
    let home = &world.home;
    let rw = p
        .grants()
        .iter()
        .find(|g| g.access == Access::ReadWrite)
        .unwrap();
    let ro = p
        .grants()
        .iter()
        .find(|g| g.access == Access::ReadOnly)
        .unwrap();
    let ask = |op: &str, source: &Path, destination: &Path| {
        let (s, d) = (source.to_str().unwrap(), destination.to_str().unwrap());
        let v = read
            .decide_all(Request {
                op: Box::leak(op.to_owned().into_boxed_str()),
                subject: Subject::TwoPaths {
                    source: s.as_bytes(),
                    destination: d.as_bytes(),
                },
            })
            .unwrap();
        (
            v.allowed,
            v.message
                .map(|m| m.trim_start_matches("cli-sandbox: ").to_owned()),
        )
    };
    let refused = |rule: &str| (false, Some(rule.to_owned()));
    let out = home.join("out");
    let config = world.layout.app_folder.join("config.json");
    for op in ["file-link", "file-clone"] {
        // Out of protected data, a refused entry, a read-only grant, a blocked program.
        assert_eq!(ask(op, &config, &out), refused("closed"), "{op}");
        assert_eq!(
            ask(op, &rw.path.join("planning/plan.json"), &out),
            refused("refused"),
            "{op}"
        );
        assert_eq!(
            ask(op, &ro.path.join("doc.md"), &out),
            refused("granted"),
            "{op}"
        );
        assert_eq!(
            ask(op, &p.blocked_programs()[0], &out),
            refused("blocked"),
            "{op}"
        );
        // Into them.
        let notes = home.join("notes.txt");
        assert_eq!(
            ask(op, &notes, &ro.path.join("new")),
            refused("granted"),
            "{op}"
        );
        assert_eq!(
            ask(op, &notes, &world.layout.app_folder.join("new")),
            refused("closed"),
            "{op}"
        );
        assert_eq!(ask(op, &notes, &out), (true, None), "{op}");
    }
    // A hard link out of the chat's own folders would outlive the chat; a clone is a copy.
    let work = p.runtime().join("work.txt");
    assert_eq!(ask("file-link", &work, &out), refused("runtime"));
    assert_eq!(
        ask("file-link", &rw.path.join("doc.md"), &out),
        refused("granted")
    );
    assert_eq!(ask("file-clone", &work, &out), (true, None));
    assert_eq!(
        ask("file-clone", &rw.path.join("doc.md"), &out),
        (true, None)
    );
    // A clone of a folder copies everything beneath it.
    assert_eq!(ask("file-clone", &rw.path, &out), refused("refused"));
    assert_eq!(
        ask("file-clone", &home.join("Library"), &out),
        refused("refused")
    );
    assert_eq!(ask("file-clone", home, &out), refused("blocked"));
    assert_eq!(ask("file-clone", p.runtime(), &out), (true, None));
}

#[test]
fn the_demo_probes_cover_every_rule_of_decide_allowed_and_refused() {
    let world = demo();
    let mut seen = std::collections::BTreeSet::new();
    for (op, path) in probes(&world) {
        let v = world.policy.decide(op, &path);
        seen.insert((v.rule.name(), v.allowed));
    }
    for expected in [
        ("open", true),
        ("runtime", true),
        // (Moving the runtime is refused by settings: it holds the CLIs' project settings.)
        ("settings", true),
        ("settings", false),
        ("granted", true),
        ("granted", false),
        ("closed", false),
        ("refused", false),
        ("pinned", false),
        ("blocked", false),
    ] {
        assert!(
            seen.contains(&expected),
            "no probe is decided by {expected:?}"
        );
    }
}

#[test]
fn with_a_root_launcher_the_system_is_read_only_outside_the_writable_places() {
    let spec = Spec {
        privileged: true,
        ..Spec::demo()
    };
    let world = World::virtual_at(Path::new(BASE), &spec).expect("the privileged demo builds");
    let (profile, read) = compile(&world);
    assert_eq!(read.lint(), Vec::<String>::new());
    let failures = disagreements(&read, &world);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for (path, allowed) in [
        ("/etc/periodic/daily/x", false),
        ("/usr/local/bin/x", false),
        ("/Library/LaunchDaemons/x.plist", false),
        // (On a Mac these resolve under /private; the virtual world has no symlinks.)
        ("/tmp/x", true),
        ("/var/tmp/x", true),
        ("/var/folders/zz/x/T/y", true),
    ] {
        let path = Path::new(path);
        assert_eq!(
            world.policy.decide(Op::Write, path).allowed,
            allowed,
            "{}",
            path.display()
        );
        seatbelt_support::probes::agrees(&read, &world, Op::Write, path).unwrap();
        seatbelt_support::probes::agrees(&read, &world, Op::Read, path).unwrap();
    }
    let plain = compile(&World::virtual_at(Path::new(BASE), &Spec::demo()).unwrap()).0;
    assert!(
        !plain.text.contains("WRITABLE"),
        "only a root launcher gets the rule"
    );
    assert!(profile.text.contains("cli-sandbox: system"));
}

fn hardened_demo() -> World {
    let spec = Spec {
        harden: true,
        ..Spec::demo()
    };
    World::virtual_at(Path::new(BASE), &spec).expect("the hardened demo world builds")
}

#[test]
fn with_harden_the_profile_agrees_with_decide_and_closes_persistence_paths() {
    let world = hardened_demo();
    let (profile, read) = compile(&world);
    assert_eq!(read.lint(), Vec::<String>::new());
    assert_eq!(read.unused_params(&profile.params), Vec::<&str>::new());
    let failures = disagreements(&read, &world);
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let home = &world.home;
    let write = |path: &Path, op: &str| {
        let text = path.to_str().unwrap().to_owned();
        read.decide_all(file(op, &text)).unwrap()
    };
    for path in [
        home.join(".bashrc"),
        home.join(".zprofile"),
        home.join("Library/LaunchAgents/com.example.agent.plist"),
        home.join("Library/LaunchAgents/new-later.plist"),
        home.join(".config/fish/conf.d/new.fish"),
        home.join(".ssh/authorized_keys"),
        // Issue 25: the places a list missed, and the home's top as a class (a start file no
        // list names, in any case; a new file; a folder made there).
        home.join(".npmrc"),
        home.join(".local/lib/python3.11/site-packages/evil.pth"),
        home.join(".local/lib/python3.99/site-packages/new.pth"),
        home.join(".local/bin/tool"),
        home.join(".cargo/config.toml"),
        home.join(".aws/config"),
        home.join(".kube/config"),
        home.join(".docker/config.json"),
        home.join(".vimrc"),
        home.join(".gdbinit"),
        home.join(".inputrc"),
        home.join("Library/Python/3.12/lib/python/site-packages/evil.pth"),
        home.join("Library/Preferences/com.apple.Terminal.plist"),
        home.join(".curlrc"),
        home.join(".CURLRC"),
        home.join("notes.txt"),
        home.join("new-folder"),
        home.join(".CLAUDE.JSON.tmp.42.abcdef"),
    ] {
        for op in ["file-write-data", "file-write-create", "file-write-unlink"] {
            let v = write(&path, op);
            assert!(!v.allowed, "{op} {}", path.display());
            assert_eq!(v.message.as_deref(), Some("cli-sandbox: hardened"));
        }
        assert!(write(&path, "file-read-data").allowed, "{}", path.display());
    }
    for path in [
        home.join("proj/doc.md"),
        home.join(".ssh/known_hosts"),
        home.join(".config/other-app/settings.json"),
        home.join("Library/new.txt"),
        home.join(".cargo/registry/index"),
        home.join(".aws/cli/cache/token.json"),
    ] {
        assert!(
            write(&path, "file-write-data").allowed,
            "{}",
            path.display()
        );
    }
    // Claude Code's `~/.claude.json` is no state file written at the top any more (a place it
    // acts on at start: read-only in every chat), nor are the temporary names of its save.
    let temp = home.join(".claude.json.tmp.42.abcdef");
    for path in [home.join(".claude.json"), temp] {
        for op in ["file-write-create", "file-write-data", "file-write-unlink"] {
            assert!(!write(&path, op).allowed, "{op} {}", path.display());
        }
    }
    // (`~/Library` is pinned as well: the app folder is inside it, and pinned comes first.)
    // (`~/.config` holds acted-on settings, Muse's and Cursor's: its refusal is the settings
    // rule's, which outranks this one.)
    for ancestor in [home.join(".config"), home.join(".ssh")] {
        let v = write(&ancestor, "file-write-unlink");
        assert!(!v.allowed, "{}", ancestor.display());
        let by = if ancestor.ends_with(".config") {
            "cli-sandbox: settings"
        } else {
            "cli-sandbox: hardened"
        };
        assert_eq!(v.message.as_deref(), Some(by));
    }
    let (plain, _) = compile(&demo());
    assert!(!plain.text.contains("HARDENED"), "harden is off by default");
    assert!(
        profile
            .text
            .contains("(with message \"cli-sandbox: hardened\")")
    );
}

/// Issue 24 on macOS: a chat cannot leave anything in the CLIs' settings (`Rule::Settings`) that
/// a later chat's CLI would act on. Each way in, asked of the profile under every reading, each
/// with its control: the same operation on a neighbour that is the CLI's state (or an open file)
/// is allowed.
#[test]
fn settings_cannot_be_written_made_linked_or_moved_in_any_case_and_their_neighbours_can() {
    for world in [demo(), hardened_demo()] {
        settings_attacks(&world);
    }
}

fn settings_attacks(world: &World) {
    let (profile, read) = compile(world);
    assert!(profile.text.contains("cli-sandbox: settings"));
    let home = world.home.clone();
    let runtime = world.policy.runtime().to_owned();
    let text = |p: &Path| p.to_str().unwrap().to_owned();
    let ask = |op: &str, path: &Path| {
        let path = text(path);
        read.decide_all(file(op, &path)).unwrap()
    };
    let refused_by_settings = |op: &str, path: &Path| {
        let v = ask(op, path);
        assert!(!v.allowed, "{op} {} allowed", path.display());
        assert_eq!(
            v.message.as_deref(),
            Some("cli-sandbox: settings"),
            "{op} {}",
            path.display()
        );
    };
    // With `harden` the home's top is closed as a class: the controls there are the runtime's.
    let harden = !world.policy.hardened().is_empty();
    let allowed = |op: &str, path: &Path| {
        let v = ask(op, path);
        assert!(
            v.allowed,
            "control: {op} {} refused by rule {}",
            path.display(),
            v.rule
        );
    };
    let rename = |source: &Path, destination: &Path| {
        let unlink = ask("file-write-unlink", source);
        if !unlink.allowed {
            return unlink;
        }
        ask("file-write-create", destination)
    };
    let two = |op: &str, source: &Path, destination: &Path| {
        let (s, d) = (text(source), text(destination));
        read.decide_all(Request {
            op: Box::leak(op.to_owned().into_boxed_str()),
            subject: Subject::TwoPaths {
                source: Box::leak(s.into_boxed_str()).as_bytes(),
                destination: Box::leak(d.into_boxed_str()).as_bytes(),
            },
        })
        .unwrap()
    };
    let open = home.join("work/notes.txt");
    let planted = home.join("work/planted.json");

    // Settings that exist (a file, a file in a settings folder, one above the runtime, one in
    // the runtime), with a neighbour each that is the CLI's state or the chat's own file.
    let settings_file = home.join(".claude/settings.json");
    let pairs = [
        (settings_file.clone(), home.join(".claude/history.jsonl")),
        (
            home.join(".claude/commands/review.md"),
            home.join(".claude/projects/p/session.jsonl"),
        ),
        (
            home.join(".codex/config.toml"),
            home.join(".codex/sessions/s.jsonl"),
        ),
        (runtime.join("CLAUDE.md"), runtime.join("work.txt")),
    ];
    for (setting, neighbour) in &pairs {
        // Write, truncate, change its mode or times: the data and the attributes.
        for op in [
            "file-write-data",
            "file-write-mode",
            "file-write-times",
            "file-write-xattr",
            "file-write-unlink",
        ] {
            refused_by_settings(op, setting);
            allowed(op, neighbour);
        }
        // Rename over it (its name given to a planted file), and a swap with it.
        let v = rename(&planted, setting);
        assert!(!v.allowed, "rename over {}", setting.display());
        assert!(
            rename(&planted, neighbour).allowed,
            "control: rename over {}",
            neighbour.display()
        );
        let (s, o) = (text(setting), text(&open));
        assert!(
            !read
                .decide_swap_all(s.as_bytes(), o.as_bytes())
                .unwrap()
                .allowed
        );
        // A hard link at its name, or of it (another writable name for the same file); a clone
        // over it.
        for op in ["file-link", "file-clone"] {
            assert!(
                !two(op, &open, setting).allowed,
                "{op} onto {}",
                setting.display()
            );
            assert!(
                !two(op, setting, &planted).allowed,
                "{op} of {}",
                setting.display()
            );
        }
        assert!(
            two("file-clone", &open, neighbour).allowed,
            "control: clone onto {}",
            neighbour.display()
        );
        // Read, always (the person's settings reach the chat's CLI).
        allowed("file-read-data", setting);
    }
    // A hard link of the CLI's state in its folder is not refused by the settings rule (the
    // open home's rule decides: allowed).
    assert!(two("file-link", &open, &home.join(".claude/history.jsonl")).allowed);

    // Missing: a settings file, a settings folder, one in a CLI's folder that is missing
    // altogether, one in the runtime: not made, not as a file, a folder or a symlink (each is
    // `file-write-create` on the name), not by a hard link or a rename onto it. The control:
    // a new name beside it.
    let missing = [
        (home.join(".claude/skills"), home.join(".claude/todos")),
        (
            home.join(".claude/skills/evil/SKILL.md"),
            home.join(".claude/todos/t.json"),
        ),
        (
            home.join(".claude/CLAUDE.md"),
            home.join(".claude/new-state.json"),
        ),
        (
            home.join(".gemini/settings.json"),
            home.join("work/gemini-notes.json"),
        ),
        (
            home.join(".agents/skills/x/SKILL.md"),
            home.join("work/agents.md"),
        ),
        (runtime.join(".mcp.json"), runtime.join("new.json")),
        (
            runtime.join(".claude/settings.local.json"),
            runtime.join("sub/new.json"),
        ),
    ];
    for (setting, neighbour) in &missing {
        refused_by_settings("file-write-create", setting);
        allowed("file-write-create", neighbour);
        assert!(
            !rename(&planted, setting).allowed,
            "rename onto {}",
            setting.display()
        );
        assert!(
            !two("file-link", &open, setting).allowed,
            "link onto {}",
            setting.display()
        );
    }
    // A missing CLI folder: not made (mkdir, a symlink to a folder of planted settings, or a
    // prepared folder renamed in, all `file-write-create` on the name).
    for folder in [
        home.join(".gemini"),
        home.join(".agents"),
        home.join(".pi/agent"),
    ] {
        refused_by_settings("file-write-create", &folder);
        assert!(!rename(&home.join("work"), &folder).allowed);
    }
    if !harden {
        allowed("file-write-create", &home.join(".gemini-notes"));
        allowed("file-write-create", &home.join("Notes.md"));
    }

    // The folder above renamed away (and a new one made in its place), or swapped with a
    // prepared one: refused at the folder, whatever the settings in it.
    for folder in [
        home.join(".claude"),
        home.join(".codex"),
        home.join(".claude/commands"),
    ] {
        refused_by_settings("file-write-unlink", &folder);
        refused_by_settings("file-write-create", &folder);
        let (f, w) = (text(&folder), text(&home.join("work")));
        assert!(
            !read
                .decide_swap_all(f.as_bytes(), w.as_bytes())
                .unwrap()
                .allowed
        );
    }
    // A folder of the CLI's state beside them moves freely.
    allowed("file-write-unlink", &home.join(".claude/projects/p"));
    allowed("file-write-unlink", &home.join(".claude/projects"));

    // Another case of the name is the same file on a case-insensitive volume.
    use seatbelt_support::sbpl::case_variants;
    for path in [
        home.join(".claude/settings.json"),
        home.join(".claude/skills/x"),
        home.join(".gemini/settings.json"),
        runtime.join(".mcp.json"),
    ] {
        let bytes = text(&path).into_bytes();
        let mut spellings = case_variants(&bytes);
        spellings.push(
            text(&path)
                .replace(".claude", ".CLAUDE")
                .replace(".gemini", ".Gemini")
                .replace(".mcp.json", ".MCP.JSON")
                .into_bytes(),
        );
        for spelling in spellings {
            for op in ["file-write-data", "file-write-create", "file-write-unlink"] {
                let v = read
                    .decide_all(Request {
                        op,
                        subject: Subject::Path(&spelling),
                    })
                    .unwrap();
                assert!(!v.allowed, "{op} {}", String::from_utf8_lossy(&spelling));
            }
        }
    }
    // ... and the folder above in another case.
    for folder in [".CLAUDE", ".Claude", ".GEMINI"] {
        let path = home.join(folder);
        assert!(!ask("file-write-unlink", &path).allowed, "{folder}");
        assert!(!ask("file-write-create", &path).allowed, "{folder}");
    }
}

#[test]
fn with_secrets_closed_the_credential_places_are_closed_in_any_case_and_the_clis_logins_open() {
    let spec = Spec {
        secrets: true,
        ..Spec::demo()
    };
    let world = World::virtual_at(Path::new(BASE), &spec).expect("the world builds");
    let (profile, read) = compile(&world);
    assert_eq!(read.lint(), Vec::<String>::new());
    assert_eq!(read.unused_params(&profile.params), Vec::<&str>::new());
    let failures = disagreements(&read, &world);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The control: the same world without the option, where the home is open.
    let (_, open) = compile(&demo());

    let home = world.home.to_str().unwrap().to_owned();
    let ask = |profile: &Profile, op: &str, path: &str| {
        profile
            .decide_all(file(op, &format!("{home}/{path}")))
            .unwrap()
    };
    for path in [
        ".ssh/id_ed25519",
        ".SSH/id_ed25519",
        ".Ssh/ID_ED25519",
        ".aws/credentials",
        ".AWS/config",
        ".config/gh/hosts.yml",
        ".CONFIG/GH/hosts.yml",
        ".netrc",
        ".NETRC",
        ".npmrc",
        ".docker/config.json",
        ".Docker/Config.JSON",
        ".kube/config",
        ".gnupg/private-keys-v1.d/key.key",
        ".config/gcloud/credentials.db",
        ".azure/msal_token_cache.json",
        ".pypirc",
        // Made during the chat: the rule is on the name, whether or not it exists.
        ".ssh/new_key",
        ".git-credentials",
    ] {
        for op in [
            "file-read-data",
            "file-read-metadata",
            "file-write-data",
            "file-write-create",
            "file-write-unlink",
            "file-link",
            "file-clone",
        ] {
            let v = ask(&read, op, path);
            assert!(!v.allowed, "{op} ~/{path}");
            assert_eq!(
                v.message.as_deref(),
                Some("cli-sandbox: secret"),
                "{op} ~/{path}"
            );
            if op == "file-read-data" {
                assert!(ask(&open, op, path).allowed, "control: {op} ~/{path}");
            }
        }
    }
    // The CLIs' own logins, and the rest of the home and of `~/.docker` and `~/.config`.
    for path in [
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".gemini/oauth_creds.json",
        ".claude.json",
        ".docker/contexts/meta.json",
        ".config/other-app/settings.json",
        "notes.txt",
    ] {
        assert!(ask(&read, "file-read-data", path).allowed, "~/{path}");
    }
    // No ancestor moved, replaced or cloned (a renamed `~/.config` would carry `gh` away).
    for ancestor in [".config", ".CONFIG", ".docker", ".cargo", ".local/share"] {
        for op in ["file-write-unlink", "file-write-create", "file-clone"] {
            let v = ask(&read, op, ancestor);
            assert!(!v.allowed, "{op} ~/{ancestor}");
        }
        // `~/.config` holds acted-on settings (Muse's `~/.config/muse/settings.json`, Cursor's
        // under `$XDG_CONFIG_HOME`): pinned in every chat by `Rule::Settings`, no control there.
        if !ancestor.eq_ignore_ascii_case(".config") {
            assert!(
                ask(&open, "file-write-unlink", ancestor).allowed,
                "control: ~/{ancestor}"
            );
        }
    }

    // A hard link is refused at either end (`file-link` asks both), so the chat cannot make a
    // second name for a key in the open home (a symlink is judged at its target, which is the
    // rule above: Seatbelt resolves it before asking).
    let source = format!("{home}/.ssh/id_ed25519");
    let destination = format!("{home}/work/key");
    let link = |profile: &Profile| {
        profile
            .decide_all(Request {
                op: "file-link",
                subject: Subject::TwoPaths {
                    source: source.as_bytes(),
                    destination: destination.as_bytes(),
                },
            })
            .unwrap()
            .allowed
    };
    assert!(!link(&read), "a hard link to a key");
    assert!(link(&open), "control: the same link with the home open");
}

fn specs() -> impl Strategy<Value = Spec> {
    let grants = proptest::sample::subsequence(
        vec![
            "wf-1",
            "wf-2",
            "wf-3",
            "wf-1/sub",
            "wf-1/planning",
            "wf-3/sub/planning",
            "@runtime/sub",
            "@runtime",
        ],
        0..=5,
    );
    let refused = proptest::sample::subsequence(
        vec!["secrets/", "*.key", "s?b/", "doc.md", "sub/", "Old.*"],
        0..=3,
    );
    let protected = proptest::sample::subsequence(vec!["ann/tenant", "srv/other"], 0..=2);
    (
        prop_oneof![
            Just(None),
            Just(Some("srv/aw-state")),
            Just(Some("ann/aw-state"))
        ],
        prop_oneof![
            Just(None),
            Just(Some("ann/docs")),
            Just(Some("shared/ws-docs"))
        ],
        grants,
        proptest::collection::vec(any::<bool>(), 9),
        refused,
        protected,
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                state,
                docs,
                grants,
                read_only,
                refused,
                protected,
                (b1, b2, socket, harden, privileged, secrets),
            )| {
                let docs_rel = docs.map(str::to_owned).unwrap_or_else(|| {
                    format!(
                        "{}/workspace-docs",
                        state.unwrap_or("ann/Library/Application Support/AgentWorks")
                    )
                });
                let mut blocked = Vec::new();
                if b1 {
                    blocked.push("ann/bin/tool.sh".to_owned());
                }
                if b2 {
                    blocked.push(format!("{docs_rel}/workflows/wf-1/tool.sh"));
                }
                Spec {
                    home: "ann".into(),
                    state_root: state.map(str::to_owned),
                    workspace_docs: docs.map(str::to_owned),
                    workflows: vec!["wf-1".into(), "wf-2".into(), "wf-3".into()],
                    grants: grants
                        .into_iter()
                        .zip(read_only)
                        .map(|(g, ro)| {
                            let access = if ro {
                                Access::ReadOnly
                            } else {
                                Access::ReadWrite
                            };
                            (g.to_owned(), access)
                        })
                        .collect(),
                    chat: "chat-1".into(),
                    other_chat: "chat-2".into(),
                    refused: refused.into_iter().map(str::to_owned).collect(),
                    protected: protected.into_iter().map(str::to_owned).collect(),
                    blocked,
                    sockets: if socket {
                        vec!["ann/.agent/agent.sock".into()]
                    } else {
                        Vec::new()
                    },
                    harden,
                    secrets,
                    privileged,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn generated_profiles_agree_with_decide_on_every_probe(spec in specs()) {
        let world = World::virtual_at(Path::new(BASE), &spec);
        // A grant inside an entry another grant refuses is refused by the policy, not compiled.
        if let Err(e) = &world {
            prop_assume!(!e.contains("which the grant"), "{}", e);
        }
        let world = world.map_err(|e| TestCaseError::fail(format!("{spec:?}: {e}")))?;
        let (profile, read) = compile(&world);
        prop_assert_eq!(read.lint(), Vec::<String>::new());
        prop_assert_eq!(read.unused_params(&profile.params), Vec::<&str>::new());
        let failures = disagreements(&read, &world);
        if !failures.is_empty() {
            return Err(TestCaseError::fail(format!(
                "{}\n{spec:?}\n{}",
                failures.join("\n"),
                profile.text
            )));
        }
    }
}

// --- The ways out, which decide() does not model. ---

#[test]
fn apple_events_launch_services_and_mounts_are_refused() {
    let world = demo();
    let (_, read) = compile(&world);
    for op in ["appleevent-send", "lsopen"] {
        let v = read
            .decide_all(Request {
                op,
                subject: Subject::Nothing,
            })
            .unwrap();
        assert!(!v.allowed, "{op}");
        assert_eq!(v.message.as_deref(), Some("cli-sandbox: way-out"));
    }
    for name in [
        "com.apple.coreservices.appleevents",
        "com.apple.coreservices.launchservicesd",
        "com.apple.CoreServices.coreservicesd",
        "com.apple.lsd.mapdb",
        "com.apple.lsd.open",
    ] {
        let request = Request {
            op: "mach-lookup",
            subject: Subject::Global(name),
        };
        assert!(!allowed(&read, request), "{name}");
    }
    for name in [
        "com.apple.system.logger",
        "com.apple.lsdx",
        "com.apple.trustd.agent",
    ] {
        let request = Request {
            op: "mach-lookup",
            subject: Subject::Global(name),
        };
        assert!(allowed(&read, request), "{name}");
    }
    let grant = &world.policy.grants()[0].path;
    for path in [
        world.home.join("mnt"),
        grant.join("mnt"),
        world.policy.runtime().join("mnt"),
    ] {
        let text = path.to_str().unwrap().to_owned();
        // An unmount takes away what the rules name as surely as a mount changes it.
        for op in ["file-mount", "file-unmount"] {
            assert!(!allowed(&read, file(op, &text)), "{op} {text}");
        }
    }
}

#[test]
fn a_pinned_folder_a_grant_or_the_runtime_cannot_be_swapped_with_a_folder_of_the_open_home() {
    let world = demo();
    let (_, read) = compile(&world);
    let decoy = world.home.join("decoy");
    let decoy = decoy.as_os_str().as_encoded_bytes();
    let p = &world.policy;
    let app = &world.layout.app_folder;
    let mut cases: Vec<(PathBuf, &str)> = vec![
        (app.parent().unwrap().to_owned(), "pinned"),
        (app.clone(), "pinned"),
        (world.home.clone(), "pinned"),
        // The runtime holds the CLIs' project settings (`decide()`: settings before runtime).
        (p.runtime().to_owned(), "settings"),
        (world.home.join(".claude"), "settings"),
    ];
    for grant in p.grants() {
        cases.push((grant.path.clone(), "granted"));
    }
    for (path, rule) in cases {
        let bytes = path.as_os_str().as_encoded_bytes();
        for (a, b) in [(bytes, decoy), (decoy, bytes)] {
            let v = read.decide_swap_all(a, b).unwrap();
            assert!(
                !v.allowed && v.message.as_deref() == Some(&format!("cli-sandbox: {rule}")),
                "swap {} with the decoy: {v:?}",
                path.display()
            );
        }
    }
    // The decoy itself may be moved: the home is open.
    let other = world.home.join("other");
    assert!(
        read.decide_swap_all(decoy, other.as_os_str().as_encoded_bytes())
            .unwrap()
            .allowed
    );
}

#[test]
fn every_deny_holds_in_any_case_of_the_name() {
    use seatbelt_support::sbpl::case_variants;
    let world = hardened_demo();
    let (_, read) = compile(&world);
    let app = world.layout.app_folder.to_str().unwrap().to_owned();
    let home = world.home.to_str().unwrap().to_owned();
    let refused_in_every_case = |op: &str, path: &str| {
        let mut spellings = vec![path.as_bytes().to_vec()];
        spellings.extend(case_variants(path.as_bytes()));
        for spelling in spellings {
            let v = read
                .decide_all(Request {
                    op,
                    subject: Subject::Path(&spelling),
                })
                .unwrap();
            assert!(
                !v.allowed,
                "{op} {:?} allowed by rule {}",
                String::from_utf8_lossy(&spelling),
                v.rule
            );
        }
    };
    // A closed file of the app folder, and the app folder's own name.
    refused_in_every_case("file-read-data", &format!("{app}/config.json"));
    refused_in_every_case("file-write-unlink", &app);
    // A hardened file missing from the world, created in another case (`~/.ZLOGIN` is
    // `~/.zlogin`), and one that exists.
    refused_in_every_case("file-write-create", &format!("{home}/.zlogin"));
    refused_in_every_case("file-write-data", &format!("{home}/.zshrc"));
    refused_in_every_case(
        "file-write-create",
        &format!("{home}/Library/LaunchAgents/x.plist"),
    );
    // A blocked program run by another case: crontab has no service behind it to refuse.
    refused_in_every_case("process-exec*", "/usr/bin/crontab");
    refused_in_every_case("file-read-data", "/usr/bin/osascript");
}

#[test]
fn unix_sockets_are_refused_but_the_allowlist() {
    let world = demo();
    let (_, read) = compile(&world);
    let connect = |path: &str| {
        allowed(
            &read,
            Request {
                op: "network-outbound",
                subject: Subject::UnixSocket(
                    Box::leak(path.to_owned().into_boxed_str()).as_bytes(),
                ),
            },
        )
    };
    for refused in [
        "/private/tmp/tmux-501/default",
        "/private/var/folders/xy/T/tmux-501/default",
        "/private/tmp/codex-daemon-501/app-server.sock",
        "/private/var/run/docker.sock",
        "/Users/ann/.docker/run/docker.sock",
        "/private/var/run/mDNSResponder.other",
    ] {
        assert!(!connect(refused), "{refused}");
    }
    for allowed in [
        "/private/var/run/mDNSResponder",
        "/private/var/run/syslog",
        "/Users/ann/.agent/agent.sock",
    ] {
        assert!(connect(allowed), "{allowed}");
    }
}

#[test]
fn signals_and_task_ports_reach_only_this_sandbox() {
    let (profile, _) = compile(&demo());
    for release in Release::ALL {
        let read = Profile::compile_for(release, &profile.text, &profile.params).unwrap();
        let mut ops = vec!["signal", "mach-priv-task-port"];
        if release == Release::MacOs11Plus {
            ops.extend(["mach-task-read", "mach-task-inspect"]);
        }
        for op in ops {
            let ask = |same_sandbox| {
                read.decide_all(Request {
                    op,
                    subject: Subject::Process { same_sandbox },
                })
                .unwrap()
            };
            assert!(ask(true).allowed, "{op} inside on {release:?}");
            let outside = ask(false);
            assert!(!outside.allowed, "{op} outside on {release:?}");
            assert_eq!(outside.message.as_deref(), Some("cli-sandbox: way-out"));
        }
    }
}

#[test]
fn synthetic_input_launchd_jobs_preferences_and_other_vendors_services_are_refused() {
    let (_, read) = compile(&demo());
    let refused = |op: &'static str, subject| {
        let v = read.decide_all(Request { op, subject }).unwrap();
        !v.allowed && v.message.as_deref() == Some("cli-sandbox: way-out")
    };
    assert!(refused("hid-control", Subject::Nothing));
    assert!(refused("job-creation", Subject::Nothing));
    // Every domain, in any case: the plist of `com.apple.terminal` is Terminal's on a
    // case-insensitive volume.
    for domain in [
        "com.apple.Terminal",
        "com.apple.terminal",
        "com.googlecode.iterm2",
        "com.example.anything",
    ] {
        assert!(
            refused("user-preference-write", Subject::PreferenceDomain(domain)),
            "{domain}"
        );
    }
    assert!(allowed(
        &read,
        Request {
            op: "user-preference-read",
            subject: Subject::PreferenceDomain("com.apple.Terminal"),
        }
    ));
    let lookup = |name: &'static str| Request {
        op: "mach-lookup",
        subject: Subject::Global(name),
    };
    for name in [
        "com.apple.DiskArbitration.diskarbitrationd",
        "2BUA8C4S2C.com.1password.browser-helper",
        "com.docker.vmnetd",
        "org.example.agent",
        "com.apple",
        "com.applex.agent",
        "c",
        "com.",
    ] {
        assert!(refused("mach-lookup", lookup(name).subject), "{name}");
    }
    for name in [
        "com.apple.trustd.agent",
        "com.apple.SecurityServer",
        "com.apple.system.opendirectoryd.libinfo",
        "com.apple.FSEvents",
    ] {
        assert!(allowed(&read, lookup(name)), "{name}");
    }
}

#[test]
fn the_window_server_alerts_and_login_items_are_refused_and_the_keychain_is_not() {
    let (_, read) = compile(&demo());
    let lookup = |name: &'static str| Request {
        op: "mach-lookup",
        subject: Subject::Global(name),
    };
    // Screenshots and windows, a password dialog drawn by the system, a program the next login
    // runs.
    for name in [
        "com.apple.windowserver.active",
        "com.apple.windowserver",
        "com.apple.UNCUserNotification",
        "com.apple.coreservices.sharedfilelistd.xpc",
        "com.apple.coreservices.sharedfilelistd.mig",
        "com.apple.coreservices.sharedfilelistd.async-mig",
        "com.apple.backgroundtaskmanagementagent",
        "com.apple.backgroundtaskmanagement.agent",
        "com.apple.xpc.smd",
    ] {
        let v = read.decide_all(lookup(name)).unwrap();
        assert!(
            !v.allowed && v.message.as_deref() == Some("cli-sandbox: way-out"),
            "{name}: {v:?}"
        );
    }
    // Claude Code reads its login with /usr/bin/security, through securityd (SECURITY.md says
    // what that leaves open); the pasteboard stays too (pbcopy, pbpaste).
    for name in [
        "com.apple.SecurityServer",
        "com.apple.securityd",
        "com.apple.security.agent",
        "com.apple.pasteboard.1",
    ] {
        assert!(allowed(&read, lookup(name)), "{name}");
    }
}

#[test]
fn the_folders_above_the_runtime_show_their_metadata_but_not_their_entries() {
    let world = demo();
    let (_, read) = compile(&world);
    let runtimes = world.policy.runtimes_dir().to_str().unwrap().to_owned();
    assert!(allowed(&read, file("file-read-metadata", &runtimes)));
    assert!(!allowed(&read, file("file-read-data", &runtimes)));
    let other = world.policy.runtimes_dir().join("chat-2");
    let other = other.to_str().unwrap().to_owned();
    assert!(!allowed(&read, file("file-read-metadata", &other)));
    let config = world.layout.app_folder.join("config.json");
    assert!(!allowed(
        &read,
        file("file-read-metadata", config.to_str().unwrap())
    ));
}

// --- Text, parameters and invocation. ---

#[test]
fn hostile_paths_change_the_params_never_the_text() {
    for harden in [false, true] {
        hostile_paths_with(harden);
    }
}

fn hostile_paths_with(harden: bool) {
    let (plain, _) = compile(&if harden { hardened_demo() } else { demo() });
    for decoration in [
        " \"quoted\" (x) ;y",
        "#\"regex\"",
        ") (allow default",
        "é ü Ω 漢字",
        "a\\b $1 [x] {2} ^ | * + ?",
        "'single' `tick`",
    ] {
        let spec = Spec {
            harden,
            ..Spec::decorated(decoration)
        };
        let world = World::virtual_at(Path::new(BASE), &spec).unwrap();
        let (hostile, read) = compile(&world);
        assert_eq!(plain.text, hostile.text, "{decoration}");
        assert_ne!(plain.params, hostile.params, "{decoration}");
        assert_eq!(read.lint(), Vec::<String>::new());
        let failures = disagreements(&read, &world);
        assert!(failures.is_empty(), "{decoration}: {}", failures.join("\n"));
    }
}

#[test]
fn snapshot_of_the_demo_profile() {
    let (profile, _) = compile(&demo());
    insta::assert_snapshot!("demo_profile_text", profile.text);
    let params = serde_json::to_string_pretty(&profile.params).unwrap();
    insta::assert_snapshot!("demo_profile_params", params);
}

#[test]
fn wrap_puts_sandbox_exec_the_profile_and_params_before_the_command() {
    let (profile, _) = compile(&demo());
    let argv: Vec<OsString> = vec!["/bin/echo".into(), "--".into(), "x".into()];
    let wrapped = profile.wrap(&argv);
    assert_eq!(wrapped[0], SANDBOX_EXEC);
    assert_eq!(wrapped[1], "-p");
    assert_eq!(wrapped[2], profile.text.as_str());
    let defines: Vec<&OsString> = wrapped[3..3 + profile.params.len()].iter().collect();
    for ((name, value), define) in profile.params.iter().zip(defines) {
        assert_eq!(define, &OsString::from(format!("-D{name}={value}")));
    }
    assert_eq!(wrapped[3 + profile.params.len()], "--");
    assert_eq!(&wrapped[4 + profile.params.len()..], &argv[..]);

    let json = profile.to_json(&argv).unwrap();
    assert_eq!(json["profile"], profile.text.as_str());
    assert_eq!(
        json["params"].as_object().unwrap().len(),
        profile.params.len()
    );
    assert_eq!(json["argv"].as_array().unwrap().len(), wrapped.len());
}

/// A demo world with `grants` read-only workflow grants whose paths are 190 bytes or more.
fn many_grants(grants: usize) -> World {
    let mut spec = Spec::demo();
    spec.workflows = (0..grants)
        .map(|i| format!("wf-{i:05}-{}", "x".repeat(110)))
        .collect();
    spec.grants = spec
        .workflows
        .iter()
        .map(|w| (w.clone(), Access::ReadOnly))
        .collect();
    World::virtual_at(Path::new(BASE), &spec).unwrap()
}

/// Each top-level form of a profile's text with its length in bytes.
fn forms(text: &str) -> Vec<(usize, &str)> {
    let mut starts: Vec<usize> = text.match_indices("\n(").map(|(at, _)| at + 1).collect();
    starts.push(text.len());
    starts
        .windows(2)
        .map(|w| (w[1] - w[0], &text[w[0]..w[0] + 40.min(w[1] - w[0])]))
        .collect()
}

#[test]
fn a_thousand_grants_of_190_characters_fit_in_arg_max_and_more_is_bad_input() {
    let world = many_grants(1000);
    assert!(world.policy.grants()[0].path.as_os_str().len() >= 190);
    let profile = SeatbeltProfile::for_policy(&world.policy).unwrap();
    let argv = profile.wrap(&["/bin/true".into()]);
    let bytes: usize = argv.iter().map(|a| a.len() + 1 + 8).sum();
    assert!(bytes < 850_000, "{bytes} bytes for 1,000 grants");
    SeatbeltProfile::check_exec_size(&argv, [], 1000).unwrap();
    // The refused patterns are one parameter per depth, not one per grant.
    let refused = profile
        .params
        .keys()
        .filter(|k| k.starts_with("REFUSED"))
        .count();
    assert_eq!(refused, 1);
    let read = Profile::compile(&profile.text, &profile.params).unwrap();
    assert_eq!(read.lint(), Vec::<String>::new());

    let world = many_grants(1500);
    let profile = SeatbeltProfile::for_policy(&world.policy).unwrap();
    let argv = profile.wrap(&["/bin/true".into()]);
    let err = SeatbeltProfile::check_exec_size(&argv, [], 1500).unwrap_err();
    assert!(
        matches!(err, SeatbeltError::TooLarge { grants: 1500, .. }),
        "{err:?}"
    );
    assert!(err.is_bad_input());
    let text = err.to_string();
    assert!(
        text.contains("1500 grants") && text.contains("ARG_MAX"),
        "{text}"
    );
    // The environment counts too.
    let world = many_grants(1);
    let profile = SeatbeltProfile::for_policy(&world.policy).unwrap();
    let argv = profile.wrap(&["/bin/true".into()]);
    let big = OsString::from("x".repeat(1 << 20));
    let name = OsString::from("BIG");
    let err = SeatbeltProfile::check_exec_size(&argv, [(name.as_os_str(), big.as_os_str())], 1)
        .unwrap_err();
    assert!(matches!(err, SeatbeltError::TooLarge { .. }), "{err:?}");
}

#[test]
fn a_rule_longer_than_one_expression_is_split_and_a_longer_parameter_refused() {
    let mut spec = Spec::demo();
    spec.blocked = (0..3000)
        .map(|i| format!("ann/bin/tool-{i:04}.sh"))
        .collect();
    let world = World::virtual_at(Path::new(BASE), &spec).unwrap();
    let (profile, read) = compile(&world);
    let longest = forms(&profile.text).into_iter().max().unwrap();
    assert!(longest.0 <= launch::seatbelt::MAX_EXPRESSION, "{longest:?}");
    let blocked_rules = profile.text.matches("cli-sandbox: blocked").count();
    assert!(blocked_rules >= 3, "{blocked_rules} rules tagged blocked");
    let failures: Vec<String> = probes(&world)
        .iter()
        .filter(|(_, path)| path.starts_with(world.home.join("bin")))
        .filter_map(|(op, path)| seatbelt_support::probes::agrees(&read, &world, *op, path).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let mut spec = Spec::demo();
    spec.refused = (0..700)
        .map(|i| format!("pattern-{i:04}-{}", "y".repeat(20)))
        .collect();
    let world = World::virtual_at(Path::new(BASE), &spec).unwrap();
    let err = SeatbeltProfile::for_policy(&world.policy).unwrap_err();
    assert!(
        matches!(
            err,
            SeatbeltError::ExpressionTooLong {
                what: "refused patterns",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.is_bad_input() && err.to_string().contains("65535"),
        "{err}"
    );
}

#[test]
fn descriptors_of_the_launcher_are_not_inherited_through_sandbox_exec() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let reached = dir.path().join("reached");
    let file = std::fs::File::create(&reached).unwrap();
    let fd = file.as_raw_fd();
    // As a descriptor inherited from outside would be: not close-on-exec.
    // SAFETY: F_SETFD on a descriptor this test owns; no memory involved.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFD, 0) }, 0);
    let write_through = |close: bool| {
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", &format!("printf x >&{fd}")])
            .stderr(std::process::Stdio::null());
        if close {
            launch::seatbelt::close_inherited_descriptors(&mut cmd);
        }
        cmd.status().unwrap();
        std::fs::read_to_string(&reached).unwrap()
    };
    assert_eq!(write_through(true), "", "the descriptor reached the child");
    // The control: without the launcher's step the child writes through the descriptor.
    assert_eq!(write_through(false), "x");
    drop(file);
}

#[test]
fn a_path_that_is_not_utf8_or_a_policy_for_linux_is_a_clear_error() {
    use std::os::unix::ffi::OsStringExt;
    let bad = PathBuf::from(OsString::from_vec(b"/Users/ann/\xffbad".to_vec()));
    let policy = World::virtual_tweaked(Path::new(BASE), &Spec::demo(), &[], |config, _| {
        config.policy.protected.push(bad.clone())
    })
    .expect("the world builds")
    .policy;
    let err = SeatbeltProfile::for_policy(&policy).unwrap_err();
    assert_eq!(
        err,
        SeatbeltError::PathNotUtf8 {
            what: "protected root",
            path: bad
        }
    );
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");

    let scratch = tempfile::tempdir().unwrap();
    let demo_layout = launch::demo::Demo::create(scratch.path()).unwrap();
    let linux = launch::Context::load_for(&demo_layout.settings(), sandbox_core::Os::Linux)
        .unwrap()
        .policy(&demo_layout.chat, &[])
        .unwrap();
    let err = SeatbeltProfile::for_policy(&linux).unwrap_err();
    assert!(err.to_string().contains("not macOS"), "{err}");

    let (profile, _) = compile(&demo());
    let err = profile
        .to_json(&[OsString::from_vec(b"\xff".to_vec())])
        .unwrap_err();
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");
}

// --- The probes themselves. ---

#[test]
fn every_shell_probe_succeeds_unconfined_so_a_refusal_under_seatbelt_means_something() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let world = World::on_disk(&base, &Spec::demo()).unwrap();
    let probes = shell_probes(&world);
    assert!(probes.len() > 100, "only {} shell probes", probes.len());
    for op in Op::ALL {
        assert!(
            probes.iter().any(|p| p.op == op),
            "no shell probe for {op:?}"
        );
    }
    let unconfined = |argv: &[OsString]| argv.to_vec();
    let mut failed: Vec<String> = probes
        .iter()
        .filter(|p| !p.run(&world, &unconfined).unwrap())
        .map(|p| format!("{} {}: {}", p.op.as_str(), p.path.display(), p.script))
        .collect();
    let two = two_path_shell_probes(&world);
    assert!(two.len() > 100, "only {} link and clone probes", two.len());
    failed.extend(
        two.iter()
            .filter(|p| !p.run(&world, &unconfined).unwrap())
            .map(|p| format!("{}: {}", p.op, p.script)),
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Set where CI runs on a Mac: the real `sandbox-exec` suite must run, never be skipped.
#[cfg(not(target_os = "macos"))]
const REQUIRE_SEATBELT: &str = "CLI_SANDBOX_REQUIRE_SEATBELT";

#[cfg(not(target_os = "macos"))]
#[test]
fn the_real_sandbox_exec_suite_needs_a_mac() {
    // What the skip notice says must hold: the Mac suite exists and asks the same probes.
    let suite = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seatbelt_macos.rs"),
    )
    .expect("tests/seatbelt_macos.rs, the suite under the real sandbox-exec");
    for probes in ["shell_probes(", "two_path_shell_probes("] {
        assert!(
            suite.contains(probes),
            "seatbelt_macos.rs no longer asks {probes}..): the notice below would be wrong"
        );
    }
    assert!(
        std::env::var(REQUIRE_SEATBELT).as_deref() != Ok("1"),
        "{REQUIRE_SEATBELT}=1 asks for the real sandbox-exec suite, and this is not a Mac: \
         run it on macOS (cargo test -p launch --test seatbelt_macos)"
    );
    skips::record(
        "macOS (CLI_SANDBOX_REQUIRE_SEATBELT)",
        "the real sandbox-exec suite (seatbelt_macos.rs)",
        "this is not a Mac",
    );
    // On the real stderr: libtest captures `eprintln!`.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n!!! SKIPPED the real sandbox-exec suite: seatbelt_macos.rs asks the same probes of \
         /usr/bin/sandbox-exec and compiles only on macOS. On a Mac: cargo test -p launch --test \
         seatbelt_macos (see docs/macos.md); {REQUIRE_SEATBELT}=1 makes its absence an error.\n"
    );
}
