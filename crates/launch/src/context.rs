//! Where things are and which rules hold: the configuration, the layout and a chat's policy,
//! read from the settings the caller passes and the environment.

use std::path::{Path, PathBuf};

use sandbox_core::{ChatId, Config, GrantRequest, Layout, LayoutInputs, Os, Policy, PolicyRequest};

use crate::Error;
use crate::disk::RealDisk;

/// What the caller may set (the binary's global flags; a library caller sets them directly).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The person's home; `$HOME` when not set.
    pub home: Option<PathBuf>,
    /// AgentWorks' app folder as this process sees it (`--state-root`); then
    /// `AGENTWORKS_STATE_ROOT`, the configuration's `[layout] state_root`, and the OS's default
    /// place in the home.
    pub state_root: Option<PathBuf>,
    /// The workspace-docs folder (`--workspace-docs`); then `AGENTWORKS_WORKSPACE_DOCS`, the
    /// configuration's, and `<state root>/workspace-docs`.
    pub workspace_docs: Option<PathBuf>,
    /// The configuration file (`--config`, TOML); none: every default.
    pub config: Option<PathBuf>,
    /// The `cli-sandbox` binary that runs the Linux helper (see [`crate::wrap::helper_binary`]).
    pub helper: Option<PathBuf>,
}

/// The configuration and layout in force for this process.
#[derive(Debug, Clone)]
pub struct Context {
    /// The OS policies are built for (this one, or another for `profile --backend`).
    pub os: Os,
    /// The launcher runs as root, so a chat would be the machine's root (see
    /// `PolicyRequest::privileged`). Set by [`Context::load`] from this process's uid; a caller
    /// that builds a policy for another uid's launch sets it to match.
    pub privileged: bool,
    /// The `cli-sandbox` binary that applies a Linux plan ([`Settings::helper`], else
    /// `CLI_SANDBOX_HELPER`); `None`: a Linux launch says it is missing.
    pub helper: Option<PathBuf>,
    /// The configuration read from [`Settings::config`] (every default without one).
    pub config: Config,
    /// Where the home, the app folder and workspace-docs are, canonical.
    /// [`sandbox_core::Policy::build`] refuses a layout changed here into one that is not.
    pub layout: Layout,
    /// The places a flag, a variable or the configuration named, with where: each must exist
    /// ([`Context::check_named_places`]).
    named: Vec<(&'static str, PathBuf, String)>,
}

impl Context {
    /// Reads the configuration file (if any) and resolves the layout for the OS this runs on.
    /// Precedence: setting (flag) > environment variable > configuration > default.
    pub fn load(settings: &Settings) -> Result<Context, Error> {
        let os = Os::current().unwrap_or(Os::Linux);
        Context::load_for(settings, os)
    }

    /// As [`Context::load`], for a given OS (to compile another OS's profile).
    pub fn load_for(settings: &Settings, os: Os) -> Result<Context, Error> {
        let config = match &settings.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::BadInput(format!(
                        "configuration `{}` cannot be read ({e}): check the --config path",
                        path.display()
                    ))
                })?;
                Config::parse(
                    &text,
                    &path.display().to_string(),
                    &crate::registry::names(),
                )?
            }
            None => Config::default(),
        };
        let env_path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = settings
            .home
            .clone()
            .or_else(|| env_path("HOME"))
            .ok_or(Error::NoHome)?;
        let from_file = |key: &str| match &settings.config {
            Some(file) => format!("[layout] {key} in `{}`", file.display()),
            None => format!("[layout] {key}"),
        };
        // Each named place, with where it was named (for the error when it does not exist).
        let state_root = named(
            settings.state_root.clone(),
            "--state-root",
            "AGENTWORKS_STATE_ROOT",
            config.layout.state_root.clone(),
            from_file("state_root"),
        );
        let workspace_docs = named(
            settings.workspace_docs.clone(),
            "--workspace-docs",
            "AGENTWORKS_WORKSPACE_DOCS",
            config.layout.workspace_docs.clone(),
            from_file("workspace_docs"),
        );
        let mut named = Vec::new();
        for (what, place) in [
            ("state root", &state_root),
            ("workspace-docs", &workspace_docs),
        ] {
            if let Some((path, source)) = place {
                named.push((what, path.clone(), source.clone()));
            }
        }
        let inputs = LayoutInputs {
            os,
            home,
            xdg_data_home: env_path("XDG_DATA_HOME"),
            state_root: state_root.map(|(path, _)| path),
            workspace_docs: workspace_docs.map(|(path, _)| path),
        };
        let layout = Layout::resolve(&inputs, &RealDisk)?;
        Ok(Context {
            os,
            privileged: launcher_is_root(),
            helper: settings.helper.clone(),
            config,
            layout,
            named,
        })
    }

    /// Validates a chat id and grants and builds the chat's policy.
    pub fn policy(&self, chat: &str, grants: &[GrantRequest]) -> Result<Policy, Error> {
        let chat = ChatId::new(chat)?;
        Ok(Policy::build(
            &PolicyRequest {
                os: self.os,
                layout: &self.layout,
                chat: &chat,
                grants,
                config: &self.config,
                privileged: self.privileged,
            },
            &RealDisk,
        )?)
    }

    /// Refuses a state root or workspace-docs that a flag, a variable or the configuration
    /// named and that does not exist: a typo, or a layout not there yet. A launch would
    /// otherwise make `/typo/state/...` and protect the typo, while the real workspace-docs,
    /// named nowhere, stayed open. The binary asks this of every command; a library caller that
    /// only computes a policy need not.
    pub fn check_named_places(&self) -> Result<(), Error> {
        for (what, path, source) in &self.named {
            must_be_a_folder(what, path, source)?;
        }
        Ok(())
    }

    /// What a launch needs before it writes anything: the named places
    /// ([`Context::check_named_places`]) and a state root that exists, named or by default (the
    /// plan and the chat's runtime go inside it; creating it would create AgentWorks' app folder
    /// in the name of an app that is not installed).
    pub fn require_state_root(&self) -> Result<(), Error> {
        self.check_named_places()?;
        must_be_a_folder("state root", &self.layout.state_root, STATE_ROOT_SOURCE)
    }

    /// Creates the chat's runtime folder if it is missing (mode 0700: it is the chat's alone),
    /// inside the state root, which must exist ([`Context::require_state_root`]).
    pub fn ensure_runtime(&self, policy: &Policy) -> Result<(), Error> {
        self.require_state_root()?;
        ensure_runtime_in(&self.layout.state_root, policy.runtime())
    }
}

/// [`Context::ensure_runtime`] for a runtime inside `state_root`.
pub(crate) fn ensure_runtime_in(state_root: &Path, runtime: &Path) -> Result<(), Error> {
    must_be_a_folder("state root", state_root, STATE_ROOT_SOURCE)?;
    tracing::debug!(runtime = %runtime.display(), "the chat's runtime");
    ensure_dir(runtime)
}

/// Where a state root that is not there came from, when it was not named.
const STATE_ROOT_SOURCE: &str =
    "AgentWorks' app folder; --state-root or AGENTWORKS_STATE_ROOT names another";

/// The first of a flag, a variable and the configuration that names a place, with its source.
fn named(
    flag: Option<PathBuf>,
    flag_name: &str,
    var: &str,
    configured: Option<PathBuf>,
    configured_name: String,
) -> Option<(PathBuf, String)> {
    let from_var = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    flag.map(|p| (p, flag_name.to_owned()))
        .or_else(|| from_var.map(|p| (p, var.to_owned())))
        .or_else(|| configured.map(|p| (p, configured_name)))
}

fn must_be_a_folder(what: &str, path: &Path, source: &str) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::BadInput(format!(
            "{what} `{}` ({source}) is not a folder: name AgentWorks' folder; nothing was created",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::BadInput(format!(
            "{what} `{}` ({source}) does not exist: name an existing folder, or create it first; nothing was created",
            path.display()
        ))),
        Err(e) => Err(Error::BadInput(format!(
            "{what} `{}` ({source}) cannot be used ({e}): name a folder this user can reach; nothing was created",
            path.display()
        ))),
    }
}

/// Whether this process runs as root: then a chat would be the machine's root, and the policy
/// closes the system's folders to writing.
pub fn launcher_is_root() -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

pub(crate) fn ensure_dir(path: &Path) -> Result<(), Error> {
    Ok(sandbox_linux::ensure_dir(path)?)
}
