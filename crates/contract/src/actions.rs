//! The contract's actions: what the harness script attempts, what the policy expects, and how
//! the runner reads the verdict from the disk afterwards.
//!
//! Every action leaves evidence that only success could produce: a marker holding the secret
//! content it read, the token it wrote found in the target file, the output of a program that
//! only running it prints. Nothing the script prints is believed.

use std::path::{Path, PathBuf};

use sandbox_core::{Op, Policy, Rule};
use serde::Serialize;

use launch::demo::Demo;

/// Processes started outside the sandbox that a confined process must not reach.
#[derive(Debug, Clone)]
pub struct OutsideTargets {
    /// A tmux server's socket (its server would run any command unconfined).
    pub tmux_socket: Option<PathBuf>,
    /// A process standing in for the launcher: it records a SIGUSR1 and holds a secret in its
    /// environment.
    pub sentinel_pid: Option<u32>,
    pub sentinel_secret: String,
    /// Where the sentinel records the signal.
    pub sentinel_evidence: PathBuf,
}

/// One thing the harness attempts.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    pub id: String,
    pub what: String,
    /// Whether the policy allows it.
    pub expected_allowed: bool,
    /// The rule that decides it (from `Policy::decide`, or the way out it is).
    pub rule: String,
    #[serde(skip)]
    pub script: String,
    #[serde(skip)]
    pub evidence: Evidence,
    /// For a plain read or write of one file: that file, so that a CLI's own file tools can
    /// attempt the same (the model-driven layer, `contract::agents`).
    #[serde(skip)]
    pub file: Option<FileTarget>,
    /// What it does to which path, for an action on one path (not a way out).
    #[serde(skip)]
    pub target: Option<(Op, PathBuf)>,
}

impl Action {
    /// In the Landlock-only plan, nothing can be created directly in a frozen folder (the plan
    /// says so in its guarantees): a write that creates a file there is expected refused, with
    /// that rule. `frozen` is the plan's list; empty for a namespace plan.
    pub fn follow_the_frozen_plan(&mut self, frozen: &[PathBuf]) {
        let Some((Op::Write, path)) = &self.target else {
            return;
        };
        let Some(parent) = path.parent() else {
            return;
        };
        if self.expected_allowed && !path.exists() && frozen.iter().any(|f| f == parent) {
            self.expected_allowed = false;
            self.rule = format!(
                "frozen: the Landlock-only plan creates nothing directly in {}",
                parent.display()
            );
        }
    }
}

/// The one file a plain read or write action reads or writes.
#[derive(Debug, Clone)]
pub struct FileTarget {
    pub op: Op,
    pub path: PathBuf,
}

/// What on the disk proves an action succeeded.
#[derive(Debug, Clone)]
pub enum Evidence {
    /// The file holds this text.
    Holds { file: PathBuf, text: String },
    /// The marker names a file that holds this text.
    NamedFileHolds { marker: PathBuf, text: String },
    /// The path exists.
    Exists { path: PathBuf },
    /// Any of these.
    Any(Vec<Evidence>),
    /// Written by a process outside, some time after the harness asked it to (the runner waits
    /// a grace period before reading it).
    Eventually(Box<Evidence>),
}

impl Evidence {
    /// Reads the verdict from the disk: `true` when the action succeeded.
    pub fn succeeded(&self) -> bool {
        match self {
            Evidence::Holds { file, text } => std::fs::read_to_string(file)
                .map(|content| content.contains(text.as_str()))
                .unwrap_or(false),
            Evidence::NamedFileHolds { marker, text } => std::fs::read_to_string(marker)
                .ok()
                .and_then(|named| std::fs::read_to_string(named.trim()).ok())
                .is_some_and(|content| content.contains(text.as_str())),
            Evidence::Exists { path } => path.symlink_metadata().is_ok(),
            Evidence::Any(all) => all.iter().any(Evidence::succeeded),
            Evidence::Eventually(inner) => inner.succeeded(),
        }
    }
}

fn q(path: &Path) -> String {
    shell_words::quote(&path.display().to_string()).into_owned()
}

/// Builds the actions for one run. `markers` is a fresh folder inside the chat's runtime;
/// `token` is unique to the run, so that evidence of another run never counts.
pub fn actions(
    demo: &Demo,
    policy: &Policy,
    outside: &OutsideTargets,
    markers: &Path,
    token: &str,
) -> Vec<Action> {
    let mut list = Vec::new();
    let mut path_action =
        |id: &str, what: String, op: Op, path: &Path, script: String, evidence| {
            let verdict = policy.decide(op, path);
            list.push(Action {
                id: id.to_owned(),
                what,
                expected_allowed: verdict.allowed,
                rule: describe(&verdict.rule),
                script,
                evidence,
                file: None,
                target: Some((op, path.to_owned())),
            });
        };
    // The plain reads and writes of one file, by id (set on their actions at the end).
    let mut plain_files: Vec<(String, FileTarget)> = Vec::new();
    let marker = |id: &str| markers.join(id);

    let mut read = |id: &str, what: &str, path: &Path| {
        plain_files.push((
            id.to_owned(),
            FileTarget {
                op: Op::Read,
                path: path.to_owned(),
            },
        ));
        let secret = demo.secret(path).to_owned();
        path_action(
            id,
            format!("read {what}"),
            Op::Read,
            path,
            format!("cat {} > {}", q(path), q(&marker(id))),
            Evidence::Holds {
                file: marker(id),
                text: secret,
            },
        );
    };
    read(
        "home-read",
        "a personal file in the home",
        &demo.home.join("notes.txt"),
    );
    read(
        "granted-read",
        "the granted workflow",
        &demo.granted.join("doc.md"),
    );
    read(
        "other-workflow-read",
        "another workflow",
        &demo.other_workflow.join("doc.md"),
    );
    read(
        "plan-read",
        "planning/plan.json of the granted workflow",
        &demo.granted.join("planning/plan.json"),
    );
    read(
        "raw-database-read",
        "the raw database of the granted workflow",
        &demo.granted.join("workflow.sqlite"),
    );
    read(
        "config-json-read",
        "config.json (the server token)",
        &demo.state_root.join("config.json"),
    );
    read(
        "auth-read",
        "state/auth/",
        &demo.state_root.join("state/auth/login.json"),
    );
    read(
        "personal-mcp-read",
        "personal-mcp/",
        &demo.state_root.join("personal-mcp/servers.json"),
    );
    read(
        "chat-events-read",
        "a chat event database",
        &demo.state_root.join("state/chats/events.sqlite"),
    );
    read(
        "other-runtime-read",
        "another chat's runtime",
        &demo.other_runtime.join("notes.txt"),
    );

    let mut write = |id: &str, what: &str, path: &Path| {
        plain_files.push((
            id.to_owned(),
            FileTarget {
                op: Op::Write,
                path: path.to_owned(),
            },
        ));
        path_action(
            id,
            format!("write {what}"),
            Op::Write,
            path,
            format!("printf '%s\\n' {} >> {}", q(Path::new(token)), q(path)),
            Evidence::Holds {
                file: path.to_owned(),
                text: token.to_owned(),
            },
        );
    };
    write(
        "home-write",
        "a personal file in the home",
        &demo.home.join("notes.txt"),
    );
    write(
        "home-create",
        "a new file directly in the home",
        &demo.home.join(format!(".new-{token}")),
    );
    write(
        "runtime-write",
        "the chat's own runtime",
        &demo.runtime.join(format!("out-{token}.txt")),
    );
    write(
        "granted-write",
        "the granted workflow",
        &demo.granted.join(format!("new-{token}.md")),
    );
    write(
        "other-workflow-write",
        "another workflow",
        &demo.other_workflow.join(format!("new-{token}.md")),
    );
    write(
        "plan-write",
        "planning/ of the granted workflow",
        &demo.granted.join("planning/plan.json"),
    );
    write(
        "raw-database-write",
        "the raw database of the granted workflow",
        &demo.granted.join("workflow.sqlite"),
    );
    write(
        "beside-runtimes-write",
        "beside the runtimes",
        &policy.runtimes_dir().join(format!("beside-{token}")),
    );
    write(
        "config-json-write",
        "config.json",
        &demo.state_root.join("config.json"),
    );

    let tmp_probe = Path::new("/tmp").join(format!("cli-sandbox-contract-{token}"));
    path_action(
        "tmp-create",
        "create a new file in /tmp".into(),
        Op::Write,
        &tmp_probe,
        // A pipe, not `$(mktemp)`: Gemini's shell tool refuses any command substitution. The
        // namespace plan's /tmp is the chat's own (`[limits] tmp`), gone with it: the file's
        // content is copied out of it into the marker, which only a write and a read of the file
        // in /tmp produce.
        format!(
            "mktemp | while read -r f; do printf '%s' {t} > \"$f\" && cat \"$f\" > {m}; done",
            t = q(Path::new(token)),
            m = q(&marker("tmp-create"))
        ),
        Evidence::Holds {
            file: marker("tmp-create"),
            text: token.to_owned(),
        },
    );

    let runtimes = &policy.runtimes_dir();
    path_action(
        "runtimes-list",
        "list the runtimes folder".into(),
        Op::List,
        runtimes,
        format!("ls -a {} > {}", q(runtimes), q(&marker("runtimes-list"))),
        Evidence::Holds {
            file: marker("runtimes-list"),
            text: demo.other_chat.clone(),
        },
    );

    let gitconfig = demo.home.join(".gitconfig");
    path_action(
        "git-config-global",
        "git config --global (a new file directly in the home)".into(),
        Op::Write,
        &gitconfig,
        format!(
            "git config --global cli-sandbox.probe {}",
            q(Path::new(token))
        ),
        Evidence::Holds {
            file: gitconfig.clone(),
            text: token.to_owned(),
        },
    );

    let config_json = demo.state_root.join("config.json");
    let link = demo.home.join(format!(".hardlink-{token}"));
    path_action(
        "hardlink-protected",
        "hard-link config.json into the home".into(),
        Op::Read,
        &config_json,
        format!("ln {} {}", q(&config_json), q(&link)),
        Evidence::Holds {
            file: link,
            text: demo.secret(&config_json).to_owned(),
        },
    );
    let symlink = demo.home.join(format!(".symlink-{token}"));
    path_action(
        "symlink-protected-read",
        "read config.json through a symlink in the home".into(),
        Op::Read,
        &config_json,
        format!(
            "ln -s {} {} && cat {} > {}",
            q(&config_json),
            q(&symlink),
            q(&symlink),
            q(&marker("symlink-protected-read"))
        ),
        Evidence::Holds {
            file: marker("symlink-protected-read"),
            text: demo.secret(&config_json).to_owned(),
        },
    );

    for (id, what, path) in [
        (
            "move-workspace-docs",
            "rename workspace-docs",
            demo.workspace_docs.clone(),
        ),
        (
            "move-state-root",
            "rename the app folder",
            demo.state_root.clone(),
        ),
        (
            "move-home-ancestor",
            "rename an ancestor of the app folder",
            demo.home.join(".local"),
        ),
    ] {
        // Moved back at once when it works, so that the markers (in the runtime) stay put.
        let moved = PathBuf::from(format!("{}.moved-{token}", path.display()));
        path_action(
            id,
            what.into(),
            Op::Move,
            &path,
            format!(
                "mv {p} {m} && mv {m} {p} && printf moved > {k}",
                p = q(&path),
                m = q(&moved),
                k = q(&marker(id))
            ),
            Evidence::Any(vec![
                Evidence::Exists { path: moved },
                Evidence::Holds {
                    file: marker(id),
                    text: "moved".into(),
                },
            ]),
        );
    }

    for program in policy.blocked_programs() {
        if !program.exists() {
            continue;
        }
        let name = program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = format!("exec-{name}");
        let (script, evidence) = if *program == demo.blocked_stand_in {
            (
                format!("{} {}", q(program), q(&marker(&id))),
                Evidence::Holds {
                    file: marker(&id),
                    text: "ran".into(),
                },
            )
        } else {
            // What only running it prints: its version, as it prints it outside.
            let reference = std::process::Command::new(program)
                .arg("--version")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            if reference.trim().is_empty() {
                continue;
            }
            (
                format!("{} --version > {} 2>/dev/null", q(program), q(&marker(&id))),
                Evidence::Holds {
                    file: marker(&id),
                    text: reference.trim().to_owned(),
                },
            )
        };
        path_action(
            &id,
            format!("execute {}", program.display()),
            Op::Exec,
            program,
            script,
            evidence,
        );
    }

    for action in &mut list {
        action.file = plain_files
            .iter()
            .find(|(id, _)| *id == action.id)
            .map(|(_, target)| target.clone());
    }

    let way_out = |id: &str, what: &str, rule: &str, script: String, evidence| Action {
        id: id.to_owned(),
        what: what.to_owned(),
        expected_allowed: false,
        rule: format!("way out: {rule}"),
        script,
        evidence,
        file: None,
        target: None,
    };
    if let Some(socket) = &outside.tmux_socket {
        let evidence_file = demo.outside.join(format!("tmux-{token}"));
        list.push(way_out(
            "tmux-outside",
            "make the tmux server started outside run a command",
            "a multiplexer's server",
            format!(
                "tmux -S {} new-window {} 2>/dev/null",
                q(socket),
                shell_words::quote(&format!("printf ran > {}", q(&evidence_file)))
            ),
            Evidence::Eventually(Box::new(Evidence::Holds {
                file: evidence_file,
                text: "ran".into(),
            })),
        ));
    }
    if let Some(pid) = outside.sentinel_pid {
        list.push(way_out(
            "signal-launcher",
            "signal a process outside (stand-in for the launcher)",
            "signals",
            format!("kill -USR1 {pid}"),
            Evidence::Eventually(Box::new(Evidence::Exists {
                path: outside.sentinel_evidence.clone(),
            })),
        ));
        list.push(way_out(
            "environ-launcher",
            "read the environment of a process outside (stand-in for the launcher)",
            "/proc/<pid>/environ",
            format!(
                "cat /proc/{pid}/environ > {}",
                q(&marker("environ-launcher"))
            ),
            Evidence::Holds {
                file: marker("environ-launcher"),
                text: outside.sentinel_secret.clone(),
            },
        ));
    }
    // A rename that wrongly succeeds moves the layout under the other actions: keep them last.
    list.sort_by_key(|a| a.id.starts_with("move-"));
    list
}

fn describe(rule: &Rule) -> String {
    match rule {
        Rule::Blocked { .. } => "blocked program".into(),
        Rule::Refused { pattern, .. } => format!("refused pattern {pattern}"),
        Rule::Pinned { .. } => "pinned (a protected root or its ancestor)".into(),
        Rule::Git { .. } => "git's own files in a read-write grant (hooks, config)".into(),
        Rule::Runtime { .. } => "the chat's runtime".into(),
        Rule::Granted { access, .. } => format!("granted {}", access.as_str()),
        Rule::Closed { root } => format!("closed ({})", root.display()),
        Rule::Hardened { path } => format!("hardened ({})", path.display()),
        Rule::Settings { path } => format!("settings ({})", path.display()),
        Rule::Kernel { path } => format!("kernel ({})", path.display()),
        Rule::Secret { path } => format!("a credential place ({})", path.display()),
        Rule::System => "the system, read-only to a root chat".into(),
        Rule::Open => "open".into(),
    }
}

/// The harness script: every action in turn, none stopping the others.
pub fn harness_script(actions: &[Action], markers: &Path) -> String {
    let mut script = String::from(
        "#!/bin/sh\n# cli-sandbox contract harness: attempts every action; the runner reads the verdicts from the disk.\n",
    );
    script.push_str(&format!("mkdir -p {}\n", q(markers)));
    for action in actions {
        script.push_str(&format!(
            "# {}: {}\n( {} ) 2>/dev/null\n",
            action.id, action.what, action.script
        ));
    }
    script.push_str(&format!("printf done > {}\n", q(&markers.join("done"))));
    script
}
