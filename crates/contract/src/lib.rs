//! The sandbox contract: every action a confined CLI might attempt, run for
//! real under the exact launch, with verdicts read from the disk.

pub mod actions;
pub mod agents;
pub mod run;

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Serialize;

pub use actions::{Action, Evidence, FileTarget, OutsideTargets, actions, harness_script};

use launch::demo::Demo;

/// Variables that would point a CLI (or the launcher) at the person's real settings instead of
/// the demo home's: the contract runs without them.
pub const CLEARED_ENV: &[&str] = &[
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "CURSOR_DATA_DIR",
    "PI_CODING_AGENT_DIR",
    "GEMINI_CLI_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "AGENTWORKS_STATE_ROOT",
    "AGENTWORKS_WORKSPACE_DOCS",
    "TMUX",
    "TMUX_PANE",
];

/// Processes started outside the sandbox for the harness to try to reach: a tmux server and a
/// sentinel standing in for the launcher. Both end when this is dropped.
#[derive(Debug)]
pub struct Outside {
    pub targets: OutsideTargets,
    tmux_socket: Option<PathBuf>,
    sentinel: Option<Child>,
    /// Written by the sentinel when the runner asks (SIGUSR2): any SIGUSR1 sent before it has
    /// been handled by then.
    sentinel_flushed: PathBuf,
}

impl Outside {
    pub fn start(demo: &Demo) -> io::Result<Outside> {
        let socket = demo.outside.join("tmux.sock");
        let tmux = tmux_server(&socket)
            .args(["new-session", "-d", "-s", "outside", "sleep 3600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let tmux_socket = matches!(tmux, Ok(s) if s.success()).then_some(socket);
        if let Some(socket) = &tmux_socket {
            // A window whose command has ended stays: its count tells whether any command got
            // through, so that the runner knows when to wait for its evidence.
            let _ = tmux_command(socket)
                .args(["set-option", "-g", "remain-on-exit", "on"])
                .status();
        }
        if tmux_socket.is_none() {
            tracing::warn!("tmux is not installed: the multiplexer action is left out");
        }
        let evidence = demo.outside.join("sentinel-signalled");
        let flushed = demo.outside.join("sentinel-flushed");
        let secret = format!("sentinel-secret-{}", std::process::id());
        let q = |p: &std::path::Path| shell_words::quote(&p.display().to_string()).into_owned();
        // The shell runs pending traps in signal order, so SIGUSR1 (10) before SIGUSR2 (12).
        let sentinel = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "trap 'printf hit > {}' USR1; trap ': > {}' USR2; while :; do sleep 0.05; done",
                q(&evidence),
                q(&flushed)
            ))
            .env("CLI_SANDBOX_SENTINEL_SECRET", &secret)
            .stdin(Stdio::null())
            .spawn()?;
        Ok(Outside {
            targets: OutsideTargets {
                tmux_socket: tmux_socket.clone(),
                sentinel_pid: Some(sentinel.id()),
                sentinel_secret: secret,
                sentinel_evidence: evidence,
            },
            tmux_socket,
            sentinel: Some(sentinel),
            sentinel_flushed: flushed,
        })
    }

    /// Waits until what the harness may have asked of the processes outside has happened: the
    /// sentinel has handled every signal sent before now, and a command the tmux server
    /// accepted has had time to leave its evidence.
    fn settle(&self, actions: &[Action]) {
        let limit = Duration::from_secs(10);
        if let Some(child) = &self.sentinel {
            let _ = std::fs::remove_file(&self.sentinel_flushed);
            // SAFETY: signalling our own child, which is alive until we drop it.
            let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR2) } == 0;
            if sent {
                wait_until(limit, || self.sentinel_flushed.exists());
            }
        }
        if let Some(socket) = &self.tmux_socket {
            let windows = tmux_command(socket)
                .args(["list-windows", "-a"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
                .unwrap_or(0);
            if windows > 1 {
                wait_until(limit, || {
                    actions.iter().all(|a| match &a.evidence {
                        Evidence::Eventually(inner) => inner.succeeded(),
                        _ => true,
                    })
                });
            }
        }
    }

    /// Clears what the last run left, so that the next run's evidence is its own.
    fn reset(&self) {
        let _ = std::fs::remove_file(&self.targets.sentinel_evidence);
    }
}

/// `tmux` for a new server of the runner's own on `socket`: no configuration file, and `/bin/sh`
/// as the shell that runs its sessions' commands. Without `SHELL` (CI's environment has none)
/// tmux takes the user's login shell, and an ordinary user's may be `nologin`: the session's
/// command would end at once, and the server with it.
pub(crate) fn tmux_server(socket: &std::path::Path) -> Command {
    let mut cmd = Command::new("tmux");
    cmd.arg("-S")
        .arg(socket)
        .args(["-f", "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env_remove("TMUX");
    cmd
}

fn tmux_command(socket: &std::path::Path) -> Command {
    let mut cmd = Command::new("tmux");
    cmd.arg("-S")
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

fn wait_until(limit: Duration, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        if let Some(socket) = &self.tmux_socket {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(socket)
                .arg("kill-server")
                .stderr(Stdio::null())
                .status();
        }
        if let Some(mut child) = self.sentinel.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One run's harness: the actions it attempts and the script, written beside the layout. The
/// token names the run, so that its markers and evidence are its own.
#[derive(Debug)]
pub struct Harness {
    pub actions: Vec<Action>,
    pub script: PathBuf,
}

impl Harness {
    pub fn write(
        demo: &Demo,
        policy: &sandbox_core::Policy,
        outside: &Outside,
        token: &str,
    ) -> io::Result<Harness> {
        let markers = demo.runtime.join(format!("markers-{token}"));
        let actions = actions(demo, policy, &outside.targets, &markers, token);
        let script = demo.root.join(format!("harness-{token}.sh"));
        std::fs::write(&script, harness_script(&actions, &markers))?;
        Ok(Harness { actions, script })
    }
}

/// One row of the contract's table.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub id: String,
    pub what: String,
    pub rule: String,
    pub expected: Verdict,
    pub actual: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allowed,
    Refused,
}

impl Verdict {
    fn from_allowed(allowed: bool) -> Verdict {
        if allowed {
            Verdict::Allowed
        } else {
            Verdict::Refused
        }
    }
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.expected == self.actual
    }
}

/// Reads every action's verdict from the disk, after the harness has run, once the processes
/// outside have settled.
pub fn read_verdicts(actions: &[Action], outside: &Outside) -> Vec<Outcome> {
    outside.settle(actions);
    let outcomes = actions
        .iter()
        .map(|a| Outcome {
            id: a.id.clone(),
            what: a.what.clone(),
            rule: a.rule.clone(),
            expected: Verdict::from_allowed(a.expected_allowed),
            actual: Verdict::from_allowed(a.evidence.succeeded()),
        })
        .collect();
    outside.reset();
    outcomes
}
