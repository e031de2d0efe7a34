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
    pub state_root: Option<PathBuf>,
    pub workspace_docs: Option<PathBuf>,
    pub config: Option<PathBuf>,
    /// The `cli-sandbox` binary that runs the Linux helper (see [`crate::wrap::helper_binary`]).
    pub helper: Option<PathBuf>,
}

/// The configuration and layout in force for this process.
#[derive(Debug, Clone)]
pub struct Context {
    pub os: Os,
    /// The launcher runs as root, so a chat would be the machine's root (see
    /// `PolicyRequest::privileged`). Set by [`Context::load`] from this process's uid; a caller
    /// that builds a policy for another uid's launch sets it to match.
    pub privileged: bool,
    pub helper: Option<PathBuf>,
    pub config: Config,
    pub layout: Layout,
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
                Config::parse(&text, &path.display().to_string())?
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
        let inputs = LayoutInputs {
            os,
            home,
            xdg_data_home: env_path("XDG_DATA_HOME"),
            state_root: settings
                .state_root
                .clone()
                .or_else(|| env_path("AGENTWORKS_STATE_ROOT"))
                .or_else(|| config.layout.state_root.clone()),
            workspace_docs: settings
                .workspace_docs
                .clone()
                .or_else(|| env_path("AGENTWORKS_WORKSPACE_DOCS"))
                .or_else(|| config.layout.workspace_docs.clone()),
        };
        let layout = Layout::resolve(&inputs, &RealDisk)?;
        Ok(Context {
            os,
            privileged: launcher_is_root(),
            helper: settings.helper.clone(),
            config,
            layout,
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

    /// Creates the chat's runtime folder if it is missing (mode 0700: it is the chat's alone).
    pub fn ensure_runtime(&self, policy: &Policy) -> Result<(), Error> {
        ensure_dir(&policy.runtime)
    }
}

/// Whether this process runs as root: then a chat would be the machine's root, and the policy
/// closes the system's folders to writing.
pub fn launcher_is_root() -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

pub(crate) fn ensure_dir(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| Error::Io {
            what: format!("folder `{}`", path.display()),
            source: e,
        })
}
