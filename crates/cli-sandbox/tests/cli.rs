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
    let facts = launch::probe();
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
    cli_sandbox_tests::skips::record("CLI_SANDBOX_REQUIRE_LANDLOCK", test, &why);
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
        "end",
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

/// What `step`, `run` and `pre-trust` are given as stderr in
/// `step_run_and_pre_trust_never_panic_on_their_own_descriptors`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Given {
    /// A unix datagram socket pair: the sandbox refuses it (the program could send anywhere
    /// through it), and our message can still be read at the other end.
    RefusedWithPeer,
    /// A unix stream socket never connected: the sandbox refuses it, and nothing can be written
    /// on it (ENOTCONN): no message can be said.
    RefusedNoPeer,
    /// A closed descriptor.
    Closed,
    /// A pipe nobody reads, full, non-blocking: every write fails with EAGAIN.
    FullPipe,
}

/// Closes this process's stderr: a child's, between fork and exec.
fn close_stderr() -> std::io::Result<()> {
    // SAFETY: close() takes no pointer; closing descriptor 2 is what the caller asks.
    unsafe { libc::close(2) };
    Ok(())
}

/// A stream socket, closed on exec where the flag exists (macOS has none).
#[cfg(target_os = "linux")]
const SOCKET_FLAGS: libc::c_int = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const SOCKET_FLAGS: libc::c_int = libc::SOCK_STREAM;

/// The stderr of `given`, and the other end to read our message from where there is one.
fn given_stderr(
    given: Given,
) -> (
    Option<std::os::fd::OwnedFd>,
    Option<std::os::unix::net::UnixDatagram>,
) {
    use std::os::fd::{FromRawFd, OwnedFd};
    match given {
        Given::RefusedWithPeer => {
            let (ours, peer) = std::os::unix::net::UnixDatagram::pair().unwrap();
            peer.set_nonblocking(true).unwrap();
            (Some(OwnedFd::from(ours)), Some(peer))
        }
        Given::RefusedNoPeer => {
            // SAFETY: socket() takes no pointer; a non-negative result is a new descriptor.
            let fd = unsafe { libc::socket(libc::AF_UNIX, SOCKET_FLAGS, 0) };
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            // SAFETY: `fd` was just made and is owned by nothing else.
            (Some(unsafe { OwnedFd::from_raw_fd(fd) }), None)
        }
        Given::Closed => (None, None),
        Given::FullPipe => {
            let (reader, writer) = std::io::pipe().unwrap();
            let writer = OwnedFd::from(writer);
            let flags = rustix::fs::fcntl_getfl(&writer).unwrap();
            rustix::fs::fcntl_setfl(&writer, flags | rustix::fs::OFlags::NONBLOCK).unwrap();
            let block = [b'x'; 65536];
            while rustix::io::write(&writer, &block).is_ok() {}
            // The reader is kept open by the writer's side only through this leak: a pipe with
            // no reader would be EPIPE, not full.
            std::mem::forget(reader);
            (Some(writer), None)
        }
    }
}

/// `step`, `run` and `pre-trust` never panic on their own descriptors: with stderr a socket the
/// sandbox refuses (with a peer that reads our message, and with none), closed, or a full
/// non-blocking pipe, each ends with the status it owes (125 for our failure: bad input, a
/// refused descriptor; the program's own otherwise), never a panic's 101; where our message can
/// be written (the refused socket with a peer), it says what was refused and what to give
/// instead. With stdout that cannot be written (a full disk: `/dev/full`), `pre-trust` says so on
/// stderr and ends with 125 (it panicked: 101). The control is each launch with stderr a pipe we
/// read.
#[test]
fn step_run_and_pre_trust_never_panic_on_their_own_descriptors() {
    use std::os::unix::process::CommandExt;
    if !confined_here("step_run_and_pre_trust_never_panic_on_their_own_descriptors") {
        return;
    }
    let l = layout();
    let config = l.config_with_program("codex", Path::new("/bin/true"));
    let chat = l.demo.chat.clone();
    // (what, arguments, status with a stderr the sandbox accepts, the message's words when
    // refused)
    let launches: [(&str, Vec<&str>, i32, &str); 3] = [
        (
            "step",
            vec!["step", "--chat", &chat, "--", "/bin/true"],
            0,
            "stderr (descriptor 2)",
        ),
        (
            "step, bad input",
            vec!["step", "--chat", "bad id!", "--", "/bin/true"],
            125,
            "bad id!",
        ),
        (
            "run",
            vec!["run", "--cli", "codex", "--chat", &chat],
            0,
            "stderr (descriptor 2)",
        ),
    ];
    let command = |args: &[&str]| {
        let mut cmd = std::process::Command::new(cargo_bin("cli-sandbox"));
        for var in [
            "AGENTWORKS_STATE_ROOT",
            "AGENTWORKS_WORKSPACE_DOCS",
            "XDG_DATA_HOME",
            "RUST_LOG",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &l.demo.home)
            .arg("--config")
            .arg(&config)
            .arg("--state-root")
            .arg(&l.demo.state_root)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        cmd
    };
    for (what, args, accepted, words) in &launches {
        let control = command(args).output().unwrap();
        assert_eq!(
            control.status.code(),
            Some(*accepted),
            "control {what}: {}",
            text(&control)
        );
        for given in [
            Given::RefusedWithPeer,
            Given::RefusedNoPeer,
            Given::Closed,
            Given::FullPipe,
        ] {
            let (stderr, peer) = given_stderr(given);
            let mut cmd = command(args);
            match stderr {
                Some(fd) => {
                    cmd.stderr(fd);
                }
                None => {
                    // SAFETY: the hook runs between fork and exec and only closes the child's
                    // own stderr, which is async-signal-safe and touches no memory.
                    unsafe {
                        cmd.pre_exec(close_stderr);
                    }
                }
            }
            let status = cmd.status().unwrap();
            let refused = matches!(given, Given::RefusedWithPeer | Given::RefusedNoPeer);
            let expected = if refused { 125 } else { *accepted };
            assert_eq!(
                status.code(),
                Some(expected),
                "{what} with {given:?} as stderr: {status:?}"
            );
            if let Some(peer) = peer {
                let mut said = Vec::new();
                let mut buf = [0u8; 65536];
                while let Ok(n) = peer.recv(&mut buf) {
                    said.extend_from_slice(&buf[..n]);
                }
                let said = String::from_utf8_lossy(&said);
                assert!(said.contains(words), "{what} with {given:?}: said {said:?}");
                assert!(
                    said.starts_with("cli-sandbox"),
                    "{what} with {given:?}: said {said:?}"
                );
            }
        }
    }
    // stdout that cannot be written: pre-trust did its work, and says that its answer is lost.
    let out = command(&["pre-trust", "--cli", "codex", "--chat", &chat])
        .stdout(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot be written on stdout"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let control = command(&["pre-trust", "--cli", "codex", "--chat", &chat])
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(control.status.code(), Some(0), "{}", text(&control));
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
        cli_sandbox_tests::skips::record("CLI_SANDBOX_REQUIRE_ROOT", test, "it needs root");
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
        // `plan` names the helper; `pre-trust`, the launch's writing step, makes the kept copy
        // where it names one.
        let out = std::process::Command::new(bin)
            .env_remove("CLI_SANDBOX_HELPER")
            .env("HOME", &l.demo.home)
            .arg("--config")
            .arg(&l.demo.config)
            .arg("--state-root")
            .arg(&l.demo.state_root)
            .args(["pre-trust", "--cli", "codex", "--chat", "c-which"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
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
    // (`wrap::helper_for`): `plan` names it, `pre-trust` makes it.
    for path in &made {
        let ours = match &plan_file {
            // The plan file, and the folders it lies in.
            Some(file) => file == path || file.starts_with(path),
            None => false,
        };
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
    // Codex is trusted by `-c` on its argv (issue 27): its file is only pruned, and there was
    // nothing to prune, so nothing is written there.
    assert_eq!(done["edits"][0]["written"], false, "{done}");
    assert!(runtime.is_dir());
    let config =
        std::fs::read_to_string(l.demo.home.join(".codex/config.toml")).unwrap_or_default();
    assert!(!config.contains(runtime.to_str().unwrap()), "{config}");
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
/// a helper named where a chat can replace it (the demo home, which every chat writes), which the
/// caller accepted by its exact path (else the launch is refused: `tests/later_launches.rs`).
#[test]
fn without_v_a_warning_is_written_as_the_warn_filter_writes_it() {
    let l = layout();
    let helper = l.demo.home.join("cli-sandbox-helper");
    std::fs::copy(cargo_bin("cli-sandbox-helper"), &helper).unwrap();
    let flags = ["plan", "--cli", "codex", "--chat", "c1", "--json"];
    let quiet = l
        .cli()
        .env("CLI_SANDBOX_HELPER", &helper)
        .env("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER", &helper)
        .args(flags)
        .output()
        .unwrap();
    let filtered = l
        .cli()
        .env("CLI_SANDBOX_HELPER", &helper)
        .env("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER", &helper)
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
fn the_readme_tour_runs_as_written_on_a_fresh_layout_with_a_stand_in_codex() {
    let test = "the_readme_tour_runs_as_written_on_a_fresh_layout_with_a_stand_in_codex";
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
                // The record of refusals: recorded, or why not (never an empty list alone).
                let record: Value = serde_json::from_str(
                    &std::fs::read_to_string(layout.join("denials.json")).unwrap(),
                )
                .unwrap();
                assert!(
                    record["recorded"] == true || record["why"].is_string(),
                    "{record}"
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
    // The reader's own home (the one the tour started in) is left as it was: empty. Codex is
    // trusted per launch: no entry in the tour's scratch home either.
    assert_eq!(tree(&fresh.path("home")), BTreeSet::new());
    let codex_settings =
        std::fs::read_to_string(layout.join("home/.codex/config.toml")).unwrap_or_default();
    assert!(!codex_settings.contains("[projects."), "{codex_settings}");
    for word in [
        "doctor", "adapters", "explain", "plan", "step", "profile", "run",
    ] {
        assert!(
            seen.contains(word),
            "the tour no longer shows `{word}`: {block}"
        );
    }
}

/// Whether `/usr/bin/python3` is there; otherwise says so (a failure where CI requires it).
fn python_here(test: &str) -> bool {
    if Path::new("/usr/bin/python3").exists() {
        return true;
    }
    let why = format!("{test}: /usr/bin/python3 is missing (apt-get install python3)");
    assert!(
        std::env::var("CLI_SANDBOX_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
        "{why}, and CLI_SANDBOX_REQUIRE_LANDLOCK=1 requires it"
    );
    cli_sandbox_tests::skips::record("CLI_SANDBOX_REQUIRE_LANDLOCK", test, &why);
    let _ = writeln!(std::io::stderr(), "\n!!! SKIPPED {why}.\n");
    false
}

/// The README's Python launch, written into `fresh`, and a scratch AgentWorks layout with two
/// workflows: (launch.py, state root, workspace-docs, wf1, wf2).
fn readme_python(fresh: &Fresh) -> (PathBuf, PathBuf, PathBuf, PathBuf, PathBuf) {
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
    (launch_py, state, docs, wf1, wf2)
}

#[test]
fn the_readme_python_launch_runs_a_stand_in_codex_confined_after_pre_trust() {
    let test = "the_readme_python_launch_runs_a_stand_in_codex_confined_after_pre_trust";
    if !confined_here(test) || !python_here(test) {
        return;
    }
    let fresh = Fresh::new();
    let (launch_py, state, docs, wf1, wf2) = readme_python(&fresh);
    let out = fresh
        .command("/usr/bin/python3")
        .arg(&launch_py)
        .arg(&wf1)
        .arg("List the files here.")
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
    // It ran in the runtime pre-trust made, no entry was added to the person's Codex
    // configuration (Codex is trusted per launch), and the other workflow refused its write.
    assert!(cwd.starts_with(state.to_str().unwrap()), "{}", text(&out));
    assert!(Path::new(cwd).join("ran-codex").is_file(), "{}", text(&out));
    let config = std::fs::read_to_string(fresh.path("home/.codex/config.toml")).unwrap_or_default();
    assert!(!config.contains(cwd), "a trust entry for {cwd}: {config}");
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

#[test]
fn every_page_the_main_man_page_names_exists_and_names_its_commands_options() {
    let page = |args: &[&str]| {
        let out = cli().arg("man").args(args).output().unwrap();
        assert!(out.status.success(), "man {args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let main = page(&[]);
    // Every page the main one names, `cli-sandbox-NAME(1)`, roff-escaped.
    let named = regex::Regex::new(r"cli\\-sandbox\\-([a-z\\-]+)\(1\)").unwrap();
    let commands: Vec<String> = named
        .captures_iter(&main)
        .map(|c| c[1].replace("\\-", "-"))
        .collect();
    assert!(commands.len() >= 10, "{commands:?}\n{main}");
    assert!(!commands.contains(&"help".to_owned()), "{main}");
    assert!(!commands.contains(&"exec".to_owned()), "{main}");
    let long_flag = regex::Regex::new(r"(?m)^\s+(?:-[a-zA-Z], )?(--[a-z][a-z-]*)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = cli()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("cli-sandbox.1")).unwrap(),
        main
    );
    for command in &commands {
        let text = page(&[command]);
        let title = format!(".TH cli-sandbox-{command} 1");
        assert!(text.contains(&title), "{command}: {text}");
        // Every long option the command's --help lists is in its page.
        let help = cli().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        let flags: Vec<&str> = long_flag
            .captures_iter(&help)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert!(flags.contains(&"--help"), "{command}: {help}");
        assert!(flags.contains(&"--state-root"), "{command}: {help}");
        if command == "plan" {
            assert!(
                flags.contains(&"--cli") && flags.contains(&"--grant"),
                "{help}"
            );
        }
        for flag in flags {
            let roff = format!("\\fB{}\\fR", flag.replace('-', "\\-"));
            assert!(
                text.contains(&roff),
                "{command}: {flag} missing from its page\n{text}"
            );
        }
        // The page --dir wrote is the same.
        let file = dir.path().join(format!("cli-sandbox-{command}.1"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "{command}");
    }
    // Nothing else was written; a command without a page is refused, naming those that have one.
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        commands.len() + 1
    );
    let out = cli().args(["man", "exec"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("step"),
        "{}",
        text(&out)
    );
}

/// A step as `user` (this process's own when `None`) on `l`'s layout, running `script` with
/// `args` after it (`$0`, `$1`, ...), with `stdin`/`stdout` piped for the test to drive it.
fn step_with(
    l: &Layout,
    user: Option<&cli_sandbox_tests::users::TestUser>,
    chat: &str,
    grant: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
) -> std::process::Command {
    let mut cmd = cli_sandbox_tests::users::command_as(user, cargo_bin("cli-sandbox"));
    for var in [
        "AGENTWORKS_STATE_ROOT",
        "AGENTWORKS_WORKSPACE_DOCS",
        "XDG_DATA_HOME",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", &l.demo.home)
        .arg("--config")
        .arg(&l.demo.config)
        .arg("--state-root")
        .arg(&l.demo.state_root)
        .args(["step", "--chat", chat, "--grant"])
        .arg(grant)
        .args(["--", "/bin/sh", "-c", script])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// [`step_with`] the grant as `$0`.
fn step_as(
    l: &Layout,
    user: Option<&cli_sandbox_tests::users::TestUser>,
    chat: &str,
    grant: &Path,
    script: &str,
) -> std::process::Command {
    step_with(l, user, chat, grant, script, &[grant.as_os_str()])
}

/// Reads one line the chat printed (it is waiting at its `read` then): no timing, the pipe
/// orders the test and the chat.
fn started(child: &mut std::process::Child) {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");
}

/// The refused `planning/` a grant lacks: covered during the chat (the chat cannot make it nor
/// write into it), made for the stand-in before the chat and removed after it, so that the
/// granted folder on disk is as it was. Two launches of the grant at once: the first to end
/// does not remove the folder the other's stand-in sits on (the kernel would detach that
/// stand-in). As root and as an ordinary user.
#[test]
fn a_launch_creates_no_entry_in_a_grant() {
    let test = "a_launch_creates_no_entry_in_a_grant";
    if !confined_here(test) {
        return;
    }
    let user = cli_sandbox_tests::users::TestUser::get(test);
    for user in [None, user.as_ref()] {
        let l = layout();
        if let Some(user) = user {
            user.own(l._dir.path());
        }
        let fresh = l.demo.workspace_docs.join("workflows/wf-untouched");
        std::fs::create_dir_all(&fresh).unwrap();
        std::fs::write(fresh.join("notes.md"), "mine\n").unwrap();
        if let Some(user) = user {
            user.own(&l.demo.workspace_docs);
        }
        let before = tree(&fresh);
        // The chat tries the second and third ways to a refused folder it lacks: make it, and
        // write beneath it; then it lists the grant.
        let script = "echo started; read x; mkdir \"$0/planning\" 2>/dev/null && echo MADE; \
                      echo planted > \"$0/planning/p\" 2>/dev/null && echo WROTE; ls -a \"$0\"";
        let out = step_as(&l, user, "c-untouched", &fresh, script)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // The control: the step ran, confined, and saw the grant.
        assert!(out.status.success(), "{user:?}: {said}");
        assert!(said.contains("notes.md"), "{user:?}: {said}");
        assert!(
            !said.contains("MADE") && !said.contains("WROTE"),
            "{user:?}: {said}"
        );
        assert_eq!(
            tree(&fresh),
            before,
            "{user:?}: the launch left entries in the granted folder on disk"
        );

        // Two launches at once: A makes `planning`, B finds it there; A ends first.
        let script = "echo started; read x; mkdir \"$0/planning\" 2>/dev/null && echo MADE; \
                      echo planted > \"$0/planning/p\" 2>/dev/null && echo WROTE; echo done";
        let mut a = step_as(&l, user, "c-first", &fresh, script)
            .spawn()
            .unwrap();
        started(&mut a);
        let mut b = step_as(&l, user, "c-second", &fresh, script)
            .spawn()
            .unwrap();
        started(&mut b);
        drop(a.stdin.take());
        let a = a.wait_with_output().unwrap();
        assert!(
            a.status.success(),
            "{user:?}: {}",
            String::from_utf8_lossy(&a.stderr)
        );
        // Where the FUSE guard covers the grant (the launching user can open `/dev/fuse`),
        // nothing is made for a refused name at all, not even during the chat; elsewhere B's
        // stand-in is still on the folder: A did not remove it from under it.
        let guarded = match user {
            Some(_) => cli_sandbox_tests::fuse_for_every_user(),
            None => sandbox_linux::fuse_available(),
        };
        assert_eq!(fresh.join("planning").is_dir(), !guarded, "{user:?}");
        drop(b.stdin.take());
        let b = b.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&b.stdout);
        assert!(
            b.status.success(),
            "{user:?}: {}",
            String::from_utf8_lossy(&b.stderr)
        );
        assert!(said.contains("done"), "{user:?}: {said}");
        assert!(
            !said.contains("MADE") && !said.contains("WROTE"),
            "{user:?}: {said}"
        );
        assert!(!fresh.join("planning/p").exists(), "{user:?}");
        // With stand-ins, the folder both held stays (the stated limit): a launch removes only
        // what it made, and only when no other launch holds it. The next launch alone uses it
        // and leaves it. With the guard there is none.
        assert_eq!(fresh.join("planning").is_dir(), !guarded, "{user:?}");
    }
}

#[test]
fn the_readme_python_launch_runs_the_pinned_codex_to_its_end_against_a_scripted_model() {
    let test = "the_readme_python_launch_runs_the_pinned_codex_to_its_end_against_a_scripted_model";
    if !confined_here(test) || !python_here(test) {
        return;
    }
    let Some(codex) = cli_sandbox_tests::real_clis::require("codex", test) else {
        return;
    };
    let fresh = Fresh::new();
    let (launch_py, state, docs, wf1, wf2) = readme_python(&fresh);
    // The model asks Codex's shell for a write into the granted workflow and one into the other.
    let (made, planted) = (wf1.join("hello.txt"), wf2.join("planted"));
    let model = scripted_model::ScriptedModel::start(scripted_model::Script {
        steps: vec![scripted_model::Step::Shell {
            command: format!(
                "echo hello > {}; echo planted > {}",
                made.display(),
                planted.display()
            ),
        }],
        closing: "Done: hello.txt is written.".into(),
        fail_with: None,
    })
    .unwrap();
    // The person's own settings in the scratch home: Codex pointed at the scripted model.
    let home = fresh.path("home");
    contract::agents::point_at_scripted_model("codex", &home, &model.base_url()).unwrap();
    let before = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        codex.parent().unwrap().display(),
        fresh.path("bin").display()
    );
    let out = fresh
        .command("/usr/bin/python3")
        .arg(&launch_py)
        .arg(&wf1)
        .arg("Write hello.txt in the workflow.")
        .env("PATH", path)
        .env("AGENTWORKS_STATE_ROOT", &state)
        .env("AGENTWORKS_WORKSPACE_DOCS", &docs)
        .output()
        .unwrap();
    // The success the README promises: Codex ran to its end, status 0, its JSON events on
    // stdout, the scripted answer among them.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Done: hello.txt is written."),
        "{}",
        text(&out)
    );
    assert!(model.log().finished, "{:?}", model.log().unplayable);
    // Verdicts from the disk: the grant took the write, the other workflow refused its own.
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "hello\n");
    assert!(!planted.exists(), "{}", text(&out));
    // What the README says it writes in the home: nothing in Codex's settings (trusted per
    // launch), every byte kept.
    let after = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert_eq!(after, before);
    // Nothing else in the home but Codex's own state (its sessions, logs and databases) and the
    // settings places every launch closes, made empty when missing (folders, and files in the
    // form a CLI reads as absent: `SECURITY.md`, "One chat steering another").
    // The neutral forms the adapters declare (`{}`, an empty server list, Cursor's hooks).
    let neutral: Vec<&str> = launch::registry::names()
        .into_iter()
        .filter_map(launch::registry::find)
        .flat_map(|a| a.acted_on())
        .filter_map(|e| match e.kind {
            sandbox_core::ActedOnKind::File { empty } => Some(empty),
            sandbox_core::ActedOnKind::Folder => None,
        })
        .collect();
    for entry in tree(&home) {
        if entry.starts_with(home.join(".codex")) || entry.is_dir() {
            continue;
        }
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            text.is_empty() || neutral.contains(&text.as_str()),
            "{}: {text}",
            entry.display()
        );
    }
    // The control: unconfined, the same write into the other workflow succeeds.
    std::fs::write(&planted, "").unwrap();
}

/// A need as `doctor --json --cli` reports it: (what, ready, remedy).
type Need = (String, String, String);

/// `doctor --json --cli ...` in the scratch home `home`, with `env` added: each CLI's needs, as
/// (cli, installed, needs).
fn doctor_clis(
    home: &Path,
    clis: &[&str],
    env: &[(String, String)],
) -> Vec<(String, bool, Vec<Need>)> {
    let mut cmd = cli();
    cmd.env_clear()
        .env("HOME", home)
        .env(
            "PATH",
            format!(
                "{}:/usr/bin:/bin",
                cli_sandbox_tests::real_clis::bin_dir().display()
            ),
        )
        .args(["doctor", "--json"]);
    for name in clis {
        cmd.args(["--cli", name]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["clis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let needs = c["needs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| {
                    let s = |k: &str| n[k].as_str().unwrap().to_owned();
                    (s("what"), s("ready"), s("remedy"))
                })
                .collect();
            (
                c["name"].as_str().unwrap().to_owned(),
                c["installed"].as_bool().unwrap(),
                needs,
            )
        })
        .collect()
}

#[test]
fn doctor_cli_says_what_each_cli_needs_once_in_a_fresh_home_and_nothing_once_it_is_set_up() {
    let pinned = ["codex", "claude", "gemini", "pi"];
    let fresh = tempfile::tempdir().unwrap();
    // A fresh account: each pinned CLI needs a login (and Claude and Gemini their first-run
    // screens), each with what to run once.
    for (name, installed, needs) in doctor_clis(fresh.path(), &pinned, &[]) {
        assert_eq!(
            installed,
            cli_sandbox_tests::real_clis::bin_dir().join(&name).exists()
        );
        let login = needs.iter().find(|(what, ..)| what == "logged in");
        let (_, ready, remedy) = login.unwrap_or_else(|| panic!("{name}: {needs:?}"));
        assert_eq!(ready, "no", "{name}: {needs:?}");
        assert!(remedy.contains(&format!("`{name}")), "{name}: {remedy}");
        if name == "claude" || name == "gemini" {
            let screens = needs
                .iter()
                .find(|(w, ..)| w == "past the first-run screens");
            assert_eq!(screens.unwrap().1, "no", "{name}: {needs:?}");
        }
    }
    // Doctor wrote nothing in the home.
    assert_eq!(tree(fresh.path()), BTreeSet::new());
    // Set up as the model-driven layer sets a person up (a local model, the first-run
    // settings, the key variables): nothing is left to do.
    let home = tempfile::tempdir().unwrap();
    let mut env = Vec::new();
    for name in pinned {
        env.extend(
            contract::agents::point_at_scripted_model(name, home.path(), "http://127.0.0.1:9")
                .unwrap(),
        );
    }
    for (name, _, needs) in doctor_clis(home.path(), &pinned, &env) {
        for (what, ready, remedy) in needs {
            if what != "installed" {
                assert_eq!(ready, "yes", "{name}: {what}: {remedy}");
            }
        }
    }
    // A CLI whose facts were not checked here: unknown, with the general remedy.
    let cursor = doctor_clis(fresh.path(), &["cursor"], &[]);
    let (_, _, needs) = &cursor[0];
    let last = needs.last().unwrap();
    assert_eq!(last.1, "unknown", "{needs:?}");
    assert!(
        last.2.contains("`cursor-agent` once, unconfined"),
        "{needs:?}"
    );
    // An unknown name is bad input, naming the known ones.
    let out = cli().args(["doctor", "--cli", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("codex"),
        "{}",
        text(&out)
    );
}

#[test]
fn doctor_cli_agrees_with_the_pinned_codex_on_its_login() {
    let test = "doctor_cli_agrees_with_the_pinned_codex_on_its_login";
    let Some(codex) = cli_sandbox_tests::real_clis::require("codex", test) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let codex_says = |args: &[&str], stdin: &str| {
        let mut child = std::process::Command::new(&codex)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let logged_in = || {
        let clis = doctor_clis(home.path(), &["codex"], &[]);
        let needs = &clis[0].2;
        needs
            .iter()
            .find(|(w, ..)| w == "logged in")
            .unwrap()
            .1
            .clone()
    };
    // Codex's own answer, then ours: not logged in.
    let status = codex_says(&["login", "status"], "");
    assert!(!status.status.success(), "{}", text(&status));
    assert_eq!(logged_in(), "no");
    // Logged in with a key (a made-up one: Codex checks it only at the first request).
    let login = codex_says(&["login", "--with-api-key"], "sk-not-a-real-key\n");
    assert!(login.status.success(), "{}", text(&login));
    let status = codex_says(&["login", "status"], "");
    assert!(status.status.success(), "{}", text(&status));
    assert_eq!(logged_in(), "yes");
}

#[test]
fn doctor_says_where_refusals_are_recorded_and_what_never_is() {
    let out = cli().args(["doctor", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let denials = &answer["denials"];
    let how = denials["how"].as_str().unwrap();
    if let Some(abi) = answer["facts"]["landlock_abi"].as_u64() {
        assert!(
            denials["never"]
                .as_str()
                .unwrap()
                .contains("cli-sandbox explain")
        );
        if abi < 7 {
            assert_eq!(denials["recorded"], false, "{denials}");
        } else if denials["recorded"] == true {
            assert!(how.contains("1423"), "{denials}");
        } else {
            // Off (with what turns it on), or not root (with who may ask).
            assert!(
                how.contains("auditctl -e 1") || how.contains("only root"),
                "{denials}"
            );
        }
    }
    // The kernel's own answer, where this test may ask it: the same as doctor's.
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 && Path::new("/usr/sbin/auditctl").exists() {
        let status = std::process::Command::new("/usr/sbin/auditctl")
            .arg("-s")
            .output()
            .unwrap();
        let enabled = String::from_utf8_lossy(&status.stdout).contains("enabled 1");
        assert_eq!(denials["recorded"], enabled, "{denials}");
    }
    // An ordinary user's launches record nothing, whatever the kernel does: doctor says so.
    let test = "doctor_says_where_refusals_are_recorded_and_what_never_is";
    if cfg!(target_os = "linux")
        && let Some(user) = cli_sandbox_tests::users::TestUser::get(test)
    {
        let out = user
            .command(cargo_bin("cli-sandbox"))
            .args(["doctor", "--json"])
            .env("HOME", "/")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        let denials = &answer["denials"];
        assert_eq!(denials["recorded"], false, "{denials}");
        let how = denials["how"].as_str().unwrap();
        assert!(
            how.starts_with("not recorded here: ") && how.contains("root"),
            "{denials}"
        );
    }
}

#[test]
fn explain_from_inside_a_chat_tells_a_refusal_from_a_missing_file() {
    let test = "explain_from_inside_a_chat_tells_a_refusal_from_a_missing_file";
    if !confined_here(test) {
        return;
    }
    let l = layout();
    let other = l.demo.other_workflow.join("inside-a-chat.md");
    std::fs::write(&other, "not this chat's\n").unwrap();
    let missing = l.demo.granted.join("not-written-yet.md");
    // Inside the chat, as the chat's own program: the read of the other workflow fails as a
    // missing file would, and explain, run there with the chat's flags, tells the two apart.
    let script = "cat \"$1\" 2>&1; cat \"$2\" 2>&1; \
                  \"$0\" \"$3\" \"$4\" explain --json --chat \"$5\" --grant \"$6\" --op read \"$1\"; \
                  \"$0\" \"$3\" \"$4\" explain --json --chat \"$5\" --grant \"$6\" --op read \"$2\"";
    let out = l
        .cli()
        .args([
            "step",
            "--chat",
            &l.demo.chat,
            "--grant",
            &l.demo.grant_arg(),
        ])
        .args(["--", "/bin/sh", "-c", script])
        .arg(cargo_bin("cli-sandbox"))
        .arg(&other)
        .arg(&missing)
        .arg("--config")
        .arg(&l.demo.config)
        .arg(&l.demo.chat)
        .arg(l.demo.grant_arg())
        .output()
        .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Both reads fail alike: the mechanism hides the other workflow's file.
    assert_eq!(
        stdout.matches("No such file or directory").count(),
        2,
        "{said}"
    );
    assert!(!stdout.contains("not this chat's"), "{said}");
    // Explain, from inside, tells them apart: the first refused, the second allowed (missing).
    let answers: Vec<Value> =
        serde_json::Deserializer::from_str(&stdout[stdout.find('{').unwrap()..])
            .into_iter::<Value>()
            .map(Result::unwrap)
            .collect();
    assert_eq!(answers.len(), 2, "{said}");
    assert_eq!(answers[0]["allowed"], false, "{}", answers[0]);
    assert_eq!(answers[1]["allowed"], true, "{}", answers[1]);
    // The control: outside the chat, the other workflow's file reads.
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "not this chat's\n"
    );
}

/// `cli-sandbox explain PATH` inside a confined step, with no flag: the chat's id, grants,
/// configuration and layout come from the environment its launch set, and each answer names the
/// layer and the rule. It tells the chat nothing it could not see: another chat's runtime is
/// `closed` like any path of the state root, and neither the other chat's name nor the
/// protected root's entries appear in what it prints. As root and as an ordinary user.
#[test]
fn explain_inside_a_chat_needs_no_flags_and_tells_only_what_the_chat_can_see() {
    let test = "explain_inside_a_chat_needs_no_flags_and_tells_only_what_the_chat_can_see";
    if !confined_here(test) {
        return;
    }
    let user = cli_sandbox_tests::users::TestUser::get(test);
    for user in [None, user.as_ref()] {
        let l = layout();
        std::fs::create_dir_all(&l.demo.other_runtime).unwrap();
        std::fs::write(l.demo.other_runtime.join("secret-name-note"), "x").unwrap();
        if let Some(user) = user {
            user.own(l._dir.path());
        }
        let granted = l.demo.granted.join("doc.md");
        let planning = l.demo.granted.join("planning/plan.json");
        let other = l.demo.other_workflow.join("inside.md");
        let home = l.demo.home.join("notes.txt");
        let runtimes = l.demo.other_runtime.parent().unwrap().to_owned();
        let asked = [
            (&granted, "granted"),
            (&planning, "refused"),
            (&other, "closed"),
            (&home, "open"),
            (&l.demo.blocked_stand_in, "blocked"),
            (&l.demo.other_runtime, "closed"),
            (&runtimes, "closed"),
        ];
        let script = "for p in \"$@\"; do \"$0\" explain --json \"$p\"; done; \
                      \"$0\" explain \"$1\"";
        let binary = cargo_bin("cli-sandbox");
        let mut args = vec![binary.as_os_str()];
        args.extend(asked.iter().map(|(p, _)| p.as_os_str()));
        let out = step_with(&l, user, &l.demo.chat, &l.demo.granted, script, &args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let said = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{user:?}: {said}");
        let json_end = stdout.rfind('}').unwrap() + 1;
        let answers: Vec<Value> = serde_json::Deserializer::from_str(&stdout[..json_end])
            .into_iter::<Value>()
            .map(Result::unwrap)
            .collect();
        assert_eq!(answers.len(), asked.len(), "{user:?}: {said}");
        for (answer, (path, layer)) in answers.iter().zip(asked) {
            assert_eq!(
                answer["layer"],
                layer,
                "{user:?} {}: {answer}",
                path.display()
            );
            assert_eq!(answer["chat_from"], "environment", "{answer}");
            assert_eq!(answer["ops"].as_array().unwrap().len(), 5, "{answer}");
        }
        // The text answer names the chat it answered for and the rule.
        let plain = &stdout[json_end..];
        assert!(
            plain.contains("granted for chat") && plain.contains("`granted`"),
            "{plain}"
        );
        // Nothing of another chat's or of the root's listing: not its name, not its file.
        assert!(
            !stdout.contains(&l.demo.other_chat) || {
                // The other runtime was asked by path: its path is in that answer, and only there.
                answers[5]["path"]
                    .as_str()
                    .unwrap()
                    .contains(&l.demo.other_chat)
                    && stdout.matches(&l.demo.other_chat).count() == 1
            },
            "{user:?}: {said}"
        );
        assert!(!stdout.contains("secret-name-note"), "{user:?}: {said}");
        // The control: outside any chat, with no flag, explain says what it needs.
        let out = cli()
            .env("HOME", &l.demo.home)
            .env_remove("CLI_SANDBOX_CHAT")
            .args(["explain", "/tmp"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("CLI_SANDBOX_CHAT"),
            "{}",
            text(&out)
        );
    }
}

/// `step --denials FILE`: the record of what the kernel refused the chat. Where the kernel
/// records and this launcher may read it (root, Landlock ABI >= 7, the kernel's audit on), it
/// holds the chat's refused `mknod` with the program that tried it; anywhere else it says "not
/// recorded here" and why, with `denials: null`, never an empty list. Which case applies is asked
/// of the kernel, not of the record. As root and as an ordinary user.
#[cfg(target_os = "linux")]
#[test]
fn a_launch_records_what_the_kernel_refused_or_says_why_not() {
    let test = "a_launch_records_what_the_kernel_refused_or_says_why_not";
    if !confined_here(test) {
        return;
    }
    let abi = match launch::probe() {
        sandbox_core::platform::Facts::Linux(l) => l.landlock_abi.unwrap_or(0),
        _ => 0,
    };
    let audit_on = sandbox_linux::audit::audit_enabled() == Ok(true);
    let user = cli_sandbox_tests::users::TestUser::get(test);
    for user in [None, user.as_ref()] {
        let l = layout();
        let record = l._dir.path().join("denials.json");
        let device = l._dir.path().join("made-device");
        if let Some(user) = user {
            user.own(l._dir.path());
        }
        let mut cmd = step_with(
            &l,
            user,
            &l.demo.chat,
            &l.demo.granted,
            "mknod \"$0\" c 1 3 2>/dev/null && echo MADE; echo done",
            &[device.as_os_str()],
        );
        // `--denials` belongs to `step`: before the `--` that ends its flags.
        let args: Vec<std::ffi::OsString> = cmd.get_args().map(ToOwned::to_owned).collect();
        let step = args.iter().position(|a| a == "step").unwrap();
        let dashes = step + args[step..].iter().position(|a| a == "--").unwrap();
        let mut fixed = std::process::Command::new(cmd.get_program());
        for var in [
            "AGENTWORKS_STATE_ROOT",
            "AGENTWORKS_WORKSPACE_DOCS",
            "XDG_DATA_HOME",
        ] {
            fixed.env_remove(var);
        }
        fixed
            .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .args(&args[..dashes])
            .arg("--denials")
            .arg(&record)
            .args(&args[dashes..])
            .stdin(std::process::Stdio::null());
        let _ = &mut cmd;
        let out = fixed.output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.contains("done"),
            "{user:?}: {said}"
        );
        assert!(
            !said.contains("MADE") && !device.exists(),
            "{user:?}: {said}"
        );
        let answer: Value =
            serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
        assert_eq!(answer["chat"], l.demo.chat.as_str(), "{answer}");
        assert!(
            answer["never"].as_str().unwrap().contains("mounts"),
            "{answer}"
        );
        let can_record = user.is_none() && abi >= 7 && audit_on;
        if can_record {
            assert_eq!(answer["recorded"], true, "{answer}");
            let denials = answer["denials"].as_array().unwrap();
            assert!(
                denials
                    .iter()
                    .any(|d| d["blockers"] == "fs.make_char" && d["comm"] == "mknod"),
                "{answer}"
            );
        } else {
            assert_eq!(answer["recorded"], false, "{answer}");
            assert!(answer["denials"].is_null(), "{answer}");
            let why = answer["why"].as_str().unwrap();
            assert!(why.starts_with("not recorded here: "), "{answer}");
            if user.is_some() {
                assert!(why.contains("root"), "{answer}");
            }
        }
    }
    // The control: unconfined, root makes the device the chat could not.
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("made-device");
        let status = std::process::Command::new("mknod")
            .arg(&device)
            .args(["c", "1", "3"])
            .status()
            .unwrap();
        assert!(status.success() && device.exists());
    }
}

/// `run`'s launch (what `plan --json` prints) tells the chat who it is, for `explain` inside
/// it, and names the record of refusals in the plan file the helper reads.
#[test]
fn a_planned_launch_tells_the_chat_who_it_is_and_where_its_record_goes() {
    let l = layout();
    let record = l._dir.path().join("record.json");
    let out = l
        .cli()
        .args(["plan", "--cli", "codex", "--chat", &l.demo.chat, "--grant"])
        .arg(l.demo.grant_arg())
        .arg("--denials")
        .arg(&record)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let set = &answer["env"]["set"];
    assert_eq!(set["CLI_SANDBOX_CHAT"], l.demo.chat.as_str(), "{set}");
    let grants: Vec<String> =
        serde_json::from_str(set["CLI_SANDBOX_GRANTS"].as_str().unwrap()).unwrap();
    assert_eq!(grants.len(), 1, "{set}");
    assert!(grants[0].ends_with(":rw"), "{set}");
    assert_eq!(
        set["CLI_SANDBOX_CONFIG"],
        l.demo.config.to_str().unwrap(),
        "{set}"
    );
    if let Some(plan) = answer["plan_file"].as_str() {
        let plan: Value = serde_json::from_str(&std::fs::read_to_string(plan).unwrap()).unwrap();
        assert_eq!(plan["denials_record"], record.to_str().unwrap(), "{plan}");
    }
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

// ---------- errors that name the thing and the remedy ----------

#[test]
fn a_state_root_that_cannot_be_written_is_named_with_the_remedy() {
    let l = layout();
    // SAFETY: geteuid cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    // As root, `unshare -m` binds the state root read-only in a mount namespace of its own: the
    // kernel's EROFS, which root meets too. Anyone else meets a mode of 0555 (EACCES).
    if !root {
        std::fs::set_permissions(&l.demo.state_root, std::fs::Permissions::from_mode(0o555))
            .unwrap();
    }
    let before = tree(&l.demo.root);
    for command in [
        &["plan", "--cli", "codex", "--chat", "c-ro"][..],
        &["pre-trust", "--cli", "codex", "--chat", "c-ro"],
        &["run", "--cli", "codex", "--chat", "c-ro"],
        &["step", "--chat", "c-ro", "--", "/bin/true"],
    ] {
        let mut cmd = if root {
            let mut cmd = std::process::Command::new("unshare");
            cmd.args(["-m", "--propagation", "private", "--", "/bin/sh", "-c"])
                .arg("mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && exec \"$@\"")
                .arg(&l.demo.state_root)
                .arg(cargo_bin("cli-sandbox"));
            cmd
        } else {
            std::process::Command::new(cargo_bin("cli-sandbox"))
        };
        cmd.env_remove("AGENTWORKS_STATE_ROOT")
            .env_remove("AGENTWORKS_WORKSPACE_DOCS")
            .env_remove("RUST_LOG")
            .env("HOME", &l.demo.home)
            .arg("--config")
            .arg(&l.demo.config)
            .arg("--state-root")
            .arg(&l.demo.state_root)
            .args(command);
        let out = cmd.output().unwrap();
        let said = format!("{command:?}: {}", text(&out));
        assert_eq!(out.status.code(), Some(125), "{said}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for words in [
            "the state root is not writable by this user",
            "make it writable",
            "--state-root or AGENTWORKS_STATE_ROOT",
            "nothing was started",
        ] {
            assert!(stderr.contains(words), "`{words}` missing: {said}");
        }
        assert!(!stderr.contains("panicked"), "{said}");
    }
    if !root {
        std::fs::set_permissions(&l.demo.state_root, std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    assert_eq!(tree(&l.demo.root), before);
    // The control: the same plan where the state root can be written.
    let out = l
        .cli()
        .args(["plan", "--cli", "codex", "--chat", "c-ro"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_grant_that_is_not_utf8_is_named_with_the_argument_and_the_remedy() {
    use std::os::unix::ffi::OsStrExt;
    let l = layout();
    let folder = l
        .demo
        .workspace_docs
        .join(std::ffi::OsStr::from_bytes(b"workflows/wf-\xff"));
    std::fs::create_dir_all(&folder).unwrap();
    let before = tree(&l.demo.root);
    for command in [
        &["plan", "--cli", "codex", "--chat", "c"][..],
        &["pre-trust", "--cli", "claude", "--chat", "c"],
        &["explain", "--chat", "c", "--op", "read", "/"],
        &["profile", "--backend", "landlock", "--chat", "c"],
        &["step", "--chat", "c"],
    ] {
        let mut cmd = l.cli();
        cmd.args(command).arg("--grant").arg(&folder);
        if command[0] == "step" {
            cmd.args(["--", "/bin/true"]);
        }
        let out = cmd.output().unwrap();
        let said = format!("{command:?}: {}", text(&out));
        assert_eq!(out.status.code(), Some(125), "{said}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for words in ["--grant", "wf-\u{fffd}", "not UTF-8", "rename the folder"] {
            assert!(stderr.contains(words), "`{words}` missing: {said}");
        }
    }
    assert_eq!(tree(&l.demo.root), before);
}

#[test]
fn a_cli_settings_file_that_is_not_utf8_is_named_with_the_remedy_and_left_untouched() {
    let l = layout();
    let claude = l.demo.home.join(".claude.json");
    let codex = l.demo.home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(&claude, b"{\"theme\": \"\xff\"}").unwrap();
    std::fs::write(&codex, b"model = \"\xff\"\n").unwrap();
    type Case<'a> = (&'a [&'a str], &'a Path, &'a [(&'a str, &'a str)]);
    let cases: [Case; 3] = [
        // Pre-trust edits Claude's file.
        (&["pre-trust", "--cli", "claude"], &claude, &[]),
        // The tmux shape reads it first when an API key is in the environment.
        (
            &["plan", "--cli", "claude", "--shape", "tmux"],
            &claude,
            &[("ANTHROPIC_API_KEY", "sk-test-not-a-key")],
        ),
        // Codex's settings are read before anything (its own sandbox settings).
        (&["plan", "--cli", "codex"], &codex, &[]),
    ];
    for (command, file, env) in cases {
        let mut cmd = l.cli();
        cmd.args(command).args(["--chat", &l.demo.chat]);
        cmd.args(["--grant", &l.demo.grant_arg()]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let said = format!("{command:?}: {}", text(&out));
        assert_eq!(out.status.code(), Some(125), "{said}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for words in [
            &format!("`{}`", file.display())[..],
            "not UTF-8 text",
            "left untouched",
            "launch again",
        ] {
            assert!(stderr.contains(words), "`{words}` missing: {said}");
        }
    }
    assert_eq!(std::fs::read(&claude).unwrap(), b"{\"theme\": \"\xff\"}");
    assert_eq!(std::fs::read(&codex).unwrap(), b"model = \"\xff\"\n");
}

#[test]
fn mode_full_for_a_cli_that_is_bridge_only_is_refused_and_without_mode_the_plan_says_why() {
    let l = layout();
    // Pi has bridge-only alone: asked for by name, full is refused, naming the remedy.
    for command in ["plan", "pre-trust", "run"] {
        let out = l
            .cli()
            .args([command, "--cli", "pi", "--mode", "full", "--chat", "c-pi"])
            .output()
            .unwrap();
        let said = format!("{command}: {}", text(&out));
        assert_eq!(out.status.code(), Some(125), "{said}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for words in [
            "--mode full",
            "pi",
            "only bridge-only",
            "--mode bridge-only",
        ] {
            assert!(stderr.contains(words), "`{words}` missing: {said}");
        }
    }
    assert!(
        !l.demo
            .state_root
            .join("state/cli-runtimes/v1/c-pi")
            .exists()
    );
    // Without --mode, and with --mode bridge-only: bridge-only, and the reason says why.
    for mode in [&[][..], &["--mode", "bridge-only"]] {
        let out = l
            .cli()
            .args(["plan", "--json", "--cli", "pi", "--chat", "c-pi"])
            .args(mode)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(plan["decision"]["mode"], "bridge-only", "{plan}");
        let reason = plan["decision"]["reason"].as_str().unwrap();
        assert!(reason.contains("bridge-only"), "{reason}");
    }
    // The control: a CLI that has full gets it by name.
    let out = l
        .cli()
        .args([
            "plan", "--json", "--cli", "codex", "--mode", "full", "--chat", "c",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
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
    for said in ["the home's top", "~/.local/bin", "not closed", "~/.nvm"] {
        assert!(on.contains(said), "{said}: {on}");
    }
}
