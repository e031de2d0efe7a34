//! `cli-sandbox contract`: the sandbox contract on a demo layout it builds itself.
//!
//! What this file decides is how the report reads: a header in words (the machine, the backend,
//! what its plan enforces), one row per action with a column per CLI and shape that fits in 100
//! columns, the failures spelled out under it, and a summary that says what the counts are made
//! of. Progress goes to stderr as one line per CLI (updated in place on a terminal, plain lines
//! otherwise).

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use contract::run::{Event, Options, Report};
use contract::{CLEARED_ENV, Verdict};
use launch::{Error, registry};
use sandbox_core::{Enforcement, Guarantee};

use crate::launch_cmds::backend_words;

/// The width the report is laid out for.
const WIDTH: usize = 100;

#[derive(Debug, Args)]
pub struct ContractArgs {
    /// Only these CLIs: repeat the flag or give a comma list (default: every registered CLI,
    /// the seven).
    #[arg(long = "cli", value_name = "NAME[,NAME...]", value_delimiter = ',')]
    clis: Vec<String>,
    /// Print the report as JSON (docs/json.md), and no progress.
    #[arg(long)]
    json: bool,
    /// Keep the demo layout and print its path.
    #[arg(long)]
    keep: bool,
    /// Add this grant to every launch but not to the expectations: a deliberately broken plan
    /// (for the test that proves the contract notices).
    #[arg(long, hide = true, value_name = "PATH")]
    broken_grant_for_testing: Option<PathBuf>,
    /// The model-driven layer instead: each installed real CLI, launched as the provider
    /// launches it in both shapes, plays every action with its own tools against a scripted
    /// model on 127.0.0.1 (default: every registered CLI; those not installed are skipped).
    #[arg(long)]
    agents: bool,
    /// With --agents: only this shape (default: both).
    #[arg(long, value_name = "SHAPE", requires = "agents", value_parser = ["tmux", "structured"])]
    shape: Option<String>,
    /// With --agents: how long one launch may take, in seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        requires = "agents"
    )]
    launch_timeout: u64,
    /// The control run of --agents: the same launches with the sandbox's wrapper left out, to
    /// show that the layer measures the sandbox (its refused actions must then succeed).
    #[arg(long, hide = true, requires = "agents")]
    agents_without_sandbox_for_testing: bool,
    /// With --agents: this program in place of each CLI's own (a CLI that hangs or fails).
    #[arg(long, hide = true, value_name = "PATH", requires = "agents")]
    agents_program_for_testing: Option<PathBuf>,
    /// With --agents: `harden = true` in the demo's configuration (the CLIs must still start
    /// and use their tools with the home's persistence places closed).
    #[arg(long, requires = "agents")]
    harden: bool,
}

/// `--state-root DIR` here is the folder the demo layout is built in (it must exist); without
/// it, a temporary folder that is removed at the end unless `--keep`.
pub fn run(state_root: Option<PathBuf>, args: &ContractArgs) -> Result<ExitCode, Error> {
    for var in CLEARED_ENV {
        // SAFETY: the binary is single-threaded here; nothing else reads the environment yet.
        unsafe { std::env::remove_var(var) };
    }
    if args.agents {
        for (name, value) in contract::agents::person_keys() {
            // The person's keys are stand-ins: the caller's own never reach a CLI.
            // SAFETY: still single-threaded, as above.
            unsafe { std::env::set_var(name, value) };
        }
    }
    let clis = clis_given(args);
    for cli in &clis {
        if registry::find(cli).is_none() {
            return Err(Error::UnknownCli {
                name: cli.clone(),
                known: registry::names().join(", "),
            });
        }
    }
    if let Some(dir) = &state_root
        && !dir.is_dir()
    {
        return Err(Error::BadInput(format!(
            "--state-root `{}` does not exist: the contract builds its demo layout in an existing folder (leave the flag out for a temporary one); nothing was created",
            dir.display()
        )));
    }
    let temp = match &state_root {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("cli-sandbox-contract-")
                .tempdir()
                .map_err(|e| Error::Io {
                    what: "a temporary folder".into(),
                    source: e,
                })?,
        ),
    };
    let root = match (&state_root, &temp) {
        (Some(dir), _) => dir.clone(),
        (None, Some(t)) => t.path().to_owned(),
        (None, None) => unreachable!("one of the two is set"),
    };
    if args.agents {
        return agents(args, clis, &root, temp, args.keep || state_root.is_some());
    }
    let options = Options {
        clis,
        root: root.clone(),
        helper: launch::wrap::helper_binary(None)?,
        cli_sandbox: std::env::current_exe().map_err(|e| Error::Io {
            what: "this binary".into(),
            source: e,
        })?,
        broken_grant: args.broken_grant_for_testing.clone(),
    };
    let facts = launch::probe();
    let progress = Progress::new(!args.json);
    let report = contract::run::run(&options, &facts, &|event| progress.on(event))?;
    progress.finish();
    if args.json {
        crate::print_json(&report)?;
    } else {
        out!("{}", report_text(&report, &machine()));
    }
    if args.keep || state_root.is_some() {
        if !args.json {
            outln!("demo layout kept at {}", report.layout.display());
        }
        if let Some(temp) = temp {
            // Kept on purpose: the person asked to inspect it.
            let _ = temp.keep();
        }
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The CLIs named with `--cli`, or every registered one.
fn clis_given(args: &ContractArgs) -> Vec<String> {
    if args.clis.is_empty() {
        registry::names().into_iter().map(str::to_owned).collect()
    } else {
        args.clis.clone()
    }
}

/// This machine in words: OS, kernel release, architecture, and who runs the contract.
fn machine() -> String {
    // SAFETY: `utsname` is plain bytes; all zeros is a valid value for uname to fill.
    let mut names: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname writes only into the struct it is given, which lives until the end here.
    let known = unsafe { libc::uname(&mut names) } == 0;
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let os = match std::env::consts::OS {
        "macos" => "macOS",
        "linux" => "Linux",
        other => other,
    };
    let kernel = if known {
        format!(" {}", field(&names.release))
    } else {
        String::new()
    };
    let who = if launch::context::launcher_is_root() {
        "as root".to_owned()
    } else {
        // SAFETY: getuid has no failure and touches no memory.
        format!("as uid {}", unsafe { libc::getuid() })
    };
    format!("{os}{kernel} ({}), {who}", std::env::consts::ARCH)
}

/// One line per CLI on stderr: updated in place while the CLI runs when stderr is a terminal,
/// and one plain line when it is done otherwise (a log, a CI job).
struct Progress {
    on: bool,
    terminal: bool,
    state: RefCell<CliProgress>,
}

#[derive(Default)]
struct CliProgress {
    cli: String,
    shape: String,
    checks: usize,
    failed: usize,
    real: Option<&'static str>,
    /// Something is on the line that the next update replaces.
    open_line: bool,
}

impl Progress {
    fn new(on: bool) -> Progress {
        Progress {
            on,
            terminal: std::io::stderr().is_terminal(),
            state: RefCell::new(CliProgress::default()),
        }
    }

    fn on(&self, event: Event<'_>) {
        if !self.on {
            return;
        }
        let mut s = self.state.borrow_mut();
        match event {
            Event::Launch { cli, shape } => {
                if s.cli != cli {
                    *s = CliProgress {
                        cli: cli.to_owned(),
                        open_line: s.open_line,
                        ..CliProgress::default()
                    };
                }
                s.shape = shape.to_owned();
            }
            Event::Verdict { passed, .. } => {
                s.checks += 1;
                s.failed += usize::from(!passed);
            }
            Event::Error { .. } => {
                s.checks += 1;
                s.failed += 1;
            }
            Event::RealCli {
                passed, unconfined, ..
            } => {
                s.real = Some(match (passed, unconfined) {
                    (Some(true), _) => "its real CLI ran confined",
                    (Some(false), _) => "its real CLI was NOT proven confined",
                    (None, true) => "its real CLI not started: nothing confines here",
                    (None, false) => "its real CLI is not installed",
                });
                s.checks += usize::from(passed.is_some());
                s.failed += usize::from(passed == Some(false));
            }
            Event::Done { .. } => {
                let line = s.line(true);
                self.write(&mut s, &line, true);
                return;
            }
        }
        if self.terminal {
            let line = s.line(false);
            self.write(&mut s, &line, false);
        }
    }

    fn write(&self, s: &mut CliProgress, line: &str, done: bool) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            // Back to the line's start, the old text cleared.
            let _ = write!(err, "\r\x1b[2K{line}");
            if done {
                let _ = writeln!(err);
            }
            s.open_line = !done;
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn finish(&self) {
        let mut s = self.state.borrow_mut();
        if self.on && self.terminal && s.open_line {
            let _ = writeln!(std::io::stderr());
            s.open_line = false;
        }
    }
}

impl CliProgress {
    fn line(&self, done: bool) -> String {
        let who = if self.cli == "step" {
            "the scripted step".to_owned()
        } else {
            self.cli.clone()
        };
        let mut line = format!(
            "contract: {who}: {} checks, {} failed",
            self.checks, self.failed
        );
        if !done && self.cli != "step" {
            line.push_str(&format!(" ({} shape)", self.shape));
        }
        if let Some(real) = self.real {
            line.push_str(&format!("; {real}"));
        }
        if done {
            line.push_str(if self.failed == 0 { "" } else { "  <-- FAILED" });
        }
        line
    }
}

/// The report as a person reads it, laid out for [`WIDTH`] columns.
fn report_text(report: &Report, machine: &str) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("cli-sandbox contract on {machine}"));
    for text in [
        format!("backend:  {}", backend_words(report.backend)),
        format!("decision: {}", report.reason),
        format!("enforced: {}", enforced_words(&report.guarantees)),
    ] {
        line(wrap(&text, "          "));
    }
    line(String::new());

    let columns = columns(report);
    let actions = actions(report);
    let legend = format!(
        "Each row is an action a confined program tries, each column a real launch on a demo layout: \
         {}{}. A cell says whether the verdict read from the disk is the one the policy expects: \
         `ok`, or `!!` (listed below).",
        if columns.iter().any(|(cli, _)| cli == "step") {
            "the scripted step (`cli-sandbox step`), then "
        } else {
            ""
        },
        "each CLI in its two shapes, t = tmux pane, s = structured (headless)"
    );
    line(wrap(&legend, ""));
    line(String::new());

    let name_width = actions
        .iter()
        .map(|(a, _)| a.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, 26)
        + 2;
    // Two header lines: the CLI's name over its shapes' columns, then t / s.
    let mut top = format!("{:name_width$}{:<10}", "", "expected");
    let mut second = format!("{:<name_width$}{:<10}", "action", "");
    let mut previous = "";
    for (cli, shape) in &columns {
        if cli == "step" {
            top.push_str(&format!("{:<6}", "step"));
            second.push_str(&format!("{:<6}", ""));
        } else {
            if cli != previous {
                top.push_str(&format!("{cli:<8}"));
            }
            second.push_str(&format!("{:<4}", &shape[..1]));
        }
        previous = cli;
    }
    line(top.trim_end().to_owned());
    line(second.trim_end().to_owned());
    for (action, expected) in &actions {
        let name = if action.chars().count() > name_width - 2 {
            let cut: String = action.chars().take(name_width - 3).collect();
            format!("{cut}~")
        } else {
            action.clone()
        };
        let mut row = format!("{name:<name_width$}{:<10}", verdict_word(*expected));
        for (cli, shape) in &columns {
            let cell = report
                .rows
                .iter()
                .find(|r| &r.cli == cli && &r.shape == shape && &r.action == action)
                .map(|r| if r.passed { "ok" } else { "!!" })
                .unwrap_or("-");
            let width = if cli == "step" { 6 } else { 4 };
            row.push_str(&format!("{cell:<width$}"));
        }
        line(row.trim_end().to_owned());
    }
    line(String::new());

    let failures: Vec<_> = report
        .rows
        .iter()
        .filter(|r| !r.passed && !r.action.ends_with("=step"))
        .collect();
    for r in &failures {
        line(wrap(
            &format!(
                "!! {}{} {}: expected {}, was {} (rule: {})",
                r.cli,
                if r.shape == "-" {
                    String::new()
                } else {
                    format!(" {}", r.shape)
                },
                r.action,
                verdict_word(r.expected),
                verdict_word(r.actual),
                r.rule
            ),
            "   ",
        ));
    }
    let comparisons: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.action.ends_with("=step"))
        .collect();
    for r in comparisons.iter().filter(|r| !r.passed) {
        line(format!(
            "!! {} {} {}: the launch saw {}, the scripted step {}",
            r.cli,
            r.shape,
            r.action.trim_end_matches("=step"),
            verdict_word(r.actual),
            verdict_word(r.expected)
        ));
    }
    for real in &report.real_clis {
        line(wrap(
            &format!(
                "real CLI {}: {} -> {} ({})",
                real.cli,
                if real.version.is_empty() {
                    "did not run"
                } else {
                    real.version.lines().last().unwrap_or("")
                },
                if real.passed {
                    "ran confined"
                } else {
                    "!! NOT PROVEN CONFINED"
                },
                real.evidence
            ),
            "   ",
        ));
    }
    for e in &report.errors {
        line(wrap(&format!("!! {e}"), "   "));
    }
    if !failures.is_empty()
        || !report.real_clis.is_empty()
        || !report.errors.is_empty()
        || comparisons.iter().any(|r| !r.passed)
    {
        line(String::new());
    }

    // The summary: every count, and what it is made of (they add up to the total).
    let table: Vec<_> = report
        .rows
        .iter()
        .filter(|r| !r.action.ends_with("=step"))
        .collect();
    let failed = |rows: &[&contract::run::Row]| rows.iter().filter(|r| !r.passed).count();
    let real_failed = report.real_clis.iter().filter(|r| !r.passed).count();
    line(format!(
        "{} checks: {} passed, {} failed. They are:",
        report.passed + report.failed,
        report.passed,
        report.failed
    ));
    let grid = actions.len() * columns.len();
    line(format!(
        "  {:>5}  cells of the table ({} actions x {} launches{}), {} failed",
        table.len(),
        actions.len(),
        columns.len(),
        if table.len() == grid {
            String::new()
        } else {
            format!("; {} empty, `-`", grid.saturating_sub(table.len()))
        },
        failed(&table)
    ));
    line(format!(
        "  {:>5}  comparisons of each launch's verdict with the scripted step's, {} differ",
        comparisons.len(),
        failed(&comparisons)
    ));
    line(format!(
        "  {:>5}  real CLIs started confined with --version, {} not proven confined",
        report.real_clis.len(),
        real_failed
    ));
    line(format!(
        "  {:>5}  launches that could not be computed or run",
        report.errors.len()
    ));
    out
}

/// The columns of the table: the scripted step first, then each CLI's shapes in the order run.
fn columns(report: &Report) -> Vec<(String, String)> {
    let mut columns: Vec<(String, String)> = Vec::new();
    for row in &report.rows {
        let col = (row.cli.clone(), row.shape.clone());
        if !columns.contains(&col) {
            columns.push(col);
        }
    }
    columns
}

/// The actions, in the order first seen, with what the policy expects of each.
fn actions(report: &Report) -> Vec<(String, Verdict)> {
    let mut actions: Vec<(String, Verdict)> = Vec::new();
    for row in &report.rows {
        if !row.action.ends_with("=step") && !actions.iter().any(|(a, _)| *a == row.action) {
            actions.push((row.action.clone(), row.expected));
        }
    }
    actions
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Allowed => "allowed",
        Verdict::Refused => "refused",
    }
}

/// What the plan enforces, by promise: those kept fully counted, the others named.
fn enforced_words(guarantees: &[Guarantee]) -> String {
    if guarantees.is_empty() {
        return "what this backend closes: `cli-sandbox doctor`".to_owned();
    }
    let mut ids: Vec<&str> = Vec::new();
    for g in guarantees {
        if !ids.contains(&g.id.as_str()) {
            ids.push(&g.id);
        }
    }
    // A promise is as weak as its weakest part.
    let level = |id: &str| {
        guarantees
            .iter()
            .filter(|g| g.id == id)
            .map(|g| match g.enforcement {
                Enforcement::Fully => 0,
                Enforcement::Partly(_) => 1,
                Enforcement::Not(_) => 2,
            })
            .max()
            .unwrap_or(0)
    };
    let of = |l: u8| -> Vec<&str> { ids.iter().copied().filter(|id| level(id) == l).collect() };
    let (fully, partly, not) = (of(0), of(1), of(2));
    let mut text = format!("{} of {} promises fully", fully.len(), ids.len());
    if !partly.is_empty() {
        text.push_str(&format!("; partly: {}", partly.join(", ")));
    }
    if !not.is_empty() {
        text.push_str(&format!("; not: {}", not.join(", ")));
    }
    text.push_str(" (the gaps: `cli-sandbox doctor`)");
    text
}

/// `text` wrapped to [`WIDTH`], later lines indented by `indent`.
fn wrap(text: &str, indent: &str) -> String {
    let options = textwrap::Options::new(WIDTH).subsequent_indent(indent);
    textwrap::fill(text, options)
}

fn agents(
    args: &ContractArgs,
    clis: Vec<String>,
    root: &std::path::Path,
    temp: Option<tempfile::TempDir>,
    keep: bool,
) -> Result<ExitCode, Error> {
    use contract::agents::{Actual, AgentOptions};
    use sandbox_core::Shape;
    let shapes = match args.shape.as_deref() {
        Some("tmux") => vec![Shape::Tmux],
        Some(_) => vec![Shape::Structured],
        None => vec![Shape::Structured, Shape::Tmux],
    };
    let options = AgentOptions {
        clis,
        root: root.to_owned(),
        helper: launch::wrap::helper_binary(None)?,
        shapes,
        limit: std::time::Duration::from_secs(args.launch_timeout),
        progress: !args.json,
        without_sandbox_for_testing: args.agents_without_sandbox_for_testing,
        program_for_testing: args.agents_program_for_testing.clone(),
        harden: args.harden,
    };
    let facts = launch::probe();
    let report = contract::agents::run(&options, &facts)?;
    if args.json {
        crate::print_json(&report)?;
    } else {
        outln!("backend: {}", backend_words(report.backend));
        if !report.sandbox {
            outln!("!!! CONTROL RUN: the sandbox is OFF; refused actions are expected to succeed");
        }
        outln!(
            "{:<7} {:<10} {:<24} {:<24} {:<9} actual",
            "cli",
            "shape",
            "tool",
            "action",
            "expected"
        );
        for row in &report.rows {
            let actual = match (row.passed, row.actual) {
                (true, Actual::Allowed) => "allowed".to_owned(),
                (true, Actual::Refused) => "refused".to_owned(),
                (_, a) => format!("!! {a:?}").to_uppercase(),
            };
            outln!(
                "{:<7} {:<10} {:<24} {:<24} {:<9} {actual}{}",
                row.cli,
                row.shape,
                row.tool,
                row.action,
                verdict_word(row.expected),
                if row.passed {
                    String::new()
                } else {
                    format!("  ({})", row.detail)
                }
            );
        }
        for l in &report.launches {
            outln!(
                "launch {} {} ({}): {:.1} s, {} requests, {} of {} tool results{}",
                l.cli,
                l.shape,
                l.what,
                l.seconds,
                l.requests,
                l.results,
                l.steps,
                if l.finished { "" } else { ", NOT FINISHED" }
            );
        }
        for s in &report.skipped {
            outln!("!!! {s}");
        }
        for e in &report.errors {
            outln!("!! {e}");
        }
        outln!("took {:.1} s", report.seconds);
        outln!(
            "{} checks: {} passed, {} failed (one per row above)",
            report.passed + report.failed,
            report.passed,
            report.failed
        );
        if keep {
            outln!("demo layout kept at {}", report.layout.display());
        }
    }
    if keep && let Some(temp) = temp {
        let _ = temp.keep();
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use contract::run::{RealCli, Row};
    use sandbox_core::Backend;

    /// A report of the shape a Linux machine with every CLI gives, with one failure of each
    /// kind, so that the layout is fixed whatever machine runs the test.
    fn report() -> Report {
        let actions = [
            ("home-read", Verdict::Allowed),
            ("other-workflow-read", Verdict::Refused),
            ("plan-read", Verdict::Refused),
            ("config-json-read", Verdict::Refused),
            ("runtime-write", Verdict::Allowed),
            ("beside-runtimes-write", Verdict::Refused),
            ("symlink-protected-read", Verdict::Refused),
            ("exec-systemd-run", Verdict::Refused),
            ("tmux-outside", Verdict::Refused),
            ("signal-launcher", Verdict::Refused),
            ("move-home-ancestor", Verdict::Refused),
        ];
        let mut rows = Vec::new();
        let row = |cli: &str, shape: &str, action: &str, expected: Verdict, actual: Verdict| Row {
            cli: cli.into(),
            shape: shape.into(),
            action: action.into(),
            what: format!("{action}, in words"),
            rule: "closed".into(),
            expected,
            actual,
            passed: expected == actual,
        };
        for (action, expected) in actions {
            rows.push(row("step", "-", action, expected, expected));
        }
        for cli in registry::names() {
            for shape in ["tmux", "structured"] {
                for (action, expected) in actions {
                    let broken = cli == "codex" && shape == "tmux" && action == "plan-read";
                    let actual = if broken { Verdict::Allowed } else { expected };
                    rows.push(row(cli, shape, action, expected, actual));
                }
                for (action, expected) in actions {
                    let differs = cli == "pi" && shape == "structured" && action == "home-read";
                    let actual = if differs { Verdict::Refused } else { expected };
                    rows.push(row(cli, shape, &format!("{action}=step"), expected, actual));
                }
            }
        }
        let real_clis = contract::agents::installed()
            .into_iter()
            .map(|(cli, _)| RealCli {
                cli: cli.into(),
                program: format!("/opt/{cli}").into(),
                version: "1.0.0".into(),
                evidence: "config.json refused, NoNewPrivs 1, Seccomp 2".into(),
                confined: true,
                passed: cli != "gemini",
            })
            .collect::<Vec<_>>();
        let errors = vec!["muse (tmux): the harness did not run: timed out".to_owned()];
        let failed = rows.iter().filter(|r| !r.passed).count() + 1 + errors.len();
        let passed = rows.len() + real_clis.len() + errors.len() - failed;
        Report {
            layout: "/tmp/demo".into(),
            backend: Backend::Landlock {
                abi: 7,
                namespaces: true,
            },
            reason: "Linux with Landlock ABI 7, user, mount and PID namespaces; Full CLI inside the sandbox".into(),
            guarantees: vec![
                Guarantee::new(sandbox_core::Promise::ALL[0], "mount namespace", Enforcement::Fully),
                Guarantee::new(
                    sandbox_core::Promise::ALL[1],
                    "mount namespace",
                    Enforcement::Partly("a gap".into()),
                ),
                Guarantee::new(
                    sandbox_core::Promise::KernelSurface,
                    "nothing",
                    Enforcement::Not("open".into()),
                ),
            ],
            clis: registry::names().into_iter().map(str::to_owned).collect(),
            rows,
            real_clis,
            errors,
            passed,
            failed,
        }
    }

    #[test]
    fn the_report_fits_in_100_columns_and_reads_as_the_snapshot() {
        let text = report_text(&report(), "Linux 6.18.0 (x86_64), as root");
        for l in text.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_summarys_parts_add_up_to_its_total() {
        let r = report();
        let text = report_text(&r, "m");
        let total = r.passed + r.failed;
        assert!(text.contains(&format!(
            "{total} checks: {} passed, {} failed",
            r.passed, r.failed
        )));
        let parts: usize = text
            .lines()
            .skip_while(|l| !l.contains("checks:"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse::<usize>().ok())
            .sum();
        assert_eq!(parts, total, "{text}");
    }

    #[test]
    fn the_machine_is_said_in_words() {
        let m = machine();
        assert!(m.contains(std::env::consts::ARCH), "{m}");
        assert!(m.contains(" as "), "{m}");
        assert!(!m.contains('{'), "{m}");
    }
}
