//! The platform-neutral heart of cli-sandbox.
//!
//! This crate says *what* a confined coding CLI may do, never *how* an operating system enforces
//! it. It holds:
//!
//! - [`Layout`]: where the home, the app folder (state root), workspace-docs and each chat's
//!   runtime are;
//! - [`Policy`]: one chat's rules (open, closed, granted, refused, blocked), built and validated
//!   from a [`PolicyRequest`], and [`Policy::decide`], the reference semantics both backends are
//!   tested against;
//! - [`Config`]: the optional TOML configuration (`--config FILE`);
//! - [`platform`]: the decision table that picks a backend and a [`Mode`] from facts about the
//!   machine (the facts are gathered elsewhere);
//! - [`CliAdapter`] and [`LaunchRequest`]: what each CLI crate supplies;
//! - [`Policy::person_file`]: where the launcher may read and write the person's own settings
//!   files (pre-trust) for a chat, once their real location is known.
//!
//! What it is not: it makes no system call and knows no OS mechanism (no Seatbelt, no Landlock,
//! no namespaces). Anything that touches the disk comes in through a small trait ([`Resolver`],
//! [`PersonFiles`]) that the caller implements, so every rule here is testable with fakes.

// Nothing here needs `unsafe`: the system calls live in `launch`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod adapter;
pub mod adapter_kit;
mod config;
pub mod driving;
pub mod egress;
pub mod environment;
mod error;
pub mod guarantee;
mod layout;
pub mod limits;
mod path;
mod person;
pub mod platform;
mod policy;
pub mod readiness;
mod replace;
pub mod settings;

pub use adapter::{
    AdapterError, ArgsAndEdits, ArgvParts, CliAdapter, CliLaunch, EditAction, EnvChanges, FileEdit,
    FileFormat, LaunchFile, LaunchRequest, McpIsolation, McpServer, PersonFiles, PreTrust,
    SettingCheck, Stdin,
};
pub use config::{
    CliConfig, Config, ConfigError, EnvPolicy, LayoutConfig, Network, PolicyConfig, Secrets,
};
pub use driving::Driving;
pub use environment::{ENV_ALWAYS_KEPT, EnvAllow};
pub use error::PolicyError;
pub use guarantee::{Enforcement, Guarantee, Promise};
pub use layout::{ChatId, Layout, LayoutInputs, Os};
pub use limits::{Limits, LimitsConfig, Size};
pub use path::{
    Remembering, Resolver, canonicalize_lenient, check_absolute_clean,
    has_parent_dir as path_has_parent_dir, plain_path,
};
pub use person::{NamedPlace, PersonPlaceRefusal};
pub use platform::{Backend, Decision};
pub use policy::{
    Access, BLOCKED_PROGRAMS_LINUX, BLOCKED_PROGRAMS_MACOS, DEFAULT_REFUSED, Egress, EntryKind,
    Grant, GrantRequest, HARDEN_LEAVES_OPEN, HOME_STATE_FOLDERS, HOME_TOP_STATE_FILES,
    HOME_TOP_STATE_TEMP_MACOS, Hardened, KERNEL_SECRETS_LINUX, KERNEL_TUNABLES_LINUX, Mode, Op,
    PERSISTENCE_COMMON, PERSISTENCE_EMPTY_IS_ABSENT, PERSISTENCE_LINUX, PERSISTENCE_MACOS, Policy,
    PolicyRequest, RefusedEntries, RefusedPattern, Rule, SECRETS_HOME, SQLITE_SIDECARS, Shape,
    Verdict, WRITABLE_AS_ROOT, WRITABLE_AS_ROOT_MACOS, git_protected,
};
pub use readiness::{Readiness, Ready};
pub use replace::{OnDisk, Replaceable};
pub use settings::{ActedOn, ActedOnKind, Anchor, SettingsPath, SettingsRequest};
