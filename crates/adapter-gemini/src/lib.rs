//! How cli-sandbox launches Google's Gemini CLI (`gemini`): one [`CliAdapter`], [`Gemini`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments, environment
//! and settings entries a launch needs; the launcher applies them.
//!
//! Flags CHECKED against the real `@google/gemini-cli` 0.61.0 (npm, Linux x86_64, a scratch
//! `HOME`, never logged in; `tests/real_clis.rs` checks them again):
//!
//! | what | how | checked |
//! |---|---|---|
//! | own sandbox off (confined) | `GEMINI_SANDBOX=false` (it overrides the flag) and `--sandbox=false` | parses |
//! | approvals off (confined) | `--approval-mode=yolo` (quietly reduced to the default in an untrusted folder, hence the trust entry) | parses |
//! | pre-trust | `{"<workdir>": "TRUST_FOLDER"}` in the person's `~/.gemini/trustedFolders.json` (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else `$GEMINI_CLI_HOME/.gemini/…`, as 0.61.0's source reads them), created 0600 | yes: headless in the workdir no longer exits 55 |
//! | added folders trusted | the same entry for each grant: in the tmux shape 0.61.0 asks "Do you trust the following folders being added to this workspace?" for every `--include-directories` folder not in the file, even in a trusted working folder | yes: `contract --agents` runs the tmux shape with a grant and no key pressed |
//! | MCP isolation | `--allowed-mcp-server-names=<bridge>`, or a name no server has when there is no bridge (an empty list allows every server) | parses |
//! | the bridge | written into the chat's own workspace settings, `<workdir>/.gemini/settings.json` `mcpServers.<bridge>` (there is no per-launch MCP flag; workspace settings load in a trusted folder) | written; not started in a test (no login) |
//! | grants | `--include-directories=<grant>` each (Full) | parses |
//! | headless | `--output-format=stream-json --prompt=<prompt>`, stdin `/dev/null` (`-p` appends a piped stdin) | parses |
//! | interactive prompt | `--prompt-interactive=<prompt>` (a bare positional prompt would also start interactively, but could be taken for a subcommand) | parses |
//!
//! Screens that can stop an interactive (tmux) launch before the first prompt or at the first
//! tool call ("settled" says who keeps it away, "may the launch?" the decision):
//!
//! | screen | settled by | may the launch settle it? | checked |
//! |---|---|---|---|
//! | folder trust (headless: exit 55) | pre-trust entry for the workdir | yes: the chat's own folder | yes |
//! | "Do you trust the following folders being added to this workspace?" (each `--include-directories` folder not trusted) | pre-trust entry for each grant | yes: the chat's own grants | yes (`tests/screens.rs`: without the entry the dialog comes up beside the first turn, the prompt given at start still runs, and then the dialog holds the pane, so the next message typed answers it; with it, no dialog) |
//! | approvals | `--approval-mode=yolo` (confined only) | yes | yes |
//! | auth method choice | the person's `security.auth.selectedType` | no: the person's credentials | yes (without it headless exits 41) |
//! | "True color not detected" | a warning line, not a stop | n/a | yes (seen in the pane) |
//!
//! What Gemini reads at start and acts on (CHECKED against 0.61.0 unless marked REPORTED;
//! `tests/steering.rs` plants them and shows them refused, with the person's control).
//! Read-only in every chat ([`CliAdapter::acted_on`], `Rule::Settings`), a missing one created
//! first:
//!
//! | place | what a chat could plant there | construction |
//! |---|---|---|
//! | `~/.gemini/settings.json` (or under `$GEMINI_CLI_HOME`) | `hooks` (SessionStart ran), `mcpServers`, `tools.discoveryCommand`, `advanced`, the auth type | read-only; a missing one created as `{}` (an empty file stops Gemini: "Unexpected end of JSON input", checked) |
//! | `~/.gemini/GEMINI.md`, `.env`, `commands/`, `skills/`, `agents/`, `policies/`, `extensions/`; `~/.agents/skills/` | instructions, environment (`BASH_ENV` ran code in later chats), custom commands, skills, subagents, policy rules (an `ask_user` rule is a screen), extensions (with their own MCP servers and hooks) | read-only |
//! | the runtime's `.gemini/` (`settings.json`, `.env`), `GEMINI.md`, `.agents/` | workspace hooks and MCP servers (the runtime is trusted) | read-only; `settings.json` is written by the launch (the bridge, `context.memoryBoundaryMarkers = []`), `.env` created empty, so that Gemini's walk for a `.env` (from the working folder up to the home, the first found wins) stops at the runtime |
//! | `GEMINI.md` in the folders above the runtime | instructions gathered up to a `.git` (a chat-made `~/.git` made Gemini load `~/GEMINI.md`) | `context.memoryBoundaryMarkers = []` in the workspace settings the launch writes: no walk above the working folder ("An empty array disables parent traversal", Gemini's own schema) |
//!
//! MCP isolation relies on no fixed name: `--allowed-mcp-server-names` takes the bridge's name,
//! or without a bridge a name made per launch from the chat's runtime and a random part
//! ([`sandbox_core::adapter_kit::allowed_server_name`]), so that a server a chat names in
//! advance never matches. Servers from every source (user, workspace, extensions) are held to
//! it, and each source is read-only besides.
//!
//! State that stays writable: `~/.gemini/tmp/` (sessions, checkpoints), `history/`,
//! `trustedFolders.json` (the launch's pre-trust writes it), `installation_id`,
//! `oauth_creds.json` and `google_accounts.json` (token refresh), `projects.json`.
//!
//! Decisions where the facts were silent:
//!
//! - Values are written `--flag=value` so array flags swallow nothing and a prompt that starts
//!   with `-` stays a prompt.
//! - Only [`Mode::Full`]: the CLI has no switch that turns all of its built-in tools off
//!   (`--approval-mode=plan` still reads files), so bridge-only is not offered.
//! - **The home is not in Gemini's workspace.** Gemini's own file tools refuse any path outside
//!   the working folder and the `--include-directories` folders ("Path not in workspace"), on
//!   their own. The policy leaves the home open, and the chat reaches it through the shell tool
//!   anyway, so adding it would change no guarantee; it would cost: Gemini lists and scans its
//!   workspace folders for context (the whole home at every start), and every added folder must be
//!   trusted in the person's `trustedFolders.json`, where trusting the home would trust every
//!   folder under it for the person's own, unconfined use of Gemini. So the workspace is the
//!   chat's runtime and its grants; the home is reached through `run_shell_command`.
//! - Each grant is trusted persistently (not per run): `--skip-trust` and
//!   `GEMINI_CLI_TRUST_WORKSPACE` cover the working folder only. A grant is a folder of the chat's
//!   own workflow, which the person's AgentWorks already chose to open to the chat.
//! - The bridge's workspace-settings entry is a [`FileEdit`] on the chat's runtime, not on the
//!   person's files: the MCP isolation's edit ([`sandbox_core::McpIsolation`]), which the
//!   launcher applies after the pre-trust entries, the same way.

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, EnvChanges, FileEdit, FileFormat, LaunchRequest,
    McpIsolation, Mode, PersonFiles, PreTrust, Shape, adapter_kit,
};
use serde_json::json;

pub mod driving;
mod readiness;
/// `$GEMINI_CLI_HOME` replaces the home for Gemini's own folder.
const DIR: &str = "GEMINI_CLI_HOME";

/// What Gemini reads at start and acts on (the crate doc's table).
pub const ACTED_ON: &[ActedOn] = &[
    ActedOn::folder_file(DIR, "", ".gemini/settings.json", "{}"),
    ActedOn::folder_file(DIR, "", ".gemini/GEMINI.md", ""),
    ActedOn::folder_file(DIR, "", ".gemini/.env", ""),
    ActedOn::folder_folder(DIR, "", ".gemini/commands"),
    ActedOn::folder_folder(DIR, "", ".gemini/skills"),
    ActedOn::folder_folder(DIR, "", ".gemini/agents"),
    ActedOn::folder_folder(DIR, "", ".gemini/policies"),
    ActedOn::folder_folder(DIR, "", ".gemini/extensions"),
    ActedOn::home_folder(".agents/skills"),
    ActedOn::runtime_folder(".gemini"),
    ActedOn::runtime_file(".gemini/.env", ""),
    ActedOn::runtime_file("GEMINI.md", ""),
    ActedOn::runtime_folder(".agents"),
];

/// The Gemini CLI.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gemini;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Gemini;

impl CliAdapter for Gemini {
    fn driving(&self) -> Option<sandbox_core::Driving> {
        Some(driving::DRIVING)
    }

    /// Kept with `env = "allowlist"`: the login's keys and where its settings are.
    fn env_kept(&self) -> &'static [&'static str] {
        &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_GENAI_USE_VERTEXAI",
            "GEMINI_CLI_HOME",
        ]
    }

    fn readiness(
        &self,
        home: &std::path::Path,
        person: &dyn PersonFiles,
        is_set: &dyn Fn(&str) -> bool,
    ) -> Vec<sandbox_core::Readiness> {
        readiness::check(home, person, is_set)
    }

    fn name(&self) -> &'static str {
        "gemini"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::Full]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
        vec![
            "--sandbox=false".to_owned(),
            "--approval-mode=yolo".to_owned(),
        ]
    }

    fn pre_trust(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        // One entry for the runtimes folder trusts every chat's runtime below it
        // (`TRUST_FOLDER` covers the folders below the key).
        let workdir =
            adapter_kit::utf8_runtimes(&req.workdir, "cannot be a key in trustedFolders.json")?;
        let trusted = trusted_folders_file(req, person)?;
        let trust = |folder: &str| FileEdit {
            file: trusted.clone(),
            format: FileFormat::Json,
            keys: vec![folder.to_owned()],
            value: "TRUST_FOLDER".into(),
            create_mode: 0o600,
            action: Default::default(),
        };
        let mut edits = vec![trust(workdir)];
        if req.mode == Mode::Full {
            for grant in &req.grants {
                let path =
                    adapter_kit::utf8_grant(&grant.path, "cannot be a key in trustedFolders.json")?;
                edits.push(trust(path));
            }
        }
        Ok(PreTrust::edits(edits))
    }

    fn mcp_isolation(
        &self,
        req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError> {
        let allowed = adapter_kit::allowed_server_name(req);
        let mut isolation =
            McpIsolation::args(vec![format!("--allowed-mcp-server-names={allowed}")]);
        // Context files only from the working folder: no walk above it, where a chat could
        // leave a `.git` and a `GEMINI.md` in the home.
        isolation.edits.push(FileEdit {
            file: req.workdir.join(".gemini/settings.json"),
            format: FileFormat::Json,
            keys: vec!["context".to_owned(), "memoryBoundaryMarkers".to_owned()],
            value: json!([]),
            create_mode: 0o600,
            action: Default::default(),
        });
        // No per-launch MCP flag: the bridge goes into the chat's own workspace settings.
        if let Some(bridge) = &req.mcp_bridge {
            isolation.edits.push(FileEdit {
                file: req.workdir.join(".gemini/settings.json"),
                format: FileFormat::Json,
                keys: vec!["mcpServers".to_owned(), bridge.name.clone()],
                value: json!({
                    "command": bridge.command,
                    "args": bridge.args,
                    "env": bridge.env,
                }),
                create_mode: 0o600,
                action: Default::default(),
            });
        }
        Ok(isolation)
    }

    fn env(&self, req: &LaunchRequest) -> EnvChanges {
        let mut env = EnvChanges::default();
        if req.confined {
            env.set
                .insert("GEMINI_SANDBOX".to_owned(), "false".to_owned());
        }
        env
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        adapter_kit::push_parts(&mut args, parts);
        if req.mode == Mode::Full {
            adapter_kit::push_each_grant(&mut args, req, "--include-directories=");
        }
        if let Some(model) = &req.model {
            args.push(format!("--model={model}"));
        }
        args.extend(req.extra_args.iter().cloned());
        match (req.shape, &req.prompt) {
            (Shape::Structured, prompt) => {
                args.push("--output-format=stream-json".to_owned());
                args.push(format!("--prompt={}", prompt.as_deref().unwrap_or("")));
            }
            (Shape::Tmux, Some(prompt)) => args.push(format!("--prompt-interactive={prompt}")),
            (Shape::Tmux, None) => {}
        }
        args
    }
}

/// Where 0.61.0 reads the trusted folders: `GEMINI_CLI_TRUSTED_FOLDERS_PATH`, else
/// `<GEMINI_CLI_HOME or home>/.gemini/trustedFolders.json`.
fn trusted_folders_file(
    req: &LaunchRequest,
    person: &dyn PersonFiles,
) -> Result<PathBuf, AdapterError> {
    if let Some(file) = adapter_kit::absolute_var(person, "GEMINI_CLI_TRUSTED_FOLDERS_PATH")? {
        return Ok(file);
    }
    let home =
        adapter_kit::absolute_var(person, "GEMINI_CLI_HOME")?.unwrap_or_else(|| req.home.clone());
    Ok(home.join(".gemini/trustedFolders.json"))
}
