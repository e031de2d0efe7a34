//! The adapters against the real CLIs, pinned in `tests/package.json` (install with
//! `npm ci --prefix tests`): each real parser accepts our argv, each CLI reads the trust entry we
//! wrote, and the person's own MCP server (a stand-in that leaves a marker file) does not start.
//! Every CLI runs with `HOME` in a scratch folder, a clean environment, and no login.
//!
//! Where a check could pass for the wrong reason, a control run without our part shows the
//! thing we prevent does happen (the trust screen appears, the person's server starts).
//!
//! A missing CLI skips its test loudly; `CLI_SANDBOX_REQUIRE_REAL_CLIS=1` makes it a failure.
//! Starting these CLIs inside our confinement is tested elsewhere (the contract).

use std::path::Path;
use std::time::Duration;

use cli_sandbox_tests::real_clis::{
    Scratch, Tmux, clean_env, prepare, require, run, run_until, stand_in_mcp_server,
    tmux_available,
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
        assert!(!all.contains(sign), "{cli} rejected our argv ({sign}):\n{all}");
    }
}

// ---------- Codex ----------

#[test]
fn codex_prompt_input_shows_its_sandbox_off_and_approval_never() {
    let Some(codex) = require("codex", "codex_prompt_input_shows_its_sandbox_off_and_approval_never")
    else {
        return;
    };
    let s = Scratch::new();
    s.write(".codex/config.toml", CODEX_LOCAL_PROVIDER);
    let launch = prepare(&adapter_codex::Codex, &s.request(Shape::Tmux, Mode::Full));
    // Our TUI argv (no prompt), then the debugging subcommand that renders the model's input.
    let mut args = launch.args.clone();
    args.extend(["debug", "prompt-input", "hello"].map(str::to_owned));
    let ran = run(&codex, &args, &s.workdir, &clean_env(&s.home, &launch, &[]), Stdin::Null, LIMIT);
    assert_parsed("codex", &ran);
    assert_eq!(ran.code(), Some(0), "{ran:?}");
    assert!(
        ran.stdout.contains("`sandbox_mode` is `danger-full-access`"),
        "sandbox not off:\n{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("Approval policy is currently never"), "{}", ran.stdout);
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
    let ran = run_until(&codex, &plain, &s.workdir, &env, Stdin::Null, LIMIT, &|out| {
        started(out) && person_marker.exists()
    });
    assert!(person_marker.exists(), "control: the stand-in should start without our flags: {ran:?}");
    std::fs::remove_file(&person_marker).unwrap();

    let mut req = s.request(Shape::Structured, Mode::Full);
    req.mcp_bridge = Some(bridge(&bridge_server, "agentworks"));
    req.prompt = Some("hello".to_owned());
    let launch = prepare(&adapter_codex::Codex, &req);
    let env = clean_env(&s.home, &launch, &[]);
    let ran = run_until(&codex, &launch.args, &s.workdir, &env, launch.stdin, LIMIT, &|out| {
        started(out) && bridge_marker.exists()
    });
    assert_parsed("codex", &ran);
    assert!(started(&ran.stdout), "codex exec never started its turn (waiting on stdin?): {ran:?}");
    assert!(bridge_marker.exists(), "the bridge did not start:\n{ran:?}");
    // Servers start side by side; give the person's one time it would have had.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!person_marker.exists(), "the person's MCP server started:\n{ran:?}");
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
    let launch = adapter_codex::Codex.launch(&req, &cli_sandbox_tests::real_clis::DiskOnly).unwrap();
    // Control: without the entry the screen appears.
    let pane = Tmux::start(&codex, &launch.args, &s.workdir, &clean_env(&s.home, &launch, &[]));
    let screen = pane.wait_for(&[trust], Duration::from_secs(30));
    assert!(screen.contains(trust), "control: expected the trust screen:\n{screen}");
    drop(pane);

    let launch = prepare(&adapter_codex::Codex, &req);
    let pane = Tmux::start(&codex, &launch.args, &s.workdir, &clean_env(&s.home, &launch, &[]));
    let screen = pane.wait_for(&ready, Duration::from_secs(30));
    assert!(!screen.contains(trust), "trust screen shown:\n{screen}");
    assert!(ready.iter().any(|r| screen.contains(r)), "the TUI did not get ready:\n{screen}");
}
