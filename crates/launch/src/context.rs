//! Where things are and which rules hold: the configuration, the layout and a chat's policy,
//! read from the settings the caller passes and the environment.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sandbox_core::{
    ChatId, Config, GrantRequest, Layout, LayoutInputs, Os, Policy, PolicyRequest, Remembering,
};

use crate::Error;
use sandbox_linux::disk::RealDisk;

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
    /// A helper the provider runs although a chat could replace it (see
    /// [`crate::wrap::helper_for`]), named exactly (the path as given, or where it resolves);
    /// then `CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER`. Any other helper in such a place is refused
    /// ([`crate::Error::HelperReplaceable`]). Meant for a machine where no chat runs as anyone
    /// who could write there; the launch logs a warning each time.
    pub accept_replaceable_helper: Option<PathBuf>,
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
    /// [`Settings::accept_replaceable_helper`], else `CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER`.
    pub accept_replaceable_helper: Option<PathBuf>,
    /// The configuration read from [`Settings::config`] (every default without one).
    pub config: Config,
    /// Where that configuration was read, absolute (`None`: every default); a chat is told it
    /// ([`crate::chat_env`]) for `explain` inside it.
    pub config_file: Option<PathBuf>,
    /// Where the home, the app folder and workspace-docs are, canonical.
    /// [`sandbox_core::Policy::build`] refuses a layout changed here into one that is not.
    pub layout: Layout,
    /// The places a flag, a variable or the configuration named, with where: each must exist
    /// ([`Context::check_named_places`]).
    named: Vec<(&'static str, PathBuf, String)>,
    /// What the load's look at the disk found canonical (each path asked, with its canonical
    /// form), and when: a policy built within [`ONE_LAUNCH`] of it takes these answers instead
    /// of asking again (see [`Context::policy`]).
    canonical: Vec<(PathBuf, PathBuf)>,
    loaded_at: Instant,
}

/// How long after [`Context::load`] its looks at the disk still stand for a one-shot launch
/// (`step`, `exec`, `run`: load, policy, runtime and plan within about a millisecond; ten
/// leaves room for a loaded machine). Past it (a provider that keeps one context for many
/// launches) every look is made again.
///
/// Races: an answer taken over is the disk as it was up to this long before. It is a check
/// whose second answer is used for nothing the first could not be: the layout's paths are
/// named in the policy as the load found them whatever a second look says. Whatever changes after the last look, the
/// kernel sees when the mounts are made, as before; what changes between the two looks was
/// seen by neither before this (the second look came before the mounts too).
const ONE_LAUNCH: Duration = Duration::from_millis(10);

fn within_one_launch(since: Instant) -> bool {
    since.elapsed() < ONE_LAUNCH
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
        // The app folder and a state root named at its default place are one path, looked at
        // once.
        let looks = Remembering::new(&RealDisk);
        let layout = Layout::resolve(&inputs, &looks)?;
        Ok(Context {
            os,
            privileged: launcher_is_root(),
            helper: settings.helper.clone(),
            accept_replaceable_helper: settings
                .accept_replaceable_helper
                .clone()
                .or_else(|| env_path("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER")),
            config,
            config_file: settings
                .config
                .as_ref()
                .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.clone())),
            layout,
            named,
            canonical: looks.into_known(),
            loaded_at: Instant::now(),
        })
    }

    /// Validates a chat id and grants and builds the chat's policy.
    ///
    /// `Policy::build` checks that the layout is canonical, a look at the home, the app folder,
    /// the state root and workspace-docs that the load has just made: within 10 ms of the load
    /// (the time a one-shot launch takes, with room) the load's answers stand (a layout field
    /// changed since is a path it did not look at, and is looked at); later, every path is
    /// looked at again. Within the build, a path is looked at once.
    pub fn policy(&self, chat: &str, grants: &[GrantRequest]) -> Result<Policy, Error> {
        let chat = ChatId::new(chat)?;
        let earlier: &[(PathBuf, PathBuf)] = if within_one_launch(self.loaded_at) {
            &self.canonical
        } else {
            &[]
        };
        let looks = Remembering::with(&RealDisk, earlier);
        let settings = settings_requests();
        Ok(Policy::build(
            &PolicyRequest {
                os: self.os,
                layout: &self.layout,
                chat: &chat,
                grants,
                config: &self.config,
                privileged: self.privileged,
                settings: &settings,
            },
            &looks,
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
    /// inside the state root, which must exist ([`Context::require_state_root`]). The state
    /// root is looked at once, right before the folder is made in it (not also by
    /// `require_state_root`: three looks in a row, before).
    pub fn ensure_runtime(&self, policy: &Policy) -> Result<(), Error> {
        self.check_named_places()?;
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

/// Every registered adapter's acted-on places ([`sandbox_core::CliAdapter::acted_on`]), with the
/// value of each folder variable in this process's environment (which the CLI inherits): a chat
/// of any CLI can write any CLI's settings, so every chat's policy closes them all.
pub fn settings_requests() -> Vec<sandbox_core::SettingsRequest> {
    let mut out = Vec::new();
    for adapter in crate::registry::ADAPTERS {
        for entry in adapter.acted_on() {
            let folder = match entry.anchor {
                sandbox_core::Anchor::Folder { var, .. } => std::env::var_os(var)
                    .map(PathBuf::from)
                    // A relative one is refused by the adapter at launch; here it moves nothing.
                    .filter(|p| p.is_absolute()),
                _ => None,
            };
            out.push(sandbox_core::SettingsRequest {
                cli: adapter.name(),
                entry: *entry,
                folder,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::Demo;
    use sandbox_core::PolicyError;

    /// A time that stays within [`ONE_LAUNCH`] however long the test takes (`elapsed` of a
    /// later instant is zero): `Instant::now()` would fail the test on a machine that stalls
    /// it for 10 ms.
    fn just_now() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    fn long_ago() -> Instant {
        Instant::now()
            .checked_sub(ONE_LAUNCH * 100)
            .expect("the clock is past a second")
    }

    /// The home moved, and a symlink left at its old name: the layout of a context loaded
    /// before names a home that is no longer canonical.
    fn move_the_home(demo: &Demo) -> PathBuf {
        let moved = demo.root.join("home-moved");
        std::fs::rename(&demo.home, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &demo.home).unwrap();
        moved
    }

    fn not_canonical(result: Result<Policy, Error>) -> bool {
        matches!(
            result,
            Err(Error::Policy(PolicyError::LayoutNotCanonical { .. }))
        )
    }

    #[test]
    fn a_context_kept_past_one_launch_looks_at_its_layout_again() {
        let scratch = tempfile::tempdir().unwrap();
        let demo = Demo::create(scratch.path()).unwrap();
        let mut ctx = Context::load(&demo.settings()).unwrap();
        move_the_home(&demo);
        // Right after the load, the load's looks stand (the window ONE_LAUNCH accepts)...
        ctx.loaded_at = just_now();
        assert!(ctx.policy(&demo.chat, &[]).is_ok());
        // ...and past it the home is looked at again, and refused.
        ctx.loaded_at = long_ago();
        assert!(not_canonical(ctx.policy(&demo.chat, &[])));
    }

    #[test]
    fn a_layout_changed_after_the_load_is_looked_at() {
        let scratch = tempfile::tempdir().unwrap();
        let demo = Demo::create(scratch.path()).unwrap();
        let mut ctx = Context::load(&demo.settings()).unwrap();
        let link = demo.root.join("home-link");
        std::os::unix::fs::symlink(&demo.home, &link).unwrap();
        ctx.layout.home = link;
        assert!(not_canonical(ctx.policy(&demo.chat, &[])));
    }

    #[test]
    fn a_home_swapped_for_a_link_between_two_launches_is_seen_by_the_second() {
        let scratch = tempfile::tempdir().unwrap();
        let demo = Demo::create(scratch.path()).unwrap();
        let first = Context::load(&demo.settings()).unwrap();
        first.policy(&demo.chat, &[]).unwrap();
        let moved = move_the_home(&demo);
        let second = Context::load(&demo.settings()).unwrap();
        assert_eq!(second.layout.home, moved);
        assert!(second.layout.state_root.starts_with(&moved));
    }

    #[test]
    fn ensure_runtime_looks_at_the_named_places_and_the_state_root_again() {
        let scratch = tempfile::tempdir().unwrap();
        let demo = Demo::create(scratch.path()).unwrap();
        let ctx = Context::load(&demo.settings()).unwrap();
        ctx.check_named_places().unwrap();
        let policy = ctx.policy(&demo.chat, &[]).unwrap();
        if policy.runtime().exists() {
            std::fs::remove_dir_all(policy.runtime()).unwrap();
        }
        // A named place gone since the load's check: refused before anything is made.
        let kept = demo.root.join("workspace-docs-kept");
        std::fs::rename(&demo.workspace_docs, &kept).unwrap();
        let err = ctx.ensure_runtime(&policy).unwrap_err().to_string();
        assert!(
            err.contains("workspace-docs") && err.contains("does not exist"),
            "{err}"
        );
        assert!(!policy.runtime().exists());
        // Back in place, the runtime is made; the state root gone, it is not.
        std::fs::rename(&kept, &demo.workspace_docs).unwrap();
        ctx.ensure_runtime(&policy).unwrap();
        assert!(policy.runtime().is_dir());
        std::fs::remove_dir_all(&demo.state_root).unwrap();
        assert!(ctx.ensure_runtime(&policy).is_err());
        assert!(!policy.runtime().exists());
    }
}
