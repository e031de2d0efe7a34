//! The Seatbelt backend, checked where `sandbox-exec` does not run: the generated profile is read
//! by our SBPL evaluator and must agree with `Policy::decide()` on every probe, under both
//! readings of Seatbelt's precedence. `seatbelt_macos.rs` asks the same probes of the real
//! `sandbox-exec` on a Mac.

mod seatbelt_support;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use launch::seatbelt::{SANDBOX_EXEC, SeatbeltError, SeatbeltProfile};
use proptest::prelude::*;
use sandbox_core::{Access, Op};

use seatbelt_support::probes::{agrees, probes, shell_probes};
use seatbelt_support::sbpl::{Model, Profile, Request, Subject};
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
    profile.decide_both(request).unwrap().allowed
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

#[test]
fn evaluator_file_read_star_does_not_cover_test_existence_or_map_executable() {
    let p = Profile::compile(
        "(version 1)(allow default)(deny file-read* (subpath \"/a\"))",
        &no_params(),
    )
    .unwrap();
    assert!(!allowed(&p, file("file-read-metadata", "/a/x")));
    assert!(allowed(&p, file("file-test-existence", "/a/x")));
    assert!(allowed(&p, file("file-map-executable", "/a/x")));
    let p = Profile::compile(
        "(version 1)(allow default)(deny file* (subpath \"/a\"))",
        &no_params(),
    )
    .unwrap();
    assert!(!allowed(&p, file("file-test-existence", "/a/x")));
    assert!(!allowed(&p, file("file-map-executable", "/a/x")));
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
fn evaluator_the_two_readings_of_precedence_differ_and_decide_both_refuses_to_choose() {
    let p = Profile::compile(
        "(version 1)(allow default)\
         (deny file-write-unlink (literal \"/a\"))(allow file* (subpath \"/\"))",
        &no_params(),
    )
    .unwrap();
    let unlink = file("file-write-unlink", "/a");
    assert!(p.decide(Model::Positional, unlink).unwrap().allowed);
    assert!(!p.decide(Model::SpecificFirst, unlink).unwrap().allowed);
    assert!(p.decide_both(unlink).is_err());
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
    for (name, value) in profile.params.iter().filter(|(_, v)| v.as_str() != "/") {
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
    let (_, read) = compile(&world);
    let probes = probes(&world);
    assert!(probes.len() > 500, "only {} probes", probes.len());
    let failures: Vec<String> = probes
        .iter()
        .filter_map(|(op, path)| agrees(&read, &world, *op, path).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
        ("runtime", false),
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
    let failures: Vec<String> = probes(&world)
        .iter()
        .filter_map(|(op, path)| agrees(&read, &world, *op, path).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let home = &world.home;
    let write = |path: &Path, op: &str| {
        let text = path.to_str().unwrap().to_owned();
        read.decide_both(file(op, &text)).unwrap()
    };
    for path in [
        home.join(".bashrc"),
        home.join(".zprofile"),
        home.join("Library/LaunchAgents/com.example.agent.plist"),
        home.join("Library/LaunchAgents/new-later.plist"),
        home.join(".config/fish/conf.d/new.fish"),
        home.join(".ssh/authorized_keys"),
    ] {
        for op in ["file-write-data", "file-write-create", "file-write-unlink"] {
            let v = write(&path, op);
            assert!(!v.allowed, "{op} {}", path.display());
            assert_eq!(v.message.as_deref(), Some("cli-sandbox: hardened"));
        }
        assert!(write(&path, "file-read-data").allowed, "{}", path.display());
    }
    for path in [
        home.join("notes.txt"),
        home.join(".ssh/known_hosts"),
        home.join(".config/other-app/settings.json"),
        home.join("Library/new.txt"),
    ] {
        assert!(
            write(&path, "file-write-data").allowed,
            "{}",
            path.display()
        );
    }
    // (`~/Library` is pinned as well: the app folder is inside it, and pinned comes first.)
    for ancestor in [home.join(".config"), home.join(".ssh")] {
        let v = write(&ancestor, "file-write-unlink");
        assert!(!v.allowed, "{}", ancestor.display());
        assert_eq!(v.message.as_deref(), Some("cli-sandbox: hardened"));
    }
    let (plain, _) = compile(&demo());
    assert!(!plain.text.contains("HARDENED"), "harden is off by default");
    assert!(
        profile
            .text
            .contains("(with message \"cli-sandbox: hardened\")")
    );
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
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(state, docs, grants, read_only, refused, protected, (b1, b2, socket, harden))| {
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
        for (op, path) in probes(&world) {
            if let Err(e) = agrees(&read, &world, op, &path) {
                return Err(TestCaseError::fail(format!("{e}\n{spec:?}\n{}", profile.text)));
            }
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
            .decide_both(Request {
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
    let grant = &world.policy.grants[0].path;
    for path in [
        world.home.join("mnt"),
        grant.join("mnt"),
        world.policy.runtime.join("mnt"),
    ] {
        let text = path.to_str().unwrap().to_owned();
        assert!(!allowed(&read, file("file-mount", &text)), "{text}");
    }
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
    let (_, read) = compile(&demo());
    for op in ["signal", "mach-priv-task-port"] {
        let ask = |same_sandbox| {
            allowed(
                &read,
                Request {
                    op,
                    subject: Subject::Process { same_sandbox },
                },
            )
        };
        assert!(ask(true), "{op} inside");
        assert!(!ask(false), "{op} outside");
    }
}

#[test]
fn the_folders_above_the_runtime_show_their_metadata_but_not_their_entries() {
    let world = demo();
    let (_, read) = compile(&world);
    let runtimes = world.policy.runtimes_dir.to_str().unwrap().to_owned();
    assert!(allowed(&read, file("file-read-metadata", &runtimes)));
    assert!(!allowed(&read, file("file-read-data", &runtimes)));
    let other = world.policy.runtimes_dir.join("chat-2");
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
        for (op, path) in probes(&world) {
            agrees(&read, &world, op, &path).unwrap_or_else(|e| panic!("{decoration}: {e}"));
        }
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

#[test]
fn a_path_that_is_not_utf8_or_a_policy_for_linux_is_a_clear_error() {
    use std::os::unix::ffi::OsStringExt;
    let mut policy = demo().policy;
    let bad = PathBuf::from(OsString::from_vec(b"/Users/ann/\xffbad".to_vec()));
    policy.protected.push(bad.clone());
    let err = SeatbeltProfile::for_policy(&policy).unwrap_err();
    assert_eq!(
        err,
        SeatbeltError::PathNotUtf8 {
            what: "protected root",
            path: bad
        }
    );
    assert!(err.to_string().contains("not valid UTF-8"), "{err}");

    let mut linux = demo().policy;
    linux.os = sandbox_core::Os::Linux;
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
    let failed: Vec<String> = probes
        .iter()
        .filter(|p| !p.run(&world, &unconfined).unwrap())
        .map(|p| format!("{} {}: {}", p.op.as_str(), p.path.display(), p.script))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[cfg(not(target_os = "macos"))]
#[test]
fn the_real_sandbox_exec_suite_needs_a_mac() {
    eprintln!(
        "SKIPPED here: seatbelt_macos.rs asks the same probes of the real /usr/bin/sandbox-exec \
         and compiles only on macOS. On a Mac: cargo test -p launch --test seatbelt_macos \
         (see docs/macos.md)."
    );
}
