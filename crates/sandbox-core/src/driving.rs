//! How the contract's model-driven layer (`cli-sandbox contract --agents`) installs a CLI, points
//! it at the scripted model and drives its tools: data an adapter returns from
//! [`crate::CliAdapter::driving`], so that everything one CLI needs lives in its own crate and the
//! contract holds no `match` on a CLI's name. A CLI whose adapter returns `None` is reported as
//! skipped by that layer (no known local-model setup, or no way to install it here).
//!
//! Nothing here acts: the settings files are text the caller writes under the demo's home, the
//! variables are pairs the caller puts in the launch's environment.

use serde_json::Value;

/// What the model-driven layer needs to know of one CLI.
#[derive(Debug, Clone, Copy)]
pub struct Driving {
    /// The CLI's own tool names, for the table and the steps.
    pub tools: ToolNames,
    /// Which paths the CLI's own file tools refuse by themselves (such attempts would measure the
    /// CLI, not the sandbox, so they are left to the shell tool).
    pub file_tools_refuse: FileToolsRefuse,
    /// Where the pinned real CLI comes from (`tests/package.json` pins exactly these); `None`
    /// for a CLI that cannot be installed here.
    pub install: Option<Install>,
    /// Stand-in keys a person would have in the launcher's own environment (never real keys):
    /// the layer sets them in its own environment before anything runs.
    pub stand_in_keys: &'static [(&'static str, &'static str)],
    /// The person's settings files and variables that point the CLI at a local model whose base
    /// URL is the argument (`http://127.0.0.1:PORT`, no trailing slash).
    pub point_at_model: fn(base_url: &str) -> PointAtModel,
    /// The person's own MCP setup (a server or an extension of theirs) that must not start in a
    /// launch with the bridge.
    pub person_mcp: fn(&PersonMcp<'_>) -> Vec<PersonEdit>,
    /// What the layer plays with it.
    pub plays: Plays,
}

/// The CLI's own tool names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolNames {
    /// Its shell tool.
    pub shell: &'static str,
    /// `None`: it has no file-read tool of its own (its shell reads).
    pub read: Option<&'static str>,
    /// Its tool that writes a new file.
    pub write: &'static str,
    /// Its tool that edits an existing file.
    pub edit: &'static str,
}

/// Which paths a CLI's own file tools refuse by themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileToolsRefuse {
    /// None.
    Nothing,
    /// Any path outside its workspace (the working folder and the grants).
    OutsideWorkspace,
    /// A file with one of these extensions (taken for binary by its read tool, and so by its
    /// edit tool, which needs a read first).
    Extensions(&'static [&'static str]),
}

impl FileToolsRefuse {
    /// Whether the CLI's own file tools would attempt `path` (`in_workspace`: it lies in the
    /// working folder or a grant).
    pub fn attempts(&self, path: &std::path::Path, in_workspace: bool) -> bool {
        match self {
            FileToolsRefuse::Nothing => true,
            FileToolsRefuse::OutsideWorkspace => in_workspace,
            FileToolsRefuse::Extensions(exts) => !path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e)),
        }
    }
}

/// The npm package a CLI is installed from, and its pinned version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Install {
    /// The npm package (`@scope/name`).
    pub npm_package: &'static str,
    /// The exact version `tests/package.json` pins.
    pub version: &'static str,
}

/// The person's setup that points a CLI at a local model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PointAtModel {
    /// Files under the person's home: relative path, whole content.
    pub files: Vec<(String, String)>,
    /// Variables the person would set.
    pub vars: Vec<(String, String)>,
}

/// The person's own MCP server, as a CLI's settings would name it.
#[derive(Debug, Clone, Copy)]
pub struct PersonMcp<'a> {
    /// The server's entry (`command`, `args`, `env`), in the JSON most CLIs use.
    pub server: &'a Value,
    /// The file a plain program of the person's (an extension) writes when it is loaded.
    pub started_marker: &'a str,
}

/// Where a person's file lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonPlace {
    /// Under the person's home.
    Home,
    /// Under the launch's working folder (a project file, as a cloned repository has).
    Runtime,
}

/// One file of the person's setup.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonEdit {
    /// Where it lies.
    pub place: PersonPlace,
    /// Relative to `place`.
    pub path: String,
    /// What is written.
    pub content: PersonContent,
}

/// What is written.
#[derive(Debug, Clone, PartialEq)]
pub enum PersonContent {
    /// The whole file.
    Whole(String),
    /// One top-level key of a JSON object file that exists (an unparsable one is taken as `{}`).
    JsonKey {
        /// The key.
        key: String,
        /// Its new value.
        value: Value,
    },
}

/// What the model-driven layer plays with a CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plays {
    /// Every contract action through its own tools (full mode); `false`: only the bridge, in
    /// bridge-only mode (a CLI whose confined launches are bridge-only).
    pub own_tools: bool,
    /// The bridge in full mode too (structured shape), with the person's own MCP servers set up.
    pub bridge_in_full_mode: bool,
}

/// A person's settings file, for [`PointAtModel::files`].
pub fn file(path: &str, content: impl Into<String>) -> (String, String) {
    (path.to_owned(), content.into())
}

/// A person's variable, for [`PointAtModel::vars`].
pub fn var(name: &str, value: &str) -> (String, String) {
    (name.to_owned(), value.to_owned())
}

/// No person's MCP setup.
pub fn no_person_mcp(_: &PersonMcp<'_>) -> Vec<PersonEdit> {
    Vec::new()
}
