//! The contract (`cli-sandbox contract`), end to end: it must pass on this machine, and it must
//! fail, naming the action, when the launch is deliberately broken.

use std::process::Command;

use cli_sandbox_tests::real_clis::{REQUIRE as REQUIRE_REAL_CLIS, bin_dir, path_with_real_clis};
use cli_sandbox_tests::{cli_sandbox, confinement_available};
use serde_json::Value;

fn contract(args: &[&str]) -> (Option<i32>, Value, String) {
    let out = Command::new(cli_sandbox())
        .arg("contract")
        .arg("--json")
        .args(args)
        .env("PATH", path_with_real_clis())
        .output()
        .expect("run cli-sandbox contract");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn failing_rows(report: &Value) -> Vec<String> {
    report["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["passed"] == Value::Bool(false))
        .map(|r| format!("{} {} {}", r["cli"], r["shape"], r["action"]))
        .collect()
}

#[test]
fn the_contract_passes_for_every_registered_cli_in_both_shapes() {
    if !confinement_available("the_contract_passes_for_every_registered_cli_in_both_shapes") {
        return;
    }
    let (code, report, stderr) = contract(&[]);
    assert_eq!(
        code,
        Some(0),
        "contract failed: {:?}\nerrors: {}\n{stderr}",
        failing_rows(&report),
        report["errors"]
    );
    let rows = report["rows"].as_array().expect("rows");
    // Every registered CLI by default (seven, Gemini CLI among them).
    assert_eq!(
        report["clis"].as_array().map(Vec::len),
        Some(launch::registry::ADAPTERS.len()),
        "{}",
        report["clis"]
    );
    for cli in launch::registry::names() {
        for shape in ["tmux", "structured"] {
            let n = rows
                .iter()
                .filter(|r| r["cli"] == cli && r["shape"] == shape)
                .count();
            assert!(n >= 30, "{cli} {shape}: only {n} rows");
        }
    }
    assert!(
        rows.iter().any(|r| r["cli"] == "step"),
        "no scripted step rows"
    );
    assert_eq!(report["failed"], 0);

    let real: Vec<&str> = report["real_clis"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["passed"] == Value::Bool(true))
        .filter_map(|r| r["cli"].as_str())
        .collect();
    if bin_dir().join("claude").exists() {
        for cli in cli_sandbox_tests::real_clis::pinned() {
            assert!(
                real.contains(&cli),
                "real {cli} was not proven confined: {}",
                report["real_clis"]
            );
        }
    } else if std::env::var(REQUIRE_REAL_CLIS).as_deref() == Ok("1") {
        panic!(
            "the real CLIs are not installed and {REQUIRE_REAL_CLIS}=1: run `npm ci --prefix tests`"
        );
    } else {
        cli_sandbox_tests::skips::record(
            REQUIRE_REAL_CLIS,
            "the real-CLI part of the_contract_passes_for_every_registered_cli_in_both_shapes",
            "the pinned CLIs are not installed",
        );
        cli_sandbox_tests::say(&format!(
            "\n!!! SKIPPED the real-CLI part of the_contract_passes_for_every_registered_cli_in_both_shapes: \
             the pinned CLIs are not installed (`npm ci --prefix tests`). Set {REQUIRE_REAL_CLIS}=1 to make this an error.\n"
        ));
    }
}

#[test]
fn a_broken_plan_fails_and_names_the_action() {
    if !confinement_available("a_broken_plan_fails_and_names_the_action") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let other = root.join("home/.local/share/AgentWorks/workspace-docs/workflows/wf-other");
    let (code, report, stderr) = contract(&[
        "--cli",
        "claude",
        "--state-root",
        root.to_str().unwrap(),
        "--broken-grant-for-testing",
        other.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "a broken plan passed the contract\n{stderr}");
    let failing = failing_rows(&report);
    for action in ["other-workflow-read", "other-workflow-write"] {
        assert!(
            failing.iter().any(|f| f.contains(action)),
            "{action} not named among the failures: {failing:?}"
        );
    }
}

#[test]
fn an_unknown_cli_is_bad_input_also_inside_a_comma_list() {
    for list in [
        &["--cli", "nope"][..],
        &["--cli", "claude,nope"],
        &["--cli", "claude", "--cli", "nope"],
    ] {
        let out = Command::new(cli_sandbox())
            .arg("contract")
            .args(list)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{list:?}: {stderr}");
        assert!(stderr.contains("unknown CLI `nope`"), "{list:?}: {stderr}");
    }
}

#[test]
fn the_seventh_cli_gemini_passes_the_contract_and_its_real_cli_runs_confined() {
    if !confinement_available(
        "the_seventh_cli_gemini_passes_the_contract_and_its_real_cli_runs_confined",
    ) {
        return;
    }
    let (code, report, stderr) = contract(&["--cli", "gemini"]);
    assert_eq!(
        code,
        Some(0),
        "{:?}\n{}\n{stderr}",
        failing_rows(&report),
        report["errors"]
    );
    if bin_dir().join("gemini").exists() {
        let real = &report["real_clis"][0];
        assert_eq!(real["cli"], "gemini", "{report}");
        assert_eq!(real["passed"], true, "{real}");
    }
}
