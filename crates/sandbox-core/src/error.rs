use std::path::PathBuf;

/// Why a policy could not be built. Every message names the offending input and says what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("{what} `{path}` is not absolute: pass an absolute path")]
    Relative { what: &'static str, path: PathBuf },
    #[error("{what} `{path}` contains `..`: pass the path without `..` components")]
    DotDot { what: &'static str, path: PathBuf },
    #[error("{what} `{}` contains a NUL byte or a newline: rename it or pick another path", path.escape_debug())]
    BadCharacter { what: &'static str, path: String },
    #[error(
        "chat id `{}` is not valid: use 1 to 128 characters from A-Z a-z 0-9 . _ - (not `.` or `..`)",
        id.escape_debug()
    )]
    BadChatId { id: String },
    #[error(
        "grant `{}` ends in `:{}`, which is not an access: write `:ro` (read-only) or `:rw` (read-write); a folder whose name holds `:` is granted with its access written out (`{}:rw`)",
        grant.escape_debug(), suffix.escape_debug(), grant.escape_debug()
    )]
    BadAccess { grant: String, suffix: String },
    #[error(
        "the layout's {what} `{path}` is not canonical (it resolves to `{canonical}`): build the layout with `Layout::resolve`"
    )]
    LayoutNotCanonical {
        what: &'static str,
        path: PathBuf,
        canonical: PathBuf,
    },
    #[error("grant `{path}` does not exist ({reason}): create it first or drop the grant")]
    GrantMissing { path: PathBuf, reason: String },
    #[error("grant `{path}` is not a folder: grant the folder that holds it")]
    GrantNotFolder { path: PathBuf },
    #[error(
        "grant `{path}` resolves to `{resolved}`, inside another chat's runtime: a chat may only use its own runtime"
    )]
    GrantInOtherRuntime { path: PathBuf, resolved: PathBuf },
    #[error(
        "grant `{path}` resolves to `{resolved}`, inside the app folder `{app}` outside this chat's runtime: grant a workflow folder instead"
    )]
    GrantInAppFolder {
        path: PathBuf,
        resolved: PathBuf,
        app: PathBuf,
    },
    #[error(
        "grant `{path}` contains the protected root `{root}`: grant a folder inside it instead"
    )]
    GrantContainsProtected { path: PathBuf, root: PathBuf },
    #[error(
        "grant `{path}` is outside every protected root, where everything is open already: leave it out"
    )]
    GrantOutsideProtected { path: PathBuf },
    #[error(
        "grant `{}` resolves to `{}` through a symlink, at or below the protected root `{}` or leading into it: a grant is exactly the folder named, by its own path; grant `{}` itself, or remove the link",
        path.display(), resolved.display(), root.display(), resolved.display()
    )]
    GrantThroughSymlink {
        path: PathBuf,
        resolved: PathBuf,
        root: PathBuf,
    },
    #[error(
        "grant `{}` lies in `{pattern}`, which the grant `{}` refuses: drop one of the two grants",
        path.display(), grant.display()
    )]
    GrantInRefused {
        path: PathBuf,
        grant: PathBuf,
        pattern: String,
    },
    #[error("refused pattern `{}` is not valid: {why}", pattern.escape_debug())]
    BadPattern { pattern: String, why: &'static str },
    #[error("cannot resolve {what} `{path}` ({reason}): fix the path or the symlinks along it")]
    Unresolvable {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
}
