//! Golden tests of every adapter's launch (argv, env, stdin, pre-trust edits) for both shapes
//! and both modes, plus the error cases that must name the file and the fix. The person's files
//! are a fake: these tests check what the adapters *say*; `tests/real_clis.rs` checks what the
//! real CLIs do with it.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::io;
use std::path::{Path, PathBuf};

use sandbox_core::{
    Access, AdapterError, CliAdapter, CliLaunch, Grant, LaunchRequest, McpServer, Mode,
    PersonFiles, Shape,
};

#[derive(Default)]
struct FakePerson {
    files: BTreeMap<PathBuf, String>,
    vars: BTreeMap<String, String>,
}

impl PersonFiles for FakePerson {
    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        Ok(self.files.get(path).cloned())
    }
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

const HOME: &str = "/home/me";
const RUNTIME: &str = "/home/me/.local/share/AgentWorks/state/cli-runtimes/v1/chat-1";

fn person() -> FakePerson {
    let mut p = FakePerson::default();
    p.files.insert(
        PathBuf::from("/home/me/.codex/config.toml"),
        "model = \"o3\"\n[mcp_servers.mine]\ncommand = \"/usr/bin/mine\"\n[mcp_servers.\"dot.name\"]\ncommand = \"x\"\n"
            .to_owned(),
    );
    p
}

fn request(shape: Shape, mode: Mode) -> LaunchRequest {
    LaunchRequest {
        shape,
        mode,
        workdir: PathBuf::from(RUNTIME),
        home: PathBuf::from(HOME),
        grants: vec![
            Grant {
                path: PathBuf::from("/home/me/.local/share/AgentWorks/workspace-docs/workflows/w1"),
                access: Access::ReadWrite,
            },
            Grant {
                path: PathBuf::from("/home/me/.local/share/AgentWorks/workspace-docs/workflows/w2"),
                access: Access::ReadOnly,
            },
        ],
        mcp_bridge: Some(McpServer {
            name: "agentworks".to_owned(),
            command: "/opt/agentworks/bridge".to_owned(),
            args: vec!["--chat".to_owned(), "chat 1".to_owned()],
            env: BTreeMap::from([("AW_TOKEN".to_owned(), "t0k3n".to_owned())]),
        }),
        prompt: Some("fix the bug, then say \"done\"".to_owned()),
        model: Some("the-model".to_owned()),
        extra_args: vec!["--extra-from-config".to_owned()],
        confined: true,
        nonce: String::new(),
    }
}

fn render(program: &str, launch: &CliLaunch) -> String {
    let mut out = String::new();
    writeln!(out, "argv:").unwrap();
    writeln!(out, "  {program}").unwrap();
    for arg in &launch.args {
        writeln!(out, "  {arg}").unwrap();
    }
    writeln!(out, "env set:").unwrap();
    for (k, v) in &launch.env.set {
        writeln!(out, "  {k}={v}").unwrap();
    }
    writeln!(out, "env remove: {}", launch.env.remove.join(" ")).unwrap();
    writeln!(out, "stdin: {:?}", launch.stdin).unwrap();
    writeln!(out, "pre-trust edits:").unwrap();
    for e in &launch.pre_trust {
        writeln!(
            out,
            "  {:?} {:?} {} {:?} = {} (create {:o})",
            e.format,
            e.action,
            e.file.display(),
            e.keys,
            e.value,
            e.create_mode
        )
        .unwrap();
    }
    if !launch.files.is_empty() {
        writeln!(out, "files:").unwrap();
    }
    for f in &launch.files {
        // The text is the extension with the bridge embedded: its bridge line is what varies.
        let bridge = f
            .text
            .lines()
            .find(|l| l.starts_with("const BRIDGE ="))
            .unwrap_or("(no bridge line)");
        writeln!(
            out,
            "  {} (mode {:o}, {} lines): {bridge}",
            f.path.display(),
            f.mode,
            f.text.lines().count()
        )
        .unwrap();
    }
    out
}

/// The registry is the only list of adapters: a new CLI's golden files appear when its line is
/// added there (and `INSTA_UPDATE=always` writes them).
fn adapters() -> &'static [&'static dyn CliAdapter] {
    launch::registry::ADAPTERS
}

#[test]
fn golden_every_adapter_shape_and_mode() {
    let person = person();
    for adapter in adapters() {
        for shape in [Shape::Tmux, Shape::Structured] {
            for mode in [Mode::Full, Mode::BridgeOnly] {
                let name = format!(
                    "{}-{}-{}",
                    adapter.name(),
                    format!("{shape:?}").to_lowercase(),
                    mode.as_str()
                );
                let text = match adapter.launch(&request(shape, mode), &person) {
                    Ok(launch) => render(adapter.program(), &launch),
                    Err(e) => format!("refused: {e}\n"),
                };
                insta::assert_snapshot!(name, text);
            }
        }
    }
}

#[test]
fn golden_minimal_requests() {
    // No bridge, no prompt, no model, no grants, nobody's config: the smallest launch.
    let person = FakePerson::default();
    for adapter in adapters() {
        let mode = adapter.modes()[0];
        let mut req = request(Shape::Structured, mode);
        req.mcp_bridge = None;
        req.prompt = None;
        req.model = None;
        req.grants.clear();
        req.extra_args.clear();
        let launch = adapter.launch(&req, &person).unwrap();
        insta::assert_snapshot!(
            format!("{}-minimal", adapter.name()),
            render(adapter.program(), &launch)
        );
    }
}

#[test]
fn every_adapter_removes_the_multiplexer_variables() {
    for adapter in adapters() {
        let mode = adapter.modes()[0];
        let launch = adapter
            .launch(&request(Shape::Tmux, mode), &person())
            .unwrap();
        for leak in ["TMUX", "TMUX_PANE"] {
            assert!(
                launch.env.remove.iter().any(|r| r == leak),
                "{}",
                adapter.name()
            );
            assert!(!launch.env.set.contains_key(leak), "{}", adapter.name());
        }
    }
}

#[test]
fn unconfined_launches_keep_the_clis_own_sandbox() {
    for adapter in adapters() {
        for &mode in adapter.modes() {
            let mut req = request(Shape::Structured, mode);
            req.confined = false;
            let launch = adapter.launch(&req, &person()).unwrap();
            let joined = launch.args.join(" ");
            for flag in [
                "--dangerously-bypass-approvals-and-sandbox",
                "--dangerously-skip-permissions",
                "--sandbox disabled",
                "--yolo",
                "--sandbox=false",
                "sandbox\":{\"enabled\":false",
                "--force",
            ] {
                assert!(
                    !joined.contains(flag),
                    "{} {mode:?} unconfined passes {flag}: {joined}",
                    adapter.name()
                );
            }
            assert!(!launch.env.set.contains_key("GEMINI_SANDBOX"));
            assert!(!launch.env.set.contains_key("IS_SANDBOX"));
            // For every CLI, the ones listed above or not: none of the arguments that turn its
            // own sandbox off when confined.
            let off = adapter.own_sandbox_off(&request(Shape::Structured, mode));
            for arg in off {
                assert!(
                    !launch.args.contains(&arg),
                    "{} {mode:?} unconfined passes its own-sandbox-off {arg}: {joined}",
                    adapter.name()
                );
            }
        }
    }
}

#[test]
fn codex_with_no_config_and_no_bridge_passes_no_mcp_override() {
    let mut req = request(Shape::Structured, Mode::Full);
    req.mcp_bridge = None;
    let launch = adapter_codex::Codex
        .launch(&req, &FakePerson::default())
        .unwrap();
    assert!(
        !launch.args.iter().any(|a| a.starts_with("mcp_servers")),
        "{:?}",
        launch.args
    );
}

#[test]
fn codex_unparsable_config_names_the_file_and_line() {
    let mut p = FakePerson::default();
    p.files.insert(
        PathBuf::from("/home/me/.codex/config.toml"),
        "model = \"o3\"\n\n[mcp_servers\n".to_owned(),
    );
    let err = adapter_codex::Codex
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap_err();
    assert!(matches!(err, AdapterError::Unparsable { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("/home/me/.codex/config.toml"), "{message}");
    assert!(message.contains("line 3"), "{message}");
}

#[test]
fn codex_refuses_a_person_server_named_like_the_bridge() {
    let mut p = FakePerson::default();
    p.files.insert(
        PathBuf::from("/home/me/.codex/config.toml"),
        "[mcp_servers.agentworks]\nurl = \"http://example.invalid\"\n".to_owned(),
    );
    let err = adapter_codex::Codex
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap_err();
    assert!(err.to_string().contains("named `agentworks`"), "{err}");
}

#[test]
fn codex_and_claude_follow_their_home_variables() {
    let mut p = person();
    p.vars.insert("CODEX_HOME".into(), "/srv/codex-home".into());
    p.vars
        .insert("CLAUDE_CONFIG_DIR".into(), "/srv/claude".into());
    p.files.insert(
        PathBuf::from("/srv/codex-home/config.toml"),
        "[mcp_servers.other]\ncommand = \"x\"\n".into(),
    );
    let codex = adapter_codex::Codex
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap();
    assert_eq!(
        codex.pre_trust[0].file,
        Path::new("/srv/codex-home/config.toml")
    );
    assert!(
        codex
            .args
            .iter()
            .any(|a| a.contains("other = { enabled = false }")),
        "{:?}",
        codex.args
    );
    assert!(
        !codex.args.iter().any(|a| a.contains("mine")),
        "the default home is not read"
    );
    let claude = adapter_claude::Claude
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap();
    assert_eq!(
        claude.pre_trust[0].file,
        Path::new("/srv/claude/.claude.json")
    );

    p.vars.insert("CODEX_HOME".into(), "relative/codex".into());
    let err = adapter_codex::Codex
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("CODEX_HOME is not an absolute path"),
        "{err}"
    );
}

#[test]
fn agy_refuses_a_person_terminal_sandbox_inside_ours() {
    let mut p = FakePerson::default();
    let file = PathBuf::from("/home/me/.gemini/antigravity-cli/settings.json");
    p.files
        .insert(file.clone(), "{\"enableTerminalSandbox\": true}".into());
    let err = adapter_agy::Agy
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(&file.display().to_string()) && message.contains("enableTerminalSandbox"),
        "{message}"
    );
    p.files.insert(file.clone(), "{\"enableTerminalSandbox\": false, \"statusLine\": {\"type\": \"command\", \"command\": \"/gone/bin\"}}".into());
    adapter_agy::Agy
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap();
    p.files.insert(file.clone(), "{ not json".into());
    let err = adapter_agy::Agy
        .launch(&request(Shape::Tmux, Mode::Full), &p)
        .unwrap_err();
    assert!(matches!(err, AdapterError::Unparsable { .. }), "{err:?}");
}

#[test]
fn pi_prompt_that_looks_like_an_option_or_a_file_stays_text() {
    for prompt in ["-v", "@/etc/passwd"] {
        let mut req = request(Shape::Structured, Mode::BridgeOnly);
        req.prompt = Some(prompt.to_owned());
        let launch = adapter_pi::Pi.launch(&req, &person()).unwrap();
        assert_eq!(launch.args.last().unwrap(), &format!(" {prompt}"));
    }
}
