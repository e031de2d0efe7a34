//! Attacks on the guard (issue 25, `crates/sandbox-linux/src/guard.rs`): the FUSE file system
//! over each grant in the namespace plan that refuses the refused names at the grant's top.
//!
//! What it must hold: the chat reads and writes no refused entry of a grant whatever the chat
//! or a process outside does, reaches nothing outside its grants through the guard, and is no
//! less confined than without it. Each attack here runs first unconfined (the control, which
//! must get through, so that a refusal means something), then in the namespace plan, as root and
//! as an ordinary user the test creates. Verdicts come from the disk: the secret the test or the
//! outside wrote found in what the chat wrote down, the bytes, modes and entries on the disk
//! after the chat. What still gets through is a finding: its test asserts the refusal and is
//! marked `#[ignore = "FINDING: ..."]`.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use cli_sandbox_tests::process::trimmed_text as text;
use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{REQUIRE_LANDLOCK, cli_sandbox, confinement_available, say, skip};
use launch::demo::Demo;
use sandbox_linux::plan::Kernel;

const PYTHON: &str = "/usr/bin/python3";

static FILES: AtomicUsize = AtomicUsize::new(0);

/// A demo layout in a folder every user can enter, owned by `user` when given.
struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

impl Lab {
    fn new(user: Option<&TestUser>) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
        if let Some(user) = user {
            user.own(&demo.root);
        }
        Lab {
            _dir: dir,
            demo,
            user: user.cloned(),
        }
    }

    fn who(&self) -> String {
        match &self.user {
            Some(user) => format!("as the ordinary user {}", user.name),
            None => "as root".to_owned(),
        }
    }

    /// The namespace plan for `grant`, compiled against the disk as it is now; its path.
    fn plan(&self, grant: &str) -> PathBuf {
        let mut ctx = launch::Context::load(&self.demo.settings()).expect("context");
        ctx.privileged = self.user.is_none();
        let grants = [sandbox_core::GrantRequest::parse(grant).unwrap()];
        let policy = ctx.policy(&self.demo.chat, &grants).expect("policy");
        ctx.ensure_runtime(&policy).unwrap();
        let kernel = Kernel {
            landlock_abi: sandbox_linux::this_kernel().landlock_abi,
            namespaces: true,
            fuse: sandbox_linux::fuse_available(),
        };
        let compiled = sandbox_linux::compile(&policy, kernel).expect("compile");
        assert!(compiled.namespaces.is_some());
        let file = self.demo.root.join(format!(
            "guard-plan-{}-{}.json",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, serde_json::to_vec(&compiled).unwrap()).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        file
    }

    /// `argv` as the lab's user: in the namespace plan with `grant` when `confined`, else
    /// unconfined (the control).
    fn command(&self, confined: bool, grant: &str, argv: &[String]) -> Command {
        let mut cmd = if confined {
            let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
            cmd.arg("exec")
                .arg("--policy")
                .arg(self.plan(grant))
                .arg("--")
                .args(argv);
            cmd
        } else {
            let mut cmd = command_as(self.user.as_ref(), &argv[0]);
            cmd.args(&argv[1..]);
            cmd
        };
        cli_sandbox_tests::launches::demo_env(&mut cmd, &self.demo).current_dir(&self.demo.runtime);
        cmd
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.demo
            .outside
            .join(format!("{name}-{}", FILES.fetch_add(1, Ordering::Relaxed)))
    }
}

/// Whether the namespace plan has its guard here; says why not, loudly, when it has not.
fn guarded(test: &str) -> bool {
    if !confinement_available(test) {
        return false;
    }
    if !sandbox_linux::fuse_available() {
        skip(
            test,
            "/dev/fuse cannot be opened here (mode 0600?): the namespace plan has no guard",
            REQUIRE_LANDLOCK,
        );
        return false;
    }
    true
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn secret(label: &str) -> String {
    format!(
        "{label}-secret-{}-{}",
        std::process::id(),
        FILES.fetch_add(1, Ordering::Relaxed)
    )
}

/// What every chat script starts with: `top`, `ready`, `go`, `report` from its arguments;
/// `attempt(key, f)` notes what `f` returned, or that it was refused and how; `wait_go()` says
/// the chat is ready and waits for the outside; `done()` writes the report.
const PRELUDE: &str = r#"
import os, sys, time, ctypes, errno, signal
top, ready, go, report = sys.argv[1:5]
libc = ctypes.CDLL(None, use_errno=True)
lines = []
def note(key, value):
    lines.append(key + "\t" + str(value).replace("\n", " ").replace("\t", " "))
def attempt(key, f):
    try:
        note(key, f())
    except OSError as e:
        note(key, "refused " + (os.strerror(e.errno) if e.errno else str(e)))
    except Exception as e:
        note(key, "error " + repr(e))
def read(name, dir_fd=None):
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    try: return os.read(fd, 1 << 20).decode("latin-1")
    finally: os.close(fd)
def write_new(name, dir_fd=None):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dir_fd)
    try: os.write(fd, b"chat-wrote")
    finally: os.close(fd)
    return "wrote"
def check(r):
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r
def wait_go():
    open(ready, "w").write("ready")
    deadline = time.time() + 60
    while not os.path.exists(go) and time.time() < deadline: time.sleep(0.02)
def done():
    open(report, "w").write("\n".join(lines) + "\n")
def path(name): return os.path.join(top, name)
"#;

/// What a process outside does once the chat is ready: `top`, `ready`, `go`, `secret` from its
/// arguments; it says `go` when done.
const OUTSIDE_PRELUDE: &str = r#"
import os, sys, time
top, ready, go, secret = sys.argv[1:5]
def path(name): return os.path.join(top, name)
def write(name, text):
    with open(path(name), "w") as f: f.write(text)
deadline = time.time() + 60
while not os.path.exists(ready) and time.time() < deadline: time.sleep(0.02)
"#;

/// One attack: the grant's top made afresh by `setup` (given the secret), a process outside
/// running `outside` (after [`OUTSIDE_PRELUDE`]) when given, the chat running `chat` (after
/// [`PRELUDE`]) confined or not; what the chat noted, by key.
struct Attack<'a> {
    access: &'a str,
    setup: &'a dyn Fn(&Lab, &Path, &str),
    chat: &'a str,
    outside: Option<&'a str>,
}

struct Seen {
    notes: BTreeMap<String, String>,
    report: String,
    secret: String,
}

impl Seen {
    /// The keys whose note holds the secret.
    fn leaks(&self) -> Vec<String> {
        self.notes
            .iter()
            .filter(|(_, v)| v.contains(&self.secret))
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn note(&self, key: &str) -> &str {
        self.notes.get(key).map_or("", String::as_str)
    }
}

fn run(lab: &Lab, confined: bool, attack: &Attack) -> Seen {
    let top = lab.demo.granted.clone();
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(&top).unwrap();
    let secret = secret("guard");
    (attack.setup)(lab, &top, &secret);
    if let Some(user) = &lab.user {
        user.own(&top);
    }
    let ready = lab.outside("ready");
    let go = lab.outside("go");
    let report = lab.outside("report");
    let top_text = top.display().to_string();
    let _outside = match attack.outside {
        Some(script) => {
            let mut cmd = command_as(lab.user.as_ref(), PYTHON);
            cmd.arg("-c")
                .arg(format!(
                    "{OUTSIDE_PRELUDE}\n{script}\nopen(go, 'w').write('go')\n"
                ))
                .arg(&top_text)
                .arg(&ready)
                .arg(&go)
                .arg(&secret)
                .stdin(Stdio::null());
            Some(Killed(cmd.spawn().expect("start the outside")))
        }
        None => {
            std::fs::write(&go, "go").unwrap();
            None
        }
    };
    let argv: Vec<String> = vec![
        PYTHON.into(),
        "-c".into(),
        // The daemon attack touches other processes only when this says it runs confined.
        format!(
            "CONFINED = {}\n{PRELUDE}\n{}\ndone()\n",
            if confined { "True" } else { "False" },
            attack.chat
        ),
        top_text,
        ready.display().to_string(),
        go.display().to_string(),
        report.display().to_string(),
    ];
    let grant = format!("{}:{}", top.display(), attack.access);
    let out = lab
        .command(confined, &grant, &argv)
        .output()
        .expect("run the chat");
    let report = std::fs::read_to_string(&report).unwrap_or_default();
    assert!(
        !report.is_empty(),
        "{} {}: the chat wrote no report\n{}",
        if confined {
            "namespace plan"
        } else {
            "control"
        },
        lab.who(),
        text(&out)
    );
    let notes = report
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Seen {
        notes,
        report,
        secret,
    }
}

fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

// ---------------------------------------------------------------------------------------------
// A folder the chat holds open, renamed onto a refused name outside.

/// The chat opens `planning.new/` (an allowed name), makes it its working folder and opens
/// `inside.json` in it; it also holds `notes/drafts/` open. AgentWorks outside swaps
/// `planning.new/` in as `planning/` (the atomic swap of a folder), moves `notes/drafts/` into
/// it (a folder moved beneath a refused one) and then writes its new plans into them, in place
/// into `inside.json` too. Through each handle it took before, the chat tries to read and write
/// what is now beneath `planning/`.
const HELD_FOLDER_CHAT: &str = r#"
held = os.open(path("planning.new"), os.O_RDONLY | os.O_DIRECTORY)
os.chdir(path("planning.new"))
inside = os.open(path("planning.new/inside.json"), os.O_RDONLY)
drafts = os.open(path("notes/drafts"), os.O_RDONLY | os.O_DIRECTORY)
wait_go()
attempt("fd-read", lambda: read("after.json", dir_fd=held))
attempt("fd-list", lambda: sorted(os.listdir(held)))
attempt("fd-stat", lambda: os.stat("after.json", dir_fd=held).st_size)
attempt("fd-write", lambda: write_new("by-chat-fd.json", dir_fd=held))
attempt("cwd-read", lambda: read("cwd.json"))
attempt("cwd-write", lambda: write_new("by-chat-cwd.json"))
attempt("file-read", lambda: os.pread(inside, 1 << 20, 0).decode("latin-1"))
attempt("deep-read", lambda: read("deep.json", dir_fd=drafts))
attempt("deep-write", lambda: write_new("by-chat-deep.json", dir_fd=drafts))
# AgentWorks then puts the plans aside (`planning` to `planning.old`): an entry seen under a
# refused name stays refused under the next.
open(ready + ".2", "w").write("ready")
deadline = time.time() + 60
while not os.path.exists(go + ".2") and time.time() < deadline: time.sleep(0.02)
attempt("old-fd-read", lambda: read("after.json", dir_fd=held))
attempt("old-file-read", lambda: os.pread(inside, 1 << 20, 0).decode("latin-1"))
attempt("old-deep-read", lambda: read("deep.json", dir_fd=drafts))
"#;

const HELD_FOLDER_OUTSIDE: &str = r#"
os.rename(path("planning"), path("planning.old"))
os.rename(path("planning.new"), path("planning"))
os.rename(path("notes/drafts"), path("planning/drafts"))
write("planning/after.json", "after " + secret)
write("planning/cwd.json", "cwd " + secret)
write("planning/inside.json", "inside " + secret)
write("planning/drafts/deep.json", "deep " + secret)
open(go, "w").write("go")
while not os.path.exists(ready + ".2") and time.time() < deadline: time.sleep(0.02)
os.rename(path("planning"), path("planning.aside"))
open(go + ".2", "w").write("go")
"#;

fn held_folder_setup(_: &Lab, top: &Path, _: &str) {
    std::fs::create_dir_all(top.join("planning")).unwrap();
    std::fs::create_dir_all(top.join("planning.new")).unwrap();
    std::fs::create_dir_all(top.join("notes/drafts")).unwrap();
    std::fs::write(top.join("planning.new/inside.json"), "before").unwrap();
}

#[test]
fn a_folder_the_chat_holds_open_and_the_outside_renames_onto_planning_stays_refused() {
    let test = "a_folder_the_chat_holds_open_and_the_outside_renames_onto_planning_stays_refused";
    if !guarded(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for access in ["rw", "ro"] {
            let lab = Lab::new(user.as_ref());
            let attack = Attack {
                access,
                setup: &held_folder_setup,
                chat: HELD_FOLDER_CHAT,
                outside: Some(HELD_FOLDER_OUTSIDE),
            };
            let control = run(&lab, false, &attack);
            assert_eq!(
                control.leaks(),
                [
                    "cwd-read",
                    "deep-read",
                    "fd-read",
                    "file-read",
                    "old-deep-read",
                    "old-fd-read",
                    "old-file-read"
                ],
                "control {} {access}:\n{}",
                lab.who(),
                control.report
            );
            assert_eq!(control.note("fd-write"), "wrote", "{}", control.report);
            let seen = run(&lab, true, &attack);
            let case = format!("{} {access}", lab.who());
            for key in seen.leaks() {
                failures.push(format!(
                    "{case}: {key} read the new plan: {}",
                    seen.note(&key)
                ));
            }
            for key in ["fd-list", "fd-stat"] {
                if !seen.note(key).starts_with("refused") {
                    failures.push(format!("{case}: {key}: {}", seen.note(key)));
                }
            }
            for name in [
                "by-chat-fd.json",
                "by-chat-cwd.json",
                "drafts/by-chat-deep.json",
            ] {
                if lab.demo.granted.join("planning").join(name).exists() {
                    failures.push(format!("{case}: the chat wrote planning/{name}"));
                }
            }
            say(&format!(
                "REPORT {case}: {}",
                seen.report.replace('\n', " | ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The chat polls, as fast as it can, `live.json` in the folder it holds open (by its folder's
/// descriptor, by the file's own descriptor, and by its working folder) while AgentWorks outside
/// swaps the folder in as `planning/` and then writes into `live.json`, in place, again and
/// again. No byte written after the swap may ever be read: the guard checks where the entry is
/// after each read too, and throws the data away when it is beneath a refused name by then.
const POLLING_CHAT: &str = r#"
held = os.open(path("planning.new"), os.O_RDONLY | os.O_DIRECTORY)
live = os.open(path("planning.new/live.json"), os.O_RDONLY)
os.chdir(path("planning.new"))
wait_go_started = time.time()
open(ready, "w").write("ready")
reads = {"dir": 0, "file": 0, "cwd": 0}
leaked = {}
end = None
while time.time() - wait_go_started < 60:
    if end is None and os.path.exists(go): end = time.time() + 0.5
    if end is not None and time.time() > end: break
    for how, f in [("dir", lambda: read("live.json", dir_fd=held)),
                   ("file", lambda: os.pread(live, 4096, 0).decode("latin-1")),
                   ("cwd", lambda: read("live.json"))]:
        try:
            data = f()
            reads[how] += 1
            if "after" in data and how not in leaked: leaked[how] = data
        except OSError:
            pass
for how in reads:
    note("reads " + how, reads[how])
    note("leak " + how, leaked.get(how, "none"))
"#;

const POLLING_OUTSIDE: &str = r#"
time.sleep(0.3)
os.rename(path("planning"), path("planning.old"))
os.rename(path("planning.new"), path("planning"))
for i in range(300):
    with open(path("planning/live.json"), "r+") as f:
        f.write("after %d %s" % (i, secret)); f.truncate()
    time.sleep(0.002)
"#;

#[test]
fn a_chat_polling_a_folder_it_holds_while_the_outside_renames_it_onto_planning_reads_nothing_written_after()
 {
    let test = "a_chat_polling_a_folder_it_holds_while_the_outside_renames_it_onto_planning_reads_nothing_written_after";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, _: &str| {
        std::fs::create_dir_all(top.join("planning")).unwrap();
        std::fs::create_dir_all(top.join("planning.new")).unwrap();
        std::fs::write(top.join("planning.new/live.json"), "before").unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        for access in ["rw", "ro"] {
            let lab = Lab::new(user.as_ref());
            let attack = Attack {
                access,
                setup: &setup,
                chat: POLLING_CHAT,
                outside: Some(POLLING_OUTSIDE),
            };
            let control = run(&lab, false, &attack);
            assert_eq!(
                control.leaks(),
                ["leak cwd", "leak dir", "leak file"],
                "control {} {access}:\n{}",
                lab.who(),
                control.report
            );
            let seen = run(&lab, true, &attack);
            let case = format!("{} {access}", lab.who());
            for key in seen.leaks() {
                failures.push(format!("{case}: {key}: {}", seen.note(&key)));
            }
            // The chat was reading before the swap (the refusal is the swap's, not the guard's
            // from the start).
            for how in ["dir", "file", "cwd"] {
                let n: u64 = seen.note(&format!("reads {how}")).parse().unwrap_or(0);
                if n == 0 {
                    failures.push(format!("{case}: no read by {how} before the swap either"));
                }
            }
            say(&format!(
                "REPORT {case}: {}",
                seen.report.replace('\n', " | ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A folder the chat holds, renamed outside from one allowed name to another (`work/` to
/// `work2/`), keeps working through every handle: what is decided is the name it has now.
const ALLOWED_RENAME_CHAT: &str = r#"
held = os.open(path("work"), os.O_RDONLY | os.O_DIRECTORY)
os.chdir(path("work"))
inside = os.open(path("work/inside.txt"), os.O_RDONLY)
wait_go()
attempt("fd-read", lambda: read("after.txt", dir_fd=held))
attempt("cwd-read", lambda: read("after.txt"))
attempt("file-read", lambda: os.pread(inside, 4096, 0).decode("latin-1"))
attempt("fd-list", lambda: sorted(os.listdir(held)))
"#;

const ALLOWED_RENAME_OUTSIDE: &str = r#"
os.rename(path("work"), path("work2"))
write("work2/after.txt", "allowed-after")
write("work2/inside.txt", "inside-after")
"#;

#[test]
fn a_folder_the_chat_holds_renamed_outside_to_another_allowed_name_keeps_working() {
    let test = "a_folder_the_chat_holds_renamed_outside_to_another_allowed_name_keeps_working";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, _: &str| {
        std::fs::create_dir_all(top.join("work")).unwrap();
        std::fs::write(top.join("work/inside.txt"), "before").unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        for access in ["rw", "ro"] {
            let lab = Lab::new(user.as_ref());
            let attack = Attack {
                access,
                setup: &setup,
                chat: ALLOWED_RENAME_CHAT,
                outside: Some(ALLOWED_RENAME_OUTSIDE),
            };
            let control = run(&lab, false, &attack);
            let seen = run(&lab, true, &attack);
            let case = format!("{} {access}", lab.who());
            assert_eq!(
                control.note("fd-read"),
                "allowed-after",
                "{}",
                control.report
            );
            for key in ["fd-read", "cwd-read", "file-read", "fd-list"] {
                if seen.note(key) != control.note(key) {
                    failures.push(format!(
                        "{case}: {key}: {} (unconfined: {})",
                        seen.note(key),
                        control.note(key)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The chat sees each entry's own inode number through the guard, as every other program does:
/// git records them in its index, and numbers made up per chat made git read every file again,
/// in the chat and after it outside.
const INODES_CHAT: &str = r#"
wait_go()
for name in ["a.txt", "sub", "sub/b.txt"]:
    attempt("stat " + name, lambda: os.stat(path(name)).st_ino)
    attempt("lstat " + name, lambda: os.lstat(path(name)).st_ino)
attempt("listed", lambda: sorted((e.name, e.inode()) for e in os.scandir(path("sub"))))
"#;

#[test]
fn the_chat_sees_the_entries_own_inode_numbers_through_the_guard() {
    let test = "the_chat_sees_the_entries_own_inode_numbers_through_the_guard";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, _: &str| {
        std::fs::create_dir_all(top.join("sub")).unwrap();
        std::fs::write(top.join("a.txt"), "a").unwrap();
        std::fs::write(top.join("sub/b.txt"), "b").unwrap();
    };
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let attack = Attack {
            access: "rw",
            setup: &setup,
            chat: INODES_CHAT,
            outside: None,
        };
        let seen = run(&lab, true, &attack);
        let top = &lab.demo.granted;
        for name in ["a.txt", "sub", "sub/b.txt"] {
            let disk = std::fs::symlink_metadata(top.join(name))
                .unwrap()
                .ino()
                .to_string();
            for how in ["stat", "lstat"] {
                assert_eq!(
                    seen.note(&format!("{how} {name}")),
                    disk,
                    "{} {how} {name}:\n{}",
                    lab.who(),
                    seen.report
                );
            }
        }
        let b = std::fs::symlink_metadata(top.join("sub/b.txt"))
            .unwrap()
            .ino();
        assert_eq!(
            seen.note("listed"),
            format!("[('b.txt', {b})]"),
            "{}",
            seen.report
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Second and third paths to a refused entry.

/// Symlinks (relative, absolute, through a folder link, from a subfolder) and hard links (made
/// before the chat, at the top and deeper) to `workflow.sqlite` and `planning/`, made before the
/// chat; hard links the chat tries to make to them; the refused file opened by its handle
/// (`open_by_handle_at`, the handle taken outside). Every one is refused.
const SECOND_PATHS_CHAT: &str = r#"
wait_go()
for name in ["rel.txt", "abs.txt", "relplan/plan.json", "dot/workflow.sqlite", "dot/planning/plan.json",
             "hard.txt", "sub/deep.txt", "sub/up.txt", "sub/abs.txt", "late2.txt"]:
    attempt("read " + name, lambda: read(path(name)))
attempt("link top", lambda: os.link(path("workflow.sqlite"), path("mine.txt")))
attempt("link deep", lambda: os.link(path("sub/deep.txt"), path("mine2.txt")))
attempt("link via symlink", lambda: check(libc.linkat(-100, path("rel.txt").encode(), -100, path("mine3.txt").encode(), 0x400)))
class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]
def by_handle():
    raw = open(os.path.join(os.path.dirname(report), "handle"), "rb").read()
    h = Handle.from_buffer_copy(raw)
    mount = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    fd = check(libc.open_by_handle_at(mount, ctypes.byref(h), os.O_RDONLY))
    return os.read(fd, 1 << 20).decode("latin-1")
attempt("open_by_handle_at", by_handle)
"#;

/// Late `late2.db` outside, with a symlink to it under an allowed name.
const SECOND_PATHS_OUTSIDE: &str = r#"
write("late2.db", "late2 " + secret)
os.symlink("late2.db", path("late2.txt"))
"#;

/// Takes the handle of `workflow.sqlite` (as root, where `name_to_handle_at` is allowed) into
/// `outside/handle`.
const TAKE_HANDLE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("f", ctypes.c_ubyte * 128)]
h = Handle(); h.bytes = 128; mnt = ctypes.c_int()
r = libc.name_to_handle_at(-100, sys.argv[1].encode(), ctypes.byref(h), ctypes.byref(mnt), 0)
if r == 0: open(sys.argv[2], "wb").write(bytes(h))
"#;

fn second_paths_setup(lab: &Lab, top: &Path, secret: &str) {
    std::fs::create_dir_all(top.join("planning")).unwrap();
    std::fs::create_dir_all(top.join("sub")).unwrap();
    std::fs::write(top.join("planning/plan.json"), format!("plan {secret}")).unwrap();
    std::fs::write(top.join("workflow.sqlite"), format!("raw {secret}")).unwrap();
    std::fs::write(top.join("doc.md"), "doc").unwrap();
    symlink("workflow.sqlite", top.join("rel.txt"));
    symlink(top.join("workflow.sqlite"), top.join("abs.txt"));
    symlink("planning", top.join("relplan"));
    symlink(".", top.join("dot"));
    std::fs::hard_link(top.join("workflow.sqlite"), top.join("hard.txt")).unwrap();
    std::fs::hard_link(top.join("workflow.sqlite"), top.join("sub/deep.txt")).unwrap();
    symlink("../workflow.sqlite", top.join("sub/up.txt"));
    symlink(top.join("workflow.sqlite"), top.join("sub/abs.txt"));
    let handle = lab.demo.outside.join("handle");
    let _ = std::fs::remove_file(&handle);
    let status = Command::new(PYTHON)
        .arg("-c")
        .arg(TAKE_HANDLE)
        .arg(top.join("workflow.sqlite"))
        .arg(&handle)
        .status()
        .unwrap();
    assert!(status.success());
    if handle.exists() {
        std::fs::set_permissions(&handle, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

#[test]
fn second_paths_to_a_refused_entry_symlinks_hard_links_and_handles_are_refused_by_the_guard() {
    let test =
        "second_paths_to_a_refused_entry_symlinks_hard_links_and_handles_are_refused_by_the_guard";
    if !guarded(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for access in ["rw", "ro"] {
            let lab = Lab::new(user.as_ref());
            let attack = Attack {
                access,
                setup: &second_paths_setup,
                chat: SECOND_PATHS_CHAT,
                outside: Some(SECOND_PATHS_OUTSIDE),
            };
            let control = run(&lab, false, &attack);
            let leaks = control.leaks();
            for key in [
                "read rel.txt",
                "read abs.txt",
                "read relplan/plan.json",
                "read dot/workflow.sqlite",
                "read dot/planning/plan.json",
                "read hard.txt",
                "read sub/deep.txt",
                "read sub/up.txt",
                "read sub/abs.txt",
                "read late2.txt",
            ] {
                assert!(
                    leaks.iter().any(|k| k == key),
                    "control {} {access}: {key} not read\n{}",
                    lab.who(),
                    control.report
                );
            }
            // open_by_handle_at needs CAP_DAC_READ_SEARCH: root's control only.
            if lab.user.is_none() {
                assert!(
                    leaks.iter().any(|k| k == "open_by_handle_at"),
                    "control as root: open_by_handle_at\n{}",
                    control.report
                );
            }
            if access == "rw" {
                for name in ["mine.txt", "mine2.txt", "mine3.txt"] {
                    assert!(lab.demo.granted.join(name).exists(), "control: {name}");
                }
            }

            let seen = run(&lab, true, &attack);
            let case = format!("{} {access}", lab.who());
            for key in seen.leaks() {
                failures.push(format!("{case}: {key}: {}", seen.note(&key)));
            }
            let database = std::fs::metadata(lab.demo.granted.join("workflow.sqlite")).unwrap();
            for name in ["mine.txt", "mine2.txt", "mine3.txt"] {
                let link = std::fs::symlink_metadata(lab.demo.granted.join(name));
                if link.is_ok_and(|m| m.ino() == database.ino()) {
                    failures.push(format!("{case}: the chat linked {name} to the database"));
                }
            }
            say(&format!(
                "REPORT {case}: {}",
                seen.report.replace('\n', " | ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// AgentWorks (or anything outside) makes a new refused database during the chat and gives it a
/// second, allowed name by a hard link (at the top and deeper): the chat, which never lists the
/// grant's top, does not read it under the allowed name (the guard lists the top again when it
/// looks up a file with more than one name).
const LATE_HARD_LINK_OUTSIDE: &str = r#"
write("late.db", "late " + secret)
os.link(path("late.db"), path("late-link.txt"))
os.mkdir(path("sub"))
os.link(path("late.db"), path("sub/deeper.txt"))
"#;

const LATE_HARD_LINK_CHAT: &str = r#"
wait_go()
attempt("read late-link.txt", lambda: read(path("late-link.txt")))
attempt("read sub/deeper.txt", lambda: read(path("sub/deeper.txt")))
attempt("list", lambda: sorted(os.listdir(top)))
attempt("read late-link.txt after a listing", lambda: read(path("late-link.txt")))
"#;

#[test]
fn a_refused_entry_made_outside_during_the_chat_with_an_allowed_hard_link_stays_refused() {
    let test =
        "a_refused_entry_made_outside_during_the_chat_with_an_allowed_hard_link_stays_refused";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, _: &str| {
        std::fs::write(top.join("doc.md"), "doc").unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let attack = Attack {
            access: "ro",
            setup: &setup,
            chat: LATE_HARD_LINK_CHAT,
            outside: Some(LATE_HARD_LINK_OUTSIDE),
        };
        let control = run(&lab, false, &attack);
        assert!(
            control.leaks().len() >= 3,
            "control {}:\n{}",
            lab.who(),
            control.report
        );
        let seen = run(&lab, true, &attack);
        for key in seen.leaks() {
            failures.push(format!("{}: {key}: {}", lab.who(), seen.note(&key)));
        }
        say(&format!(
            "REPORT {}: {}",
            lab.who(),
            seen.report.replace('\n', " | ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The daemon, seen from the chat.

/// Every other process the chat sees (the guard's daemon is in its PID namespace): its
/// `/proc` entries (`environ`, `root`, `cwd`, `fd/*` and the real grant through its handle,
/// `mem`), `ptrace`, then `SIGKILL`; then the chat's grant once more, which must answer no more
/// (`ENOTCONN`), never the real folder beneath. Then, in a child, the guard unmounted or covered
/// from inside (also in a new user and mount namespace).
const DAEMON_CHAT: &str = r#"
wait_go()
me = os.getpid()
mine = {me}
p = me
while p > 1:
    p = int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1]); mine.add(p)
def parent(p):
    return int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
# Only in the sandbox (the control's machine has processes of its own, never to be touched):
# the processes init forked besides the chat's ancestry, which are the guards' daemons.
others = []
everyone = [p for p in os.listdir("/proc") if p.isdigit()]
if CONFINED and len(everyone) < 16:
    for p in everyone:
        try:
            if p.isdigit() and int(p) not in mine and parent(int(p)) == 1:
                others.append(int(p))
        except OSError:
            pass
    if len(others) > 4:
        others = []
note("others", others)
def umount_child(how):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if how == "unshare":
                check(libc.unshare(0x10000000 | 0x00020000))
            if how == "mount":
                check(libc.mount(b"none", top.encode(), b"tmpfs", 0, None))
            else:
                check(libc.umount2(top.encode(), 2))
            code = 3
        except OSError as e:
            code = 4
        os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
for how in ["umount", "unshare", "mount"] if CONFINED else []:
    attempt(how + " (3: done)", lambda: umount_child(how))
attempt("read raw after umount", lambda: read(path("workflow.sqlite")))
for pid in others:
    d = "/proc/%d" % pid
    attempt("%d comm" % pid, lambda: open(d + "/comm").read().strip())
    attempt("%d environ" % pid, lambda: read(d + "/environ")[:60])
    attempt("%d root" % pid, lambda: os.listdir(d + "/root" + top))
    attempt("%d cwd" % pid, lambda: os.readlink(d + "/cwd"))
    attempt("%d mem" % pid, lambda: os.close(os.open(d + "/mem", os.O_RDONLY)))
    attempt("%d fds" % pid, lambda: os.listdir(d + "/fd"))
    for n in range(0, 12):
        attempt("%d fd %d raw" % (pid, n), lambda: read(d + "/fd/%d/workflow.sqlite" % n))
    attempt("%d ptrace" % pid, lambda: check(libc.ptrace(16, pid, None, None)))
for pid in others:
    attempt("%d kill" % pid, lambda: os.kill(pid, signal.SIGKILL))
time.sleep(0.5)
attempt("after list", lambda: sorted(os.listdir(top)))
attempt("after read doc", lambda: read(path("doc.md")))
attempt("after read raw", lambda: read(path("workflow.sqlite")))
"#;

#[test]
fn the_guards_daemon_is_out_of_the_chats_reach_and_the_mount_closes_when_it_dies() {
    let test = "the_guards_daemon_is_out_of_the_chats_reach_and_the_mount_closes_when_it_dies";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, secret: &str| {
        std::fs::write(top.join("workflow.sqlite"), format!("raw {secret}")).unwrap();
        std::fs::write(top.join("doc.md"), "doc").unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let attack = Attack {
            access: "rw",
            setup: &setup,
            chat: DAEMON_CHAT,
            outside: None,
        };
        let control = run(&lab, false, &attack);
        assert!(
            control.note("after read raw").contains(&control.secret),
            "control {}: the real grant\n{}",
            lab.who(),
            control.report
        );
        let seen = run(&lab, true, &attack);
        for key in seen.leaks() {
            failures.push(format!("{}: {key}: {}", lab.who(), seen.note(&key)));
        }
        // Whether or not the daemon could be killed, the grant never shows the folder beneath.
        let list = seen.note("after list");
        if list.contains("doc.md") && !seen.note("after read doc").contains("doc") {
            failures.push(format!(
                "{}: inconsistent after the kill: {list}",
                lab.who()
            ));
        }
        for (key, value) in &seen.notes {
            if key.ends_with(" mem") && !value.starts_with("refused") {
                failures.push(format!("{}: {key} opened", lab.who()));
            }
            if key.ends_with(" ptrace") && !value.starts_with("refused") {
                failures.push(format!("{}: {key} attached", lab.who()));
            }
        }
        say(&format!(
            "REPORT {}: {}",
            lab.who(),
            seen.report.replace('\n', " | ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The daemon as a confused deputy.

/// In a read-only grant, every kind of write through the guard: nothing on the disk changes.
const READ_ONLY_CHAT: &str = r#"
wait_go()
def append():
    with open(path("doc.md"), "ab") as f: f.write(b" chat-wrote")
attempt("append", append)
attempt("create", lambda: write_new(path("new.txt")))
attempt("mkdir", lambda: os.mkdir(path("newdir")))
attempt("unlink", lambda: os.unlink(path("sub/gone.txt")))
attempt("chmod", lambda: os.chmod(path("doc.md"), 0o777))
attempt("utime", lambda: os.utime(path("doc.md"), (0, 0)))
attempt("truncate", lambda: os.truncate(path("doc.md"), 0))
attempt("setxattr", lambda: os.setxattr(path("doc.md"), "user.chat", b"x"))
attempt("symlink", lambda: os.symlink("doc.md", path("lnk")))
attempt("link", lambda: os.link(path("doc.md"), path("doc3.md")))
attempt("mkfifo", lambda: os.mkfifo(path("fifo")))
attempt("rename", lambda: os.rename(path("doc.md"), path("doc2.md")))
"#;

#[test]
fn a_read_only_grant_is_read_only_through_the_guard() {
    let test = "a_read_only_grant_is_read_only_through_the_guard";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, _: &str| {
        std::fs::create_dir_all(top.join("sub")).unwrap();
        std::fs::write(top.join("sub/gone.txt"), "here").unwrap();
        std::fs::write(top.join("doc.md"), "doc").unwrap();
        std::fs::set_permissions(top.join("doc.md"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
    };
    let state = |top: &Path| {
        let meta = std::fs::metadata(top.join("doc.md")).ok();
        let mut names: Vec<String> = std::fs::read_dir(top)
            .unwrap()
            .chain(std::fs::read_dir(top.join("sub")).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        format!(
            "{:?} {:?} {:?} {names:?}",
            std::fs::read(top.join("doc.md")).ok(),
            meta.as_ref().map(|m| (m.mode(), m.mtime() == 0, m.nlink())),
            xattr_of(&top.join("doc.md")),
        )
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let attack = Attack {
            access: "ro",
            setup: &setup,
            chat: READ_ONLY_CHAT,
            outside: None,
        };
        let top = lab.demo.granted.clone();
        let fresh = Lab::new(user.as_ref());
        std::fs::remove_dir_all(&fresh.demo.granted).unwrap();
        std::fs::create_dir_all(&fresh.demo.granted).unwrap();
        setup(&fresh, &fresh.demo.granted, "");
        let untouched = state(&fresh.demo.granted);
        let control = run(&lab, false, &attack);
        let after_control = state(&top);
        assert_ne!(after_control, untouched, "control {}", lab.who());
        for key in [
            "append", "create", "mkdir", "chmod", "utime", "setxattr", "mkfifo",
        ] {
            assert!(
                !control.note(key).starts_with("refused"),
                "control {}: {key}\n{}",
                lab.who(),
                control.report
            );
        }
        let seen = run(&lab, true, &attack);
        let after = state(&top);
        for (key, value) in &seen.notes {
            if !value.starts_with("refused") {
                failures.push(format!("{}: {key} went through: {value}", lab.who()));
            }
        }
        if after != untouched {
            failures.push(format!(
                "{}: the disk changed: {after}, was {untouched}",
                lab.who()
            ));
        }
        say(&format!(
            "REPORT {}: {}",
            lab.who(),
            seen.report.replace('\n', " | ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn xattr_of(path: &Path) -> Option<Vec<u8>> {
    let name = std::ffi::CString::new("user.chat").unwrap();
    let file = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: both strings are NUL-terminated and live for the call; buf is writable for its
    // length.
    let n = unsafe {
        libc::getxattr(
            file.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    (n >= 0).then(|| buf[..n as usize].to_vec())
}

/// In a read-write grant, symlinks to another workflow's `doc.md` and folder (not granted) made
/// by the chat: every
/// operation that the daemon might follow them for (write, chmod, truncate, times, xattrs, a
/// hard link, a rename, a new file through a folder link), a device node and `RENAME_EXCHANGE`
/// of a link with an entry. The other workflow stays as it was.
const DEPUTY_CHAT: &str = r#"
notes, home = sys.argv[5:7]
os.symlink(notes, path("esc.txt"))
os.symlink(home, path("escdir"))
wait_go()
attempt("read direct", lambda: read(notes))
attempt("list home direct", lambda: sorted(os.listdir(home)))
attempt("read", lambda: read(path("esc.txt")))
def append():
    with open(path("esc.txt"), "ab") as f: f.write(b" chat-wrote")
attempt("append", append)
attempt("chmod", lambda: os.chmod(path("esc.txt"), 0o600))
attempt("lchown", lambda: os.chown(path("esc.txt"), os.getuid(), os.getgid(), follow_symlinks=False))
attempt("truncate", lambda: os.truncate(path("esc.txt"), 0))
attempt("utime", lambda: os.utime(path("esc.txt"), (0, 0)))
attempt("utime nofollow", lambda: os.utime(path("esc.txt"), (0, 0), follow_symlinks=False))
attempt("setxattr", lambda: os.setxattr(path("esc.txt"), "user.chat", b"x"))
attempt("link follow", lambda: check(libc.linkat(-100, path("esc.txt").encode(), -100, path("esc-link.txt").encode(), 0x400)))
attempt("create through", lambda: write_new(path("escdir/by-chat.txt")))
attempt("mknod", lambda: os.mknod(path("null"), 0o666 | 0o020000, os.makedev(1, 3)))
attempt("exchange", lambda: check(libc.renameat2(-100, path("esc.txt").encode(), -100, path("doc.md").encode(), 2)))
attempt("read after exchange", lambda: read(path("esc.txt")))
"#;

#[test]
fn the_daemon_follows_no_symlink_the_chat_makes_and_makes_no_device() {
    let test = "the_daemon_follows_no_symlink_the_chat_makes_and_makes_no_device";
    if !guarded(test) {
        return;
    }
    let setup = |lab: &Lab, top: &Path, secret: &str| {
        std::fs::write(top.join("doc.md"), "doc").unwrap();
        let notes = lab.demo.other_workflow.join("doc.md");
        // Made afresh: the control's xattr and modes gone.
        let _ = std::fs::remove_file(&notes);
        std::fs::write(&notes, format!("notes {secret}")).unwrap();
        std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o644)).unwrap();
        let _ = std::fs::remove_file(lab.demo.other_workflow.join("by-chat.txt"));
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let notes = lab.demo.other_workflow.join("doc.md");
        let chat = format!(
            "sys.argv[5:7] = [{:?}, {:?}]\n{DEPUTY_CHAT}",
            notes.display().to_string(),
            lab.demo.other_workflow.display().to_string()
        );
        let attack = Attack {
            access: "rw",
            setup: &setup,
            chat: &chat,
            outside: None,
        };
        let control = run(&lab, false, &attack);
        assert!(control.note("read").contains(&control.secret));
        assert!(
            lab.demo.other_workflow.join("by-chat.txt").exists(),
            "control"
        );
        let seen = run(&lab, true, &attack);
        for key in seen.leaks() {
            failures.push(format!("{}: {key}: {}", lab.who(), seen.note(&key)));
        }
        let meta = std::fs::metadata(&notes).unwrap();
        let content = std::fs::read_to_string(&notes).unwrap();
        if content != format!("notes {}", seen.secret)
            || meta.mode() & 0o7777 != 0o644
            || meta.nlink() != 1
            || meta.mtime() == 0
            || xattr_of(&notes).is_some()
        {
            failures.push(format!(
                "{}: the other workflow's doc changed: {content:?} mode {:o} nlink {} mtime {}",
                lab.who(),
                meta.mode(),
                meta.nlink(),
                meta.mtime()
            ));
        }
        if lab.demo.other_workflow.join("by-chat.txt").exists() {
            failures.push(format!(
                "{}: a file was made in the other workflow",
                lab.who()
            ));
        }
        if std::fs::symlink_metadata(lab.demo.granted.join("null"))
            .is_ok_and(|m| m.file_type().is_char_device())
        {
            failures.push(format!("{}: a device node was made", lab.who()));
        }
        say(&format!(
            "REPORT {}: {}",
            lab.who(),
            seen.report.replace('\n', " | ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The daemon's descriptors exhausted.

/// The chat makes and looks up more entries than the daemon may hold handles (one per entry the
/// kernel knows: its open-file limit, the launcher's hard limit), then reads the refused
/// database and an allowed file: the refused one stays refused (the name is decided before any
/// handle is taken); the allowed one may fail (`EMFILE`: the chat's own guard, closed).
const EXHAUST_CHAT: &str = r#"
import resource
wait_go()
limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
note("limit", limit)
os.mkdir(path("many"))
failed = None
for i in range(limit + 64):
    try:
        fd = os.open(path("many/%d" % i), os.O_WRONLY | os.O_CREAT, 0o644); os.close(fd)
        os.stat(path("many/%d" % i))
    except OSError as e:
        failed = "%d: %s" % (i, os.strerror(e.errno)); break
note("made until", failed)
attempt("read raw", lambda: read(path("workflow.sqlite")))
attempt("read doc", lambda: read(path("doc.md")))
attempt("list", lambda: len(os.listdir(top)))
"#;

#[test]
fn the_daemon_out_of_descriptors_refuses_what_it_refused() {
    let test = "the_daemon_out_of_descriptors_refuses_what_it_refused";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, secret: &str| {
        std::fs::write(top.join("workflow.sqlite"), format!("raw {secret}")).unwrap();
        std::fs::write(top.join("doc.md"), "doc").unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let attack = Attack {
            access: "rw",
            setup: &setup,
            chat: EXHAUST_CHAT,
            outside: None,
        };
        let control = run(&lab, false, &attack);
        assert!(control.note("read raw").contains(&control.secret));
        let seen = run(&lab, true, &attack);
        for key in seen.leaks() {
            failures.push(format!("{}: {key}: {}", lab.who(), seen.note(&key)));
        }
        say(&format!(
            "REPORT {}: {}",
            lab.who(),
            seen.report.replace('\n', " | ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The daemon killed from outside, by a process of the chat's user (the chat cannot): the mount
/// answers `ENOTCONN` to the chat, never the folder beneath (the real `workflow.sqlite`).
const KILL_DAEMON_OUTSIDE: &str = r#"
import signal
killed = []
for p in os.listdir("/proc"):
    if not p.isdigit(): continue
    try:
        status = open("/proc/%s/status" % p).read()
        nspid = [l for l in status.splitlines() if l.startswith("NSpid:")][0].split()
        mounts = open("/proc/%s/mountinfo" % p).read()
    except OSError:
        continue
    if len(nspid) == 3 and nspid[-1] == "2" and (" " + top + " ") in mounts and "cli-sandbox-guard" in mounts:
        os.kill(int(p), signal.SIGKILL); killed.append(p)
open(go + ".killed", "w").write(repr(killed))
"#;

const AFTER_KILL_CHAT: &str = r#"
wait_go()
time.sleep(0.3)
attempt("list", lambda: sorted(os.listdir(top)))
attempt("read doc", lambda: read(path("doc.md")))
attempt("read raw", lambda: read(path("workflow.sqlite")))
attempt("stat raw", lambda: os.stat(path("workflow.sqlite")).st_size)
"#;

#[test]
fn the_guards_daemon_killed_from_outside_leaves_a_closed_mount_not_the_folder_beneath() {
    let test = "the_guards_daemon_killed_from_outside_leaves_a_closed_mount_not_the_folder_beneath";
    if !guarded(test) {
        return;
    }
    let setup = |_: &Lab, top: &Path, secret: &str| {
        std::fs::write(top.join("workflow.sqlite"), format!("raw {secret}")).unwrap();
        std::fs::write(top.join("doc.md"), "doc").unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let attack = Attack {
            access: "rw",
            setup: &setup,
            chat: AFTER_KILL_CHAT,
            outside: Some(KILL_DAEMON_OUTSIDE),
        };
        let control = run(&lab, false, &attack);
        assert!(control.note("read raw").contains(&control.secret));
        let seen = run(&lab, true, &attack);
        let killed = std::fs::read_dir(&lab.demo.outside)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".killed"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect::<Vec<_>>();
        for key in seen.leaks() {
            failures.push(format!("{}: {key}: {}", lab.who(), seen.note(&key)));
        }
        for key in ["list", "read doc", "stat raw"] {
            if !seen
                .note(key)
                .contains("Transport endpoint is not connected")
            {
                failures.push(format!(
                    "{}: {key} after the daemon's death: {} (killed: {killed:?})",
                    lab.who(),
                    seen.note(key)
                ));
            }
        }
        say(&format!(
            "REPORT {} (killed {killed:?}): {}",
            lab.who(),
            seen.report.replace('\n', " | ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
