//! No screen stops an interactive (tmux) launch: each pinned CLI, in a real tmux pane, with a
//! realistic person's setup (a model with an announced successor, an API key in the environment,
//! older version stamps, a project `.mcp.json`, settings from a previous version, a granted
//! folder), reaches work and runs the first scripted tool call with no key pressed; the pane is
//! read with `tmux capture-pane`. The same launch without the setting that keeps a screen away
//! shows that screen, so the test can see it.
//!
//! The screens that settings in the shared home raise (Codex's "Hooks need review", Claude's "Do
//! you want to proceed?" from `permissions.ask`) are in `tests/steering.rs`: a chat can no longer
//! plant them, and the person's own Claude setting refuses the launch (docs/agents.md, the
//! screens table).
//!
//! The CLIs run unconfined here (the screens do not depend on the sandbox; `contract --agents`
//! runs the tmux shape confined), from the adapter's own launch for a confined request, with a
//! scratch HOME and TMPDIR that are removed afterwards.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cli_sandbox_tests::real_clis::{Scratch, Tmux, clean_env, require, tmux_available};
use sandbox_core::{Access, CliLaunch, Grant, Mode, PersonFiles, Shape};
use scripted_model::{Script, ScriptedModel, Step};

const LIMIT: Duration = Duration::from_secs(60);

/// The person's files on disk and the launcher's variables as the person set them.
struct Person {
    vars: BTreeMap<String, String>,
}

impl PersonFiles for Person {
    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        match std::fs::read_to_string(path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

/// One pane: the scripted model (one step: a shell command that leaves a marker), the person's
/// setup, the adapter's launch.
struct Setup {
    scratch: Scratch,
    model: ScriptedModel,
    marker: PathBuf,
    env: Vec<(String, String)>,
    grant: PathBuf,
}

impl Setup {
    fn new(cli: &str) -> Setup {
        let scratch = Scratch::new();
        let marker = scratch.workdir.join("first-tool-call");
        let model = ScriptedModel::start(Script {
            steps: vec![Step::Shell {
                command: format!("printf reached > {}", marker.display()),
            }],
            closing: "done".into(),
            fail_with: None,
        })
        .unwrap();
        let env = contract::agents::point_at_scripted_model(cli, &scratch.home, &model.base_url())
            .unwrap();
        let grant = scratch.home.join("workspace-docs/workflows/w1");
        std::fs::create_dir_all(&grant).unwrap();
        std::fs::create_dir_all(scratch.home.join("tmp")).unwrap();
        Setup {
            scratch,
            model,
            marker,
            env,
            grant,
        }
    }

    fn set_var(&mut self, name: &str, value: &str) {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// The adapter's launch for a confined tmux request with the grant and a prompt.
    fn launch(&self, cli: &str) -> CliLaunch {
        let adapter = launch::registry::find(cli).unwrap();
        let mode = if cli == "pi" {
            Mode::BridgeOnly
        } else {
            Mode::Full
        };
        let mut req = self.scratch.request(Shape::Tmux, mode);
        req.grants = vec![Grant {
            path: self.grant.clone(),
            access: Access::ReadWrite,
        }];
        req.prompt = Some("Run the scripted steps.".to_owned());
        let person = Person {
            vars: self.env.iter().cloned().collect(),
        };
        adapter.launch(&req, &person).unwrap()
    }

    /// The adapter's launch for a tmux request in `mode`, without a prompt; `confined` as the
    /// launcher would say.
    fn launch_without_prompt(
        &self,
        cli: &str,
        mode: Mode,
        confined: bool,
    ) -> Result<CliLaunch, sandbox_core::AdapterError> {
        let adapter = launch::registry::find(cli).unwrap();
        let mut req = self.scratch.request(Shape::Tmux, mode);
        req.confined = confined;
        let person = Person {
            vars: self.env.iter().cloned().collect(),
        };
        adapter.launch(&req, &person)
    }

    /// Starts the launch (its pre-trust edits already chosen by the caller) in a pane.
    fn start(&self, cli: &str, launch: &CliLaunch, edits: &[sandbox_core::FileEdit]) -> Tmux {
        cli_sandbox_tests::real_clis::apply_edits(&self.scratch.home, edits);
        let program = cli_sandbox_tests::real_clis::bin_dir().join(cli);
        let tmp = self.scratch.home.join("tmp").display().to_string();
        let mut extra: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        extra.push(("TMPDIR", &tmp));
        let env = clean_env(&self.scratch.home, launch, &extra);
        Tmux::start(&program, &launch.args, &self.scratch.workdir, &env)
    }

    fn write(&self, relative: &str, text: &str) {
        self.scratch.write(relative, text);
    }
}

/// The launch reached work: the first scripted tool call ran (its marker is on the disk and its
/// result came back), and the pane shows none of `screens`.
fn assert_reached_work(cli: &str, setup: &Setup, pane: &Tmux, screens: &[&str]) {
    let finished = setup.model.wait_finished(LIMIT);
    let screen = pane.capture();
    assert!(
        finished && setup.model.log().result(0).is_some(),
        "{cli}: the first tool call's result never came back; the pane:\n{screen}"
    );
    for s in screens {
        assert!(
            !screen.contains(s),
            "{cli}: the screen `{s}` is shown:\n{screen}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&setup.marker).unwrap_or_default(),
        "reached",
        "{cli}: the first tool call did not run"
    );
}

/// The control: without the setting, the pane shows `screen`; where the screen comes before the
/// first turn (`blocks` true) no tool call runs behind it. Gemini's added-folders dialog comes
/// up beside the first turn instead: the prompt given at start runs, and the dialog then holds
/// the pane, so the next message typed into it answers the dialog.
fn assert_shows(cli: &str, setup: &Setup, pane: &Tmux, screen: &str, blocks: bool) {
    let shown = pane.wait_for(&[screen], LIMIT);
    assert!(
        shown.contains(screen),
        "{cli}: control: expected the screen `{screen}`:\n{shown}"
    );
    std::thread::sleep(Duration::from_secs(1));
    if blocks {
        assert!(
            !setup.marker.exists(),
            "{cli}: control: a tool call ran behind the screen"
        );
    } else {
        assert!(
            pane.capture().contains(screen),
            "{cli}: control: the screen went away by itself"
        );
    }
}

fn git_init(dir: &Path) {
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git init");
}

fn ready(cli: &str, test: &str) -> bool {
    require(cli, test).is_some() && tmux_available(test)
}

// ---------- Codex ----------

/// A person whose model has an announced successor and who has never seen the announcement,
/// in a git repository, with an older version stamp.
fn codex_person(setup: &Setup) {
    let config = setup.scratch.home.join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let cut = text.find("[notice.model_migrations]").unwrap_or(text.len());
    std::fs::write(&config, &text[..cut]).unwrap();
    setup.write(
        ".codex/version.json",
        r#"{"latest_version":"0.170.0","last_checked_at":"2026-11-01T00:00:00Z","dismissed_version":null}"#,
    );
    git_init(&setup.scratch.workdir);
}

#[test]
fn codex_reaches_work_in_a_pane_with_a_model_that_has_a_successor() {
    let test = "codex_reaches_work_in_a_pane_with_a_model_that_has_a_successor";
    if !ready("codex", test) {
        return;
    }
    let screens = ["Try new model", "Trust this folder?", "Update available"];
    let setup = Setup::new("codex");
    codex_person(&setup);
    let launch = setup.launch("codex");
    let pane = setup.start("codex", &launch, &launch.pre_trust);
    assert_reached_work("codex", &setup, &pane, &screens);

    // Control: the same without the per-launch `notice.model_migrations`.
    let setup = Setup::new("codex");
    codex_person(&setup);
    let mut launch = setup.launch("codex");
    let at = launch
        .args
        .iter()
        .position(|a| a.starts_with("notice.model_migrations="))
        .expect("the launch marks the announcement as seen");
    launch.args.drain(at - 1..=at);
    let pane = setup.start("codex", &launch, &launch.pre_trust);
    assert_shows("codex", &setup, &pane, "Try new model", true);
}

#[test]
fn codex_model_migrations_table_matches_the_bundled_catalog() {
    let test = "codex_model_migrations_table_matches_the_bundled_catalog";
    let Some(codex) = require("codex", test) else {
        return;
    };
    let s = Scratch::new();
    let out = std::process::Command::new(codex)
        .args(["debug", "models", "--bundled"])
        .env_clear()
        .env("HOME", &s.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    let catalog: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found: Vec<(String, String)> = catalog["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| {
            Some((
                m["slug"].as_str()?.to_owned(),
                m["upgrade"]["model"].as_str()?.to_owned(),
            ))
        })
        .collect();
    found.sort();
    let mut table: Vec<(String, String)> = adapter_codex::MODEL_MIGRATIONS
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    table.sort();
    assert_eq!(table, found, "update adapter_codex::MODEL_MIGRATIONS");
}

// ---------- Claude Code ----------

const KEY: &str = "sk-ant-api03-a-key-nobody-approved-yet-0123";

/// A person with a key in the environment they have not been asked about, an older version
/// stamp, settings from a previous version and a project `.mcp.json`.
fn claude_person(setup: &mut Setup) {
    setup.set_var(
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-a-key-nobody-approved-yet-0123",
    );
    setup.write(
        ".claude.json",
        &serde_json::json!({
            "hasCompletedOnboarding": true,
            "lastOnboardingVersion": "1.0.17",
            "lastReleaseNotesSeen": "1.0.17",
            "numStartups": 41,
            "theme": "dark",
        })
        .to_string(),
    );
    setup.write(
        ".claude/settings.json",
        &serde_json::json!({"includeCoAuthoredBy": false, "permissions": {"allow": ["Bash(ls:*)"]}})
            .to_string(),
    );
    std::fs::write(
        setup.scratch.workdir.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"proj": {"command": "node", "args": ["-e", "0"]}}})
            .to_string(),
    )
    .unwrap();
}

#[test]
fn claude_reaches_work_in_a_pane_with_an_api_key_in_the_environment() {
    let test = "claude_reaches_work_in_a_pane_with_an_api_key_in_the_environment";
    if !ready("claude", test) {
        return;
    }
    let screens = [
        "Detected a custom API key",
        "trust this folder",
        "WARNING",
        "New MCP server",
    ];
    let mut setup = Setup::new("claude");
    claude_person(&mut setup);
    let launch = setup.launch("claude");
    let pane = setup.start("claude", &launch, &launch.pre_trust);
    assert_reached_work("claude", &setup, &pane, &screens);

    // Control: the same without the key's approval.
    let mut setup = Setup::new("claude");
    claude_person(&mut setup);
    let launch = setup.launch("claude");
    let edits: Vec<_> = launch
        .pre_trust
        .iter()
        .filter(|e| e.keys.first().map(String::as_str) != Some("customApiKeyResponses"))
        .cloned()
        .collect();
    assert_eq!(
        edits.len() + 1,
        launch.pre_trust.len(),
        "an approval is planned"
    );
    let pane = setup.start("claude", &launch, &edits);
    assert_shows("claude", &setup, &pane, "Detected a custom API key", true);
}

#[test]
fn claude_keeps_a_key_the_person_rejected() {
    let mut setup = Setup::new("claude");
    claude_person(&mut setup);
    setup.write(
        ".claude.json",
        &serde_json::json!({
            "hasCompletedOnboarding": true,
            // Claude names a key by its last 20 characters.
            "customApiKeyResponses": {"approved": [], "rejected": [&KEY[KEY.len() - 20..]]},
        })
        .to_string(),
    );
    let launch = setup.launch("claude");
    assert!(
        launch
            .pre_trust
            .iter()
            .all(|e| e.keys.first().map(String::as_str) != Some("customApiKeyResponses")),
        "{:?}",
        launch.pre_trust
    );
}

// ---------- Gemini CLI ----------

/// A person with settings from a previous version (the flat layout), whose chat has a grant.
fn gemini_person(setup: &Setup) {
    let path = setup.scratch.home.join(".gemini/settings.json");
    let mut settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    settings["theme"] = "Default".into();
    settings["hideTips"] = true.into();
    std::fs::write(&path, settings.to_string()).unwrap();
}

#[test]
fn gemini_reaches_work_in_a_pane_with_a_granted_folder() {
    let test = "gemini_reaches_work_in_a_pane_with_a_granted_folder";
    if !ready("gemini", test) {
        return;
    }
    let screens = [
        "Do you trust the following folders",
        "Do you trust this folder",
    ];
    let setup = Setup::new("gemini");
    gemini_person(&setup);
    let launch = setup.launch("gemini");
    let pane = setup.start("gemini", &launch, &launch.pre_trust);
    assert_reached_work("gemini", &setup, &pane, &screens);

    // Control: the same without the grant's trust entry.
    let setup = Setup::new("gemini");
    gemini_person(&setup);
    let launch = setup.launch("gemini");
    let grant = setup.grant.display().to_string();
    let edits: Vec<_> = launch
        .pre_trust
        .iter()
        .filter(|e| e.keys != [grant.clone()])
        .cloned()
        .collect();
    assert_eq!(
        edits.len() + 1,
        launch.pre_trust.len(),
        "the grant is trusted"
    );
    let pane = setup.start("gemini", &launch, &edits);
    assert_shows(
        "gemini",
        &setup,
        &pane,
        "Do you trust the following folders",
        false,
    );
}

// ---------- Pi ----------

#[test]
fn pi_reaches_work_in_a_pane_with_settings_from_a_previous_version() {
    let test = "pi_reaches_work_in_a_pane_with_settings_from_a_previous_version";
    if !ready("pi", test) {
        return;
    }
    // Pi shows no screen of its own (no trust, no approval, no key dialog): there is no control
    // to show one. After an update it prints the changelog into the transcript, which does not
    // wait for a key (checked: the tool call below runs with it on the pane). Its bridge-only launch has no tool but the bridge, so the first tool call
    // here is the bridge's (the stand-in of `contract --agents` is not needed: Pi's own `bash`
    // is turned back on for this check of the pane only).
    let setup = Setup::new("pi");
    let path = setup.scratch.home.join(".pi/agent/settings.json");
    let mut settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    settings["lastChangelogVersion"] = "0.50.0".into();
    settings["theme"] = "dark".into();
    std::fs::write(&path, settings.to_string()).unwrap();
    let mut launch = setup.launch("pi");
    launch.args.retain(|a| a != "--no-builtin-tools");
    let pane = setup.start("pi", &launch, &launch.pre_trust);
    assert_reached_work("pi", &setup, &pane, &[]);
}

// ---------- The pane's shell escape ----------

/// Bridge-only in a pane: a line typed into Claude's or Pi's pane that starts with `!` runs a
/// shell as the launcher's user, with the model's tools off. The control types one into the
/// pinned CLI's bridge-only pane, unconfined, and sees the file it makes on the disk; where
/// nothing confines, the adapter refuses the pane (and `cli-sandbox` with it, exit 125: see
/// `tests/environments.rs`), so that line has nowhere to be typed.
#[test]
fn a_bang_line_typed_into_claudes_or_pis_pane_runs_a_shell_so_no_pane_where_nothing_confines() {
    for cli in ["claude", "pi"] {
        let test = "a_bang_line_typed_into_claudes_or_pis_pane_runs_a_shell_so_no_pane_where_nothing_confines";
        if !ready(cli, test) {
            return;
        }
        let mut setup = Setup::new(cli);
        if cli == "claude" {
            claude_person(&mut setup);
        }
        // The control: bridge-only, as a confined launch gives it, run without the sandbox.
        let launch = setup
            .launch_without_prompt(cli, Mode::BridgeOnly, true)
            .unwrap();
        let pane = setup.start(cli, &launch, &launch.pre_trust);
        let escaped = setup.scratch.workdir.join("escaped");
        let line = format!("!touch {}", escaped.display());
        let start = std::time::Instant::now();
        while !escaped.exists() && start.elapsed() < LIMIT {
            std::thread::sleep(Duration::from_secs(3));
            if !escaped.exists() {
                pane.send(&["-l", &line]);
                pane.send(&["Enter"]);
            }
        }
        assert!(
            escaped.exists(),
            "{cli}: the control: a `!` line typed into the bridge-only pane did not run; the pane:\n{}",
            pane.capture()
        );
        drop(pane);
        // Where nothing confines: no pane.
        let refused = setup.launch_without_prompt(cli, Mode::BridgeOnly, false);
        assert!(
            matches!(
                refused,
                Err(sandbox_core::AdapterError::UnconfinedPane { .. })
            ),
            "{cli}: a pane where nothing confines: {refused:?}"
        );
    }
}
