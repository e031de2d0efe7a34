//! The adapters against the real CLIs, pinned in `tests/package.json` (install with
//! `npm ci --prefix tests`): each real parser accepts our argv, each CLI reads the trust entry we
//! wrote, and the person's own MCP server (a stand-in that leaves a marker file) does not start.
//! Every CLI runs with `HOME` and `TMPDIR` in a scratch folder that the test removes (Claude
//! leaves files in its temporary folder), a clean environment, and no login.
//!
//! Where a check could pass for the wrong reason, a control run without our part shows the
//! thing we prevent does happen (the trust screen appears, the person's server starts).
//!
//! A missing CLI skips its test loudly; `CLI_SANDBOX_REQUIRE_REAL_CLIS=1` makes it a failure.
//! Starting these CLIs inside our confinement is tested elsewhere (the contract).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cli_sandbox_tests::real_clis::{
    Scratch, Tmux, clean_env, prepare, require, run, run_until, stand_in_mcp_server, tmux_available,
};
use sandbox_core::{CliAdapter, McpServer, Mode, Shape, Stdin};

const LIMIT: Duration = Duration::from_secs(90);

/// A local provider so the Codex TUI gets past its login screen without credentials (nothing
/// listens on port 9: a model call fails at once).
const CODEX_LOCAL_PROVIDER: &str = r#"model_provider = "loc"
model = "test"

[model_providers.loc]
name = "loc"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
"#;

fn bridge(script: &Path, name: &str) -> McpServer {
    McpServer {
        name: name.to_owned(),
        command: "node".to_owned(),
        args: vec![script.display().to_string()],
        env: Default::default(),
    }
}

fn assert_parsed(cli: &str, ran: &cli_sandbox_tests::real_clis::Ran) {
    let all = format!("{}\n{}", ran.stdout, ran.stderr);
    for sign in [
        "unexpected argument",
        "Unknown argument",
        "Unknown option",
        "unknown option",
        "error: invalid value",
        "Usage:",
    ] {
        assert!(
            !all.contains(sign),
            "{cli} rejected our argv ({sign}):\n{all}"
        );
    }
}

// ---------- Codex ----------

#[test]
fn codex_prompt_input_shows_its_sandbox_off_and_approval_never() {
    let Some(codex) = require(
        "codex",
        "codex_prompt_input_shows_its_sandbox_off_and_approval_never",
    ) else {
        return;
    };
    let s = Scratch::new();
    s.write(".codex/config.toml", CODEX_LOCAL_PROVIDER);
    let launch = prepare(&adapter_codex::Codex, &s.request(Shape::Tmux, Mode::Full));
    // Our TUI argv (no prompt), then the debugging subcommand that renders the model's input.
    let mut args = launch.args.clone();
    args.extend(["debug", "prompt-input", "hello"].map(str::to_owned));
    let ran = run(
        &codex,
        &args,
        &s.workdir,
        &clean_env(&s.home, &launch, &[]),
        Stdin::Null,
        LIMIT,
    );
    assert_parsed("codex", &ran);
    assert_eq!(ran.code(), Some(0), "{ran:?}");
    assert!(
        ran.stdout
            .contains("`sandbox_mode` is `danger-full-access`"),
        "sandbox not off:\n{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("Approval policy is currently never"),
        "{}",
        ran.stdout
    );
}

#[test]
fn codex_exec_accepts_our_argv_and_the_persons_mcp_server_does_not_start() {
    let Some(codex) = require(
        "codex",
        "codex_exec_accepts_our_argv_and_the_persons_mcp_server_does_not_start",
    ) else {
        return;
    };
    let s = Scratch::new();
    let (person_server, person_marker) = stand_in_mcp_server(&s.home, "mine");
    let (bridge_server, bridge_marker) = stand_in_mcp_server(&s.home, "bridge");
    s.write(
        ".codex/config.toml",
        &format!(
            "{CODEX_LOCAL_PROVIDER}\n[mcp_servers.mine]\ncommand = \"node\"\nargs = [{:?}]\n",
            person_server.display().to_string()
        ),
    );

    // Codex retries an unreachable provider for ever: each run stops once the turn has
    // started (MCP servers start before it), or at the limit.
    let started = |out: &str| out.contains("\"turn.started\"");

    // Control: the person's server does start in a plain `codex exec`.
    let plain: Vec<String> = ["exec", "--json", "--skip-git-repo-check", "--", "hello"]
        .map(str::to_owned)
        .to_vec();
    let env = clean_env(&s.home, &Default::default(), &[]);
    let ran = run_until(
        &codex,
        &plain,
        &s.workdir,
        &env,
        Stdin::Null,
        LIMIT,
        &|out| started(out) && person_marker.exists(),
    );
    assert!(
        person_marker.exists(),
        "control: the stand-in should start without our flags: {ran:?}"
    );
    std::fs::remove_file(&person_marker).unwrap();

    let mut req = s.request(Shape::Structured, Mode::Full);
    req.mcp_bridge = Some(bridge(&bridge_server, "agentworks"));
    req.prompt = Some("hello".to_owned());
    let launch = prepare(&adapter_codex::Codex, &req);
    let env = clean_env(&s.home, &launch, &[]);
    let ran = run_until(
        &codex,
        &launch.args,
        &s.workdir,
        &env,
        launch.stdin,
        LIMIT,
        &|out| started(out) && bridge_marker.exists(),
    );
    assert_parsed("codex", &ran);
    assert!(
        started(&ran.stdout),
        "codex exec never started its turn (waiting on stdin?): {ran:?}"
    );
    assert!(bridge_marker.exists(), "the bridge did not start:\n{ran:?}");
    // Servers start side by side; give the person's one time it would have had.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !person_marker.exists(),
        "the person's MCP server started:\n{ran:?}"
    );
}

/// How Codex 0.171.0 trusts the runtime's project config (a server in the runtime's
/// `.codex/config.toml` starts in `codex exec` only when the project is trusted): with no entry
/// it does not (the control); with the runtime's own entry in the person's file it does; with
/// an entry for the runtimes folder (a parent) it does NOT ("Untrusted project-local
/// configuration is disabled"), which is why one entry for every chat cannot replace the
/// chat's own for Codex; with pre-trust's per-launch `-c projects=...` (nothing in the file) it
/// does, exactly as with the file's entry.
#[test]
fn codex_trusts_the_runtimes_project_config_by_pre_trusts_argument_not_by_a_parents_entry() {
    let Some(codex) = require(
        "codex",
        "codex_trusts_the_runtimes_project_config_by_pre_trusts_argument_not_by_a_parents_entry",
    ) else {
        return;
    };
    let s = Scratch::new();
    let (server, marker) = stand_in_mcp_server(&s.home, "proj");
    let project = s.workdir.join(".codex/config.toml");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    std::fs::write(
        &project,
        format!(
            "[mcp_servers.proj]\ncommand = \"node\"\nargs = [{:?}]\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let started = |out: &str| out.contains("\"turn.started\"");
    let plain: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(str::to_owned)
        .to_vec();
    let env = clean_env(&s.home, &Default::default(), &[]);
    let entry = |folder: &Path| {
        format!(
            "{CODEX_LOCAL_PROVIDER}\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            folder.display()
        )
    };
    let req = s.request(Shape::Structured, Mode::Full);
    let pre_trust = adapter_codex::Codex
        .pre_trust(&req, &cli_sandbox_tests::real_clis::DiskOnly)
        .unwrap();
    // Nothing is added to the file (a pruning of earlier versions' entries only).
    assert!(
        pre_trust
            .edits
            .iter()
            .all(|e| e.action == sandbox_core::EditAction::Prune),
        "{pre_trust:?}"
    );
    for (case, config, args, trusted) in [
        (
            "no entry (control)",
            CODEX_LOCAL_PROVIDER.to_owned(),
            vec![],
            false,
        ),
        ("the runtime's own entry", entry(&s.workdir), vec![], true),
        (
            "an entry for the runtimes folder",
            entry(s.workdir.parent().unwrap()),
            vec![],
            false,
        ),
        (
            "pre-trust's argument",
            CODEX_LOCAL_PROVIDER.to_owned(),
            pre_trust.args.clone(),
            true,
        ),
    ] {
        s.write(".codex/config.toml", &config);
        let _ = std::fs::remove_file(&marker);
        let argv: Vec<String> = plain
            .iter()
            .cloned()
            .chain(args)
            .chain(["--".to_owned(), "hello".to_owned()])
            .collect();
        let ran = run_until(
            &codex,
            &argv,
            &s.workdir,
            &env,
            Stdin::Null,
            LIMIT,
            &|out| started(out) && marker.exists(),
        );
        assert_parsed("codex", &ran);
        assert!(started(&ran.stdout), "{case}: no turn started: {ran:?}");
        if !trusted {
            // Servers start side by side with the turn; give it the time it would have had.
            std::thread::sleep(Duration::from_secs(2));
        }
        assert_eq!(
            marker.exists(),
            trusted,
            "{case}: the project's server started: {}, expected {trusted}: {ran:?}",
            marker.exists()
        );
        assert_eq!(
            std::fs::read_to_string(s.home.join(".codex/config.toml")).unwrap(),
            config,
            "{case}: the person's file is not written"
        );
    }
}

#[test]
fn codex_tui_shows_no_trust_screen_after_pre_trust() {
    let test = "codex_tui_shows_no_trust_screen_after_pre_trust";
    let Some(codex) = require("codex", test) else {
        return;
    };
    if !tmux_available(test) {
        return;
    }
    let trust = "Trust this folder?";
    let ready = ["Ask Codex", "describe a task"];
    let s = Scratch::new();
    s.write(".codex/config.toml", CODEX_LOCAL_PROVIDER);
    // Codex asks only inside a git repository.
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&s.workdir)
        .status()
        .unwrap();
    assert!(git.success());

    let req = s.request(Shape::Tmux, Mode::Full);
    let launch = adapter_codex::Codex
        .launch(&req, &cli_sandbox_tests::real_clis::DiskOnly)
        .unwrap();
    // Control: without pre-trust's `-c projects=...` the screen appears.
    let mut untrusted = launch.args.clone();
    let at = untrusted
        .iter()
        .position(|a| a.starts_with("projects="))
        .expect("pre-trust's argument");
    untrusted.drain(at - 1..=at);
    let pane = Tmux::start(
        &codex,
        &untrusted,
        &s.workdir,
        &clean_env(&s.home, &launch, &[]),
    );
    let screen = pane.wait_for(&[trust], Duration::from_secs(90));
    assert!(
        screen.contains(trust),
        "control: expected the trust screen:\n{screen}"
    );
    drop(pane);

    let launch = prepare(&adapter_codex::Codex, &req);
    let pane = Tmux::start(
        &codex,
        &launch.args,
        &s.workdir,
        &clean_env(&s.home, &launch, &[]),
    );
    let screen = pane.wait_for(&ready, Duration::from_secs(90));
    assert!(!screen.contains(trust), "trust screen shown:\n{screen}");
    assert!(
        ready.iter().any(|r| screen.contains(r)),
        "the TUI did not get ready:\n{screen}"
    );
}

// ---------- Claude Code ----------

/// The `system/init` event of a headless run: what Claude says it loaded, before any model call.
fn claude_init(stdout: &str) -> serde_json::Value {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "system" && v["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init event in:\n{stdout}"))
}

fn claude_person_with_servers(s: &Scratch) -> (std::path::PathBuf, std::path::PathBuf) {
    let (mine, mine_marker) = stand_in_mcp_server(&s.home, "mine");
    let (proj, proj_marker) = stand_in_mcp_server(&s.home, "proj");
    let server = |script: &Path| serde_json::json!({"command": "node", "args": [script.display().to_string()]});
    s.write(
        ".claude.json",
        &serde_json::json!({"hasCompletedOnboarding": true, "mcpServers": {"mine": server(&mine)}})
            .to_string(),
    );
    std::fs::write(
        s.workdir.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"proj": server(&proj)}}).to_string(),
    )
    .unwrap();
    (mine_marker, proj_marker)
}

#[test]
fn claude_headless_loads_only_the_bridge_in_both_modes() {
    let Some(claude) = require(
        "claude",
        "claude_headless_loads_only_the_bridge_in_both_modes",
    ) else {
        return;
    };
    for mode in [Mode::Full, Mode::BridgeOnly] {
        let s = Scratch::new();
        let (mine_marker, proj_marker) = claude_person_with_servers(&s);
        let (bridge_server, bridge_marker) = stand_in_mcp_server(&s.home, "bridge");

        if mode == Mode::Full {
            // Control: without our flags the person's server starts.
            let plain: Vec<String> = [
                "-p",
                "--output-format=stream-json",
                "--verbose",
                "--",
                "hello",
            ]
            .map(str::to_owned)
            .to_vec();
            let env = clean_env(&s.home, &Default::default(), &[("IS_SANDBOX", "1")]);
            let ran = run(&claude, &plain, &s.workdir, &env, Stdin::Null, LIMIT);
            assert!(
                mine_marker.exists(),
                "control: the person's server should start: {ran:?}"
            );
            for marker in [&mine_marker, &proj_marker] {
                let _ = std::fs::remove_file(marker);
            }
        }

        let mut req = s.request(Shape::Structured, mode);
        req.mcp_bridge = Some(bridge(&bridge_server, "agentworks"));
        req.prompt = Some("hello".to_owned());
        let launch = prepare(&adapter_claude::Claude, &req);
        let env = clean_env(&s.home, &launch, &[]);
        let ran = run(&claude, &launch.args, &s.workdir, &env, launch.stdin, LIMIT);
        assert_parsed("claude", &ran);
        assert!(
            ran.status.is_some(),
            "claude -p did not finish (waiting on stdin?)"
        );
        let init = claude_init(&ran.stdout);
        let servers: Vec<_> = init["mcp_servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(servers, ["agentworks"], "{mode:?}: {init}");
        assert!(bridge_marker.exists(), "{mode:?}: the bridge did not start");
        assert!(
            !mine_marker.exists(),
            "{mode:?}: the person's server started"
        );
        assert!(
            !proj_marker.exists(),
            "{mode:?}: the project's server started"
        );
        let tools: Vec<_> = init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect();
        match mode {
            Mode::Full => {
                // MCP servers connect after the init event; their tools are not listed yet.
                assert!(tools.iter().any(|t| t == "Bash"), "{tools:?}");
                assert_eq!(init["permissionMode"], "bypassPermissions", "{init}");
            }
            Mode::BridgeOnly => {
                assert!(
                    tools.iter().all(|t| t.starts_with("mcp__agentworks__")),
                    "bridge-only has no built-in tool: {tools:?}"
                );
                assert_eq!(init["permissionMode"], "dontAsk", "{init}");
            }
        }
    }
}

/// Issue 24, `~/.claude.json`: Claude copies the `env` it holds into its own environment at
/// start, so a base URL a chat left there would take every later chat's conversation (Claude's
/// state file is writable to a chat). The launch's pre-trust empties it. The request's
/// destination is read from the kernel (which of two loopback listeners Claude connects to), the
/// file from the disk. Control: without our pre-trust the real Claude connects to the planted one.
#[test]
fn claude_acts_on_no_env_a_chat_left_in_claude_json_after_pre_trust() {
    use std::cell::Cell;
    use std::net::TcpListener;
    let Some(claude) = require(
        "claude",
        "claude_acts_on_no_env_a_chat_left_in_claude_json_after_pre_trust",
    ) else {
        return;
    };
    let listen = || {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        (l, url)
    };
    for with_pre_trust in [false, true] {
        let (planted, planted_url) = listen();
        let (ours, ours_url) = listen();
        let s = Scratch::new();
        let state = s.write(
            ".claude.json",
            &serde_json::json!({
                "hasCompletedOnboarding": true,
                "env": {"ANTHROPIC_BASE_URL": planted_url, "BASH_ENV": "/planted.sh"},
            })
            .to_string(),
        );
        let mut req = s.request(Shape::Structured, Mode::Full);
        req.prompt = Some("hello".to_owned());
        let launch = if with_pre_trust {
            prepare(&adapter_claude::Claude, &req)
        } else {
            adapter_claude::Claude
                .launch(&req, &cli_sandbox_tests::real_clis::DiskOnly)
                .unwrap()
        };
        let after: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        if with_pre_trust {
            assert_eq!(after["env"], serde_json::json!({}), "{after}");
            assert_eq!(after["hasCompletedOnboarding"], true, "the rest is kept");
        }
        // The launcher's own base URL (a provider's), which the planted one would override.
        let env = clean_env(
            &s.home,
            &launch,
            &[
                ("ANTHROPIC_BASE_URL", &ours_url),
                ("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key"),
            ],
        );
        let (to_planted, to_ours) = (Cell::new(false), Cell::new(false));
        let ran = run_until(
            &claude,
            &launch.args,
            &s.workdir,
            &env,
            launch.stdin,
            LIMIT,
            &|_| {
                to_planted.set(to_planted.get() || planted.accept().is_ok());
                to_ours.set(to_ours.get() || ours.accept().is_ok());
                to_planted.get() || to_ours.get()
            },
        );
        assert_parsed("claude", &ran);
        if with_pre_trust {
            assert!(
                to_ours.get() && !to_planted.get(),
                "after pre-trust: planted {} ours {}: {ran:?}",
                to_planted.get(),
                to_ours.get()
            );
        } else {
            assert!(
                to_planted.get(),
                "control: the planted base URL should take the request: {ran:?}"
            );
        }
    }
}

/// Why Claude keeps an entry per chat: Claude Code 2.1.197 trusts a project's own settings only
/// by the exact folder's entry. With an entry for the runtimes folder (a parent) it ignores the
/// allow rule of the runtime's `.claude/settings.json` ("this workspace has not been trusted"),
/// as with no entry (the control); with pre-trust's entry for the runtime it does not.
#[test]
fn claude_trusts_the_runtimes_project_settings_by_its_own_entry_not_by_a_parents() {
    let Some(claude) = require(
        "claude",
        "claude_trusts_the_runtimes_project_settings_by_its_own_entry_not_by_a_parents",
    ) else {
        return;
    };
    let s = Scratch::new();
    let settings = s.workdir.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, r#"{"permissions":{"allow":["Bash(ls:*)"]}}"#).unwrap();
    let ignored = "this workspace has not been trusted";
    let state = |projects: serde_json::Value| {
        s.write(
            ".claude.json",
            &serde_json::json!({"hasCompletedOnboarding": true, "projects": projects}).to_string(),
        );
    };
    let plain = ["-p", "hello"].map(str::to_owned).to_vec();
    let key = [
        ("ANTHROPIC_API_KEY", "sk-ant-stand-in-not-a-key"),
        // Nothing listens on port 9: the model call fails at once.
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
    ];
    let env = clean_env(&s.home, &Default::default(), &key);
    let parent = s.workdir.parent().unwrap().to_str().unwrap().to_owned();
    for (case, projects, trusted) in [
        ("no entry (control)", serde_json::json!({}), false),
        (
            "an entry for the runtimes folder",
            serde_json::json!({ parent: {"hasTrustDialogAccepted": true} }),
            false,
        ),
        ("pre-trust's entry", serde_json::json!({}), true),
    ] {
        state(projects);
        if trusted {
            prepare(
                &adapter_claude::Claude,
                &s.request(Shape::Structured, Mode::Full),
            );
        }
        let ran = run(&claude, &plain, &s.workdir, &env, Stdin::Null, LIMIT);
        let said = format!("{}{}", ran.stdout, ran.stderr);
        assert_eq!(
            !said.contains(ignored),
            trusted,
            "{case}: the project's settings trusted: {}, expected {trusted}: {ran:?}",
            !said.contains(ignored)
        );
    }
}

#[test]
fn claude_tui_shows_no_trust_screen_after_pre_trust() {
    let test = "claude_tui_shows_no_trust_screen_after_pre_trust";
    let Some(claude) = require("claude", test) else {
        return;
    };
    if !tmux_available(test) {
        return;
    }
    let trust = "trust this folder";
    let s = Scratch::new();
    // Gets the TUI as far as the trust screen without a login (checked with the pinned version, docs/agents.md); the stand-in key is
    // approved the way Claude records it (its last 20 characters) so no key dialog follows.
    let stand_in_key = "sk-ant-stand-in-not-a-key";
    s.write(
        ".claude.json",
        &serde_json::json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {"approved": [&stand_in_key[stand_in_key.len() - 20..]], "rejected": []},
        })
        .to_string(),
    );
    let key = [("ANTHROPIC_API_KEY", stand_in_key)];
    let req = s.request(Shape::Tmux, Mode::Full);

    let launch = adapter_claude::Claude
        .launch(&req, &cli_sandbox_tests::real_clis::DiskOnly)
        .unwrap();
    let pane = Tmux::start(
        &claude,
        &launch.args,
        &s.workdir,
        &clean_env(&s.home, &launch, &key),
    );
    let screen = pane.wait_for(&[trust], Duration::from_secs(90));
    assert!(
        screen.contains(trust),
        "control: expected the trust screen:\n{screen}"
    );
    drop(pane);

    let launch = prepare(&adapter_claude::Claude, &req);
    let pane = Tmux::start(
        &claude,
        &launch.args,
        &s.workdir,
        &clean_env(&s.home, &launch, &key),
    );
    let ready = ["? for shortcuts", "bypass permissions"];
    let screen = pane.wait_for(&ready, Duration::from_secs(90));
    assert!(!screen.contains(trust), "trust screen shown:\n{screen}");
    assert!(
        !screen.contains("WARNING"),
        "bypass warning shown:\n{screen}"
    );
    assert!(
        ready.iter().any(|r| screen.contains(r)),
        "the TUI did not get ready:\n{screen}"
    );
}

// ---------- Gemini CLI ----------

#[test]
fn gemini_accepts_our_argv_and_trusts_the_workdir_after_pre_trust() {
    let Some(gemini) = require(
        "gemini",
        "gemini_accepts_our_argv_and_trusts_the_workdir_after_pre_trust",
    ) else {
        return;
    };
    let s = Scratch::new();
    let mut req = s.request(Shape::Structured, Mode::Full);
    req.prompt = Some("hello".to_owned());
    // Without a login it stops at the auth check (exit 41), after saying whether it trusted the
    // folder: in an untrusted one it reduces `--approval-mode=yolo` to the default.
    let untrusted = "because the current folder is not trusted";

    // Control: the same argv, without the trust entry.
    let launch = adapter_gemini::Gemini
        .launch(&req, &cli_sandbox_tests::real_clis::DiskOnly)
        .unwrap();
    let env = clean_env(&s.home, &launch, &[]);
    let ran = run(&gemini, &launch.args, &s.workdir, &env, launch.stdin, LIMIT);
    assert_parsed("gemini", &ran);
    assert!(
        ran.stderr.contains(untrusted),
        "control: expected the untrusted notice: {ran:?}"
    );

    let launch = prepare(&adapter_gemini::Gemini, &req);
    let ran = run(&gemini, &launch.args, &s.workdir, &env, launch.stdin, LIMIT);
    assert_parsed("gemini", &ran);
    assert!(
        ran.status.is_some(),
        "gemini did not finish (waiting on stdin?)"
    );
    assert!(!ran.stderr.contains(untrusted), "still untrusted: {ran:?}");
    assert!(ran.stderr.contains("YOLO mode is enabled"), "{ran:?}");
    assert_ne!(
        ran.code(),
        Some(55),
        "exit 55 is the untrusted headless exit: {ran:?}"
    );
}

// ---------- Pi ----------

#[test]
fn pi_accepts_our_headless_argv() {
    let Some(pi) = require("pi", "pi_accepts_our_headless_argv") else {
        return;
    };
    let s = Scratch::new();
    let mut req = s.request(Shape::Structured, Mode::BridgeOnly);
    req.prompt = Some("-a prompt that looks like an option".to_owned());
    let launch = prepare(&adapter_pi::Pi, &req);
    let ran = run(
        &pi,
        &launch.args,
        &s.workdir,
        &clean_env(&s.home, &launch, &[]),
        launch.stdin,
        LIMIT,
    );
    assert_parsed("pi", &ran);
    assert!(
        ran.status.is_some(),
        "pi -p did not finish (waiting on stdin?)"
    );
    // Without a key it stops after opening the session, which it reports as JSON.
    assert!(ran.stdout.contains("\"type\":\"session\""), "{ran:?}");
}

// ---------- Inside our confinement ----------

/// The real CLI launched exactly as `cli-sandbox run` would (PreparedLaunch: our Linux helper,
/// the adapter's argv, pre-trust written) in a tmux pane, on the demo layout.
fn confined_in_tmux(
    cli: &str,
    program: &Path,
    demo: &launch::demo::Demo,
    extra_env: &[(&str, &str)],
) -> Tmux {
    let mut settings = demo.settings();
    settings.helper = Some(cli_sandbox_tests::cli_sandbox());
    // The build under test, wherever the clone lies (under /tmp a root chat could replace it).
    settings.accept_replaceable_helper = Some(cli_sandbox_tests::cli_sandbox());
    let mut ctx = launch::Context::load(&settings).unwrap();
    ctx.config.cli.insert(
        cli.to_owned(),
        sandbox_core::CliConfig {
            program: Some(program.to_owned()),
        },
    );
    let spec = launch::LaunchSpec {
        cli: cli.to_owned(),
        chat: demo.chat.clone(),
        grants: vec![sandbox_core::GrantRequest::parse(&demo.grant_arg()).unwrap()],
        shape: Shape::Tmux,
        mode: Mode::Full,
        mcp_bridge: None,
        prompt: None,
        model: None,
        extra_args: Vec::new(),
        denials: None,
        program: None,
    };
    let args = launch::PreparedLaunch::prepare(&ctx, &spec, &launch::probe()).unwrap();
    assert!(
        matches!(
            args.decision().backend,
            sandbox_core::Backend::Landlock { .. }
        ),
        "not confined: {}",
        args.decision().reason
    );
    args.pre_trust().unwrap();
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default());
    env.insert("HOME".to_owned(), demo.home.display().to_string());
    env.insert(
        "TMPDIR".to_owned(),
        cli_sandbox_tests::real_clis::scratch_tmp(&demo.home)
            .display()
            .to_string(),
    );
    env.insert("TERM".to_owned(), "xterm-256color".to_owned());
    env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
    env.extend(args.env().set.clone());
    for (k, v) in extra_env {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    let argv: Vec<String> = args
        .argv()
        .iter()
        .map(|a| a.to_str().unwrap().to_owned())
        .collect();
    Tmux::start(Path::new(&argv[0]), &argv[1..], args.cwd(), &env)
}

fn processes_mentioning(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(text) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn codex_confined_in_tmux_shows_no_trust_screen_and_leaves_no_daemon() {
    let test = "codex_confined_in_tmux_shows_no_trust_screen_and_leaves_no_daemon";
    let Some(codex) = require("codex", test) else {
        return;
    };
    if !tmux_available(test) || !cli_sandbox_tests::confinement_available(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let demo = launch::demo::Demo::create(dir.path()).unwrap();
    let config = demo.home.join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, CODEX_LOCAL_PROVIDER).unwrap();
    // Codex asks for trust only inside a git repository.
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&demo.runtime)
            .status()
            .unwrap()
            .success()
    );
    let pane = confined_in_tmux("codex", &codex, &demo, &[]);
    let ready = ["Ask Codex", "describe a task"];
    let screen = pane.wait_for(&ready, Duration::from_secs(90));
    assert!(
        !screen.contains("Trust this folder?"),
        "trust screen shown:\n{screen}"
    );
    assert!(
        ready.iter().any(|r| screen.contains(r)),
        "the TUI did not get ready:\n{screen}"
    );
    let marker = demo.root.display().to_string();
    assert!(
        !processes_mentioning(&marker).is_empty(),
        "the confined codex is not running"
    );
    drop(pane);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<String> = processes_mentioning(&marker)
            .into_iter()
            .chain(processes_mentioning("app-server"))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "processes outlived the chat: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn claude_confined_in_tmux_shows_no_trust_screen() {
    let test = "claude_confined_in_tmux_shows_no_trust_screen";
    let Some(claude) = require("claude", test) else {
        return;
    };
    if !tmux_available(test) || !cli_sandbox_tests::confinement_available(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let demo = launch::demo::Demo::create(dir.path()).unwrap();
    let stand_in_key = "sk-ant-stand-in-not-a-key";
    std::fs::write(
        demo.home.join(".claude.json"),
        serde_json::json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {"approved": [&stand_in_key[stand_in_key.len() - 20..]], "rejected": []},
        })
        .to_string(),
    )
    .unwrap();
    let pane = confined_in_tmux(
        "claude",
        &claude,
        &demo,
        &[("ANTHROPIC_API_KEY", stand_in_key)],
    );
    let ready = ["? for shortcuts", "bypass permissions"];
    let screen = pane.wait_for(&ready, Duration::from_secs(90));
    assert!(
        !screen.contains("trust this folder"),
        "trust screen shown:\n{screen}"
    );
    assert!(
        ready.iter().any(|r| screen.contains(r)),
        "the TUI did not get ready:\n{screen}"
    );
}

#[test]
fn run_trusts_then_starts_the_real_codex_confined() {
    let test = "run_trusts_then_starts_the_real_codex_confined";
    if require("codex", test).is_none() || !cli_sandbox_tests::confinement_available(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let demo = launch::demo::Demo::create(dir.path()).unwrap();
    let out = std::process::Command::new(cli_sandbox_tests::cli_sandbox())
        .args(["--config", demo.config.to_str().unwrap()])
        .args([
            "run",
            "--cli",
            "codex",
            "--chat",
            &demo.chat,
            "--grant",
            &demo.grant_arg(),
        ])
        .args(["--shape", "structured", "--", "--version"])
        .env("HOME", &demo.home)
        .env(
            "TMPDIR",
            cli_sandbox_tests::real_clis::scratch_tmp(&demo.home),
        )
        .env("PATH", cli_sandbox_tests::real_clis::path_with_real_clis())
        .env_remove("CODEX_HOME")
        .env_remove("AGENTWORKS_STATE_ROOT")
        .env_remove("XDG_DATA_HOME")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("0.171.0"), "{stdout}");
    // Trusted per launch: no entry in the person's config.
    let config = std::fs::read_to_string(demo.home.join(".codex/config.toml")).unwrap_or_default();
    assert!(
        !config.contains("projects"),
        "an entry in Codex's config:\n{config}"
    );
}
