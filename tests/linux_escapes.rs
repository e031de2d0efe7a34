//! Ways out of the Linux sandbox that go through the sandbox's own machinery or the machine
//! itself, attacked for real under the kernel: the sandbox's init and helper (descriptors,
//! `/proc/1/fd`, `pidfd_getfd`, ptrace, a forged or flooded report), how a launch ends (a hundred
//! at once, a program that ignores every signal, a terminal that goes away), a root chat writing
//! the machine's settings, SysV IPC and message queues of processes outside, grants redirected by
//! a planted symlink, refused names of every kind, and two plans of one chat.
//!
//! Each attempt runs through `cli-sandbox step` (or a plan's argv), as root and, where it
//! differs, as an ordinary user the test creates. Verdicts come from the disk and the kernel
//! (evidence files, `TracerPid`, the process table, exit statuses), and each attempt is first shown
//! to succeed without the sandbox, so that a refusal means something.
//!
//! The attempts are small Python programs run with `/usr/bin/python3` (raw system calls through
//! `ctypes` where the standard library has none).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use cli_sandbox_tests::process::{children_of, text, wait_until};
use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{cli_sandbox, confinement_available, root_or_skip, say};
use launch::demo::Demo;
use sandbox_core::Op;

const PYTHON: &str = "/usr/bin/python3";

/// A demo layout in a folder every user can enter, owned by `user` when given (as a layout that
/// user had made).
struct Fixture {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

fn fixture(user: Option<&TestUser>) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
    if let Some(user) = user {
        user.own(&demo.root);
    }
    Fixture {
        _dir: dir,
        demo,
        user: user.cloned(),
    }
}

fn who(user: &Option<TestUser>) -> &str {
    user.as_ref().map_or("root", |u| u.name.as_str())
}

impl Fixture {
    /// `cli-sandbox step` of `argv` for this layout's chat, as the fixture's user.
    fn step(&self, grants: &[String], argv: &[&str]) -> Command {
        cli_sandbox_tests::launches::step(self.user.as_ref(), &self.demo, grants, argv)
    }

    /// A Python program confined by the chat's launch.
    fn python(&self, program: &str, args: &[&str]) -> Command {
        let mut argv = vec![PYTHON, "-c", program];
        argv.extend_from_slice(args);
        self.step(&[], &argv)
    }

    /// The Landlock-only fallback's launch of `argv` (the plan compiled as if user namespaces
    /// could not be made), as the fixture's user.
    fn exec_frozen(&self, grants: &[String], argv: &[&str]) -> Command {
        self.exec_compiled(grants, argv, false)
    }

    /// The namespace plan of this chat compiled by the test (as `plan` and `run` do) and
    /// applied by `cli-sandbox exec`, as the fixture's user.
    fn exec_plan(&self, argv: &[&str]) -> Command {
        self.exec_compiled(&[], argv, true)
    }

    /// `cli-sandbox exec` of a plan the test compiled, with namespaces or without, as the
    /// fixture's user.
    fn exec_compiled(&self, grants: &[String], argv: &[&str], namespaces: bool) -> Command {
        let demo = &self.demo;
        let mut ctx = launch::Context::load(&demo.settings()).unwrap();
        ctx.privileged = self.user.is_none();
        let grants: Vec<_> = grants
            .iter()
            .map(|g| sandbox_core::GrantRequest::parse(g).unwrap())
            .collect();
        let policy = ctx.policy(&demo.chat, &grants).unwrap();
        ctx.ensure_runtime(&policy).unwrap();
        let mut kernel = cli_sandbox_tests::this_kernel();
        kernel.namespaces &= namespaces;
        let plan = sandbox_linux::compile(&policy, kernel).unwrap();
        assert_eq!(
            plan.namespaces.is_some(),
            namespaces,
            "not the plan asked for"
        );
        let plan_file = demo.root.join(format!("plan-{}.json", rand_suffix()));
        std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
        let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
        cmd.arg("exec")
            .arg("--policy")
            .arg(&plan_file)
            .arg("--")
            .args(argv)
            .env("HOME", &demo.home)
            .current_dir(&demo.runtime)
            .stdin(Stdio::null());
        cmd
    }

    /// The same Python program as the fixture's user, unconfined: the control.
    fn python_unconfined(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = command_as(self.user.as_ref(), PYTHON);
        cmd.args(["-c", program])
            .args(args)
            .env("HOME", &self.demo.home)
            .current_dir(&self.demo.runtime)
            .stdin(Stdio::null());
        cmd
    }
}

/// `cli-sandbox pre-trust` with the flags a `plan` was given (less `--json`): the launch's writing
/// step, which makes the helper's kept copy the plan only names (issue 27: `plan` writes its plan
/// file alone), as a provider runs it between `plan` and the argv.
fn pre_trust_as_planned(program: &Path, config: &Path, home: &Path, args: &[String]) {
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--json")
        .map(|a| if a == "plan" { "pre-trust" } else { a })
        .collect();
    let out = output({
        let mut cmd = Command::new(program);
        cmd.arg("--config")
            .arg(config)
            .args(&args)
            .env("HOME", home)
            .env_remove("CLI_SANDBOX_HELPER")
            .stdin(Stdio::null());
        cmd
    });
    assert!(out.status.success(), "pre-trust: {}", text(&out));
}

fn output(mut cmd: Command) -> Output {
    cmd.output().expect("run the command")
}

fn wait_child(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pids of the processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn kill_all_with(marker: &str) {
    let _ = Command::new("pkill").args(["-9", "-f", marker]).status();
}

fn status_field(pid: u32, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_owned())
}

// ---------- the sandbox's init and helper ----------

/// Reads every descriptor it has and every one of pid 1 it can open, and every descriptor of pid
/// 1 it can take with `pidfd_getfd`; writes what it read to `argv[1]`; tries to trace pid 1, then
/// waits for `argv[2]` to appear (the test reads init's `TracerPid` meanwhile).
const TAKE_INIT_DESCRIPTORS: &str = r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
evidence, go, init = sys.argv[1], sys.argv[2], sys.argv[3] == "init"
seen = []
def grab(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            seen.append(os.pread(fd, 4096, 0))
        finally:
            os.close(fd)
    except Exception as e:
        seen.append(repr(e).encode())
for name in os.listdir("/proc/self/fd"):
    grab("/proc/self/fd/" + name)
# Pid 1 is the sandbox's init inside; outside (the control) it is the machine's own, left alone.
if init:
  try:
    for name in os.listdir("/proc/1/fd"):
        grab("/proc/1/fd/" + name)
  except Exception as e:
    seen.append(repr(e).encode())
pidfd = libc.syscall(434, 1, 0) if init else -1  # pidfd_open(1)
if pidfd >= 0:
    for n in range(0, 64):
        fd = libc.syscall(438, pidfd, n, 0)  # pidfd_getfd
        if fd >= 0:
            try:
                seen.append(os.pread(fd, 4096, 0))
            except Exception as e:
                seen.append(repr(e).encode())
if init:
    libc.ptrace(0x4206, 1, 0, 0)  # PTRACE_SEIZE
open(evidence, "wb").write(b"\n".join(seen))
deadline = time.time() + 10
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.02)
"#;

#[test]
fn init_holds_nothing_the_chat_can_take_and_cannot_be_traced() {
    let test = "init_holds_nothing_the_chat_can_take_and_cannot_be_traced";
    if !confinement_available(test) {
        return;
    }
    for user in every_user(test) {
        let f = fixture(user.as_ref());
        let demo = &f.demo;
        let config = demo.state_root.join("config.json");
        let token = demo.secret(&config).to_owned();
        let evidence = demo.runtime.join("evidence");
        let go = demo.runtime.join("go");
        // The launcher leaks config.json without close-on-exec: a caller's mistake the sandbox
        // must survive. (Python's os.open gives an inheritable descriptor when asked.)
        let leak = format!(
            "import os, sys; fd = os.open({config:?}, os.O_RDONLY); os.set_inheritable(fd, True); os.execvp(sys.argv[1], sys.argv[1:])",
            config = config.display().to_string()
        );
        let leaking = |confined: bool| {
            let mut inner = if confined {
                f.python(
                    TAKE_INIT_DESCRIPTORS,
                    &[evidence.to_str().unwrap(), go.to_str().unwrap(), "init"],
                )
            } else {
                f.python_unconfined(
                    TAKE_INIT_DESCRIPTORS,
                    &[evidence.to_str().unwrap(), go.to_str().unwrap(), "self"],
                )
            };
            // Root opens the file and hands it on to the launch (as the user, via setpriv).
            let mut cmd = Command::new(PYTHON);
            cmd.args(["-c", &leak]).arg(inner.get_program());
            cmd.args(inner.get_args());
            for (k, v) in inner.get_envs() {
                match v {
                    Some(v) => cmd.env(k, v),
                    None => cmd.env_remove(k),
                };
            }
            if let Some(dir) = inner.get_current_dir() {
                cmd.current_dir(dir);
            }
            inner = cmd;
            // No pipe among stdio: opening /proc/self/fd/2 for reading would open the pipe's
            // other end and wait for ever.
            inner
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            inner.spawn().expect("start the launch")
        };

        // The control: unconfined, the leaked descriptor gives the token away.
        let _ = std::fs::remove_file(&evidence);
        std::fs::write(&go, "").unwrap();
        let mut control = leaking(false);
        wait_child(&mut control, Duration::from_secs(20)).expect("control ends");
        let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
        assert!(
            seen.contains(&token),
            "control ({}): the probe cannot see a leaked descriptor:\n{seen}",
            who(&user)
        );

        let _ = std::fs::remove_file(&evidence);
        let _ = std::fs::remove_file(&go);
        let mut launch = leaking(true);
        assert!(
            wait_until(Duration::from_secs(20), || evidence.exists()),
            "the probe never ran"
        );
        // The launch's processes: python (the leak) exec'd cli-sandbox, whose child is init.
        let helper = launch.id();
        let init = children_of(helper);
        assert_eq!(
            init.len(),
            1,
            "the helper should have one child, init: {init:?}"
        );
        let tracer = status_field(init[0], "TracerPid");
        std::fs::write(&go, "").unwrap();
        let status = wait_child(&mut launch, Duration::from_secs(20)).expect("the launch ends");
        assert!(status.success(), "{status:?}");
        assert_eq!(
            tracer.as_deref(),
            Some("0"),
            "init was traced by the chat ({})",
            who(&user)
        );
        let seen = std::fs::read_to_string(&evidence).unwrap();
        assert!(
            !seen.contains(&token),
            "a descriptor held by the launcher or init gave the chat config.json ({}):\n{seen}",
            who(&user)
        );
    }
}

/// Writes, fills and closes every descriptor it can reach (its own, pid 1's through
/// `/proc/1/fd` and `pidfd_getfd`), with the words of the sandbox's report among the bytes; with
/// `daemon`, leaves a process behind that ignores every signal; then exits with `argv[1]`.
const FORGE_AND_EXIT: &str = r#"
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
code, marker = int(sys.argv[1]), sys.argv[2]
daemon = len(sys.argv) > 3
words = [b"S\x00\x00\x00\x00", b"E forged: confinement failed", b"status 0", b"error forged"]
def flood(fd):
    try:
        os.set_blocking(fd, False)
    except Exception:
        pass
    for w in words:
        try: os.write(fd, w)
        except Exception: pass
    try:
        while os.write(fd, b"x" * 65536) > 0: pass
    except Exception:
        pass
targets = []
for name in os.listdir("/proc/self/fd"):
    targets.append(int(name))
try:
    for name in os.listdir("/proc/1/fd"):
        try: targets.append(os.open("/proc/1/fd/" + name, os.O_WRONLY | os.O_NONBLOCK))
        except Exception: pass
except Exception:
    pass
pidfd = libc.syscall(434, 1, 0)
if pidfd >= 0:
    for n in range(64):
        fd = libc.syscall(438, pidfd, n, 0)
        if fd >= 0: targets.append(fd)
for fd in range(3, 256):
    targets.append(fd)
if daemon and os.fork() == 0:
    os.setsid()
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    os.execv("/bin/sleep", ["/bin/sleep", "300", marker])
for fd in set(targets):
    if fd > 2:
        flood(fd)
        try: os.close(fd)
        except Exception: pass
os._exit(code)
"#;

#[test]
fn the_launch_ends_as_the_program_did_whatever_it_writes_fills_or_closes() {
    let test = "the_launch_ends_as_the_program_did_whatever_it_writes_fills_or_closes";
    if !confinement_available(test) {
        return;
    }
    for user in every_user(test) {
        let f = fixture(user.as_ref());
        for (code, daemon) in [(7, false), (0, false), (7, true)] {
            let marker = format!("cli-sandbox-forge-{}-{code}-{daemon}", std::process::id());
            let mut args = vec![code.to_string(), marker.clone()];
            if daemon {
                args.push("daemon".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut child = f
                .python(FORGE_AND_EXIT, &args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let status = wait_child(&mut child, Duration::from_secs(20));
            let left = processes_with(&marker);
            kill_all_with(&marker);
            let status = status.unwrap_or_else(|| {
                let _ = child.kill();
                panic!(
                    "{}: the launch never ended (code {code}, daemon {daemon})",
                    who(&user)
                )
            });
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            assert_eq!(status.code(), Some(code), "{}: {stderr}", who(&user));
            assert!(
                !stderr.contains("confinement failed"),
                "{}: {stderr}",
                who(&user)
            );
            assert!(
                left.is_empty(),
                "{}: the daemon outlived the chat: {left:?}",
                who(&user)
            );
        }
    }
}

#[test]
fn a_hundred_concurrent_launches_all_end_with_their_own_status() {
    let test = "a_hundred_concurrent_launches_all_end_with_their_own_status";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let mut children: Vec<(i32, Child)> = (0..100)
        .map(|n| {
            let code = n % 7;
            let child = f
                .step(&[], &["/bin/sh", "-c", &format!("exit {code}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (code, child)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    for (code, child) in &mut children {
        let left = deadline.saturating_duration_since(Instant::now());
        let status = wait_child(child, left);
        let Some(status) = status else {
            let _ = child.kill();
            panic!("a launch never ended (of 100 at once)");
        };
        assert_eq!(status.code(), Some(*code));
    }
}

/// Ignores every signal that asks it to stop, leaves a child that does the same, says it is
/// ready, and sleeps.
const IGNORE_EVERYTHING: &str = r#"
import os, signal, sys, time
ready, marker = sys.argv[1], sys.argv[2]
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["/bin/sleep", "600", marker])
open(ready, "w").close()
while True:
    time.sleep(1)
"#;

#[test]
fn stopping_the_launcher_ends_a_chat_that_ignores_every_signal() {
    let test = "stopping_the_launcher_ends_a_chat_that_ignores_every_signal";
    if !confinement_available(test) {
        return;
    }
    for user in every_user(test) {
        let f = fixture(user.as_ref());
        for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
            let marker = format!("cli-sandbox-ignorer-{}-{sig}", std::process::id());
            let ready = f.demo.runtime.join(format!("ready-{sig}"));
            let mut child = f
                .python(IGNORE_EVERYTHING, &[ready.to_str().unwrap(), &marker])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            assert!(
                wait_until(Duration::from_secs(20), || ready.exists()),
                "not ready"
            );
            let sent = Instant::now();
            // SAFETY: kill touches no memory; `child` is this test's child, not yet reaped.
            let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
            assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
            let status = wait_child(&mut child, Duration::from_secs(10));
            let took = sent.elapsed();
            let gone = wait_until(Duration::from_secs(2), || {
                processes_with(&marker).is_empty()
            });
            kill_all_with(&marker);
            let status = status.unwrap_or_else(|| {
                let _ = child.kill();
                panic!(
                    "{}: signal {sig} to the launcher did not end the chat",
                    who(&user)
                )
            });
            assert!(
                gone,
                "{}: a process of the chat outlived signal {sig}",
                who(&user)
            );
            assert_eq!(
                status.signal(),
                Some(sig),
                "{}: the status says what happened",
                who(&user)
            );
            assert!(took < Duration::from_secs(6), "{took:?}");
        }
    }
}

/// A tmux server of the test's own, on its own socket.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &[String]) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            cli_sandbox_tests::skips::record(
                "CLI_SANDBOX_REQUIRE_LANDLOCK",
                "a tmux part of linux_escapes",
                "tmux is not installed",
            );
            say("!!! SKIPPED a tmux part: tmux is not installed (apt-get install tmux)");
            assert!(
                std::env::var("CLI_SANDBOX_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
                "tmux is required where CI requires confinement"
            );
            return None;
        }
        let socket = format!(
            "cli-sandbox-escapes-{}-{}",
            std::process::id(),
            rand_suffix()
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "30",
                "--",
            ])
            .args(command)
            .env_remove("TMUX")
            .status()
            .unwrap();
        assert!(status.success());
        Some(Tmux { socket })
    }

    fn send_keys(&self, keys: &str) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", keys])
            .status();
    }

    fn kill_server(&self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.kill_server();
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

/// Like [`IGNORE_EVERYTHING`], but Ctrl-C is noted (in `argv[3]`) rather than ignored, as an
/// interactive CLI does.
const IGNORE_BUT_NOTE_CTRL_C: &str = r#"
import os, signal, sys, time
ready, marker, noted = sys.argv[1], sys.argv[2], sys.argv[3]
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)
signal.signal(signal.SIGINT, lambda *_: open(noted, "a").write("ctrl-c\n"))
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["/bin/sleep", "600", marker])
open(ready, "w").close()
while True:
    time.sleep(0.1)
"#;

#[test]
fn a_chat_in_a_tmux_pane_ends_when_its_terminal_goes_away_and_not_on_ctrl_c() {
    let test = "a_chat_in_a_tmux_pane_ends_when_its_terminal_goes_away_and_not_on_ctrl_c";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    let launch = |marker: &str, ready: &Path, noted: &Path, confined: bool| -> Vec<String> {
        let mut argv: Vec<String> = Vec::new();
        if confined {
            argv.extend([
                "env".into(),
                format!("HOME={}", demo.home.display()),
                cli_sandbox().display().to_string(),
                "--config".into(),
                demo.config.display().to_string(),
                "step".into(),
                "--chat".into(),
                demo.chat.clone(),
                "--".into(),
            ]);
        }
        argv.extend([
            PYTHON.into(),
            "-c".into(),
            IGNORE_BUT_NOTE_CTRL_C.into(),
            ready.display().to_string(),
            marker.into(),
            noted.display().to_string(),
        ]);
        argv
    };

    // The control: a program that ignores the hang-up outlives its terminal when nothing ends it.
    let marker = format!("cli-sandbox-pane-control-{}", std::process::id());
    let ready = demo.runtime.join("ready-control");
    let noted = demo.runtime.join("noted-control");
    let Some(tmux) = Tmux::start(&launch(&marker, &ready, &noted, false)) else {
        return;
    };
    assert!(wait_until(Duration::from_secs(20), || ready.exists()));
    tmux.kill_server();
    std::thread::sleep(Duration::from_secs(2));
    let survived = !processes_with(&marker).is_empty();
    kill_all_with(&marker);
    assert!(
        survived,
        "control: the program did not outlive its terminal, so the test sees nothing"
    );

    let marker = format!("cli-sandbox-pane-{}", std::process::id());
    let ready = demo.runtime.join("ready");
    let noted = demo.runtime.join("noted");
    let tmux = Tmux::start(&launch(&marker, &ready, &noted, true)).unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || ready.exists()),
        "the chat never started"
    );
    // Ctrl-C in the pane reaches the program, which notes it; the chat goes on.
    tmux.send_keys("C-c");
    assert!(
        wait_until(Duration::from_secs(10), || noted.exists()),
        "Ctrl-C did not reach the program"
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !processes_with(&marker).is_empty(),
        "Ctrl-C ended the chat: only the program decides what Ctrl-C means"
    );
    // The terminal goes away: every process of the chat is gone within seconds.
    tmux.kill_server();
    let gone = wait_until(Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    });
    kill_all_with(&marker);
    assert!(gone, "the chat outlived its terminal");
}

// ---------- the launch's end, attacked ----------

/// Starts one process for each way a process might stay alive past the program's end (and past
/// a `kill(-1, SIGKILL)` and `waitpid` by init, the design once tried), each writing `WAY TIME` lines (the
/// clock, as fast as it can) into `argv[1]`; notes in `argv[3]` what each system call answered;
/// then exits with status 7. `argv[2]` is a marker its processes carry in their command line.
/// The ways: a nested user and PID namespace (whose init's end the kernel would have to see);
/// another uid (which init, without `CAP_KILL`, could not signal with `kill(-1)`); a child subreaper with a
/// grandchild (orphans go to it, not to init); a process traced by another, with
/// `PTRACE_O_TRACEEXIT` (its exit stops for the tracer); a sibling of the program made with
/// `CLONE_PARENT` and no exit signal (init's child, not waited for without `__WALL`); a process
/// whose main thread has exited while a thread runs on (its leader is a zombie that `waitpid`
/// does not reap, and whose command line is empty: `pgrep -f` misses it, so each line also
/// carries the writer's pid, `WAY PID TIME`).
const WAYS_OF_STAYING: &str = r#"
import ctypes, os, signal, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
clock, marker, notes = sys.argv[1], sys.argv[2], sys.argv[3]
cfd = os.open(clock, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
nfd = os.open(notes, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
def note(*words):
    os.write(nfd, (" ".join(map(str, words)) + "\n").encode())
def tick(way):
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
    while True:
        try:
            os.write(cfd, ("%s %d %.6f\n" % (way, os.getpid(), time.time())).encode())
        except OSError:
            pass
def error(rc):
    return "ok" if rc >= 0 else os.strerror(ctypes.get_errno())
NEWUSER, NEWPID, PARENT = 0x10000000, 0x20000000, 0x00008000
def nested_namespaces():
    rc = libc.unshare(NEWUSER | NEWPID)
    note("nested_namespaces unshare", error(rc))
    if rc == 0 and os.fork() == 0:
        tick("nested_namespaces")
    rc = libc.syscall(56, NEWUSER | NEWPID | signal.SIGCHLD, 0, 0, 0, 0)  # clone
    if rc == 0:
        tick("nested_namespaces")
    note("nested_namespaces clone", error(rc))
    tick("nested_namespaces")
def other_uid():
    try:
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
        note("other_uid setresuid ok")
    except OSError as e:
        note("other_uid setresuid", e.strerror)
    tick("other_uid")
def subreaper():
    note("subreaper prctl", error(libc.prctl(36, 1, 0, 0, 0)))  # PR_SET_CHILD_SUBREAPER
    if os.fork() == 0:
        if os.fork() == 0:
            tick("subreaper")
        os._exit(0)
    tick("subreaper")
def traced():
    child = os.fork()
    if child == 0:
        tick("traced")
    # PTRACE_SEIZE with PTRACE_O_TRACEEXIT
    note("traced seize", error(libc.ptrace(0x4206, child, 0, 0x40)))
    tick("traced")
def sibling_without_signal():
    rc = libc.syscall(56, PARENT, 0, 0, 0, 0)  # clone: exit signal 0
    if rc == 0:
        tick("sibling_without_signal")
    note("sibling_without_signal clone", error(rc))
    tick("sibling_without_signal")
def threads_only():
    threading.Thread(target=tick, args=("threads_only",)).start()
    time.sleep(0.05)
    libc.syscall(60, 0)  # exit: of the main thread alone
for way in (nested_namespaces, other_uid, subreaper, traced, sibling_without_signal, threads_only):
    if os.fork() == 0:
        try:
            way()
        finally:
            os._exit(0)
time.sleep(0.4)
os._exit(7)
"#;

const STAYING_WAYS: [&str; 6] = [
    "nested_namespaces",
    "other_uid",
    "subreaper",
    "traced",
    "sibling_without_signal",
    "threads_only",
];

/// The moment of now on the clock the probes write (`time.time()`, CLOCK_REALTIME).
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The last time each way wrote into `clock` (`WAY PID TIME` lines), by way, and the pids of
/// the writers (as their own PID namespace numbers them).
fn last_writes(clock: &Path) -> (std::collections::BTreeMap<String, f64>, Vec<i32>) {
    let mut last = std::collections::BTreeMap::new();
    let mut pids = Vec::new();
    let text = std::fs::read_to_string(clock).unwrap_or_default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [way, pid, t] = words[..] else { continue };
        let (Ok(pid), Ok(t)) = (pid.parse::<i32>(), t.parse::<f64>()) else {
            continue;
        };
        let at = last.entry(way.to_owned()).or_insert(t);
        *at = f64::max(*at, t);
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    (last, pids)
}

/// The launch ends when init has ended, and the kernel ends every other process of the
/// namespace before that is seen. Every way [`WAYS_OF_STAYING`] knows of staying alive (or
/// unreaped) past the program's end is tried (written against a launch that ended on init's
/// report once `kill(-1)` and `waitpid` found nothing left, the design tried and not kept), through `step` and through a plan's `exec`, as root
/// and as an ordinary user: the status is the program's, no process of the chat is found
/// afterwards, and none of them wrote the clock after the caller's wait returned. The control:
/// unconfined, every way is still writing after the program has exited.
#[test]
fn no_way_of_staying_alive_outlives_the_launch() {
    let test = "no_way_of_staying_alive_outlives_the_launch";
    if !confinement_available(test) {
        return;
    }
    for user in every_user(test) {
        let f = fixture(user.as_ref());
        let who = who(&user);
        let files = |tag: &str| {
            let clock = f.demo.home.join(format!("staying-clock-{tag}"));
            let notes = f.demo.home.join(format!("staying-notes-{tag}"));
            let _ = std::fs::remove_file(&clock);
            let _ = std::fs::remove_file(&notes);
            (clock, notes)
        };

        // The control: unconfined, each way outlives the program.
        let marker = format!("cli-sandbox-staying-{}-control", std::process::id());
        let (clock, notes) = files("control");
        let status = f
            .python_unconfined(
                WAYS_OF_STAYING,
                &[clock.to_str().unwrap(), &marker, notes.to_str().unwrap()],
            )
            .status()
            .unwrap();
        let ended = now();
        std::thread::sleep(Duration::from_millis(300));
        kill_all_with(&marker);
        let (last, pids) = last_writes(&clock);
        for pid in pids {
            // SAFETY: kill touches no memory; these are the control's own writers, which run
            // in this PID namespace (the confined ones' pids below are their namespace's).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        assert_eq!(status.code(), Some(7), "control ({who})");
        for way in STAYING_WAYS {
            assert!(
                last.get(way).is_some_and(|t| *t > ended),
                "control ({who}): {way} did not outlive the program, so the probe proves nothing: {last:?}\n{}",
                std::fs::read_to_string(&notes).unwrap_or_default()
            );
        }

        for (how, round) in [("step", 0), ("exec", 1), ("step", 2), ("exec", 3)] {
            let marker = format!("cli-sandbox-staying-{}-{how}-{round}", std::process::id());
            let (clock, notes) = files(&format!("{how}-{round}"));
            let args = [
                PYTHON,
                "-c",
                WAYS_OF_STAYING,
                clock.to_str().unwrap(),
                &marker,
                notes.to_str().unwrap(),
            ];
            let mut launch = if how == "step" {
                f.step(&[], &args)
            } else {
                f.exec_plan(&args)
            };
            let mut child = launch
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let status = wait_child(&mut child, Duration::from_secs(20));
            let ended = now();
            let left = processes_with(&marker);
            std::thread::sleep(Duration::from_millis(300));
            kill_all_with(&marker);
            let status = status.unwrap_or_else(|| {
                let _ = child.kill();
                panic!("{who}, {how}: the launch never ended")
            });
            let noted = std::fs::read_to_string(&notes).unwrap_or_default();
            assert_eq!(status.code(), Some(7), "{who}, {how}: {noted}");
            assert!(left.is_empty(), "{who}, {how}: left running: {left:?}");
            let (last, _) = last_writes(&clock);
            for way in STAYING_WAYS {
                let t = last.get(way).copied();
                assert!(t.is_some(), "{who}, {how}: {way} never ran: {noted}");
                assert!(
                    t < Some(ended),
                    "{who}, {how}: {way} wrote {:.0} µs after the launch had ended",
                    (t.unwrap() - ended) * 1e6
                );
            }
            // No nested namespace, no other uid (refused by seccomp, or by the missing
            // capability or id map): a `kill(-1)` from init would reach every process.
            for tried in [
                "nested_namespaces unshare",
                "nested_namespaces clone",
                "other_uid setresuid",
            ] {
                assert!(
                    noted.contains(tried) && !noted.contains(&format!("{tried} ok")),
                    "{who}, {how}: {noted}"
                );
            }
        }
    }
}

/// Keeps the caller's stdout open past the program's end (`argv[1]` names the clock, `argv[2]`
/// the way, `argv[3]` a marker for the command line), then exits with status 3. `child`: a child
/// goes on writing the time into stdout and the clock. `in-flight`: stdout is sent over a pair of
/// unix sockets that are then only in flight, each in the other's queue (garbage only the
/// kernel's collector of unix sockets frees, and only when it runs: no process holds it).
const HOLD_STDOUT: &str = r#"
import array, os, signal, socket, sys, time
clock, way = sys.argv[1], sys.argv[2]
cfd = os.open(clock, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
if way == "child" and os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        t = ("%.6f\n" % time.time()).encode()
        try:
            os.write(1, t)
        except OSError:
            pass
        os.write(cfd, t)
if way == "in-flight":
    a, b = socket.socketpair()
    rights = lambda fds: [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
    b.sendmsg([b"x"], rights([1, a.fileno(), b.fileno()]))
    a.sendmsg([b"x"], rights([a.fileno(), b.fileno()]))
    a.close()
    b.close()
else:
    time.sleep(0.2)
os._exit(3)
"#;

/// Reads `child`'s stdout to its end in a thread; the receiver gets the moment of the end.
fn moment_of_eof(child: &mut Child) -> std::sync::mpsc::Receiver<f64> {
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = [0u8; 65536];
        while std::io::Read::read(&mut out, &mut sink).is_ok_and(|n| n > 0) {}
        let _ = tx.send(now());
    });
    rx
}

/// A caller that reads the launch's output to its end (`Command::output`, a provider's reader)
/// sees that end once the launch has ended, whatever the program left holding it: a child that
/// goes on writing (ended with the rest of the chat, and nothing it wrote comes after the end),
/// or the pipe in flight in unix sockets that only the kernel's collector frees. The control:
/// unconfined, both keep the pipe open after the program has exited; the in-flight one until a
/// unix socket released anywhere on the machine runs the collector.
#[test]
fn the_callers_pipe_ends_with_the_launch_whatever_the_program_left_holding_it() {
    let test = "the_callers_pipe_ends_with_the_launch_whatever_the_program_left_holding_it";
    if !confinement_available(test) {
        return;
    }
    for user in every_user(test) {
        let f = fixture(user.as_ref());
        let who = who(&user);
        for way in ["child", "in-flight"] {
            let marker = format!("cli-sandbox-holder-{}-{way}", std::process::id());
            let clock = f.demo.home.join(format!("holder-clock-{way}"));
            let args = [clock.to_str().unwrap(), way, marker.as_str()];

            // The control. A unix socket released anywhere on the machine meanwhile (another
            // test's launch: each runs the collector as it ends) collects the in-flight pipe
            // early: a short look and many tries, one must hold (five tries of 300 ms each all
            // failed once, beside this binary's other tests; with a collection every 50 ms
            // elsewhere, a look of 10 ms still holds).
            let mut held = false;
            for _ in 0..20 {
                let mut control = f
                    .python_unconfined(HOLD_STDOUT, &args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let eof = moment_of_eof(&mut control);
                let status = wait_child(&mut control, Duration::from_secs(20));
                // The end of file is sent once: a pipe that ended early (freed by a collection
                // elsewhere) has ended, and this round only failed to hold it.
                let ended_early = eof.recv_timeout(Duration::from_millis(10)).is_ok();
                held = !ended_early;
                kill_all_with(&marker);
                // Any unix socket released runs the collector (which is what the helper does);
                // again every 100 ms, for a release that came while one ran, up to 5 s.
                let freed = ended_early
                    || (0..50).any(|_| {
                        drop(std::os::unix::net::UnixStream::pair().unwrap());
                        eof.recv_timeout(Duration::from_millis(100)).is_ok()
                    });
                assert_eq!(status.and_then(|s| s.code()), Some(3), "control ({who})");
                assert!(freed, "control ({who}, {way}): the pipe never ended");
                if held {
                    break;
                }
            }
            assert!(
                held,
                "control ({who}, {way}): the pipe ended with the program, so the probe proves nothing"
            );

            let _ = std::fs::remove_file(&clock);
            let mut launch = f
                .python(HOLD_STDOUT, &args)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let eof = moment_of_eof(&mut launch);
            let status = wait_child(&mut launch, Duration::from_secs(20));
            let ended = now();
            let end_of_pipe = eof.recv_timeout(Duration::from_secs(5));
            kill_all_with(&marker);
            if end_of_pipe.is_err() {
                // Frees the test's pipe (and its reader) for the next round.
                drop(std::os::unix::net::UnixStream::pair().unwrap());
            }
            assert_eq!(status.and_then(|s| s.code()), Some(3), "{who}, {way}");
            let end_of_pipe = end_of_pipe.unwrap_or_else(|_| {
                panic!("{who}, {way}: the launch ended and its output did not, 5 s later")
            });
            let written = std::fs::read_to_string(&clock).unwrap_or_default();
            let last = written
                .lines()
                .filter_map(|l| l.trim().parse::<f64>().ok())
                .fold(f64::MIN, f64::max);
            if way == "child" {
                assert!(last > 0.0, "{who}: the child never wrote");
            }
            assert!(
                last < ended && last < end_of_pipe,
                "{who}, {way}: the chat wrote {:.0} µs after its launch had ended",
                (last - ended) * 1e6
            );
        }
    }
}

/// Says it is ready (`argv[1]`), leaves two children writing the clock (`argv[2]`) that ignore
/// the stop signals, and exits with 7 50 ms later, or with 9 at once on SIGTERM.
const EXIT_AS_THE_STOP_COMES: &str = r#"
import os, signal, sys, time
ready, clock = sys.argv[1], sys.argv[2]
cfd = os.open(clock, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
for _ in range(2):
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        while True:
            os.write(cfd, ("%.6f\n" % time.time()).encode())
signal.signal(signal.SIGTERM, lambda *_: os._exit(9))
open(ready, "w").close()
time.sleep(0.05)
os._exit(7)
"#;

/// A stop (SIGTERM to the launcher, passed on to the program) that comes as the program ends
/// on its own, before, during and after init's end: the launch's status is always the
/// program's (7 on its own, 9 from its SIGTERM handler), never the stop signal or a notice of
/// ours, and nothing of the chat writes after the caller's wait returns. The control is the
/// clock itself: the children wrote it while the launch ran.
#[test]
fn a_stop_that_meets_the_programs_end_leaves_the_programs_status_and_nothing_running() {
    let test = "a_stop_that_meets_the_programs_end_leaves_the_programs_status_and_nothing_running";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..24u64 {
        let marker = format!("cli-sandbox-stop-race-{}-{round}", std::process::id());
        let ready = f.demo.runtime.join(format!("stop-race-ready-{round}"));
        let clock = f.demo.home.join(format!("stop-race-clock-{round}"));
        let mut launch = f
            .python(
                EXIT_AS_THE_STOP_COMES,
                &[ready.to_str().unwrap(), clock.to_str().unwrap(), &marker],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !ready.exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_micros(500));
        }
        assert!(ready.exists(), "round {round}: the program never ran");
        // From 30 ms before the program's own end to 40 ms after it, 3 ms apart.
        std::thread::sleep(Duration::from_millis(20 + 3 * round));
        // SAFETY: kill touches no memory; `launch` is this test's child, not yet reaped.
        let _ = unsafe { libc::kill(launch.id() as libc::pid_t, libc::SIGTERM) };
        let status = wait_child(&mut launch, Duration::from_secs(20));
        let ended = now();
        let left = processes_with(&marker);
        kill_all_with(&marker);
        let status = status.unwrap_or_else(|| {
            let _ = launch.kill();
            panic!("round {round}: the launch never ended")
        });
        let mut stderr = String::new();
        std::io::Read::read_to_string(launch.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(
            matches!(status.code(), Some(7 | 9)),
            "round {round}: {status:?}: {stderr}"
        );
        seen.insert(status.code());
        assert!(stderr.is_empty(), "round {round}: {stderr}");
        assert!(left.is_empty(), "round {round}: left running: {left:?}");
        let times: Vec<f64> = std::fs::read_to_string(&clock)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert!(!times.is_empty(), "round {round}: the children never wrote");
        let last = times.iter().copied().fold(f64::MIN, f64::max);
        assert!(
            last < ended,
            "round {round}: the chat wrote {:.0} µs after its launch had ended",
            (last - ended) * 1e6
        );
    }
    // Both orders were met (the stop first, and the program's own end first).
    assert_eq!(seen.len(), 2, "{seen:?}");
}

/// Writes the clock (`argv[1]`) from four processes that ignore the stop signals, says it is
/// ready (`argv[2]`), and sleeps.
const WRITE_THE_CLOCK_UNTIL_KILLED: &str = r#"
import os, signal, sys, time
clock, ready = sys.argv[1], sys.argv[2]
cfd = os.open(clock, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
for _ in range(4):
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        while True:
            os.write(cfd, ("%.6f\n" % time.time()).encode())
open(ready, "w").close()
time.sleep(300)
"#;

/// A launcher killed with SIGKILL (what `kill_on_drop` and tokio's `Child::kill` send, and
/// `LandlockCmd` with them) cannot end the chat itself: init gets SIGKILL from
/// `PR_SET_PDEATHSIG` as the helper dies, and the kernel ends the rest of the namespace as init
/// exits, after the caller's wait has already returned. The chat runs on for that moment (up to
/// about 10 ms seen, with four writers on two cores). The control: the clock was written while
/// the launch ran.
#[test]
#[ignore = "FINDING: a launcher ended with SIGKILL (kill_on_drop, Child::kill) returns from its wait while the chat still runs, for up to ~10 ms: PR_SET_PDEATHSIG and the PID namespace end it only after the helper is gone; not caused by the early end (the same before it); needs the caller to stop with SIGTERM and wait, or to wait for init too"]
fn a_launcher_killed_with_sigkill_ends_the_chat_before_its_wait_returns() {
    let test = "a_launcher_killed_with_sigkill_ends_the_chat_before_its_wait_returns";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let mut late = Vec::new();
    for round in 0..10 {
        let clock = f.demo.home.join(format!("killed-clock-{round}"));
        let ready = f.demo.runtime.join(format!("killed-ready-{round}"));
        let mut launch = f
            .python(
                WRITE_THE_CLOCK_UNTIL_KILLED,
                &[clock.to_str().unwrap(), ready.to_str().unwrap()],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(
            wait_until(Duration::from_secs(20), || ready.exists()),
            "the program never ran"
        );
        std::thread::sleep(Duration::from_millis(100));
        launch.kill().unwrap();
        launch.wait().unwrap();
        let ended = now();
        std::thread::sleep(Duration::from_millis(300));
        let times: Vec<f64> = std::fs::read_to_string(&clock)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert!(times.len() > 100, "control: the clock was hardly written");
        let last = times.iter().copied().fold(f64::MIN, f64::max);
        if last > ended {
            late.push(format!("{:.0} µs", (last - ended) * 1e6));
        }
    }
    assert!(
        late.is_empty(),
        "the chat wrote after the killed launcher's wait returned, in {} of 10 launches: {late:?}",
        late.len()
    );
}

// ---------- the machine ----------

/// Tries to change the machine: each `argv` after the first is `KIND:PATH[:VALUE]`; what it
/// managed is only seen from outside.
const CHANGE_THE_MACHINE: &str = r#"
import os, sys
for item in sys.argv[1:]:
    kind, _, rest = item.partition(":")
    try:
        if kind == "write":
            path, _, value = rest.partition("=")
            with open(path, "w") as f:
                f.write(value)
        elif kind == "chmod-setuid":
            os.chmod(rest, 0o4755)
        elif kind == "link-and-write":
            source, _, link = rest.partition("=")
            os.link(source, link)
            with open(link, "a") as f:
                f.write("changed through a link\n")
    except Exception as e:
        print(kind, rest, e, file=sys.stderr)
"#;

struct MachineProbe {
    /// What the probe is given.
    arg: String,
    /// Whether it happened, read from outside.
    happened: Box<dyn Fn() -> bool>,
    /// Puts things back after the control.
    undo: Box<dyn Fn()>,
    what: &'static str,
}

fn machine_probes(tag: &str) -> Vec<MachineProbe> {
    let mut probes = Vec::new();
    // A kernel tunable of the UTS namespace, which the sandbox shares with the machine: harmless
    // to set and to set back. (core_pattern is the one an attacker wants; it is read-only the same
    // way, by the same mount.)
    let domainname = "/proc/sys/kernel/domainname";
    if let Ok(old) = std::fs::read_to_string(domainname) {
        let token = format!("clisbx{tag}");
        let seen = token.clone();
        probes.push(MachineProbe {
            arg: format!("write:{domainname}={token}"),
            happened: Box::new(move || {
                std::fs::read_to_string(domainname).is_ok_and(|v| v.trim() == seen)
            }),
            undo: Box::new(move || {
                let _ = std::fs::write(domainname, old.trim());
            }),
            what: "/proc/sys (a kernel tunable)",
        });
    }
    let ksm = "/sys/kernel/mm/ksm/sleep_millisecs";
    if let Ok(old) = std::fs::read_to_string(ksm) {
        let new = if old.trim() == "21" { "22" } else { "21" };
        probes.push(MachineProbe {
            arg: format!("write:{ksm}={new}"),
            happened: Box::new(move || std::fs::read_to_string(ksm).is_ok_and(|v| v.trim() == new)),
            undo: Box::new(move || {
                let _ = std::fs::write(ksm, old.trim());
            }),
            what: "/sys (a kernel parameter)",
        });
    }
    for dir in ["/etc", "/etc/cron.d", "/etc/profile.d", "/usr/local/bin"] {
        if !Path::new(dir).is_dir() {
            continue;
        }
        let path = PathBuf::from(format!("{dir}/cli-sandbox-test-{tag}"));
        let (seen, gone) = (path.clone(), path.clone());
        probes.push(MachineProbe {
            arg: format!("write:{}=# cli-sandbox test, harmless\n", path.display()),
            happened: Box::new(move || seen.exists()),
            undo: Box::new(move || {
                let _ = std::fs::remove_file(&gone);
            }),
            what: "a system folder",
        });
    }
    // A new entry in the machine's /dev (where a root chat in the fallback could otherwise
    // remove /dev/null and put a file in its place).
    let in_dev = PathBuf::from(format!("/dev/cli-sandbox-test-{tag}"));
    let (seen, gone) = (in_dev.clone(), in_dev.clone());
    probes.push(MachineProbe {
        arg: format!("write:{}=x", in_dev.display()),
        happened: Box::new(move || seen.exists()),
        undo: Box::new(move || {
            let _ = std::fs::remove_file(&gone);
        }),
        what: "a new file in the machine's /dev",
    });
    // A root-owned program outside every writable place, made setuid.
    let program = PathBuf::from(format!("/usr/local/lib/cli-sandbox-test-program-{tag}"));
    std::fs::create_dir_all("/usr/local/lib").unwrap();
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (seen, gone) = (program.clone(), program.clone());
    probes.push(MachineProbe {
        arg: format!("chmod-setuid:{}", program.display()),
        happened: Box::new(move || {
            std::fs::metadata(&seen).is_ok_and(|m| m.permissions().mode() & 0o4000 != 0)
        }),
        undo: Box::new(move || {
            let _ = std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o755));
        }),
        what: "chmod u+s of a system program",
    });
    // A system file changed through a hard link made in a writable place.
    let file = PathBuf::from(format!("/usr/local/lib/cli-sandbox-test-file-{tag}"));
    std::fs::write(&file, "original\n").unwrap();
    let link = PathBuf::from(format!("/tmp/cli-sandbox-test-link-{tag}"));
    let (seen, restore, link_gone) = (file.clone(), file.clone(), link.clone());
    probes.push(MachineProbe {
        arg: format!("link-and-write:{}={}", file.display(), link.display()),
        happened: Box::new(move || {
            std::fs::read_to_string(&seen).is_ok_and(|t| t.contains("changed"))
        }),
        undo: Box::new(move || {
            let _ = std::fs::write(&restore, "original\n");
            let _ = std::fs::remove_file(&link_gone);
        }),
        what: "a system file through a hard link in /tmp",
    });
    probes
}

#[test]
fn a_root_chat_cannot_change_the_machine() {
    let test = "a_root_chat_cannot_change_the_machine";
    if !confinement_available(test) {
        return;
    }
    if !root_or_skip(test, "a root chat is what it attacks") {
        return;
    }
    let f = fixture(None);
    let tag = format!("{}", std::process::id());
    let probes = machine_probes(&tag);
    let args: Vec<&str> = probes.iter().map(|p| p.arg.as_str()).collect();

    // The control: root without a single capability (what the chat is) changes all of it when
    // nothing but its missing capabilities stands in the way.
    let control = Command::new("setpriv")
        .args([
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
            PYTHON,
            "-c",
            CHANGE_THE_MACHINE,
        ])
        .args(&args)
        .output()
        .unwrap();
    for p in &probes {
        assert!(
            (p.happened)(),
            "control: a capability-less root could not change {}: {}",
            p.what,
            text(&control)
        );
        (p.undo)();
        assert!(!(p.happened)(), "the undo of {} did not undo it", p.what);
    }

    let out = output(f.python(CHANGE_THE_MACHINE, &args));
    let mut changed = Vec::new();
    for p in &probes {
        if (p.happened)() {
            changed.push(p.what);
        }
        (p.undo)();
    }
    assert!(
        changed.is_empty(),
        "a root chat changed {changed:?}:\n{}",
        text(&out)
    );

    // The Landlock-only fallback: the same, by Landlock's rights and seccomp.
    let mut argv = vec![PYTHON, "-c", CHANGE_THE_MACHINE];
    argv.extend(&args);
    let out = output(f.exec_frozen(&[], &argv));
    let mut changed = Vec::new();
    for p in &probes {
        if (p.happened)() {
            changed.push(p.what);
        }
        (p.undo)();
    }
    assert!(
        changed.is_empty(),
        "a root chat changed {changed:?} in the fallback:\n{}",
        text(&out)
    );
    // And the places a root chat may write stay writable: the home, and /tmp, which is the
    // chat's own (issue 27): written inside without an error, not on the machine's.
    let home_file = f.demo.home.join("written-by-root-chat");
    let tmp_file = PathBuf::from(format!("/tmp/cli-sandbox-root-chat-{tag}"));
    let out = output(f.python(
        CHANGE_THE_MACHINE,
        &[
            &format!("write:{}=ok", home_file.display()),
            &format!("write:{}=ok", tmp_file.display()),
        ],
    ));
    assert!(
        home_file.exists()
            && !tmp_file.exists()
            && !String::from_utf8_lossy(&out.stderr).contains(&*tmp_file.to_string_lossy()),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_file(&tmp_file);
}

#[test]
fn kernel_tunables_stay_read_only_for_an_ordinary_user_too() {
    let test = "kernel_tunables_stay_read_only_for_an_ordinary_user_too";
    if !confinement_available(test) {
        return;
    }
    let Some(user) = TestUser::get(test) else {
        return;
    };
    let f = fixture(Some(&user));
    // What an ordinary user could write outside stays writable by the person's own right; the
    // kernel's tunables are read-only whatever the permissions say (the mount), and the
    // sandbox's mounts themselves cannot be written.
    let out = output(f.python(
        r#"
import os, sys
bad = []
for path in ["/proc/sys/kernel/domainname", "/sys/kernel/mm/ksm/run"]:
    try:
        os.open(path, os.O_WRONLY)
        bad.append(path)
    except OSError as e:
        if e.errno not in (13, 30, 1, 2):
            bad.append(path + " " + str(e))
print("\n".join(bad))
"#,
        &[],
    ));
    assert!(
        String::from_utf8_lossy(&out.stdout).trim().is_empty(),
        "{}",
        text(&out)
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains("cli-sandbox-stand-ins"),
        "the sandbox's mounts leaked out"
    );
}

// ---------- SysV IPC and POSIX message queues ----------

/// Outside: makes a shared memory segment, a SysV message queue and a POSIX queue holding a
/// token, says it is ready, and keeps them until stdin closes; then prints what they hold.
const IPC_OWNER: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
key, name, token, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode(), sys.argv[4]
shm = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600
libc.shmat.restype = ctypes.c_void_p
addr = libc.shmat(shm, None, 0)
ctypes.memmove(addr, token, len(token))
msq = libc.msgget(key, 0o1600)
class Msg(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
m = Msg(1, token)
libc.msgsnd(msq, ctypes.byref(m), len(token), 0)
rt.mq_open.restype = ctypes.c_int
mq = rt.mq_open(name.encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
rt.mq_send(mq, token, len(token), 0)
open(ready, "w").close()
sys.stdin.read()
print(ctypes.string_at(addr, 64).split(b"\0")[0].decode())
class Info(ctypes.Structure):
    _fields_ = [("a", ctypes.c_ulong * 64)]
buf = Msg()
got = libc.msgrcv(msq, ctypes.byref(buf), 64, 0, 0o4000)  # IPC_NOWAIT
print("msg-left" if got > 0 else "msg-taken")
libc.shmdt(ctypes.c_void_p(addr)); libc.shmctl(shm, 0, None); libc.msgctl(msq, 0, None)
rt.mq_unlink(name.encode())
"#;

/// Inside: reaches for the three by key and name, writes over the segment, takes the message,
/// and writes what it read to `argv[3]`.
const IPC_THIEF: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
key, name, evidence = int(sys.argv[1]), sys.argv[2], sys.argv[3]
seen = []
shm = libc.shmget(key, 0, 0)
if shm >= 0:
    libc.shmat.restype = ctypes.c_void_p
    addr = libc.shmat(shm, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        seen.append(ctypes.string_at(addr, 64).split(b"\0")[0])
        ctypes.memmove(addr, b"owned-by-the-chat\0", 18)
class Msg(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
msq = libc.msgget(key, 0)
if msq >= 0:
    m = Msg()
    if libc.msgrcv(msq, ctypes.byref(m), 64, 0, 0o4000) > 0:
        seen.append(m.mtext)
rt.mq_open.restype = ctypes.c_int
mq = rt.mq_open(name.encode(), os.O_RDWR | os.O_NONBLOCK)
if mq >= 0:
    buf = ctypes.create_string_buffer(8192)
    if rt.mq_receive(mq, buf, 8192, None) > 0:
        seen.append(buf.value)
open(evidence, "wb").write(b"\n".join(seen))
"#;

#[test]
fn sysv_ipc_and_message_queues_of_processes_outside_are_out_of_reach() {
    let test = "sysv_ipc_and_message_queues_of_processes_outside_are_out_of_reach";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    // How: 0 unconfined (the control), 1 the namespace plan, 2 the Landlock-only fallback.
    let run = |how: u32| -> (String, String) {
        let key = (std::process::id() % 100_000 * 3 + how) as i32 + 7_000_000;
        let name = format!("/cli-sandbox-{key}");
        let token = format!("ipc-secret-{key}");
        let ready = demo.outside.join(format!("ipc-ready-{key}"));
        let mut owner = Command::new(PYTHON)
            .args(["-c", IPC_OWNER, &key.to_string(), &name, &token])
            .arg(&ready)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(
            wait_until(Duration::from_secs(10), || ready.exists()),
            "the owner never got ready"
        );
        let evidence = demo.runtime.join(format!("ipc-{key}"));
        let args = [
            key.to_string(),
            name.clone(),
            evidence.display().to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut argv = vec![PYTHON, "-c", IPC_THIEF];
        argv.extend(&args);
        let out = match how {
            0 => output(f.python_unconfined(IPC_THIEF, &args)),
            1 => output(f.python(IPC_THIEF, &args)),
            _ => output(f.exec_frozen(&[], &argv)),
        };
        drop(owner.stdin.take());
        let left = owner.wait_with_output().unwrap();
        let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
        assert!(out.status.success(), "{}", text(&out));
        (seen, String::from_utf8_lossy(&left.stdout).into_owned())
    };
    let (seen, left) = run(0);
    assert_eq!(
        seen.matches("ipc-secret").count(),
        3,
        "control: the thief cannot reach them: {seen:?}"
    );
    assert!(left.contains("owned-by-the-chat"), "control: {left}");
    for (how, plan) in [(1, "namespace plan"), (2, "fallback")] {
        let (seen, left) = run(how);
        assert!(
            !seen.contains("ipc-secret"),
            "{plan}: the chat read IPC of a process outside: {seen:?}"
        );
        assert!(
            !left.contains("owned-by-the-chat"),
            "{plan}: the chat wrote a segment outside: {left}"
        );
        assert!(
            left.contains("msg-left"),
            "{plan}: the chat took a message outside: {left}"
        );
    }
}

// ---------- grants ----------

#[test]
fn a_symlink_planted_in_a_read_write_grant_does_not_redirect_another_chats_grant() {
    let test = "a_symlink_planted_in_a_read_write_grant_does_not_redirect_another_chats_grant";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    let users = demo.workspace_docs.join("users");
    let token = demo.secret(&users.join("ann.json")).to_owned();
    // Chat A, with its workflow read-write, plants `outputs -> ../../users` from inside.
    let planted = demo.granted.join("outputs");
    let out = output(f.step(
        &[demo.grant_arg()],
        &["/bin/ln", "-s", "../../users", planted.to_str().unwrap()],
    ));
    assert!(out.status.success(), "{}", text(&out));
    assert!(planted.symlink_metadata().unwrap().file_type().is_symlink());
    // The control: a plain `cat` through the link, unconfined, reaches users/.
    let through = planted.join("ann.json");
    assert!(std::fs::read_to_string(&through).unwrap().contains(&token));

    // Chat B is granted `wf/outputs` read-only: refused, nothing runs.
    let copy = demo.runtime.join("copy-of-users");
    let out = output(f.step(
        &[format!("{}:ro", planted.display())],
        &[
            "/bin/sh",
            "-c",
            &format!("cat '{}' > '{}'", through.display(), copy.display()),
        ],
    ));
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("through a symlink"),
        "{}",
        text(&out)
    );
    assert!(!copy.exists(), "the program ran");

    // Swapped in after the plan was made: the helper refuses to bind through the new link.
    let real = demo.granted.join("real-outputs");
    std::fs::create_dir_all(&real).unwrap();
    let plan = output({
        let mut cmd = command_as(None, cli_sandbox());
        cmd.args(["--config"])
            .arg(&demo.config)
            .args([
                "plan",
                "--cli",
                "codex",
                "--chat",
                &demo.other_chat,
                "--grant",
            ])
            .arg(format!("{}:ro", real.display()))
            .args(["--json"])
            .env("HOME", &demo.home);
        cmd
    });
    assert!(plan.status.success(), "{}", text(&plan));
    pre_trust_as_planned(
        &cli_sandbox(),
        &demo.config,
        &demo.home,
        &[
            "plan".into(),
            "--cli".into(),
            "codex".into(),
            "--chat".into(),
            demo.other_chat.to_string(),
            "--grant".into(),
            format!("{}:ro", real.display()),
        ],
    );
    let launch: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let argv: Vec<String> = launch["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let start = launch["command_start"].as_u64().unwrap() as usize;
    std::fs::remove_dir(&real).unwrap();
    std::os::unix::fs::symlink("../../users", &real).unwrap();
    let mut helper_argv = argv[..start].to_vec();
    helper_argv.extend([
        "/bin/sh".into(),
        "-c".into(),
        format!("cat '{}/ann.json' > '{}'", real.display(), copy.display()),
    ]);
    let out = output({
        let mut cmd = Command::new(&helper_argv[0]);
        cmd.args(&helper_argv[1..])
            .env("HOME", &demo.home)
            .stdin(Stdio::null());
        cmd
    });
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symlink"),
        "{}",
        text(&out)
    );
    assert!(!copy.exists(), "the program ran");
}

#[test]
fn two_plans_of_one_chat_with_other_grants_do_not_change_each_other() {
    let test = "two_plans_of_one_chat_with_other_grants_do_not_change_each_other";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    let doc = demo.other_workflow.join("doc.md");
    let plan = |access: &str| -> Vec<String> {
        let out = output({
            let mut cmd = Command::new(cli_sandbox());
            cmd.arg("--config")
                .arg(&demo.config)
                .args(["plan", "--cli", "codex", "--chat", &demo.chat, "--grant"])
                .arg(format!("{}:{access}", demo.other_workflow.display()))
                .arg("--json")
                .env("HOME", &demo.home);
            cmd
        });
        assert!(out.status.success(), "{}", text(&out));
        pre_trust_as_planned(
            &cli_sandbox(),
            &demo.config,
            &demo.home,
            &[
                "plan".into(),
                "--cli".into(),
                "codex".into(),
                "--chat".into(),
                demo.chat.to_string(),
                "--grant".into(),
                format!("{}:{access}", demo.other_workflow.display()),
            ],
        );
        let launch: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let start = launch["command_start"].as_u64().unwrap() as usize;
        launch["argv"].as_array().unwrap()[..start]
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect()
    };
    let write = |helper: &[String], token: &str| {
        let mut cmd = Command::new(&helper[0]);
        cmd.args(&helper[1..])
            .args([
                "/bin/sh",
                "-c",
                &format!("printf {token} >> '{}'", doc.display()),
            ])
            .env("HOME", &demo.home)
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        let _ = cmd.status();
        std::fs::read_to_string(&doc).unwrap().contains(token)
    };
    for order in [["ro", "rw"], ["rw", "ro"]] {
        let first = plan(order[0]);
        let second = plan(order[1]);
        assert_ne!(first, second, "two plans of one chat share a file");
        for (helper, access) in [(&first, order[0]), (&second, order[1])] {
            let token = format!("tok-{}-{access}-{}", order[0], rand_suffix());
            assert_eq!(
                write(helper, &token),
                access == "rw",
                "{order:?}: the {access} launch"
            );
        }
    }
}

/// Entries of every kind named like a refused pattern, at a grant's top.
fn plant_refused_entries(granted: &Path) -> Vec<(PathBuf, &'static str)> {
    std::fs::remove_dir_all(granted.join("planning")).unwrap();
    std::fs::write(granted.join("planning"), "plan as a file\n").unwrap();
    std::os::unix::fs::symlink("doc.md", granted.join("raw.db")).unwrap();
    let status = Command::new("mkfifo")
        .arg(granted.join("x.sqlite"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(granted.join("y.db")).unwrap();
    std::fs::write(
        granted.join("y.db/inner"),
        "inside a folder named like a database\n",
    )
    .unwrap();
    vec![
        (
            granted.join("planning"),
            "a file named like the folder pattern",
        ),
        (granted.join("raw.db"), "a symlink named like a database"),
        (granted.join("x.sqlite"), "a fifo named like a database"),
        (
            granted.join("y.db/inner"),
            "a file in a folder named like a database",
        ),
    ]
}

/// Opens each path for reading without blocking (a fifo too) and writes `opened PATH` for each
/// one it could open to `argv[1]`.
const OPEN_EACH: &str = r#"
import os, sys
evidence = sys.argv[1]
opened = []
for path in sys.argv[2:]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.read(fd, 64)
        opened.append("opened " + path)
    except OSError:
        pass
open(evidence, "w").write("\n".join(opened))
"#;

/// Enough grants that the plan lists their folders side by side (several threads, each run of
/// one parent opened from the parent's descriptor): a refused entry in any of them, the last
/// ones included, stays closed, and a document beside it stays readable. Read-only and
/// read-write grants alternate, so that both kinds of grant go through the listing.
#[test]
fn refused_entries_stay_closed_across_many_grants_listed_side_by_side() {
    let test = "refused_entries_stay_closed_across_many_grants_listed_side_by_side";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    let workflows = demo.granted.parent().unwrap().to_owned();
    let mut grants = Vec::new();
    let mut refused = Vec::new();
    let mut docs = Vec::new();
    // Above the listing's threshold of 64 folders.
    for i in 0..80 {
        let dir = workflows.join(format!("many-{i:02}"));
        std::fs::create_dir_all(dir.join("planning")).unwrap();
        std::fs::write(dir.join("planning/plan.json"), "{}\n").unwrap();
        std::fs::write(dir.join(format!("raw-{i}.db")), "rows\n").unwrap();
        std::fs::write(dir.join("doc.md"), "a document\n").unwrap();
        let access = if i % 2 == 0 { "ro" } else { "rw" };
        grants.push(format!("{}:{access}", dir.display()));
        refused.push(dir.join("planning/plan.json"));
        refused.push(dir.join(format!("raw-{i}.db")));
        docs.push(dir.join("doc.md"));
    }
    let evidence = demo.runtime.join("opened-many");
    let mut args = vec![evidence.display().to_string()];
    args.extend(refused.iter().chain(&docs).map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // The control: every one opens unconfined.
    let out = output(f.python_unconfined(OPEN_EACH, &args));
    let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
    assert_eq!(
        seen.lines().count(),
        refused.len() + docs.len(),
        "control:\n{}",
        text(&out)
    );

    let _ = std::fs::remove_file(&evidence);
    let mut argv = vec![PYTHON, "-c", OPEN_EACH];
    argv.extend(&args);
    let out = output(f.step(&grants, &argv));
    let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
    let want: Vec<String> = docs
        .iter()
        .map(|d| format!("opened {}", d.display()))
        .collect();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        want,
        "the namespace plan with {} grants:\n{}",
        grants.len(),
        text(&out)
    );
}

#[test]
fn refused_names_of_every_kind_are_closed_in_the_namespace_plan_and_the_fallback() {
    let test = "refused_names_of_every_kind_are_closed_in_the_namespace_plan_and_the_fallback";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    let entries = plant_refused_entries(&demo.granted);
    let evidence = demo.runtime.join("opened");
    let mut args = vec![evidence.display().to_string()];
    args.extend(entries.iter().map(|(p, _)| p.display().to_string()));
    args.push(demo.granted.join("doc.md").display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // The policy says so, for each.
    let ctx = launch::Context::load(&demo.settings()).unwrap();
    let policy = ctx
        .policy(
            &demo.chat,
            &[sandbox_core::GrantRequest::parse(&demo.grant_arg()).unwrap()],
        )
        .unwrap();
    for (path, what) in &entries {
        assert!(
            !policy.decide(Op::Read, path).allowed,
            "decide() allows {what}"
        );
    }

    // The control: every one opens unconfined.
    let out = output(f.python_unconfined(OPEN_EACH, &args));
    let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
    assert_eq!(
        seen.lines().count(),
        entries.len() + 1,
        "control: {seen}\n{}",
        text(&out)
    );

    // The namespace plan.
    let _ = std::fs::remove_file(&evidence);
    let mut argv = vec![PYTHON, "-c", OPEN_EACH];
    argv.extend(&args);
    let out = output(f.step(&[demo.grant_arg()], &argv));
    let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        [format!("opened {}", demo.granted.join("doc.md").display())],
        "namespace plan:\n{}",
        text(&out)
    );

    // The Landlock-only fallback, with its stated gap: Landlock judges what a symlink leads to,
    // not its name, so `raw.db -> doc.md` opens doc.md, which is granted anyway. Everything else
    // is closed.
    let _ = std::fs::remove_file(&evidence);
    let mut kernel = cli_sandbox_tests::this_kernel();
    kernel.namespaces = false;
    let plan = sandbox_linux::compile(&policy, kernel).unwrap();
    let plan_file = demo.root.join("frozen-plan.json");
    std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let out = output({
        let mut cmd = Command::new(cli_sandbox());
        cmd.arg("exec")
            .arg("--policy")
            .arg(&plan_file)
            .arg("--")
            .args(&argv)
            .env("HOME", &demo.home)
            .current_dir(&demo.runtime)
            .stdin(Stdio::null());
        cmd
    });
    let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        [
            format!("opened {}", demo.granted.join("raw.db").display()),
            format!("opened {}", demo.granted.join("doc.md").display())
        ],
        "fallback:\n{}",
        text(&out)
    );
    let gap = plan
        .guarantees
        .iter()
        .find(|g| g.is(sandbox_core::Promise::Refused))
        .unwrap();
    assert!(
        matches!(&gap.enforcement, sandbox_core::Enforcement::Partly(note) if note.contains("symlink")),
        "the fallback does not state its gap: {gap:?}"
    );
}

mod kinds {
    //! Refused patterns against entries of every kind, compared with `decide()` in both plans.
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Kind {
        File,
        Dir,
        Symlink,
        Fifo,
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            Just(Kind::File),
            Just(Kind::Dir),
            Just(Kind::Symlink),
            Just(Kind::Fifo)
        ]
    }

    fn make(path: &Path, kind: Kind, content: &str) {
        match kind {
            Kind::File => std::fs::write(path, content).unwrap(),
            Kind::Dir => {
                std::fs::create_dir_all(path).unwrap();
                std::fs::write(path.join("inner"), content).unwrap();
            }
            // A link to a file of the grant that is readable in its own right.
            Kind::Symlink => std::os::unix::fs::symlink("doc.md", path).unwrap(),
            Kind::Fifo => {
                assert!(Command::new("mkfifo").arg(path).status().unwrap().success())
            }
        }
    }

    /// The path a read of the entry opens: the file inside a folder, the entry otherwise.
    fn probe(path: &Path, kind: Kind) -> PathBuf {
        match kind {
            Kind::Dir => path.join("inner"),
            _ => path.to_owned(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_kind_of_entry_gets_decides_verdict_in_both_plans(
            entries in proptest::collection::vec(("(planning|raw|notes|a[bc]?)(\\.db|\\.sqlite|\\.txt|\\.key)?", kind()), 1..6),
            extra in proptest::sample::select(vec!["", "*.key", "notes.txt", "secrets/"]),
            rw in any::<bool>(),
        ) {
            if !confinement_available("every_kind_of_entry_gets_decides_verdict_in_both_plans") {
                return Ok(());
            }
            let f = fixture(None);
            let demo = &f.demo;
            if !extra.is_empty() {
                std::fs::write(
                    &demo.config,
                    format!(
                        "{}\nrefused = [{extra:?}]\n",
                        std::fs::read_to_string(&demo.config).unwrap()
                    ),
                )
                .unwrap();
            }
            std::fs::remove_dir_all(demo.granted.join("planning")).unwrap();
            std::fs::remove_file(demo.granted.join("workflow.sqlite")).unwrap();
            let mut probes = Vec::new();
            let mut names = std::collections::BTreeSet::new();
            for (n, (name, kind)) in entries.iter().enumerate() {
                if !names.insert(name.clone()) {
                    continue;
                }
                let path = demo.granted.join(name);
                make(&path, *kind, &format!("content-{n}"));
                probes.push((probe(&path, *kind), *kind, path));
            }
            let grant = format!("{}:{}", demo.granted.display(), if rw { "rw" } else { "ro" });
            let ctx = launch::Context::load(&demo.settings()).unwrap();
            let policy = ctx.policy(&demo.chat, &[sandbox_core::GrantRequest::parse(&grant).unwrap()]).unwrap();
            let evidence = demo.runtime.join("opened");
            let mut argv: Vec<String> = vec![PYTHON.into(), "-c".into(), OPEN_EACH.into(), evidence.display().to_string()];
            argv.extend(probes.iter().map(|(p, _, _)| p.display().to_string()));
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();

            let mut kernel = cli_sandbox_tests::this_kernel();
            for namespaces in [true, false] {
                let _ = std::fs::remove_file(&evidence);
                let out = if namespaces {
                    output(f.step(std::slice::from_ref(&grant), &argv))
                } else {
                    kernel.namespaces = false;
                    let plan = sandbox_linux::compile(&policy, kernel).unwrap();
                    let plan_file = demo.root.join("frozen-plan.json");
                    std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
                    let mut cmd = Command::new(cli_sandbox());
                    cmd.arg("exec").arg("--policy").arg(&plan_file).arg("--").args(&argv)
                        .env("HOME", &demo.home).current_dir(&demo.runtime).stdin(Stdio::null());
                    output(cmd)
                };
                prop_assert!(out.status.success(), "{}", text(&out));
                let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
                for (opened_path, kind, entry) in &probes {
                    let opened = seen.lines().any(|l| l == format!("opened {}", opened_path.display()));
                    let mut allowed = policy.decide(Op::Read, opened_path).allowed;
                    // The fallback's stated gap: a symlink's name is not closed, its (granted)
                    // target is what Landlock judges.
                    if !namespaces && matches!(kind, Kind::Symlink) {
                        allowed = policy.decide(Op::Read, &demo.granted.join("doc.md")).allowed;
                    }
                    prop_assert_eq!(
                        opened, allowed,
                        "{} ({:?}) with namespaces={}: decide says {:?}",
                        entry.display(), kind, namespaces, policy.decide(Op::Read, opened_path).rule
                    );
                }
            }
        }
    }
}

#[test]
fn security_md_names_every_promise_and_every_test_it_cites_exists() {
    let doc = std::fs::read_to_string(cli_sandbox_tests::repo_root().join("SECURITY.md"))
        .expect("SECURITY.md");
    for promise in sandbox_core::Promise::ALL {
        assert!(
            doc.contains(&format!("`{}`", promise.id())),
            "SECURITY.md's table of promises does not name `{}`",
            promise.id()
        );
    }
    // Every `linux_escapes::name` it cites is a test of this file (a renamed test must not leave
    // the page pointing at nothing).
    let source = include_str!("linux_escapes.rs");
    for cited in doc.split("linux_escapes::").skip(1) {
        let name: String = cited
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let name = name.trim_end_matches('_').rsplit("::").next().unwrap_or("");
        if name.is_empty() {
            continue;
        }
        assert!(
            source.contains(&format!("fn {name}")),
            "SECURITY.md cites linux_escapes::{name}, which is not a test here"
        );
    }
}

#[test]
fn security_md_says_what_the_plans_report_for_each_promise() {
    if !root_or_skip(
        "security_md_says_what_the_plans_report_for_each_promise",
        "the table is for a root launcher's plans",
    ) {
        return;
    }
    let doc = std::fs::read_to_string(cli_sandbox_tests::repo_root().join("SECURITY.md"))
        .expect("SECURITY.md");
    let f = fixture(None);
    let ctx = launch::Context::load(&f.demo.settings()).unwrap();
    let policy = ctx
        .policy(
            &f.demo.chat,
            &[sandbox_core::GrantRequest::parse(&f.demo.grant_arg()).unwrap()],
        )
        .unwrap();
    let word = |e: &sandbox_core::Enforcement| match e {
        sandbox_core::Enforcement::Fully => "fully",
        sandbox_core::Enforcement::Partly(_) => "partly",
        sandbox_core::Enforcement::Not(_) => "not",
    };
    for (column, namespaces) in [(2, true), (3, false)] {
        let kernel = sandbox_linux::plan::Kernel {
            landlock_abi: 7,
            namespaces,
            fuse: cli_sandbox_tests::fuse_for_every_user(),
        };
        let plan = sandbox_linux::compile(&policy, kernel).unwrap();
        for promise in sandbox_core::Promise::ALL {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", promise.id())))
                .unwrap_or_else(|| panic!("no row for `{}`", promise.id()));
            let cell = row.split('|').nth(column).unwrap().trim();
            let said = cell.split([' ', ',', '(']).next().unwrap();
            if !["fully", "partly", "not"].contains(&said) {
                continue; // a conditional cell ("with `harden`: ..."), said in words
            }
            let reported: Vec<&str> = plan
                .guarantees
                .iter()
                .filter(|g| g.is(promise))
                .map(|g| word(&g.enforcement))
                .collect();
            if reported.is_empty() {
                continue; // not reported by this plan for this policy (harden off, ...)
            }
            assert!(
                reported.contains(&said),
                "SECURITY.md says `{}` is {said} (namespaces: {namespaces}); the plan reports {reported:?}",
                promise.id()
            );
        }
    }
}

#[test]
fn the_older_kernels_way_of_covering_gives_the_same_verdicts_and_leaves_nothing_attached() {
    let test =
        "the_older_kernels_way_of_covering_gives_the_same_verdicts_and_leaves_nothing_attached";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    let entries = plant_refused_entries(&demo.granted);
    let evidence = demo.runtime.join("opened");
    let ctx = launch::Context::load(&demo.settings()).unwrap();
    let policy = ctx
        .policy(
            &demo.chat,
            &[sandbox_core::GrantRequest::parse(&demo.grant_arg()).unwrap()],
        )
        .unwrap();
    let mut plan = sandbox_linux::compile(&policy, cli_sandbox_tests::this_kernel()).unwrap();
    plan.namespaces.as_mut().unwrap().attach_stand_ins = true;
    let plan_file = demo.root.join("attached-plan.json");
    std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let mut script = format!(
        "{PYTHON} -c '{}' {} {}",
        OPEN_EACH.replace('\'', "'\\''"),
        evidence.display(),
        entries
            .iter()
            .map(|(p, _)| p.display().to_string())
            .chain([demo.granted.join("doc.md").display().to_string()])
            .collect::<Vec<_>>()
            .join(" ")
    );
    script.push_str(&format!(
        "; grep -c stand-ins /proc/self/mountinfo > {0}/mounts; ls -a /dev > {0}/dev",
        demo.runtime.display()
    ));
    let out = output({
        let mut cmd = Command::new(cli_sandbox());
        cmd.arg("exec")
            .arg("--policy")
            .arg(&plan_file)
            .args(["--", "/bin/sh", "-c", &script])
            .env("HOME", &demo.home)
            .stdin(Stdio::null());
        cmd
    });
    assert!(out.status.success(), "{}", text(&out));
    let seen = std::fs::read_to_string(&evidence).unwrap_or_default();
    assert_eq!(
        seen.lines().collect::<Vec<_>>(),
        [format!("opened {}", demo.granted.join("doc.md").display())],
        "{}",
        text(&out)
    );
    let mounts = std::fs::read_to_string(demo.runtime.join("mounts")).unwrap();
    assert_eq!(mounts.trim(), "0", "the stand-ins stayed attached");
    let dev = std::fs::read_to_string(demo.runtime.join("dev")).unwrap();
    assert!(!dev.contains("stand-ins"), "{dev}");
}

#[test]
fn a_helper_a_chat_could_replace_runs_from_a_copy_kept_in_the_state_root() {
    let test = "a_helper_a_chat_could_replace_runs_from_a_copy_kept_in_the_state_root";
    if !confinement_available(test) {
        return;
    }
    let f = fixture(None);
    let demo = &f.demo;
    // `cargo install` puts the binary in the home, which every chat may write.
    let installed = demo.home.join(".cargo/bin/cli-sandbox");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::fs::copy(cli_sandbox(), &installed).unwrap();
    let plan = output({
        let mut cmd = Command::new(&installed);
        cmd.arg("--config")
            .arg(&demo.config)
            .args(["plan", "--cli", "codex", "--chat", &demo.chat, "--json"])
            .env("HOME", &demo.home)
            .env_remove("CLI_SANDBOX_HELPER");
        cmd
    });
    assert!(plan.status.success(), "{}", text(&plan));
    pre_trust_as_planned(
        &installed,
        &demo.config,
        &demo.home,
        &[
            "plan".into(),
            "--cli".into(),
            "codex".into(),
            "--chat".into(),
            demo.chat.to_string(),
        ],
    );
    let launch: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let helper = PathBuf::from(launch["argv"][0].as_str().unwrap());
    assert!(
        helper.starts_with(demo.state_root.join("state/cli-sandbox/helper")),
        "the launch runs {} , which a chat could replace",
        helper.display()
    );
    // The copy is the binary itself, and it runs the launch.
    assert_eq!(
        std::fs::read(&helper).unwrap(),
        std::fs::read(&installed).unwrap()
    );
    let start = launch["command_start"].as_u64().unwrap() as usize;
    let argv: Vec<&str> = launch["argv"].as_array().unwrap()[..start]
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let out = output({
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..])
            .args(["/bin/sh", "-c", "exit 3"])
            .env("HOME", &demo.home)
            .stdin(Stdio::null());
        cmd
    });
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    // And a chat cannot touch the copy: the state root is closed to it.
    let policy = launch::Context::load(&demo.settings())
        .unwrap()
        .policy(&demo.chat, &[])
        .unwrap();
    assert!(!policy.decide(Op::Write, &helper).allowed);
}
