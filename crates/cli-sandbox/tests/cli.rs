//! The `cli-sandbox` command line as a person meets it: the help (snapshots), the exit statuses
//! (125 for our own failures, 126/127 when the program cannot be run, the program's otherwise),
//! strict input that names the thing and creates nothing, `plan` that makes only its plan file,
//! `pre-trust`, the logs of `-v` and `RUST_LOG`, completions and the man page, and the JSON
//! answers (a `version`, octal modes, every field in `docs/json.md`). A panic is a bug.
//!
//! The tests that need the kernel to confine say so loudly when it cannot here, or fail where
//! `CLI_SANDBOX_REQUIRE_LANDLOCK=1` (CI) asks for it.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin;
use serde_json::Value;

/// The binary with none of the caller's layout or log settings.
fn cli() -> Command {
    let mut cmd = Command::cargo_bin("cli-sandbox").unwrap();
    for var in [
        "AGENTWORKS_STATE_ROOT",
        "AGENTWORKS_WORKSPACE_DOCS",
        "XDG_DATA_HOME",
        "RUST_LOG",
        "CLI_SANDBOX_LOG",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
    ] {
        cmd.env_remove(var);
    }
    // The help is laid out for this width whatever terminal runs the tests.
    cmd.env("COLUMNS", "100");
    cmd
}

struct Layout {
    _dir: tempfile::TempDir,
    demo: launch::demo::Demo,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let demo = launch::demo::Demo::create(dir.path()).unwrap();
    Layout { _dir: dir, demo }
}

impl Layout {
    /// The binary pointed at this layout (its home, state root and configuration).
    fn cli(&self) -> Command {
        self.cli_with(&self.demo.config)
    }

    /// The same, with another configuration.
    fn cli_with(&self, config: &Path) -> Command {
        let mut cmd = cli();
        cmd.env("HOME", &self.demo.home)
            .arg("--config")
            .arg(config)
            .arg("--state-root")
            .arg(&self.demo.state_root);
        cmd
    }

    /// A configuration that also makes `program` the CLI `cli`'s program.
    fn config_with_program(&self, cli: &str, program: &Path) -> PathBuf {
        let mut text = std::fs::read_to_string(&self.demo.config).unwrap();
        text.push_str(&format!(
            "\n[cli.{cli}]\nprogram = {:?}\n",
            program.display().to_string()
        ));
        let path = self.demo.root.join(format!("with-{cli}.toml"));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A shell script the chat's launch runs in place of a CLI.
    fn stand_in(&self, name: &str, script: &str) -> PathBuf {
        let path = self.demo.root.join("bin").join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

fn text(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every path below `root`, for "nothing was created" checks.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.insert(path);
        }
    }
    out
}

/// Whether the kernel confines here; otherwise says so on the real stderr, or fails where CI
/// requires confinement.
fn confined_here(test: &str) -> bool {
    let facts = launch::facts::probe_thoroughly();
    if let sandbox_core::platform::Facts::Linux(l) = &facts
        && l.landlock_abi.is_some()
        && l.user_namespaces
    {
        return true;
    }
    let why = format!("{test}: the kernel cannot confine here (Landlock and user namespaces)");
    assert!(
        std::env::var("CLI_SANDBOX_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
        "{why}, and CLI_SANDBOX_REQUIRE_LANDLOCK=1 requires it"
    );
    let _ = writeln!(
        std::io::stderr(),
        "\n!!! SKIPPED {why}. Set CLI_SANDBOX_REQUIRE_LANDLOCK=1 to make this an error.\n"
    );
    false
}

fn explain(l: &Layout, op: &str, path: &Path) -> Value {
    let out = l
        .cli()
        .args(["explain", "--json", "--chat", &l.demo.chat])
        .args(["--grant", &l.demo.grant_arg(), "--op", op])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

// ---------- the help ----------

#[test]
fn the_help_of_every_command_reads_as_its_snapshot() {
    let commands = [
        "",
        "doctor",
        "adapters",
        "plan",
        "pre-trust",
        "run",
        "explain",
        "profile",
        "contract",
        "step",
        "completions",
        "man",
    ];
    for command in commands {
        let mut cmd = cli();
        if !command.is_empty() {
            cmd.arg(command);
        }
        let out = cmd.arg("--help").output().unwrap();
        assert!(out.status.success(), "{command}: {}", text(&out));
        let help = String::from_utf8(out.stdout).unwrap();
        for line in help.lines() {
            assert!(line.chars().count() <= 100, "{command}: too wide: {line}");
        }
        let name = if command.is_empty() {
            "cli-sandbox"
        } else {
            command
        };
        insta::assert_snapshot!(format!("help-{name}"), help);
    }
}

#[test]
fn the_help_says_every_exit_status() {
    let help = cli().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for code in ["125", "126", "127", "the program's own status"] {
        assert!(help.contains(code), "{code} missing:\n{help}");
    }
}

#[test]
fn help_and_version_are_answers_and_a_wrong_command_line_is_ours() {
    cli().arg("--help").assert().code(0);
    cli().arg("--version").assert().code(0);
    cli().args(["plan", "--help"]).assert().code(0);
    for args in [
        &["--bogus"][..],
        &["plan"],
        &["plan", "--cli", "claude"],
        &["doctor", "--jsn"],
        &["nope"],
        &[],
    ] {
        let out = cli().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", text(&out));
        assert!(!out.stderr.is_empty(), "{args:?}: said nothing");
    }
}

// ---------- exit statuses ----------

#[test]
fn bad_input_exits_125_with_a_message_naming_the_thing() {
    let l = layout();
    let strings = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            strings(&["explain", "--chat", "../x", "--op", "read", "/"]),
            "chat id",
        ),
        (
            strings(&[
                "explain",
                "--chat",
                "c",
                "--grant",
                "relative/path",
                "--op",
                "read",
                "/",
            ]),
            "not absolute",
        ),
        (
            strings(&[
                "explain",
                "--chat",
                "c",
                "--grant",
                "/does/not/exist",
                "--op",
                "read",
                "/",
            ]),
            "does not exist",
        ),
        (
            strings(&["plan", "--cli", "nope", "--chat", "c"]),
            "unknown CLI `nope`",
        ),
        (
            strings(&["--config", "/does/not/exist.toml", "doctor"]),
            "exist.toml",
        ),
        (
            strings(&[
                "plan",
                "--cli",
                "claude",
                "--chat",
                "c",
                "--mcp-bridge",
                "{",
            ]),
            "--mcp-bridge",
        ),
        (
            strings(&["run", "--json", "--cli", "claude", "--chat", "c"]),
            "--json",
        ),
    ];
    for (args, expected) in cases {
        let out = cli()
            .env("HOME", &l.demo.home)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn run_exits_127_for_a_missing_cli_and_126_for_one_that_cannot_run_writing_nothing() {
    let l = layout();
    let not_executable = l.demo.root.join("bin/not-executable");
    std::fs::write(&not_executable, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&not_executable, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::remove_dir_all(&l.demo.runtime).unwrap();
    let config = l.config_with_program("codex", Path::new("/nonexistent/codex"));
    let before = tree(&l.demo.root);
    // Missing: refused before anything is written (no pre-trust entry, no runtime).
    let out = l
        .cli_with(&config)
        .args(["run", "--cli", "codex", "--chat", &l.demo.chat])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("codex is not installed"),
        "{}",
        text(&out)
    );
    let made: Vec<_> = tree(&l.demo.root)
        .difference(&before)
        .filter(|p| !p.starts_with(l.demo.state_root.join("state/cli-sandbox")))
        .cloned()
        .collect();
    assert_eq!(made, Vec::<PathBuf>::new(), "a refused launch made these");
    // There but not runnable: the shell's 126, from the helper inside or from exec.
    let config = l.config_with_program("codex", &not_executable);
    let out = l
        .cli_with(&config)
        .args(["run", "--cli", "codex", "--chat", &l.demo.chat])
        .args(["--shape", "structured"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126), "{}", text(&out));
}

#[test]
fn run_and_step_end_with_the_programs_own_status() {
    let test = "run_and_step_end_with_the_programs_own_status";
    let l = layout();
    let program = l.stand_in("codex", "exit 3");
    let config = l.config_with_program("codex", &program);
    let out = l
        .cli_with(&config)
        .args([
            "run",
            "--cli",
            "codex",
            "--chat",
            &l.demo.chat,
            "--shape",
            "structured",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    if !confined_here(test) {
        return;
    }
    for (argv, code) in [
        (&["/bin/sh", "-c", "exit 7"][..], 7),
        (&["/bin/sh", "-c", "exit 125"], 125),
        (&["/nonexistent/program"], 127),
    ] {
        let out = l
            .cli()
            .args(["step", "--chat", &l.demo.chat, "--"])
            .args(argv)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{argv:?}: {}", text(&out));
    }
    // Ended by a signal: the launch ends by the same one, as the program did.
    let out = l
        .cli()
        .args([
            "step",
            "--chat",
            &l.demo.chat,
            "--",
            "/bin/sh",
            "-c",
            "kill -TERM $$",
        ])
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{}", text(&out));
    let not_executable = l.demo.root.join("bin/plain-file");
    std::fs::write(&not_executable, "x").unwrap();
    let out = l
        .cli()
        .args(["step", "--chat", &l.demo.chat, "--"])
        .arg(&not_executable)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(126), "{}", text(&out));
}

#[test]
fn a_plan_the_helper_cannot_apply_exits_125_and_nothing_runs() {
    let test = "a_plan_the_helper_cannot_apply_exits_125_and_nothing_runs";
    if !confined_here(test) {
        return;
    }
    let l = layout();
    let ran = l.demo.root.join("ran");
    for plan in ["not json", "{\"version\": 99999}"] {
        let file = l.demo.root.join("plan.json");
        std::fs::write(&file, plan).unwrap();
        let out = cli()
            .arg("exec")
            .arg("--policy")
            .arg(&file)
            .args(["--", "/bin/touch"])
            .arg(&ran)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{plan}: {}", text(&out));
        assert!(!ran.exists(), "{plan}: the program ran");
    }
}

/// Our failures exit 125 even when stderr cannot be written: a socket with no peer as stderr
/// (each write fails with ENOTCONN) made the message's `eprintln!` panic, and the status was a
/// panic's 101 (`cli-sandbox`) or an abort's SIGABRT (`cli-sandbox-helper`), which a caller
/// would take for the program's own. The control is the same launch with a writable stderr.
#[test]
fn a_failure_exits_125_when_stderr_cannot_be_written() {
    use std::os::unix::net::UnixDatagram;
    let l = layout();
    let exec = &[
        "exec",
        "--policy",
        "/nonexistent/plan.json",
        "--",
        "/bin/true",
    ][..];
    let failing = [
        (
            cargo_bin("cli-sandbox"),
            &["step", "--chat", "bad id!", "--", "/bin/true"][..],
        ),
        (cargo_bin("cli-sandbox"), exec),
        (helper_alone(), exec),
    ];
    for (binary, args) in failing {
        let run = |stderr: std::process::Stdio| {
            std::process::Command::new(&binary)
                .args(args)
                .env("HOME", &l.demo.home)
                .stdout(std::process::Stdio::null())
                .stderr(stderr)
                .status()
                .unwrap()
        };
        let control = run(std::process::Stdio::piped());
        assert_eq!(control.code(), Some(125), "control: {args:?}");
        let unwritable = UnixDatagram::unbound().unwrap();
        let status = run(std::os::fd::OwnedFd::from(unwritable).into());
        assert_eq!(
            status.code(),
            Some(125),
            "{} {args:?} with an unwritable stderr: {status:?}",
            binary.display()
        );
    }
}

/// A command that only answers ends by SIGPIPE, as `cat` does, when its reader has gone
/// (`cli-sandbox man | head -c1`): it used to panic on the broken pipe and exit 101. The control
/// is the same command with a reader.
#[test]
fn an_answer_whose_reader_has_gone_ends_by_sigpipe() {
    use std::os::unix::process::ExitStatusExt;
    let l = layout();
    for args in [
        &["man"][..],
        &["adapters", "--json"],
        &["completions", "bash"],
    ] {
        let run = |stdout: std::process::Stdio| {
            std::process::Command::new(cargo_bin("cli-sandbox"))
                .args(args)
                .env("HOME", &l.demo.home)
                .stdout(stdout)
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
        };
        let control = run(std::process::Stdio::null());
        assert!(control.success(), "control: {args:?}: {control:?}");
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let status = run(writer.into());
        assert_eq!(
            status.signal(),
            Some(libc::SIGPIPE),
            "{args:?} with its reader gone: {status:?}"
        );
    }
}

/// The helper alone, `cli-sandbox-helper`, of this build (beside `cli-sandbox`).
fn helper_alone() -> PathBuf {
    assert_cmd::cargo::cargo_bin("cli-sandbox-helper")
}

#[test]
fn the_helper_alone_confines_as_cli_sandbox_exec_does_and_takes_only_the_helpers_arguments() {
    let test =
        "the_helper_alone_confines_as_cli_sandbox_exec_does_and_takes_only_the_helpers_arguments";
    if !confined_here(test) {
        return;
    }
    let l = layout();
    let out = l
        .cli()
        .args([
            "profile",
            "--backend",
            "landlock",
            "--json",
            "--chat",
            "c-helper",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let profile: Value = serde_json::from_slice(&out.stdout).unwrap();
    let plan = l.demo.root.join("helper-plan.json");
    std::fs::write(&plan, serde_json::to_vec(&profile["plan"]).unwrap()).unwrap();
    let runtime = PathBuf::from(profile["plan"]["workdir"].as_str().unwrap());
    let secret = l.demo.state_root.join("config.json");
    let script = |tag: &str| {
        format!(
            "cat '{s}' > '{r}/{tag}-read' 2>/dev/null; echo ok > '{r}/{tag}-wrote'",
            s = secret.display(),
            r = runtime.display()
        )
    };
    let read = |tag: &str| std::fs::read_to_string(runtime.join(format!("{tag}-read")));
    // The control: the same script unconfined reads the protected file.
    std::fs::create_dir_all(&runtime).unwrap();
    let control = std::process::Command::new("/bin/sh")
        .args(["-c", &script("control")])
        .status()
        .unwrap();
    assert!(control.success());
    assert!(
        read("control").is_ok_and(|t| !t.is_empty()),
        "the control read nothing"
    );
    for (tag, binary) in [
        ("exec", cargo_bin("cli-sandbox")),
        ("alone", helper_alone()),
    ] {
        let out = std::process::Command::new(&binary)
            .arg("exec")
            .arg("--policy")
            .arg(&plan)
            .args(["--", "/bin/sh", "-c", &script(tag)])
            .output()
            .unwrap();
        assert!(out.status.success(), "{tag}: {}", text(&out));
        assert_eq!(
            std::fs::read_to_string(runtime.join(format!("{tag}-wrote"))).unwrap(),
            "ok\n",
            "{tag}: the runtime was not written"
        );
        assert!(
            read(tag).unwrap_or_default().is_empty(),
            "{tag}: the protected file was read"
        );
    }
    // Any other form is refused, as ours, with what it takes.
    for args in [&["--help"][..], &["exec", "--policy", "p.json"], &[]] {
        let out = std::process::Command::new(helper_alone())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("usage: cli-sandbox-helper exec"),
            "{args:?}: {}",
            text(&out)
        );
    }
}

#[test]
fn a_launch_runs_the_helper_beside_cli_sandbox_only_where_no_chat_can_replace_it() {
    let test = "a_launch_runs_the_helper_beside_cli_sandbox_only_where_no_chat_can_replace_it";
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var("CLI_SANDBOX_REQUIRE_ROOT").as_deref() != Ok("1"),
            "{test} needs root (a folder no root chat may write), and CLI_SANDBOX_REQUIRE_ROOT=1 requires it"
        );
        let _ = writeln!(
            std::io::stderr(),
            "\n!!! SKIPPED {test}: it needs root (a folder no root chat may write)\n"
        );
        return;
    }
    let l = layout();
    let argv0 = |bin: &Path| -> PathBuf {
        let out = std::process::Command::new(bin)
            .env_remove("CLI_SANDBOX_HELPER")
            .env("HOME", &l.demo.home)
            .arg("--config")
            .arg(&l.demo.config)
            .arg("--state-root")
            .arg(&l.demo.state_root)
            .args(["plan", "--cli", "codex", "--chat", "c-which", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        PathBuf::from(plan["argv"][0].as_str().unwrap())
    };
    let install = |dir: &Path| {
        for name in ["cli-sandbox", "cli-sandbox-helper"] {
            std::fs::copy(cargo_bin(name), dir.join(name)).unwrap();
        }
    };
    let kept = l.demo.state_root.join("state/cli-sandbox/helper");
    // A system folder (root's, in no writable place of a root chat): the helper beside it.
    let system = tempfile::tempdir_in("/var/lib").unwrap();
    install(system.path());
    assert_eq!(
        argv0(&system.path().join("cli-sandbox")),
        system.path().join("cli-sandbox-helper")
    );
    // A helper older than the binary (left from an earlier build, the binary relinked alone):
    // the binary itself.
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(system.path().join("cli-sandbox-helper"))
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    assert_eq!(
        argv0(&system.path().join("cli-sandbox")),
        system.path().join("cli-sandbox")
    );
    // Without the helper beside it: the binary itself.
    std::fs::remove_file(system.path().join("cli-sandbox-helper")).unwrap();
    assert_eq!(
        argv0(&system.path().join("cli-sandbox")),
        system.path().join("cli-sandbox")
    );
    // A symlink in its place (a chat plants one beside a binary in the home, to a program of
    // its choice that no chat can replace): never followed, the binary itself.
    std::os::unix::fs::symlink("/bin/true", system.path().join("cli-sandbox-helper")).unwrap();
    assert_eq!(
        argv0(&system.path().join("cli-sandbox")),
        system.path().join("cli-sandbox")
    );
    // Where a chat could replace the helper beside it (/tmp is a root chat's to write): never
    // that file, the launcher's kept copy of its own image.
    let writable = tempfile::tempdir_in("/tmp").unwrap();
    install(writable.path());
    let image = std::fs::read(writable.path().join("cli-sandbox")).unwrap();
    let chosen = argv0(&writable.path().join("cli-sandbox"));
    assert!(chosen.starts_with(&kept), "{}", chosen.display());
    assert_eq!(
        std::fs::read(&chosen).unwrap(),
        image,
        "the kept copy is not the launcher's own image"
    );
    // ... and so with a symlink there, to a program no chat can replace.
    let beside = writable.path().join("cli-sandbox-helper");
    std::fs::remove_file(&beside).unwrap();
    std::os::unix::fs::symlink("/bin/true", &beside).unwrap();
    let chosen = argv0(&writable.path().join("cli-sandbox"));
    assert!(chosen.starts_with(&kept), "{}", chosen.display());
}

// ---------- strict input ----------

#[test]
fn an_access_suffix_other_than_ro_or_rw_is_refused_and_a_colon_named_folder_has_a_way() {
    let l = layout();
    let granted = l.demo.granted.display().to_string();
    for suffix in [":xx", ":RO", ":", ":rw:", ":read-only"] {
        let out = l
            .cli()
            .args(["explain", "--chat", "c", "--op", "read"])
            .arg("--grant")
            .arg(format!("{granted}{suffix}"))
            .arg(&l.demo.granted)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{suffix}: {stderr}");
        assert!(stderr.contains("is not an access"), "{suffix}: {stderr}");
    }
    // A folder literally named `wf:xx`: granted with its access written out.
    let odd = l.demo.workspace_docs.join("workflows/wf:xx");
    std::fs::create_dir_all(&odd).unwrap();
    for (grant, access) in [
        (format!("{}:ro", odd.display()), "ro"),
        (format!("{}:rw", odd.display()), "rw"),
    ] {
        let out = l
            .cli()
            .args([
                "explain", "--json", "--chat", "c", "--op", "write", "--grant", &grant,
            ])
            .arg(odd.join("doc.md"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["rule"], "granted", "{v}");
        assert_eq!(v["access"], access, "{v}");
        assert_eq!(v["allowed"], access == "rw", "{v}");
    }
}

#[test]
fn an_unknown_cli_table_or_key_in_the_configuration_is_named_with_the_known_ones() {
    let l = layout();
    for (text, words) in [
        (
            "[cli.codx]\nprogram = \"/bin/true\"\n",
            &["`[cli.codx]`", "`codex`", "`gemini`", "line 1"][..],
        ),
        (
            "[policy]\nprotect = []\n",
            &["protect", "`protected`", "line 2"],
        ),
        (
            "[cli.codex]\nprogramm = \"/bin/true\"\n",
            &["programm", "`program`"],
        ),
    ] {
        let config = l.demo.root.join("strict.toml");
        std::fs::write(&config, text).unwrap();
        for command in [&["doctor"][..], &["plan", "--cli", "claude", "--chat", "c"]] {
            let out = cli()
                .env("HOME", &l.demo.home)
                .arg("--config")
                .arg(&config)
                .args(command)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(125), "{text}: {stderr}");
            for word in words {
                assert!(stderr.contains(word), "{word} missing: {stderr}");
            }
        }
    }
}

#[test]
fn a_state_root_or_workspace_docs_that_does_not_exist_is_refused_and_nothing_is_created() {
    let l = layout();
    let missing = l.demo.root.join("typo/state");
    let docs = l.demo.root.join("typo/docs");
    let before = tree(&l.demo.root);
    let config = l.demo.root.join("layout.toml");
    std::fs::write(
        &config,
        format!(
            "[layout]\nstate_root = {:?}\n",
            missing.display().to_string()
        ),
    )
    .unwrap();
    let mut runs: Vec<(Command, &str)> = Vec::new();
    for command in [
        &["plan", "--cli", "codex", "--chat", "c"][..],
        &["run", "--cli", "codex", "--chat", "c"],
        &["pre-trust", "--cli", "codex", "--chat", "c"],
        &["step", "--chat", "c", "--", "/bin/true"],
        &["explain", "--chat", "c", "--op", "read", "/"],
        &["doctor"],
    ] {
        let mut flag = cli();
        flag.env("HOME", &l.demo.home)
            .arg("--state-root")
            .arg(&missing)
            .args(command);
        runs.push((flag, "--state-root"));
        let mut var = cli();
        var.env("HOME", &l.demo.home)
            .env("AGENTWORKS_STATE_ROOT", &missing)
            .args(command);
        runs.push((var, "AGENTWORKS_STATE_ROOT"));
        let mut file = cli();
        file.env("HOME", &l.demo.home)
            .arg("--config")
            .arg(&config)
            .args(command);
        runs.push((file, "[layout] state_root"));
        let mut docs_flag = cli();
        docs_flag
            .env("HOME", &l.demo.home)
            .arg("--state-root")
            .arg(&l.demo.state_root)
            .arg("--workspace-docs")
            .arg(&docs)
            .args(command);
        runs.push((docs_flag, "--workspace-docs"));
    }
    for (mut cmd, source) in runs {
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{source}: {stderr}");
        assert!(stderr.contains(source), "{source}: {stderr}");
        assert!(stderr.contains("does not exist"), "{source}: {stderr}");
        assert!(stderr.contains("nothing was created"), "{source}: {stderr}");
    }
    assert!(
        !l.demo.root.join("typo").exists(),
        "a refused launch made the typo"
    );
    let mut after = tree(&l.demo.root);
    after.remove(&config);
    assert_eq!(after, before);
    // The contract builds its demo layout only in a folder that exists.
    let out = cli()
        .args(["contract", "--state-root"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(!missing.exists());
}

#[test]
fn plan_creates_only_the_plan_file_and_says_so_and_pre_trust_makes_what_it_lists() {
    let l = layout();
    // A grant without its planning/ folder, and a chat whose runtime does not exist yet.
    let fresh = l.demo.workspace_docs.join("workflows/wf-fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let runtime = l.demo.state_root.join("state/cli-runtimes/v1/fresh-chat");
    let grant = format!("{}:rw", fresh.display());
    let flags = [
        "--cli",
        "codex",
        "--chat",
        "fresh-chat",
        "--grant",
        &grant,
        "--shape",
        "structured",
    ];
    let before = tree(&l.demo.root);
    let out = l
        .cli()
        .arg("plan")
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let made: Vec<PathBuf> = tree(&l.demo.root).difference(&before).cloned().collect();
    let plan_file = plan["plan_file"].as_str().map(PathBuf::from);
    // Where this binary lies in a place a chat could write (a clone under /tmp, as CI may make),
    // the launch runs a copy of it that the launcher keeps in its own folder of the state root
    // (`wrap::helper_for`): made by `plan` too, and no less ours than the plan file.
    let kept_helper = l.demo.state_root.join("state/cli-sandbox/helper");
    for path in &made {
        let ours = match &plan_file {
            // The plan file, and the folders it lies in.
            Some(file) => file == path || file.starts_with(path),
            None => false,
        } || path.starts_with(&kept_helper)
            || kept_helper.starts_with(path);
        assert!(
            ours,
            "plan made {} (only the plan file may be made)",
            path.display()
        );
    }
    assert!(!runtime.exists(), "plan made the runtime");
    assert!(
        !fresh.join("planning").exists(),
        "plan made planning/ in the grant"
    );
    assert!(
        !l.demo.home.join(".codex").exists(),
        "plan wrote the pre-trust entry"
    );
    // In words, too.
    let out = l.cli().arg("plan").args(flags).output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(words.contains("Nothing else was made"), "{words}");
    // pre-trust: the runtime and the listed entry, through the guard.
    let out = l
        .cli()
        .arg("pre-trust")
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["version"], 1, "{done}");
    assert_eq!(done["runtime"], runtime.to_str().unwrap(), "{done}");
    assert_eq!(done["edits"][0]["written"], true, "{done}");
    assert!(runtime.is_dir());
    let config = std::fs::read_to_string(l.demo.home.join(".codex/config.toml")).unwrap();
    assert!(config.contains(runtime.to_str().unwrap()), "{config}");
    // Again: the entry is there, nothing is written.
    let out = l
        .cli()
        .arg("pre-trust")
        .args(flags)
        .arg("--json")
        .output()
        .unwrap();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["edits"][0]["written"], false, "{again}");
    // What pre-trust writes is exactly what plan listed.
    assert_eq!(
        plan["pre_trust"].as_array().map(Vec::len),
        done["edits"].as_array().map(Vec::len)
    );
}

// ---------- logs ----------

#[test]
fn without_v_nothing_is_logged_and_v_or_rust_log_show_each_launch_step() {
    let l = layout();
    let flags = [
        "plan",
        "--cli",
        "codex",
        "--chat",
        "c1",
        "--shape",
        "structured",
    ];
    let quiet = l.cli().args(flags).output().unwrap();
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet));
    let loud = l.cli().arg("-v").args(flags).output().unwrap();
    let by_env = l
        .cli()
        .env("RUST_LOG", "info")
        .args(flags)
        .output()
        .unwrap();
    // A filter that is not a target=level list (span and field filters are not read): said,
    // and -v's level holds.
    let unread = l
        .cli()
        .env("RUST_LOG", "[launch{chat=c1}]=debug")
        .arg("-v")
        .args(flags)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&unread.stderr);
    assert!(
        log.contains("WARN") && log.contains("not read") && log.contains("[launch{chat=c1}]"),
        "{log}"
    );
    for out in [&loud, &by_env, &unread] {
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}", text(out));
        for step in ["decision", "backend", "plan file"] {
            assert!(log.contains(step), "{step} missing:\n{log}");
        }
        assert!(
            !log.contains('\x1b'),
            "colours in a log that is not a terminal:\n{log}"
        );
    }
}

/// Without `-v` a warning is still written, the same line as with `RUST_LOG=warn` (the quiet
/// subscriber is built only at the first warning, `logging.rs`), and nothing more. The warning:
/// a helper named where a chat can replace it (the demo home, which every chat writes).
#[test]
fn without_v_a_warning_is_written_as_the_warn_filter_writes_it() {
    let l = layout();
    let helper = l.demo.home.join("cli-sandbox-helper");
    std::fs::copy(cargo_bin("cli-sandbox-helper"), &helper).unwrap();
    let flags = ["plan", "--cli", "codex", "--chat", "c1", "--json"];
    let quiet = l
        .cli()
        .env("CLI_SANDBOX_HELPER", &helper)
        .args(flags)
        .output()
        .unwrap();
    let filtered = l
        .cli()
        .env("CLI_SANDBOX_HELPER", &helper)
        .env("RUST_LOG", "warn")
        .args(flags)
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{}", text(&quiet));
    let log = String::from_utf8_lossy(&quiet.stderr);
    assert!(
        log.contains("WARN") && log.contains("a chat can replace"),
        "no warning:\n{log}"
    );
    assert_eq!(log.lines().count(), 1, "more than the warning:\n{log}");
    assert_eq!(log, String::from_utf8_lossy(&filtered.stderr));
}

#[test]
fn v_on_run_shows_the_pre_trust_edits_and_the_helpers_mounts_and_what_the_kernel_enforced() {
    let test =
        "v_on_run_shows_the_pre_trust_edits_and_the_helpers_mounts_and_what_the_kernel_enforced";
    let l = layout();
    let program = l.stand_in("codex", "echo ran");
    let config = l.config_with_program("codex", &program);
    let run = |config: &Path, extra: &[&str]| {
        let mut cmd = l.cli_with(config);
        cmd.args(extra);
        cmd.args([
            "run",
            "--cli",
            "codex",
            "--chat",
            "c1",
            "--shape",
            "structured",
        ])
        .output()
        .unwrap()
    };
    let quiet = run(&config, &[]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet));
    let loud = run(&config, &["-vv"]);
    let log = String::from_utf8_lossy(&loud.stderr);
    assert!(loud.status.success(), "{}", text(&loud));
    assert!(log.contains("pre-trust edit"), "{log}");
    if !confined_here(test) {
        return;
    }
    for step in [
        "helper",
        "mount: masked",
        "the mounts are in place",
        "the kernel enforces the Landlock ruleset fully",
        "the kernel enforces the seccomp filter",
    ] {
        assert!(log.contains(step), "{step} missing:\n{log}");
    }
    // The helper's log variable does not reach the program.
    let leak = l.stand_in("codex", "env");
    let out = run(&l.config_with_program("codex", &leak), &["-v"]);
    let env = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!env.contains("CLI_SANDBOX_LOG"), "{env}");
}

// ---------- completions and the man page ----------

#[test]
fn completions_for_each_shell_name_every_command_but_the_internal_one() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = cli().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        for word in ["cli-sandbox", "pre-trust", "contract", "state-root"] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
    }
    // bash reads the script without a syntax error.
    let out = cli().args(["completions", "bash"]).output().unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &out.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(file.path())
        .output();
    if let Ok(check) = check {
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
    cli().args(["completions", "tcsh"]).assert().code(125);
}

#[test]
fn the_man_page_is_roff_with_every_command_and_the_exit_statuses() {
    let out = cli().arg("man").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH cli-sandbox"),
        "{page}"
    );
    for word in [
        "doctor",
        "pre\\-trust",
        "contract",
        "completions",
        "125",
        "127",
    ] {
        assert!(page.contains(word), "{word} missing from the man page");
    }
    assert!(
        !page.contains("Apply a compiled plan"),
        "the internal helper is listed"
    );
}

// ---------- JSON answers ----------

/// Every JSON answer, with the name of its section in docs/json.md.
fn json_answers(l: &Layout) -> Vec<(&'static str, Value)> {
    let grant = l.demo.grant_arg();
    let chat = l.demo.chat.as_str();
    let runs: Vec<(&str, Vec<&str>)> = vec![
        ("doctor", vec!["doctor", "--json"]),
        ("adapters", vec!["adapters", "--json"]),
        (
            "plan",
            vec![
                "plan", "--json", "--cli", "codex", "--chat", chat, "--grant", &grant,
            ],
        ),
        (
            "pre-trust",
            vec![
                "pre-trust",
                "--json",
                "--cli",
                "codex",
                "--chat",
                chat,
                "--grant",
                &grant,
            ],
        ),
        (
            "explain",
            vec![
                "explain",
                "--json",
                "--chat",
                chat,
                "--op",
                "read",
                "/etc/passwd",
            ],
        ),
        (
            "profile --backend landlock",
            vec!["profile", "--json", "--backend", "landlock", "--chat", chat],
        ),
        (
            "profile --backend seatbelt",
            vec!["profile", "--json", "--backend", "seatbelt", "--chat", chat],
        ),
    ];
    runs.into_iter()
        .map(|(name, args)| {
            let out = l.cli().args(&args).output().unwrap();
            assert!(out.status.success(), "{name}: {}", text(&out));
            let v: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {}", text(&out)));
            (name, v)
        })
        .collect()
}

#[test]
fn every_json_answer_starts_with_its_version_and_docs_json_md_names_each_field() {
    let l = layout();
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/json.md"))
            .expect("docs/json.md");
    let mut answers = json_answers(&l);
    let out = cli()
        .args(["contract", "--json", "--cli", "pi"])
        .output()
        .unwrap();
    answers.push(("contract", serde_json::from_slice(&out.stdout).unwrap()));
    for (name, v) in answers {
        let fields = v
            .as_object()
            .unwrap_or_else(|| panic!("{name}: not an object: {v}"));
        assert_eq!(
            fields.keys().next().map(String::as_str),
            Some("version"),
            "{name}"
        );
        assert_eq!(v["version"], 1, "{name}");
        // The section of docs/json.md for this answer names each top-level field.
        let heading = format!("## `{name}`");
        let section = doc
            .split("\n## ")
            .find(|s| format!("## {s}").starts_with(&heading))
            .unwrap_or_else(|| panic!("docs/json.md has no section {heading}"));
        for key in fields.keys() {
            assert!(
                section.contains(&format!("`{key}`")),
                "docs/json.md, {heading}: field `{key}` is not documented"
            );
        }
    }
}

#[test]
fn modes_in_json_are_octal_strings() {
    let l = layout();
    let out = l
        .cli()
        .args(["plan", "--json", "--cli", "codex", "--chat", &l.demo.chat])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pre_trust"][0]["create_mode"], "0600", "{v}");
    let out = l
        .cli()
        .args([
            "plan",
            "--json",
            "--cli",
            "pi",
            "--chat",
            &l.demo.chat,
            "--mode",
            "bridge-only",
        ])
        .args(["--mcp-bridge", r#"{"name": "b", "command": "/bin/true"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for file in v["files"].as_array().unwrap() {
        let mode = file["mode"].as_str().unwrap_or_else(|| panic!("{file}"));
        assert!(
            mode.len() == 4 && mode.bytes().all(|b| (b'0'..=b'7').contains(&b)),
            "{mode}"
        );
    }
}

#[test]
fn explain_answers_for_each_policy_class_with_the_rule_that_decided() {
    let l = layout();
    let d = &l.demo;
    let cases = [
        ("read", d.home.join("notes.txt"), true, "open"),
        ("write", d.runtime.join("x"), true, "runtime"),
        ("write", d.granted.join("doc.md"), true, "granted"),
        ("read", d.other_workflow.join("doc.md"), false, "closed"),
        ("read", d.state_root.join("config.json"), false, "closed"),
        (
            "read",
            d.granted.join("planning/plan.json"),
            false,
            "refused",
        ),
        ("exec", d.blocked_stand_in.clone(), false, "blocked"),
        ("move", d.state_root.clone(), false, "pinned"),
    ];
    for (op, path, allowed, rule) in cases {
        let v = explain(&l, op, &path);
        assert_eq!(v["allowed"], allowed, "{op} {}: {v}", path.display());
        assert_eq!(v["rule"], rule, "{op} {}: {v}", path.display());
    }
}

#[test]
fn explain_resolves_symlinks_like_the_kernel() {
    let l = layout();
    let link = l.demo.home.join("link");
    std::os::unix::fs::symlink(&l.demo.other_workflow, &link).unwrap();
    let v = explain(&l, "read", &link.join("doc.md"));
    assert_eq!(v["rule"], "closed", "{v}");
}

#[test]
fn a_config_file_that_is_not_valid_names_its_line() {
    let l = layout();
    let config = l.demo.root.join("bad.toml");
    std::fs::write(
        &config,
        "[policy]\nrefused = [\"planning/\"]\nblocked = 3\n",
    )
    .unwrap();
    let out = cli()
        .env("HOME", &l.demo.home)
        .args(["--config", config.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 3"), "{stderr}");
}

#[test]
fn doctor_json_reports_the_backend_and_mode() {
    let out = cli().args(["doctor", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(v["ways_out"].as_array().is_some_and(|w| !w.is_empty()));
    if cfg!(target_os = "linux") {
        match v["facts"]["landlock_abi"].as_u64() {
            Some(abi) if abi > 0 => {
                assert_eq!(v["mode"], "full", "{v}");
                assert_eq!(v["backend"]["backend"], "landlock", "{v}");
            }
            _ => assert_eq!(v["mode"], "bridge-only", "{v}"),
        }
    }
}

#[test]
fn plan_json_gives_a_wrapped_launch_for_every_registered_cli_in_both_shapes_and_modes() {
    let l = layout();
    for adapter in launch::registry::ADAPTERS {
        for shape in ["tmux", "structured"] {
            for mode in adapter.modes() {
                let out = l
                    .cli()
                    .args([
                        "plan",
                        "--json",
                        "--cli",
                        adapter.name(),
                        "--chat",
                        &l.demo.chat,
                    ])
                    .args([
                        "--grant",
                        &l.demo.grant_arg(),
                        "--shape",
                        shape,
                        "--mode",
                        mode.as_str(),
                    ])
                    .output()
                    .unwrap();
                let name = format!("{} {shape} {}", adapter.name(), mode.as_str());
                assert!(out.status.success(), "{name}: {}", text(&out));
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(v["decision"]["mode"], mode.as_str(), "{v}");
                assert_eq!(v["cwd"], l.demo.runtime.to_str().unwrap());
                let argv: Vec<&str> = v["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|a| a.as_str())
                    .collect();
                let start = v["command_start"].as_u64().unwrap() as usize;
                if v["decision"]["backend"]["backend"] == "landlock" {
                    assert_eq!(argv[1..3], ["exec", "--policy"], "{argv:?}");
                    assert!(start > 4);
                }
                assert!(argv[start].ends_with(adapter.program()), "{argv:?}");
            }
        }
    }
}

// ---------- the contract's report ----------

#[test]
fn the_contract_takes_comma_lists_and_its_report_fits_in_100_columns_and_adds_up() {
    let test = "the_contract_takes_comma_lists_and_its_report_fits_in_100_columns_and_adds_up";
    if !confined_here(test) {
        return;
    }
    let out = cli()
        .args(["contract", "--cli", "claude,pi"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let progress = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for line in report.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    assert!(
        report
            .lines()
            .next()
            .unwrap()
            .starts_with("cli-sandbox contract on "),
        "{report}"
    );
    for word in ["backend:", "enforced:", "claude", "pi", "checks:"] {
        assert!(report.contains(word), "{word} missing:\n{report}");
    }
    assert!(
        !report.contains("Landlock {"),
        "Debug output in the report:\n{report}"
    );
    // Progress: one plain line per CLI (and the scripted step), not a copy of the table.
    let lines: Vec<&str> = progress.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 3, "{progress}");
    for (line, who) in lines.iter().zip(["scripted step", "claude", "pi"]) {
        assert!(
            line.starts_with("contract: ") && line.contains(who),
            "{line}"
        );
    }
    assert!(!progress.contains("expected"), "{progress}");
    // The counts the summary adds up are the JSON report's.
    let out = cli()
        .args(["contract", "--json", "--cli", "claude", "--cli", "pi"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = |k: &str| v[k].as_array().map_or(0, Vec::len) as u64;
    assert_eq!(
        n("rows") + n("real_clis") + n("errors"),
        v["passed"].as_u64().unwrap() + v["failed"].as_u64().unwrap(),
        "{v}"
    );
    assert_eq!(v["clis"], serde_json::json!(["claude", "pi"]));
}

// ---------- the README, run as written ----------

/// The README's text.
fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap()
}

/// The first ```LANG block under the heading `## SECTION` of the README.
fn readme_block(section: &str, lang: &str) -> String {
    let text = readme();
    let start = text
        .find(&format!("\n## {section}\n"))
        .unwrap_or_else(|| panic!("the README has no section `{section}`"));
    let rest = &text[start..];
    let open = format!("```{lang}\n");
    let from = rest
        .find(&open)
        .unwrap_or_else(|| panic!("no ```{lang} block under `{section}`"))
        + open.len();
    let to = from + rest[from..].find("```").unwrap();
    rest[from..to].to_owned()
}

/// A fresh machine's view: a scratch HOME and TMPDIR, and PATH with `cli-sandbox` and a
/// stand-in `codex` (a script that says where it ran, leaves a marker in its working folder and
/// tries to write into the workflow it was not given) ahead of the system's folders only.
struct Fresh {
    dir: tempfile::TempDir,
}

impl Fresh {
    fn new() -> Fresh {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "tmp", "bin"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        let bin = dir.path().join("bin");
        std::os::unix::fs::symlink(
            assert_cmd::cargo::cargo_bin("cli-sandbox"),
            bin.join("cli-sandbox"),
        )
        .unwrap();
        let codex = bin.join("codex");
        std::fs::write(
            &codex,
            "#!/bin/sh\n\
             echo \"stand-in codex in $PWD\"\n\
             touch ran-codex\n\
             target=\"${AGENTWORKS_WORKSPACE_DOCS:-unset}/workflows/wf2/planted\"\n\
             echo \"trying $target\"\n\
             touch \"$target\" 2>/dev/null && echo planted\n\
             exit 7\n",
        )
        .unwrap();
        std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
        Fresh { dir }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// `program` in the fresh environment: nothing of the caller's but the system's PATH.
    fn command(&self, program: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.path("bin").display()
                ),
            )
            .env("HOME", self.path("home"))
            .env("TMPDIR", self.path("tmp"))
            .current_dir(self.path("home"));
        cmd
    }
}

#[test]
fn the_readme_tour_runs_as_written_on_a_fresh_layout() {
    let test = "the_readme_tour_runs_as_written_on_a_fresh_layout";
    if !confined_here(test) {
        return;
    }
    let fresh = Fresh::new();
    let block = readme_block("A quick tour", "sh");
    // Each command's output and status kept apart; the comments that follow a command go.
    let comment = regex::Regex::new(r"\s+#\s.*$").unwrap();
    let mut script = String::from("set -u\n");
    let mut commands = Vec::new();
    for line in block.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let line = comment.replace(line, "").into_owned();
        if line.starts_with("cli-sandbox ") {
            let n = commands.len();
            script.push_str(&format!(
                "{line} > \"$TOUR/{n}.out\" 2> \"$TOUR/{n}.err\"; echo $? > \"$TOUR/{n}.status\"\n"
            ));
            commands.push(line);
        } else {
            script.push_str(&line);
            script.push('\n');
        }
    }
    script.push_str("echo \"$D\" > \"$TOUR/layout\"\n");
    let tour = fresh.path("tour");
    std::fs::create_dir(&tour).unwrap();
    let out = fresh
        .command("/bin/sh")
        .arg("-c")
        .arg(&script)
        .env("TOUR", &tour)
        .output()
        .unwrap();
    assert!(out.status.success(), "the tour's script: {}", text(&out));
    let read = |name: String| std::fs::read_to_string(tour.join(name)).unwrap_or_default();
    let layout = PathBuf::from(read("layout".into()).trim());
    assert!(
        layout.starts_with(fresh.path("tmp")),
        "the tour's layout is not in the scratch TMPDIR: {}",
        layout.display()
    );
    let mut seen = BTreeSet::new();
    for (n, command) in commands.iter().enumerate() {
        let status: i32 = read(format!("{n}.status")).trim().parse().unwrap();
        let (stdout, stderr) = (read(format!("{n}.out")), read(format!("{n}.err")));
        let said = format!("`{command}`: status {status}\nstdout: {stdout}\nstderr: {stderr}");
        let word = command.split_whitespace().nth(1).unwrap();
        seen.insert(word.to_owned());
        match word {
            "step" => {
                // The grant took the write, the other workflow refused the read: cat's status.
                assert_eq!(status, 1, "{said}");
                // Refused (Seatbelt, Landlock alone) or not there at all (the mount namespace
                // masks workspace-docs but for the grants).
                assert!(
                    stderr.contains("Permission denied") || stderr.contains("No such file"),
                    "{said}"
                );
                assert!(!stdout.contains("private"), "{said}");
                // The control: unconfined, the file reads.
                let notes = layout.join("docs/workflows/wf2/notes.md");
                assert_eq!(std::fs::read_to_string(notes).unwrap(), "private\n");
                let result = layout.join("docs/workflows/wf1/result.txt");
                assert_eq!(
                    std::fs::read_to_string(&result).unwrap(),
                    "done\n",
                    "{said}"
                );
            }
            "run" => {
                // The stand-in CLI's own status; it ran in the chat's runtime, and its write into
                // the other workflow was refused (verdicts from the disk).
                assert_eq!(status, 7, "{said}");
                let cwd = stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("stand-in codex in "))
                    .unwrap_or_else(|| panic!("the CLI did not start: {said}"));
                assert!(Path::new(cwd).join("ran-codex").is_file(), "{said}");
                assert!(
                    cwd.starts_with(layout.join("state").to_str().unwrap()),
                    "{said}"
                );
                let planted = layout.join("docs/workflows/wf2/planted");
                assert!(
                    stdout.contains(&format!("trying {}", planted.display())),
                    "{said}"
                );
                assert!(!planted.exists(), "{said}");
                // The control: unconfined, the same write succeeds.
                std::fs::write(&planted, "").unwrap();
            }
            _ => {
                assert_eq!(status, 0, "{said}");
                if word == "explain" {
                    assert!(stdout.contains("closed"), "{said}");
                }
                if command.contains("--json") {
                    let answer: Value =
                        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {said}"));
                    assert_eq!(answer["version"], 1, "{said}");
                }
            }
        }
    }
    for word in [
        "doctor", "adapters", "explain", "plan", "step", "profile", "run",
    ] {
        assert!(
            seen.contains(word),
            "the tour no longer shows `{word}`: {block}"
        );
    }
}

#[test]
fn the_readme_python_launch_runs_the_cli_confined_after_pre_trust() {
    let test = "the_readme_python_launch_runs_the_cli_confined_after_pre_trust";
    if !confined_here(test) {
        return;
    }
    if !Path::new("/usr/bin/python3").exists() {
        let why = format!("{test}: /usr/bin/python3 is missing (apt-get install python3)");
        assert!(
            std::env::var("CLI_SANDBOX_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
            "{why}, and CLI_SANDBOX_REQUIRE_LANDLOCK=1 requires it"
        );
        let _ = writeln!(std::io::stderr(), "\n!!! SKIPPED {why}.\n");
        return;
    }
    let fresh = Fresh::new();
    let program = readme_block("Launching from another language", "python");
    assert!(
        program.lines().count() <= 25,
        "the README's Python launch grew past 25 lines"
    );
    let launch_py = fresh.path("launch.py");
    std::fs::write(&launch_py, &program).unwrap();
    let (state, docs) = (
        fresh.path("agentworks/state"),
        fresh.path("agentworks/docs"),
    );
    let (wf1, wf2) = (docs.join("workflows/wf1"), docs.join("workflows/wf2"));
    for dir in [&state, &wf1, &wf2] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let out = fresh
        .command("/usr/bin/python3")
        .arg(&launch_py)
        .arg(&wf1)
        .env("AGENTWORKS_STATE_ROOT", &state)
        .env("AGENTWORKS_WORKSPACE_DOCS", &docs)
        .output()
        .unwrap();
    // The CLI's own status, through Python.
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cwd = stdout
        .lines()
        .find_map(|l| l.strip_prefix("stand-in codex in "))
        .unwrap_or_else(|| panic!("the CLI did not start: {}", text(&out)));
    // It ran in the runtime pre-trust made, the trust entry is in the person's Codex
    // configuration, and the other workflow refused its write.
    assert!(cwd.starts_with(state.to_str().unwrap()), "{}", text(&out));
    assert!(Path::new(cwd).join("ran-codex").is_file(), "{}", text(&out));
    let config = std::fs::read_to_string(fresh.path("home/.codex/config.toml")).unwrap();
    assert!(config.contains(cwd), "no trust entry for {cwd}: {config}");
    let planted = wf2.join("planted");
    assert!(
        stdout.contains(&format!("trying {}", planted.display())),
        "{}",
        text(&out)
    );
    assert!(!planted.exists(), "{}", text(&out));
    // The control: unconfined, the same write succeeds.
    std::fs::write(&planted, "").unwrap();
}

/// The cross-crate tests in `tests/` find the binary by path: it must be the one cargo built for
/// this package, which it builds before any of its tests runs (so no test runs a stale binary).
#[test]
fn the_cross_crate_tests_run_the_binary_of_this_build() {
    assert_eq!(
        std::path::Path::new(env!("CARGO_BIN_EXE_cli-sandbox")),
        cli_sandbox_tests::cli_sandbox()
    );
}

#[test]
fn doctor_says_what_harden_closes_and_what_it_leaves_open() {
    // Issue 25: the `persistence` promise is reported with `harden` off too (open, by the
    // owner's decision), and with it on names what stays open.
    if !cfg!(target_os = "linux") {
        return;
    }
    let l = layout();
    let promise = |config: &Path| -> Option<Value> {
        let out = l
            .cli_with(config)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["ways_out"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == "persistence")
            .cloned()
    };
    let Some(off) = promise(&l.demo.config) else {
        return; // bridge-only here: no plan, every promise said as not kept
    };
    assert!(off.to_string().contains("`harden` is off"), "{off}");
    let hardened = l.demo.root.join("harden.toml");
    let mut config = std::fs::read_to_string(&l.demo.config).unwrap();
    config.push_str("harden = true\n");
    std::fs::write(&hardened, config).unwrap();
    let on = promise(&hardened)
        .expect("the promise with harden")
        .to_string();
    for said in [
        "the home's top",
        "~/.local/bin",
        "not closed",
        "~/.claude.json",
    ] {
        assert!(on.contains(said), "{said}: {on}");
    }
}
