//! No chat can make another chat's launch wait or fail by holding a lock.
//!
//! Pre-trust edits the person's files under a lock. Earlier versions took it on the person's
//! folder (`~/.codex`, `~/.gemini`, the home for `~/.claude.json`), which every chat can open:
//! a chat that held it stopped every other launch of that CLI for 30 s, then failed it. The
//! launcher's lock now lives in the state root, closed to every chat, and the person's CLIs
//! (which take no lock of ours) are met by compare and swap (`person_files`).
//!
//! Here one chat, confined for real (`cli-sandbox step` with the namespace plan, and the
//! Landlock-only fallback through `cli-sandbox exec`), takes every lock it can in the home:
//! `flock` on every folder and file it can open, a POSIX record lock (`F_SETLK`) and an
//! open-file-description lock (`F_OFD_SETLK`) on every file it can open for writing, and tries
//! the launcher's own lock files. It keeps them until the test lets it go, which is only after
//! the other launches have ended: so a launch that waited for any of them would never end on its
//! own (the old code failed after its 30 s wait, with status 125). Meanwhile another chat's
//! `cli-sandbox pre-trust` of every registered CLI ends with status 0, its entries on the disk
//! and the person's own entries kept. The control: a process outside tries the same locks
//! without waiting and gets none of them (the chat really holds each lock it took), and opens
//! the launcher's lock files the chat could not.
//!
//! Run as this process's user, and as an ordinary user the test creates when it runs as root.
//! The chat's attempts are a small Python program (`/usr/bin/python3`: `fcntl` has all three
//! kinds of lock).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cli_sandbox_tests::process::{text, wait_child};
use cli_sandbox_tests::users::{TestUser, command_as};
use cli_sandbox_tests::{REQUIRE_LANDLOCK, cli_sandbox, confinement_available, skip};
use launch::demo::Demo;
use serde_json::Value;

const PYTHON: &str = "/usr/bin/python3";

/// Not a bound on how long a launch takes (nothing here is timed): the wait after which a test
/// that would otherwise hang fails instead. A launch that waited for the chat's locks would wait
/// until the chat let go, which it does only after the launches have ended.
const HUNG: Duration = Duration::from_secs(240);

/// The chat's program: takes every lock it can in the home (argv[1]: every folder and file it
/// lists there, and every path the test saw there from outside, argv[2], a JSON list: the
/// Landlock-only fallback cannot list the home) and tries the launcher's lock files (argv[3], a
/// JSON list); prints what it holds and what it reached as one JSON line, then holds everything
/// until its stdin ends.
const HOLDER: &str = r#"
import fcntl, json, os, struct, sys
home, seen, ours = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
done = set()
held, fds, errors = [], [], []
POSIX_END = 1 << 40
def ofd(fd, kind, start, length):
    # struct flock: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0))
def lock(path, folder):
    if path in done:
        return
    done.add(path)
    try:
        fd = os.open(path, os.O_RDONLY if folder else os.O_RDWR)
        writable = not folder
    except OSError:
        try:
            fd = os.open(path, os.O_RDONLY)
            writable = False
        except OSError as e:
            errors.append([path, e.strerror])
            return
    fds.append(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(["flock", path])
    except OSError as e:
        errors.append([path, "flock: " + e.strerror])
    if not folder:
        # A POSIX record lock on the first TiB, an OFD lock on everything after it (the two
        # kinds conflict with each other, even in one process). A file the chat may only read
        # (the CLIs' settings are read-only in every chat) gets read locks, which still stop
        # any writer that asks for a lock.
        try:
            fcntl.lockf(fd, (fcntl.LOCK_EX if writable else fcntl.LOCK_SH) | fcntl.LOCK_NB, POSIX_END, 0, os.SEEK_SET)
            held.append(["posix", path])
        except OSError as e:
            errors.append([path, "posix: " + e.strerror])
        try:
            ofd(fd, fcntl.F_WRLCK if writable else fcntl.F_RDLCK, POSIX_END, 0)
            held.append(["ofd", path])
        except OSError as e:
            errors.append([path, "ofd: " + e.strerror])
for root, folders, files in os.walk(home):
    lock(root, True)
    for name in files:
        lock(os.path.join(root, name), False)
for path in seen:
    lock(path, os.path.isdir(path))
reached = []
for path in ours:
    try:
        if path.endswith(".lock"):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        else:
            fd = os.open(path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fds.append(fd)
        reached.append(path)
    except OSError:
        pass
print(json.dumps({"held": held, "reached": reached, "errors": errors}), flush=True)
sys.stdin.read()
"#;

/// The control, outside: tries each lock the chat says it holds, without waiting, and prints
/// those it got (none, when the chat holds them); then whether it can open (or create, and
/// remove again) each of `ours`.
const CONTROL: &str = r#"
import fcntl, json, os, struct, sys
held, ours = json.loads(sys.argv[1]), json.loads(sys.argv[2])
POSIX_END = 1 << 40
got, opened = [], []
for kind, path in held:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        fd = os.open(path, os.O_RDONLY)
    try:
        if kind == "flock":
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        elif kind == "posix":
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, POSIX_END, 0, os.SEEK_SET)
        else:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK,
                        struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, POSIX_END, 0, 0))
        got.append([kind, path])
    except OSError:
        pass
    os.close(fd)
for path in ours:
    try:
        if path.endswith(".lock"):
            existed = os.path.exists(path)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            if not existed:
                os.unlink(path)
        else:
            os.close(os.open(path, os.O_RDONLY))
        opened.append(path)
    except OSError:
        pass
print(json.dumps({"got": got, "opened": opened}))
"#;

/// A demo layout in a folder every user can enter, the person's own settings in it, owned by
/// `user` when given.
struct World {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

/// The person's own settings, which every launch must keep: (file, text, what must stay).
fn person_settings(home: &Path) -> Vec<(PathBuf, &'static str, Vec<&'static str>)> {
    vec![
        (
            home.join(".codex/config.toml"),
            "# mine, keep this comment\nmodel = \"gpt-5\"\n\n[projects.\"/home/me/code\"]\ntrust_level = \"trusted\"\n",
            vec![
                "# mine, keep this comment",
                "model = \"gpt-5\"",
                "[projects.\"/home/me/code\"]",
            ],
        ),
        (
            home.join(".claude.json"),
            "{\n  \"numStartups\": 7,\n  \"projects\": {\n    \"/home/me/code\": {\"hasTrustDialogAccepted\": true}\n  }\n}\n",
            vec!["\"numStartups\": 7", "\"/home/me/code\""],
        ),
        (
            home.join(".gemini/trustedFolders.json"),
            "{\n  \"/home/me/code\": \"TRUST_FOLDER\"\n}\n",
            vec!["\"/home/me/code\": \"TRUST_FOLDER\""],
        ),
        (
            home.join(".gemini/settings.json"),
            "{\n  \"theme\": \"mine\"\n}\n",
            vec!["\"theme\": \"mine\""],
        ),
    ]
}

fn world(user: Option<&TestUser>) -> World {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let demo = Demo::create(&dir.path().join("layout")).unwrap();
    for (file, text, _) in person_settings(&demo.home) {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    if let Some(user) = user {
        user.own(&demo.root);
    }
    World {
        _dir: dir,
        demo,
        user: user.cloned(),
    }
}

/// How the holding chat is confined.
#[derive(Debug, Clone, Copy)]
enum Holder {
    /// `cli-sandbox step`: the namespace plan.
    Step,
    /// The Landlock-only fallback, through `cli-sandbox exec`.
    Fallback,
}

impl World {
    /// `cli-sandbox` as the world's user, for its layout (the state root at its default place
    /// in the home), with none of the variables that would move a CLI's settings.
    fn command(&self) -> Command {
        let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
        cmd.arg("--config")
            .arg(&self.demo.config)
            .env("HOME", &self.demo.home)
            .current_dir(&self.demo.root)
            .stdin(Stdio::null());
        for var in [
            "XDG_DATA_HOME",
            "AGENTWORKS_STATE_ROOT",
            "AGENTWORKS_WORKSPACE_DOCS",
            "CODEX_HOME",
            "CLAUDE_CONFIG_DIR",
            "GEMINI_CLI_HOME",
            "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
            "TMUX",
            "RUST_LOG",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `cli-sandbox pre-trust --json` of `cli` for `chat`, its answer.
    fn pre_trust(&self, cli: &str, chat: &str) -> Child {
        self.pre_trust_logging(cli, chat, "warn")
    }

    /// The same, logging on stderr as `RUST_LOG=log` asks.
    fn pre_trust_logging(&self, cli: &str, chat: &str, log: &str) -> Child {
        let mut cmd = self.command();
        cmd.env("RUST_LOG", log);
        cmd.args(["pre-trust", "--json", "--cli", cli, "--chat", chat])
            .args(["--grant", &self.demo.grant_arg()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().expect("start cli-sandbox pre-trust")
    }

    /// The chat that holds the locks, started and confined as `how` says.
    fn holder(&self, how: Holder, ours: &[PathBuf]) -> Child {
        let home = self.demo.home.display().to_string();
        let mut seen = Vec::new();
        every_path(&self.demo.home, &self.demo.state_root, &mut seen);
        let list = |paths: &[PathBuf]| {
            serde_json::to_string(
                &paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>(),
            )
            .unwrap()
        };
        let argv: Vec<String> = vec![
            PYTHON.into(),
            "-c".into(),
            HOLDER.into(),
            home,
            list(&seen),
            list(ours),
        ];
        let mut cmd = match how {
            Holder::Step => {
                let mut cmd = self.command();
                cmd.args(["step", "--chat", &self.demo.other_chat, "--"])
                    .args(&argv);
                cmd
            }
            Holder::Fallback => {
                let mut ctx = launch::Context::load(&self.demo.settings()).unwrap();
                ctx.privileged = self.user.is_none() && is_root();
                let policy = ctx.policy(&self.demo.other_chat, &[]).unwrap();
                ctx.ensure_runtime(&policy).unwrap();
                let kernel = sandbox_linux::plan::Kernel {
                    namespaces: false,
                    ..cli_sandbox_tests::this_kernel()
                };
                let plan = sandbox_linux::compile(&policy, kernel).unwrap();
                assert!(plan.namespaces.is_none(), "not the fallback's plan");
                let file = self.demo.root.join("fallback-plan.json");
                std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
                if let Some(user) = &self.user {
                    user.own(&self.demo.other_runtime);
                }
                let mut cmd = self.command();
                cmd.arg("exec")
                    .arg("--policy")
                    .arg(&file)
                    .arg("--")
                    .args(&argv)
                    .current_dir(&self.demo.other_runtime);
                cmd
            }
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().expect("start the holding chat")
    }

    /// The guard of the launching chat, as `pre-trust` builds it (for the names of the
    /// launcher's lock files).
    fn guard(&self) -> launch::person_files::PersonFilesGuard {
        let ctx = launch::Context::load(&self.demo.settings()).unwrap();
        let policy = ctx.policy(&self.demo.chat, &[]).unwrap();
        launch::person_files::PersonFilesGuard::for_policy(&policy)
    }

    /// The control, outside the sandbox, as the world's user.
    fn control(&self, held: &Value, ours: &[PathBuf]) -> Value {
        let ours: Vec<String> = ours.iter().map(|p| p.display().to_string()).collect();
        let out = command_as(self.user.as_ref(), PYTHON)
            .args(["-c", CONTROL, &held.to_string()])
            .arg(serde_json::to_string(&ours).unwrap())
            .env("HOME", &self.demo.home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "control: {}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Every folder and file under `dir`, `dir` itself included, but not under `skip` (the state
/// root, closed to the chat: its own runtime is there, which a chat may lock at will).
fn every_path(dir: &Path, skip: &Path, out: &mut Vec<PathBuf>) {
    if dir == skip {
        return;
    }
    out.push(dir.to_owned());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            every_path(&path, skip, out);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// This process's user, and the ordinary user when this process is root and can make one.
fn every_user(test: &str) -> Vec<Option<TestUser>> {
    let mut users = vec![None];
    if is_root()
        && let Some(user) = TestUser::get(test)
    {
        users.push(Some(user));
    }
    users
}

/// The child's status and outputs, failing the test if it has not ended within [`HUNG`].
fn finish(mut child: Child, what: &str) -> (std::process::ExitStatus, String, String) {
    let Some(status) = wait_child(&mut child, HUNG) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} has not ended: it waits for a lock the other chat holds");
    };
    let out = child.wait_with_output().unwrap();
    (
        status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether `file` holds the entry `keys` (a key path of a TOML or JSON file).
fn has_entry(file: &Path, keys: &[String]) -> bool {
    let Ok(text) = std::fs::read_to_string(file) else {
        return false;
    };
    if file.extension().is_some_and(|e| e == "toml") {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        let mut item = doc.as_item();
        for key in keys {
            match item.get(key.as_str()) {
                Some(next) => item = next,
                None => return false,
            }
        }
        true
    } else {
        let mut value: Value = serde_json::from_str(&text).unwrap();
        for key in keys {
            match value.get(key.as_str()) {
                Some(next) => value = next.clone(),
                None => return false,
            }
        }
        true
    }
}

#[test]
fn a_chat_holding_every_lock_it_can_take_in_the_home_delays_no_other_launch() {
    let test = "a_chat_holding_every_lock_it_can_take_in_the_home_delays_no_other_launch";
    if !confinement_available(test) {
        return;
    }
    if !Path::new(PYTHON).exists() {
        skip(test, &format!("{PYTHON} is missing"), REQUIRE_LANDLOCK);
        return;
    }
    let clis = launch::registry::names();
    for user in every_user(test) {
        for how in [Holder::Step, Holder::Fallback] {
            let who = user
                .as_ref()
                .map_or("this process's user", |u| u.name.as_str());
            let w = world(user.as_ref());
            let home = &w.demo.home;

            // A first launch of every CLI (a third chat), so that every settings file exists
            // before the chat takes its locks.
            for cli in &clis {
                let (status, out, err) = finish(w.pre_trust(cli, "chat-warm"), "warm-up");
                assert!(status.success(), "{who} {how:?} warm-up {cli}: {out}{err}");
            }
            // The launcher's own locks: its folder (made by the warm-up, and left empty: each
            // lock is removed as it is let go) and the lock file of each file of the home.
            let locks_dir = w.demo.state_root.join("state/cli-sandbox/locks");
            assert_eq!(
                std::fs::read_dir(&locks_dir).unwrap().count(),
                0,
                "{who} {how:?}"
            );
            let mut files_of_the_home = Vec::new();
            every_path(home, &w.demo.state_root, &mut files_of_the_home);
            let guard = w.guard();
            let mut ours: Vec<PathBuf> = files_of_the_home
                .iter()
                .filter(|p| p.is_file())
                .map(|p| guard.lock_file(p))
                .collect();
            ours.push(locks_dir.clone());

            // The chat takes every lock it can and holds them.
            let mut holder = w.holder(how, &ours);
            let mut line = String::new();
            BufReader::new(holder.stdout.as_mut().unwrap())
                .read_line(&mut line)
                .unwrap();
            if line.is_empty() {
                let (status, _, err) = finish(holder, "the holding chat");
                panic!("{who} {how:?}: the holding chat said nothing: {status:?} {err}");
            }
            let said: Value = serde_json::from_str(&line).unwrap();
            let held = &said["held"];
            let holds = |kind: &str, path: &Path| {
                held.as_array()
                    .unwrap()
                    .iter()
                    .any(|h| h[0] == kind && h[1].as_str() == Some(&path.display().to_string()))
            };
            // What a chat would lock to stop the launches: each CLI's folder and file.
            let folders = [home.clone(), home.join(".codex"), home.join(".gemini")];
            let files = [
                home.join(".codex/config.toml"),
                home.join(".claude.json"),
                home.join(".gemini/trustedFolders.json"),
                home.join(".gemini/settings.json"),
            ];
            for file in &files {
                for kind in ["flock", "posix", "ofd"] {
                    assert!(
                        holds(kind, file),
                        "{who} {how:?}: the chat could not take {kind} on {}: {said}",
                        file.display()
                    );
                }
            }
            if matches!(how, Holder::Step) {
                // The fallback freezes the home and the folders on the way to the state root:
                // it cannot open them to lock them (which it would not need to, either).
                for folder in &folders {
                    assert!(
                        holds("flock", folder),
                        "{who} {how:?}: the chat could not flock {}: {said}",
                        folder.display()
                    );
                }
            }
            assert_eq!(
                said["reached"],
                serde_json::json!([]),
                "{who} {how:?}: the chat reached the launcher's own locks"
            );

            // Control: the chat really holds each lock it took (a process outside gets none of
            // them without waiting), and the launcher's lock files are there to be taken.
            let control = w.control(held, &ours);
            assert_eq!(
                control["got"],
                serde_json::json!([]),
                "{who} {how:?}: locks the chat said it held were free"
            );
            assert_eq!(
                control["opened"].as_array().unwrap().len(),
                ours.len(),
                "{who} {how:?}: {control}"
            );

            // Meanwhile: another chat launches every CLI.
            for cli in &clis {
                let (status, out, err) = finish(w.pre_trust(cli, &w.demo.chat), "pre-trust");
                assert!(
                    status.success(),
                    "{who} {how:?}: pre-trust of {cli} failed while the other chat held its locks: {out}{err}"
                );
                let done: Value = serde_json::from_str(&out).unwrap();
                // Codex is trusted per launch: its file is only pruned, nothing is added.
                if *cli == "codex" {
                    continue;
                }
                for edit in done["edits"].as_array().unwrap() {
                    let file = PathBuf::from(edit["file"].as_str().unwrap());
                    let keys: Vec<String> = edit["keys"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|k| k.as_str().unwrap().to_owned())
                        .collect();
                    assert!(
                        has_entry(&file, &keys),
                        "{who} {how:?} {cli}: {} lacks {keys:?}",
                        file.display()
                    );
                }
                // The trust of this chat's runtime is its own: written now, not kept from the
                // warm-up, and on the disk.
                let edits = done["edits"].as_array().unwrap();
                // Gemini's one entry for the runtimes folder serves every chat (written by the
                // warm-up): not this chat's own.
                if *cli == "gemini" {
                    continue;
                }
                let runtime = w.demo.runtime.display().to_string();
                let on_disk = edits.iter().any(|e| {
                    std::fs::read_to_string(e["file"].as_str().unwrap())
                        .is_ok_and(|t| t.contains(&runtime))
                });
                assert!(
                    edits.is_empty() || (edits.iter().any(|e| e["written"] == true) && on_disk),
                    "{who} {how:?} {cli}: nothing of this chat's was written: {out}"
                );
            }

            // Every lock of the launcher's was let go and removed.
            assert_eq!(
                std::fs::read_dir(&locks_dir).unwrap().count(),
                0,
                "{who} {how:?}"
            );

            // The chat still held everything: it lets go only now. (The files the launches
            // replaced are new inodes, which the chat never locked; its locks on the old ones
            // and on the folders are still held.)
            assert!(
                holder.try_wait().unwrap().is_none(),
                "{who} {how:?}: the chat ended"
            );
            let folders_held: Vec<&Value> = held
                .as_array()
                .unwrap()
                .iter()
                .filter(|h| Path::new(h[1].as_str().unwrap()).is_dir())
                .collect();
            let control = w.control(&serde_json::json!(folders_held), &[]);
            assert_eq!(control["got"], serde_json::json!([]), "{who} {how:?}");
            drop(holder.stdin.take());
            let (status, _, err) = finish(holder, "the holding chat");
            assert!(
                status.success(),
                "{who} {how:?}: the holding chat: {status:?} {err}"
            );

            // The person's own settings are kept.
            for (file, _, kept) in person_settings(home) {
                let now = std::fs::read_to_string(&file).unwrap();
                for piece in kept {
                    assert!(
                        now.contains(piece),
                        "{who} {how:?}: {} lost {piece}:\n{now}",
                        file.display()
                    );
                }
            }
            let _ = std::io::stderr().write_all(
                format!(
                    "{test}: {who}, {how:?}: {} locks held, every launch ended\n",
                    held.as_array().unwrap().len()
                )
                .as_bytes(),
            );
        }
    }
}

/// The chat's program for the next test: rewrites each file (argv[2], a JSON list) as fast as
/// it can, in place, a newline at its end turned into a space and back (so that it stays the
/// person's valid file, changed each time) until the file argv[1] appears; writes how
/// many rewrites it has made into argv[3] after each round.
const REWRITER: &str = r##"
import json, os, sys
stop, files, count = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
n = 0
while not os.path.exists(stop):
    for _ in range(100):
        for path in files:
            fd = os.open(path, os.O_RDWR)
            data = os.pread(fd, 1 << 20, 0)
            if data.endswith(b"\n"):
                data = data[:-1] + b" "
            elif data.endswith(b" "):
                data = data[:-1] + b"\n"
            else:
                data = data + b"\n"
            os.pwrite(fd, data, 0)
            os.close(fd)
            n += 1
    with open(count + ".tmp", "w") as f:
        f.write(str(n))
    os.rename(count + ".tmp", count)
print(n)
"##;

/// A chat that rewrites the person's settings files without pause, so that every read of a
/// launch is outdated before its rename, does not fail another chat's launch: the compare and
/// swap that keeps a CLI's concurrent write gives up after a bounded number of rounds and
/// replaces the file with its edit of the latest version read. The control: the chat's count of
/// rewrites grows while the launches run (it really raced them).
#[test]
fn a_chat_rewriting_the_settings_files_without_pause_fails_no_other_launch() {
    let test = "a_chat_rewriting_the_settings_files_without_pause_fails_no_other_launch";
    if !confinement_available(test) {
        return;
    }
    if !Path::new(PYTHON).exists() {
        skip(test, &format!("{PYTHON} is missing"), REQUIRE_LANDLOCK);
        return;
    }
    for user in every_user(test) {
        let who = user
            .as_ref()
            .map_or("this process's user", |u| u.name.as_str());
        let w = world(user.as_ref());
        let home = &w.demo.home;
        // The person's file a chat can still write: the CLIs' state (Gemini's trust list).
        // `~/.codex/config.toml` and `~/.claude.json` are read-only in every chat (places the
        // CLIs act on: `tests/steering.rs`).
        let files = [home.join(".gemini/trustedFolders.json")];
        let (stop, count) = (home.join("stop-rewriting"), home.join("rewrites"));
        let list: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        let mut chat = w.command();
        chat.args([
            "step",
            "--chat",
            &w.demo.other_chat,
            "--",
            PYTHON,
            "-c",
            REWRITER,
        ])
        .arg(&stop)
        .arg(serde_json::to_string(&list).unwrap())
        .arg(&count)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let chat = chat.spawn().unwrap();
        let rewrites = || {
            std::fs::read_to_string(&count)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        assert!(
            cli_sandbox_tests::process::wait_until(HUNG, || rewrites() > 0),
            "{who}: the chat never rewrote the files"
        );
        let before = rewrites();
        let (mut forced, mut redone) = (0, 0);
        for cli in ["codex", "claude", "gemini"] {
            let launch = w.pre_trust_logging(cli, &w.demo.chat, "launch=debug");
            let (status, out, err) = finish(launch, "pre-trust");
            forced += usize::from(err.contains("rewritten by another program after each read"));
            redone += err.matches("the edit is made again").count();
            assert!(
                status.success(),
                "{who}: pre-trust of {cli} failed while the chat rewrote its files: {out}{err}\n{:?}",
                files
                    .iter()
                    .map(|f| std::fs::read_to_string(f).unwrap_or_default())
                    .collect::<Vec<_>>()
            );
            let done: Value = serde_json::from_str(&out).unwrap();
            // Codex is trusted per launch: nothing to write in its file.
            assert!(
                cli == "codex"
                    || done["edits"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|e| e["written"] == true),
                "{who} {cli}: {out}"
            );
        }
        let after = rewrites();
        std::fs::write(&stop, "").unwrap();
        let (status, out, err) = finish(chat, "the rewriting chat");
        assert!(status.success(), "{who}: the chat: {status:?} {err}");
        assert!(
            after > before,
            "{who}: the chat did not rewrite the files while the launches ran ({before}, {after}, {out})"
        );
        let _ = std::io::stderr().write_all(
            format!(
                "{test}: {who}: {} rewrites while the launches ran; {redone} edits made again on a newer version, {forced} of 3 launches replaced a file after every round saw it rewritten\n",
                after - before
            )
            .as_bytes(),
        );
    }
}
