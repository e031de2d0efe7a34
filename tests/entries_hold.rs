//! Refused and blocked entries hold whatever processes outside do to their names during the chat
//! (issue 25): a process outside plays AgentWorks (it saves a refused database atomically, swaps
//! the `planning` folder, creates a new `late.db` and a `*.db` by rename, holds a WAL open with
//! its newest rows) and a package manager (it upgrades a blocked program by renaming a new file
//! over it, and installs a missing one), while the chat tries to read and write what appears.
//!
//! Each attempt runs first unconfined (the control, which must get through, so that a refusal
//! means something), then in the namespace plan and in the Landlock-only fallback, as root and
//! as an ordinary user the test creates, in a read-write and in a read-only grant. Verdicts come
//! from the disk: the secret the outside wrote found in what the chat wrote down, the bytes of
//! the refused file after the chat, the marker a blocked program leaves when it runs.
//!
//! What still gets through in a plan is a finding: its test asserts the refusal and is marked
//! `#[ignore = "FINDING: ..."]`, so that the suite stays green and
//! `cargo test -p cli-sandbox --test entries_hold -- --ignored` shows what is open (SECURITY.md
//! names it). In the namespace plan the refused entries are held by the guard over each grant (a
//! FUSE file system, `crates/sandbox-linux/src/guard.rs`), which needs `/dev/fuse`.
#![cfg(target_os = "linux")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cli_sandbox_tests::process::trimmed_text as text;
use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{
    REQUIRE_LANDLOCK, cli_sandbox, confinement_available, root_or_skip, say, skip,
};
use launch::demo::Demo;
use sandbox_linux::plan::Kernel;

const PYTHON: &str = "/usr/bin/python3";

/// How the chat is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Namespaces,
    Fallback,
}

impl Plan {
    fn name(self) -> &'static str {
        match self {
            Plan::Namespaces => "namespace plan",
            Plan::Fallback => "Landlock-only fallback",
        }
    }
}

/// A demo layout in a folder every user can enter, owned by `user` when given.
struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

static FILES: AtomicUsize = AtomicUsize::new(0);

impl Lab {
    fn new(user: Option<&TestUser>, extra_config: &str) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
        let mut config = std::fs::read_to_string(&demo.config).unwrap();
        config.push_str(extra_config);
        std::fs::write(&demo.config, config).unwrap();
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

    /// The chat's plan for `plan`, compiled against the disk as it is now, written into the
    /// layout; its path.
    fn plan(&self, plan: Plan, grant: &str) -> PathBuf {
        let mut ctx = launch::Context::load(&self.demo.settings()).expect("context");
        ctx.privileged = self.user.is_none();
        let grants = [sandbox_core::GrantRequest::parse(grant).unwrap()];
        let policy = ctx.policy(&self.demo.chat, &grants).expect("policy");
        ctx.ensure_runtime(&policy).unwrap();
        let kernel = Kernel {
            landlock_abi: cli_sandbox_tests::this_kernel().landlock_abi,
            namespaces: plan == Plan::Namespaces,
            fuse: cli_sandbox_tests::fuse_for_every_user(),
        };
        let compiled = sandbox_linux::compile(&policy, kernel).expect("compile");
        assert_eq!(compiled.namespaces.is_some(), plan == Plan::Namespaces);
        let file = self.demo.root.join(format!(
            "entries-plan-{}-{}.json",
            std::process::id(),
            FILES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, serde_json::to_vec(&compiled).unwrap()).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        file
    }

    /// `argv` as the lab's user: confined by a fresh plan of kind `plan` with `grant`, or
    /// unconfined (the control) when `plan` is `None`.
    fn chat(&self, plan: Option<Plan>, grant: &str, argv: &[&str]) -> Command {
        let mut cmd = match plan {
            Some(plan) => {
                let file = self.plan(plan, grant);
                let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
                cmd.arg("exec")
                    .arg("--policy")
                    .arg(file)
                    .arg("--")
                    .args(argv);
                cmd
            }
            None => {
                let mut cmd = command_as(self.user.as_ref(), argv[0]);
                cmd.args(&argv[1..]);
                cmd
            }
        };
        cli_sandbox_tests::launches::demo_env(&mut cmd, &self.demo).current_dir(&self.demo.runtime);
        cmd
    }

    /// A fresh path in the folder outside the protected roots where the chat and the processes
    /// outside leave what they report.
    fn outside(&self, name: &str) -> PathBuf {
        self.demo
            .outside
            .join(format!("{name}-{}", FILES.fetch_add(1, Ordering::Relaxed)))
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(path: &Path, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path.exists()
}

fn secret(label: &str) -> String {
    format!(
        "{label}-secret-{}-{}",
        std::process::id(),
        FILES.fetch_add(1, Ordering::Relaxed)
    )
}

// ---------------------------------------------------------------------------------------------
// AgentWorks outside, the chat inside.

/// AgentWorks, outside: before the chat it opens `held.db` in WAL mode and commits a row that
/// stays in the WAL (no checkpoint while it holds the database open); once the chat says it is
/// ready (`argv[2]` exists) it saves `workflow.sqlite` atomically, swaps `planning/`, creates
/// `late.db`, makes `made.db` by rename, commits a row to `held.db`'s WAL and to a new
/// `late2.db`'s, writes a `late.db-wal`, and saves the allowed `doc.md` atomically; then it says
/// so (`argv[3]`) and holds its databases open until `argv[4]` exists. `argv[1]` is the grant's
/// top, then the secrets, one per case, in the order of [`CASES`].
const AGENTWORKS: &str = r#"
import os, sys, time, sqlite3
top, ready, go, done = sys.argv[1:5]
s = dict(zip(["save", "swap", "late", "made", "held", "late2", "sidecar", "live"], sys.argv[5:]))
def atomic(name, text):
    tmp = os.path.join(top, "." + name + ".tmp~")
    with open(tmp, "w") as f: f.write(text)
    os.rename(tmp, os.path.join(top, name))
def wal(name, text):
    c = sqlite3.connect(os.path.join(top, name), isolation_level=None)
    c.execute("pragma journal_mode=wal"); c.execute("pragma wal_autocheckpoint=0")
    c.execute("create table if not exists t(x)"); c.execute("insert into t values (?)", (text,))
    return c
held = wal("held.db", "first row")
# A descriptor of the grant's top held open, as any program of the person's may: through
# /proc/PID/fd an unconfined process of the same uid reaches the grant by it (the control of the
# chat's `procfd:` attempts, which look for any process's such descriptor).
topfd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
open(done + ".outside-ready", "w").write("ready")
deadline = time.time() + 60
while not os.path.exists(ready) and time.time() < deadline: time.sleep(0.02)
atomic("workflow.sqlite", "save " + s["save"])
os.rename(os.path.join(top, "planning"), os.path.join(top, "planning.old"))
os.mkdir(os.path.join(top, "planning.new"))
with open(os.path.join(top, "planning.new", "plan.json"), "w") as f: f.write("swap " + s["swap"])
os.rename(os.path.join(top, "planning.new"), os.path.join(top, "planning"))
with open(os.path.join(top, "late.db"), "w") as f: f.write("late " + s["late"])
with open(os.path.join(top, "made.tmp"), "w") as f: f.write("made " + s["made"])
os.rename(os.path.join(top, "made.tmp"), os.path.join(top, "made.db"))
held.execute("insert into t values (?)", (s["held"],))
late2 = wal("late2.db", s["late2"])
with open(os.path.join(top, "late.db-wal"), "w") as f: f.write("sidecar " + s["sidecar"])
atomic("doc.md", "live " + s["live"])
open(go, "w").write("go")
while not os.path.exists(done) and time.time() < deadline: time.sleep(0.05)
"#;

/// The chat: says it is ready (`argv[1]`), waits for AgentWorks (`argv[2]`), then does each
/// `how:name` of `argv[4:]` in the grant's top `argv[3]` (`read` it, `write`: append a marker,
/// `create`: make a new file there, write and read it back; `procfd`: open `name` beneath every
/// descriptor of every process in sight, `/proc/PID/fd/N/name`; `symlink:LINK=TARGET`: make a
/// symlink at the top and read through it), and writes each result on a line
/// `how:name<TAB>result` into `argv[0]`'s report, `argv[1] + ".report"`.
const CHAT: &str = r#"
import os, sys, time
ready, go, top = sys.argv[1:4]
open(ready, "w").write("ready")
deadline = time.time() + 60
while not os.path.exists(go) and time.time() < deadline: time.sleep(0.02)
lines = []
for spec in sys.argv[4:]:
    how, name = spec.split(":", 1)
    path = os.path.join(top, name)
    try:
        if how == "read":
            with open(path, "rb") as f: got = f.read().decode("latin-1")
        elif how == "procfd":
            # Every descriptor of every process this one can see, as a folder holding `name`.
            got = "refused none found"
            for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
                try: fds = os.listdir("/proc/%s/fd" % pid)
                except OSError: continue
                for fd in fds:
                    try:
                        with open("/proc/%s/fd/%s/%s" % (pid, fd, name), "rb") as f:
                            got = f.read().decode("latin-1")
                    except OSError: pass
        elif how == "symlink":
            link, target = name.split("=", 1)
            os.symlink(target, os.path.join(top, link))
            with open(os.path.join(top, link), "rb") as f: got = f.read().decode("latin-1")
        elif how == "write":
            with open(path, "ab") as f: f.write(b" chat-wrote"); got = "wrote"
        else:
            with open(path, "xb") as f: f.write(b"chat-made")
            with open(path, "rb") as f: got = f.read().decode()
    except OSError as e:
        got = "refused " + os.strerror(e.errno or 0)
    lines.append(spec + "\t" + got.replace("\n", " ").replace("\t", " "))
open(ready + ".report", "w").write("\n".join(lines) + "\n")
"#;

/// The cases, with the secret's label (see [`AGENTWORKS`]) and what the chat tries.
const CASES: [(&str, &str); 9] = [
    ("save", "read:workflow.sqlite"),
    ("swap", "read:planning/plan.json"),
    ("late", "read:late.db"),
    ("made", "read:made.db"),
    ("held", "read:held.db-wal"),
    ("late2", "read:late2.db-wal"),
    ("sidecar", "read:late.db-wal"),
    ("live", "read:doc.md"),
    // The refused folder as it was before the chat, renamed away by AgentWorks's swap: its
    // secret is written by the test into planning/plan.json before the chat starts.
    ("old", "read:planning.old/plan.json"),
];

/// Writes the chat tries in a read-write grant into refused entries, read back from the disk.
const WRITES: [&str; 3] = ["workflow.sqlite", "held.db-wal", "late.db"];

/// What one run saw: each case's secret found in the chat's report or not, each write found on
/// the disk or not, and whether the chat made and read back a new file at the grant's top.
struct Seen {
    read: Vec<(&'static str, bool)>,
    wrote: Vec<(&'static str, bool)>,
    created: bool,
    /// Whether the chat made and read back `mine.db`, a name a pattern refuses.
    made_refused: bool,
    report: String,
}

fn one_run(lab: &Lab, plan: Option<Plan>, access: &str) -> Seen {
    let top = lab.demo.granted.clone();
    // A fresh grant for each run: the demo's files back as they were.
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(top.join("planning")).unwrap();
    std::fs::write(top.join("workflow.sqlite"), "database").unwrap();
    std::fs::write(top.join("doc.md"), "doc").unwrap();
    let secrets: Vec<String> = CASES.iter().map(|(label, _)| secret(label)).collect();
    let old = CASES.iter().position(|(label, _)| *label == "old").unwrap();
    std::fs::write(
        top.join("planning/plan.json"),
        format!("plan {}", secrets[old]),
    )
    .unwrap();
    if let Some(user) = &lab.user {
        user.own(&top);
    }
    let ready = lab.outside("ready");
    let go = lab.outside("go");
    let done = lab.outside("done");
    let outside_ready = PathBuf::from(format!("{}.outside-ready", done.display()));
    let top_text = top.display().to_string();
    let mut args: Vec<String> = vec![
        "-c".into(),
        AGENTWORKS.into(),
        top_text.clone(),
        ready.display().to_string(),
        go.display().to_string(),
        done.display().to_string(),
    ];
    args.extend(secrets.iter().cloned());
    let mut agentworks = command_as(lab.user.as_ref(), PYTHON);
    agentworks.args(&args).stdin(Stdio::null());
    let agentworks = Killed(agentworks.spawn().expect("start AgentWorks"));
    assert!(
        wait_for(&outside_ready, Duration::from_secs(20)),
        "AgentWorks did not start"
    );

    let mut argv: Vec<String> = vec![
        PYTHON.into(),
        "-c".into(),
        CHAT.into(),
        ready.display().to_string(),
        go.display().to_string(),
        top_text,
    ];
    argv.extend(CASES.iter().map(|(_, spec)| (*spec).to_owned()));
    // The second and third ways to the replaced database: any descriptor of the grant held by a
    // process in sight (the guard's daemon holds one of the real folder), a symlink.
    argv.push("procfd:workflow.sqlite".into());
    let rw = access == "rw";
    if rw {
        argv.extend(WRITES.iter().map(|name| format!("write:{name}")));
        argv.push("create:new-by-chat.txt".into());
        // A refused name the chat makes itself (the guard refuses it at CREATE).
        argv.push("create:mine.db".into());
        argv.push("symlink:relative=workflow.sqlite".into());
        argv.push(format!(
            "symlink:absolute={}",
            top.join("workflow.sqlite").display()
        ));
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let grant = format!("{}:{access}", top.display());
    let out = lab
        .chat(plan, &grant, &argv)
        .output()
        .expect("run the chat");
    std::fs::write(&done, "done").unwrap();
    drop(agentworks);
    let report_path = PathBuf::from(format!("{}.report", ready.display()));
    let report = std::fs::read_to_string(&report_path).unwrap_or_default();
    assert!(
        !report.is_empty(),
        "{} {}: the chat wrote no report\n{}",
        plan.map_or("unconfined", Plan::name),
        lab.who(),
        text(&out)
    );
    let read = CASES
        .iter()
        .zip(&secrets)
        .map(|((label, _), secret)| (*label, report.contains(secret.as_str())))
        .collect();
    let wrote = if rw {
        WRITES
            .iter()
            .map(|name| {
                let bytes = std::fs::read(top.join(name)).unwrap_or_default();
                let found = bytes.windows(10).any(|w| w == b"chat-wrote");
                (*name, found)
            })
            .collect()
    } else {
        Vec::new()
    };
    let created =
        std::fs::read_to_string(top.join("new-by-chat.txt")).is_ok_and(|t| t == "chat-made");
    let made_refused = report
        .lines()
        .any(|l| l.starts_with("create:mine.db\t") && l.ends_with("chat-made"));
    Seen {
        read,
        wrote,
        created,
        made_refused,
        report,
    }
}

/// Every case, for `plan`, each user and both grant modes, against its unconfined control:
/// refused entries must stay refused; in the namespace plan the chat must also still see the
/// live `doc.md` and make new files at a read-write grant's top.
fn entries_hold(test: &str, plan: Plan) {
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for access in ["rw", "ro"] {
            let lab = Lab::new(user.as_ref(), "");
            let control = one_run(&lab, None, access);
            for (label, got) in &control.read {
                assert!(
                    got,
                    "control {} {access}: {label} was not read\n{}",
                    lab.who(),
                    control.report
                );
            }
            for (name, got) in &control.wrote {
                assert!(
                    got,
                    "control {} {access}: {name} was not written",
                    lab.who()
                );
            }
            assert_eq!(control.created, access == "rw", "control {}", lab.who());
            assert_eq!(
                control.made_refused,
                access == "rw",
                "control {}",
                lab.who()
            );

            let seen = one_run(&lab, Some(plan), access);
            let case = format!("{} {} {access}", plan.name(), lab.who());
            for (label, got) in &seen.read {
                let allowed = *label == "live";
                if *got != allowed {
                    failures.push(if allowed {
                        format!("{case}: the chat did not see doc.md saved by rename outside")
                    } else {
                        format!(
                            "{case}: the chat read `{label}`, which the outside made or replaced"
                        )
                    });
                }
            }
            for (name, got) in &seen.wrote {
                if *got {
                    failures.push(format!("{case}: the chat wrote into {name}"));
                }
            }
            if seen.made_refused {
                failures.push(format!("{case}: the chat made mine.db and read it back"));
            }
            if access == "rw" && !seen.created {
                failures.push(format!(
                    "{case}: the chat could not make a new file at its grant's top"
                ));
            }
            if !failures.is_empty() {
                say(&format!("\n{case}: the chat's report:\n{}", seen.report));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{test}: {} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The namespace plan's guard (a FUSE file system over each grant, `guard.rs`): every refused
/// entry holds whatever AgentWorks does outside, in both grant modes, and the chat still sees
/// `doc.md` saved by rename outside and makes new files at a read-write grant's top.
#[test]
fn refused_entries_hold_whatever_agentworks_does_outside_in_the_namespace_plan() {
    let test = "refused_entries_hold_whatever_agentworks_does_outside_in_the_namespace_plan";
    if !confinement_available(test) {
        return;
    }
    if !cli_sandbox_tests::fuse_for_every_user() {
        skip(
            test,
            "/dev/fuse cannot be opened here (mode 0600?): the namespace plan has no guard, and says so",
            REQUIRE_LANDLOCK,
        );
        return;
    }
    entries_hold(test, Plan::Namespaces);
}

#[test]
#[ignore = "FINDING: the fallback holds every refused entry, but an allowed file saved by rename outside is closed to the chat and nothing new can be made at a grant's top (its stated cost)"]
fn refused_entries_hold_whatever_agentworks_does_outside_without_namespaces() {
    entries_hold(
        "refused_entries_hold_whatever_agentworks_does_outside_without_namespaces",
        Plan::Fallback,
    );
}

/// [`entries_hold`]'s refusals alone, in the fallback: every refused entry holds there, whatever
/// AgentWorks does to it, in both grant modes.
#[test]
fn without_namespaces_no_refused_entry_is_read_or_written_whatever_agentworks_does_outside() {
    let test =
        "without_namespaces_no_refused_entry_is_read_or_written_whatever_agentworks_does_outside";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for access in ["rw", "ro"] {
            let lab = Lab::new(user.as_ref(), "");
            let control = one_run(&lab, None, access);
            assert!(
                control.read.iter().all(|(_, got)| *got)
                    && control.wrote.iter().all(|(_, got)| *got),
                "control {} {access}:\n{}",
                lab.who(),
                control.report
            );
            let seen = one_run(&lab, Some(Plan::Fallback), access);
            let case = format!("{} {} {access}", Plan::Fallback.name(), lab.who());
            if seen.made_refused {
                failures.push(format!("{case}: the chat made mine.db and read it back"));
            }
            for (label, got) in &seen.read {
                if *got && *label != "live" {
                    failures.push(format!("{case}: the chat read `{label}`"));
                }
            }
            for (name, got) in &seen.wrote {
                if *got {
                    failures.push(format!("{case}: the chat wrote into {name}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{test}: {} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// A package manager outside, a blocked program inside.

/// A program that leaves `ran` in the file named by its first argument.
fn program(marker: &str) -> String {
    format!("#!/bin/sh\n# {marker}\nprintf ran > \"$1\"\n")
}

/// The chat: says it is ready (`argv[1]`), waits for the package manager (`argv[2]`), then runs
/// each program of `argv[3:]` with a marker file beside the ready file as its argument.
const RUN_PROGRAMS: &str = r#"
import os, subprocess, sys, time
ready, go = sys.argv[1:3]
open(ready, "w").write("ready")
deadline = time.time() + 60
while not os.path.exists(go) and time.time() < deadline: time.sleep(0.02)
for i, program in enumerate(sys.argv[3:]):
    try: subprocess.run([program, ready + ".ran-" + str(i)], timeout=20)
    except OSError as e: print(program, e)
"#;

#[test]
fn a_blocked_program_upgraded_or_installed_by_a_package_manager_during_the_chat_does_not_run() {
    let test =
        "a_blocked_program_upgraded_or_installed_by_a_package_manager_during_the_chat_does_not_run";
    if !confinement_available(test)
        || !root_or_skip(
            test,
            "to keep blocked programs in a system folder, outside the home and the temporary folders, as a package manager does",
        )
    {
        return;
    }
    // A system folder of programs, as /usr/bin is (root's, outside the home and /tmp).
    let bin = PathBuf::from(format!(
        "/opt/cli-sandbox-entries-hold-{}/bin",
        std::process::id()
    ));
    std::fs::create_dir_all(&bin).unwrap();
    let _cleanup = Cleanup(bin.parent().unwrap().to_owned());
    for dir in [bin.parent().unwrap(), &bin] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let upgraded = bin.join("opener");
    let installed = bin.join("launcher");
    let config = format!(
        "blocked_programs = [{:?}, {:?}, ",
        upgraded.display().to_string(),
        installed.display().to_string()
    );
    let install = |path: &Path, marker: &str| {
        // The package manager's way: a new file beside it, renamed over the name.
        let tmp = path.with_extension("dpkg-new");
        std::fs::write(&tmp, program(marker)).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    };
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in [None, Some(Plan::Namespaces), Some(Plan::Fallback)] {
            let _ = std::fs::remove_file(&installed);
            install(&upgraded, "old");
            // The demo's configuration blocks its stand-in: these join its list.
            let lab = Lab::new(user.as_ref(), "");
            let before = std::fs::read_to_string(&lab.demo.config).unwrap();
            let after = before.replacen("blocked_programs = [", &config, 1);
            assert_ne!(
                before, after,
                "the demo's configuration has no blocked programs"
            );
            std::fs::write(&lab.demo.config, &after).unwrap();
            let ready = lab.outside("ready");
            let go = lab.outside("go");
            let argv = [
                PYTHON,
                "-c",
                RUN_PROGRAMS,
                &ready.display().to_string(),
                &go.display().to_string(),
                &upgraded.display().to_string(),
                &installed.display().to_string(),
            ]
            .map(str::to_owned);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let grant = format!("{}:rw", lab.demo.granted.display());
            let chat = Killed(
                lab.chat(plan, &grant, &argv)
                    .spawn()
                    .expect("start the chat"),
            );
            assert!(
                wait_for(&ready, Duration::from_secs(20)),
                "the chat did not start"
            );
            install(&upgraded, "new");
            install(&installed, "new");
            std::fs::write(&go, "go").unwrap();
            let mut chat = chat;
            let start = Instant::now();
            while chat.0.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            let ran: Vec<bool> = (0..2)
                .map(|i| PathBuf::from(format!("{}.ran-{i}", ready.display())).exists())
                .collect();
            let case = format!("{} {}", plan.map_or("unconfined", Plan::name), lab.who());
            match plan {
                None => assert_eq!(ran, [true, true], "control {case}"),
                Some(_) => {
                    if ran[0] {
                        failures.push(format!("{case}: the upgraded blocked program ran"));
                    }
                    if ran[1] {
                        failures.push(format!(
                            "{case}: the blocked program installed during the chat ran"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{test}: {} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Removes a folder the test made outside its temporary folder.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
