//! How cli-sandbox launches the Pi coding agent (`pi`): one [`CliAdapter`], [`Pi`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments and
//! environment a launch needs; the launcher applies them.
//!
//! Pi runs bridge-only, everywhere ([`Mode::BridgeOnly`] is its one mode), still wrapped by our
//! sandbox where there is one. Flags CHECKED against the real `@mariozechner/pi-coding-agent`
//! 0.73.1 (npm, Linux x86_64, a scratch `HOME`; `tests/real_clis.rs` checks them again):
//!
//! | what | how | checked |
//! |---|---|---|
//! | own sandbox off | nothing: Pi has no sandbox, no approval prompt, no trust screen | yes |
//! | built-in tools off | `--no-builtin-tools` | parses |
//! | MCP isolation | `--no-extensions`: Pi has no MCP of its own, only extensions may add it | yes: the contract's request records offer the model only the bridge's tools |
//! | the bridge | `-e <workdir>/.cli-sandbox-pi-bridge.js`, an extension the launch writes ([`LaunchFile`]); explicit `-e` paths load under `--no-extensions` | yes: `contract --agents` calls the stand-in bridge's tool through it |
//! | no start-up downloads | `--offline` and `PI_OFFLINE=1` | parses |
//! | headless | `-p --mode json`, stdin `/dev/null` (`-p` merges a piped stdin and waits for EOF) | yes |
//!
//! Screens that can stop an interactive (tmux) launch: none seen with 0.73.1 (no trust, no
//! approval, no key dialog; `contract --agents` runs its tmux shape with no key pressed). A
//! missing model or key is an error line, not a stop.
//!
//! What Pi reads at start and acts on (CHECKED against 0.73.1's resource loader unless marked
//! REPORTED; `tests/steering.rs` plants them from a chat and shows them refused). Read-only in
//! every chat ([`CliAdapter::acted_on`], `Rule::Settings`), a missing one created first. Pi's
//! bridge-only chat writes nothing itself; a chat of another CLI could:
//!
//! | place | what a chat could plant there | construction |
//! |---|---|---|
//! | `~/.pi/agent/settings.json` (or `$PI_CODING_AGENT_DIR`) | `packages` (code), the default provider and model | read-only, a missing one created as `{}` |
//! | `~/.pi/agent/models.json` | a provider's `baseUrl` (every later conversation sent to the chat's server) | read-only, a missing one created as `{}` |
//! | `~/.pi/agent/AGENTS.md`, `SYSTEM.md`, `APPEND_SYSTEM.md`, `extensions/`, `skills/`, `prompts/`, `tools/`, `git/` | the system prompt and instructions, extensions (code; not loaded under `--no-extensions`), skills, prompt templates, installed packages | read-only |
//! | the runtime's `.pi/`, and `AGENTS.md` in the runtime and in every folder above it a chat can write | project settings and system prompt; context files gathered walking up to `/` (the first of `AGENTS.md`, `CLAUDE.md` in each folder: an empty `AGENTS.md` ends the search there) | read-only, missing ones created empty |
//!
//! State that stays writable: `sessions/`, `auth.json` (token refresh).
//!
//! Decisions where the facts were silent, and what is out of reach:
//!
//! - **The bridge is an extension file.** Pi 0.73.1 has no MCP client and no MCP flag; it loads
//!   extensions (JavaScript or TypeScript, through jiti) with `-e <file>`. The launch writes
//!   `assets/mcp-bridge.js` with the [`sandbox_core::McpServer`] embedded as JSON into the chat's
//!   working folder (mode 0600: the bridge's environment may hold a token), replaced whole at
//!   every launch. The extension starts the bridge as a stdio MCP server (`initialize`,
//!   `tools/list`), registers each of its tools as a Pi tool with the server's own JSON schema,
//!   forwards each call (`tools/call`) and ends the server with the session. With
//!   `--no-builtin-tools` those are the only tools the model is offered. The file sits in the
//!   chat's own folder, so the chat could change it between launches; it is rewritten before each
//!   launch, and inside our sandbox it runs confined like Pi itself.
//! - Grants are not passed: Pi has no `--add-dir`, and with no tools it reads nothing itself.
//! - Pi's parser has no `--`: a message starting with `-` is taken for an option and one
//!   starting with `@` for a file to attach (checked). Such a prompt gets one leading space, which
//!   Pi keeps as text (checked).

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, EnvChanges, LaunchFile, LaunchRequest,
    McpIsolation, Mode, PersonFiles, Shape, adapter_kit,
};

pub mod driving;
mod readiness;

/// The extension that gives Pi the MCP bridge (`/*BRIDGE*/ null` is replaced by the server).
const BRIDGE_EXTENSION: &str = include_str!("../assets/mcp-bridge.js");

/// The extension's name inside the working folder.
pub const BRIDGE_FILE: &str = ".cli-sandbox-pi-bridge.js";

fn bridge_file(req: &LaunchRequest) -> PathBuf {
    req.workdir.join(BRIDGE_FILE)
}

/// `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
const DIR: &str = "PI_CODING_AGENT_DIR";

/// What Pi reads at start and acts on (the crate doc's table).
pub const ACTED_ON: &[ActedOn] = &[
    ActedOn::folder_file(DIR, ".pi/agent", "settings.json", "{}"),
    ActedOn::folder_file(DIR, ".pi/agent", "models.json", "{}"),
    ActedOn::folder_file(DIR, ".pi/agent", "AGENTS.md", ""),
    ActedOn::folder_file(DIR, ".pi/agent", "SYSTEM.md", ""),
    ActedOn::folder_file(DIR, ".pi/agent", "APPEND_SYSTEM.md", ""),
    ActedOn::folder_folder(DIR, ".pi/agent", "extensions"),
    ActedOn::folder_folder(DIR, ".pi/agent", "skills"),
    ActedOn::folder_folder(DIR, ".pi/agent", "prompts"),
    ActedOn::folder_folder(DIR, ".pi/agent", "tools"),
    ActedOn::folder_folder(DIR, ".pi/agent", "git"),
    ActedOn::runtime_folder(".pi"),
    ActedOn::runtime_file("AGENTS.md", ""),
    ActedOn::above_runtime_file("AGENTS.md", ""),
];

/// The Pi coding agent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pi;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Pi;

impl CliAdapter for Pi {
    fn driving(&self) -> Option<sandbox_core::Driving> {
        Some(driving::DRIVING)
    }

    /// Kept with `env = "allowlist"`: the login's keys and where its settings are.
    fn env_kept(&self) -> &'static [&'static str] {
        &[
            "PI_CODING_AGENT_DIR",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
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
        "pi"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::BridgeOnly]
    }

    /// From `pi --help` of the pinned CLI: the tool allowlist, extensions (which add tools),
    /// and the output mode (`rpc` takes `bash` commands from its client).
    fn bridge_only_refused_args(&self) -> &'static [&'static str] {
        &["--tools", "-t", "--extension", "-e", "--mode"]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    // No own sandbox to turn off and no trust screen (the form's defaults): see the crate doc.

    fn mcp_isolation(
        &self,
        _req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError> {
        Ok(McpIsolation::args(vec!["--no-extensions".to_owned()]))
    }

    fn files(&self, req: &LaunchRequest) -> Result<Vec<LaunchFile>, AdapterError> {
        let Some(bridge) = &req.mcp_bridge else {
            return Ok(Vec::new());
        };
        let server = serde_json::json!({
            "name": bridge.name,
            "command": bridge.command,
            "args": bridge.args,
            "env": bridge.env,
        });
        Ok(vec![LaunchFile {
            path: bridge_file(req),
            text: BRIDGE_EXTENSION.replacen("/*BRIDGE*/ null", &server.to_string(), 1),
            mode: 0o600,
        }])
    }

    fn env(&self, _req: &LaunchRequest) -> EnvChanges {
        let mut env = EnvChanges::default();
        env.set.insert("PI_OFFLINE".to_owned(), "1".to_owned());
        env
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        if req.shape == Shape::Structured {
            args.extend(["-p", "--mode", "json"].map(str::to_owned));
        }
        args.push("--no-builtin-tools".to_owned());
        adapter_kit::push_parts(&mut args, parts);
        if req.mcp_bridge.is_some() {
            args.push("-e".to_owned());
            args.push(bridge_file(req).to_string_lossy().into_owned());
        }
        args.push("--offline".to_owned());
        if let Some(model) = &req.model {
            args.push("--model".to_owned());
            args.push(model.clone());
        }
        args.extend(req.extra_args.iter().cloned());
        if let Some(prompt) = &req.prompt {
            args.push(if prompt.starts_with(['-', '@']) {
                format!(" {prompt}")
            } else {
                prompt.clone()
            });
        }
        args
    }
}
