//! Launching a coding CLI inside the platform's sandbox: the provider's facade.
//!
//! This crate is what a provider (or mcpagent) links. It turns "this CLI, for this chat, with
//! these folders" into a launch confined by the OS: the Seatbelt profile on macOS, the Linux plan
//! (namespaces, Landlock, seccomp) run by the `cli-sandbox exec` helper, or bridge-only where no
//! confinement is possible; and it writes the entries each CLI needs in the person's own files
//! (pre-trust) under a lock, atomically, never through a link into protected data. It is not a
//! command line (that is the `cli-sandbox` crate) and not the contract (the `contract` crate).
//!
//! # Entry point
//!
//! A [`LaunchSpec`] (which CLI, which chat, its grants), a [`Context`] (where the person's files
//! and AgentWorks' data are), the platform's facts ([`probe`]); then three steps:
//! [`PreparedLaunch::prepare`] decides and wraps (it writes only our own plan file),
//! [`PreparedLaunch::pre_trust`] writes the person's files, and the command runs, from its
//! `argv`, `env` and `cwd` in any language or as [`PreparedLaunch::tokio_command`].
//! [`LaunchCommand::build`] does all three in one call.
//!
//! What must be there at run time: on Linux, an installed helper that applies the plan,
//! `cli-sandbox-helper` (the helper alone, whose start costs each launch least) or the full
//! `cli-sandbox` binary (the same helper as `cli-sandbox exec`), named by [`Settings::helper`]
//! or `CLI_SANDBOX_HELPER`, in a place no chat can write (it starts unconfined: `prepare`
//! refuses one a chat could replace with [`Error::HelperReplaceable`] unless
//! [`Settings::accept_replaceable_helper`] names that path); it is never looked up on `PATH`.
//! Without one, `prepare` says so. On macOS, `/usr/bin/sandbox-exec`.
//!
//! ```
//! use launch::{Context, GrantRequest, LaunchSpec, PreparedLaunch, Settings, Shape};
//! # let scratch = tempfile::tempdir()?;
//! # let demo = launch::demo::Demo::create(scratch.path())?;
//! # let installed = std::path::Path::new("/usr/local/bin/cli-sandbox");
//! # let helper = if installed.exists() { installed.to_owned() } else { "/bin/true".into() };
//!
//! // Where the person's files and AgentWorks' data are (each defaults from $HOME), and the
//! // installed helper.
//! let settings = Settings {
//!     home: Some(demo.home.clone()),
//!     state_root: Some(demo.state_root.clone()),
//!     workspace_docs: Some(demo.workspace_docs.clone()),
//!     config: None,
//!     helper: Some(helper),
//!     accept_replaceable_helper: None,
//! };
//! let ctx = Context::load(&settings)?;
//! let spec = LaunchSpec::new("codex", "chat-1")
//!     .grant(GrantRequest::parse(&format!("{}:rw", demo.granted.display()))?)
//!     .shape(Shape::Tmux)
//!     .prompt("Summarize the workflow");
//!
//! // 1. The decision and the wrapped command; nothing of the person's is written yet.
//! let launch = PreparedLaunch::prepare(&ctx, &spec, &launch::probe())?;
//! println!("{:?} ({}): {:?}", launch.decision().backend, launch.decision().reason, launch.argv());
//!
//! // 2. Pre-trust, a step of its own: here Codex's trust entry for the chat's working folder.
//! let done = launch.pre_trust()?;
//! assert!(done.edits.iter().any(|e| e.file.ends_with(".codex/config.toml")));
//!
//! // 3. Run it (`launch.argv()`, `launch.env()`, `launch.cwd()` from any language), or with tokio; the
//! //    chat ends when the child is dropped.
//! match launch.tokio_command() {
//!     Ok(_command) => { /* _command.spawn()? */ }
//!     Err(not_installed) => println!("{not_installed}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod chat_env;
pub mod context;
pub mod demo;
pub mod egress;
mod end;
mod error;
mod facts;
pub mod person_files;
pub mod registry;
pub mod seatbelt;
pub mod wrap;

pub use context::{Context, Settings};
pub use end::{EndDone, EndFile, end_chat};
pub use error::Error;
pub use facts::probe;
/// The compiled Linux plan ([`PreparedLaunch::in_process_plan`]).
pub use sandbox_linux::plan::LinuxPlan;
pub use wrap::{
    EditDone, LandlockArgs, LandlockCmd, LaunchCommand, LaunchSpec, PreTrustDone, PreparedLaunch,
    Program,
};

// The core types a launch takes and gives, so that a provider needs this crate alone.
pub use sandbox_core::platform::Facts;
pub use sandbox_core::{
    Access, Backend, Decision, EnvChanges, FileEdit, GrantRequest, LaunchFile, McpServer, Mode,
    Shape, Stdin,
};
