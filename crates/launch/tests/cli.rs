//! The `cli-sandbox` command line: answers, JSON, and exit status 2 with a clear message on bad
//! input (a panic is a bug).

use assert_cmd::Command;
use serde_json::Value;

fn cli() -> Command {
    let mut cmd = Command::cargo_bin("cli-sandbox").unwrap();
    cmd.env_remove("AGENTWORKS_STATE_ROOT")
        .env_remove("AGENTWORKS_WORKSPACE_DOCS")
        .env_remove("XDG_DATA_HOME");
    cmd
}

struct Layout {
    _dir: tempfile::TempDir,
    demo: launch::demo::Demo,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let demo = launch::demo::Demo::create(dir.path()).unwrap();
    Layout { _dir: dir, demo }
}

fn explain(l: &Layout, op: &str, path: &std::path::Path) -> Value {
    let out = cli()
        .env("HOME", &l.demo.home)
        .args(["--config", l.demo.config.to_str().unwrap()])
        .args([
            "explain",
            "--json",
            "--chat",
            &l.demo.chat,
            "--grant",
            &l.demo.grant_arg(),
        ])
        .args(["--op", op])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn explain_answers_for_each_policy_class_with_the_rule_that_decided() {
    let l = layout();
    let d = &l.demo;
    let cases = [
        ("read", d.home.join("notes.txt"), true, "open"),
        ("write", d.runtime.join("x"), true, "runtime"),
        ("write", d.granted.join("doc.md"), true, "granted"),
        ("read", d.other_workflow.join("doc.md"), false, "closed"),
        ("read", d.state_root.join("config.json"), false, "closed"),
        (
            "read",
            d.granted.join("planning/plan.json"),
            false,
            "refused",
        ),
        ("exec", d.blocked_stand_in.clone(), false, "blocked"),
        ("move", d.state_root.clone(), false, "pinned"),
    ];
    for (op, path, allowed, rule) in cases {
        let v = explain(&l, op, &path);
        assert_eq!(v["allowed"], allowed, "{op} {}: {v}", path.display());
        assert_eq!(v["rule"], rule, "{op} {}: {v}", path.display());
    }
}

#[test]
fn explain_resolves_symlinks_like_the_kernel() {
    let l = layout();
    let link = l.demo.home.join("link");
    std::os::unix::fs::symlink(&l.demo.other_workflow, &link).unwrap();
    let v = explain(&l, "read", &link.join("doc.md"));
    assert_eq!(v["rule"], "closed", "{v}");
}

#[test]
fn bad_input_exits_2_with_a_message_naming_the_thing() {
    let l = layout();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "explain".into(),
                "--chat".into(),
                "../x".into(),
                "--op".into(),
                "read".into(),
                "/".into(),
            ],
            "chat id",
        ),
        (
            vec![
                "explain".into(),
                "--chat".into(),
                "c".into(),
                "--grant".into(),
                "relative/path".into(),
                "--op".into(),
                "read".into(),
                "/".into(),
            ],
            "not absolute",
        ),
        (
            vec![
                "explain".into(),
                "--chat".into(),
                "c".into(),
                "--grant".into(),
                "/does/not/exist".into(),
                "--op".into(),
                "read".into(),
                "/".into(),
            ],
            "does not exist",
        ),
        (
            vec![
                "plan".into(),
                "--cli".into(),
                "nope".into(),
                "--chat".into(),
                "c".into(),
            ],
            "unknown CLI `nope`",
        ),
        (
            vec![
                "--config".into(),
                "/does/not/exist.toml".into(),
                "doctor".into(),
            ],
            "exist.toml",
        ),
        (
            vec![
                "plan".into(),
                "--cli".into(),
                "claude".into(),
                "--chat".into(),
                "c".into(),
                "--mcp-bridge".into(),
                "{".into(),
            ],
            "--mcp-bridge",
        ),
    ];
    for (args, expected) in cases {
        let out = cli()
            .env("HOME", &l.demo.home)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_config_file_that_is_not_valid_names_its_line() {
    let l = layout();
    let config = l.demo.root.join("bad.toml");
    std::fs::write(
        &config,
        "[policy]\nrefused = [\"planning/\"]\nblocked = 3\n",
    )
    .unwrap();
    let out = cli()
        .env("HOME", &l.demo.home)
        .args(["--config", config.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 3"), "{stderr}");
}

#[test]
fn doctor_json_reports_the_backend_and_mode() {
    let out = cli().args(["doctor", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(v["ways_out"].as_array().is_some_and(|w| !w.is_empty()));
    if cfg!(target_os = "linux") {
        let abi = v["facts"]["landlock_abi"].as_u64();
        match abi {
            Some(abi) if abi > 0 => {
                assert_eq!(v["mode"], "full", "{v}");
                assert_eq!(v["backend"]["backend"], "landlock", "{v}");
            }
            _ => assert_eq!(v["mode"], "bridge-only", "{v}"),
        }
    }
}

#[test]
fn plan_json_gives_a_wrapped_launch_for_every_registered_cli_in_both_shapes_and_modes() {
    let l = layout();
    for adapter in launch::registry::ADAPTERS {
        for shape in ["tmux", "structured"] {
            for mode in adapter.modes() {
                let out = cli()
                    .env("HOME", &l.demo.home)
                    .args(["--config", l.demo.config.to_str().unwrap()])
                    .args([
                        "plan",
                        "--json",
                        "--cli",
                        adapter.name(),
                        "--chat",
                        &l.demo.chat,
                    ])
                    .args([
                        "--grant",
                        &l.demo.grant_arg(),
                        "--shape",
                        shape,
                        "--mode",
                        mode.as_str(),
                    ])
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(
                    out.status.success(),
                    "{} {shape} {}: {stderr}",
                    adapter.name(),
                    mode.as_str()
                );
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(v["decision"]["mode"], mode.as_str(), "{v}");
                assert_eq!(v["cwd"], l.demo.runtime.to_str().unwrap());
                let argv: Vec<&str> = v["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|a| a.as_str())
                    .collect();
                let start = v["command_start"].as_u64().unwrap() as usize;
                if v["decision"]["backend"]["backend"] == "landlock" {
                    assert_eq!(argv[1..3], ["exec", "--policy"], "{argv:?}");
                    assert!(start > 4);
                }
                assert!(argv[start].ends_with(adapter.program()), "{argv:?}");
            }
        }
    }
}
