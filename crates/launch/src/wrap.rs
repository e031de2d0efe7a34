//! [`PreparedLaunch`] and [`LaunchCommand`]: one routine that wraps any adapter's launch, for
//! every backend (the design calls them `LandlockArgs` and `LandlockCmd`; both names remain as
//! aliases).
//!
//! Platform decision -> pre-trust -> the adapter's argv and env -> wrapped in Seatbelt
//! (`/usr/bin/sandbox-exec ...`), in the Linux helper (`cli-sandbox exec --policy FILE -- ...`),
//! or launched bridge-only with the reason. [`PreparedLaunch`] is the result as data (for a tmux
//! pane or a caller in another language); [`LaunchCommand`] turns it into a ready
//! `tokio::process::Command`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sandbox_core::platform::{self, Facts};
use sandbox_core::{
    Backend, CliAdapter, Decision, EnvChanges, FileEdit, LaunchFile, LaunchRequest, McpServer,
    Mode, Policy, Shape, Stdin,
};
use sandbox_linux::plan::LinuxPlan;
use serde::Serialize;

use crate::person_files::{PersonFilesGuard, RealPersonFiles};
use crate::seatbelt::SeatbeltProfile;
use crate::{Context, Error, registry};

/// What the caller asks for: which CLI, which chat, how. [`LaunchSpec::new`] gives the defaults
/// (headless, tools on, no grant, no bridge, no prompt); the other methods set one field each.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// The adapter's name in [`crate::registry`] (`codex`, `claude`, ...).
    pub cli: String,
    /// The chat's id (`[A-Za-z0-9._-]{1,128}`): its runtime is the CLI's working folder.
    pub chat: String,
    /// The folders of workspace-docs the chat may use, with their access.
    pub grants: Vec<sandbox_core::GrantRequest>,
    /// In a tmux pane, or headless with a JSON stream on stdout.
    pub shape: Shape,
    /// The mode asked for; the platform decision may lower `Full` to `BridgeOnly`.
    pub mode: Mode,
    /// The MCP bridge server the CLI is given (the only MCP server it sees).
    pub mcp_bridge: Option<McpServer>,
    /// The chat's first prompt, passed the way the CLI takes one.
    pub prompt: Option<String>,
    /// The model, in the CLI's own naming.
    pub model: Option<String>,
    /// Passed to the CLI after the adapter's own arguments.
    pub extra_args: Vec<String>,
    /// Where the record of what the kernel refused the chat is written when it ends
    /// (`docs/json.md`, "denials"); `None`: no record.
    pub denials: Option<PathBuf>,
    /// A program launched instead of a CLI's: with `cli` empty, a launch of this program alone
    /// under the chat's confinement ([`LaunchSpec::program`], a scripted step); with a `cli`, the
    /// CLI's launch (its policy, environment and pre-trust) with this program in the CLI's place
    /// ([`LaunchSpec::stand_in`], a harness that stands in for the CLI).
    pub program: Option<Program>,
}

/// A program and its arguments, launched in place of a CLI ([`LaunchSpec::program`],
/// [`LaunchSpec::stand_in`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The program (run as given: a bare name is looked up on the chat's `PATH`).
    pub path: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl LaunchSpec {
    /// `cli` (a name of [`registry::names`]) for the chat `chat`: headless
    /// ([`Shape::Structured`]), with its own tools on inside the sandbox ([`Mode::Full`]), no
    /// grant, no MCP bridge, no prompt, the CLI's own model.
    pub fn new(cli: impl Into<String>, chat: impl Into<String>) -> LaunchSpec {
        LaunchSpec {
            cli: cli.into(),
            chat: chat.into(),
            grants: Vec::new(),
            shape: Shape::Structured,
            mode: Mode::Full,
            mcp_bridge: None,
            prompt: None,
            model: None,
            extra_args: Vec::new(),
            denials: None,
            program: None,
        }
    }

    /// A launch of `path` with `args` for the chat `chat`, no CLI: under the chat's confinement
    /// (its policy; never bridge-only: a machine that cannot confine refuses it with
    /// [`Error::NeedsConfinement`]), in its runtime, with the variables that tell it which chat
    /// it is, and no pre-trust. A scripted workflow step (`cli-sandbox step`) is one.
    pub fn program(
        chat: impl Into<String>,
        path: impl Into<PathBuf>,
        args: impl IntoIterator<Item = OsString>,
    ) -> LaunchSpec {
        let mut spec = LaunchSpec::new(String::new(), chat);
        spec.program = Some(Program {
            path: path.into(),
            args: args.into_iter().collect(),
        });
        spec
    }

    /// The CLI's launch (its decision, policy, environment, pre-trust) with `path` and `args`
    /// in place of the CLI's own command: a harness that stands in for the CLI (the contract's).
    pub fn stand_in(
        mut self,
        path: impl Into<PathBuf>,
        args: impl IntoIterator<Item = OsString>,
    ) -> LaunchSpec {
        self.program = Some(Program {
            path: path.into(),
            args: args.into_iter().collect(),
        });
        self
    }

    /// Adds a folder the chat may use (`GrantRequest::parse("/path:ro")` reads the text form).
    pub fn grant(mut self, grant: sandbox_core::GrantRequest) -> LaunchSpec {
        self.grants.push(grant);
        self
    }

    /// Interactive in a tmux pane, or headless.
    pub fn shape(mut self, shape: Shape) -> LaunchSpec {
        self.shape = shape;
        self
    }

    /// Tools on inside the sandbox, or bridge-only.
    pub fn mode(mut self, mode: Mode) -> LaunchSpec {
        self.mode = mode;
        self
    }

    /// The MCP server the chat reaches AgentWorks through.
    pub fn mcp_bridge(mut self, bridge: McpServer) -> LaunchSpec {
        self.mcp_bridge = Some(bridge);
        self
    }

    /// The first prompt (the tmux shape starts with it; the headless shape runs it).
    pub fn prompt(mut self, prompt: impl Into<String>) -> LaunchSpec {
        self.prompt = Some(prompt.into());
        self
    }

    /// The model, where the CLI takes one.
    pub fn model(mut self, model: impl Into<String>) -> LaunchSpec {
        self.model = Some(model.into());
        self
    }

    /// Asks for the record of what the kernel refused the chat, written to `path` (absolute)
    /// when the chat ends ([`LaunchSpec::denials`]).
    pub fn denials_to(mut self, path: impl Into<PathBuf>) -> LaunchSpec {
        self.denials = Some(path.into());
        self
    }

    /// Arguments added after the adapter's own.
    pub fn extra_args(mut self, args: impl IntoIterator<Item = String>) -> LaunchSpec {
        self.extra_args.extend(args);
        self
    }
}

/// The design's name for [`PreparedLaunch`] (it carries Seatbelt and bridge-only launches too).
pub type LandlockArgs = PreparedLaunch;
/// The design's name for [`LaunchCommand`].
pub type LandlockCmd = LaunchCommand;

/// The final launch: decision and reason, the wrapped argv, env, working folder, and the
/// pre-trust entries `run` writes. What [`PreparedLaunch::prepare`] checked cannot be changed
/// afterwards: the fields are private, read through accessors.
///
/// ```compile_fail,E0616
/// fn redirect(launch: &mut launch::PreparedLaunch) {
///     // The files pre-trust writes were checked to lie in the chat's runtime: no caller may
///     // point them elsewhere.
///     launch.files = Vec::new();
/// }
/// ```
///
/// ```compile_fail,E0616
/// fn unwrap(launch: &mut launch::PreparedLaunch) {
///     launch.argv.drain(..launch.command_start);
/// }
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct PreparedLaunch {
    /// The adapter's name; empty for a launch of a program alone ([`LaunchSpec::program`]).
    cli: String,
    /// The backend and mode decided for this machine, and why, in words.
    decision: Decision,
    /// The CLI's own program, as found (PATH or configuration).
    program: PathBuf,
    /// Whether `program` exists; when not, running `argv` fails as a missing program does.
    program_found: bool,
    /// The complete command: the sandbox wrapper first, then the CLI and its arguments.
    #[serde(serialize_with = "as_text")]
    argv: Vec<OsString>,
    /// Where in `argv` the CLI's program starts (everything before it is the sandbox wrapper).
    command_start: usize,
    /// The variables to set and to remove for the CLI, on top of the caller's environment.
    env: EnvChanges,
    /// The working folder: the chat's runtime.
    cwd: PathBuf,
    /// Where the CLI's stdin comes from.
    stdin: Stdin,
    /// Entries written to the person's files before launch (by `run` / `LaunchCommand`).
    pre_trust: Vec<FileEdit>,
    /// Files of the launch's own written into the working folder before launch (Pi's bridge
    /// extension), with the pre-trust entries.
    files: Vec<LaunchFile>,
    /// The compiled Linux plan the helper reads, when the backend is Landlock.
    plan_file: Option<PathBuf>,
    /// Seatbelt only: the runtime's acted-on places, of which [`PreparedLaunch::pre_trust`] makes
    /// the missing ones (the Linux helper makes its own).
    #[serde(skip)]
    runtime_settings: Vec<sandbox_core::SettingsPath>,
    /// Where [`PreparedLaunch::pre_trust`] may write: the chat's policy and the places the
    /// person named by the variables the adapter read.
    #[serde(skip)]
    person_files: PersonFilesGuard,
    /// The state root the working folder lies in (which must exist when it is made).
    #[serde(skip)]
    state_root: PathBuf,
    /// `[policy] env = "allowlist"`: the variables of the launcher's environment that reach
    /// the chat (the command starts from an empty environment); `None` to inherit it.
    #[serde(skip)]
    env_allow: Option<sandbox_core::EnvAllow>,
    /// The folder of the helper's kept copy, when `argv` runs it: made (if missing) by
    /// [`PreparedLaunch::pre_trust`], the launch's writing step.
    #[serde(skip)]
    kept_copy: Option<PathBuf>,
    /// The compiled Linux plan this process applies itself before it runs the command
    /// ([`PreparedLaunch::prepare_to_exec`]): then `argv` is the bare command and no plan file
    /// or helper is involved.
    #[serde(skip)]
    here: Option<Box<LinuxPlan>>,
}

/// What [`PreparedLaunch::pre_trust`] did.
#[derive(Debug, Clone, Serialize)]
pub struct PreTrustDone {
    /// The chat's runtime, made if it was missing.
    pub runtime: PathBuf,
    /// Each pre-trust entry, in the order the plan lists them.
    pub edits: Vec<EditDone>,
    /// The launch's own files, written (replaced) in the runtime.
    pub files: Vec<PathBuf>,
}

/// One pre-trust entry as applied.
#[derive(Debug, Clone, Serialize)]
pub struct EditDone {
    /// The person's file.
    pub file: PathBuf,
    /// The entry's key path in the file.
    pub keys: Vec<String>,
    /// `false` when the entry was there already and the file was left as it was.
    pub written: bool,
}

/// The file name of the helper alone (`cli-sandbox-helper exec --policy FILE -- PROGRAM`, the
/// same arguments as `cli-sandbox exec`): a smaller binary, whose start costs every launch less.
pub const HELPER_NAME: &str = "cli-sandbox-helper";

/// The binary that runs the Linux helper: given (`Settings::helper`), or `CLI_SANDBOX_HELPER`,
/// or, when this process is `cli-sandbox`, the [`HELPER_NAME`] beside it (a file of this build:
/// not a symlink, not older than the binary by more than a minute), or this binary itself when
/// there is none. Either takes the helper's arguments. Never looked up on `PATH`: the home,
/// which every chat writes, is on many people's `PATH`, and the helper starts unconfined. See
/// [`helper_for`] for the check a launch adds.
pub fn helper_binary(given: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(path) = given {
        return Ok(path.to_owned());
    }
    if let Some(path) = std::env::var_os("CLI_SANDBOX_HELPER") {
        return Ok(PathBuf::from(path));
    }
    if let Ok(exe) = std::env::current_exe()
        && exe.file_name().is_some_and(|n| n == "cli-sandbox")
    {
        let beside = exe.with_file_name(HELPER_NAME);
        return Ok(if is_helper_of_this_build(&beside, &exe) {
            beside
        } else {
            exe
        });
    }
    Err(Error::NoHelper)
}

/// The helper this chat's launch runs, checked: it starts unconfined, so a chat that could
/// replace it (change it, or rename, remove or retarget any entry its path goes through: a
/// folder above it, a symlink on the way) would run a program of its choice unconfined at the
/// next launch. Who could is decided in one place, [`Policy::could_replace`], from the chat's
/// policy and what the disk says of each entry (owner, mode).
///
/// When the helper is this very binary or the [`HELPER_NAME`] beside it (`cli-sandbox run`,
/// `plan`, the contract) and lies in such a place, the launch runs a copy of this binary that
/// the launcher keeps in the state root, which every chat's sandbox closes: copied from the
/// image this process runs, never from the file beside it, which a chat could have replaced
/// already. Any other helper in such a place is refused ([`Error::HelperReplaceable`], exit 125
/// on the command line), unless the provider accepts that exact path
/// ([`crate::Settings::accept_replaceable_helper`]; then with a warning).
pub fn helper_for(ctx: &Context, policy: &Policy) -> Result<PathBuf, Error> {
    match helper_named(ctx, policy)? {
        (_, Some(dir)) => make_kept_copy(&dir),
        (helper, None) => Ok(helper),
    }
}

/// The helper [`helper_for`] names, without writing anything: with the kept copies' folder
/// when it is the kept copy, which the launch's writing step ([`PreparedLaunch::pre_trust`])
/// makes if it is missing (`plan` writes only its plan file).
fn helper_named(ctx: &Context, policy: &Policy) -> Result<(PathBuf, Option<PathBuf>), Error> {
    let helper = helper_binary(ctx.helper.as_deref())?;
    let (canonical, replaceable) = check_helper(&helper, policy)?;
    let Some(replaceable) = replaceable else {
        return Ok((canonical, None));
    };
    if is_this_binary(&canonical) || is_beside_this_binary(&canonical) {
        let dir = kept_copies_folder(ctx);
        return Ok((kept_copy_path(&dir)?, Some(dir)));
    }
    accepted_by_name(ctx, &helper, &canonical, replaceable)?;
    Ok((canonical, None))
}

/// The helper that `CLI_SANDBOX_HELPER` or the settings name, checked as [`helper_for`] checks
/// it, for a launch that applies its plan in its own process (`cli-sandbox step` on Linux): it
/// runs no helper, but a provider that names one a chat could replace runs it in its other
/// launches, so the step refuses it too rather than say nothing. `Ok` when none is named.
pub(crate) fn check_named_helper(ctx: &Context, policy: &Policy) -> Result<(), Error> {
    let named = ctx
        .helper
        .clone()
        .or_else(|| std::env::var_os("CLI_SANDBOX_HELPER").map(PathBuf::from));
    let Some(helper) = named.filter(|h| !h.as_os_str().is_empty()) else {
        return Ok(());
    };
    let (canonical, replaceable) = check_helper(&helper, policy)?;
    match replaceable {
        None => Ok(()),
        Some(replaceable) => accepted_by_name(ctx, &helper, &canonical, replaceable),
    }
}

/// `helper` resolved, and how a chat of `policy` could replace it (`None`: it cannot).
fn check_helper(
    helper: &Path,
    policy: &Policy,
) -> Result<(PathBuf, Option<sandbox_core::Replaceable>), Error> {
    let (canonical, entries) = entries_on_the_way(helper).map_err(|e| {
        Error::BadInput(format!(
            "the helper `{}` cannot be found ({e}): install cli-sandbox and point the launch at it",
            helper.display()
        ))
    })?;
    Ok((canonical, policy.could_replace(&entries)))
}

/// A helper a chat could replace, run only when the provider named this very path as accepted
/// (as given, or where it resolves); else [`Error::HelperReplaceable`].
fn accepted_by_name(
    ctx: &Context,
    helper: &Path,
    canonical: &Path,
    replaceable: sandbox_core::Replaceable,
) -> Result<(), Error> {
    let accepted = ctx
        .accept_replaceable_helper
        .as_deref()
        .is_some_and(|a| a == helper || a == canonical);
    if !accepted {
        return Err(Error::HelperReplaceable {
            helper: helper.to_owned(),
            place: replaceable.place,
            why: replaceable.why,
        });
    }
    tracing::warn!(
        helper = %canonical.display(),
        place = %replaceable.place.display(),
        why = %replaceable.why,
        "the helper lies where a chat can replace it, and the launch runs it because the provider accepted this path by name: a chat could run its own program unconfined at the next launch"
    );
    Ok(())
}

/// Resolves `path` (made absolute from the working folder) one name at a time, as the kernel
/// does, and lists every entry the resolution went through with its owner and mode: each folder
/// from `/` down, each symlink (its own entry, then the names of its target), the program last.
/// A chat that can change any of them can make the same path name another program. Gives the
/// canonical path too.
pub(crate) fn entries_on_the_way(
    path: &Path,
) -> std::io::Result<(PathBuf, Vec<sandbox_core::OnDisk>)> {
    use std::collections::VecDeque;
    use std::os::unix::fs::MetadataExt;
    use std::path::Component;
    /// Links followed before the resolution is refused, as the kernel's limit (ELOOP).
    const MAX_LINKS: usize = 40;
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()?.join(path)
    };
    // Each entry looked at once, without following a link: what it is, and whether it is a
    // link to follow.
    let on_disk = |p: &Path| -> std::io::Result<(sandbox_core::OnDisk, bool)> {
        let meta = std::fs::symlink_metadata(p)?;
        let entry = sandbox_core::OnDisk {
            path: p.to_owned(),
            uid: meta.uid(),
            mode: meta.mode() & 0o7777,
            dir: meta.is_dir(),
        };
        Ok((entry, meta.file_type().is_symlink()))
    };
    let owned = |c: Component<'_>| -> Option<std::ffi::OsString> {
        match c {
            Component::RootDir => Some("/".into()),
            Component::ParentDir => Some("..".into()),
            Component::Normal(name) => Some(name.to_owned()),
            Component::CurDir | Component::Prefix(_) => None,
        }
    };
    let mut pending: VecDeque<std::ffi::OsString> =
        absolute.components().filter_map(owned).collect();
    let mut at = PathBuf::from("/");
    let mut entries = vec![on_disk(&at)?.0];
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == "/" {
            at = PathBuf::from("/");
            continue;
        }
        if name == ".." {
            // `at` is a real folder (every link on the way was followed), so its parent is
            // what `..` names.
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let (entry, is_link) = on_disk(&next)?;
        entries.push(entry);
        if is_link {
            links += 1;
            if links > MAX_LINKS {
                return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
            }
            let target = std::fs::read_link(&next)?;
            for part in target.components().rev().filter_map(owned) {
                pending.push_front(part);
            }
        } else {
            at = next;
        }
    }
    Ok((at, entries))
}

/// Whether `path` is the image this process runs (the same file, by device and inode).
fn is_this_binary(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), std::fs::metadata("/proc/self/exe")) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// How much older than the binary beside it a helper may be and still count as the same build:
/// cargo links the two side by side, `cargo install` copies them one after the other.
const SAME_BUILD: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether `beside` is a helper to run for the binary `exe`: a file of its own, never a symlink
/// (`helper_for` checks who could replace the file a path names, and a link a chat planted beside
/// a binary in the home would name a program of the chat's choice outside it: python3, run with
/// `exec` from the chat's folder), and not older than `exe` by more than [`SAME_BUILD`]: a helper
/// left from an earlier build (`cargo run --bin cli-sandbox` relinks only the binary it runs)
/// would apply a plan with code that is no longer the launcher's.
fn is_helper_of_this_build(beside: &Path, exe: &Path) -> bool {
    let Ok(helper) = std::fs::symlink_metadata(beside) else {
        return false;
    };
    let modified = |m: &std::fs::Metadata| m.modified().ok();
    let launcher = std::fs::metadata(exe).ok();
    match (modified(&helper), launcher.as_ref().and_then(modified)) {
        (Some(h), Some(l)) => helper.file_type().is_file() && h + SAME_BUILD >= l,
        _ => false,
    }
}

/// Whether `path` is the [`HELPER_NAME`] beside this binary (by path: its content is what a
/// chat could have changed).
fn is_beside_this_binary(path: &Path) -> bool {
    std::env::current_exe()
        .ok()
        .and_then(|exe| std::fs::canonicalize(exe.with_file_name(HELPER_NAME)).ok())
        .is_some_and(|beside| beside == path)
}

/// The folder of the launcher's kept copies, in the state root (closed to every chat).
pub(crate) fn kept_copies_folder(ctx: &Context) -> PathBuf {
    ctx.layout.state_root.join("state/cli-sandbox/helper")
}

/// The image this process runs, its note's name (`image-...`, by its device, inode, size and
/// time) and the file.
fn running_image() -> Result<(std::fs::File, String), Error> {
    use std::os::unix::fs::MetadataExt;
    let io = |e: std::io::Error| Error::Io {
        what: "this binary".into(),
        source: e,
    };
    let running = std::fs::File::open("/proc/self/exe").map_err(io)?;
    let meta = running.metadata().map_err(io)?;
    let note = format!(
        "image-{:x}-{:x}-{:x}-{:x}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime_nsec() ^ (meta.mtime() << 30)
    );
    Ok((running, note))
}

/// Where the kept copy of this binary is (or will be) in `dir`, writing nothing: from the note
/// of this image when there is one, else from the image's SHA-256.
fn kept_copy_path(dir: &Path) -> Result<PathBuf, Error> {
    let (running, note) = running_image()?;
    if let Ok(name) = std::fs::read_to_string(dir.join(&note))
        && is_copy_name(&name)
    {
        return Ok(dir.join(name));
    }
    let digest = digest_of(&running).map_err(|e| Error::Io {
        what: "this binary".into(),
        source: e,
    })?;
    Ok(dir.join(format!("cli-sandbox-{digest}")))
}

/// The copy's open file, read-locked (shared) by this process until it ends or execs: the
/// copies of other contents are removed only when no launch holds such a lock on them, so a
/// launch between naming its copy and running it never finds it gone.
/// One per copy: a provider that launches all day holds one descriptor, not one per launch.
static IN_USE: std::sync::Mutex<Vec<(PathBuf, std::fs::File)>> = std::sync::Mutex::new(Vec::new());

/// This binary, copied into `dir` (the [`kept_copies_folder`]) once per content: named
/// `cli-sandbox-<SHA-256 of the image>`, so that two builds of the same content share one copy
/// and a new content gets a new one. Read from `/proc/self/exe`, the image this process runs,
/// not whatever the path holds now. Hashing the image (tens of megabytes) at every launch
/// would cost each launch milliseconds, so the digest is kept beside the copies in a note named
/// by the image's device, inode, size and time: the image is read in full once per installed
/// file. Nothing is written when the copy and the note are there. The copy is read-locked
/// ([`IN_USE`]) before it is returned; when a new copy is made, every other copy that no launch
/// holds so is removed (under an exclusive lock taken without waiting), with every other note:
/// a launch of another build that is starting at that moment keeps its copy, and one that
/// named it but lost it makes it again.
fn make_kept_copy(dir: &Path) -> Result<PathBuf, Error> {
    let (running, note_name) = running_image()?;
    let note = dir.join(&note_name);
    for _ in 0..4 {
        let path = kept_copy_path(dir)?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let made = if path.is_file() {
            false
        } else {
            crate::context::ensure_dir(dir)?;
            write_atomically(dir, &path, |tmp| {
                std::io::copy(&mut &running, tmp)?;
                tmp.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
            })?;
            true
        };
        if std::fs::read_to_string(&note).ok().as_deref() != Some(name.as_str()) {
            write_atomically(dir, &note, |tmp| {
                std::io::Write::write_all(tmp, name.as_bytes())
            })?;
        }
        // Read-locked, then checked to be still the file at the name: a remover that took its
        // lock first has unlinked it, and the copy is made again.
        if let Ok(file) = std::fs::File::open(&path)
            && rustix::fs::flock(&file, rustix::fs::FlockOperation::LockShared).is_ok()
            && same_file(&file, &path)
        {
            let mut held = IN_USE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // The newer lock replaces one on a file of the same name that was removed meanwhile.
            held.retain(|(p, _)| p != &path);
            held.push((path.clone(), file));
            drop(held);
            if made {
                remove_other_copies(dir, &[&name, &note_name]);
            }
            return Ok(path);
        }
    }
    Err(Error::Other(format!(
        "the kept copy of this binary in `{}` was removed under this launch four times: launch again",
        dir.display()
    )))
}

/// Whether `path` names the open `file` (the same device and inode).
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// `cli-sandbox-` and 64 hexadecimal digits.
fn is_copy_name(name: &str) -> bool {
    name.strip_prefix("cli-sandbox-")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The SHA-256 of a file's content, in hexadecimal, read from its start.
fn digest_of(file: &std::fs::File) -> std::io::Result<String> {
    use sha2::Digest;
    use std::io::{Read, Seek};
    let mut file = file;
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    // Read from the start again by whoever copies it next.
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(hex)
}

/// A file of the launcher's written whole or not at all: a new temporary file in `dir`, then
/// renamed over `path`.
fn write_atomically(
    dir: &Path,
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), Error> {
    // A state root this user cannot write is bad input naming it and the remedy.
    let io = |e: std::io::Error| {
        Error::from(sandbox_linux::in_state_root(format!(
            "the kept copy of this binary `{}`",
            path.display()
        ))(e))
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    fill(tmp.as_file_mut()).map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Removes every kept copy and note in `dir` but those named in `keep` (a copy of an older
/// build is never run again: the next launch of that build makes its own). A failure to remove
/// one leaves it for the next time; it is in a folder no chat reaches.
fn remove_other_copies(dir: &Path, keep: &[&str]) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if keep.contains(&name) {
            continue;
        }
        if name.starts_with("image-") {
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        if !name.starts_with("cli-sandbox-") {
            continue;
        }
        // Only a copy no launch holds (a shared lock, `make_kept_copy`); one in use is left for
        // a later time.
        let Ok(file) = std::fs::File::open(entry.path()) else {
            continue;
        };
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                if let Err(e) = std::fs::remove_file(entry.path()) {
                    tracing::debug!(copy = %entry.path().display(), error = %e, "an old kept copy was not removed");
                }
            }
            Err(_) => {
                tracing::debug!(copy = %entry.path().display(), "an old kept copy is in use: left for later");
            }
        }
    }
}

impl PreparedLaunch {
    /// Computes the launch. Writes the compiled Linux plan (our own file, in the state root)
    /// and nothing else (the helper's kept copy, where [`helper_for`] needs one, is named
    /// here and made by [`PreparedLaunch::pre_trust`]): not the
    /// person's files, not the chat's runtime, not the refused folders of its grants. Pre-trust
    /// is listed, and applied by [`PreparedLaunch::pre_trust`], which also makes the runtime; the
    /// Linux helper makes the refused folders (and the runtime) again at the launch itself.
    pub fn prepare(
        ctx: &Context,
        spec: &LaunchSpec,
        facts: &Facts,
    ) -> Result<PreparedLaunch, Error> {
        PreparedLaunch::prepare_as(ctx, spec, facts, Confine::ByArgv)
    }

    /// As [`PreparedLaunch::prepare`], for a launch that [`PreparedLaunch::exec`] runs in this
    /// very process: on Linux the plan is compiled and kept in memory, to be applied by this
    /// process itself (no plan file, no helper: a named helper is still checked, as
    /// `check_named_helper` says), and [`PreparedLaunch::argv`] is the bare command; such a
    /// launch has no `std_command` ([`Error::ExecOnly`]). Elsewhere it is
    /// [`PreparedLaunch::prepare`]. `cli-sandbox step` launches so.
    pub fn prepare_to_exec(
        ctx: &Context,
        spec: &LaunchSpec,
        facts: &Facts,
    ) -> Result<PreparedLaunch, Error> {
        PreparedLaunch::prepare_as(ctx, spec, facts, Confine::InThisProcess)
    }

    fn prepare_as(
        ctx: &Context,
        spec: &LaunchSpec,
        facts: &Facts,
        confine: Confine,
    ) -> Result<PreparedLaunch, Error> {
        let adapter = match (&spec.program, spec.cli.is_empty()) {
            (Some(_), true) => None,
            _ => Some(find_adapter(&spec.cli)?),
        };
        /// A program alone has no tools of its own to turn off: it runs confined or not at all.
        const PROGRAM_MODES: &[Mode] = &[Mode::Full];
        let modes = adapter.map_or(PROGRAM_MODES, |a| a.modes());
        if let Some(e) = platform::cannot_confine(facts, spec.mode, modes) {
            return Err(Error::CannotConfine(e));
        }
        let decision = platform::decide(facts, spec.mode, modes);
        let name = adapter.map_or("", |a| a.name());
        let _span = tracing::info_span!("launch", cli = name, chat = %spec.chat).entered();
        tracing::info!(
            backend = ?decision.backend,
            mode = decision.mode.as_str(),
            reason = %decision.reason,
            "decision"
        );
        if adapter.is_none() && decision.backend == Backend::None {
            return Err(Error::NeedsConfinement {
                reason: decision.reason,
            });
        }
        let policy = ctx.policy(&spec.chat, &spec.grants)?;
        ctx.require_state_root()?;
        let person = RealPersonFiles::for_policy(&policy);
        let (program, program_found, launch, kept) = match adapter {
            Some(adapter) => {
                let (program, program_found) = find_program(ctx, adapter);
                let request = LaunchRequest {
                    shape: spec.shape,
                    mode: decision.mode,
                    workdir: policy.runtime().to_owned(),
                    home: ctx.layout.home.clone(),
                    grants: policy.grants().to_vec(),
                    mcp_bridge: spec.mcp_bridge.clone(),
                    prompt: spec.prompt.clone(),
                    model: spec.model.clone(),
                    extra_args: spec.extra_args.clone(),
                    confined: decision.backend != Backend::None,
                    nonce: nonce()?,
                };
                // The adapter reads the person's files through the same guard that writes them.
                let launch = adapter.launch(&request, &person)?;
                for file in &launch.files {
                    if file.path.parent() != Some(policy.runtime()) {
                        return Err(Error::FileOutsideRuntime {
                            cli: adapter.name().to_owned(),
                            file: file.path.clone(),
                            runtime: policy.runtime().to_owned(),
                        });
                    }
                }
                (program, program_found, launch, adapter.env_kept())
            }
            None => (
                PathBuf::new(),
                true,
                sandbox_core::CliLaunch::default(),
                &[][..],
            ),
        };
        let (program, program_found, command) = match &spec.program {
            Some(given) => {
                let mut command = vec![given.path.clone().into_os_string()];
                command.extend(given.args.iter().cloned());
                (given.path.clone(), true, command)
            }
            None => {
                let mut command: Vec<OsString> = vec![program.clone().into_os_string()];
                command.extend(launch.args.iter().map(OsString::from));
                (program, program_found, command)
            }
        };
        let command_len = command.len();
        let (argv, plan_file, kept_copy, here) = match (confine, decision.backend) {
            (Confine::InThisProcess, Backend::Landlock { .. }) if cfg!(target_os = "linux") => {
                check_denials_place(spec.denials.as_deref())?;
                check_named_helper(ctx, &policy)?;
                let mut plan = sandbox_linux::compile(&policy, sandbox_linux::this_kernel())?;
                plan.denials_record = spec.denials.clone();
                (command, None, None, Some(Box::new(plan)))
            }
            _ => {
                let (argv, plan_file, kept_copy) = wrap_planned(
                    ctx,
                    &policy,
                    decision.backend,
                    command,
                    spec.denials.as_deref(),
                )?;
                (argv, plan_file, kept_copy, None)
            }
        };
        let runtime_settings = if decision.backend == Backend::Seatbelt {
            policy.settings_in_runtime().cloned().collect()
        } else {
            // The Linux helper makes them itself (`LinuxPlan::create_settings_files`).
            Vec::new()
        };
        // The chat told who it is, for `cli-sandbox explain` inside it (`chat_env`); never over
        // a variable the adapter sets.
        let mut env = launch.env;
        for (name, value) in crate::chat_env::variables(ctx, &policy) {
            env.set.entry(name).or_insert(value);
        }
        let env_allow = sandbox_core::EnvAllow::from_config(&ctx.config, kept)
            .map_err(|e| Error::BadInput(e.to_string()))?;
        if let Some(allow) = &env_allow
            && adapter.is_some()
        {
            // Said in the plan too, for a caller that builds the environment itself from `set`
            // and `remove` (the command below starts from an empty one anyway). A name that is
            // not text cannot be written here; `std_command` leaves it out all the same.
            let vars: Vec<OsString> = std::env::vars_os().map(|(k, _)| k).collect();
            for name in allow.removed(vars.iter().map(OsString::as_os_str)) {
                if let Some(name) = name.to_str()
                    && !env.set.contains_key(name)
                    && !env.remove.iter().any(|r| r == name)
                {
                    env.remove.push(name.to_owned());
                }
            }
            tracing::info!(removed = env.remove.len(), "environment: allowlist");
        }
        Ok(PreparedLaunch {
            cli: name.to_owned(),
            decision,
            program,
            program_found,
            command_start: argv.len() - command_len,
            argv,
            env,
            cwd: policy.runtime().to_owned(),
            stdin: launch.stdin,
            pre_trust: launch.pre_trust,
            files: launch.files,
            plan_file,
            runtime_settings,
            person_files: person.guard(),
            state_root: ctx.layout.state_root.clone(),
            env_allow,
            kept_copy,
            here,
        })
    }

    /// The adapter's name (`codex`, ...); `None` for a launch of a program alone
    /// ([`LaunchSpec::program`]).
    pub fn cli(&self) -> Option<&str> {
        (!self.cli.is_empty()).then_some(self.cli.as_str())
    }

    /// The backend and mode decided for this machine, and why, in words.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The program launched: the CLI's own, as found (PATH or configuration), or the one the
    /// spec gave ([`LaunchSpec::program`], [`LaunchSpec::stand_in`]).
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Whether [`PreparedLaunch::program`] was found; when not, running `argv` fails as a
    /// missing program does, and [`PreparedLaunch::tokio_command`] refuses.
    pub fn program_found(&self) -> bool {
        self.program_found
    }

    /// The complete command: the sandbox wrapper first, then the program and its arguments.
    pub fn argv(&self) -> &[OsString] {
        &self.argv
    }

    /// Where in [`PreparedLaunch::argv`] the program starts (everything before it is the
    /// sandbox wrapper; 0 when nothing wraps it).
    pub fn command_start(&self) -> usize {
        self.command_start
    }

    /// The program and its arguments, without the sandbox wrapper.
    pub fn command(&self) -> &[OsString] {
        &self.argv[self.command_start..]
    }

    /// The variables to set and to remove for the program, on top of the caller's environment.
    pub fn env(&self) -> &EnvChanges {
        &self.env
    }

    /// The working folder: the chat's runtime (made by [`PreparedLaunch::pre_trust`]).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Where the program's stdin comes from.
    pub fn stdin(&self) -> Stdin {
        self.stdin
    }

    /// The entries [`PreparedLaunch::pre_trust`] writes to the person's files.
    pub fn pre_trust_edits(&self) -> &[FileEdit] {
        &self.pre_trust
    }

    /// The launch's own files [`PreparedLaunch::pre_trust`] writes into the working folder
    /// (Pi's bridge extension).
    pub fn files(&self) -> &[LaunchFile] {
        &self.files
    }

    /// The compiled Linux plan the helper reads, when the backend is Landlock and the helper
    /// applies it.
    pub fn plan_file(&self) -> Option<&Path> {
        self.plan_file.as_deref()
    }

    /// The compiled Linux plan this process applies at [`PreparedLaunch::exec`], for a launch
    /// of [`PreparedLaunch::prepare_to_exec`] on Linux.
    pub fn in_process_plan(&self) -> Option<&LinuxPlan> {
        self.here.as_deref()
    }

    /// Makes the chat's runtime, writes the pre-trust entries into the person's files (under a
    /// lock, atomically, only where the person's files may be: see [`crate::person_files`]),
    /// then the launch's own files into the working folder; says what it did.
    pub fn pre_trust(&self) -> Result<PreTrustDone, Error> {
        let _span = tracing::info_span!("pre-trust", cli = %self.cli).entered();
        // The helper's kept copy, where the argv runs one (`prepare` only named it).
        if let Some(dir) = &self.kept_copy {
            make_kept_copy(dir)?;
        }
        // The working folder first: the launch's own files go into it, and the CLI starts in it.
        crate::context::ensure_runtime_in(&self.state_root, &self.cwd)?;
        let mut done = PreTrustDone {
            runtime: self.cwd.clone(),
            edits: Vec::new(),
            files: Vec::new(),
        };
        for edit in &self.pre_trust {
            // The person's file could not take the entry (unparsable, a key of another type, a
            // link into protected data): the launch stops, and the person has a file to fix, so
            // it is bad input.
            let applied = self
                .person_files
                .apply(edit)
                .map_err(|e| Error::BadInput(e.to_string()))?;
            let written = applied == crate::person_files::Applied::Written;
            tracing::info!(
                file = %edit.file.display(),
                keys = %edit.keys.join("."),
                value = %edit.value,
                written,
                "pre-trust edit"
            );
            done.edits.push(EditDone {
                file: edit.file.clone(),
                keys: edit.keys.clone(),
                written,
            });
        }
        // Seatbelt: the runtime's missing settings places (Gemini's `.env` among them), made
        // before the launch's own files; nothing in the home (the profile refuses those names).
        let made = crate::seatbelt::create_runtime_settings(&self.cwd, &self.runtime_settings)
            .map_err(|e| Error::Io {
                what: format!(
                    "the chat's runtime `{}`: its settings places could not be made",
                    self.cwd.display()
                ),
                source: e,
            })?;
        for path in &made {
            tracing::debug!(path = %path.display(), "runtime settings place made");
        }
        for file in &self.files {
            tracing::info!(file = %file.path.display(), mode = %format!("{:04o}", file.mode), "launch file");
            write_launch_file(file)?;
            done.files.push(file.path.clone());
        }
        Ok(done)
    }

    /// A ready `tokio` command for this launch, killed when its child is dropped: dropping the
    /// child ends every process of the chat. Writes nothing: call [`PreparedLaunch::pre_trust`]
    /// first. An error when the CLI's program was not found ([`Error::CannotRun`]), or as
    /// [`PreparedLaunch::std_command`].
    pub fn tokio_command(&self) -> Result<tokio::process::Command, Error> {
        if !self.program_found {
            return Err(Error::CannotRun {
                program: self.program.clone(),
                missing: true,
                message: format!(
                    "{} is not installed: `{}` is not on PATH; install it or set [cli.{}] program in the configuration",
                    self.cli,
                    self.program.display(),
                    self.cli
                ),
            });
        }
        let mut cmd = tokio::process::Command::from(self.std_command()?);
        // A provider that drops the child (its task cancelled, the chat closed) has let go of
        // the chat: the helper is killed, and with it init and every process of the chat (in
        // the Landlock-only fallback, the program itself). Without this the chat would go on
        // working, unwatched.
        cmd.kill_on_drop(true);
        Ok(cmd)
    }

    /// A `std` command for this launch. The working folder must exist: call
    /// [`PreparedLaunch::pre_trust`] first, which makes it ([`Error::NoWorkingFolder`] names it
    /// otherwise). A launch prepared to run in this process has none ([`Error::ExecOnly`]).
    pub fn std_command(&self) -> Result<std::process::Command, Error> {
        if self.here.is_some() {
            return Err(Error::ExecOnly);
        }
        if !self.cwd.is_dir() {
            return Err(Error::NoWorkingFolder {
                cwd: self.cwd.clone(),
            });
        }
        let mut cmd = std::process::Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..]).current_dir(&self.cwd);
        if let Some(allow) = &self.env_allow {
            // From an empty environment: only what the rules keep of the launcher's, then the
            // adapter's own below (a variable set after `prepare` is judged all the same).
            cmd.env_clear();
            for (k, v) in std::env::vars_os() {
                if allow.keeps(&k) {
                    cmd.env(k, v);
                }
            }
        }
        for (k, v) in &self.env.set {
            cmd.env(k, v);
        }
        for k in &self.env.remove {
            cmd.env_remove(k);
        }
        if self.stdin == Stdin::Null {
            cmd.stdin(std::process::Stdio::null());
        }
        if self.decision.backend == Backend::Seatbelt {
            // No descriptor of the launcher's may reach the confined CLI (the Linux helper
            // closes its own).
            crate::seatbelt::close_inherited_descriptors(&mut cmd);
        }
        Ok(cmd)
    }

    /// Runs the launch in place of this process, which it replaces: the one way every command
    /// of `cli-sandbox` (`run`, `step`) starts a launch. Call [`PreparedLaunch::pre_trust`]
    /// first. For a launch of [`PreparedLaunch::prepare_to_exec`] on Linux, this process applies
    /// the plan itself (its environment set as [`PreparedLaunch::env`] says: call it only from
    /// a process with a single thread, which the plan's application checks); otherwise it
    /// executes [`PreparedLaunch::argv`]. Returns only when the launch could not start, with
    /// why ([`Error::Confinement`], [`Error::CannotRun`], or as
    /// [`PreparedLaunch::std_command`]).
    pub fn exec(self) -> Error {
        #[cfg(target_os = "linux")]
        if let Some(plan) = &self.here {
            if self.stdin == Stdin::Null
                && let Err(e) = stdin_from_null()
            {
                return e;
            }
            self.set_own_env();
            let err =
                sandbox_linux::apply::exec(plan, &self.argv, Some(&crate::egress::serve_plan));
            return Error::Confinement {
                step: err.step,
                detail: err.detail,
            };
        }
        use std::os::unix::process::CommandExt;
        let mut cmd = match self.std_command() {
            Ok(cmd) => cmd,
            Err(e) => return e,
        };
        let err = cmd.exec();
        Error::cannot_run(&self.argv[0], &err)
    }

    /// This process's environment made the launch's: what the rules do not keep removed, then
    /// the launch's own changes (the plan's application execs the program with it).
    #[cfg(target_os = "linux")]
    fn set_own_env(&self) {
        if let Some(allow) = &self.env_allow {
            let names: Vec<OsString> = std::env::vars_os().map(|(k, _)| k).collect();
            for name in allow.removed(names.iter().map(OsString::as_os_str)) {
                // SAFETY: `exec`'s caller has a single thread (the plan's application refuses
                // to run otherwise, before the program starts), so nothing reads the
                // environment meanwhile.
                unsafe { std::env::remove_var(&name) };
            }
        }
        for (name, value) in &self.env.set {
            // SAFETY: as above, a single thread.
            unsafe { std::env::set_var(name, value) };
        }
        for name in &self.env.remove {
            // SAFETY: as above, a single thread.
            unsafe { std::env::remove_var(name) };
        }
    }
}

/// This process's stdin made `/dev/null` (for a program that would otherwise wait for EOF).
#[cfg(target_os = "linux")]
fn stdin_from_null() -> Result<(), Error> {
    use std::os::fd::AsRawFd;
    let null = std::fs::File::open("/dev/null").map_err(|e| Error::Io {
        what: "/dev/null".into(),
        source: e,
    })?;
    // SAFETY: dup2 onto descriptor 0 touches no memory; it replaces this process's stdin,
    // which nothing of this process reads before the exec that follows.
    if unsafe { libc::dup2(null.as_raw_fd(), 0) } < 0 {
        return Err(Error::Io {
            what: "stdin from /dev/null".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Where a launch's plan is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Confine {
    /// By the helper `argv` starts (a plan file on Linux), or by `sandbox-exec` on macOS.
    ByArgv,
    /// On Linux, by the process that calls [`PreparedLaunch::exec`] (the plan in memory).
    InThisProcess,
}

/// A record of refusals is written at an absolute place.
fn check_denials_place(denials: Option<&Path>) -> Result<(), Error> {
    match denials {
        Some(path) if !path.is_absolute() => Err(Error::BadInput(format!(
            "--denials `{}` is not absolute: give the record's place as an absolute path",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes one of the launch's own files: a new temporary file in the same folder (created
/// exclusively, so that nothing the chat planted there is opened), then renamed over the name.
/// A rename replaces a symlink the chat may have left at the name, never the file it points
/// to, and the folder itself is the runtime the launcher created (checked in `prepare`).
fn write_launch_file(file: &LaunchFile) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let io = |e: std::io::Error| Error::Io {
        what: format!("`{}`", file.path.display()),
        source: e,
    };
    let dir = file
        .path
        .parent()
        .ok_or_else(|| Error::Other(format!("`{}` has no folder", file.path.display())))?;
    let mut temp = tempfile::Builder::new()
        .prefix(".cli-sandbox-")
        .permissions(std::fs::Permissions::from_mode(file.mode))
        .tempfile_in(dir)
        .map_err(io)?;
    temp.write_all(file.text.as_bytes()).map_err(io)?;
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(&file.path).map_err(|e| io(e.error))?;
    Ok(())
}

/// The launch as a ready `tokio::process::Command` in one call: [`PreparedLaunch::prepare`],
/// then [`PreparedLaunch::pre_trust`] (which **writes the person's files**), then
/// [`PreparedLaunch::tokio_command`]. A caller that wants pre-trust as a step of its own calls
/// the three itself.
#[derive(Debug)]
pub struct LaunchCommand;

impl LaunchCommand {
    /// Prepares the launch, writes its pre-trust entries into the person's files, and returns it
    /// with its command (killed when its child is dropped).
    pub fn build(
        ctx: &Context,
        spec: &LaunchSpec,
        facts: &Facts,
    ) -> Result<(PreparedLaunch, tokio::process::Command), Error> {
        let args = PreparedLaunch::prepare(ctx, spec, facts)?;
        // Checked before anything is written: a CLI that is not installed changes no file.
        let cmd = args.tokio_command()?;
        args.pre_trust()?;
        Ok((args, cmd))
    }
}

/// Sixteen random hex digits from the kernel, made per launch ([`LaunchRequest::nonce`]).
fn nonce() -> Result<String, Error> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::Io {
            what: "/dev/urandom (the launch's random word)".into(),
            source: e,
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn find_adapter(name: &str) -> Result<&'static dyn CliAdapter, Error> {
    registry::find(name).ok_or_else(|| Error::UnknownCli {
        name: name.to_owned(),
        known: registry::names().join(", "),
    })
}

/// The CLI's program: the configured path, or the one on PATH, or its bare name when missing.
pub fn find_program(ctx: &Context, adapter: &dyn CliAdapter) -> (PathBuf, bool) {
    if let Some(path) = ctx.config.program_for(adapter.name()) {
        return (path.clone(), path.exists());
    }
    match which::which(adapter.program()) {
        Ok(path) => (path, true),
        Err(_) => (PathBuf::from(adapter.program()), false),
    }
}

/// The wrapped argv, the plan file and the kept copy's folder ([`wrap_planned`]).
type Planned = (Vec<OsString>, Option<PathBuf>, Option<PathBuf>);

/// The launch's command wrapped for `backend`, writing only the plan file (and a record that says nothing can be
/// recorded): with the folder of the kept copy the argv names, when it names one, for the writing
/// step to make.
fn wrap_planned(
    ctx: &Context,
    policy: &Policy,
    backend: Backend,
    command: Vec<OsString>,
    denials: Option<&Path>,
) -> Result<Planned, Error> {
    check_denials_place(denials)?;
    if backend == Backend::None
        && let Some(path) = denials
    {
        not_recorded(
            path,
            policy,
            "not recorded: nothing confines this launch (bridge-only), so nothing is refused by a sandbox",
        )?;
    }
    match backend {
        Backend::Seatbelt => {
            // TODO(macOS): the Seatbelt profile has no rule for the machine's loopback yet
            // (it would deny network-outbound to localhost); until it does, a chat that asks for
            // a network of its own is refused here rather than given the shared one.
            if policy.network() == sandbox_core::Network::Isolated {
                return Err(Error::BadInput(
                    "`[policy] network = \"isolated\"` is not built for macOS (Seatbelt) yet: the launch is refused rather than run on the machine's network; set network = \"shared\"".into(),
                ));
            }
            // TODO(macOS): the profile would allow network-outbound only to the proxy's port on
            // localhost, with a per-chat token in the proxy URL (any local process reaches that
            // port there); not built, so refused rather than run with a route that does not hold.
            if policy.network() == sandbox_core::Network::Allowlist {
                return Err(Error::BadInput(
                    "`[policy] network = \"allowlist\"` is not built for macOS (Seatbelt) yet: the profile cannot yet make the egress proxy the chat's only route out, so the launch is refused rather than run on the machine's network; set network = \"shared\" here (it is built on Linux with user namespaces)".into(),
                ));
            }
            let as_error = |e: crate::seatbelt::SeatbeltError| {
                if e.is_bad_input() {
                    Error::BadInput(e.to_string())
                } else {
                    Error::Other(e.to_string())
                }
            };
            let profile = SeatbeltProfile::for_policy(policy).map_err(as_error)?;
            tracing::info!(
                params = profile.params.len(),
                bytes = profile.text.len(),
                "seatbelt profile"
            );
            if let Some(path) = denials {
                not_recorded(
                    path,
                    policy,
                    "not recorded by the launch on macOS yet: Seatbelt's refusals are in the \
                     unified log, each tagged `cli-sandbox: RULE` (`log show --last 1h --predicate \
                     'sender == \"Sandbox\" AND eventMessage CONTAINS \"cli-sandbox:\"'`)",
                )?;
            }
            let argv = profile.wrap(&command);
            // Refused here, before anything runs, rather than by execve with E2BIG.
            let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            SeatbeltProfile::check_exec_size(
                &argv,
                env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())),
                policy.grants().len(),
            )
            .map_err(as_error)?;
            Ok((argv, None, None))
        }
        Backend::Landlock { abi, namespaces } => {
            let mut plan = sandbox_linux::compile(
                policy,
                sandbox_linux::plan::Kernel {
                    landlock_abi: abi,
                    namespaces,
                    fuse: sandbox_linux::fuse_available(),
                },
            )?;
            plan.denials_record = denials.map(Path::to_owned);
            let file = sandbox_linux::write_plan(&plan, &ctx.layout)?;
            let (helper, copy) = helper_named(ctx, policy)?;
            tracing::info!(plan = %file.display(), helper = %helper.display(), "plan file");
            let mut argv: Vec<OsString> = vec![
                helper.into_os_string(),
                "exec".into(),
                "--policy".into(),
                file.clone().into_os_string(),
                "--".into(),
            ];
            argv.extend(command);
            Ok((argv, Some(file), copy))
        }
        Backend::None => {
            tracing::info!("no sandbox here: the CLI runs bridge-only, its own tools off");
            Ok((command, None, None))
        }
    }
}

/// The record of a launch that records nothing, with why (`docs/json.md`, "denials").
fn not_recorded(path: &Path, policy: &Policy, why: &str) -> Result<(), Error> {
    let record = serde_json::json!({
        "version": 1,
        "chat": policy.chat().as_str(),
        "recorded": false,
        "why": why,
        "denials": null,
    });
    let text = serde_json::to_string_pretty(&record).unwrap_or_default() + "\n";
    std::fs::write(path, text).map_err(|e| Error::Io {
        what: format!("the record of refusals `{}`", path.display()),
        source: e,
    })
}

/// Arguments as JSON strings; one that is not UTF-8 cannot be passed on as text, so it is an
/// error rather than a lossy copy.
fn as_text<S: serde::Serializer>(argv: &[OsString], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::{Error as _, SerializeSeq};
    let mut seq = s.serialize_seq(Some(argv.len()))?;
    for arg in argv {
        let text = arg.to_str().ok_or_else(|| {
            S::Error::custom(format!(
                "argument {} is not UTF-8 and cannot be written as JSON",
                arg.to_string_lossy()
            ))
        })?;
        seq.serialize_element(text)?;
    }
    seq.end()
}

#[cfg(test)]
mod tests {
    use super::entries_on_the_way;

    /// Every entry a resolution goes through is listed, each link as its own entry before what
    /// it names, and the path reached is the canonical one.
    #[test]
    fn the_way_to_a_program_lists_each_folder_and_each_link_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/prog"), "").unwrap();
        std::os::unix::fs::symlink("a/../a/b", root.join("hop")).unwrap();
        std::os::unix::fs::symlink(root.join("hop/prog"), root.join("prog")).unwrap();
        let (canonical, entries) = entries_on_the_way(&root.join("prog")).unwrap();
        assert_eq!(canonical, std::fs::canonicalize(root.join("prog")).unwrap());
        let seen: Vec<_> = entries.iter().map(|e| e.path.clone()).collect();
        for expected in ["prog", "hop", "a", "a/b", "a/b/prog"] {
            assert!(seen.contains(&root.join(expected)), "{expected}: {seen:?}");
        }
        for ancestor in root.ancestors() {
            assert!(
                seen.contains(&ancestor.to_owned()),
                "{}",
                ancestor.display()
            );
        }
        // A loop is an error, as the kernel's ELOOP.
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(entries_on_the_way(&root.join("loop")).is_err());
    }
}
