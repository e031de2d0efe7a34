//! Running the contract: the demo layout, every CLI's exact launch with the harness in place of
//! the CLI (both shapes), the scripted step, and the real CLIs where installed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sandbox_core::platform::Facts;
use sandbox_core::{Backend, GrantRequest, Mode, Shape};
use serde::Serialize;

use super::{Harness, Outcome, Outside, Verdict, read_verdicts};
use launch::demo::Demo;
use launch::{Context, Error, LaunchSpec, PreparedLaunch, Program, registry};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub clis: Vec<String>,
    /// The folder the demo layout is built in.
    pub root: PathBuf,
    /// The Linux helper the launches run (`cli-sandbox-helper` or `cli-sandbox`).
    pub helper: PathBuf,
    /// The `cli-sandbox` binary, for the scripted step (`cli-sandbox step`).
    pub cli_sandbox: PathBuf,
    /// A grant added to every launch but not to the expectations: a deliberately broken plan,
    /// for the test that proves the contract notices.
    pub broken_grant: Option<PathBuf>,
}

/// What the runner is doing, for a caller that shows progress (the binary's one line per CLI).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A launch starts: the scripted step (`cli` "step", `shape` "-"), or one CLI in one shape.
    Launch { cli: &'a str, shape: &'a str },
    /// One verdict was read from the disk.
    Verdict {
        cli: &'a str,
        shape: &'a str,
        action: &'a str,
        passed: bool,
    },
    /// A launch could not be computed or run (counted as a failure; the report says why).
    Error { cli: &'a str },
    /// The real CLI was started confined (`Some(passed)`), or not started (`None`): not
    /// installed (`unconfined` false), or nothing confines here (`unconfined` true).
    RealCli {
        cli: &'a str,
        passed: Option<bool>,
        unconfined: bool,
    },
    /// Everything of this CLI (or of the scripted step) is done.
    Done { cli: &'a str },
}

/// One row: a CLI (or the scripted step), a shape, an action, expected and actual.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub cli: String,
    pub shape: String,
    pub action: String,
    pub what: String,
    pub rule: String,
    pub expected: Verdict,
    pub actual: Verdict,
    pub passed: bool,
}

/// A real CLI started inside the sandbox.
#[derive(Debug, Clone, Serialize)]
pub struct RealCli {
    pub cli: String,
    pub program: PathBuf,
    /// What `--version` printed inside the sandbox (empty when it did not run).
    pub version: String,
    /// The kernel's evidence that the process ran confined.
    pub evidence: String,
    pub confined: bool,
    pub passed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub layout: PathBuf,
    pub backend: Backend,
    pub reason: String,
    /// What the demo chat's Linux plan enforces, promise by promise (empty for other backends:
    /// `cli-sandbox doctor` says what they close).
    pub guarantees: Vec<sandbox_core::Guarantee>,
    pub clis: Vec<String>,
    pub rows: Vec<Row>,
    pub real_clis: Vec<RealCli>,
    /// Launches that could not be computed, and why.
    pub errors: Vec<String>,
    pub passed: usize,
    pub failed: usize,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

/// Builds the layout under `options.root`, runs everything, and reports; `progress` hears of
/// each launch and verdict as it happens.
pub fn run(
    options: &Options,
    facts: &Facts,
    progress: &dyn Fn(Event<'_>),
) -> Result<Report, Error> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |e| Error::Io { what, source: e }
    };
    let demo = Demo::create(&options.root).map_err(io("the demo layout"))?;
    let mut settings = demo.settings();
    settings.helper = Some(options.helper.clone());
    let ctx = Context::load(&settings)?;
    let outside = Outside::start(&demo).map_err(io("the processes outside"))?;
    let grants = vec![GrantRequest::parse(&demo.grant_arg())?];
    let policy = ctx.policy(&demo.chat, &grants)?;
    let decision =
        sandbox_core::platform::decide(facts, Mode::Full, &[Mode::Full, Mode::BridgeOnly]);
    let mut launch_grants = grants.clone();
    if let Some(extra) = &options.broken_grant {
        launch_grants.push(GrantRequest {
            path: extra.clone(),
            access: sandbox_core::Access::ReadWrite,
        });
    }

    let (guarantees, frozen) = match decision.backend {
        Backend::Landlock { abi, namespaces } => {
            let kernel = sandbox_linux::plan::Kernel {
                landlock_abi: abi,
                namespaces,
                fuse: sandbox_linux::fuse_available(),
            };
            let plan = sandbox_linux::compile(&policy, kernel)?;
            (plan.guarantees, plan.frozen)
        }
        _ => (Vec::new(), Vec::new()),
    };
    // The verdicts the plan promises: in the Landlock-only plan, no file is created directly in
    // a frozen folder (its guarantees say so).
    let write_harness = |token: &str| -> std::io::Result<Harness> {
        let mut harness = Harness::write(&demo, &policy, &outside, token)?;
        for action in &mut harness.actions {
            action.follow_the_frozen_plan(&frozen);
        }
        Ok(harness)
    };
    let mut report = Report {
        layout: demo.root.clone(),
        backend: decision.backend,
        reason: decision.reason.clone(),
        guarantees,
        clis: options.clis.clone(),
        rows: Vec::new(),
        real_clis: Vec::new(),
        errors: Vec::new(),
        passed: 0,
        failed: 0,
    };

    // The scripted step: `cli-sandbox step` on the same workflow.
    let mut step_outcomes: Option<Vec<Outcome>> = None;
    if matches!(decision.backend, Backend::Landlock { .. }) {
        progress(Event::Launch {
            cli: "step",
            shape: "-",
        });
        let harness = write_harness("step").map_err(io("the scripted step's harness"))?;
        let mut cmd = Command::new(&options.cli_sandbox);
        cmd.arg("--config")
            .arg(&demo.config)
            .arg("--state-root")
            .arg(&demo.state_root)
            .arg("--workspace-docs")
            .arg(&demo.workspace_docs)
            .args(["step", "--chat", &demo.chat]);
        for g in &launch_grants {
            cmd.arg("--grant")
                .arg(format!("{}:{}", g.path.display(), g.access.as_str()));
        }
        cmd.arg("--").arg("/bin/sh").arg(&harness.script);
        cmd.env("HOME", &demo.home).stdin(Stdio::null());
        for var in crate::CLEARED_ENV {
            cmd.env_remove(var);
        }
        let ran = run_to_end(
            cmd,
            Duration::from_secs(120),
            &demo.root.join("stderr-step"),
        )
        .map_err(io("the scripted step"))?;
        if let Some(never) = ran.never_started() {
            report.errors.push(format!("the scripted step {never}"));
            report.failed += 1;
            progress(Event::Error { cli: "step" });
        }
        let outcomes = read_verdicts(&harness.actions, &outside);
        push_rows(&mut report, "step", "-", &outcomes, progress);
        progress(Event::Done { cli: "step" });
        step_outcomes = Some(outcomes);
    }

    let tmux = RunnerTmux::start(&demo);
    for cli in &options.clis {
        let Some(adapter) = registry::find(cli) else {
            return Err(Error::UnknownCli {
                name: cli.clone(),
                known: registry::names().join(", "),
            });
        };
        for shape in [Shape::Tmux, Shape::Structured] {
            let shape_name = match shape {
                Shape::Tmux => "tmux",
                Shape::Structured => "structured",
            };
            progress(Event::Launch {
                cli,
                shape: shape_name,
            });
            if decision.backend == Backend::None {
                // Nothing confines here: Full CLI refused with the reason, bridge-only launched
                // unwrapped where the CLI has it. Never started: there is nothing to attack.
                let row = unconfined_row(&ctx, &demo, cli, adapter, &launch_grants, shape, facts);
                count(&mut report, &row);
                progress(Event::Verdict {
                    cli,
                    shape: shape_name,
                    action: &row.action,
                    passed: row.passed,
                });
                report.rows.push(row);
                continue;
            }
            // Written before the launch is computed: the Landlock-only plan freezes the folders
            // above the protected roots, and an entry made there after the plan stays closed.
            let token = format!("{}-{shape_name}", adapter.name());
            let harness = write_harness(&token).map_err(io("a harness"))?;
            let spec = LaunchSpec {
                cli: cli.clone(),
                chat: demo.chat.clone(),
                grants: launch_grants.clone(),
                shape,
                mode: Mode::Full,
                mcp_bridge: None,
                prompt: None,
                model: None,
                extra_args: Vec::new(),
                denials: None,
                // The harness stands in for the CLI: its launch, with the script in its place.
                program: Some(Program {
                    path: "/bin/sh".into(),
                    args: vec![harness.script.clone().into_os_string()],
                }),
            };
            let launch = match PreparedLaunch::prepare(&ctx, &spec, facts) {
                Ok(launch) => launch,
                Err(e) => {
                    report.errors.push(format!("{cli} ({shape_name}): {e}"));
                    report.failed += 1;
                    progress(Event::Error { cli });
                    continue;
                }
            };
            if let Err(e) = launch.pre_trust() {
                report
                    .errors
                    .push(format!("{cli} ({shape_name}) pre-trust: {e}"));
                report.failed += 1;
                progress(Event::Error { cli });
                continue;
            }
            let stderr = demo.root.join(format!("stderr-{token}"));
            let ran = match (shape, &tmux) {
                (Shape::Tmux, Some(tmux)) => tmux.run(&launch, &demo.home, &token, &stderr),
                _ => launch
                    .std_command()
                    .map_err(std::io::Error::other)
                    .and_then(|mut cmd| {
                        in_demo_home(&mut cmd, &demo);
                        cmd.stdin(Stdio::null());
                        run_to_end(cmd, Duration::from_secs(120), &stderr)
                    }),
            };
            let never = match ran {
                Ok(ran) => ran.never_started(),
                Err(e) => Some(format!("did not run: {e}")),
            };
            if let Some(never) = never {
                report
                    .errors
                    .push(format!("{cli} ({shape_name}): the launch {never}"));
                report.failed += 1;
                progress(Event::Error { cli });
                continue;
            }
            let outcomes = read_verdicts(&harness.actions, &outside);
            push_rows(&mut report, cli, shape_name, &outcomes, progress);
            if let Some(step) = &step_outcomes {
                for (agent, scripted) in outcomes.iter().zip(step) {
                    let row = Row {
                        cli: cli.clone(),
                        shape: shape_name.into(),
                        action: format!("{}=step", agent.id),
                        what: format!("{} (agent step as scripted step)", agent.what),
                        rule: "the same verdict for an agent step and a scripted step".into(),
                        expected: scripted.actual,
                        actual: agent.actual,
                        passed: scripted.actual == agent.actual,
                    };
                    count(&mut report, &row);
                    progress(Event::Verdict {
                        cli,
                        shape: shape_name,
                        action: &row.action,
                        passed: row.passed,
                    });
                    report.rows.push(row);
                }
            }
        }
        match real_cli(&ctx, &demo, cli, &launch_grants, facts)? {
            Some(real) => {
                if real.passed {
                    report.passed += 1;
                } else {
                    report.failed += 1;
                }
                progress(Event::RealCli {
                    cli,
                    passed: Some(real.passed),
                    unconfined: false,
                });
                report.real_clis.push(real);
            }
            None => progress(Event::RealCli {
                cli,
                passed: None,
                unconfined: decision.backend == Backend::None,
            }),
        }
        progress(Event::Done { cli });
    }
    drop(tmux);
    Ok(report)
}

/// The demo's home as `HOME`: the launch itself inherits the caller's, which for the contract
/// is the person running it, not the demo's.
fn in_demo_home(cmd: &mut Command, demo: &Demo) {
    cmd.env("HOME", &demo.home);
}

fn count(report: &mut Report, row: &Row) {
    if row.passed {
        report.passed += 1;
    } else {
        report.failed += 1;
    }
}

fn push_rows(
    report: &mut Report,
    cli: &str,
    shape: &str,
    outcomes: &[Outcome],
    progress: &dyn Fn(Event<'_>),
) {
    for o in outcomes {
        progress(Event::Verdict {
            cli,
            shape,
            action: &o.id,
            passed: o.passed(),
        });
        let row = Row {
            cli: cli.to_owned(),
            shape: shape.to_owned(),
            action: o.id.clone(),
            what: o.what.clone(),
            rule: o.rule.clone(),
            expected: o.expected,
            actual: o.actual,
            passed: o.passed(),
        };
        count(report, &row);
        report.rows.push(row);
    }
}

/// Runs a command to its end, killing it after `limit`.
fn run_to_end(mut cmd: Command, limit: Duration, stderr: &Path) -> std::io::Result<Ran> {
    let err = std::fs::File::create(stderr)?;
    let mut child = cmd.stdout(Stdio::null()).stderr(err).spawn()?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ran {
                status: status.code(),
                stderr: stderr.to_owned(),
            });
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("timed out"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How a launch ended: its status (`None`: by a signal) and where its stderr went.
struct Ran {
    status: Option<i32>,
    stderr: PathBuf,
}

/// The status with which the launcher and its helper say that nothing was started.
const NOT_STARTED: i32 = 125;

impl Ran {
    /// A launch that never started (the helper's status 125): said as such, with the helper's
    /// own words, instead of a table of refusals that were never attempted.
    fn never_started(&self) -> Option<String> {
        if self.status != Some(NOT_STARTED) {
            return None;
        }
        let words = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let words = words.trim();
        Some(format!(
            "never started: status {NOT_STARTED}: {}",
            if words.is_empty() {
                "(nothing on stderr)"
            } else {
                words
            }
        ))
    }
}

/// The row of a CLI where nothing confines: Full CLI must be refused with the reason
/// (`Error::CannotConfine`, "cannot run here, because ..."), and a CLI that has bridge-only is
/// launched bridge-only, unwrapped.
fn unconfined_row(
    ctx: &Context,
    demo: &Demo,
    cli: &str,
    adapter: &dyn sandbox_core::CliAdapter,
    grants: &[GrantRequest],
    shape: Shape,
    facts: &Facts,
) -> Row {
    let shape_name = match shape {
        Shape::Tmux => "tmux",
        Shape::Structured => "structured",
    };
    let spec = |mode| LaunchSpec {
        cli: cli.to_owned(),
        chat: demo.chat.clone(),
        grants: grants.to_vec(),
        shape,
        mode,
        mcp_bridge: None,
        prompt: None,
        model: None,
        extra_args: Vec::new(),
        denials: None,
        program: None,
    };
    let full = PreparedLaunch::prepare(ctx, &spec(Mode::Full), facts);
    let has_bridge_only = adapter.modes().contains(&Mode::BridgeOnly);
    let has_full = adapter.modes().contains(&Mode::Full);
    let full_refused = match &full {
        Err(Error::CannotConfine(_)) => true,
        // A CLI that has bridge-only alone runs it, asked Full or not.
        Ok(launch) => !has_full && launch.decision().mode == Mode::BridgeOnly,
        Err(_) => false,
    };
    if has_bridge_only && shape == Shape::Tmux {
        // A pane is a shell for whoever types into it: refused where nothing confines.
        let bridge = PreparedLaunch::prepare(ctx, &spec(Mode::BridgeOnly), facts);
        let (refused, rule) = match &bridge {
            Err(e @ Error::Adapter(sandbox_core::AdapterError::UnconfinedPane { .. })) => {
                (true, format!("cannot run here, because {e}"))
            }
            Err(e) => (false, e.to_string()),
            Ok(_) => (
                false,
                "a pane launched although nothing confines".to_owned(),
            ),
        };
        let passed = refused && (full_refused || !has_full);
        return Row {
            cli: cli.to_owned(),
            shape: shape_name.into(),
            action: "cannot-run-here".into(),
            what: "no confinement here: no pane (a `!` line typed there would run a shell)".into(),
            rule,
            expected: Verdict::Refused,
            actual: if passed {
                Verdict::Refused
            } else {
                Verdict::Allowed
            },
            passed,
        };
    }
    if has_bridge_only {
        let bridge = PreparedLaunch::prepare(ctx, &spec(Mode::BridgeOnly), facts);
        let (passed, rule) = match &bridge {
            Ok(launch) => (
                full_refused
                    && launch.decision().mode == Mode::BridgeOnly
                    && launch.decision().backend == Backend::None,
                launch.decision().reason.clone(),
            ),
            Err(e) => (false, e.to_string()),
        };
        Row {
            cli: cli.to_owned(),
            shape: shape_name.into(),
            action: "launched-bridge-only".into(),
            what: "no confinement here: Full CLI refused, launched bridge-only when asked".into(),
            rule,
            expected: Verdict::Allowed,
            actual: if passed {
                Verdict::Allowed
            } else {
                Verdict::Refused
            },
            passed,
        }
    } else {
        let rule = match &full {
            Err(e) => format!("cannot run here, because {e}"),
            Ok(_) => "launched although nothing confines".to_owned(),
        };
        Row {
            cli: cli.to_owned(),
            shape: shape_name.into(),
            action: "cannot-run-here".into(),
            what: "no confinement here and no bridge-only mode: the launch is refused".into(),
            rule,
            expected: Verdict::Refused,
            actual: if full_refused {
                Verdict::Refused
            } else {
                Verdict::Allowed
            },
            passed: full_refused,
        }
    }
}

/// A tmux server of the runner's own, whose panes run the tmux-shape launches.
struct RunnerTmux {
    socket: PathBuf,
}

impl RunnerTmux {
    fn start(demo: &Demo) -> Option<RunnerTmux> {
        let socket = demo.root.join("runner-tmux.sock");
        let ok = crate::tmux_server(&socket)
            .args(["new-session", "-d", "-s", "runner", "sleep 3600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(RunnerTmux { socket })
    }

    /// Runs the launch in a new pane (through `env`, so that variables are set and removed as
    /// the launch says) and waits for the pane to close.
    fn run(
        &self,
        launch: &PreparedLaunch,
        home: &Path,
        name: &str,
        stderr: &Path,
    ) -> std::io::Result<Ran> {
        // The pane's shell keeps the launch's status and stderr for the runner (a launch that
        // never started says why there, in words the pane would lose).
        let status_file = stderr.with_extension("status");
        let _ = std::fs::remove_file(&status_file);
        let mut command: Vec<OsString> = vec![
            "/bin/sh".into(),
            "-c".into(),
            "err=$1; st=$2; shift 2; \"$@\" 2>\"$err\"; echo $? > \"$st\"".into(),
            "sh".into(),
            stderr.as_os_str().to_owned(),
            status_file.as_os_str().to_owned(),
            "/usr/bin/env".into(),
        ];
        for var in &launch.env().remove {
            command.push("-u".into());
            command.push(var.into());
        }
        for (k, v) in &launch.env().set {
            command.push(format!("{k}={v}").into());
        }
        // The demo's home (the launch inherits the caller's, the person running the contract).
        command.push(format!("HOME={}", home.display()).into());
        command.extend(launch.argv().iter().cloned());
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["new-window", "-d", "-n", name, "-c"])
            .arg(launch.cwd())
            .arg("--")
            .args(&command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(std::io::Error::other("tmux new-window failed"));
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let windows = Command::new("tmux")
                .arg("-S")
                .arg(&self.socket)
                .args(["list-windows", "-F", "#{window_name}"])
                .output()?;
            if !String::from_utf8_lossy(&windows.stdout)
                .lines()
                .any(|w| w == name)
            {
                let status = std::fs::read_to_string(&status_file)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                return Ok(Ran {
                    status,
                    stderr: stderr.to_owned(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(std::io::Error::other("the pane did not finish in time"))
    }
}

impl Drop for RunnerTmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}

/// Starts the real CLI, where installed, inside the sandbox with `--version`, through a shell
/// that records the kernel's view of itself and then execs the CLI (the CLI inherits exactly
/// that confinement).
fn real_cli(
    ctx: &Context,
    demo: &Demo,
    cli: &str,
    grants: &[GrantRequest],
    facts: &Facts,
) -> Result<Option<RealCli>, Error> {
    let Some(adapter) = registry::find(cli) else {
        return Ok(None);
    };
    let (program, found) = launch::wrap::find_program(ctx, adapter);
    if !found {
        return Ok(None);
    }
    let spec = LaunchSpec {
        cli: cli.to_owned(),
        chat: demo.chat.clone(),
        grants: grants.to_vec(),
        shape: Shape::Structured,
        mode: Mode::Full,
        mcp_bridge: None,
        prompt: None,
        model: None,
        extra_args: Vec::new(),
        denials: None,
        program: None,
    };
    // Where nothing confines there is no confined start to prove (the rows say why).
    if sandbox_core::platform::decide(facts, Mode::Full, adapter.modes()).backend == Backend::None {
        return Ok(None);
    }
    let dir = demo.runtime.join(format!("real-{cli}"));
    let q = |p: &Path| shell_words::quote(&p.display().to_string()).into_owned();
    let token_file = demo.state_root.join("config.json");
    let script = format!(
        "cat /proc/self/status > {s}; readlink /proc/self/ns/mnt > {m}; cat {t} > {l} 2>/dev/null; exec \"$0\" --version > {v} 2>&1",
        s = q(&dir.join("status")),
        m = q(&dir.join("mnt")),
        t = q(&token_file),
        l = q(&dir.join("leak")),
        v = q(&dir.join("version")),
    );
    // The script stands in for the CLI (its launch, the CLI's program as `$0`).
    let spec = spec.stand_in(
        "/bin/sh",
        ["-c".into(), script.into(), program.clone().into_os_string()],
    );
    let launch = PreparedLaunch::prepare(ctx, &spec, facts)?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
        what: format!("folder `{}`", dir.display()),
        source: e,
    })?;
    let mut cmd = launch.std_command()?;
    in_demo_home(&mut cmd, demo);
    // The CLI's own temporary files (Claude's among them) in the demo layout, which goes away
    // with it, not in the machine's /tmp.
    let tmp = demo.root.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|e| Error::Io {
        what: format!("folder `{}`", tmp.display()),
        source: e,
    })?;
    cmd.env("TMPDIR", &tmp).stdin(Stdio::null());
    let ran = run_to_end(
        cmd,
        Duration::from_secs(120),
        &demo.root.join(format!("stderr-real-{cli}")),
    );
    let never = match &ran {
        Ok(ran) => ran.never_started(),
        Err(e) => Some(format!("did not run: {e}")),
    };

    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let version = read("version").trim().to_owned();
    let status = read("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
            .unwrap_or_default()
    };
    let (no_new_privs, seccomp) = (field("NoNewPrivs:"), field("Seccomp:"));
    let outside_mnt = std::fs::read_link("/proc/self/ns/mnt")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let inside_mnt = read("mnt").trim().to_owned();
    // The same process that became the CLI could not read the server token...
    let token_closed = !read("leak").contains(demo.secret(&token_file));
    // ...and, on Linux, the kernel says it is confined.
    let kernel_says = match launch.decision().backend {
        // The Landlock-only plan has no mount namespace of its own.
        Backend::Landlock { namespaces, .. } => {
            no_new_privs == "1"
                && seccomp == "2"
                && (!namespaces || (!inside_mnt.is_empty() && inside_mnt != outside_mnt))
        }
        _ => true,
    };
    let confined = token_closed && kernel_says;
    Ok(Some(RealCli {
        cli: cli.to_owned(),
        program,
        passed: confined && !version.is_empty(),
        evidence: match never {
            Some(never) => format!("the launch {never}"),
            None => format!(
                "config.json {}, NoNewPrivs {no_new_privs}, Seccomp {seccomp}, mount namespace {inside_mnt} (outside {outside_mnt})",
                if token_closed { "refused" } else { "READ" }
            ),
        },
        version,
        confined,
    }))
}
