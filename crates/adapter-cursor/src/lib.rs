//! How cli-sandbox launches the Cursor CLI (`cursor-agent`): one [`CliAdapter`], [`Cursor`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments a launch
//! needs; the launcher applies them.
//!
//! Every flag here is REPORTED, not checked: `cursor-agent` is installed by a script, not from a
//! package registry, and has not been run here. Treat each as a claim:
//!
//! | what | how | source |
//! |---|---|---|
//! | own sandbox off (confined) | `--sandbox disabled` | reported |
//! | commands without approval (confined) | `--force` (keeps hooks) | reported |
//! | pre-trust | `--trust` ("Trust the current workspace without prompting") | reported |
//! | working folder | `--workspace <workdir>` | reported |
//! | headless | `-p --output-format stream-json`, stdin `/dev/null` | reported |
//! | model | `--model <model>` | reported |
//! | MCP isolation | `--approve-mcps` is never passed: servers not approved for a workspace are silently not loaded, and each chat's runtime is a new workspace | reported |
//!
//! Screens that can stop an interactive (tmux) launch, all REPORTED (the CLI cannot be
//! installed here; public notes read through the search tool):
//!
//! | screen | settled by | may the launch settle it? |
//! |---|---|---|
//! | workspace trust on the first run in a folder (choices a / w / q) | `--trust` | yes: the chat's own folder |
//! | command approvals | `--force` (confined only) | yes: our sandbox replaces them |
//! | MCP server approval | never asked: `--approve-mcps` is not passed, unapproved servers are not loaded | n/a |
//! | first login (a browser) | not settled (`CURSOR_API_KEY` is the person's) | no: the person's credentials |
//!
//! Decisions where the facts were silent, and what is out of reach:
//!
//! - `--force` goes with the sandbox switch (confined only), not with pre-trust: it is an
//!   approval switch, and without our sandbox the CLI's own stops stay on.
//! - `--add-dir` is not passed: one source lists it, the official parameters page does not, and
//!   an unknown flag would stop every launch. Grants stay reachable by their absolute paths
//!   inside our sandbox (Cursor's own sandbox, which would confine it to the workspace, is off).
//! - The bridge is not given: no per-launch MCP flag is known, and a server added to the
//!   workspace's `.cursor/mcp.json` would need `--approve-mcps`, which approves every server.
//!   A Cursor chat therefore has its own tools and no bridge.
//! - Only [`Mode::Full`]: no flag is known that turns the built-in tools off.
//! - Headless in an untrusted folder it refuses and exits 0: the caller must read the output,
//!   not only the status.

//!
//! What Cursor reads at start and acts on, all REPORTED (not CHECKED: no binary here), from
//! public notes on the Cursor CLI's configuration files, hooks and MCP (read through the search
//! tool: the CLI's documented config files, `~/.cursor/cli-config.json` and the project's
//! `.cursor/cli.json`; hooks in `~/.cursor/hooks.json` and `<project>/.cursor/hooks.json`, which
//! run commands; MCP servers in `~/.cursor/mcp.json` and `.cursor/mcp.json`, found in parent
//! folders too; rules in `.cursor/rules/`, `AGENTS.md` and the older `.cursorrules`). Each is
//! read-only in every chat ([`CliAdapter::acted_on`], `Rule::Settings`), a missing one created
//! first in its neutral form:
//!
//! | place | what a chat could plant there | construction |
//! |---|---|---|
//! | `~/.cursor/cli-config.json` (or `$XDG_CONFIG_HOME/cursor/cli-config.json`) | `permissions` (allow or deny rules for every later chat) | read-only, a missing one `{}`. Not known: whether Cursor, which repairs missing fields in it, goes on when it cannot save it (Claude's `~/.claude.json` did); to check with a real binary |
//! | `~/.cursor/hooks.json` | hooks (commands run around every tool call and at session start) | read-only, a missing one `{"version":1,"hooks":{}}` (the version is required) |
//! | `~/.cursor/mcp.json` | MCP servers started in every later chat | read-only, a missing one `{"mcpServers":{}}` |
//! | `~/.cursor/rules/`, `commands/`, `skills/` | instructions, commands, skills | read-only |
//! | the runtime's `.cursor/` (`cli.json`, `hooks.json`, `mcp.json`, `rules/`), `.cursorrules`, `AGENTS.md` | the same at project level | read-only (the runtime: see SECURITY.md, Partly) |
//! | `.cursor/mcp.json` and `.cursor/cli.json` in the folders above the runtime a chat can write | servers and permissions found walking up | read-only, missing ones created |

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, LaunchRequest, McpIsolation, Mode, PersonFiles,
    PreTrust, Shape, adapter_kit,
};

/// `$XDG_CONFIG_HOME`: where Cursor's CLI keeps its config on Linux when it is set.
const XDG: &str = "XDG_CONFIG_HOME";

/// What Cursor reads at start and acts on (the crate doc's table, REPORTED).
pub const ACTED_ON: &[ActedOn] = &[
    ActedOn::home_file(".cursor/cli-config.json", "{}"),
    ActedOn::folder_file(XDG, ".config", "cursor/cli-config.json", "{}"),
    ActedOn::home_file(".cursor/hooks.json", "{\"version\":1,\"hooks\":{}}"),
    ActedOn::home_file(".cursor/mcp.json", "{\"mcpServers\":{}}"),
    ActedOn::home_folder(".cursor/rules"),
    ActedOn::home_folder(".cursor/commands"),
    ActedOn::home_folder(".cursor/skills"),
    ActedOn::runtime_folder(".cursor"),
    ActedOn::runtime_file(".cursorrules", ""),
    ActedOn::runtime_file("AGENTS.md", ""),
    ActedOn::above_runtime_file(".cursor/mcp.json", "{\"mcpServers\":{}}"),
    ActedOn::above_runtime_file(".cursor/cli.json", "{}"),
];

/// The Cursor CLI.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Cursor;

impl CliAdapter for Cursor {
    /// Kept with `env = "allowlist"`: the login's keys and where its settings are.
    fn env_kept(&self) -> &'static [&'static str] {
        &["CURSOR_API_KEY", "CURSOR_DATA_DIR"]
    }

    fn name(&self) -> &'static str {
        "cursor"
    }

    fn program(&self) -> &'static str {
        "cursor-agent"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::Full]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
        ["--sandbox", "disabled", "--force"]
            .map(str::to_owned)
            .to_vec()
    }

    fn pre_trust(
        &self,
        _req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        Ok(PreTrust::args(vec!["--trust".to_owned()]))
    }

    fn mcp_isolation(
        &self,
        _req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError> {
        // Out of reach: see the crate doc.
        Ok(McpIsolation::default())
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        if req.shape == Shape::Structured {
            args.extend(["-p", "--output-format", "stream-json"].map(str::to_owned));
        }
        args.push("--workspace".to_owned());
        args.push(req.workdir.to_string_lossy().into_owned());
        adapter_kit::push_parts(&mut args, parts);
        if let Some(model) = &req.model {
            args.push("--model".to_owned());
            args.push(model.clone());
        }
        adapter_kit::push_extra_and_prompt(&mut args, req);
        args
    }
}
