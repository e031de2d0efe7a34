//! How cli-sandbox launches Google's Antigravity CLI (`agy`): one [`CliAdapter`], [`Agy`].
//!
//! What it is not: it starts nothing, reads nothing and writes nothing. It names the person's
//! Agy setting that would break a launch (which the form reads) and says which arguments and
//! settings entries a launch needs; the launcher applies them.
//!
//! Every flag here is REPORTED, not checked: `agy` is installed by a script, not from a package
//! registry, and has not been run here. Its flags are Gemini-derived. Treat each as
//! a claim:
//!
//! | what | how | source |
//! |---|---|---|
//! | own sandbox off | never `--sandbox` (it turns Agy's terminal sandbox ON); a person's `enableTerminalSandbox: true` refuses the launch (below) | reported |
//! | approvals off (confined) | `--dangerously-skip-permissions` (tool approvals only) | reported |
//! | pre-trust | the exact workdir added to the `trustedWorkspaces` list in `~/.gemini/antigravity-cli/settings.json` (a parent does not count; no flag or variable skips the screen), created 0600 | reported |
//! | MCP isolation | `--allowed-mcp-server-names=<bridge>`, or a name no server has | reported |
//! | grants | `--add-dir=<grant>` each | reported |
//! | headless | `--prompt=<prompt>`, stdin `/dev/null` | reported |
//! | interactive prompt | `-i <prompt>` | reported |
//! | model | `--model=<model>` | reported |
//!
//! Screens that can stop an interactive (tmux) launch, all REPORTED (the CLI cannot be
//! installed here; public notes on agy 1.0.x, read through the search tool):
//!
//! | screen | settled by | may the launch settle it? |
//! |---|---|---|
//! | workspace trust (the exact folder) | pre-trust entry in `trustedWorkspaces` (above) | yes: the chat's own folder |
//! | tool approvals | `--dangerously-skip-permissions` (confined only) | yes: our sandbox replaces them |
//! | first login (OAuth in a browser) | not settled | no: the person's credentials |
//! | start-up self-update | `AGY_CLI_DISABLE_AUTO_UPDATE=T` in the environment | yes: an update belongs to the person, not to a chat |
//! | an empty `mcp_config.json` reported as an error at every start | not settled | no: the person's file; reported as an error line, not a stop |
//!
//! Decisions where the facts were silent, and what is out of reach:
//!
//! - **Terminal sandbox.** No per-launch switch is known that keeps the person's
//!   `enableTerminalSandbox: true` from turning Agy's own sandbox on inside ours (where it fails:
//!   a sandbox cannot start inside ours). Rather than change the person's setting behind their
//!   back, a confined launch with that setting on is refused (a [`SettingCheck`], so before
//!   anything is written) with [`AdapterError::Setting`] naming the file and the fix. Only the
//!   top-level key is read.
//! - **Stale `statusLine`.** No per-launch override of the person's `statusLine` command is known
//!   and an adapter cannot see whether the command's path exists, so a stale one is left as it
//!   is: if it breaks the launch, the person must fix or remove it. Unresolved.
//! - **The bridge is only allowed by name**, not given: no per-launch MCP config flag is known.
//! - **No JSON stream**: no output-format flag is reported, so the structured shape is `-p` text.
//! - Only [`Mode::Full`]: "there is no unconfined full mode", and no flag is known that turns the
//!   built-in tools off. Only the workdir is trusted (a grant added to `trustedWorkspaces` would
//!   stay trusted for the person's own, unconfined use of Agy).

//!
//! What Agy reads at start and acts on, all REPORTED (not CHECKED: no binary here), from public
//! notes on the Antigravity CLI (read through the search tool: it reuses Gemini CLI's `~/.gemini`
//! tree; hooks in `~/.gemini/antigravity-cli/hooks.json` and the project's `.agents/hooks.json`;
//! MCP servers in `~/.gemini/antigravity-cli/mcp_config.json`, the shared
//! `~/.gemini/config/mcp_config.json` and `.agents/mcp_config.json`; global rules in
//! `~/.gemini/GEMINI.md` and `~/.gemini/AGENTS.md`, project rules in `GEMINI.md`, `AGENTS.md`,
//! `.agents/rules/` and the older `.agent/`; workflows and skills in
//! `~/.gemini/antigravity/global_workflows/` and `global_skills/`, and `~/.gemini/skills/`). Each
//! is read-only in every chat ([`CliAdapter::acted_on`], `Rule::Settings`), a missing one created
//! first in its neutral form:
//!
//! | place | what a chat could plant there | construction |
//! |---|---|---|
//! | `~/.gemini/antigravity-cli/settings.json` | settings (the terminal sandbox switch, trust of other folders) | read-only; pre-trust writes our trust before the chat, a missing one `{}` |
//! | `~/.gemini/antigravity-cli/hooks.json`, `~/.gemini/config/hooks.json` | hooks (commands run at every tool call) | read-only, a missing one `{}` |
//! | `~/.gemini/antigravity-cli/mcp_config.json`, `~/.gemini/config/mcp_config.json` | MCP servers | read-only, a missing one `{"mcpServers":{}}` (an empty file is reported as an error at each start) |
//! | `~/.gemini/GEMINI.md`, `~/.gemini/AGENTS.md`, `~/.gemini/skills/`, `~/.gemini/antigravity/global_workflows/`, `global_skills/` | instructions, workflows, skills loaded into every session | read-only |
//! | the runtime's `.agents/`, `.agent/`, `GEMINI.md`, `AGENTS.md` | the same at project level | read-only (the runtime: see SECURITY.md, Partly) |

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, EditAction, EnvChanges, FileEdit, FileFormat,
    LaunchRequest, McpIsolation, Mode, PersonFiles, PreTrust, SettingCheck, Shape, adapter_kit,
};

/// What Agy reads at start and acts on (the crate doc's table, REPORTED).
pub const ACTED_ON: &[ActedOn] = &[
    ActedOn::home_file(".gemini/antigravity-cli/settings.json", "{}"),
    ActedOn::home_file(".gemini/antigravity-cli/hooks.json", "{}"),
    ActedOn::home_file(
        ".gemini/antigravity-cli/mcp_config.json",
        "{\"mcpServers\":{}}",
    ),
    ActedOn::home_file(".gemini/config/hooks.json", "{}"),
    ActedOn::home_file(".gemini/config/mcp_config.json", "{\"mcpServers\":{}}"),
    ActedOn::home_file(".gemini/GEMINI.md", ""),
    ActedOn::home_file(".gemini/AGENTS.md", ""),
    ActedOn::home_folder(".gemini/skills"),
    ActedOn::home_folder(".gemini/antigravity/global_workflows"),
    ActedOn::home_folder(".gemini/antigravity/global_skills"),
    ActedOn::runtime_folder(".agents"),
    ActedOn::runtime_folder(".agent"),
    ActedOn::runtime_file("GEMINI.md", ""),
    ActedOn::runtime_file("AGENTS.md", ""),
];

/// The Antigravity CLI.
#[derive(Debug, Clone, Copy, Default)]
pub struct Agy;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Agy;

impl CliAdapter for Agy {
    fn name(&self) -> &'static str {
        "agy"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::Full]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    fn checks(&self, req: &LaunchRequest) -> Vec<SettingCheck> {
        if !req.confined {
            return Vec::new();
        }
        vec![SettingCheck {
            or_non_empty_list: false,
            file: settings_file(req),
            format: FileFormat::Json,
            keys: vec!["enableTerminalSandbox".to_owned()],
            refused: true.into(),
            problem:
                "`enableTerminalSandbox` is true, and Agy's own sandbox cannot run inside ours"
                    .to_owned(),
            fix: "set it to false (or remove it) in that file and launch again".to_owned(),
        }]
    }

    fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
        vec!["--dangerously-skip-permissions".to_owned()]
    }

    fn pre_trust(
        &self,
        req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        let workdir =
            adapter_kit::utf8_workdir(&req.workdir, "cannot be listed in trustedWorkspaces")?;
        Ok(PreTrust::edits(vec![FileEdit {
            file: settings_file(req),
            format: FileFormat::Json,
            keys: vec!["trustedWorkspaces".to_owned()],
            value: workdir.into(),
            create_mode: 0o600,
            action: EditAction::AddToList,
        }]))
    }

    fn mcp_isolation(
        &self,
        req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError> {
        let allowed = adapter_kit::allowed_server_name(req);
        Ok(McpIsolation::args(vec![format!(
            "--allowed-mcp-server-names={allowed}"
        )]))
    }

    fn env(&self, _req: &LaunchRequest) -> EnvChanges {
        let mut env = EnvChanges::default();
        // No self-update (and no update check) from inside a chat.
        env.set
            .insert("AGY_CLI_DISABLE_AUTO_UPDATE".to_owned(), "T".to_owned());
        env
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        adapter_kit::push_parts(&mut args, parts);
        adapter_kit::push_each_grant(&mut args, req, "--add-dir=");
        if let Some(model) = &req.model {
            args.push(format!("--model={model}"));
        }
        args.extend(req.extra_args.iter().cloned());
        match (req.shape, &req.prompt) {
            (Shape::Structured, prompt) => {
                args.push(format!("--prompt={}", prompt.as_deref().unwrap_or("")));
            }
            (Shape::Tmux, Some(prompt)) => {
                args.push("-i".to_owned());
                args.push(prompt.clone());
            }
            (Shape::Tmux, None) => {}
        }
        args
    }
}

fn settings_file(req: &LaunchRequest) -> PathBuf {
    req.home.join(".gemini/antigravity-cli/settings.json")
}
