use std::path::PathBuf;

/// Why a policy could not be built. Every message names the offending input and says what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// A host pattern of `allowed_hosts` or `denied_hosts` that names no host.
    #[error(transparent)]
    BadHost(#[from] crate::egress::BadHostPattern),
    /// `network = "allowlist"` without a host to reach.
    #[error(
        "`[policy] network = \"allowlist\"` with an empty `allowed_hosts`: list the hosts a chat may reach (`allowed_hosts = [\"api.anthropic.com\", \"*.githubusercontent.com\"]`), or set network = \"isolated\" or \"shared\""
    )]
    NoAllowedHosts,
    /// `allowed_hosts` or `denied_hosts` without `network = "allowlist"`: they would do nothing.
    #[error(
        "`[policy] allowed_hosts` and `denied_hosts` take effect only with network = \"allowlist\", and network is \"{network}\": set network = \"allowlist\" or remove them"
    )]
    HostsWithoutAllowlist {
        /// The configured network.
        network: &'static str,
    },
    /// An adapter's acted-on place that is not a plain relative path (a bug in its table).
    #[error(
        "the {cli} adapter declares the acted-on place `{path}`, which is not a plain relative path (no `/` at the start, no `.` or `..`): fix the adapter's `acted_on` table"
    )]
    BadSetting {
        /// The adapter.
        cli: &'static str,
        /// The path as declared.
        path: String,
    },
    /// A path that must be absolute is relative.
    #[error("{what} `{path}` is not absolute: pass an absolute path")]
    Relative {
        /// Which input (`grant`, `protected root`, `state root`...).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// A path holds `..`, whose meaning depends on the links above it.
    #[error("{what} `{path}` contains `..`: pass the path without `..` components")]
    DotDot {
        /// Which input (`grant`, `protected root`, `state root`...).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// A path holds a NUL byte or a newline (no policy path may).
    #[error("{what} `{}` contains a NUL byte or a newline: rename it or pick another path", path.escape_debug())]
    BadCharacter {
        /// Which input (`grant`, `protected root`, `state root`...).
        what: &'static str,
        /// The path, as text.
        path: String,
    },
    /// A chat id that cannot name a folder.
    #[error(
        "chat id `{}` is not valid: use 1 to 128 characters from A-Z a-z 0-9 . _ - (not `.` or `..`)",
        id.escape_debug()
    )]
    BadChatId {
        /// The id as given.
        id: String,
    },
    /// A grant whose suffix is neither `:ro` nor `:rw`.
    #[error(
        "grant `{}` ends in `:{}`, which is not an access: write `:ro` (read-only) or `:rw` (read-write); a folder whose name holds `:` is granted with its access written out (`{}:rw`)",
        grant.escape_debug(), suffix.escape_debug(), grant.escape_debug()
    )]
    BadAccess {
        /// The grant as written.
        grant: String,
        /// What follows the last `:`.
        suffix: String,
    },
    /// A layout (written by hand, not by `Layout::resolve`) names a path that is not its
    /// canonical form.
    #[error(
        "the layout's {what} `{path}` is not canonical (it resolves to `{canonical}`): build the layout with `Layout::resolve`"
    )]
    LayoutNotCanonical {
        /// Which input (`grant`, `protected root`, `state root`...).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// Its canonical form.
        canonical: PathBuf,
    },
    /// A granted folder does not exist.
    #[error("grant `{path}` does not exist ({reason}): create it first or drop the grant")]
    GrantMissing {
        /// The path as given.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
    /// A grant names a file, not a folder.
    #[error("grant `{path}` is not a folder: grant the folder that holds it")]
    GrantNotFolder {
        /// The path as given.
        path: PathBuf,
    },
    /// A grant lies in another chat's runtime.
    #[error(
        "grant `{path}` resolves to `{resolved}`, inside another chat's runtime: a chat may only use its own runtime"
    )]
    GrantInOtherRuntime {
        /// The path as given.
        path: PathBuf,
        /// Where it resolves.
        resolved: PathBuf,
    },
    /// A grant lies in AgentWorks' own data (outside workspace-docs and this chat's runtime).
    #[error(
        "grant `{path}` resolves to `{resolved}`, inside the app folder `{app}` outside this chat's runtime: grant a workflow folder instead"
    )]
    GrantInAppFolder {
        /// The path as given.
        path: PathBuf,
        /// Where it resolves.
        resolved: PathBuf,
        /// The app folder (or the state root) it lies in.
        app: PathBuf,
    },
    /// A grant holds a protected root (or is one).
    #[error(
        "grant `{path}` contains the protected root `{root}`: grant a folder inside it instead"
    )]
    GrantContainsProtected {
        /// The path as given.
        path: PathBuf,
        /// The protected root.
        root: PathBuf,
    },
    /// A grant lies outside every protected root (open already).
    #[error(
        "grant `{path}` is outside every protected root, where everything is open already: leave it out"
    )]
    GrantOutsideProtected {
        /// The path as given.
        path: PathBuf,
    },
    /// A grant is named through a symlink at or below its protected root, or one leading into
    /// it.
    #[error(
        "grant `{}` resolves to `{}` through a symlink, at or below the protected root `{}` or leading into it: a grant is exactly the folder named, by its own path; grant `{}` itself, or remove the link",
        path.display(), resolved.display(), root.display(), resolved.display()
    )]
    GrantThroughSymlink {
        /// The path as given.
        path: PathBuf,
        /// Where it resolves.
        resolved: PathBuf,
        /// The protected root.
        root: PathBuf,
    },
    /// A grant lies inside an entry that an enclosing grant refuses.
    #[error(
        "grant `{}` lies in `{pattern}`, which the grant `{}` refuses: drop one of the two grants",
        path.display(), grant.display()
    )]
    GrantInRefused {
        /// The inner grant, canonical.
        path: PathBuf,
        /// The enclosing grant.
        grant: PathBuf,
        /// The refused pattern.
        pattern: String,
    },
    /// A refused pattern that names no single entry, or every entry.
    #[error("refused pattern `{}` is not valid: {why}", pattern.escape_debug())]
    BadPattern {
        /// The refused pattern.
        pattern: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A path cannot be resolved (a symlink loop, a name too long, a folder that cannot be
    /// entered).
    #[error("cannot resolve {what} `{path}` ({reason}): fix the path or the symlinks along it")]
    Unresolvable {
        /// Which input (`grant`, `protected root`, `state root`...).
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
}
