//! The contract's model-driven layer (`cli-sandbox contract --agents`) and its scripted model,
//! against the pinned real CLIs (`npm ci --prefix tests`).
//!
//! - the scripted model drives each CLI's own tools, unconfined in a scratch home, and records
//!   the request shapes each one sends (endpoint, offered tools, tool results); every `connect`
//!   the CLI makes is recorded (strace) and must be to loopback;
//! - the whole layer passes for codex, claude and gemini in both shapes and for pi through the
//!   bridge, and again inside a network namespace that has only `lo`;
//! - the control run (sandbox off) lets the refused actions through: the layer measures the
//!   sandbox, not the CLIs;
//! - a CLI that hangs or fails is reported and the layer goes on; with retries off a failing
//!   model fails each CLI in seconds.
//!
//! Every CLI runs with a scratch HOME and TMPDIR that are removed afterwards (Claude leaves
//! files in the temporary folder). A missing CLI skips loudly; `CLI_SANDBOX_REQUIRE_REAL_CLIS=1`
//! makes it a failure. Claude runs as root only with `IS_SANDBOX=1`, which its adapter sets for
//! a confined launch and these tests set for the unconfined one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cli_sandbox_tests::real_clis::{
    REQUIRE, Scratch, clean_env, path_with_real_clis, pinned, require,
};
use cli_sandbox_tests::{cli_sandbox, confinement_available};
use sandbox_core::{Mode, Shape};
use scripted_model::{Dialect, Script, ScriptedModel, Step};
use serde_json::Value;

/// One test of this file at a time: each drives several real CLIs, and side by side on a small
/// machine they would compete for the launch's time limit.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `cli-sandbox contract --agents --json ARGS` with the pinned CLIs on PATH.
fn agents(args: &[&str], wrap: Option<&[&str]>) -> (Option<i32>, Value, String) {
    let mut argv: Vec<String> = Vec::new();
    if let Some(prefix) = wrap {
        argv.extend(prefix.iter().map(|s| s.to_string()));
    }
    argv.push(cli_sandbox().display().to_string());
    argv.extend(["contract", "--agents", "--json"].map(str::to_owned));
    argv.extend(args.iter().map(|s| s.to_string()));
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .env("PATH", path_with_real_clis())
        .output()
        .expect("run cli-sandbox contract --agents");
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rows<'a>(report: &'a Value, cli: &str, shape: &str) -> Vec<&'a Value> {
    report["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["cli"] == cli && r["shape"] == shape)
        .collect()
}

fn failing(report: &Value) -> Vec<String> {
    report["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["passed"] == false)
        .map(|r| {
            format!(
                "{} {} {} {}: {} ({})",
                r["cli"], r["shape"], r["tool"], r["action"], r["actual"], r["detail"]
            )
        })
        .collect()
}

/// Every pinned CLI installed, or `false` after saying why (a failure under REQUIRE).
fn all_pinned(test: &str) -> bool {
    pinned().iter().all(|cli| require(cli, test).is_some())
}

fn cli_args() -> Vec<&'static str> {
    pinned().into_iter().flat_map(|c| ["--cli", c]).collect()
}

#[test]
fn the_layer_passes_for_the_pinned_clis_in_both_shapes() {
    let _serial = one_at_a_time();
    let test = "the_layer_passes_for_the_pinned_clis_in_both_shapes";
    if !confinement_available(test) || !all_pinned(test) {
        return;
    }
    let (code, report, stderr) = agents(&cli_args(), None);
    assert_eq!(
        code,
        Some(0),
        "failing rows: {:#?}\nerrors: {}\n{stderr}",
        failing(&report),
        report["errors"]
    );
    for cli in ["codex", "claude", "gemini"] {
        for shape in ["structured", "tmux"] {
            let rows = rows(&report, cli, shape);
            let tools: std::collections::BTreeSet<&str> = rows
                .iter()
                .filter_map(|r| r["tool"].as_str()?.split(' ').next())
                .collect();
            assert!(rows.len() >= 40, "{cli} {shape}: only {} rows", rows.len());
            assert!(tools.contains("shell"), "{cli} {shape}: {tools:?}");
            assert!(
                tools.contains("write") && tools.contains("edit"),
                "{cli} {shape}: {tools:?}"
            );
            if cli != "codex" {
                assert!(tools.contains("read"), "{cli} {shape}: {tools:?}");
            }
            // The refused actions were attempted and refused, not left out.
            for action in ["config-json-read", "other-workflow-write", "tmux-outside"] {
                assert!(
                    rows.iter()
                        .any(|r| r["action"] == action && r["actual"] == "refused"),
                    "{cli} {shape}: {action} not refused"
                );
            }
        }
    }
    for shape in ["structured", "tmux"] {
        let pi = rows(&report, "pi", shape);
        for action in ["bridge-call", "bridge-offered", "person-mcp-started"] {
            assert!(
                pi.iter()
                    .any(|r| r["action"] == action && r["passed"] == true),
                "pi {shape}: {action}: {pi:#?}"
            );
        }
    }
    let claude_bridge: Vec<_> = rows(&report, "claude", "structured")
        .into_iter()
        .filter(|r| r["tool"].as_str().unwrap_or("").starts_with("bridge"))
        .collect();
    assert_eq!(claude_bridge.len(), 3, "{claude_bridge:#?}");
    eprintln!("the layer took {} s", report["seconds"]);
}

#[test]
fn the_control_run_without_the_sandbox_lets_the_refused_actions_through() {
    let _serial = one_at_a_time();
    let test = "the_control_run_without_the_sandbox_lets_the_refused_actions_through";
    if !confinement_available(test) || !all_pinned(test) {
        return;
    }
    let (code, report, stderr) = agents(
        &[
            "--cli",
            "codex",
            "--cli",
            "claude",
            "--shape",
            "structured",
            "--agents-without-sandbox-for-testing",
        ],
        None,
    );
    assert_eq!(code, Some(1), "the control run passed:\n{stderr}");
    assert_eq!(report["sandbox"], false);
    for cli in ["codex", "claude"] {
        let rows = rows(&report, cli, "structured");
        for action in [
            "config-json-read",
            "other-workflow-write",
            "other-runtime-read",
            "plan-read",
            "tmux-outside",
            "signal-launcher",
        ] {
            let shell = rows
                .iter()
                .find(|r| r["action"] == action && r["tool"].as_str().unwrap().starts_with("shell"))
                .unwrap_or_else(|| panic!("{cli}: no shell row for {action}"));
            assert_eq!(
                shell["actual"], "allowed",
                "{cli} {action}: without the sandbox it must succeed: {shell}"
            );
        }
    }
    let claude = rows(&report, "claude", "structured");
    let read = claude
        .iter()
        .find(|r| r["action"] == "config-json-read" && r["tool"] == "read (Read)")
        .expect("claude's Read of config.json");
    assert_eq!(read["actual"], "allowed", "{read}");
}

/// A stand-in program for every CLI: `mode` is `hang` or `fail`.
fn stand_in_cli(dir: &Path, mode: &str) -> PathBuf {
    let path = dir.join(format!("stand-in-{mode}"));
    let body = match mode {
        "hang" => "exec sleep 600",
        _ => "echo 'stand-in CLI: failing on purpose' >&2; exit 3",
    };
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_cli_that_hangs_or_fails_is_reported_and_the_layer_goes_on() {
    let _serial = one_at_a_time();
    let test = "a_cli_that_hangs_or_fails_is_reported_and_the_layer_goes_on";
    if !confinement_available(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for mode in ["hang", "fail"] {
        let program = stand_in_cli(dir.path(), mode);
        let started = Instant::now();
        let (code, report, stderr) = agents(
            &[
                "--cli",
                "codex",
                "--cli",
                "gemini",
                "--shape",
                "structured",
                "--launch-timeout",
                "3",
                "--agents-program-for-testing",
                program.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(code, Some(1), "{mode}: {stderr}");
        let errors: Vec<&str> = report["errors"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        // Both CLIs were tried: the first one's failure did not stop the layer.
        for cli in ["codex", "gemini"] {
            assert!(
                errors.iter().any(|e| e.starts_with(cli)),
                "{mode}: {cli} not reported: {errors:?}"
            );
            let rows = rows(&report, cli, "structured");
            assert!(!rows.is_empty(), "{mode}: {cli} has no rows");
            assert!(
                rows.iter().all(|r| r["actual"] == "not-run"),
                "{mode}: {cli}: a step that never ran must not pass: {rows:#?}"
            );
        }
        let word = if mode == "hang" {
            "killed"
        } else {
            "before the script was played"
        };
        assert!(
            errors.iter().all(|e| e.contains(word)),
            "{mode}: {errors:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{mode}: the layer did not go on in time"
        );
    }
}

#[test]
fn inside_a_network_namespace_with_only_loopback_the_layer_still_passes() {
    let _serial = one_at_a_time();
    let test = "inside_a_network_namespace_with_only_loopback_the_layer_still_passes";
    if !confinement_available(test) || !all_pinned(test) {
        return;
    }
    let netns = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !netns {
        if std::env::var(REQUIRE).as_deref() == Ok("1") {
            panic!("{test}: `unshare -n` fails here ({REQUIRE}=1)");
        }
        cli_sandbox_tests::skips::record(
            REQUIRE,
            test,
            "`unshare -n` cannot make a network namespace",
        );
        cli_sandbox_tests::say(&format!(
            "\n!!! SKIPPED {test}: `unshare -n` cannot make a network namespace here. Set {REQUIRE}=1 to make this an error.\n"
        ));
        return;
    }
    // Nothing but `lo` exists: a connection anywhere else fails at once, so a pass shows that
    // no CLI needs anything beyond the scripted model on 127.0.0.1.
    let inner = "ip link set lo up && exec \"$@\"; echo 'no lo' >&2; exit 99";
    let mut args: Vec<&str> = cli_args();
    args.extend(["--shape", "structured"]);
    let (code, report, stderr) = agents(&args, Some(&["unshare", "-n", "sh", "-c", inner, "sh"]));
    assert_eq!(
        code,
        Some(0),
        "{:#?}\n{}\n{stderr}",
        failing(&report),
        report["errors"]
    );
}

// ---------- The scripted model against each CLI, unconfined ----------

/// One CLI driven by a scripted model in a scratch home and TMPDIR (both removed at the end),
/// each `connect` recorded by strace where it is installed.
struct Driven {
    /// Kept until the checks are done (dropping it removes the scratch home).
    scratch: Scratch,
    log: scripted_model::Log,
    connects: Vec<String>,
    status: Option<i32>,
    seconds: f64,
}

fn strace() -> Option<PathBuf> {
    which("strace")
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.exists())
    })
}

fn drive(cli: &str, program: &Path, script: &dyn Fn(&Path) -> Script, limit: Duration) -> Driven {
    let s = Scratch::new();
    let script = script(&s.workdir);
    let tmp = s.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let model = ScriptedModel::start(script).unwrap();
    let person =
        contract::agents::point_at_scripted_model(cli, &s.home, &model.base_url()).unwrap();
    let adapter = launch::registry::find(cli).unwrap();
    let mode = if cli == "pi" {
        Mode::BridgeOnly
    } else {
        Mode::Full
    };
    let mut req = s.request(Shape::Structured, mode);
    req.prompt = Some("Run the scripted steps.".to_owned());
    // Pi with its own tools on here: this test checks the dialect, not the bridge.
    let launch = cli_sandbox_tests::real_clis::prepare(adapter, &req);
    let mut args = launch.args.clone();
    if cli == "pi" {
        args.retain(|a| a != "--no-builtin-tools");
    }
    let mut extra: Vec<(&str, &str)> = person
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let tmp_text = tmp.display().to_string();
    extra.push(("TMPDIR", &tmp_text));
    extra.push(("IS_SANDBOX", "1"));
    let mut env: BTreeMap<String, String> = clean_env(&s.home, &launch, &extra);
    env.insert(
        "PATH".into(),
        path_with_real_clis().to_string_lossy().into_owned(),
    );
    let trace = s.home.join("connects.trace");
    let (exe, mut argv): (PathBuf, Vec<String>) = match strace() {
        Some(strace) => (
            strace,
            vec![
                "-f".into(),
                "-qq".into(),
                "-e".into(),
                "trace=connect".into(),
                "-o".into(),
                trace.display().to_string(),
                program.display().to_string(),
            ],
        ),
        None => (program.to_owned(), Vec::new()),
    };
    argv.extend(args);
    let started = Instant::now();
    let ran = cli_sandbox_tests::real_clis::run(&exe, &argv, &s.workdir, &env, launch.stdin, limit);
    let connects = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("AF_INET"))
        .map(str::to_owned)
        .collect();
    Driven {
        scratch: s,
        log: model.log(),
        connects,
        status: ran.code(),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The inet connects that are not to loopback.
fn outside_loopback(connects: &[String]) -> Vec<&String> {
    connects
        .iter()
        .filter(|l| {
            !(l.contains("inet_addr(\"127.") || l.contains("\"::1\"") || l.contains("::ffff:127."))
        })
        .collect()
}

#[test]
fn the_scripted_model_drives_each_clis_own_tools_and_records_what_it_sends() {
    let _serial = one_at_a_time();
    let test = "the_scripted_model_drives_each_clis_own_tools_and_records_what_it_sends";
    if !all_pinned(test) {
        return;
    }
    if strace().is_none() {
        if std::env::var(REQUIRE).as_deref() == Ok("1") {
            panic!("{test}: strace is not installed ({REQUIRE}=1): apt-get install strace");
        }
        cli_sandbox_tests::say(&format!(
            "\n!!! {test}: strace is not installed: connects are NOT recorded (apt-get install strace). Set {REQUIRE}=1 to make this an error.\n"
        ));
    }
    let bin = cli_sandbox_tests::real_clis::bin_dir();
    for cli in pinned() {
        // Inside the working folder: Gemini's file tools refuse anything outside their
        // workspace on their own.
        let script = |workdir: &Path| Script {
            steps: vec![
                Step::Shell {
                    command: format!(
                        "printf ran > {}; exit 3",
                        workdir.join("shell.txt").display()
                    ),
                },
                Step::Write {
                    path: workdir.join("made.txt"),
                    content: "written\n".into(),
                },
            ],
            closing: "done".into(),
            fail_with: None,
        };
        let driven = drive(cli, &bin.join(cli), &script, Duration::from_secs(60));
        let shell_out = driven.scratch.workdir.join("shell.txt");
        let made = driven.scratch.workdir.join("made.txt");
        let log = &driven.log;
        let dialect = match cli {
            "codex" => Dialect::Responses,
            "claude" => Dialect::Messages,
            "gemini" => Dialect::Gemini,
            _ => Dialect::ChatCompletions,
        };
        let model_requests: Vec<_> = log
            .requests
            .iter()
            .filter(|r| r.dialect == Some(dialect) && r.played.is_some())
            .collect();
        assert!(
            log.finished,
            "{cli}: the script was not played to its end: {:#?}",
            log.requests.iter().map(|r| &r.uri).collect::<Vec<_>>()
        );
        assert_eq!(model_requests.len(), 2, "{cli}: one request per step");
        let shell_tool = ["exec_command", "Bash", "run_shell_command", "bash"];
        assert!(
            model_requests[0]
                .offered
                .iter()
                .any(|t| shell_tool.contains(&t.as_str())),
            "{cli}: no shell tool offered: {:?}",
            model_requests[0].offered
        );
        // The shell step's result names its exit status, in the CLI's own words.
        let shell = log.result(0).expect("the shell step's result");
        assert!(
            shell.text.contains('3'),
            "{cli}: the exit status is not in the result: {shell:?}"
        );
        if cli == "claude" || cli == "gemini" {
            assert!(
                shell.is_error.is_some(),
                "{cli}: its dialect has an error flag"
            );
        }
        assert!(log.result(1).is_some(), "{cli}: no result for the write");
        assert_eq!(
            std::fs::read_to_string(&shell_out).unwrap_or_default(),
            "ran",
            "{cli}"
        );
        assert_eq!(
            std::fs::read_to_string(&made).unwrap_or_default(),
            "written\n",
            "{cli}"
        );
        let outside = outside_loopback(&driven.connects);
        assert!(
            outside.is_empty(),
            "{cli} connected outside loopback: {outside:#?}"
        );
        eprintln!(
            "{cli}: {} requests, {} connects (all loopback), {:.1} s, exit {:?}",
            log.requests.len(),
            driven.connects.len(),
            driven.seconds,
            driven.status
        );
    }
}

#[test]
fn with_retries_off_a_failing_model_fails_each_cli_in_seconds() {
    let _serial = one_at_a_time();
    let test = "with_retries_off_a_failing_model_fails_each_cli_in_seconds";
    if !all_pinned(test) {
        return;
    }
    let bin = cli_sandbox_tests::real_clis::bin_dir();
    for cli in pinned() {
        let failing = |_: &Path| Script {
            steps: vec![Step::Shell {
                command: "true".into(),
            }],
            closing: "done".into(),
            fail_with: Some(500),
        };
        let driven = drive(cli, &bin.join(cli), &failing, Duration::from_secs(60));
        assert!(
            driven.status.is_some(),
            "{cli}: still running after 60 s against a failing model"
        );
        assert!(
            driven.seconds < 20.0,
            "{cli}: took {:.1} s to give up (retries not off?)",
            driven.seconds
        );
        assert!(
            !driven.log.requests.is_empty(),
            "{cli}: never asked the model"
        );
        eprintln!(
            "{cli}: gave up after {:.1} s, {} requests",
            driven.seconds,
            driven.log.requests.len()
        );
    }
}

#[test]
fn with_harden_the_pinned_clis_still_start_and_use_their_tools() {
    // Issue 25: with `harden` the home's top is frozen (nothing made, renamed or removed there),
    // which Claude Code's atomic save of ~/.claude.json meets at every turn; it writes in place.
    let _serial = one_at_a_time();
    let test = "with_harden_the_pinned_clis_still_start_and_use_their_tools";
    if !confinement_available(test) || !all_pinned(test) {
        return;
    }
    let (code, report, stderr) = agents(
        &[
            "--cli",
            "claude",
            "--cli",
            "codex",
            "--cli",
            "gemini",
            "--shape",
            "structured",
            "--harden",
        ],
        None,
    );
    assert_eq!(
        code,
        Some(0),
        "failing rows: {:#?}\nerrors: {}\n{stderr}",
        failing(&report),
        report["errors"]
    );
    for cli in ["claude", "codex", "gemini"] {
        let rows = rows(&report, cli, "structured");
        assert!(rows.len() >= 40, "{cli}: only {} rows", rows.len());
        // A file at the home's top is refused with harden, and the kernel agreed (the row
        // passed): the layer ran under harden.
        assert!(
            rows.iter()
                .any(|r| r["action"] == "home-create" && r["expected"] == "refused"),
            "{cli}: {rows:#?}"
        );
    }
}
