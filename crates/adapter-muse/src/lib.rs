//! How cli-sandbox launches Meta's Muse Code CLI (`muse`): one [`CliAdapter`], [`Muse`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments a launch
//! needs; the launcher applies them.
//!
//! Every flag here is REPORTED, not checked: `muse` is installed by a script, not from a package
//! registry, and has not been run here. Treat each as a claim:
//!
//! | what | how | source |
//! |---|---|---|
//! | own sandbox and approvals off (confined) | `--yolo` (also trusts the workspace for the run); Muse ships its own Seatbelt sandbox, on by default, which cannot run inside ours | reported |
//! | pre-trust | `--trust-workspace` (on its own, so trust holds even where `--yolo` is not passed) | reported |
//! | headless | `exec --json`, stdin `/dev/null` | reported |
//!
//! Screens that can stop an interactive (tmux) launch, all REPORTED: workspace trust and
//! approvals, settled by `--trust-workspace` and `--yolo` (above; may the launch? yes: the chat's
//! own folder, and our sandbox replaces its approvals). Nothing else is known (the CLI cannot be
//! installed here and no public notes on its first-run screens were found).
//!
//! Decisions where the facts were silent, and what is out of reach:
//!
//! - **MCP isolation is out of reach.** Muse reads MCP servers from
//!   `~/.config/muse/settings.json` and no per-launch MCP flag is known, so the person's own
//!   servers DO load and the bridge is not given. Said here and in the launcher's report until a
//!   flag is known.
//! - The prompt is passed as a positional argument after `--` (unverified: only
//!   `--prompt-file FILE` is reported for `exec`).
//! - No model flag is known: [`LaunchRequest::model`] is not passed (give it in `extra_args`).
//! - Grants are not passed (no `--add-dir` is known); they are reachable by absolute path inside
//!   our sandbox.
//! - Only [`Mode::Full`]: no flag is known that turns the built-in tools off.

//!
//! What Muse reads at start and acts on, REPORTED (not CHECKED: no binary here): only its
//! settings, `~/.config/muse/settings.json` (or under `$XDG_CONFIG_HOME`), which hold its MCP
//! servers (above). Read-only in every chat ([`CliAdapter::acted_on`], `Rule::Settings`), a
//! missing one created as `{}`: a chat can no longer plant a server there that every later
//! Muse starts (the person's own still load: MCP isolation stays out of reach). No public notes
//! on Muse's hooks, instruction files or project settings were found with the search tool
//! (what was found under the name is another program, a version-control tool): not declared,
//! said here as not known.

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, LaunchRequest, McpIsolation, Mode, PersonFiles,
    PreTrust, Shape, adapter_kit,
};

/// `$XDG_CONFIG_HOME`, else `~/.config`: where Muse's settings are (reported).
const XDG: &str = "XDG_CONFIG_HOME";

/// What Muse reads at start and acts on (the crate doc, REPORTED).
pub const ACTED_ON: &[ActedOn] = &[ActedOn::folder_file(
    XDG,
    ".config",
    "muse/settings.json",
    "{}",
)];

/// The Muse Code CLI.
#[derive(Debug, Clone, Copy, Default)]
pub struct Muse;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Muse;

impl CliAdapter for Muse {
    fn name(&self) -> &'static str {
        "muse"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::Full]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
        vec!["--yolo".to_owned()]
    }

    fn pre_trust(
        &self,
        _req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        Ok(PreTrust::args(vec!["--trust-workspace".to_owned()]))
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
            args.extend(["exec", "--json"].map(str::to_owned));
        }
        adapter_kit::push_parts(&mut args, parts);
        adapter_kit::push_extra_and_prompt(&mut args, req);
        args
    }
}
