//! Ways out of the sandbox that the contract does not try, under the real kernel through
//! `cli-sandbox step`: a unix-socket server started outside (pathname and abstract, standing in
//! for the session bus, docker.sock, a CLI's daemon), the kernel keyring shared with processes
//! outside, and keystrokes pushed into the terminal (TIOCSTI). Each server and secret is set up
//! outside by the test; the verdict is what the outside saw, and each test first shows that the
//! same attempt succeeds unconfined.
//!
//! The attempts are small Python programs run with `/usr/bin/python3` (not a shim on PATH,
//! which would look for its own files in the home the sandbox is given).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli_sandbox_tests::{cli_sandbox, confinement_available};
use launch::demo::Demo;

const PYTHON: &str = "/usr/bin/python3";

fn python_available(test: &str) -> bool {
    if Path::new(PYTHON).exists() {
        return true;
    }
    eprintln!(
        "\n!!! SKIPPED {test}: {PYTHON} is missing; the attempts are Python programs. Install \
         python3 (apt-get install python3) to run it.\n"
    );
    false
}

struct Fixture {
    _dir: tempfile::TempDir,
    demo: Demo,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let demo = Demo::create(dir.path()).expect("demo layout");
    Fixture { _dir: dir, demo }
}

/// Runs `python3 -c program args...` confined by the chat's launch.
fn confined(demo: &Demo, program: &str, args: &[&str]) -> Output {
    Command::new(cli_sandbox())
        .arg("--config")
        .arg(&demo.config)
        .arg("step")
        .args(["--chat", &demo.chat, "--", PYTHON, "-c", program])
        .args(args)
        .env("HOME", &demo.home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("AGENTWORKS_STATE_ROOT")
        .env_remove("AGENTWORKS_WORKSPACE_DOCS")
        .stdin(Stdio::null())
        .output()
        .expect("run cli-sandbox step")
}

/// The same program, unconfined: the control that shows the attempt can succeed.
fn unconfined(program: &str, args: &[&str]) -> Output {
    Command::new(PYTHON)
        .args(["-c", program])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run python3")
}

/// A unix-socket server started outside: it writes `evidence` when a client connects and sends
/// something. `address` is a path, or `@name` for an abstract socket.
struct Server {
    child: Child,
    evidence: PathBuf,
}

const SERVER: &str = r#"
import socket, sys
address, evidence = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + address[1:] if address.startswith("@") else address)
s.listen(8)
open(evidence + ".ready", "w").close()
while True:
    c, _ = s.accept()
    data = c.recv(64)
    if data:
        with open(evidence, "ab") as f:
            f.write(data)
    c.close()
"#;

const CLIENT: &str = r#"
import socket, sys
address, token = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0" + address[1:] if address.startswith("@") else address)
s.sendall(token.encode())
"#;

impl Server {
    fn start(address: &str, evidence: PathBuf) -> Server {
        let child = Command::new(PYTHON)
            .args(["-c", SERVER, address])
            .arg(&evidence)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the server outside");
        let ready = PathBuf::from(format!("{}.ready", evidence.display()));
        let started = Instant::now();
        while !ready.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the server never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Server { child, evidence }
    }

    /// Whether a client reached the server with `token` (after a grace period).
    fn reached_with(&self, token: &str) -> bool {
        std::thread::sleep(Duration::from_millis(200));
        std::fs::read_to_string(&self.evidence).is_ok_and(|t| t.contains(token))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn unix_socket_servers_started_outside_are_out_of_reach() {
    let test = "unix_socket_servers_started_outside_are_out_of_reach";
    if !confinement_available(test) || !python_available(test) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    // Stand-ins for the session bus (a pathname socket, what `systemd-run --user` and
    // `gdbus` talk to), docker.sock, a CLI's own daemon; and an abstract socket (the X server's
    // and some buses' kind, which no file permission guards).
    let bus = demo.outside.join("bus");
    let abstract_name = format!("@cli-sandbox-test-{}", std::process::id());
    for (address, what) in [
        (bus.display().to_string(), "a pathname socket"),
        (abstract_name.clone(), "an abstract socket"),
    ] {
        let evidence = demo
            .outside
            .join(format!("reached-{}", what.replace(' ', "-")));
        let server = Server::start(&address, evidence);
        let out = unconfined(CLIENT, &[&address, "control-token"]);
        assert!(out.status.success(), "{what}: the control failed: {out:?}");
        assert!(
            server.reached_with("control-token"),
            "{what}: unconfined, the server was not reached: the test proves nothing"
        );
        let out = confined(demo, CLIENT, &[&address, "confined-token"]);
        assert!(
            !server.reached_with("confined-token"),
            "{what} started outside was reached from inside: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

const KEYRING_ADD: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_add_key = {"x86_64": 248, "aarch64": 217}[__import__("platform").machine()]
KEY_SPEC_USER_KEYRING = -4
secret = sys.argv[1].encode()
key = libc.syscall(SYS_add_key, b"user", b"cli-sandbox-test", secret, len(secret), KEY_SPEC_USER_KEYRING)
print(key)
"#;

const KEYRING_READ: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_keyctl = {"x86_64": 250, "aarch64": 219}[__import__("platform").machine()]
KEYCTL_READ = 11
key, out = int(sys.argv[1]), sys.argv[2]
buf = ctypes.create_string_buffer(256)
n = libc.syscall(SYS_keyctl, KEYCTL_READ, key, buf, 256)
if n > 0:
    open(out, "wb").write(buf.raw[:n])
"#;

#[test]
fn the_kernel_keyring_of_processes_outside_is_out_of_reach() {
    let test = "the_kernel_keyring_of_processes_outside_is_out_of_reach";
    if !confinement_available(test) || !python_available(test) {
        return;
    }
    let machine = std::env::consts::ARCH;
    if machine != "x86_64" && machine != "aarch64" {
        eprintln!(
            "\n!!! SKIPPED {test}: the keyctl numbers are known for x86_64 and aarch64 only.\n"
        );
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let secret = format!("keyring-secret-{}", std::process::id());
    let out = unconfined(KEYRING_ADD, &[&secret]);
    let key = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if key.parse::<i64>().map_or(true, |k| k <= 0) {
        eprintln!(
            "\n!!! SKIPPED {test}: no key could be added to the user keyring here ({key}); \
             the kernel may lack keyrings.\n"
        );
        return;
    }
    let control = demo.outside.join("key-unconfined");
    unconfined(KEYRING_READ, &[&key, control.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&control).unwrap_or_default(),
        secret,
        "unconfined, the key could not be read: the test proves nothing"
    );
    let inside = demo.runtime.join("key-confined");
    confined(demo, KEYRING_READ, &[&key, inside.to_str().unwrap()]);
    assert!(
        !std::fs::read_to_string(&inside).is_ok_and(|t| t.contains(&secret)),
        "the key of a process outside was read from inside"
    );
    // Leave nothing in the user keyring.
    let _ = unconfined(
        r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_keyctl = {"x86_64": 250, "aarch64": 219}[__import__("platform").machine()]
libc.syscall(SYS_keyctl, 21, int(sys.argv[1]), -4)  # KEYCTL_UNLINK from @u
"#,
        &[&key],
    );
}

/// Run outside, as the judge: opens a terminal (a pty), runs the command given with the
/// terminal as its stdin, then reads what arrived in the terminal's input. The command tries to
/// push a key into its stdin with TIOCSTI.
const TERMINAL_JUDGE: &str = r#"
import os, pty, subprocess, sys, tty
master, slave = pty.openpty()
tty.setraw(slave)
subprocess.run(sys.argv[1:], stdin=slave)
os.set_blocking(slave, False)
try:
    got = os.read(slave, 16)
except BlockingIOError:
    got = b""
print("pushed" if b"k" in got else "nothing")
"#;

const PUSH_KEY: &str = r#"
import fcntl, termios
fcntl.ioctl(0, termios.TIOCSTI, b"k")
"#;

#[test]
fn keystrokes_cannot_be_pushed_into_the_terminal() {
    let test = "keystrokes_cannot_be_pushed_into_the_terminal";
    if !confinement_available(test) || !python_available(test) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let judge = |command: &[&std::ffi::OsStr]| -> String {
        let out = Command::new(PYTHON)
            .args(["-c", TERMINAL_JUDGE])
            .args(command)
            .env("HOME", &demo.home)
            .stdin(Stdio::null())
            .output()
            .expect("run the judge");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let python = std::ffi::OsStr::new(PYTHON);
    let dash_c = std::ffi::OsStr::new("-c");
    let push = std::ffi::OsStr::new(PUSH_KEY);
    let control = judge(&[python, dash_c, push]);
    if control != "pushed" {
        eprintln!(
            "note: TIOCSTI is off in this kernel outside the sandbox too \
             (dev.tty.legacy_tiocsti = 0); the confined attempt is still made"
        );
    }
    let binary = cli_sandbox();
    let config = demo.config.clone();
    let inside = judge(&[
        binary.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "step".as_ref(),
        "--chat".as_ref(),
        demo.chat.as_ref(),
        "--".as_ref(),
        python,
        dash_c,
        push,
    ]);
    assert_eq!(
        inside, "nothing",
        "a key was pushed into the terminal from inside (control outside: {control})"
    );
}
