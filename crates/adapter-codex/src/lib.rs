//! How cli-sandbox launches OpenAI's Codex CLI (`codex`): one [`CliAdapter`], [`Codex`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments, environment
//! and settings entries a launch needs; the launcher applies them.
//!
//! Every flag below is CHECKED against the real `@openai/codex` 0.171.0 (installed from npm on
//! Linux x86_64, `HOME` pointed at a scratch folder, never logged in; `tests/real_clis.rs` checks
//! them again):
//!
//! | what | how | checked |
//! |---|---|---|
//! | own sandbox and approvals off (confined only) | `--dangerously-bypass-approvals-and-sandbox`, accepted by the TUI and by `exec` alike | yes: `codex debug prompt-input` reports `danger-full-access` and approval `never` |
//! | no shared daemon (TUI) | `--no-daemon` | yes (`exec` has no daemon and no such flag) |
//! | working folder | `-C <workdir>` | yes |
//! | pre-trust | per launch, `-c projects={"<workdir>"={trust_level="trusted"}}`; nothing is written to the person's `$CODEX_HOME/config.toml` (an entry there per chat made the file grow by one per chat; one for the runtimes folder leaves the project's config out) | yes: the TUI shows no trust screen, the runtime's project config is read |
//! | headless | `exec --json --skip-git-repo-check`, stdin `/dev/null` (`exec` reads a piped stdin to EOF) | yes |
//! | MCP isolation | one `-c mcp_servers={<each server>={enabled=false}, <bridge>={command=…}}`, each server of the person's config and of the runtime's project config (`<workdir>/.codex/config.toml`) turned off by name | yes: `codex mcp list` shows them disabled and a stand-in server does not start (`tests/steering.rs`: one in the runtime's project config does not start either) |
//!
//! Screens that can stop an interactive (tmux) launch before the first prompt or at the first
//! tool call ("settled" says who keeps it away, "may the launch?" the decision):
//!
//! | screen | settled by | may the launch settle it? | checked |
//! |---|---|---|---|
//! | "Trust this folder?" | pre-trust `-c` for the workdir (above) | yes: the chat's own folder | yes (`real_clis`) |
//! | approvals, sandbox warnings | `--dangerously-bypass-approvals-and-sandbox` (confined only) | yes: our sandbox replaces them | yes |
//! | "Meet GPT-6 Sol … 1. Try new model 2. Use existing model" (the chat's model has an announced successor) | per launch, TUI only: `-c notice.model_migrations={"<model>"="<successor>"}` from [`MODEL_MIGRATIONS`] (the successor must be the catalog's own: any other value, or `-m`, still shows it); nothing is written to the person's file | yes: it keeps the model the person chose (what "Use existing model" does) and leaves the announcement for the person's own next run | yes (`tests/screens.rs`: the screen without it, work with it) |
//! | login screen | the person's own login or provider | no: the person's credentials | yes (a local provider gets past it) |
//! | update prompt, telemetry | none seen with `check_for_update_on_startup` untouched and no network | left to the person | REPORTED |
//!
//! What Codex reads at start and acts on (CHECKED against 0.171.0 unless marked REPORTED;
//! `tests/steering.rs` plants them and shows them refused, with the person's control).
//! Read-only in every chat ([`CliAdapter::acted_on`], `Rule::Settings`), a missing one created
//! first:
//!
//! | place | what a chat could plant there | construction |
//! |---|---|---|
//! | `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`) | `notify` (runs after each turn, also in `exec`), `[mcp_servers.*]`, `[features] codex_hooks`, a model provider's `base_url` (every later conversation sent to the chat's server), `model_instructions_file` | read-only; a missing one created empty (checked: read as none). The launch's own per-launch `-c` overrides (MCP isolation, trust of the runtime) still apply |
//! | `$CODEX_HOME/hooks.json` | hooks; new ones stop the TUI at "Hooks need review" | read-only, a missing one created empty (checked: an empty one raises no screen and runs nothing) |
//! | `$CODEX_HOME/AGENTS.md`, `AGENTS.override.md`, `prompts/`, `skills/`, `rules/`, `plugins/`; `~/.agents/skills/` | instructions in every session, custom prompts, skills, exec-policy rules, plugins | read-only. Codex installs its bundled skills into `skills/.system` at start: inside a chat where it was not installed before, that write fails and Codex goes on without them (checked) |
//! | the runtime's `.codex/` (`config.toml`, `hooks.json`), `AGENTS.md`, `AGENTS.override.md`, `.agents/` | project config in a trusted folder (the runtime is one): an MCP server there started at the chat's next launch | read-only; `-c project_root_markers=[]` so that Codex takes the runtime for the project root and never walks above it for project config or `AGENTS.md` (a chat-made `~/.git` would otherwise make the home the project) |
//!
//! State that stays writable: `sessions/`, `history.jsonl`, `log/`, `auth.json` (token
//! refresh), `version.json`, `shell_snapshots/`, `installation_id`.
//!
//! Screens the shared settings raise: "Hooks need review" (hooks in `hooks.json` or
//! `config.toml` not yet reviewed): a chat can no longer plant them; hooks the person set and
//! reviewed raise nothing; hooks the person set and never reviewed are the person's to review in
//! their own Codex (the screen in a pane says so).
//!
//! Decisions where the facts were silent:
//!
//! - `-c` merges tables deeply, so a server is disabled by merging `enabled=false` into it. The
//!   inline-table form is used because the dotted form (`mcp_servers."a.b".enabled`) keeps the
//!   quotes literally and cannot reach a name with a dot, which Codex accepts.
//! - A person's server named like the bridge is refused ([`AdapterError::Setting`]): the merge
//!   would mix their server's fields (`env`, `cwd`, `url`) into the bridge.
//! - `CODEX_HOME` is read from the launcher's environment ([`PersonFiles::var`]), which the CLI
//!   inherits; a relative one is refused. With no config file at all, nothing is disabled and a
//!   launch without a bridge gets no `-c` at all.
//! - The trust entry is written for both shapes (one entry per chat runtime, kept for the person
//!   to see), though `exec` never shows the screen.
//! - Grants are not passed as `--add-dir`: with Codex's sandbox off it only widens a sandbox that
//!   is not there; ours enforces them.
//! - Bridge-only is not offered: 0.171.0's built-in tools (a JavaScript `exec` with nested shell
//!   and patch tools, browser and computer use, …) have no single switch that turns them all
//!   off, so the mode would be a claim we cannot check. Only [`Mode::Full`] (always confined).
//! - MCP servers that plugins or profiles bring are not read (`-p PROFILE` is not passed).

// An adapter describes its CLI; nothing here needs `unsafe`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use sandbox_core::{
    ActedOn, AdapterError, ArgvParts, CliAdapter, EditAction, FileEdit, FileFormat, LaunchRequest,
    McpIsolation, Mode, PersonFiles, PreTrust, Shape, adapter_kit,
};

pub mod driving;
mod readiness;
/// `$CODEX_HOME`, else `~/.codex`.
const DIR: &str = "CODEX_HOME";

/// What Codex reads at start and acts on (the crate doc's table).
pub const ACTED_ON: &[ActedOn] = &[
    ActedOn::folder_file(DIR, ".codex", "config.toml", ""),
    ActedOn::folder_file(DIR, ".codex", "hooks.json", ""),
    ActedOn::folder_file(DIR, ".codex", "AGENTS.md", ""),
    ActedOn::folder_file(DIR, ".codex", "AGENTS.override.md", ""),
    ActedOn::folder_folder(DIR, ".codex", "prompts"),
    ActedOn::folder_folder(DIR, ".codex", "skills"),
    ActedOn::folder_folder(DIR, ".codex", "rules"),
    ActedOn::folder_folder(DIR, ".codex", "plugins"),
    ActedOn::home_folder(".agents/skills"),
    ActedOn::runtime_folder(".codex"),
    ActedOn::runtime_folder(".agents"),
    ActedOn::runtime_file("AGENTS.md", ""),
    ActedOn::runtime_file("AGENTS.override.md", ""),
];

/// The Codex CLI.
#[derive(Debug, Clone, Copy, Default)]
pub struct Codex;

/// What the registry lists (the convention of every adapter crate).
pub static ADAPTER: &dyn CliAdapter = &Codex;

impl CliAdapter for Codex {
    fn driving(&self) -> Option<sandbox_core::Driving> {
        Some(driving::DRIVING)
    }

    /// Kept with `env = "allowlist"`: the login's keys and where its settings are.
    fn env_kept(&self) -> &'static [&'static str] {
        &[
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "CODEX_API_KEY",
            "CODEX_HOME",
        ]
    }

    fn readiness(
        &self,
        home: &Path,
        person: &dyn PersonFiles,
        _is_set: &dyn Fn(&str) -> bool,
    ) -> Vec<sandbox_core::Readiness> {
        readiness::check(home, person)
    }

    fn name(&self) -> &'static str {
        "codex"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::Full]
    }

    fn acted_on(&self) -> &'static [ActedOn] {
        ACTED_ON
    }

    fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
        vec!["--dangerously-bypass-approvals-and-sandbox".to_owned()]
    }

    fn pre_trust(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        // Trust per launch, not in the person's file: `-c projects={"<workdir>"={trust_level=
        // "trusted"}}`. Codex 0.171.0 honours an entry for a parent folder only in part (no
        // trust screen, but the project's own config is left out: "Untrusted project-local
        // configuration is disabled"), so one entry for every chat would not do what the
        // chat's own does; this does, and the person's file does not grow by an entry per chat
        // (`tests/real_clis.rs` checks both against the real CLI).
        let workdir = adapter_kit::utf8_workdir(&req.workdir, "cannot be a key in Codex's config")?;
        let mut trusted = toml_edit::InlineTable::new();
        trusted.insert("trust_level", "trusted".into());
        let mut projects = toml_edit::InlineTable::new();
        projects.insert(workdir, trusted.into());
        let mut args = vec![
            "-c".to_owned(),
            format!("projects={}", projects.to_string().trim()),
        ];
        args.extend(migration_seen(req, person)?);
        // Launchers before this one wrote an entry per chat into the person's file: those of
        // chats whose runtime is gone are pruned, and `end` removes the chat's, as before;
        // nothing is added.
        Ok(PreTrust {
            edits: vec![FileEdit {
                file: config_file(req, person)?,
                format: FileFormat::Toml,
                keys: vec!["projects".to_owned(), workdir.to_owned()],
                value: Default::default(),
                create_mode: 0o600,
                action: EditAction::Prune,
            }],
            args,
        })
    }

    fn mcp_isolation(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError> {
        let file = config_file(req, person)?;
        let mut theirs = person_servers(&file, person)?;
        // The runtime's own project config (a trusted folder) is a source too: its servers are
        // turned off by name like the person's (the file is read-only in every chat besides).
        for name in person_servers(&req.workdir.join(".codex/config.toml"), person)? {
            if !theirs.contains(&name) {
                theirs.push(name);
            }
        }
        let mut servers = toml_edit::InlineTable::new();
        for name in &theirs {
            let mut off = toml_edit::InlineTable::new();
            off.insert("enabled", false.into());
            servers.insert(name, off.into());
        }
        if let Some(bridge) = &req.mcp_bridge {
            if theirs.contains(&bridge.name) {
                return Err(AdapterError::Setting {
                    file,
                    problem: format!(
                        "it defines an MCP server named `{}`, the name of the bridge",
                        bridge.name
                    ),
                    fix: "rename that server in the file or give the bridge another name"
                        .to_owned(),
                });
            }
            let mut server = toml_edit::InlineTable::new();
            server.insert("command", bridge.command.as_str().into());
            server.insert(
                "args",
                bridge
                    .args
                    .iter()
                    .map(String::as_str)
                    .collect::<toml_edit::Array>()
                    .into(),
            );
            let mut env = toml_edit::InlineTable::new();
            for (k, v) in &bridge.env {
                env.insert(k, v.as_str().into());
            }
            server.insert("env", env.into());
            servers.insert(&bridge.name, server.into());
        }
        if servers.is_empty() {
            return Ok(McpIsolation::default());
        }
        Ok(McpIsolation::args(vec![
            "-c".to_owned(),
            format!("mcp_servers={}", servers.to_string().trim()),
        ]))
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        match req.shape {
            // A daemon outlives the TUI and would serve the next chat (or run unconfined).
            Shape::Tmux => args.push("--no-daemon".to_owned()),
            Shape::Structured => {
                args.extend(["exec", "--json", "--skip-git-repo-check"].map(str::to_owned))
            }
        }
        args.extend(parts.own_sandbox_off);
        args.push("-C".to_owned());
        args.push(req.workdir.to_string_lossy().into_owned());
        // The runtime is the project root: no walk above it for project config or AGENTS.md.
        args.push("-c".to_owned());
        args.push("project_root_markers=[]".to_owned());
        args.extend(parts.pre_trust);
        args.extend(parts.mcp);
        if let Some(model) = &req.model {
            args.push("-m".to_owned());
            args.push(model.clone());
        }
        adapter_kit::push_extra_and_prompt(&mut args, req);
        args
    }
}

/// `$CODEX_HOME/config.toml`, or `~/.codex/config.toml`.
fn config_file(req: &LaunchRequest, person: &dyn PersonFiles) -> Result<PathBuf, AdapterError> {
    Ok(match adapter_kit::absolute_var(person, "CODEX_HOME")? {
        Some(home) => home.join("config.toml"),
        None => req.home.join(".codex/config.toml"),
    })
}

/// The person's config, parsed; `None` when the file does not exist.
fn person_doc(
    file: &Path,
    person: &dyn PersonFiles,
) -> Result<Option<toml_edit::DocumentMut>, AdapterError> {
    let Some(text) = adapter_kit::read(person, file)? else {
        return Ok(None);
    };
    text.parse()
        .map(Some)
        .map_err(|e: toml_edit::TomlError| AdapterError::Unparsable {
            file: file.to_owned(),
            reason: format!(
                "line {}: {}",
                adapter_kit::line_of(&text, e.span().map_or(0, |s| s.start)),
                e.message()
            ),
        })
}

/// The names under `[mcp_servers]` in the person's config.
fn person_servers(file: &Path, person: &dyn PersonFiles) -> Result<Vec<String>, AdapterError> {
    let Some(doc) = person_doc(file, person)? else {
        return Ok(Vec::new());
    };
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let servers = servers
        .as_table_like()
        .ok_or_else(|| AdapterError::Unparsable {
            file: file.to_owned(),
            reason: "`mcp_servers` is not a table".to_owned(),
        })?;
    Ok(servers.iter().map(|(name, _)| name.to_owned()).collect())
}

/// The announced successors of 0.171.0's bundled model catalog (`codex debug models
/// --bundled`, each model's `upgrade.model`; `tests/screens.rs` compares this table with the
/// real catalog, so a new version that announces others fails there first).
pub const MODEL_MIGRATIONS: &[(&str, &str)] = &[
    ("gpt-5.5", "gpt-6-sol"),
    ("gpt-5.6-sol", "gpt-6-sol"),
    ("gpt-5.6-terra", "gpt-6-sol"),
    ("gpt-5.6-luna", "gpt-6-luna"),
];

/// `-c notice.model_migrations={"<model>"="<successor>"}` for the TUI when the chat's model (the
/// request's, else the person's `model`) has an announced successor: the announcement counts as
/// seen for this launch only, and the model stays the one the person chose.
fn migration_seen(
    req: &LaunchRequest,
    person: &dyn PersonFiles,
) -> Result<Vec<String>, AdapterError> {
    if req.shape != Shape::Tmux {
        return Ok(Vec::new());
    }
    let model = match &req.model {
        Some(model) => Some(model.clone()),
        None => person_doc(&config_file(req, person)?, person)?
            .and_then(|doc| doc.get("model").and_then(|m| m.as_str()).map(str::to_owned)),
    };
    let Some((model, successor)) = model.and_then(|m| {
        MODEL_MIGRATIONS
            .iter()
            .find(|(from, _)| *from == m)
            .map(|(from, to)| (*from, *to))
    }) else {
        return Ok(Vec::new());
    };
    let mut seen = toml_edit::InlineTable::new();
    seen.insert(model, successor.into());
    Ok(vec![
        "-c".to_owned(),
        format!("notice.model_migrations={}", seen.to_string().trim()),
    ])
}
