//! The sandbox contract (DESIGN section 8): every action a confined CLI might attempt, run for
//! real under the exact launch, with verdicts read from the disk.

pub mod actions;
pub mod run;

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::Serialize;

pub use actions::{Action, Evidence, OutsideTargets, actions, harness_script};

use crate::demo::Demo;

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
}

impl Outside {
    pub fn start(demo: &Demo) -> io::Result<Outside> {
        let socket = demo.outside.join("tmux.sock");
        let tmux = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["new-session", "-d", "-s", "outside", "sleep 3600"])
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let tmux_socket = matches!(tmux, Ok(s) if s.success()).then_some(socket);
        if tmux_socket.is_none() {
            tracing::warn!("tmux is not installed: the multiplexer action is left out");
        }
        let evidence = demo.outside.join("sentinel-signalled");
        let secret = format!("sentinel-secret-{}", std::process::id());
        let sentinel = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "trap 'printf hit > {}; exit 0' USR1; while :; do sleep 0.05; done",
                shell_words::quote(&evidence.display().to_string())
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
        })
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

/// Reads every action's verdict from the disk, after the harness has run. Evidence left by
/// processes outside gets one common grace period first.
pub fn read_verdicts(actions: &[Action]) -> Vec<Outcome> {
    if actions
        .iter()
        .any(|a| matches!(a.evidence, Evidence::Eventually(_)))
    {
        std::thread::sleep(Duration::from_millis(500));
    }
    actions
        .iter()
        .map(|a| Outcome {
            id: a.id.clone(),
            what: a.what.clone(),
            rule: a.rule.clone(),
            expected: Verdict::from_allowed(a.expected_allowed),
            actual: Verdict::from_allowed(a.evidence.succeeded()),
        })
        .collect()
}
