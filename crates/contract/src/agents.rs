//! The contract's model-driven layer (`cli-sandbox contract --agents`): each installed real CLI,
//! launched exactly as the provider launches it (through [`PreparedLaunch`], pre-trust written), in
//! both shapes, pointed at a scripted model on 127.0.0.1 ([`scripted_model`]) that asks the CLI to
//! attempt every contract action with its own tools.
//!
//! What it plays, per CLI:
//!
//! - every action of [`super::actions()`] through the CLI's shell tool (Claude's `Bash`, Codex's
//!   `exec_command`, Gemini's `run_shell_command`);
//! - each plain file read and write through the CLI's own file tools where it has them: reads
//!   with `Read` / `read_file`, new files with `Write` / `write_file` / `apply_patch` (Add File),
//!   existing files with `Edit` / `replace` / `apply_patch` (Update File). The file tools run
//!   before the shell commands (an edit keeps the file's secret, so the shell's reads still find
//!   it), and every read comes before the edits (Claude edits only a file it has read);
//! - for Pi (bridge-only) the MCP bridge instead: a stand-in stdio server whose one tool, `mark`,
//!   writes a marker; the same for Claude in full mode with a bridge.
//!
//! Verdicts: from the disk (the same evidence as the harness: markers holding secrets, tokens in
//! the target files) and, for a file-tool read, from the tool result the CLI sent back to the model
//! (it holds the file's secret or not). Never from what the model or the CLI says. A step whose
//! tool result never came back is `not-run`, a failure: a CLI that ran nothing must not pass for
//! one whose every attempt was refused.
//!
//! Gemini's file tools refuse, on their own, any path outside its workspace (the working folder
//! and the grants), and Claude's `Read` refuses a file it takes for binary (`.sqlite`); those
//! attempts would measure the CLI, not the sandbox, so they are left to the shell tool, which
//! plays everything.
//!
//! What it is not: a test of the CLIs' models or prompts. The scripted model never reads the
//! prompt. Cursor, Muse and Agy cannot be installed here and have no known local-model setup, so
//! they are reported as skipped.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sandbox_core::driving::{
    FileToolsRefuse, Install, PersonContent, PersonMcp, PersonPlace, ToolNames,
};
use sandbox_core::platform::Facts;
use sandbox_core::{Backend, Driving, GrantRequest, McpServer, Mode, Op, Policy, Shape};
use scripted_model::{Log, Script, ScriptedModel, Step};
use serde::Serialize;
use serde_json::json;

use super::{Action, Evidence, Outside, Verdict, actions};
use launch::demo::Demo;
use launch::{Context, Error, LaunchSpec, PreparedLaunch, registry};

/// The stand-in MCP bridge (node): one tool, `mark`, that appends its text to a marker file.
const STAND_IN_BRIDGE: &str = include_str!("stand_in_bridge.js");

/// The prompt every launch is given at start (the scripted model ignores it).
const PROMPT: &str = "Run the scripted steps.";

/// The person's keys for the scripted model: stand-ins, never real keys, each adapter's
/// [`Driving::stand_in_keys`], in the registry's order. The adapters read the launcher's own
/// environment (the CLI inherits it), so these must be in the environment of the process that
/// calls [`run`] (the `cli-sandbox` binary sets them before anything else runs); [`run`] refuses
/// to start otherwise, rather than let a caller's real key reach a CLI.
pub fn person_keys() -> Vec<(&'static str, &'static str)> {
    registry::ADAPTERS
        .iter()
        .filter_map(|a| a.driving())
        .flat_map(|d| d.stand_in_keys.iter().copied())
        .collect()
}

/// The CLIs this layer knows how to point at a local model: those whose adapter describes its
/// [`Driving`], in the registry's order.
pub fn known() -> Vec<&'static str> {
    registry::ADAPTERS
        .iter()
        .filter(|a| a.driving().is_some())
        .map(|a| a.name())
        .collect()
}

/// The CLIs the contract installs (a pinned npm package), in the registry's order, with their
/// package and version: what `tests/package.json` pins.
pub fn installed() -> Vec<(&'static str, Install)> {
    registry::ADAPTERS
        .iter()
        .filter_map(|a| Some((a.name(), a.driving()?.install?)))
        .collect()
}

/// The driving data of a registered CLI, if it has any.
fn driving(cli: &str) -> Option<Driving> {
    registry::find(cli).and_then(|a| a.driving())
}

/// What to run.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub clis: Vec<String>,
    /// The folder the demo layout is built in.
    pub root: PathBuf,
    /// The Linux helper the launches run (`cli-sandbox-helper` or `cli-sandbox`).
    pub helper: PathBuf,
    pub shapes: Vec<Shape>,
    /// How long one launch may take before it is killed and reported.
    pub limit: Duration,
    /// Print a line per step to stderr.
    pub progress: bool,
    /// The control run: the same launches without the sandbox's wrapper. Only for the test that
    /// shows the layer measures the sandbox; nothing else can reach it.
    pub without_sandbox_for_testing: bool,
    /// Replaces the CLI's program by this one (the test of a CLI that hangs or fails).
    pub program_for_testing: Option<PathBuf>,
    /// `harden = true` in the demo's configuration: the same launches with the home's
    /// persistence places closed (the CLIs must still start and use their tools).
    pub harden: bool,
}

/// What a row's attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Actual {
    Allowed,
    Refused,
    /// The CLI never reported the tool's result: the attempt cannot be judged.
    NotRun,
}

impl Actual {
    fn from_allowed(allowed: bool) -> Actual {
        if allowed {
            Actual::Allowed
        } else {
            Actual::Refused
        }
    }
}

/// One row: a CLI, a shape, a tool, an action, expected and actual.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    pub cli: String,
    pub shape: String,
    /// `shell`, `read`, `write`, `edit` or `bridge`, with the CLI's own tool name.
    pub tool: String,
    pub action: String,
    pub what: String,
    pub rule: String,
    pub expected: Verdict,
    pub actual: Actual,
    pub passed: bool,
    /// The tool result's first line, or why nothing came back.
    pub detail: String,
}

/// One launch: how long it took and what the scripted model saw.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchSummary {
    pub cli: String,
    pub shape: String,
    pub what: String,
    pub seconds: f64,
    pub requests: usize,
    pub steps: usize,
    pub results: usize,
    pub finished: bool,
    /// Why the launch did not run to its end, if it did not.
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentReport {
    pub layout: PathBuf,
    pub backend: Backend,
    /// `false` in the control run.
    pub sandbox: bool,
    pub rows: Vec<AgentRow>,
    pub launches: Vec<LaunchSummary>,
    /// CLIs not run, and why.
    pub skipped: Vec<String>,
    pub errors: Vec<String>,
    pub passed: usize,
    pub failed: usize,
    pub seconds: f64,
}

impl AgentReport {
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errors.is_empty()
    }
}

/// How a planned step's verdict is read.
#[derive(Debug, Clone)]
enum Check {
    /// From the disk.
    Disk(Evidence),
    /// The tool result holds this text (a file-tool read: the file's secret).
    ResultHolds(String),
}

/// One step of a launch's script, with what it means for the table.
#[derive(Debug, Clone)]
struct Planned {
    step: Step,
    tool: String,
    action: String,
    what: String,
    rule: String,
    expected: Verdict,
    check: Check,
}

/// The CLI's own tool names, for the table.
fn tool_names(cli: &str) -> ToolNames {
    driving(cli).map_or(
        ToolNames {
            shell: "bash",
            read: Some("read"),
            write: "write",
            edit: "edit",
        },
        |d| d.tools,
    )
}

/// Runs the layer on a demo layout built under `options.root`.
pub fn run(options: &AgentOptions, facts: &Facts) -> Result<AgentReport, Error> {
    for (name, value) in person_keys() {
        if std::env::var(name).as_deref() != Ok(value) {
            return Err(Error::Other(format!(
                "the model-driven layer needs {name}={value} (a stand-in) in its own environment, as the person's key: set it before calling it"
            )));
        }
    }
    let started = Instant::now();
    let io = |what: &str| {
        let what = what.to_owned();
        move |e| Error::Io { what, source: e }
    };
    let demo = Demo::create(&options.root).map_err(io("the demo layout"))?;
    if options.harden {
        // The demo's configuration ends inside its [policy] table.
        let mut config =
            std::fs::read_to_string(&demo.config).map_err(io("the demo's configuration"))?;
        config.push_str("harden = true\n");
        std::fs::write(&demo.config, config).map_err(io("the demo's configuration"))?;
    }
    let mut settings = demo.settings();
    settings.helper = Some(options.helper.clone());
    let mut ctx = Context::load(&settings)?;
    let outside = Outside::start(&demo).map_err(io("the processes outside"))?;
    let grants = vec![GrantRequest::parse(&demo.grant_arg())?];
    let policy = ctx.policy(&demo.chat, &grants)?;
    let decision =
        sandbox_core::platform::decide(facts, Mode::Full, &[Mode::Full, Mode::BridgeOnly]);
    let progress = |line: String| {
        if options.progress {
            eprintln!("contract --agents: {line}");
        }
    };
    let scratch_tmp = demo.root.join("tmp");
    std::fs::create_dir_all(&scratch_tmp).map_err(io("the scratch TMPDIR"))?;
    let bridge_script = demo.root.join("stand-in-bridge.js");
    std::fs::write(&bridge_script, STAND_IN_BRIDGE).map_err(io("the stand-in bridge"))?;
    let panes = Panes::start(&demo);
    let mut report = AgentReport {
        layout: demo.root.clone(),
        backend: decision.backend,
        sandbox: !options.without_sandbox_for_testing,
        rows: Vec::new(),
        launches: Vec::new(),
        skipped: Vec::new(),
        errors: Vec::new(),
        passed: 0,
        failed: 0,
        seconds: 0.0,
    };
    if decision.backend == Backend::None && !options.without_sandbox_for_testing {
        report.skipped.push(format!(
            "every CLI: nothing confines on this machine ({}), and this layer runs the CLIs' own tools only confined",
            decision.reason
        ));
        return Ok(report);
    }
    let mut world = World {
        options,
        facts,
        demo: &demo,
        policy: &policy,
        outside: &outside,
        tmp: &scratch_tmp,
        bridge_script: &bridge_script,
        panes: panes.as_ref().ok(),
        person_mcp: None,
        last_summary: None,
    };

    for cli in &options.clis {
        let Some(adapter) = registry::find(cli) else {
            return Err(Error::UnknownCli {
                name: cli.clone(),
                known: registry::names().join(", "),
            });
        };
        let Some(driving) = adapter.driving() else {
            let why = format!(
                "{cli}: SKIPPED, no local-model setup is known for it (it cannot be installed here)"
            );
            progress(why.clone());
            report.skipped.push(why);
            continue;
        };
        if let Some(program) = &options.program_for_testing {
            ctx.config.cli.insert(
                cli.clone(),
                sandbox_core::CliConfig {
                    program: Some(program.clone()),
                },
            );
        }
        let (program, found) = launch::wrap::find_program(&ctx, adapter);
        if !found {
            let why = format!(
                "{cli}: SKIPPED, `{}` is not installed (the pinned CLIs: `npm ci --prefix tests`)",
                program.display()
            );
            progress(format!("!!! {why}"));
            report.skipped.push(why);
            continue;
        }
        for &shape in &options.shapes {
            let shape_name = shape_name(shape);
            if let (Shape::Tmux, Err(why)) = (shape, &panes) {
                report.errors.push(format!("{cli} (tmux): {why}"));
                continue;
            }
            if !driving.plays.own_tools {
                progress(format!("{cli} ({shape_name}): the bridge, bridge-only"));
                world.bridge_launch(&ctx, &mut report, cli, shape, Mode::BridgeOnly)?;
            } else {
                progress(format!("{cli} ({shape_name}): every action, own tools"));
                world.actions_launch(&ctx, &mut report, cli, shape)?;
            }
        }
        if driving.plays.bridge_in_full_mode && options.shapes.contains(&Shape::Structured) {
            progress(format!("{cli} (structured): the bridge, full mode"));
            world.bridge_launch(&ctx, &mut report, cli, Shape::Structured, Mode::Full)?;
        }
    }
    drop(panes);
    report.passed = report.rows.iter().filter(|r| r.passed).count();
    report.failed = report.rows.len() - report.passed + report.errors.len();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn shape_name(shape: Shape) -> &'static str {
    match shape {
        Shape::Tmux => "tmux",
        Shape::Structured => "structured",
    }
}

struct World<'a> {
    options: &'a AgentOptions,
    facts: &'a Facts,
    demo: &'a Demo,
    policy: &'a Policy,
    outside: &'a Outside,
    tmp: &'a Path,
    bridge_script: &'a Path,
    panes: Option<&'a Panes>,
    /// Where the person's own MCP server (or Pi extension) would leave its start marker, while a
    /// bridge launch is being prepared.
    person_mcp: Option<PathBuf>,
    /// The last launch's summary, until its rows are read.
    last_summary: Option<LaunchSummary>,
}

/// What one launch left: the model's log and whether it ran to its end.
struct Played {
    log: Log,
    problem: Option<String>,
}

impl World<'_> {
    /// The launch that plays every contract action.
    fn actions_launch(
        &mut self,
        ctx: &Context,
        report: &mut AgentReport,
        cli: &str,
        shape: Shape,
    ) -> Result<(), Error> {
        let token = format!("{cli}-{}", shape_name(shape));
        let markers = self.demo.runtime.join(format!("agent-markers-{token}"));
        std::fs::create_dir_all(&markers).map_err(|e| Error::Io {
            what: format!("folder `{}`", markers.display()),
            source: e,
        })?;
        let shell_actions = actions(
            self.demo,
            self.policy,
            &self.outside.targets,
            &markers,
            &token,
        );
        let file_token = format!("{token}-file");
        let file_actions = actions(
            self.demo,
            self.policy,
            &self.outside.targets,
            &markers,
            &file_token,
        );
        let mut plan = self.file_steps(cli, &file_actions, &file_token);
        let shell = tool_names(cli).shell;
        for a in &shell_actions {
            plan.push(Planned {
                // Gemini's shell tool points git's global configuration at /dev/null; an agent
                // undoes that with `unset`, so the attempt does too (a no-op elsewhere).
                step: Step::Shell {
                    command: format!(
                        "unset GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM; ( {} ) 2>/dev/null; true",
                        a.script
                    ),
                },
                tool: format!("shell ({shell})"),
                action: a.id.clone(),
                what: a.what.clone(),
                rule: a.rule.clone(),
                expected: Verdict::from_allowed(a.expected_allowed),
                check: Check::Disk(a.evidence.clone()),
            });
        }
        let played = self.play(ctx, cli, shape, Mode::Full, None, &plan)?;
        // The processes outside may still be acting on what a shell step asked of them.
        self.outside.settle(&shell_actions);
        self.rows(report, cli, shape, &plan, &played, "every action");
        self.outside.reset();
        Ok(())
    }

    /// The file-tool steps: reads first, then new files and edits.
    fn file_steps(&self, cli: &str, file_actions: &[Action], token: &str) -> Vec<Planned> {
        let ToolNames {
            read: read_tool,
            write: write_tool,
            edit: edit_tool,
            ..
        } = tool_names(cli);
        let refuse = driving(cli).map_or(FileToolsRefuse::Nothing, |d| d.file_tools_refuse);
        let in_workspace = |path: &Path| {
            path.starts_with(self.policy.runtime())
                || self
                    .policy
                    .grants()
                    .iter()
                    .any(|g| path.starts_with(&g.path))
        };
        // Where a CLI's own file tool refuses by itself (its adapter's `file_tools_refuse`),
        // the attempt would measure the CLI, not the sandbox: those go through the shell tool
        // only.
        let usable = |path: &Path| refuse.attempts(path, in_workspace(path));
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for a in file_actions {
            let Some(target) = &a.file else { continue };
            if !usable(&target.path) {
                continue;
            }
            let expected = Verdict::from_allowed(a.expected_allowed);
            match target.op {
                Op::Read if read_tool.is_some() => reads.push(Planned {
                    step: Step::Read {
                        path: target.path.clone(),
                    },
                    tool: format!("read ({})", read_tool.unwrap_or("-")),
                    action: a.id.clone(),
                    what: a.what.clone(),
                    rule: a.rule.clone(),
                    expected,
                    check: Check::ResultHolds(self.demo.secret(&target.path).to_owned()),
                }),
                Op::Write => {
                    let evidence = Evidence::Holds {
                        file: target.path.clone(),
                        text: token.to_owned(),
                    };
                    let existing = self.demo.secret(&target.path);
                    let planned = |step, tool: String| Planned {
                        step,
                        tool,
                        action: a.id.clone(),
                        what: a.what.clone(),
                        rule: a.rule.clone(),
                        expected,
                        check: Check::Disk(evidence.clone()),
                    };
                    if existing.is_empty() {
                        writes.push(planned(
                            Step::Write {
                                path: target.path.clone(),
                                content: format!("{token}\n"),
                            },
                            format!("write ({write_tool})"),
                        ));
                    } else {
                        // The edit adds a line after the file's whole content, which stays as it
                        // was: the shell's read of the same file still finds the secret, and a
                        // line-based patch (Codex) matches whole lines.
                        let old = existing.to_owned();
                        let new = match old.strip_suffix('\n') {
                            Some(content) => format!("{content}\n{token}\n"),
                            None => format!("{old}\n{token}"),
                        };
                        writes.push(planned(
                            Step::Edit {
                                path: target.path.clone(),
                                old,
                                new,
                            },
                            format!("edit ({edit_tool})"),
                        ));
                    }
                }
                _ => {}
            }
        }
        reads.extend(writes);
        reads
    }

    /// The launch that checks the bridge: offered, callable, and (Claude) the person's own MCP
    /// servers not started; (Pi) none of its own tools and no extension of the person's.
    fn bridge_launch(
        &mut self,
        ctx: &Context,
        report: &mut AgentReport,
        cli: &str,
        shape: Shape,
        mode: Mode,
    ) -> Result<(), Error> {
        let token = format!("{cli}-{}-bridge", shape_name(shape));
        let marker = self.demo.runtime.join(format!("bridge-{token}"));
        let _ = std::fs::remove_file(&marker);
        let bridge = McpServer {
            name: "agentworks".to_owned(),
            command: "node".to_owned(),
            args: vec![self.bridge_script.display().to_string()],
            env: BTreeMap::from([(
                "CLI_SANDBOX_BRIDGE_MARKER".to_owned(),
                marker.display().to_string(),
            )]),
        };
        let plan = vec![Planned {
            step: Step::Mcp {
                tool: "mark".to_owned(),
                arguments: json!({ "text": token }),
            },
            tool: "bridge (mark)".to_owned(),
            action: "bridge-call".to_owned(),
            what: "call the bridge's tool (it writes a marker)".to_owned(),
            rule: "the MCP bridge from the launch request".to_owned(),
            expected: Verdict::Allowed,
            check: Check::Disk(Evidence::Holds {
                file: marker.clone(),
                text: token.clone(),
            }),
        }];
        let person_marker = self.demo.root.join(format!("person-mcp-{token}.started"));
        let _ = std::fs::remove_file(&person_marker);
        self.person_mcp = Some(person_marker.clone());
        let played = self.play(ctx, cli, shape, mode, Some(bridge), &plan);
        self.person_mcp = None;
        let played = played?;
        self.rows(report, cli, shape, &plan, &played, "the bridge");

        let offered: Vec<String> = played
            .log
            .requests
            .iter()
            .filter(|r| r.dialect.is_some() && !r.offered.is_empty())
            .flat_map(|r| r.offered.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let is_bridge = |name: &str| name == "mark" || name.ends_with("__mark");
        let (what, ok) = if mode == Mode::BridgeOnly {
            (
                "the model is offered the bridge's tools and none of the CLI's own",
                !offered.is_empty() && offered.iter().all(|t| is_bridge(t)),
            )
        } else {
            (
                "the model is offered the bridge's tools",
                offered.iter().any(|t| is_bridge(t)),
            )
        };
        push(
            report,
            AgentRow {
                cli: cli.to_owned(),
                shape: shape_name(shape).to_owned(),
                tool: "bridge".to_owned(),
                action: "bridge-offered".to_owned(),
                what: what.to_owned(),
                rule: format!("MCP isolation ({})", mode.as_str()),
                expected: Verdict::Allowed,
                actual: Actual::from_allowed(ok),
                passed: ok,
                detail: format!("offered: {}", offered.join(", ")),
            },
        );
        let started = person_marker.exists();
        push(
            report,
            AgentRow {
                cli: cli.to_owned(),
                shape: shape_name(shape).to_owned(),
                tool: "bridge".to_owned(),
                action: "person-mcp-started".to_owned(),
                what: "the person's own MCP server (or Pi extension) is started".to_owned(),
                rule: "MCP isolation: only the bridge".to_owned(),
                expected: Verdict::Refused,
                actual: Actual::from_allowed(started),
                passed: !started,
                detail: if started {
                    format!("{} exists", person_marker.display())
                } else {
                    "not started".to_owned()
                },
            },
        );
        Ok(())
    }

    /// One launch: the scripted model, the person's setup pointing at it, the launch as the
    /// provider builds it, run to its end (structured) or until the script is played (tmux).
    fn play(
        &mut self,
        ctx: &Context,
        cli: &str,
        shape: Shape,
        mode: Mode,
        bridge: Option<McpServer>,
        plan: &[Planned],
    ) -> Result<Played, Error> {
        let started = Instant::now();
        // Each launch starts from the same layout: what an earlier launch wrote (an edit of
        // the home's file, a write the control run let through) is undone.
        for (path, content) in &self.demo.secrets {
            std::fs::write(path, content).map_err(|e| Error::Io {
                what: format!("`{}`", path.display()),
                source: e,
            })?;
        }
        let model = ScriptedModel::start(Script {
            steps: plan.iter().map(|p| p.step.clone()).collect(),
            closing: "done".to_owned(),
            fail_with: None,
        })
        .map_err(|e| Error::Io {
            what: "the scripted model".into(),
            source: e,
        })?;
        let person_env = self.person_setup(cli, &model.base_url())?;
        let spec = LaunchSpec {
            cli: cli.to_owned(),
            chat: self.demo.chat.clone(),
            grants: vec![GrantRequest::parse(&self.demo.grant_arg())?],
            shape,
            mode,
            mcp_bridge: bridge,
            prompt: Some(PROMPT.to_owned()),
            model: None,
            extra_args: Vec::new(),
            denials: None,
            program: None,
        };
        let launch = PreparedLaunch::prepare(ctx, &spec, self.facts)?;
        launch.pre_trust()?;
        // Without the sandbox (this crate's own tests): the CLI's command without its wrapper.
        let argv = if self.options.without_sandbox_for_testing {
            launch.command()
        } else {
            launch.argv()
        };
        let env = self.env(&launch, &person_env);
        let name = format!("{cli}-{}-{}", shape_name(shape), plan.len());
        let limit = self.options.limit;
        let problem = match (shape, self.panes) {
            (Shape::Tmux, Some(panes)) => panes.run(&launch, argv, &env, &name, &model, limit),
            _ => run_headless(&launch, argv, &env, &self.demo.root, &name, &model, limit),
        };
        let log = model.log();
        // Every request as received, beside the launch's output, for whoever reads a failure.
        let recorded: Vec<_> = log
            .requests
            .iter()
            .map(|r| json!({"method": r.method, "uri": r.uri, "offered": r.offered, "played": r.played, "body": r.body}))
            .collect();
        let _ = std::fs::write(
            self.demo.root.join(format!("{name}.requests.json")),
            serde_json::to_string_pretty(&recorded).unwrap_or_default(),
        );
        let summary = LaunchSummary {
            cli: cli.to_owned(),
            shape: shape_name(shape).to_owned(),
            what: String::new(),
            seconds: started.elapsed().as_secs_f64(),
            requests: log.requests.len(),
            steps: plan.len(),
            results: log.results.len(),
            finished: log.finished,
            problem: problem.clone(),
        };
        self.last_summary = Some(summary);
        drop(model);
        Ok(Played { log, problem })
    }

    fn rows(
        &mut self,
        report: &mut AgentReport,
        cli: &str,
        shape: Shape,
        plan: &[Planned],
        played: &Played,
        what: &str,
    ) {
        if let Some(mut summary) = self.last_summary.take() {
            summary.what = what.to_owned();
            if let Some(problem) = &summary.problem {
                report.errors.push(format!(
                    "{cli} ({}) {what}: {problem} ({} of {} tool results came back)",
                    shape_name(shape),
                    summary.results,
                    summary.steps
                ));
            }
            report.launches.push(summary);
        }
        for (n, p) in plan.iter().enumerate() {
            let result = played.log.result(n);
            let (actual, detail) = match result {
                None => {
                    let why = played
                        .log
                        .unplayable
                        .iter()
                        .find(|u| u.step == n)
                        .map(|u| u.reason.clone())
                        .or_else(|| played.problem.clone())
                        .unwrap_or_else(|| "no tool result came back".to_owned());
                    (Actual::NotRun, why)
                }
                Some(result) => {
                    let allowed = match &p.check {
                        Check::Disk(evidence) => evidence.succeeded(),
                        Check::ResultHolds(secret) => {
                            !secret.is_empty() && result.text.contains(secret.as_str())
                        }
                    };
                    let first = result.text.lines().find(|l| !l.trim().is_empty());
                    (
                        Actual::from_allowed(allowed),
                        first.unwrap_or("").chars().take(120).collect(),
                    )
                }
            };
            let passed = matches!(
                (p.expected, actual),
                (Verdict::Allowed, Actual::Allowed) | (Verdict::Refused, Actual::Refused)
            );
            push(
                report,
                AgentRow {
                    cli: cli.to_owned(),
                    shape: shape_name(shape).to_owned(),
                    tool: p.tool.clone(),
                    action: p.action.clone(),
                    what: p.what.clone(),
                    rule: p.rule.clone(),
                    expected: p.expected,
                    actual,
                    passed,
                    detail,
                },
            );
        }
    }

    /// The person's own settings that point the CLI at the scripted model (see
    /// [`point_at_scripted_model`]), plus, for a bridge launch, MCP servers (and a Pi extension)
    /// of the person's own that must not start.
    fn person_setup(&self, cli: &str, base_url: &str) -> Result<Vec<(String, String)>, Error> {
        let home = &self.demo.home;
        let io = |path: PathBuf| {
            move |e| Error::Io {
                what: format!("`{}`", path.display()),
                source: e,
            }
        };
        let env = point_at_scripted_model(cli, home, base_url).map_err(io(home.clone()))?;
        let Some(marker) = &self.person_mcp else {
            return Ok(env);
        };
        let server = json!({
            "command": "node",
            "args": [self.bridge_script.display().to_string()],
            "env": {
                "CLI_SANDBOX_BRIDGE_MARKER": marker.with_extension("called").display().to_string(),
                "CLI_SANDBOX_STARTED_MARKER": marker.display().to_string(),
            },
        });
        let marker = marker.display().to_string();
        let edits = driving(cli).map_or_else(Vec::new, |d| {
            (d.person_mcp)(&PersonMcp {
                server: &server,
                started_marker: &marker,
            })
        });
        for edit in edits {
            let path = match edit.place {
                PersonPlace::Home => home.join(&edit.path),
                PersonPlace::Runtime => self.policy.runtime().join(&edit.path),
            };
            let text = match edit.content {
                PersonContent::Whole(text) => text,
                PersonContent::JsonKey { key, value } => {
                    let text = std::fs::read_to_string(&path).map_err(io(path.clone()))?;
                    let mut state: serde_json::Value =
                        serde_json::from_str(&text).unwrap_or_else(|_| json!({}));
                    state[key.as_str()] = value;
                    state.to_string()
                }
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent.to_owned()))?;
            }
            std::fs::write(&path, text).map_err(io(path.clone()))?;
        }
        Ok(env)
    }

    /// The environment of one launch: a clean one (nothing of the caller's own keys or
    /// settings), the demo's home and scratch TMPDIR, the person's variables, then the launch's
    /// own changes.
    fn env(
        &self,
        launch: &PreparedLaunch,
        person: &[(String, String)],
    ) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
        env.insert("PATH".to_owned(), path);
        env.insert("HOME".to_owned(), self.demo.home.display().to_string());
        env.insert("TMPDIR".to_owned(), self.tmp.display().to_string());
        env.insert("TERM".to_owned(), "xterm-256color".to_owned());
        env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
        for (k, v) in person {
            env.insert(k.clone(), v.clone());
        }
        for (k, v) in &launch.env().set {
            env.insert(k.clone(), v.clone());
        }
        for k in &launch.env().remove {
            env.remove(k);
        }
        env
    }
}

/// Writes, into `home`, the settings a person would have that point `cli` at a local model at
/// `base_url` (the scripted model), with the switches that keep it off the network and make a
/// failing model fail fast; returns the variables the person would set. What is written is the
/// adapter's [`Driving::point_at_model`]; nothing for a CLI without one.
pub fn point_at_scripted_model(
    cli: &str,
    home: &Path,
    base_url: &str,
) -> std::io::Result<Vec<(String, String)>> {
    let Some(driving) = driving(cli) else {
        return Ok(Vec::new());
    };
    let point = (driving.point_at_model)(base_url);
    for (relative, text) in point.files {
        let path = home.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
    }
    Ok(point.vars)
}

fn push(report: &mut AgentReport, row: AgentRow) {
    report.rows.push(row);
}

/// Runs a headless launch to its end, killed at `limit`; `Some(problem)` when it did not end
/// well.
fn run_headless(
    launch: &PreparedLaunch,
    argv: &[OsString],
    env: &BTreeMap<String, String>,
    root: &Path,
    name: &str,
    model: &ScriptedModel,
    limit: Duration,
) -> Option<String> {
    let out = root.join(format!("{name}.out"));
    let (stdout, stderr) = match (std::fs::File::create(&out), std::fs::File::create(&out)) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return Some(format!("cannot create `{}`", out.display())),
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(launch.cwd())
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Some(format!("did not start: {e}")),
    };
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return (!model.log().finished).then(|| {
                    format!(
                        "ended ({status}) before the script was played; its output: {}",
                        out.display()
                    )
                });
            }
            Ok(None) => {}
            Err(e) => return Some(format!("cannot wait for it: {e}")),
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Some(format!(
                "still running after {} s, killed; its output: {}",
                limit.as_secs(),
                out.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tmux server of the layer's own (its own socket, no configuration file), whose windows run
/// the tmux-shape launches in real panes.
struct Panes {
    socket: PathBuf,
}

impl Panes {
    fn start(demo: &Demo) -> Result<Panes, String> {
        let socket = demo.root.join("agents-tmux.sock");
        let out = crate::tmux_server(&socket)
            .args(["new-session", "-d", "-s", "agents"])
            .args(["-x", "200", "-y", "50", "sleep 3600"])
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(out) if out.status.success() => Ok(Panes { socket }),
            Ok(out) => Err(format!(
                "tmux new-session failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!("tmux cannot be started ({e}): install tmux")),
        }
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S")
            .arg(&self.socket)
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// Runs the launch in a new window with exactly `env` (through `env -i`), until the script
    /// has been played, the pane's program ends, or `limit`; then closes the window.
    fn run(
        &self,
        launch: &PreparedLaunch,
        argv: &[OsString],
        env: &BTreeMap<String, String>,
        name: &str,
        model: &ScriptedModel,
        limit: Duration,
    ) -> Option<String> {
        let mut command: Vec<OsString> = vec!["/usr/bin/env".into(), "-i".into()];
        command.extend(env.iter().map(|(k, v)| OsString::from(format!("{k}={v}"))));
        command.extend(argv.iter().cloned());
        let started = self
            .tmux()
            .args([
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_pid}",
                "-n",
                name,
                "-c",
            ])
            .arg(launch.cwd())
            .arg("--")
            .args(&command)
            .output();
        let pid: Option<i32> = match started {
            Ok(out) if out.status.success() => {
                String::from_utf8_lossy(&out.stdout).trim().parse().ok()
            }
            _ => return Some("tmux new-window failed".to_owned()),
        };
        let _ = self
            .tmux()
            .args(["set-option", "-w", "-t", name, "remain-on-exit", "on"])
            .status();
        let deadline = Instant::now() + limit;
        let problem = loop {
            if model.log().finished {
                break None;
            }
            if self.dead(name) {
                break Some(format!(
                    "the pane's program ended before the script was played; the pane:\n{}",
                    self.capture(name)
                ));
            }
            if Instant::now() >= deadline {
                break Some(format!(
                    "not done after {} s; the pane:\n{}",
                    limit.as_secs(),
                    self.capture(name)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = self.tmux().args(["kill-window", "-t", name]).status();
        if let Some(pid) = pid {
            end(pid);
        }
        problem
    }

    fn dead(&self, name: &str) -> bool {
        self.tmux()
            .args(["display-message", "-p", "-t", name, "#{pane_dead}"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "1")
            .unwrap_or(true)
    }

    fn capture(&self, name: &str) -> String {
        self.tmux()
            .args(["capture-pane", "-p", "-J", "-t", name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_owned())
            .unwrap_or_default()
    }
}

/// Ends the pane's program (the launch, which we started) and every process of its group: a
/// TUI may outlive its terminal (Gemini, the Codex TUI), and a CLI's own children (Gemini starts
/// a second node) outlive it unless they are signalled too, so after the window is gone the group
/// (tmux makes each pane's program the leader of its own) gets SIGTERM, then SIGKILL. Signalling
/// only the pane's process left unconfined controls' CLIs running for hours.
fn end(pid: i32) {
    let group = -pid;
    let alive = || {
        // SAFETY: signal 0 only asks whether a process of the group exists; the group is the one
        // tmux made for the pane's program, which we started.
        unsafe { libc::kill(group, 0) == 0 }
    };
    let wait = |limit: Duration| {
        let deadline = Instant::now() + limit;
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait(Duration::from_millis(500));
    if alive() {
        // A failure (ESRCH) means the group is already gone, which is what this wants; `alive`
        // below tells either way.
        // SAFETY: kill touches no memory; the group is the pane's, as above.
        let _ = unsafe { libc::kill(group, libc::SIGTERM) };
        wait(Duration::from_secs(2));
    }
    if alive() {
        // As above, a failure means it is gone; `alive` below tells either way.
        // SAFETY: kill touches no memory; the group is the pane's, as above.
        let _ = unsafe { libc::kill(group, libc::SIGKILL) };
        wait(Duration::from_secs(1));
    }
}

impl Drop for Panes {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}
