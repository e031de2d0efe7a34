//! How cli-sandbox launches Anthropic's Claude Code (`claude`): one [`CliAdapter`], [`Claude`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments, environment
//! and settings entries a launch needs; the launcher applies them.
//!
//! Flags CHECKED against the real `@anthropic-ai/claude-code` 2.1.197 (npm, Linux x86_64, a
//! scratch `HOME`, never logged in; `tests/real_clis.rs` checks them again):
//!
//! | what | how | checked |
//! |---|---|---|
//! | own sandbox off (confined) | one `--settings=<json>` holding `sandbox.enabled=false` (the flag layer outranks user and project settings) | parses; the headless init event is read |
//! | approvals off (Full, confined) | `--dangerously-skip-permissions`, plus `skipDangerousModePermissionPrompt` in the same settings (the first interactive bypass run shows a warning otherwise) and `IS_SANDBOX=1` (as root it refuses the flag without it; it *is* sandboxed) | yes |
//! | pre-trust | `projects["<workdir>"].hasTrustDialogAccepted = true` in the person's `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), created 0600 | yes: the tmux pane shows no trust screen |
//! | MCP isolation | `--strict-mcp-config --mcp-config=<json>` with the bridge only (an empty server list without a bridge), and `enableAllProjectMcpServers` in the settings (a project `.mcp.json` still raises an approval dialog otherwise; with the strict flag those servers are not started) | yes: the person's stand-in server does not start; the init event lists only the bridge |
//! | headless | `-p --output-format=stream-json --verbose` (stream-json requires `--verbose`), stdin `/dev/null` | yes |
//! | bridge-only | `--tools=` (no built-in tool), `--allowedTools=mcp__<bridge>` and `--permission-mode=dontAsk` (what is not allowed is refused, never asked) | yes: the init event lists no built-in tool |
//! | `DISABLE_AUTOUPDATER=1` | no self-update from inside a chat | reported (the CLI's documentation), not checked here; set always |
//! | `CLAUDECODE` removed | a CLI started from inside a Claude Code session must not think it is nested | REPORTED only (2.1.197 `-p` runs with it set) |
//!
//! Screens that can stop an interactive (tmux) launch before the first prompt or at the first
//! tool call ("settled" says who keeps it away, "may the launch?" the decision):
//!
//! | screen | settled by | may the launch settle it? | checked |
//! |---|---|---|---|
//! | "Quick safety check … Yes, I trust this folder" | pre-trust entry (above) | yes: the chat's own folder | yes (`real_clis`) |
//! | bypass-permissions warning | `skipDangerousModePermissionPrompt` in `--settings` | yes: our sandbox replaces its permission stops | yes |
//! | project `.mcp.json` approval | `enableAllProjectMcpServers` in `--settings` (with `--strict-mcp-config` none of them starts) | yes: nothing is started by it | yes (`contract --agents`: the project server does not start) |
//! | "Detected a custom API key … Do you want to use this API key?" (`ANTHROPIC_API_KEY` in the environment, neither approved nor rejected in `customApiKeyResponses`) | tmux shape: the key's name (its last 20 characters, as Claude records it) added to `customApiKeyResponses.approved` in the person's `~/.claude.json`, under the lock, atomically | **yes, with a limit**: the key is in the environment the person runs AgentWorks' Claude chats with, and the headless shape (`-p`) already uses it without asking, so approving it makes the two shapes agree; nothing secret is written; a key the person *rejected* stays rejected (the launch adds nothing, Claude uses the login). The cost, stated: the approval is Claude's own, persistent, so the person's own interactive Claude with that key in its environment no longer asks either. No per-launch way was found: `apiKeyHelper` in `--settings` still shows the dialog while the variable is set | yes (`tests/screens.rs`: the dialog without it, work with it) |
//! | onboarding, theme | `hasCompletedOnboarding`, left to the person (see below) | no: the person's own first run | yes |
//!
//! What Claude reads at start and acts on (CHECKED against 2.1.197 unless marked REPORTED;
//! `tests/steering.rs` plants each class through Claude's own tools and shows it refused, with
//! a control that the same file written by the person is acted on). Read-only in every chat
//! ([`CliAdapter::acted_on`], `Rule::Settings`), a missing one created first:
//!
//! | place | what a chat could plant there | construction |
//! |---|---|---|
//! | `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`) | `hooks` (SessionStart ran), `statusLine`, `env` (`ANTHROPIC_BASE_URL`: every later conversation sent to the chat's server), `apiKeyHelper`, `permissions.ask` and `disableBypassPermissionsMode` (stop a pane at "Do you want to proceed?"), `enabledPlugins` | read-only; a missing one created as `{}` (an empty file is read as none: checked) |
//! | `~/.claude/CLAUDE.md`, `commands/`, `agents/`, `skills/`, `plugins/`, `output-styles/`, `rules/` | instructions loaded into every session, custom commands, subagents, skills, plugins (with their own hooks and MCP servers) | read-only (REPORTED: the folders' names from Claude's documentation) |
//! | the project's `.claude/settings.json` and `.claude/settings.local.json` in the runtime | hooks (checked: both ran) | `--setting-sources=user`: the project and local sources are not read at all (checked: their hooks do not run, the flag's own `--settings` still applies); the runtime's `.claude/` read-only besides |
//! | `CLAUDE.md`, `CLAUDE.local.md` in the runtime and in every folder above it a chat can write (`~`, the folders down to the state root) | instructions gathered walking up from the working folder | read-only, missing ones created empty (REPORTED: the walk) |
//! | the runtime's `.mcp.json` | project MCP servers | `--strict-mcp-config` (none starts); read-only besides |
//! | `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), Claude's state file | every key Claude acts on at start: `env`, copied into Claude's environment (checked: `ANTHROPIC_BASE_URL` there took the conversation); `primaryApiKey` (the login when no other is: the account a later chat runs under); `customApiKeyResponses.rejected` holding the launch's key and `hasCompletedOnboarding: false` (a later tmux launch stops at the login or onboarding); `oauthAccount`; user- and local-scope `mcpServers`; `projects[<path>]`'s trust, `allowedTools`, `mcpServers` and `hasClaudeMdExternalIncludesApproved` for a folder a later chat uses; and any key a later Claude adds | **read-only in every chat**, the class and not a list of keys (`tests/steering.rs` plants each of them with Claude's own Bash tool: refused on the disk, the planted base URL's listener never reached; control: the same `env` written by the person is acted on). Pre-trust, outside the chat and under the lock, writes what the launch needs first (our trust, the key's approval in the tmux shape) and empties an `env` left from before. Checked with 2.1.197, as root and as an ordinary user, headless and in tmux: it saves by a temporary file and a rename, falling back to writing in place; both refused, it goes on without a word on the screen, runs its tools and finishes its turns. What it then cannot save, and why that does not matter: `numStartups`, `tipsHistory`, `firstStartTime`, `userID` and `machineID` when missing (made again in memory at each start), migrations' markers (run again in memory), per-project `lastCost`/`lastSessionId`/`exampleFiles` (sessions themselves are in `~/.claude/projects/`, writable, so `--resume` works), `allowedTools` the person approves inside a chat (the bypass mode asks nothing), `claude mcp add` and `/config` changes made inside a chat (the person makes them outside) |
//!
//! State that stays writable: `~/.claude/projects/` (sessions), `history.jsonl`, `todos/`,
//! `shell-snapshots/`, `statsig/`, `.credentials.json` (token refresh). `~/.claude.json` no longer (above).
//!
//! Screens the shared settings raise: "Do you want to proceed?" (a `permissions.ask` rule or
//! `disableBypassPermissionsMode` in the person's settings, in spite of
//! `--dangerously-skip-permissions`): a chat can no longer plant them (read-only); where the
//! person set them, the launch is refused with a [`sandbox_core::SettingCheck`] naming the
//! file and the fix, before anything is written.
//!
//! Decisions where the facts were silent:
//!
//! - Every flag that takes several values is written `--flag=value`, and the prompt comes after
//!   `--`, so no flag swallows the prompt.
//! - The settings from every part (sandbox off, the bypass warning, project MCP approval) are
//!   merged into one `--settings` value: the flag is not additive.
//! - `CLAUDE_CONFIG_DIR` is read from the launcher's environment ([`PersonFiles::var`]), which
//!   the CLI inherits; a relative one is refused. `hasCompletedOnboarding` is left alone (the
//!   person's own login and onboarding are theirs).
//! - The trust entry is written for both shapes: `-p` skips the screen, but the entry is harmless
//!   and keeps one rule. Only the workdir is trusted; grants go in `--add-dir` (Full only), which
//!   raises no trust screen.
//! - `CLAUDE_CODE_SANDBOXED=1` (undocumented, skips the trust screen) is not used.

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, EnvChanges, FileEdit, FileFormat, LaunchRequest,
    McpIsolation, Mode, PersonFiles, PreTrust, SettingCheck, Shape, adapter_kit,
};
use serde_json::{Map, Value, json};

pub mod driving;
mod readiness;
/// `$CLAUDE_CONFIG_DIR`, else `~/.claude`: where Claude's user settings are.
const DIR: &str = "CLAUDE_CONFIG_DIR";

/// What Claude reads at start and acts on (the crate doc's table).
pub const ACTED_ON: &[ActedOn] = &[
    ActedOn::folder_file(DIR, ".claude", "settings.json", "{}"),
    ActedOn::folder_file(DIR, ".claude", "CLAUDE.md", ""),
    ActedOn::folder_folder(DIR, ".claude", "commands"),
    ActedOn::folder_folder(DIR, ".claude", "agents"),
    ActedOn::folder_folder(DIR, ".claude", "skills"),
    ActedOn::folder_folder(DIR, ".claude", "plugins"),
    ActedOn::folder_folder(DIR, ".claude", "output-styles"),
    ActedOn::folder_folder(DIR, ".claude", "rules"),
    // Its state file, `$CLAUDE_CONFIG_DIR/.claude.json` or `~/.claude.json`: read at start and
    // acted on (`env`, `primaryApiKey`, `customApiKeyResponses`, onboarding, MCP servers, each
    // project's trust and tools); pre-trust writes what the launch needs first.
    ActedOn::folder_file(DIR, "", ".claude.json", "{}"),
    ActedOn::runtime_folder(".claude"),
    ActedOn::runtime_file(".mcp.json", "{\"mcpServers\":{}}"),
    ActedOn::runtime_file("CLAUDE.md", ""),
    ActedOn::runtime_file("CLAUDE.local.md", ""),
    ActedOn::above_runtime_file("CLAUDE.md", ""),
    ActedOn::above_runtime_file("CLAUDE.local.md", ""),
];

/// Claude Code.
#[derive(Debug, Clone, Copy, Default)]
pub struct Claude;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Claude;

const SETTINGS: &str = "--settings=";

impl CliAdapter for Claude {
    fn driving(&self) -> Option<sandbox_core::Driving> {
        Some(driving::DRIVING)
    }

    /// Kept with `env = "allowlist"`: the login's keys and where its settings are.
    fn env_kept(&self) -> &'static [&'static str] {
        &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
        ]
    }

    fn readiness(
        &self,
        home: &Path,
        person: &dyn PersonFiles,
        is_set: &dyn Fn(&str) -> bool,
    ) -> Vec<sandbox_core::Readiness> {
        readiness::check(home, person, is_set)
    }

    fn name(&self) -> &'static str {
        "claude"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::Full, Mode::BridgeOnly]
    }

    /// From `claude --help` of the pinned CLI: the tool lists and permission modes, settings
    /// (hooks run commands), plugins, agents, MCP servers, extra folders for its tools, and the
    /// integrations that act outside (IDE, Chrome, worktrees, tmux, remote control).
    fn bridge_only_refused_args(&self) -> &'static [&'static str] {
        &[
            "--tools",
            "--allowedTools",
            "--allowed-tools",
            "--permission-mode",
            "--dangerously-skip-permissions",
            "--allow-dangerously-skip-permissions",
            "--settings",
            "--setting-sources",
            "--mcp-config",
            "--plugin-dir",
            "--plugin-url",
            "--agents",
            "--agent",
            "--add-dir",
            "--ide",
            "--chrome",
            "--worktree",
            "-w",
            "--tmux",
            "--remote-control",
        ]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    fn own_sandbox_off(&self, req: &LaunchRequest) -> Vec<String> {
        let mut args = vec![settings(json!({
            "sandbox": {"enabled": false},
            "skipDangerousModePermissionPrompt": true,
        }))];
        // Bridge-only allows the bridge by name instead (see `argv`).
        if req.mode == Mode::Full {
            args.push("--dangerously-skip-permissions".to_owned());
        }
        args
    }

    fn pre_trust(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        // The person's screens first: a refused launch writes nothing.
        for check in person_screens(&settings_file(req, person)?) {
            check.verdict(person)?;
        }
        let workdir = adapter_kit::utf8_workdir(&req.workdir, "cannot be a key in ~/.claude.json")?;
        let file = state_file(req, person)?;
        let mut edits = vec![FileEdit {
            file: file.clone(),
            format: FileFormat::Json,
            keys: vec![
                "projects".to_owned(),
                workdir.to_owned(),
                "hasTrustDialogAccepted".to_owned(),
            ],
            value: true.into(),
            create_mode: 0o600,
            action: Default::default(),
        }];
        // Claude copies the `env` of `~/.claude.json` into its own environment at start
        // (checked, 2.1.197: `ANTHROPIC_BASE_URL` there sent the conversation to that server).
        // `~/.claude.json` is read-only in every chat now (`ACTED_ON`), so no chat can plant one;
        // an `env` found there (left by a chat of an older launcher, or by a program outside) is
        // still emptied before each launch, so that it never reaches a chat's Claude. The person
        // keeps theirs in `settings.json`. Only an `env` with something in it is written (a
        // file without one is left as it is, so that `cli-sandbox end` gives it back byte for
        // byte).
        // A file that cannot be read here (a link into protected data) gets the edit all the
        // same: the launcher's guarded write refuses it there and names the file.
        let planted = match adapter_kit::read_settings(person, &file, FileFormat::Json) {
            Ok(state) => state
                .as_ref()
                .and_then(|s| s.get("env"))
                .is_some_and(|env| env != &json!({})),
            Err(_) => true,
        };
        if planted {
            edits.push(FileEdit {
                file: file.clone(),
                format: FileFormat::Json,
                keys: vec!["env".to_owned()],
                value: json!({}),
                create_mode: 0o600,
                action: Default::default(),
            });
        }
        if let Some(approval) = key_approval(req, person, &file)? {
            edits.push(approval);
        }
        Ok(PreTrust::edits(edits))
    }

    fn mcp_isolation(
        &self,
        req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError> {
        let mut servers = Map::new();
        if let Some(bridge) = &req.mcp_bridge {
            servers.insert(
                bridge.name.clone(),
                json!({
                    "type": "stdio",
                    "command": bridge.command,
                    "args": bridge.args,
                    "env": bridge.env,
                }),
            );
        }
        Ok(McpIsolation::args(vec![
            "--strict-mcp-config".to_owned(),
            format!("--mcp-config={}", json!({ "mcpServers": servers })),
            settings(json!({"enableAllProjectMcpServers": true})),
        ]))
    }

    fn env(&self, req: &LaunchRequest) -> EnvChanges {
        let mut env = EnvChanges::default();
        env.set
            .insert("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned());
        if req.confined {
            env.set.insert("IS_SANDBOX".to_owned(), "1".to_owned());
        }
        env.remove.push("CLAUDECODE".to_owned());
        env
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        if req.shape == Shape::Structured {
            args.extend(["-p", "--output-format=stream-json", "--verbose"].map(str::to_owned));
        }
        let (merged, rest) = merge_settings(
            parts
                .own_sandbox_off
                .into_iter()
                .chain(parts.pre_trust)
                .chain(parts.mcp),
        );
        args.extend(merged);
        args.extend(rest);
        // Only the person's user settings (read-only in every chat) and the flag's own: the
        // project's and the local settings in the runtime are not read.
        args.push("--setting-sources=user".to_owned());
        match req.mode {
            Mode::Full => adapter_kit::push_each_grant(&mut args, req, "--add-dir="),
            Mode::BridgeOnly => {
                args.push("--tools=".to_owned());
                if let Some(bridge) = &req.mcp_bridge {
                    args.push(format!("--allowedTools=mcp__{}", bridge.name));
                }
                args.push("--permission-mode=dontAsk".to_owned());
            }
        }
        if let Some(model) = &req.model {
            args.push(format!("--model={model}"));
        }
        adapter_kit::push_extra_and_prompt(&mut args, req);
        args
    }
}

fn settings(value: Value) -> String {
    format!("{SETTINGS}{value}")
}

/// One `--settings=` holding every part's settings (later parts win a shared key), and the
/// other arguments in their order.
fn merge_settings(args: impl Iterator<Item = String>) -> (Option<String>, Vec<String>) {
    let mut merged = Map::new();
    let mut rest = Vec::new();
    for arg in args {
        match arg
            .strip_prefix(SETTINGS)
            .map(serde_json::from_str::<Value>)
        {
            Some(Ok(Value::Object(part))) => merged.extend(part),
            _ => rest.push(arg),
        }
    }
    let merged = (!merged.is_empty()).then(|| settings(Value::Object(merged)));
    (merged, rest)
}

/// How Claude names an approved or rejected key in `customApiKeyResponses`: its last 20
/// characters.
fn key_name(key: &str) -> &str {
    let start = key.char_indices().rev().nth(19).map_or(0, |(at, _)| at);
    &key[start..]
}

/// In the tmux shape, `ANTHROPIC_API_KEY` in the environment that the person has neither
/// approved nor rejected raises "Detected a custom API key ... Do you want to use this API key?";
/// this approves it (see the crate doc for why). A key the person rejected stays rejected.
fn key_approval(
    req: &LaunchRequest,
    person: &dyn PersonFiles,
    file: &Path,
) -> Result<Option<FileEdit>, AdapterError> {
    if req.shape != Shape::Tmux {
        return Ok(None);
    }
    let Some(key) = person.var("ANTHROPIC_API_KEY").filter(|k| !k.is_empty()) else {
        return Ok(None);
    };
    let name = key_name(&key);
    let state = adapter_kit::read_settings(person, file, FileFormat::Json)?.unwrap_or_default();
    let listed = |list: &str| {
        state
            .pointer(&format!("/customApiKeyResponses/{list}"))
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|n| n.as_str() == Some(name)))
    };
    if listed("approved") || listed("rejected") {
        return Ok(None);
    }
    Ok(Some(FileEdit {
        file: file.to_owned(),
        format: FileFormat::Json,
        keys: vec!["customApiKeyResponses".to_owned(), "approved".to_owned()],
        value: name.into(),
        create_mode: 0o600,
        action: sandbox_core::EditAction::AddToList,
    }))
}

/// The person's settings that stop a pane at "Do you want to proceed?" even with
/// `--dangerously-skip-permissions` (checked): `permissions.disableBypassPermissionsMode` set to
/// `"disable"`, and any `permissions.ask` rule. Only the person can have set them (the file is
/// read-only in every chat), and only the person can decide to drop them: the launch is refused,
/// naming the file and the fix.
fn person_screens(file: &Path) -> Vec<SettingCheck> {
    let check = |key: &str, refused: Value, non_empty: bool, problem: &str| {
        SettingCheck {
        file: file.to_owned(),
        format: FileFormat::Json,
        keys: vec!["permissions".to_owned(), key.to_owned()],
        refused,
        or_non_empty_list: non_empty,
        problem: format!(
            "{problem}, which stops a confined Claude at \"Do you want to proceed?\" in spite of `--dangerously-skip-permissions` (our sandbox replaces Claude's own permission stops)"
        ),
        fix: "remove it from this file (keep it in the settings of the projects where you want it) and launch again".to_owned(),
    }
    };
    vec![
        check(
            "disableBypassPermissionsMode",
            "disable".into(),
            false,
            "`permissions.disableBypassPermissionsMode` is \"disable\"",
        ),
        check("ask", Value::Null, true, "`permissions.ask` holds rules"),
    ]
}

/// `$CLAUDE_CONFIG_DIR/settings.json`, or `~/.claude/settings.json`.
fn settings_file(req: &LaunchRequest, person: &dyn PersonFiles) -> Result<PathBuf, AdapterError> {
    Ok(
        match adapter_kit::absolute_var(person, "CLAUDE_CONFIG_DIR")? {
            Some(dir) => dir.join("settings.json"),
            None => req.home.join(".claude/settings.json"),
        },
    )
}

/// `$CLAUDE_CONFIG_DIR/.claude.json`, or `~/.claude.json`.
fn state_file(req: &LaunchRequest, person: &dyn PersonFiles) -> Result<PathBuf, AdapterError> {
    Ok(
        match adapter_kit::absolute_var(person, "CLAUDE_CONFIG_DIR")? {
            Some(dir) => dir.join(".claude.json"),
            None => req.home.join(".claude.json"),
        },
    )
}
