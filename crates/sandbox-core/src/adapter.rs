use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Grant, Mode, Shape};

/// The MCP bridge server a CLI is given: the only MCP server it may see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    /// The server's name in the CLI's configuration (the one server name it is allowed).
    pub name: String,
    /// The program that runs the server (stdio transport).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables it is started with (the bridge's token among them).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Everything an adapter needs to build one launch. The mode is the decided one (after the
/// platform decision), and `confined` says whether our sandbox wraps the CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchRequest {
    /// In a tmux pane (interactive) or headless (structured output).
    pub shape: Shape,
    /// The decided mode.
    pub mode: Mode,
    /// The chat's runtime: the CLI's working folder.
    pub workdir: PathBuf,
    /// The person's home (where their CLI settings live).
    pub home: PathBuf,
    /// The chat's grants, canonical (from the built policy).
    pub grants: Vec<Grant>,
    /// The bridge, the only MCP server the CLI may see (`None`: it sees none).
    pub mcp_bridge: Option<McpServer>,
    /// The first prompt, when the launch carries one.
    pub prompt: Option<String>,
    /// The model to ask for, when not the CLI's own default.
    pub model: Option<String>,
    /// Passed through after our own arguments.
    pub extra_args: Vec<String>,
    /// Our sandbox wraps the CLI (so its own sandbox must be off).
    pub confined: bool,
    /// A random word the launcher makes for this launch (hex), so that a name an allow-list
    /// holds is not one a chat could know in advance ([`crate::adapter_kit::allowed_server_name`]);
    /// empty: none was made (a test), and the fixed [`crate::adapter_kit::NO_SERVER`] is used.
    pub nonce: String,
}

/// Environment changes for the CLI's process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EnvChanges {
    /// Variables set (or replaced) for the CLI.
    pub set: BTreeMap<String, String>,
    /// Variables removed from what it inherits.
    pub remove: Vec<String>,
}

/// Where the CLI's stdin comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stdin {
    /// The launcher's own stdin (a tmux pane's terminal).
    #[default]
    Inherit,
    /// `/dev/null`: the CLI would otherwise wait for EOF on a pipe.
    Null,
}

/// The format of a settings file, which says how an edit keeps its other entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// TOML, edited with `toml_edit` (every other byte kept).
    Toml,
    /// JSON, edited as a value (every other key and value kept).
    Json,
}

/// One entry written into a person's own settings file before launch, so that no trust screen
/// appears. The launcher applies it under a lock, atomically, keeping every other byte (TOML) or
/// every other key and value (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEdit {
    /// The settings file, absolute.
    pub file: PathBuf,
    /// Its format.
    pub format: FileFormat,
    /// Keys from the document's top down to the value (tables in TOML, objects in JSON).
    pub keys: Vec<String>,
    /// The value written (or added to the list) at `keys`.
    pub value: serde_json::Value,
    /// Mode of the file when it has to be created (Codex keeps its config 0600); an octal
    /// string in JSON (`"0600"`).
    #[serde(with = "octal_mode")]
    pub create_mode: u32,
    /// What to do at `keys`: set the value (the default) or add it to a list.
    #[serde(default)]
    pub action: EditAction,
}

/// How a [`FileEdit`] changes the value at its keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EditAction {
    /// The value at the keys becomes `value`.
    #[default]
    Set,
    /// The value at the keys is a list (created empty when missing) that must hold `value`:
    /// appended when absent, nothing written when present (Agy's `trustedWorkspaces`).
    AddToList,
    /// Nothing is set, and no file is made: the keys name the container of the chats' entries
    /// and the chat's own key, so that the entries of chats whose runtime is gone are pruned
    /// from it and `end` removes the chat's (`value` is unused). For a CLI trusted per launch,
    /// in whose file launchers before it wrote an entry per chat (Codex's `projects`).
    Prune,
}

/// Arguments on the command line and/or entries written into a settings file: what one part of
/// the form needs ([`PreTrust`], [`McpIsolation`]). Either may be empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ArgsAndEdits {
    /// Entries the launcher writes into settings files before the CLI starts.
    pub edits: Vec<FileEdit>,
    /// Arguments, which [`CliAdapter::argv`] places.
    pub args: Vec<String>,
}

impl ArgsAndEdits {
    /// Arguments only.
    pub fn args(args: Vec<String>) -> Self {
        ArgsAndEdits {
            edits: Vec::new(),
            args,
        }
    }

    /// Entries only.
    pub fn edits(edits: Vec<FileEdit>) -> Self {
        ArgsAndEdits {
            edits,
            args: Vec::new(),
        }
    }
}

/// What pre-trust needs so that no trust screen appears: entries in the person's files and/or
/// arguments.
pub type PreTrust = ArgsAndEdits;

/// What gives the CLI the bridge and none of the person's own MCP servers: arguments and/or
/// entries in a settings file, for a CLI that has no per-launch MCP flag (Gemini reads the
/// bridge from the chat's own workspace settings, `<workdir>/.gemini/settings.json`).
pub type McpIsolation = ArgsAndEdits;

/// A person's setting that would break a confined launch, so the launch is refused before
/// anything is written, with an error naming the file, the setting and the fix (Agy's
/// `enableTerminalSandbox: true` would start Agy's own sandbox inside ours, where it cannot
/// run). The form reads the file through [`PersonFiles`] ([`CliAdapter::launch`]): a missing or
/// blank file, or a missing key, passes; a file that cannot be parsed refuses the launch too
/// ([`AdapterError::Unparsable`]), since what it says cannot be known.
///
/// What it is not: a way to change the setting. Changing a person's setting behind their back
/// is a decision the adapter's crate doc would have to argue, and then it is a [`FileEdit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingCheck {
    /// The person's settings file.
    pub file: PathBuf,
    /// How it is parsed.
    pub format: FileFormat,
    /// Keys from the document's top down to the setting.
    pub keys: Vec<String>,
    /// The launch is refused when the setting holds exactly this value.
    pub refused: serde_json::Value,
    /// Also refused when the setting is a list holding anything (Claude's `permissions.ask`:
    /// any rule stops a pane at "Do you want to proceed?"); `refused` is then compared too.
    #[serde(default)]
    pub or_non_empty_list: bool,
    /// What is wrong, said after the file's name ("`enableTerminalSandbox` is true, and ...").
    pub problem: String,
    /// What the person should do.
    pub fix: String,
}

impl SettingCheck {
    /// The refusal when the person's file holds the refused value.
    pub fn verdict(&self, person: &dyn PersonFiles) -> Result<(), AdapterError> {
        let Some(doc) = crate::adapter_kit::read_settings(person, &self.file, self.format)? else {
            return Ok(());
        };
        let value = self
            .keys
            .iter()
            .try_fold(&doc, |at, key| at.get(key.as_str()));
        let non_empty_list = self.or_non_empty_list
            && value
                .and_then(|v| v.as_array())
                .is_some_and(|l| !l.is_empty());
        if value == Some(&self.refused) || non_empty_list {
            return Err(AdapterError::Setting {
                file: self.file.clone(),
                problem: self.problem.clone(),
                fix: self.fix.clone(),
            });
        }
        Ok(())
    }
}

/// A file of the launch's own that the launcher writes into the chat's runtime before the CLI
/// starts (Pi's MCP bridge extension): not a person's file, so it is not a [`FileEdit`]. The
/// path is directly inside the working folder (the launcher refuses any other); the file is
/// replaced whole, atomically, at every launch, so that nothing the chat left there is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchFile {
    /// Where, directly inside the working folder.
    pub path: PathBuf,
    /// Its whole content.
    pub text: String,
    /// The file's mode (0600 when it holds the bridge's environment); an octal string in JSON.
    #[serde(with = "octal_mode")]
    pub mode: u32,
}

/// File modes in JSON as people write them, an octal string (`"0600"`), not the number 384.
pub mod octal_mode {
    use serde::Serializer;

    /// The mode as four octal digits.
    pub fn serialize<S: Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{mode:04o}"))
    }
}

/// The assembled launch of a CLI (the program itself is found by the launcher).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CliLaunch {
    /// The CLI's arguments (after the program), in the order its parser wants.
    pub args: Vec<String>,
    /// Its environment changes.
    pub env: EnvChanges,
    /// Where its stdin comes from.
    pub stdin: Stdin,
    /// Every entry written into a settings file before the CLI starts, applied the same way
    /// (under a lock, atomically, only where the chat's policy lets the launcher write): the
    /// pre-trust entries first, then those of the MCP isolation.
    pub pre_trust: Vec<FileEdit>,
    /// Files the launch writes into the working folder before the CLI starts.
    #[serde(default)]
    pub files: Vec<LaunchFile>,
}

/// Read access to the person's own files (their CLI settings), given by the launcher so that
/// adapters stay free of I/O.
pub trait PersonFiles {
    /// The file's text, `Ok(None)` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<String>>;

    /// The launcher's environment variable `name` (the CLI inherits it), for the variables that
    /// move a CLI's settings (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`). `None` when unset or not UTF-8.
    ///
    /// Read no other variable through it: the launcher takes every absolute value read here as
    /// a place where the person keeps that CLI's settings, and lets pre-trust read and write
    /// there ([`crate::Policy::person_file`], a named place).
    fn var(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
}

/// Why an adapter cannot build a launch; the message names the file or flag and the fix.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// A person's settings file that is not valid TOML or JSON: left as it is.
    #[error("`{}` cannot be parsed ({reason}); it was left untouched: fix or move it and launch again", file.display())]
    Unparsable {
        /// The file.
        file: PathBuf,
        /// The parser's words, with the line.
        reason: String,
    },
    /// A person's settings file that cannot be read.
    #[error("cannot read `{}`: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A person's setting that refuses the launch (a [`SettingCheck`]).
    #[error("`{}`: {problem}; nothing was written: {fix}", file.display())]
    Setting {
        /// The file that holds it.
        file: PathBuf,
        /// What is wrong, in words.
        problem: String,
        /// What the person can do.
        fix: String,
    },
    /// An extra argument that would give a bridge-only launch its own tools (or another way to
    /// run a program) back.
    #[error(
        "`{arg}` would turn {cli}'s own tools back on, and this launch is bridge-only (its tools off): leave it out, or launch Full CLI where the sandbox confines it"
    )]
    ToolsBackOn {
        /// The CLI's name.
        cli: &'static str,
        /// The argument as given.
        arg: String,
    },
    /// The tmux shape where nothing confines: text typed into the pane (a line starting with
    /// `!` in Claude's and Pi's) runs a shell as the launcher's user, outside any sandbox.
    #[error(
        "{cli} cannot run in a tmux pane where nothing confines it: a line typed into the pane that starts with `!` would run a shell outside any sandbox; use the structured shape (--shape structured) here, or a machine with Landlock"
    )]
    UnconfinedPane {
        /// The CLI's name.
        cli: &'static str,
    },
    /// A mode the CLI does not have.
    #[error("{cli} does not support mode {}: use {}", mode.as_str(), supported)]
    Unsupported {
        /// The CLI's name.
        cli: &'static str,
        /// The mode asked for.
        mode: Mode,
        /// The modes it has, in words.
        supported: String,
    },
}

/// What each CLI supplies. An adapter reads like a form, one method per kind of part a CLI
/// needs (the checks are asked for first, [`CliAdapter::argv`] last):
///
/// | field | what | default |
/// |---|---|---|
/// | [`name`](CliAdapter::name), [`program`](CliAdapter::program), [`modes`](CliAdapter::modes) | who it is | program = name |
/// | [`acted_on`](CliAdapter::acted_on) | what the CLI reads at start and acts on: read-only in every chat | none |
/// | [`checks`](CliAdapter::checks) | person's settings that refuse a launch, read before anything else | none |
/// | [`own_sandbox_off`](CliAdapter::own_sandbox_off) | arguments (confined only) | none |
/// | [`pre_trust`](CliAdapter::pre_trust) | entries in the person's files and/or arguments | none |
/// | [`mcp_isolation`](CliAdapter::mcp_isolation) | arguments and/or entries in a settings file | (required) |
/// | [`env`](CliAdapter::env) | variables to set and remove | none |
/// | [`files`](CliAdapter::files) | the launch's own files in the working folder | none |
/// | [`stdin`](CliAdapter::stdin) | where stdin comes from | `/dev/null` headless, the terminal in tmux |
/// | [`argv`](CliAdapter::argv) | the parts above arranged for this CLI's parser | (required) |
/// | [`readiness`](CliAdapter::readiness) | what the person must do once (log in, first-run screens), for `doctor --cli` | unknown |
///
/// [`CliAdapter::launch`] puts the answers together; adapters implement the fields. Nothing in
/// the form does I/O: what an adapter needs of the person's files it reads through
/// [`PersonFiles`]. `docs/adding-a-cli.md` walks through a new adapter crate; the smallest one:
///
/// ```
/// use sandbox_core::{
///     AdapterError, ArgvParts, CliAdapter, LaunchRequest, McpIsolation, Mode, PersonFiles,
///     Shape, adapter_kit,
/// };
///
/// #[derive(Debug)]
/// struct Name;
///
/// /// What the registry lists (the convention of every adapter crate).
/// pub static ADAPTER: &dyn CliAdapter = &Name;
///
/// impl CliAdapter for Name {
///     fn name(&self) -> &'static str {
///         "name"
///     }
///     fn modes(&self) -> &'static [Mode] {
///         &[Mode::Full]
///     }
///     fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
///         vec!["--no-sandbox".to_owned()]
///     }
///     fn mcp_isolation(
///         &self,
///         req: &LaunchRequest,
///         _person: &dyn PersonFiles,
///     ) -> Result<McpIsolation, AdapterError> {
///         let allowed = adapter_kit::allowed_server_name(req);
///         Ok(McpIsolation::args(vec![format!("--allowed-mcp={allowed}")]))
///     }
///     fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
///         let mut args = Vec::new();
///         adapter_kit::push_parts(&mut args, parts);
///         adapter_kit::push_extra_and_prompt(&mut args, req);
///         args
///     }
/// }
///
/// struct Nobody;
/// impl PersonFiles for Nobody {
///     fn read(&self, _: &std::path::Path) -> std::io::Result<Option<String>> {
///         Ok(None)
///     }
/// }
///
/// let req = LaunchRequest {
///     shape: Shape::Structured,
///     mode: Mode::Full,
///     workdir: "/runtime".into(),
///     home: "/home/me".into(),
///     grants: Vec::new(),
///     mcp_bridge: None,
///     prompt: Some("-hi".to_owned()),
///     model: None,
///     extra_args: Vec::new(),
///     confined: true,
///     nonce: String::new(),
/// };
/// let launch = ADAPTER.launch(&req, &Nobody)?;
/// assert_eq!(
///     launch.args,
///     ["--no-sandbox", "--allowed-mcp=cli-sandbox-no-mcp-server", "--", "-hi"]
/// );
/// assert_eq!(ADAPTER.program(), "name");
/// # Ok::<(), AdapterError>(())
/// ```
pub trait CliAdapter: Send + Sync + fmt::Debug {
    /// The CLI's name in the registry (`claude`, `codex`, ...).
    fn name(&self) -> &'static str;

    /// The executable looked up on PATH (unless the configuration names a path); the name by
    /// default.
    fn program(&self) -> &'static str {
        self.name()
    }

    /// The modes it supports.
    fn modes(&self) -> &'static [Mode];

    /// What the CLI reads at start and acts on, at user level and at project level (the
    /// runtime is its project folder): settings with hooks, status lines, MCP servers,
    /// extensions, plugins, environment and base-URL overrides, credential helpers and
    /// permission rules; instruction and memory files; custom commands, agents and skills.
    /// Every chat's policy closes every adapter's places to writing ([`crate::settings`],
    /// [`crate::Rule::Settings`]), so that nothing a chat writes there is acted on by a later
    /// launch of any chat. Leave the CLI's state out (sessions, history, logs, token refresh):
    /// it must stay writable. Each entry checked against the pinned CLI, in the crate doc's
    /// table. None by default (a CLI that reads nothing at start).
    fn acted_on(&self) -> &'static [crate::ActedOn] {
        &[]
    }

    /// The person's settings that would break this launch: each is read before any other part
    /// is asked for, and the first that holds its refused value refuses the launch, naming the
    /// file and the fix (none by default).
    fn checks(&self, req: &LaunchRequest) -> Vec<SettingCheck> {
        let _ = req;
        Vec::new()
    }

    /// Arguments that turn the CLI's own sandbox and approval stops off; asked for only when
    /// `confined` (none by default: a CLI without a sandbox or approvals).
    fn own_sandbox_off(&self, req: &LaunchRequest) -> Vec<String> {
        let _ = req;
        Vec::new()
    }

    /// Entries written to the person's files and/or arguments, so that no trust screen appears
    /// (none by default: a CLI without a trust screen).
    fn pre_trust(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        let _ = (req, person);
        Ok(PreTrust::default())
    }

    /// Arguments and/or settings entries that give the CLI the bridge and none of the person's
    /// own MCP servers. Required: an adapter that cannot isolate says so in its crate doc and
    /// returns nothing.
    fn mcp_isolation(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<McpIsolation, AdapterError>;

    /// The variables of the caller's environment this CLI reads itself and keeps with
    /// `[policy] env = "allowlist"`: its login's key, its base URL, the variables that move its
    /// settings (none by default).
    fn env_kept(&self) -> &'static [&'static str] {
        &[]
    }

    /// Environment to set and remove (nothing by default; the form always removes the
    /// multiplexer's variables).
    fn env(&self, req: &LaunchRequest) -> EnvChanges {
        let _ = req;
        EnvChanges::default()
    }

    /// The final argument list, arranged from the parts above, the shape, the mode and the
    /// prompt in the order this CLI's parser wants.
    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String>;

    /// Files of the launch's own written into the working folder before start (none by
    /// default).
    fn files(&self, req: &LaunchRequest) -> Result<Vec<LaunchFile>, AdapterError> {
        let _ = req;
        Ok(Vec::new())
    }

    /// Arguments that, among the extra arguments of a bridge-only launch, would give the CLI its
    /// own tools back or another way to run a program (a tool allowlist, a permission mode,
    /// settings with hooks, a plugin, an extension, an MCP server of its own): refused there,
    /// naming the argument. Each matches the whole argument or `FLAG=...`. None by default: a
    /// CLI without bridge-only.
    fn bridge_only_refused_args(&self) -> &'static [&'static str] {
        &[]
    }

    /// What this CLI needs of its person once, before a launch can get to work (a login, its
    /// first-run screens answered), read from the person's files under `home` (through
    /// `person`) and from whether a variable is set (`is_set`: never its value), each with what
    /// to run once, unconfined, to get there. `cli-sandbox doctor --cli NAME` prints them. By
    /// default one `unknown` need, with the general remedy: a CLI whose facts were not checked.
    fn readiness(
        &self,
        home: &Path,
        person: &dyn PersonFiles,
        is_set: &dyn Fn(&str) -> bool,
    ) -> Vec<crate::Readiness> {
        let _ = (home, person, is_set);
        vec![crate::Readiness::unknown(
            "logged in and past the first-run screens",
            format!(
                "no check is known for {} (it was not installed and tried for this project)",
                self.name()
            ),
            format!(
                "run `{}` once, unconfined, in a terminal: sign in and answer its first screens",
                self.program()
            ),
        )]
    }

    /// How the contract's model-driven layer installs this CLI, points it at the scripted model
    /// and drives its tools ([`crate::driving`]). `None` by default: a CLI that layer skips.
    fn driving(&self) -> Option<crate::Driving> {
        None
    }

    /// Where stdin comes from: `/dev/null` in the headless shape, where every CLI we know would
    /// otherwise wait for EOF on a pipe; the terminal in a tmux pane.
    fn stdin(&self, req: &LaunchRequest) -> Stdin {
        match req.shape {
            Shape::Tmux => Stdin::Inherit,
            Shape::Structured => Stdin::Null,
        }
    }

    /// Puts the form together: the one place that does. Adapters do not override this.
    fn launch(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<CliLaunch, AdapterError> {
        if !self.modes().contains(&req.mode) {
            return Err(AdapterError::Unsupported {
                cli: self.name(),
                mode: req.mode,
                supported: self
                    .modes()
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(" or "),
            });
        }
        // Where nothing confines, a pane is a shell for whoever types into it (Claude's and Pi's
        // `!` lines run one, with the model's tools off); the structured shape has no pane.
        if !req.confined && req.shape == Shape::Tmux {
            return Err(AdapterError::UnconfinedPane { cli: self.name() });
        }
        // Bridge-only means no tools of the CLI's own, whatever the extra arguments say.
        if req.mode == Mode::BridgeOnly {
            let refused = self.bridge_only_refused_args();
            if let Some(arg) = req.extra_args.iter().find(|arg| {
                refused.iter().any(|flag| {
                    arg.as_str() == *flag
                        || arg
                            .strip_prefix(flag)
                            .is_some_and(|rest| rest.starts_with('='))
                })
            }) {
                return Err(AdapterError::ToolsBackOn {
                    cli: self.name(),
                    arg: arg.clone(),
                });
            }
        }
        // The checks first: a refused launch has asked for nothing else, and the launcher
        // writes only what a finished launch lists.
        for check in self.checks(req) {
            check.verdict(person)?;
        }
        let pre_trust = self.pre_trust(req, person)?;
        let mcp = self.mcp_isolation(req, person)?;
        let parts = ArgvParts {
            own_sandbox_off: if req.confined {
                self.own_sandbox_off(req)
            } else {
                Vec::new()
            },
            pre_trust: pre_trust.args,
            mcp: mcp.args,
        };
        let mut env = self.env(req);
        // A multiplexer's variables would lead the CLI to the server outside the sandbox.
        for leak in ["TMUX", "TMUX_PANE"] {
            if !env.remove.iter().any(|r| r == leak) {
                env.remove.push(leak.to_owned());
            }
        }
        let mut edits = pre_trust.edits;
        edits.extend(mcp.edits);
        Ok(CliLaunch {
            args: self.argv(req, parts),
            env,
            stdin: self.stdin(req),
            pre_trust: edits,
            files: self.files(req)?,
        })
    }
}

/// The pieces [`CliAdapter::argv`] arranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgvParts {
    /// From [`CliAdapter::own_sandbox_off`] (empty when not confined).
    pub own_sandbox_off: Vec<String>,
    /// The pre-trust's arguments.
    pub pre_trust: Vec<String>,
    /// The MCP isolation's arguments.
    pub mcp: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_octal_strings_in_json() {
        let file = LaunchFile {
            path: "/r/x".into(),
            text: String::new(),
            mode: 0o600,
        };
        let json = serde_json::to_value(&file).unwrap();
        assert_eq!(json["mode"], "0600");
    }

    struct OneFile(&'static str);
    impl PersonFiles for OneFile {
        fn read(&self, _: &Path) -> io::Result<Option<String>> {
            Ok((!self.0.is_empty()).then(|| self.0.to_owned()))
        }
    }

    fn check(format: FileFormat, keys: &[&str]) -> SettingCheck {
        SettingCheck {
            or_non_empty_list: false,
            file: "/home/me/.x/settings".into(),
            format,
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            refused: true.into(),
            problem: "`sandbox` is true".to_owned(),
            fix: "set it to false".to_owned(),
        }
    }

    #[test]
    fn a_setting_check_refuses_only_the_refused_value_and_names_the_file_and_the_fix() {
        let json = check(FileFormat::Json, &["sandbox"]);
        let err = json.verdict(&OneFile(r#"{"sandbox": true}"#)).unwrap_err();
        assert!(matches!(err, AdapterError::Setting { .. }), "{err:?}");
        let message = err.to_string();
        for part in [
            "/home/me/.x/settings",
            "`sandbox` is true",
            "set it to false",
        ] {
            assert!(message.contains(part), "{message}");
        }
        for passes in [
            "",
            "  \n",
            "{}",
            r#"{"sandbox": false}"#,
            r#"{"sandbox": "true"}"#,
        ] {
            json.verdict(&OneFile(passes)).unwrap();
        }
        let err = json.verdict(&OneFile("{\n  \"sandbox\": tru")).unwrap_err();
        assert!(matches!(err, AdapterError::Unparsable { .. }), "{err:?}");
        assert!(err.to_string().contains("line 2"), "{err}");

        let toml = check(FileFormat::Toml, &["tools", "sandbox"]);
        toml.verdict(&OneFile("sandbox = true\n[tools]\nsandbox = false\n"))
            .unwrap();
        let err = toml
            .verdict(&OneFile("[tools]\nsandbox = true\n"))
            .unwrap_err();
        assert!(matches!(err, AdapterError::Setting { .. }), "{err:?}");
        let err = toml.verdict(&OneFile("a = 1\n[tools\n")).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    /// An adapter whose every other part panics: a refused check must ask for none of them.
    #[derive(Debug)]
    struct Refusing;
    impl CliAdapter for Refusing {
        fn name(&self) -> &'static str {
            "refusing"
        }
        fn modes(&self) -> &'static [Mode] {
            &[Mode::Full]
        }
        fn checks(&self, _: &LaunchRequest) -> Vec<SettingCheck> {
            vec![check(FileFormat::Json, &["sandbox"])]
        }
        fn pre_trust(
            &self,
            _: &LaunchRequest,
            _: &dyn PersonFiles,
        ) -> Result<PreTrust, AdapterError> {
            panic!("pre_trust asked for after a refused check")
        }
        fn mcp_isolation(
            &self,
            _: &LaunchRequest,
            _: &dyn PersonFiles,
        ) -> Result<McpIsolation, AdapterError> {
            Ok(McpIsolation::edits(vec![FileEdit {
                file: "/r/.x/settings.json".into(),
                format: FileFormat::Json,
                keys: vec!["mcp".to_owned()],
                value: true.into(),
                create_mode: 0o600,
                action: EditAction::Set,
            }]))
        }
        fn argv(&self, _: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
            parts.mcp
        }
    }

    fn request() -> LaunchRequest {
        LaunchRequest {
            shape: Shape::Structured,
            mode: Mode::Full,
            workdir: "/r".into(),
            home: "/home/me".into(),
            grants: Vec::new(),
            mcp_bridge: None,
            prompt: None,
            model: None,
            extra_args: Vec::new(),
            confined: true,
            nonce: String::new(),
        }
    }

    #[test]
    fn the_checks_come_before_every_other_part() {
        let err = Refusing
            .launch(&request(), &OneFile(r#"{"sandbox": true}"#))
            .unwrap_err();
        assert!(matches!(err, AdapterError::Setting { .. }), "{err:?}");
    }

    #[derive(Debug)]
    struct Defaults;
    impl CliAdapter for Defaults {
        fn name(&self) -> &'static str {
            "defaults"
        }
        fn modes(&self) -> &'static [Mode] {
            &[Mode::Full]
        }
        fn mcp_isolation(
            &self,
            req: &LaunchRequest,
            person: &dyn PersonFiles,
        ) -> Result<McpIsolation, AdapterError> {
            Refusing.mcp_isolation(req, person)
        }
        fn argv(&self, _: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
            assert_eq!(parts.own_sandbox_off, Vec::<String>::new());
            assert_eq!(parts.pre_trust, Vec::<String>::new());
            parts.mcp
        }
    }

    #[test]
    fn the_mcp_isolations_edits_follow_the_pre_trust_entries_and_the_defaults_add_nothing() {
        let launch = Defaults.launch(&request(), &OneFile("")).unwrap();
        assert_eq!(Defaults.program(), "defaults");
        assert_eq!(launch.pre_trust.len(), 1);
        assert_eq!(launch.pre_trust[0].file, Path::new("/r/.x/settings.json"));
        assert!(launch.args.is_empty() && launch.files.is_empty());
        assert!(launch.env.set.is_empty());
        assert_eq!(launch.env.remove, ["TMUX", "TMUX_PANE"]);
        assert_eq!(launch.stdin, Stdin::Null);
    }
}
