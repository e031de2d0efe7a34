use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Grant, Mode, Shape};

/// The MCP bridge server a CLI is given: the only MCP server it may see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServer {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Everything an adapter needs to build one launch. The mode is the decided one (after the
/// platform decision), and `confined` says whether our sandbox wraps the CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRequest {
    pub shape: Shape,
    pub mode: Mode,
    /// The chat's runtime: the CLI's working folder.
    pub workdir: PathBuf,
    /// The person's home (where their CLI settings live).
    pub home: PathBuf,
    pub grants: Vec<Grant>,
    pub mcp_bridge: Option<McpServer>,
    pub prompt: Option<String>,
    pub model: Option<String>,
    /// Passed through after our own arguments.
    pub extra_args: Vec<String>,
    /// Our sandbox wraps the CLI (so its own sandbox must be off).
    pub confined: bool,
}

/// Environment changes for the CLI's process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvChanges {
    pub set: BTreeMap<String, String>,
    pub remove: Vec<String>,
}

/// Where the CLI's stdin comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stdin {
    #[default]
    Inherit,
    /// `/dev/null`: the CLI would otherwise wait for EOF on a pipe.
    Null,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    Toml,
    Json,
}

/// One entry written into a person's own settings file before launch, so that no trust screen
/// appears. The launcher applies it under a lock, atomically, keeping every other byte (TOML) or
/// every other key and value (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEdit {
    pub file: PathBuf,
    pub format: FileFormat,
    /// Keys from the document's top down to the value (tables in TOML, objects in JSON).
    pub keys: Vec<String>,
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EditAction {
    /// The value at the keys becomes `value`.
    #[default]
    Set,
    /// The value at the keys is a list (created empty when missing) that must hold `value`:
    /// appended when absent, nothing written when present (Agy's `trustedWorkspaces`).
    AddToList,
}

/// What pre-trust needs: edits to the person's files and/or arguments on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreTrust {
    pub edits: Vec<FileEdit>,
    pub args: Vec<String>,
}

/// A file of the launch's own that the launcher writes into the chat's runtime before the CLI
/// starts (Pi's MCP bridge extension): not a person's file, so it is not a [`FileEdit`]. The
/// path is directly inside the working folder (the launcher refuses any other); the file is
/// replaced whole, atomically, at every launch, so that nothing the chat left there is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchFile {
    pub path: PathBuf,
    pub text: String,
    /// The file's mode (0600 when it holds the bridge's environment); an octal string in JSON.
    #[serde(with = "octal_mode")]
    pub mode: u32,
}

/// File modes in JSON as people write them, an octal string (`"0600"`), not the number 384.
/// Read back from such a string or, for what older versions wrote, from a number.
pub mod octal_mode {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{mode:04o}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Number(u32),
        }
        let mode = match Either::deserialize(d)? {
            Either::Number(n) => n,
            Either::Text(t) => u32::from_str_radix(&t, 8).map_err(|_| {
                D::Error::custom(format!(
                    "mode `{t}` is not an octal number such as \"0600\""
                ))
            })?,
        };
        if mode > 0o7777 {
            return Err(D::Error::custom(format!(
                "mode {mode:o} has bits beyond 07777: give permission bits only, such as \"0600\""
            )));
        }
        Ok(mode)
    }
}

/// The assembled launch of a CLI (the program itself is found by the launcher).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CliLaunch {
    pub args: Vec<String>,
    pub env: EnvChanges,
    pub stdin: Stdin,
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
    #[error("`{}` cannot be parsed ({reason}); it was left untouched: fix or move it and launch again", file.display())]
    Unparsable { file: PathBuf, reason: String },
    #[error("cannot read `{}`: {source}", file.display())]
    Read { file: PathBuf, source: io::Error },
    #[error("`{}`: {problem}; nothing was written: {fix}", file.display())]
    Setting {
        file: PathBuf,
        problem: String,
        fix: String,
    },
    #[error("{cli} does not support mode {}: use {}", mode.as_str(), supported)]
    Unsupported {
        cli: &'static str,
        mode: Mode,
        supported: String,
    },
}

/// What each CLI supplies. An adapter reads like a form: name, program, modes, argv, env,
/// own-sandbox-off, pre-trust, MCP isolation. [`CliAdapter::launch`] puts the answers together;
/// adapters implement the fields.
pub trait CliAdapter: Send + Sync + fmt::Debug {
    /// The CLI's name in the registry (`claude`, `codex`, ...).
    fn name(&self) -> &'static str;

    /// The executable looked up on PATH (unless the configuration names a path).
    fn program(&self) -> &'static str;

    /// The modes it supports.
    fn modes(&self) -> &'static [Mode];

    /// Arguments that turn the CLI's own sandbox and approval stops off (only when `confined`).
    fn own_sandbox_off(&self, req: &LaunchRequest) -> Vec<String>;

    /// Entries written to the person's files and/or arguments, so that no trust screen appears.
    fn pre_trust(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError>;

    /// Arguments that give the CLI the bridge and none of the person's own MCP servers.
    fn mcp_isolation(
        &self,
        req: &LaunchRequest,
        person: &dyn PersonFiles,
    ) -> Result<Vec<String>, AdapterError>;

    /// Environment to set and remove.
    fn env(&self, req: &LaunchRequest) -> EnvChanges;

    /// The final argument list, arranged from the parts above, the shape, the mode and the
    /// prompt in the order this CLI's parser wants.
    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String>;

    /// Files of the launch's own written into the working folder before start (none by
    /// default).
    fn files(&self, req: &LaunchRequest) -> Result<Vec<LaunchFile>, AdapterError> {
        let _ = req;
        Ok(Vec::new())
    }

    /// Where stdin comes from: `/dev/null` in the headless shape, where every CLI we know would
    /// otherwise wait for EOF on a pipe; the terminal in a tmux pane.
    fn stdin(&self, req: &LaunchRequest) -> Stdin {
        match req.shape {
            Shape::Tmux => Stdin::Inherit,
            Shape::Structured => Stdin::Null,
        }
    }

    /// Puts the form together. Adapters do not override this.
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
        let pre_trust = self.pre_trust(req, person)?;
        let parts = ArgvParts {
            own_sandbox_off: if req.confined {
                self.own_sandbox_off(req)
            } else {
                Vec::new()
            },
            pre_trust: pre_trust.args,
            mcp: self.mcp_isolation(req, person)?,
        };
        let mut env = self.env(req);
        // A multiplexer's variables would lead the CLI to the server outside the sandbox.
        for leak in ["TMUX", "TMUX_PANE"] {
            if !env.remove.iter().any(|r| r == leak) {
                env.remove.push(leak.to_owned());
            }
        }
        Ok(CliLaunch {
            args: self.argv(req, parts),
            env,
            stdin: self.stdin(req),
            pre_trust: pre_trust.edits,
            files: self.files(req)?,
        })
    }
}

/// The pieces [`CliAdapter::argv`] arranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgvParts {
    pub own_sandbox_off: Vec<String>,
    pub pre_trust: Vec<String>,
    pub mcp: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_octal_strings_in_json_and_read_back_from_either_form() {
        let file = LaunchFile {
            path: "/r/x".into(),
            text: String::new(),
            mode: 0o600,
        };
        let json = serde_json::to_value(&file).unwrap();
        assert_eq!(json["mode"], "0600");
        assert_eq!(serde_json::from_value::<LaunchFile>(json).unwrap(), file);
        let older = serde_json::json!({"path": "/r/x", "text": "", "mode": 384});
        assert_eq!(
            serde_json::from_value::<LaunchFile>(older).unwrap().mode,
            0o600
        );
        for bad in ["600x", "0o600", "17777"] {
            let wrong = serde_json::json!({"path": "/r/x", "text": "", "mode": bad});
            let err = serde_json::from_value::<LaunchFile>(wrong)
                .unwrap_err()
                .to_string();
            assert!(err.contains("0600"), "{bad}: {err}");
        }
    }
}
