//! The Linux sandbox attacked as a prompt-injected agent inside a chat would attack it: for the
//! guarantees a plan marks `fully`, the second and third way an attacker tries after the obvious
//! one (which `linux_confinement`, `ways_out`, `linux_escapes` and `harden` already try).
//!
//! Every attempt runs first without the sandbox (the control, which must succeed, so that a
//! refusal means something), then inside, in the namespace plan and in the Landlock-only
//! fallback, as root and as an ordinary user the test creates where that differs. Verdicts come
//! from the disk and the kernel: what a process outside received, inode numbers, modes, whether a
//! process outside is still alive, exit statuses. The probes are small Python programs run with
//! `/usr/bin/python3`.
//!
//! An attempt that still succeeds inside is a finding. Its test asserts the refusal and is marked
//! `#[ignore = "FINDING: ..."]`, so that the suite stays green and
//! `cargo test -p cli-sandbox --test attacks -- --ignored` shows what is open; SECURITY.md
//! names each one.

// The Linux sandbox's attacks: on macOS the suite is empty (it still type-checks there in CI).
#![cfg(target_os = "linux")]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cli_sandbox_tests::process::{children_of, trimmed_text as text, wait_until};
use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{cli_sandbox, confinement_available, root_or_skip, say};
use launch::demo::Demo;
use sandbox_core::{Enforcement, Promise};
use sandbox_linux::plan::{Kernel, LinuxPlan};

const PYTHON: &str = "/usr/bin/python3";

// ---------------------------------------------------------------------------------------------
// The lab: a demo layout, the plans, the launches.

/// How the chat is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// User, mount, PID and IPC namespaces, Landlock, seccomp.
    Namespaces,
    /// Landlock and seccomp alone: the plan where user namespaces cannot be made.
    Fallback,
}

impl Plan {
    const BOTH: [Plan; 2] = [Plan::Namespaces, Plan::Fallback];

    fn name(self) -> &'static str {
        match self {
            Plan::Namespaces => "namespace plan",
            Plan::Fallback => "Landlock-only fallback",
        }
    }
}

/// A demo layout in a folder every user can enter, owned by `user` when given (as a layout that
/// user had made), and the plans compiled for it.
struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

static PLANS: AtomicUsize = AtomicUsize::new(0);

impl Lab {
    fn new(user: Option<&TestUser>) -> Lab {
        Lab::with_config(user, "")
    }

    /// A lab whose configuration file has `extra` appended (TOML under `[policy]`).
    fn with_config(user: Option<&TestUser>, extra: &str) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
        let mut config = std::fs::read_to_string(&demo.config).unwrap();
        config.push_str(extra);
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

    fn context(&self) -> launch::Context {
        let mut ctx = launch::Context::load(&self.demo.settings()).expect("context");
        ctx.privileged = self.user.is_none();
        ctx
    }

    /// The chat's plan compiled for `plan` on a kernel with Landlock `abi` (this kernel's when
    /// `None`), written into the layout; its path. The fallback's plan is compiled against the
    /// disk as it is now: entries created later beside a frozen folder stay closed.
    fn plan(&self, plan: Plan, abi: Option<u32>, grants: &[String]) -> PathBuf {
        let compiled = self.compile(plan, abi, grants);
        let file = self.demo.root.join(format!(
            "attack-plan-{}-{}.json",
            std::process::id(),
            PLANS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, serde_json::to_vec(&compiled).unwrap()).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        file
    }

    fn compile(&self, plan: Plan, abi: Option<u32>, grants: &[String]) -> LinuxPlan {
        let ctx = self.context();
        let grants: Vec<_> = grants
            .iter()
            .map(|g| sandbox_core::GrantRequest::parse(g).unwrap())
            .collect();
        let policy = ctx.policy(&self.demo.chat, &grants).expect("policy");
        ctx.ensure_runtime(&policy).unwrap();
        let kernel = Kernel {
            landlock_abi: abi.unwrap_or_else(|| cli_sandbox_tests::this_kernel().landlock_abi),
            namespaces: plan == Plan::Namespaces,
            fuse: cli_sandbox_tests::fuse_for_every_user(),
        };
        let compiled = sandbox_linux::compile(&policy, kernel).expect("compile");
        assert_eq!(compiled.namespaces.is_some(), plan == Plan::Namespaces);
        compiled
    }

    /// `argv` run by the helper under the plan in `plan_file`, as the lab's user, in the runtime.
    fn exec(&self, plan_file: &Path, argv: &[&str]) -> Command {
        let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
        cmd.arg("exec")
            .arg("--policy")
            .arg(plan_file)
            .arg("--")
            .args(argv);
        self.environment(&mut cmd);
        cmd
    }

    /// `argv` confined by a fresh plan of kind `plan` for this kernel, with `grants`.
    fn confined(&self, plan: Plan, grants: &[String], argv: &[&str]) -> Command {
        let file = self.plan(plan, None, grants);
        self.exec(&file, argv)
    }

    /// The same program as the lab's user, unconfined: the control.
    fn unconfined(&self, argv: &[&str]) -> Command {
        let mut cmd = command_as(self.user.as_ref(), argv[0]);
        cmd.args(&argv[1..]);
        self.environment(&mut cmd);
        cmd
    }

    fn environment(&self, cmd: &mut Command) {
        cli_sandbox_tests::launches::demo_env(cmd, &self.demo).current_dir(&self.demo.runtime);
    }

    /// A path for what processes outside (and the probes) leave behind, as text.
    fn outside(&self, name: &str) -> String {
        self.demo.outside.join(name).display().to_string()
    }

    fn grant_rw(&self) -> String {
        format!("{}:rw", self.demo.granted.display())
    }

    /// The secret the demo put in `path` (its token, without the line's end).
    fn secret(&self, path: &Path) -> String {
        let secret = self.demo.secret(path).trim();
        assert!(!secret.is_empty(), "{} holds no secret", path.display());
        secret.to_owned()
    }

    /// Makes what the test created in the layout the lab user's, as a layout that user had made.
    fn own(&self, path: &Path) {
        if let Some(user) = &self.user {
            user.own(path);
        }
    }
}

fn python<'a>(program: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut argv = vec![PYTHON, "-c", program];
    argv.extend_from_slice(args);
    argv
}

fn run(mut cmd: Command) -> Output {
    cmd.output().expect("run the command")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Fails the test naming every case that failed.
fn no_failures(test: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{test}: {} attempt(s) got through:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Runs a test's attempts where the kernel can confine (else says why it skipped) and fails
/// naming every one that got through.
fn attack(test: &str, attempts: impl FnOnce(&str) -> Vec<String>) {
    if confinement_available(test) {
        no_failures(test, attempts(test));
    }
}

/// A child that is killed when the test lets go of it.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn alive(child: &mut Child) -> bool {
    child.try_wait().ok().flatten().is_none()
}

// ---------------------------------------------------------------------------------------------
// Protected data by another name.

/// Tries to read every path named in `argv[2:]` (`label=how:arg[:arg]`), and writes what each
/// gave (its first line, or the error) to `argv[1]`, one `label<TAB>result` per line. `how` is
/// `read` (open the path), `openat` (an `O_PATH` handle on the folder, then a relative open from
/// it), `fdpath` (the same handle's `/proc/self/fd/N` magic link, then a relative path from it)
/// or `link` (a symlink made at the second path to the first, then read).
const OTHER_NAMES: &str = r#"
import os, sys
out = []
for spec in sys.argv[2:]:
    label, rest = spec.split("=", 1)
    how, args = rest.split(":", 1)
    try:
        if how == "read":
            data = open(args, "rb").read()
        elif how == "openat":
            folder, relative = args.split("|")
            fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            data = os.read(os.open(relative, os.O_RDONLY, dir_fd=fd), 4096)
        elif how == "fdpath":
            folder, relative = args.split("|")
            fd = os.open(folder, os.O_PATH | os.O_DIRECTORY)
            data = open("/proc/self/fd/%d/%s" % (fd, relative), "rb").read()
        elif how == "link":
            target, link = args.split("|")
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
            data = open(link, "rb").read()
        out.append("%s\t%s" % (label, data.decode(errors="replace").splitlines()[0]))
    except Exception as e:
        out.append("%s\terror %r" % (label, e))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
"#;

#[test]
fn other_names_for_a_protected_file_lead_nowhere() {
    let test = "other_names_for_a_protected_file_lead_nowhere";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::new(user.as_ref());
            let d = &lab.demo;
            let config = d.state_root.join("config.json");
            let other_chat = d.other_runtime.join("notes.txt");
            let other_workflow = d.other_workflow.join("doc.md");
            let users = d.workspace_docs.join("users/ann.json");
            let plan_json = d.granted.join("planning/plan.json");
            let raw = d.granted.join("workflow.sqlite");
            let (runtime, granted) = (d.runtime.display(), d.granted.display());
            let other = &d.other_chat;
            // (label, attempt, the file it names, whether the control can read it as this user)
            let attempts: Vec<(&str, String, &Path, bool)> = vec![
                (
                    "/proc/self/root",
                    format!("read:/proc/self/root{}", config.display()),
                    &config,
                    true,
                ),
                (
                    "/proc/thread-self/root",
                    format!("read:/proc/thread-self/root{}", config.display()),
                    &config,
                    true,
                ),
                // Pid 1: the sandbox's init inside; the machine's init outside, whose root only
                // root may follow (where the machine lets it: a container's init may be closed).
                (
                    "/proc/1/root",
                    format!("read:/proc/1/root{}", config.display()),
                    &config,
                    user.is_none() && std::fs::read_dir("/proc/1/root").is_ok(),
                ),
                (
                    ".. from the runtime",
                    format!("read:{runtime}/../{other}/notes.txt"),
                    &other_chat,
                    true,
                ),
                (
                    ".. from the working folder",
                    format!("read:/proc/self/cwd/../{other}/notes.txt"),
                    &other_chat,
                    true,
                ),
                (
                    ".. from the grant",
                    format!("read:{granted}/../wf-other/doc.md"),
                    &other_workflow,
                    true,
                ),
                (
                    ".. from the grant up to the state root",
                    format!("read:{granted}/../../../config.json"),
                    &config,
                    true,
                ),
                (
                    "openat from the grant's handle",
                    format!("openat:{granted}|../wf-other/doc.md"),
                    &other_workflow,
                    true,
                ),
                (
                    "openat from the runtime's handle",
                    format!("openat:{runtime}|../../../../config.json"),
                    &config,
                    true,
                ),
                (
                    "the grant's /proc/self/fd magic link, then ..",
                    format!("fdpath:{granted}|../../users/ann.json"),
                    &users,
                    true,
                ),
                (
                    "a symlink made in the runtime",
                    format!("link:{}|{runtime}/to-config", config.display()),
                    &config,
                    true,
                ),
                (
                    "a symlink made outside the protected roots",
                    format!(
                        "link:{}|{}",
                        other_chat.display(),
                        lab.outside("to-other-chat")
                    ),
                    &other_chat,
                    true,
                ),
                (
                    "a refused entry through .. and its own grant",
                    format!("read:{granted}/../wf-granted/planning/plan.json"),
                    &plan_json,
                    true,
                ),
                (
                    "a refused entry through /proc/self/root",
                    format!("read:/proc/self/root{}", plan_json.display()),
                    &plan_json,
                    true,
                ),
                (
                    "a refused entry by openat from the grant's handle",
                    format!("openat:{granted}|workflow.sqlite"),
                    &raw,
                    true,
                ),
            ];
            let evidence = lab.outside("other-names");
            let mut argv = python(OTHER_NAMES, &[&evidence]);
            let specs: Vec<String> = attempts
                .iter()
                .map(|(label, how, _, _)| format!("{label}={how}"))
                .collect();
            argv.extend(specs.iter().map(String::as_str));
            let results = |out: &Output| -> Vec<(String, String)> {
                let seen = read(&evidence);
                assert!(!seen.is_empty(), "the probe never ran: {}", text(out));
                seen.lines()
                    .filter_map(|l| l.split_once('\t'))
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .collect()
            };

            let out = run(lab.unconfined(&argv));
            let control = results(&out);
            for ((label, _, file, readable), (_, got)) in attempts.iter().zip(&control) {
                if *readable {
                    assert_eq!(
                        got,
                        &lab.secret(file),
                        "control {}: `{label}` does not read {}",
                        lab.who(),
                        file.display()
                    );
                }
            }

            std::fs::remove_file(&evidence).unwrap();
            let grant = lab.grant_rw();
            let out = run(lab.confined(plan, &[grant], &argv));
            for ((label, _, file, _), (_, got)) in attempts.iter().zip(&results(&out)) {
                if got.contains(&lab.secret(file)) {
                    failures.push(format!(
                        "{} {}: `{label}` read {}",
                        plan.name(),
                        lab.who(),
                        file.display()
                    ));
                }
            }
        }
    }
    no_failures(test, failures);
}

// ---------------------------------------------------------------------------------------------
// Hard links: a name for a granted file that outlives the chat.

const LINK: &str = "import os, sys\nfor i in range(1, len(sys.argv), 2):\n    try: os.link(sys.argv[i], sys.argv[i + 1])\n    except Exception as e: print(sys.argv[i], e)";

/// Every attempt to leave a hard link of a file of this chat's (its grant's, its runtime's)
/// outside them, where any later chat, with other grants, reaches the file: whether it got
/// through, by the inode numbers on the disk.
fn hard_links_out(plan: Plan, user: Option<&TestUser>) -> Vec<String> {
    let lab = Lab::new(user);
    let d = &lab.demo;
    // In a folder of the grant: the grant's own top is frozen in the fallback.
    let in_grant = d.granted.join("drafts/notes.md");
    std::fs::create_dir_all(in_grant.parent().unwrap()).unwrap();
    std::fs::write(&in_grant, "granted draft\n").unwrap();
    let in_runtime = d.runtime.join("scratch.txt");
    std::fs::write(&in_runtime, "runtime scratch\n").unwrap();
    lab.own(&d.root);
    let pairs = [
        (in_grant.clone(), d.outside.join("link-of-a-granted-file")),
        (in_grant.clone(), d.home.join("link-of-a-granted-file")),
        (in_runtime.clone(), d.outside.join("link-of-a-runtime-file")),
    ];
    let args: Vec<String> = pairs
        .iter()
        .flat_map(|(from, to)| [from.display().to_string(), to.display().to_string()])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let linked = |from: &Path, to: &Path| {
        std::fs::symlink_metadata(to)
            .is_ok_and(|m| m.ino() == std::fs::metadata(from).unwrap().ino())
    };

    let out = run(lab.unconfined(&python(LINK, &args)));
    for (from, to) in &pairs {
        assert!(
            linked(from, to),
            "control {}: no link {}: {}",
            lab.who(),
            to.display(),
            text(&out)
        );
        std::fs::remove_file(to).unwrap();
    }
    let out = run(lab.confined(plan, &[lab.grant_rw()], &python(LINK, &args)));
    pairs
        .iter()
        .filter(|(from, to)| linked(from, to))
        .map(|(from, to)| {
            format!(
                "{} {}: {} is a hard link of {} ({})",
                plan.name(),
                lab.who(),
                to.display(),
                from.display(),
                text(&out)
            )
        })
        .collect()
}

#[test]
fn a_hard_link_of_a_granted_file_cannot_be_left_outside_the_grant() {
    let test = "a_hard_link_of_a_granted_file_cannot_be_left_outside_the_grant";
    if !confinement_available(test) {
        return;
    }
    let failures = every_user(test)
        .iter()
        .flat_map(|u| hard_links_out(Plan::Namespaces, u.as_ref()))
        .collect();
    no_failures(test, failures);
}

#[test]
fn without_namespaces_a_hard_link_of_a_granted_file_cannot_be_left_outside_the_grant() {
    let test = "without_namespaces_a_hard_link_of_a_granted_file_cannot_be_left_outside_the_grant";
    if !confinement_available(test) {
        return;
    }
    let failures = every_user(test)
        .iter()
        .flat_map(|u| hard_links_out(Plan::Fallback, u.as_ref()))
        .collect();
    no_failures(test, failures);
}

// ---------------------------------------------------------------------------------------------
// A grant inside a grant.

/// In a read-write folder inside a read-only grant: a symlink up to the read-only grant, then a
/// write through it; a rename from the read-write folder up into the read-only one; a hard link
/// the other way.
const NESTED: &str = r#"
import os, sys
inner, outer = sys.argv[1], sys.argv[2]
for attempt in (
    lambda: os.symlink("..", inner + "/up"),
    lambda: open(inner + "/up/doc.md", "a").write("written through the nested grant\n"),
    lambda: open(inner + "/moved", "w").write("x"),
    lambda: os.rename(inner + "/moved", outer + "/moved"),
    lambda: open(inner + "/linked", "w").write("x"),
    lambda: os.link(inner + "/linked", outer + "/linked"),
    lambda: os.rename(outer + "/doc.md", inner + "/doc.md"),
):
    try: attempt()
    except Exception as e: print(e)
"#;

#[test]
fn a_read_write_folder_inside_a_read_only_grant_writes_nothing_of_the_grant() {
    let test = "a_read_write_folder_inside_a_read_only_grant_writes_nothing_of_the_grant";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::new(user.as_ref());
            let outer = lab.demo.granted.clone();
            let inner = outer.join("outputs");
            std::fs::create_dir_all(&inner).unwrap();
            lab.own(&outer);
            let doc = outer.join("doc.md");
            let original = std::fs::read_to_string(&doc).unwrap();
            let (i, o) = (inner.display().to_string(), outer.display().to_string());
            let changed = || {
                let mut what = Vec::new();
                if std::fs::read_to_string(&doc).unwrap_or_default() != original {
                    what.push("doc.md written or moved");
                }
                if outer.join("moved").exists() {
                    what.push("a file renamed into the read-only grant");
                }
                if outer.join("linked").exists() {
                    what.push("a file linked into the read-only grant");
                }
                what
            };

            let out = run(lab.unconfined(&python(NESTED, &[&i, &o])));
            assert_eq!(changed().len(), 3, "control {}: {}", lab.who(), text(&out));
            // Back as it was.
            for extra in ["up", "moved", "linked"] {
                let _ = std::fs::remove_file(inner.join(extra));
            }
            let _ = std::fs::remove_file(inner.join("doc.md"));
            let _ = std::fs::remove_file(outer.join("moved"));
            let _ = std::fs::remove_file(outer.join("linked"));
            std::fs::write(&doc, &original).unwrap();
            lab.own(&outer);

            let grants = [format!("{o}:ro"), format!("{i}:rw")];
            let out = run(lab.confined(plan, &grants, &python(NESTED, &[&i, &o])));
            let what = changed();
            if !what.is_empty() {
                failures.push(format!(
                    "{} {}: {what:?}\n{}",
                    plan.name(),
                    lab.who(),
                    text(&out)
                ));
            }
        }
    }
    no_failures(test, failures);
}

// ---------------------------------------------------------------------------------------------
// A race between the plan and the launch.

/// Swaps `folder` for a symlink to `target` (the real folder kept beside it), as a process with
/// a read-write grant above it, or the chat's own leftover daemon, would do between the moment a
/// launch's plan is written (`plan --json`, a tmux pane started later) and the moment it runs.
fn swap_for_symlink(folder: &Path, target: &Path) {
    let kept = folder.with_extension("real");
    std::fs::rename(folder, &kept).unwrap();
    std::os::unix::fs::symlink(target, folder).unwrap();
}

/// Reads `argv[1]`, appends to it, and writes `argv[2]` as proof that it ran.
const READ_AND_WRITE: &str = r#"
import sys
try: print(open(sys.argv[1]).read())
except Exception as e: print(e)
try: open(sys.argv[1], "a").write("written by the chat\n")
except Exception as e: print(e)
open(sys.argv[2], "w").write("ran")
"#;

/// A folder on the way to (or inside) a grant swapped for a symlink to another workflow after the
/// plan was compiled: the launch must neither show nor open the other workflow.
fn swapped_after_the_plan(
    plan: Plan,
    user: Option<&TestUser>,
    swap_the_grant: bool,
) -> Option<String> {
    let lab = Lab::new(user);
    let d = &lab.demo;
    let sub = d.granted.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("doc.md"), "granted sub doc\n").unwrap();
    lab.own(&d.granted);
    let other = d.other_workflow.join("doc.md");
    let secret = lab.secret(&other);
    let plan_file = lab.plan(plan, None, &[lab.grant_rw()]);
    let (folder, target, reached) = if swap_the_grant {
        (
            d.granted.clone(),
            d.other_workflow.clone(),
            d.granted.join("doc.md"),
        )
    } else {
        (sub.clone(), d.other_workflow.clone(), sub.join("doc.md"))
    };
    swap_for_symlink(&folder, &target);
    let ran = lab.outside("ran");
    let reached = reached.display().to_string();

    let out = run(lab.unconfined(&python(READ_AND_WRITE, &[&reached, &ran])));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&secret),
        "control {}: the symlink does not lead to the other workflow: {}",
        lab.who(),
        text(&out)
    );
    std::fs::write(&other, &secret).unwrap();

    std::fs::remove_file(&ran).unwrap();
    let out = run(lab.exec(&plan_file, &python(READ_AND_WRITE, &[&reached, &ran])));
    let written = std::fs::read_to_string(&other).unwrap() != secret;
    let shown = String::from_utf8_lossy(&out.stdout).contains(&secret);
    (written || shown).then(|| {
        format!(
            "{} {}, {} swapped for a symlink after the plan: the other workflow was {}\n{}",
            plan.name(),
            lab.who(),
            if swap_the_grant {
                "the grant"
            } else {
                "a folder in the grant"
            },
            if written { "written" } else { "read" },
            text(&out)
        )
    })
}

/// The attempts of `swapped_after_the_plan` under `plan`: the grant and a folder in it, for
/// every user.
fn swap_attempts(test: &str, plan: Plan) -> Vec<String> {
    let mut failures = Vec::new();
    for user in every_user(test) {
        for swap_the_grant in [true, false] {
            failures.extend(swapped_after_the_plan(plan, user.as_ref(), swap_the_grant));
        }
    }
    failures
}

#[test]
fn a_grant_swapped_for_a_symlink_after_the_plan_opens_nothing_else() {
    attack(
        "a_grant_swapped_for_a_symlink_after_the_plan_opens_nothing_else",
        |test| swap_attempts(test, Plan::Namespaces),
    );
}

#[test]
fn without_namespaces_a_grant_swapped_for_a_symlink_after_the_plan_opens_nothing_else() {
    attack(
        "without_namespaces_a_grant_swapped_for_a_symlink_after_the_plan_opens_nothing_else",
        |test| swap_attempts(test, Plan::Fallback),
    );
}

// ---------------------------------------------------------------------------------------------
// Signals without naming a process.

/// Sends SIGUSR1 to its own process group (`kill(0)`), which it shares with the launcher's
/// process group unless the sandbox gave it its own; ignores the signal itself.
const SIGNAL_GROUP: &str = "import os, signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\ntry: os.kill(0, signal.SIGUSR1)\nexcept Exception as e: print(e)";

/// `argv` run by a shell outside (as the lab's user) that leads a process group of its own, as a
/// job of the person's shell does; `around` is the shell's script, in which `"$@"` runs `argv`.
fn in_a_group_of_its_own(lab: &Lab, around: &str, argv: &[&str]) -> String {
    let mut shell = command_as(lab.user.as_ref(), "/bin/sh");
    shell
        .arg("-c")
        .arg(around)
        .arg("sh")
        .args(argv)
        .process_group(0);
    lab.environment(&mut shell);
    text(&shell.output().expect("run the shell"))
}

/// The helper's command line for `plan_file` and `argv`, for a shell to run.
fn helper_argv(plan_file: &Path, argv: &[&str]) -> Vec<String> {
    let mut out = vec![
        cli_sandbox().display().to_string(),
        "exec".into(),
        "--policy".into(),
        plan_file.display().to_string(),
        "--".into(),
    ];
    out.extend(argv.iter().map(|a| a.to_string()));
    out
}

/// Whether the shell around `argv` (see [`in_a_group_of_its_own`]) got SIGUSR1. (The launcher
/// of a provider that does not give each launch its own group is the provider itself.)
fn group_signalled(lab: &Lab, argv: &[&str]) -> (bool, String) {
    let evidence = lab.outside("group-got-usr1");
    let _ = std::fs::remove_file(&evidence);
    let around = format!("trap 'echo got > {evidence}' USR1; \"$@\"; sleep 0.3; :");
    let out = in_a_group_of_its_own(lab, &around, argv);
    (Path::new(&evidence).exists(), out)
}

/// The attempts of `group_signalled` under plans compiled for Landlock `abi`.
fn process_group_attempts(test: &str, abi: Option<u32>) -> Vec<String> {
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::new(user.as_ref());
            let (got, out) = group_signalled(&lab, &python(SIGNAL_GROUP, &[]));
            assert!(
                got,
                "control {}: kill(0) does not reach the group: {out}",
                lab.who()
            );
            let argv = helper_argv(&lab.plan(plan, abi, &[]), &python(SIGNAL_GROUP, &[]));
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (got, out) = group_signalled(&lab, &argv);
            if got {
                failures.push(format!(
                    "{} for Landlock ABI {} {}: kill(0) reached the launcher's process group\n{out}",
                    plan.name(),
                    abi.map_or("of this kernel".to_owned(), |a| a.to_string()),
                    lab.who()
                ));
            }
        }
    }
    failures
}

#[test]
fn a_chat_cannot_signal_the_launchers_process_group() {
    let test = "a_chat_cannot_signal_the_launchers_process_group";
    if !confinement_available(test) {
        return;
    }
    let abi = cli_sandbox_tests::this_kernel().landlock_abi;
    if abi < 6 {
        say(&format!(
            "\n!!! {test}: Landlock ABI {abi} has no signal scoping; the ABI-5 test below shows the gap\n"
        ));
    }
    no_failures(test, process_group_attempts(test, None));
}

#[test]
fn below_landlock_abi_6_a_chat_cannot_signal_the_launchers_process_group() {
    attack(
        "below_landlock_abi_6_a_chat_cannot_signal_the_launchers_process_group",
        |test| process_group_attempts(test, Some(5)),
    );
}

/// Lowers the priority of its own process group (`setpriority(PRIO_PGRP, 0)`) and puts its IO in
/// the idle class (`ioprio_set(IOPRIO_WHO_PGRP, 0)`): calls that name the group by 0, which the
/// program shares with the launcher unless the sandbox gave it its own.
const RENICE_GROUP: &str = r#"
import ctypes, os
try: os.setpriority(os.PRIO_PGRP, 0, 19)
except Exception as e: print("setpriority", e)
libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_WHO_PGRP, IDLE = 2, 3 << 13
if libc.syscall(251, IOPRIO_WHO_PGRP, 0, IDLE) != 0:  # ioprio_set, x86_64
    print("ioprio_set", os.strerror(ctypes.get_errno()))
"#;

/// The nice value and IO priority class of the shell around `argv` (see
/// [`in_a_group_of_its_own`]) once `argv` is done.
fn group_reniced(lab: &Lab, argv: &[&str]) -> (String, String) {
    let evidence = lab.outside("group-priority");
    let _ = std::fs::remove_file(&evidence);
    let around = format!("\"$@\"; echo \"$(ps -o ni= -p $$) $(ionice -p $$)\" > {evidence}");
    let out = in_a_group_of_its_own(lab, &around, argv);
    (read(&evidence), out)
}

#[test]
fn a_chat_cannot_lower_the_priority_of_the_launchers_process_group() {
    let test = "a_chat_cannot_lower_the_priority_of_the_launchers_process_group";
    if !confinement_available(test) {
        return;
    }
    if !cfg!(target_arch = "x86_64") {
        say(&format!(
            "\n!!! {test}: the probe's ioprio_set number is x86_64's\n"
        ));
        return;
    }
    let mut failures = Vec::new();
    // Root outside keeps capabilities the chat lacks, and the kernel then refuses; the ordinary
    // user outside has none.
    for user in every_user(test).into_iter().flatten() {
        for plan in Plan::BOTH {
            let lab = Lab::new(Some(&user));
            let (seen, out) = group_reniced(&lab, &python(RENICE_GROUP, &[]));
            assert!(
                seen.trim_start().starts_with("19") && seen.contains("idle"),
                "control: {seen} {out}"
            );
            let argv = helper_argv(&lab.plan(plan, None, &[]), &python(RENICE_GROUP, &[]));
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (seen, out) = group_reniced(&lab, &argv);
            if seen.trim_start().starts_with("19") || seen.contains("idle") {
                failures.push(format!(
                    "{} {}: the launcher's group now has `{}`\n{out}",
                    plan.name(),
                    lab.who(),
                    seen.trim()
                ));
            }
        }
    }
    no_failures(test, failures);
}

/// Sends SIGTERM to the pid in `argv[1]`.
const SIGNAL_PID: &str = "import os, signal, sys\ntry: os.kill(int(sys.argv[1]), signal.SIGTERM)\nexcept Exception as e: print(e)";

/// A process outside, of the chat's own uid, signalled by its pid from a fallback chat whose plan
/// is for Landlock `abi`: whether it died.
fn outside_process_killed(lab: &Lab, abi: Option<u32>) -> Option<String> {
    let spawn_victim = || {
        Killed(
            command_as(lab.user.as_ref(), "/bin/sleep")
                .arg("30")
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let mut victim = spawn_victim();
    let pid = victim.0.id().to_string();
    let out = run(lab.unconfined(&python(SIGNAL_PID, &[&pid])));
    assert!(
        wait_until(Duration::from_secs(5), || !alive(&mut victim.0)),
        "control {}: the process outside survived SIGTERM: {}",
        lab.who(),
        text(&out)
    );
    let mut victim = spawn_victim();
    let pid = victim.0.id().to_string();
    let file = lab.plan(Plan::Fallback, abi, &[]);
    let out = run(lab.exec(&file, &python(SIGNAL_PID, &[&pid])));
    std::thread::sleep(Duration::from_millis(300));
    (!alive(&mut victim.0)).then(|| {
        format!(
            "fallback for Landlock ABI {} {}: a process outside was killed by its pid\n{}",
            abi.map_or("of this kernel".to_owned(), |a| a.to_string()),
            lab.who(),
            text(&out)
        )
    })
}

#[test]
fn without_namespaces_a_chat_cannot_signal_a_process_outside_by_its_pid() {
    let test = "without_namespaces_a_chat_cannot_signal_a_process_outside_by_its_pid";
    if !confinement_available(test) {
        return;
    }
    let failures = every_user(test)
        .iter()
        .filter_map(|u| outside_process_killed(&Lab::new(u.as_ref()), None))
        .collect();
    no_failures(test, failures);
}

#[test]
#[ignore = "FINDING: below Landlock ABI 6 the Landlock-only fallback lets a chat signal every process of its uid outside (the provider, the person's shell, other chats), and its plan says `Landlock signal scoping (ABI 6)` all the same"]
fn below_landlock_abi_6_the_fallback_cannot_signal_a_process_outside_by_its_pid() {
    let test = "below_landlock_abi_6_the_fallback_cannot_signal_a_process_outside_by_its_pid";
    if !confinement_available(test) {
        return;
    }
    let failures = every_user(test)
        .iter()
        .filter_map(|u| outside_process_killed(&Lab::new(u.as_ref()), Some(5)))
        .collect();
    no_failures(test, failures);
}

#[test]
fn a_plan_claims_signal_scoping_only_where_the_kernel_has_it() {
    let lab = Lab::new(None);
    for plan in Plan::BOTH {
        for abi in [1, 5, 6] {
            let compiled = lab.compile(plan, Some(abi), &[]);
            let g = compiled
                .guarantees
                .iter()
                .find(|g| g.id == Promise::OutsideProcesses.id())
                .expect("the outside-processes guarantee");
            let claims_scoping = g.by.contains("scoping");
            assert_eq!(
                claims_scoping,
                abi >= 6,
                "{} for ABI {abi}: `{}`",
                plan.name(),
                g.by
            );
            if abi < 6 {
                assert!(
                    !matches!(g.enforcement, Enforcement::Fully),
                    "{} for ABI {abi} says fully: {:?}",
                    plan.name(),
                    g
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resource limits: a signal on a timer.

/// Sets a CPU limit of one second (soft and hard) on the process `argv[1]`, then, for pid 1,
/// makes it spend that second: each signal it is sent wakes it (init passes them on).
const CPU_LIMIT: &str = r#"
import ctypes, os, resource, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
class rlimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
pid = int(sys.argv[1])
one = rlimit(1, 1)
if libc.prlimit(pid, resource.RLIMIT_CPU, ctypes.byref(one), None) != 0:
    print("prlimit:", os.strerror(ctypes.get_errno())); sys.exit(0)
print("limited", flush=True)
if pid == 1:
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    deadline = time.time() + 8
    while time.time() < deadline:
        os.kill(1, signal.SIGUSR1)
"#;

#[test]
fn a_chat_cannot_kill_the_sandboxs_init_with_a_cpu_limit() {
    let test = "a_chat_cannot_kill_the_sandboxs_init_with_a_cpu_limit";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        // The control: the same uid may limit a process of its own outside.
        let mut victim = Killed(
            command_as(lab.user.as_ref(), PYTHON)
                .args(["-c", "while True: pass"])
                .spawn()
                .unwrap(),
        );
        let pid = victim.0.id().to_string();
        let out = run(lab.unconfined(&python(CPU_LIMIT, &[&pid])));
        assert!(
            wait_until(Duration::from_secs(10), || !alive(&mut victim.0)),
            "control {}: the limit did not kill: {}",
            lab.who(),
            text(&out)
        );
        let out = run(lab.confined(Plan::Namespaces, &[], &python(CPU_LIMIT, &["1"])));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if String::from_utf8_lossy(&out.stdout).contains("limited")
            || stderr.contains("without a report")
            || out.status.code() != Some(0)
        {
            failures.push(format!(
                "{}: the program changed init's limits; the launch says: {}",
                lab.who(),
                text(&out)
            ));
        }
    }
    no_failures(test, failures);
}

#[test]
fn a_launch_whose_init_is_killed_while_the_program_runs_does_not_say_it_never_started() {
    let test = "a_launch_whose_init_is_killed_while_the_program_runs_does_not_say_it_never_started";
    if !confinement_available(test)
        || !root_or_skip(test, "to kill the sandbox's init, as the OOM killer would")
    {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let ran = lab.outside("ran");
        let program = format!("import time; open({ran:?}, 'w').write('ran'); time.sleep(30)");
        let mut cmd = lab.confined(Plan::Namespaces, &[], &python(&program, &[]));
        cmd.stderr(Stdio::piped());
        let mut launch = Killed(cmd.spawn().unwrap());
        assert!(
            wait_until(Duration::from_secs(10), || Path::new(&ran).exists()),
            "the program never ran"
        );
        // The launch as root is the helper itself; as the user, setpriv exec'd it.
        let init = children_of(launch.0.id());
        assert_eq!(
            init.len(),
            1,
            "the helper should have one child, init: {init:?}"
        );
        // SAFETY: kill touches no memory; `init[0]` is the helper's child, alive (just listed)
        // and not reaped while the helper waits for it, so the pid is not reused.
        let rc = unsafe { libc::kill(init[0] as libc::pid_t, libc::SIGKILL) };
        assert_eq!(rc, 0, "kill init: {}", std::io::Error::last_os_error());
        assert!(
            wait_until(Duration::from_secs(10), || !alive(&mut launch.0)),
            "the launch did not end"
        );
        let status = launch.0.try_wait().unwrap().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(launch.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        if stderr.contains("not started") || status.code() == Some(125) {
            failures.push(format!("{}: {status:?}, {stderr}", lab.who()));
        }
    }
    no_failures(test, failures);
}

#[test]
fn without_namespaces_a_chat_cannot_kill_a_process_outside_with_a_cpu_limit() {
    let test = "without_namespaces_a_chat_cannot_kill_a_process_outside_with_a_cpu_limit";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let spin = || {
            Killed(
                command_as(lab.user.as_ref(), PYTHON)
                    .args(["-c", "while True: pass"])
                    .spawn()
                    .unwrap(),
            )
        };
        let mut victim = spin();
        let pid = victim.0.id().to_string();
        run(lab.unconfined(&python(CPU_LIMIT, &[&pid])));
        assert!(
            wait_until(Duration::from_secs(10), || !alive(&mut victim.0)),
            "control {}: the limit did not kill",
            lab.who()
        );
        let mut victim = spin();
        let pid = victim.0.id().to_string();
        let out = run(lab.confined(Plan::Fallback, &[], &python(CPU_LIMIT, &[&pid])));
        if wait_until(Duration::from_secs(4), || !alive(&mut victim.0)) {
            failures.push(format!(
                "fallback {}: a process outside was killed by the CPU limit the chat set\n{}",
                lab.who(),
                text(&out)
            ));
        }
    }
    no_failures(test, failures);
}

/// One scheduling or priority call on a process outside (`argv[2]`, its group `argv[3]`), by the
/// form named in `argv[1]`; or `self`, the forms that name the caller (which stay allowed).
/// x86_64's numbers for the calls Python does not wrap (`ioprio_set` 251, `sched_setattr` 314).
const RESCHEDULE: &str = r#"
import ctypes, os, struct, sys
form, pid, pgid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    if libc.syscall(nr, *args) != 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
IDLE_IO = 3 << 13
try:
    if form == "nice": os.setpriority(os.PRIO_PROCESS, pid, 19)
    elif form == "nice-group": os.setpriority(os.PRIO_PGRP, pgid, 19)
    elif form == "nice-user": os.setpriority(os.PRIO_USER, os.getuid(), 19)
    elif form == "idle": os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    elif form == "idle-attr": call(314, pid, struct.pack("<IIQiIQQQ", 48, os.SCHED_IDLE, 0, 0, 0, 0, 0, 0), 0)
    elif form == "pin": os.sched_setaffinity(pid, {0})
    elif form == "io-idle": call(251, 1, pid, IDLE_IO)
    elif form == "io-group": call(251, 2, pgid, IDLE_IO)
    elif form == "io-user": call(251, 3, os.getuid(), IDLE_IO)
    elif form == "self":
        os.setpriority(os.PRIO_PROCESS, 0, 5)
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        os.sched_setaffinity(0, os.sched_getaffinity(0))
        call(251, 1, 0, (2 << 13) | 4)
        print("self", os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
    print("done", flush=True)
except OSError as e:
    print(form, e)
"#;

/// What the kernel says of a process's scheduling: its nice value, its policy, the CPUs it may
/// run on and its IO priority class.
fn scheduling_of(pid: u32) -> (i64, i64, String, i64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // Fields 19 (nice) and 41 (policy) of proc_pid_stat(5), counted from the state (field 3).
    let field = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .unwrap_or(-99)
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_owned();
    // SAFETY: ioprio_get reads a number; it touches no memory of this process.
    let io = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, pid as libc::c_long) };
    (
        field(19),
        field(41),
        cpus,
        if io < 0 { -1 } else { io >> 13 },
    )
}

#[test]
fn without_namespaces_a_chat_cannot_reschedule_a_process_outside() {
    let test = "without_namespaces_a_chat_cannot_reschedule_a_process_outside";
    if !confinement_available(test) {
        return;
    }
    if !cfg!(target_arch = "x86_64") {
        say(&format!(
            "\n!!! {test}: the probe's ioprio_set and sched_setattr numbers are x86_64's\n"
        ));
        return;
    }
    let several_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) > 1;
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        // What each form changes, as the kernel reports it of the victim.
        let changed = |form: &str,
                       before: &(i64, i64, String, i64),
                       after: &(i64, i64, String, i64)| match form {
            "nice" | "nice-group" | "nice-user" => after.0 == 19 && before.0 != 19,
            "idle" | "idle-attr" => after.1 == i64::from(libc::SCHED_IDLE),
            "pin" => after.2 == "0" && before.2 != "0",
            _ => after.3 == 3,
        };
        for form in [
            "nice",
            "nice-group",
            "nice-user",
            "idle",
            "idle-attr",
            "pin",
            "io-idle",
            "io-group",
            "io-user",
        ] {
            // As root the uid forms would reach every root process of the machine (this test's
            // among them): the ordinary user's alone, whose every process is the test's.
            if form.ends_with("-user") && lab.user.is_none() {
                continue;
            }
            if form == "pin" && !several_cpus {
                say(&format!(
                    "\n!!! {test}: one CPU, so pinning to CPU 0 changes nothing\n"
                ));
                continue;
            }
            let victim = || {
                let mut cmd = command_as(lab.user.as_ref(), PYTHON);
                cmd.args(["-c", "import time; time.sleep(60)"])
                    .process_group(0);
                Killed(cmd.spawn().unwrap())
            };
            // The control: the same uid, unconfined, changes the victim.
            let control = victim();
            let pid = control.0.id();
            let before = scheduling_of(pid);
            let out = run(lab.unconfined(&python(
                RESCHEDULE,
                &[form, &pid.to_string(), &pid.to_string()],
            )));
            let after = scheduling_of(pid);
            assert!(
                changed(form, &before, &after),
                "control {} {form}: {before:?} -> {after:?}\n{}",
                lab.who(),
                text(&out)
            );
            drop(control);
            for plan in Plan::BOTH {
                let target = victim();
                let pid = target.0.id();
                let before = scheduling_of(pid);
                let out = run(lab.confined(
                    plan,
                    &[],
                    &python(RESCHEDULE, &[form, &pid.to_string(), &pid.to_string()]),
                ));
                let after = scheduling_of(pid);
                if changed(form, &before, &after) || before != after {
                    failures.push(format!(
                        "{} {}: {form} changed a process outside: {before:?} -> {after:?}\n{}",
                        plan.name(),
                        lab.who(),
                        text(&out)
                    ));
                }
            }
        }
        // The forms that name the caller stay the program's own.
        for plan in Plan::BOTH {
            let out = run(lab.confined(plan, &[], &python(RESCHEDULE, &["self", "0", "0"])));
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !stdout.contains("self 5 3") || !stdout.contains("done") {
                failures.push(format!(
                    "{} {}: the program could not change its own scheduling\n{}",
                    plan.name(),
                    lab.who(),
                    text(&out)
                ));
            }
        }
    }
    no_failures(test, failures);
}

// ---------------------------------------------------------------------------------------------
// How a launch ends.

/// Says it started, ignores every stop signal, then writes to stderr for ever (it blocks once the
/// pipe is full).
const FILL_STDERR: &str = r#"
import os, signal
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
os.write(1, b"started\n")
while True:
    os.write(2, b"x" * 4096)
"#;

#[test]
fn a_launch_told_to_stop_ends_even_when_nobody_reads_its_full_stderr() {
    let test = "a_launch_told_to_stop_ends_even_when_nobody_reads_its_full_stderr";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        // A caller that reads stdout as it comes and stderr only at the end, as many do.
        let mut cmd = lab.confined(Plan::Namespaces, &[], &python(FILL_STDERR, &[]));
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut launch = Killed(cmd.spawn().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(launch.0.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line, "started\n", "the program never started {}", lab.who());
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill touches no memory; the launch is this test's child, not yet reaped.
        let rc = unsafe { libc::kill(launch.0.id() as libc::pid_t, libc::SIGTERM) };
        assert_eq!(
            rc,
            0,
            "kill the launch: {}",
            std::io::Error::last_os_error()
        );
        let ended = wait_until(Duration::from_secs(10), || !alive(&mut launch.0));
        if ended {
            let status = launch.0.try_wait().unwrap().unwrap();
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&status),
                Some(libc::SIGTERM),
                "{}: the launch should end as stopped by SIGTERM: {status:?}",
                lab.who()
            );
        } else {
            let wchan = std::fs::read_to_string(format!("/proc/{}/wchan", launch.0.id()))
                .unwrap_or_default();
            failures.push(format!(
                "{}: the launch did not end within 10 s of SIGTERM (the helper waits in `{wchan}`)",
                lab.who()
            ));
        }
    }
    no_failures(test, failures);
}

/// A provider's structured launch of `claude` for `chat`, with nothing else asked.
fn structured_claude(chat: &str) -> launch::wrap::LaunchSpec {
    launch::wrap::LaunchSpec {
        cli: "claude".into(),
        chat: chat.into(),
        grants: vec![],
        shape: sandbox_core::Shape::Structured,
        mode: sandbox_core::Mode::Full,
        mcp_bridge: None,
        prompt: None,
        model: None,
        extra_args: vec![],
        denials: None,
        program: None,
    }
}

/// Writes the time into `argv[1]` every 50 ms, for ever (a CLI that keeps working).
const HEARTBEAT: &str = "#!/bin/sh\nwhile :; do date +%s%N > \"$HEARTBEAT\"; sleep 0.05; done\n";

#[test]
fn dropping_the_providers_tokio_child_ends_the_chat() {
    let test = "dropping_the_providers_tokio_child_ends_the_chat";
    if !confinement_available(test) {
        return;
    }
    // The provider is the caller of the library; it runs as this process's user.
    let program_dir = tempfile::tempdir().unwrap();
    let program = program_dir.path().join("busy-cli");
    std::fs::write(&program, HEARTBEAT).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lab = Lab::with_config(
        None,
        &format!(
            "\n[cli.claude]\nprogram = {:?}\n",
            program.display().to_string()
        ),
    );
    let heartbeat = lab.demo.outside.join("heartbeat");
    let mut ctx = lab.context();
    ctx.helper = Some(cli_sandbox());
    // The build under test, wherever the clone lies (under /tmp a root chat could replace it).
    ctx.accept_replaceable_helper = Some(cli_sandbox());
    let spec = structured_claude(&lab.demo.chat);
    let (args, mut cmd) =
        launch::wrap::LaunchCommand::build(&ctx, &spec, &launch::probe()).expect("build");
    assert!(
        args.plan_file().is_some(),
        "not confined by the helper: {args:?}"
    );
    cmd.env("HEARTBEAT", &heartbeat)
        .env("HOME", &lab.demo.home)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let beats = || std::fs::read_to_string(&heartbeat).unwrap_or_default();
    runtime.block_on(async {
        let child = cmd.spawn().expect("spawn the launch");
        assert!(
            wait_until(Duration::from_secs(10), || !beats().is_empty()),
            "the CLI never ran"
        );
        drop(child);
    });
    std::thread::sleep(Duration::from_secs(2));
    let before = beats();
    std::thread::sleep(Duration::from_secs(1));
    let still_running = beats() != before;
    // Whatever happens, nothing of this test stays behind.
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &program.display().to_string()])
        .status();
    assert!(
        !still_running,
        "3 s after the provider dropped its child, the chat's CLI is still working"
    );
}

// ---------------------------------------------------------------------------------------------
// A root chat and the machine.

/// Changes the mode, the times and an extended attribute of each path in `argv[1:]`.
const METADATA: &str = r#"
import os, sys
for path in sys.argv[1:]:
    for name, change in (
        ("chmod", lambda: os.chmod(path, 0o777)),
        ("utime", lambda: os.utime(path, (1000000000, 1000000000))),
        ("setxattr", lambda: os.setxattr(path, "user.cli-sandbox-attack", b"x")),
    ):
        try: change()
        except Exception as e: print(path, name, e)
"#;

/// What of the mode, times and `user.` attributes of `path` differs from `before`.
fn metadata_changed(path: &Path, before: &std::fs::Metadata) -> Vec<&'static str> {
    let now = std::fs::metadata(path).unwrap();
    let mut changed = Vec::new();
    if now.mode() != before.mode() {
        changed.push("mode");
    }
    if now.mtime() != before.mtime() {
        changed.push("times");
    }
    let name = std::ffi::CString::new("user.cli-sandbox-attack").unwrap();
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c_path` and `name` are C strings alive for the call; a null buffer of size 0 asks
    // only for the size, so nothing is written.
    let size = unsafe { libc::getxattr(c_path.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) };
    if size >= 0 {
        changed.push("extended attributes");
    }
    changed
}

fn put_back(path: &Path, before: &std::fs::Metadata) {
    std::fs::set_permissions(
        path,
        std::fs::Permissions::from_mode(before.mode() & 0o7777),
    )
    .unwrap();
    let mtime = std::time::UNIX_EPOCH + Duration::from_secs(before.mtime() as u64);
    std::fs::File::open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let name = std::ffi::CString::new("user.cli-sandbox-attack").unwrap();
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c_path` and `name` are C strings alive for the call; removexattr only reads them.
    let rc = unsafe { libc::removexattr(c_path.as_ptr(), name.as_ptr()) };
    // A missing attribute (the attack did not set it) is what this wants.
    let err = std::io::Error::last_os_error();
    assert!(
        rc == 0 || err.raw_os_error() == Some(libc::ENODATA),
        "remove the attribute of {}: {err}",
        path.display()
    );
}

#[test]
fn a_root_chat_changes_no_mode_time_or_attribute_of_the_system() {
    let test = "a_root_chat_changes_no_mode_time_or_attribute_of_the_system";
    if !confinement_available(test) || !root_or_skip(test, "the launcher is root in this case") {
        return;
    }
    let tag = format!(
        "{}-{}",
        std::process::id(),
        PLANS.fetch_add(1, Ordering::Relaxed)
    );
    let file = PathBuf::from(format!("/usr/local/lib/cli-sandbox-attack-{tag}"));
    std::fs::create_dir_all("/usr/local/lib").unwrap();
    std::fs::write(&file, "a system file\n").unwrap();
    let dir = PathBuf::from(format!("/usr/local/lib/cli-sandbox-attack-dir-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let targets = [file.clone(), dir.clone()];
    let lab = Lab::new(None);
    let args: Vec<String> = targets.iter().map(|p| p.display().to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let before: Vec<_> = targets
        .iter()
        .map(|p| std::fs::metadata(p).unwrap())
        .collect();

    let out = run(lab.unconfined(&python(METADATA, &args)));
    for (path, meta) in targets.iter().zip(&before) {
        assert_eq!(
            metadata_changed(path, meta).len(),
            3,
            "control: {} {}",
            path.display(),
            text(&out)
        );
        put_back(path, meta);
    }
    let out = run(lab.confined(Plan::Namespaces, &[], &python(METADATA, &args)));
    let mut failures = Vec::new();
    for (path, meta) in targets.iter().zip(&before) {
        let changed = metadata_changed(path, meta);
        if !changed.is_empty() {
            failures.push(format!(
                "{}: {changed:?} changed\n{}",
                path.display(),
                text(&out)
            ));
        }
        put_back(path, meta);
    }
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir(&dir);
    no_failures(test, failures);
}

#[test]
#[ignore = "FINDING: a root chat changes the mode, times and attributes of a configured writable place itself (`[policy] writable`): a `chmod 0777` of it drops its sticky bit for every user and every later chat of the machine (/tmp and /var/tmp are the chat's own since issue 27: `a_root_chat_cannot_change_the_machines_tmp`)"]
fn a_root_chat_cannot_change_the_mode_of_a_writable_place_itself() {
    let test = "a_root_chat_cannot_change_the_mode_of_a_writable_place_itself";
    if !confinement_available(test) || !root_or_skip(test, "the launcher is root in this case") {
        return;
    }
    // A writable place of the lab's own, shaped like /tmp (mode 1777, root's): the machine's
    // /tmp is not changed by a test.
    let place = tempfile::tempdir().unwrap();
    std::fs::set_permissions(place.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let place = std::fs::canonicalize(place.path()).unwrap();
    let lab = Lab::with_config(
        None,
        &format!("writable = [{:?}]\n", place.display().to_string()),
    );
    let arg = place.display().to_string();
    let before = std::fs::metadata(&place).unwrap();
    let out = run(lab.unconfined(&python(METADATA, &[&arg])));
    assert_eq!(
        metadata_changed(&place, &before).len(),
        3,
        "control: {}",
        text(&out)
    );
    put_back(&place, &before);
    let mut failures = Vec::new();
    for plan in Plan::BOTH {
        let out = run(lab.confined(plan, &[], &python(METADATA, &[&arg])));
        let changed = metadata_changed(&place, &before);
        if !changed.is_empty() {
            failures.push(format!(
                "{}: {changed:?} of the writable place changed\n{}",
                plan.name(),
                text(&out)
            ));
        }
        put_back(&place, &before);
    }
    no_failures(test, failures);
}

// ---------------------------------------------------------------------------------------------
// Devices and terminals of the machine.

/// Reads the first bytes of the block device `argv[1]` and prints them.
const READ_DEVICE: &str = "import sys\ntry: print(open(sys.argv[1], 'rb').read(64).decode(errors='replace'))\nexcept Exception as e: print(e)";

#[test]
fn a_root_chat_reads_no_block_device() {
    let test = "a_root_chat_reads_no_block_device";
    if !confinement_available(test) || !root_or_skip(test, "a block device is root's") {
        return;
    }
    // A loop device over an image that holds a secret stands in for the disk (this machine's own
    // disk may be closed to root by the hypervisor's device rules).
    let lab = Lab::new(None);
    let image = lab.demo.root.join("disk.img");
    let token = format!("raw-disk-secret-{}", std::process::id());
    let mut bytes = token.clone().into_bytes();
    bytes.resize(1 << 20, 0);
    std::fs::write(&image, bytes).unwrap();
    let attach = run({
        let mut c = Command::new("losetup");
        c.args(["--find", "--show"]).arg(&image);
        c
    });
    if !attach.status.success() {
        say(&format!(
            "\n!!! {test}: skipped, no loop device ({})\n",
            String::from_utf8_lossy(&attach.stderr).trim()
        ));
        return;
    }
    let device = String::from_utf8_lossy(&attach.stdout).trim().to_owned();
    struct Detach(String);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").args(["-d", &self.0]).status();
        }
    }
    let _detach = Detach(device.clone());
    let out = run(lab.unconfined(&python(READ_DEVICE, &[&device])));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&token),
        "control: {device} does not read: {}",
        text(&out)
    );
    let mut failures = Vec::new();
    for plan in Plan::BOTH {
        let out = run(lab.confined(plan, &[], &python(READ_DEVICE, &[&device])));
        if String::from_utf8_lossy(&out.stdout).contains(&token) {
            failures.push(format!("{}: the chat read {device}", plan.name()));
        }
    }
    no_failures(test, failures);
}

/// Opens a pseudo-terminal of its own (the person's other shell, another chat's pane), writes its
/// slave's name to `argv[1]`, then types `argv[2]` into it; after 2 s writes to `argv[3]` what
/// appeared on its screen.
const ANOTHER_TERMINAL: &str = r#"
import os, sys, time, tty
master, slave = os.openpty()
tty.setraw(slave)
open(sys.argv[1] + ".tmp", "w").write(os.ttyname(slave))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1.0)
os.write(master, sys.argv[2].encode() + b"\n")
time.sleep(2.0)
os.set_blocking(master, False)
try: screen = os.read(master, 4096)
except BlockingIOError: screen = b""
open(sys.argv[3], "wb").write(screen)
"#;

/// Opens the terminal named in `argv[1]`, writes `argv[2]` on its screen and reads what is typed
/// into it, into `argv[3]`.
const STEAL_TERMINAL: &str = r#"
import os, select, sys, time
deadline = time.time() + 5
while not os.path.exists(sys.argv[1]) and time.time() < deadline:
    time.sleep(0.02)
try:
    fd = os.open(open(sys.argv[1]).read(), os.O_RDWR | os.O_NOCTTY)
except Exception as e:
    print(e); sys.exit(0)
os.write(fd, sys.argv[2].encode())
if select.select([fd], [], [], 3)[0]:
    open(sys.argv[3], "wb").write(os.read(fd, 4096))
"#;

/// Another terminal of the chat's uid, outside: what the chat saw of its input and wrote on its
/// screen.
fn another_terminal(lab: &Lab, confined: Option<Plan>) -> (bool, bool, String) {
    let (name, screen, stolen) = (
        lab.outside("pty-name"),
        lab.outside("pty-screen"),
        lab.outside("pty-stolen"),
    );
    for f in [&name, &screen, &stolen] {
        let _ = std::fs::remove_file(f);
    }
    let typed = format!("typed-into-another-terminal-{}", std::process::id());
    let forged = format!("forged-on-another-screen-{}", std::process::id());
    // The plan is compiled before the terminal exists, as a launch is.
    let plan = confined.map(|p| lab.plan(p, None, &[]));
    let mut owner = Killed(
        command_as(lab.user.as_ref(), PYTHON)
            .args(["-c", ANOTHER_TERMINAL, &name, &typed, &screen])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let argv = python(STEAL_TERMINAL, &[&name, &forged, &stolen]);
    let out = match &plan {
        Some(file) => run(lab.exec(file, &argv)),
        None => run(lab.unconfined(&argv)),
    };
    let _ = owner.0.wait();
    (
        read(&stolen).contains(&typed),
        read(&screen).contains(&forged),
        text(&out),
    )
}

/// The attempts of `another_terminal` under `plan`, for every user.
fn terminal_attempts(test: &str, plan: Plan) -> Vec<String> {
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let (stole, wrote, out) = another_terminal(&lab, None);
        assert!(stole && wrote, "control {}: {out}", lab.who());
        let (stole, wrote, out) = another_terminal(&lab, Some(plan));
        if stole || wrote {
            failures.push(format!(
                "{} {}: read its input {stole}, wrote its screen {wrote}\n{out}",
                plan.name(),
                lab.who()
            ));
        }
    }
    failures
}

#[test]
fn a_chat_cannot_open_another_terminal_of_its_user() {
    attack("a_chat_cannot_open_another_terminal_of_its_user", |test| {
        terminal_attempts(test, Plan::Namespaces)
    });
}

#[test]
#[ignore = "FINDING: in the Landlock-only fallback a chat opens every other terminal of its uid (/dev/pts keeps its rights there): it reads what is typed into another chat's pane or the person's shell, and writes on their screens"]
fn without_namespaces_a_chat_cannot_open_another_terminal_of_its_user() {
    attack(
        "without_namespaces_a_chat_cannot_open_another_terminal_of_its_user",
        |test| terminal_attempts(test, Plan::Fallback),
    );
}

// ---------------------------------------------------------------------------------------------
// Other processes' arguments.

/// Writes into `argv[1]` every command line of the machine that holds `argv[2]` read backwards
/// (so that its own, and the sandbox's init's, which repeat its arguments, do not count).
const SCAN_CMDLINES: &str = r#"
import os, sys
needle = sys.argv[2][::-1].encode()
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try: line = open("/proc/%s/cmdline" % pid, "rb").read().replace(b"\0", b" ")
        except Exception: continue
        if needle in line:
            found.append(line.decode(errors="replace"))
open(sys.argv[1], "w").write("\n".join(found))
"#;

/// Another chat's CLI as the adapters start it: the MCP bridge's configuration (with its
/// environment) and the prompt in its arguments.
fn another_chats_cli(lab: &Lab, token: &str) -> Killed {
    let bridge = format!(
        "--mcp-config={{\"mcpServers\":{{\"bridge\":{{\"env\":{{\"BRIDGE_TOKEN\":\"{token}\"}}}}}}}}"
    );
    Killed(
        command_as(lab.user.as_ref(), PYTHON)
            .args([
                "-c",
                "import time; time.sleep(30)",
                &bridge,
                "--",
                "summarize wf-b/plan.md",
            ])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

fn cmdline_seen(test: &str, plan: Plan) -> Vec<String> {
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let token = format!("chat-b-bridge-token-{}", std::process::id());
        let _other = another_chats_cli(&lab, &token);
        let evidence = lab.outside("cmdlines");
        let backwards: String = token.chars().rev().collect();
        let argv = python(SCAN_CMDLINES, &[&evidence, &backwards]);
        std::thread::sleep(Duration::from_millis(200));
        run(lab.unconfined(&argv));
        assert!(
            read(&evidence).contains(&token),
            "control {}: {}",
            lab.who(),
            read(&evidence)
        );
        std::fs::remove_file(&evidence).unwrap();
        let out = run(lab.confined(plan, &[], &argv));
        if read(&evidence).contains(&token) {
            failures.push(format!(
                "{} {}: another chat's arguments read: {}\n{}",
                plan.name(),
                lab.who(),
                read(&evidence),
                text(&out)
            ));
        }
    }
    failures
}

#[test]
fn a_chat_cannot_read_another_chats_arguments() {
    attack("a_chat_cannot_read_another_chats_arguments", |test| {
        cmdline_seen(test, Plan::Namespaces)
    });
}

#[test]
#[ignore = "FINDING: in the Landlock-only fallback a chat reads every other process's arguments (/proc/PID/cmdline is not a ptrace access): another chat's prompt and its MCP bridge's configuration and environment, which the adapters pass as arguments"]
fn without_namespaces_a_chat_cannot_read_another_chats_arguments() {
    attack(
        "without_namespaces_a_chat_cannot_read_another_chats_arguments",
        |test| cmdline_seen(test, Plan::Fallback),
    );
}

// ---------------------------------------------------------------------------------------------
// What the next launch follows.

/// The configuration that makes `claude` a program that only exits, so that a launch can be
/// built and run without the real CLI.
const CLAUDE_IS_TRUE: &str = "\n[cli.claude]\nprogram = \"/bin/true\"\n";

#[test]
fn a_symlink_left_at_a_settings_file_does_not_lead_the_next_launch_into_protected_data() {
    let test =
        "a_symlink_left_at_a_settings_file_does_not_lead_the_next_launch_into_protected_data";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::with_config(user.as_ref(), CLAUDE_IS_TRUE);
        let d = &lab.demo;
        let config = d.state_root.join("config.json");
        let before = std::fs::read(&config).unwrap();
        let settings = d.home.join(".claude.json");
        let plant = format!(
            "import os; os.symlink({:?}, {:?})",
            config.display().to_string(),
            settings.display().to_string()
        );
        let _ = run(lab.confined(Plan::Namespaces, &[], &python(&plant, &[])));
        // `~/.claude.json` is read-only in every chat now (a place Claude acts on at start,
        // tests/steering.rs): the chat's plant is refused. A link left there before (by an
        // older launcher's chat) is the case the next launch must still not follow: the test
        // plants it itself, a stand-in for that chat.
        if !settings.is_symlink() {
            let _ = std::fs::remove_file(&settings);
            std::os::unix::fs::symlink(&config, &settings).unwrap();
        }
        // The next launch, of another chat.
        let mut next = command_as(lab.user.as_ref(), cli_sandbox());
        next.arg("--config").arg(&d.config).args([
            "run",
            "--cli",
            "claude",
            "--chat",
            "chat-next",
            "--shape",
            "structured",
        ]);
        lab.environment(&mut next);
        let out = run(next);
        if std::fs::read(&config).unwrap() != before {
            failures.push(format!(
                "{}: the next launch rewrote config.json through ~/.claude.json\n{}",
                lab.who(),
                text(&out)
            ));
        }
    }
    no_failures(test, failures);
}

/// Not a test of its own: the next launch of a provider that uses the library (so its own
/// program is not `cli-sandbox`), run in a process of its own by
/// `a_chat_cannot_plant_the_helper_that_the_next_launch_runs` with the PATH that test sets.
#[test]
#[ignore = "a part of a_chat_cannot_plant_the_helper_that_the_next_launch_runs, which runs it"]
fn the_next_launch_of_a_library_caller() {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let (Some(home), Some(state_root), Some(config)) = (
        var("ATTACK_NEXT_HOME"),
        var("ATTACK_NEXT_STATE_ROOT"),
        var("ATTACK_NEXT_CONFIG"),
    ) else {
        return;
    };
    let settings = launch::Settings {
        home: Some(home),
        state_root: Some(state_root),
        workspace_docs: None,
        config: Some(config),
        helper: None,
        accept_replaceable_helper: None,
    };
    let ctx = launch::Context::load(&settings).unwrap();
    let spec = structured_claude("chat-next");
    // The helper is never looked up on PATH: a library caller that names none is told so.
    let Ok(args) = launch::wrap::PreparedLaunch::prepare(&ctx, &spec, &launch::probe()) else {
        return;
    };
    let _ = args.std_command().map(|mut command| command.status());
}

#[test]
fn a_chat_cannot_plant_the_helper_that_the_next_launch_runs() {
    let test = "a_chat_cannot_plant_the_helper_that_the_next_launch_runs";
    if !confinement_available(test) {
        return;
    }
    let lab = Lab::with_config(None, CLAUDE_IS_TRUE);
    let d = &lab.demo;
    let bin = d.home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let config = d.state_root.join("config.json");
    let evidence = lab.outside("helper-ran");
    let planted = bin.join("cli-sandbox");
    let plant = format!(
        "import os; open({p:?}, 'w').write('#!/bin/sh\\ncat {c} > {e}\\n'); os.chmod({p:?}, 0o755)",
        p = planted.display().to_string(),
        c = config.display(),
        e = evidence
    );
    let out = run(lab.confined(Plan::Namespaces, &[], &python(&plant, &[])));
    assert!(
        planted.exists(),
        "the chat could not write its home: {}",
        text(&out)
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run({
        let mut next = Command::new(std::env::current_exe().unwrap());
        next.args([
            "--exact",
            "the_next_launch_of_a_library_caller",
            "--ignored",
            "--quiet",
        ])
        .env("PATH", path)
        .env_remove("CLI_SANDBOX_HELPER")
        .env("ATTACK_NEXT_HOME", &d.home)
        .env("ATTACK_NEXT_STATE_ROOT", &d.state_root)
        .env("ATTACK_NEXT_CONFIG", &d.config)
        .env("HOME", &d.home);
        next
    });
    assert!(
        !read(&evidence).contains(&lab.secret(&config)),
        "the next launch ran the chat's cli-sandbox unconfined, which read config.json\n{}",
        text(&out)
    );
}

/// Leaves a tmux configuration in the home, at both names tmux reads (`~/.tmux.conf`,
/// `~/.config/tmux/tmux.conf`), whose `run-shell` copies config.json to `argv[2]`.
const PLANT_TMUX_CONF: &str = r#"
import os, sys
home, config, evidence = sys.argv[1:4]
line = 'run-shell "cat %s > %s"\n' % (config, evidence)
for path in (home + "/.tmux.conf", home + "/.config/tmux/tmux.conf"):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(line)
    except Exception as e:
        print(path, e)
"#;

#[test]
fn with_harden_a_chat_leaves_no_tmux_configuration_for_the_providers_next_server() {
    let test = "with_harden_a_chat_leaves_no_tmux_configuration_for_the_providers_next_server";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::with_config(user.as_ref(), "harden = true\n");
            let d = &lab.demo;
            // A home as people have it: ~/.config exists.
            std::fs::create_dir_all(d.home.join(".config")).unwrap();
            lab.own(&d.home);
            let config = d.state_root.join("config.json");
            let evidence = lab.outside("tmux-ran");
            let (home, config_arg) = (d.home.display().to_string(), config.display().to_string());
            // What the chat wrote (with `harden`, an empty `~/.tmux.conf` made by the launch to
            // close the name means what none does).
            let planted = || {
                [".tmux.conf", ".config/tmux/tmux.conf"]
                    .into_iter()
                    .filter(|f| read(&d.home.join(f).display().to_string()).contains("run-shell"))
                    .collect::<Vec<_>>()
            };
            let plan_file = lab.plan(plan, None, &[]);
            let argv = python(PLANT_TMUX_CONF, &[&home, &config_arg, &evidence]);
            let out = run(lab.unconfined(&argv));
            assert_eq!(planted().len(), 2, "control {}: {}", lab.who(), text(&out));
            // What it is for: the provider's next tmux server runs it, unconfined.
            let socket = lab.outside("control-tmux.sock");
            let mut tmux = command_as(lab.user.as_ref(), "tmux");
            // SHELL: tmux runs the session's command and the planted `run-shell` with it, else
            // with the test user's login shell (nologin); CI's environment has none.
            tmux.args(["-S", &socket, "new-session", "-d", "sleep 1"])
                .env("HOME", &d.home)
                .env("SHELL", "/bin/sh")
                .env_remove("XDG_CONFIG_HOME")
                .stdin(Stdio::null());
            run(tmux);
            assert!(
                wait_until(Duration::from_secs(5), || read(&evidence)
                    .contains(&lab.secret(&config))),
                "control {}: the tmux server did not run the planted configuration",
                lab.who()
            );
            for f in [".tmux.conf", ".config/tmux/tmux.conf"] {
                let _ = std::fs::remove_file(d.home.join(f));
            }
            let _ = std::fs::remove_dir(d.home.join(".config/tmux"));
            let out = run(lab.exec(&plan_file, &argv));
            let left = planted();
            if !left.is_empty() {
                failures.push(format!(
                    "{} {}: the chat left {left:?}\n{}",
                    plan.name(),
                    lab.who(),
                    text(&out)
                ));
            }
        }
    }
    no_failures(test, failures);
}

#[test]
fn harden_creates_nothing_where_a_symlink_in_the_home_points() {
    let test = "harden_creates_nothing_where_a_symlink_in_the_home_points";
    if !confinement_available(test)
        || !root_or_skip(test, "a root launcher creating folders of the system")
    {
        return;
    }
    let lab = Lab::new(None);
    let d = &lab.demo;
    // Stands for /etc: a folder of the system, outside the home.
    let system = d.root.join("system-etc");
    std::fs::create_dir_all(&system).unwrap();
    let plant = format!(
        "import os; os.symlink({:?}, {:?})",
        system.display().to_string(),
        d.home.join(".config").display().to_string()
    );
    // Planted while harden is off (or before it was turned on). `~/.config` holds places CLIs
    // act on at start (Muse's settings), so a chat of this launcher cannot replace it any more
    // (the settings rule); one of an older launcher could: the test plants it itself then.
    let _ = run(lab.confined(Plan::Namespaces, &[], &python(&plant, &[])));
    if !d.home.join(".config").is_symlink() {
        let config = d.home.join(".config");
        let _ = std::fs::remove_dir_all(&config);
        std::os::unix::fs::symlink(&system, &config).unwrap();
    }
    let mut config = std::fs::read_to_string(&d.config).unwrap();
    config.push_str("harden = true\n");
    std::fs::write(&d.config, config).unwrap();
    let out = run(lab.confined(Plan::Namespaces, &[], &["/bin/true"]));
    let created: Vec<String> = std::fs::read_dir(&system)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        created.is_empty(),
        "the launcher created {created:?} in {}\n{}",
        system.display(),
        text(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// Processes outside that act for the chat.

/// Tries to become a unix-socket server at `argv[1]`: a socket of its own, then a stream pair's
/// end bound to the path. Writes `argv[2]` once one listens, then passes on what a client sends
/// into `argv[3]`.
const LISTEN: &str = r#"
import os, socket, sys
path, ready, evidence = sys.argv[1:4]
server = None
for make in (lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
             lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)[0]):
    try:
        s = make()
        if os.path.exists(path): os.unlink(path)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen(1)
        server = s
        break
    except Exception as e:
        print(e)
open(ready, "w").write("listening" if server else "no")
if server:
    server.settimeout(5)
    c, _ = server.accept()
    open(evidence, "wb").write(c.recv(4096))
"#;

const CONNECT: &str = "import socket, sys\ntry:\n    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode())\nexcept Exception as e: print(e)";

#[test]
fn a_chat_cannot_serve_a_unix_socket_to_processes_outside() {
    let test = "a_chat_cannot_serve_a_unix_socket_to_processes_outside";
    if !confinement_available(test) {
        return;
    }
    let abi = cli_sandbox_tests::this_kernel().landlock_abi;
    if abi >= 9 {
        say(&format!(
            "\n!!! {test}: Landlock ABI {abi} lets a chat make unix sockets; this test is for the kernels below 9\n"
        ));
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::new(user.as_ref());
            let (path, ready, evidence) = (
                lab.outside("served.sock"),
                lab.outside("ready"),
                lab.outside("served"),
            );
            let token = format!("sent-to-the-chat-{}", std::process::id());
            let attempt = |confined: bool| {
                for f in [&path, &ready, &evidence] {
                    let _ = std::fs::remove_file(f);
                }
                let argv = python(LISTEN, &[&path, &ready, &evidence]);
                let mut server = Killed(
                    if confined {
                        lab.confined(plan, &[], &argv)
                    } else {
                        lab.unconfined(&argv)
                    }
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
                );
                assert!(
                    wait_until(Duration::from_secs(10), || Path::new(&ready).exists()),
                    "the probe never ran"
                );
                // The person's process, outside, connects to what is at the path.
                let mut client = command_as(lab.user.as_ref(), PYTHON);
                client.args(["-c", CONNECT, &path, &token]);
                run(client);
                let _ = wait_until(Duration::from_secs(5), || !alive(&mut server.0));
                read(&evidence).contains(&token)
            };
            assert!(attempt(false), "control {}: no server", lab.who());
            if attempt(true) {
                failures.push(format!(
                    "{} {}: a process outside connected to the chat's server",
                    plan.name(),
                    lab.who()
                ));
            }
        }
    }
    no_failures(test, failures);
}

/// A daemon outside that reads commands from a FIFO: whatever is written to `argv[1]` lands in
/// `argv[2]`.
const FIFO_READER: &str = r#"
import os, select, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
open(sys.argv[2] + ".ready", "w").close()
deadline = time.time() + 15
while time.time() < deadline:
    if select.select([fd], [], [], 0.2)[0]:
        data = os.read(fd, 4096)
        if data:
            open(sys.argv[2], "ab").write(data)
"#;

const FIFO_WRITER: &str = "import os, sys\ntry:\n    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK); os.write(fd, sys.argv[2].encode())\nexcept Exception as e: print(e)";

#[test]
fn a_fifo_in_the_state_root_that_a_daemon_outside_reads_is_out_of_reach() {
    let test = "a_fifo_in_the_state_root_that_a_daemon_outside_reads_is_out_of_reach";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::new(user.as_ref());
            let fifo = lab.demo.state_root.join("state/control.fifo");
            let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
            // SAFETY: `c` is a C string alive for the call; mkfifo only reads it.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            lab.own(&fifo);
            let evidence = lab.outside("fifo-received");
            let fifo = fifo.display().to_string();
            let _daemon = Killed(
                command_as(lab.user.as_ref(), PYTHON)
                    .args(["-c", FIFO_READER, &fifo, &evidence])
                    .spawn()
                    .unwrap(),
            );
            assert!(wait_until(Duration::from_secs(10), || Path::new(&format!(
                "{evidence}.ready"
            ))
            .exists()));
            let plan_file = lab.plan(plan, None, &[]);
            run(lab.unconfined(&python(FIFO_WRITER, &[&fifo, "control-command"])));
            assert!(
                wait_until(Duration::from_secs(5), || read(&evidence)
                    .contains("control-command")),
                "control {}",
                lab.who()
            );
            let out = run(lab.exec(&plan_file, &python(FIFO_WRITER, &[&fifo, "chat-command"])));
            std::thread::sleep(Duration::from_millis(500));
            if read(&evidence).contains("chat-command") {
                failures.push(format!(
                    "{} {}: the daemon got the chat's command\n{}",
                    plan.name(),
                    lab.who(),
                    text(&out)
                ));
            }
        }
    }
    no_failures(test, failures);
}

/// Moves the socket at `argv[1]` (and then its folder) away, and removes it.
const MOVE_SOCKET: &str = r#"
import os, sys
sock = sys.argv[1]
for attempt in (lambda: os.rename(sock, sock + ".moved"),
                lambda: os.rename(os.path.dirname(sock), os.path.dirname(sock) + ".moved"),
                lambda: os.unlink(sock)):
    try: attempt()
    except Exception as e: print(e)
"#;

#[test]
fn the_providers_tmux_socket_kept_in_the_state_root_cannot_be_taken_away() {
    let test = "the_providers_tmux_socket_kept_in_the_state_root_cannot_be_taken_away";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in Plan::BOTH {
            let lab = Lab::new(user.as_ref());
            let folder = lab.demo.state_root.join("state/tmux");
            std::fs::create_dir_all(&folder).unwrap();
            lab.own(&folder);
            let socket = folder.join("provider.sock").display().to_string();
            let tmux = |args: &[&str]| {
                let mut c = command_as(lab.user.as_ref(), "tmux");
                // tmux runs the session's command with $SHELL, else the user's login shell:
                // the test user's is nologin, and CI's environment has no $SHELL.
                c.args(["-S", &socket])
                    .args(args)
                    .env("HOME", &lab.demo.home)
                    .env("SHELL", "/bin/sh")
                    .stdin(Stdio::null());
                run(c)
            };
            let started = tmux(&["new-session", "-d", "-s", "provider", "sleep 60"]);
            assert!(started.status.success(), "tmux: {}", text(&started));
            let reachable = || tmux(&["has-session", "-t", "provider"]).status.success();
            assert!(reachable());
            let plan_file = lab.plan(plan, None, &[]);
            // The control takes it away, and it is put back.
            run(lab.unconfined(&python(MOVE_SOCKET, &[&socket])));
            assert!(
                !reachable(),
                "control {}: the socket is still there",
                lab.who()
            );
            let moved_folder = folder.with_extension("moved");
            if moved_folder.exists() {
                std::fs::rename(&moved_folder, &folder).unwrap();
            }
            let moved = folder.join("provider.sock.moved");
            if moved.exists() {
                std::fs::rename(&moved, folder.join("provider.sock")).unwrap();
            }
            assert!(reachable(), "the socket could not be put back");
            let out = run(lab.exec(&plan_file, &python(MOVE_SOCKET, &[&socket])));
            if !reachable() {
                failures.push(format!(
                    "{} {}: the provider lost its tmux server\n{}",
                    plan.name(),
                    lab.who(),
                    text(&out)
                ));
            }
            tmux(&["kill-server"]);
        }
    }
    no_failures(test, failures);
}

// ---------------------------------------------------------------------------------------------
// What the launch reports.

/// Prints `argv[1]` on stderr and exits 125, as the helper does when confinement fails.
const FORGE_FAILURE: &str = "import sys\nsys.stderr.write(sys.argv[1])\nsys.exit(125)";

#[test]
#[ignore = "FINDING (low): a program that prints the helper's own `not started, confinement failed` words and exits 125 is indistinguishable from a launch that never started; nothing outside the program's reach says which it was"]
fn a_program_cannot_pass_for_a_launch_that_never_started() {
    let test = "a_program_cannot_pass_for_a_launch_that_never_started";
    if !confinement_available(test) {
        return;
    }
    let lab = Lab::new(None);
    // A launch that really fails: a plan for a Landlock ABI this kernel lacks.
    let mut plan = lab.compile(Plan::Namespaces, None, &[]);
    plan.landlock.abi = 99;
    let file = lab.demo.root.join("impossible-plan.json");
    std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let real = run(lab.exec(&file, &["/bin/true"]));
    assert_eq!(real.status.code(), Some(125), "{}", text(&real));
    let words = String::from_utf8_lossy(&real.stderr).into_owned();
    let forged = run(lab.confined(Plan::Namespaces, &[], &python(FORGE_FAILURE, &[&words])));
    assert!(
        (real.status.code(), &real.stderr) != (forged.status.code(), &forged.stderr),
        "a program that ran reports exactly as a launch that never started:\n{}",
        text(&forged)
    );
}

// ---------------------------------------------------------------------------------------------
// Resource limits (`[limits]`, issue 27): the chat's processes, its memory, its own /tmp.

/// Forks `argv[1]` children (the chat's process limit is half of it) that each leave a file in
/// `argv[3]` and wait until the parent lets go; `argv[2]` says how they try to get past the
/// limit first: `plain`, `setsid` (each child its own session, then a daemon's double fork),
/// `userns` (the parent enters a user namespace of its own first: RLIMIT_NPROC counts per
/// namespace), `cgroup` (the parent writes itself into every cgroup.procs it finds under
/// /sys/fs/cgroup, a parent's among them, and `max` into every pids.max and memory limit).
const FORKS: &str = r#"
import ctypes, os, sys
n, mode, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode == "userns":
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) != 0:
        print("unshare:", os.strerror(ctypes.get_errno()))
if mode == "cgroup":
    for root, dirs, files in os.walk("/sys/fs/cgroup"):
        for name in ("cgroup.procs", "pids.max", "memory.max", "memory.limit_in_bytes"):
            if name in files:
                path = os.path.join(root, name)
                try:
                    with open(path, "w") as f:
                        f.write(str(os.getpid()) if name == "cgroup.procs" else "max")
                    print("wrote", path)
                except OSError:
                    pass
r, w = os.pipe()
forked = 0
for i in range(n):
    try:
        pid = os.fork()
    except OSError as e:
        print("fork:", e)
        break
    if pid == 0:
        try:
            os.close(w)
            if mode == "setsid":
                os.setsid()
                if os.fork() != 0:
                    os._exit(0)
            open(os.path.join(out, "p-%d" % os.getpid()), "w").close()
            os.read(r, 1)
        finally:
            os._exit(0)
    forked += 1
os.close(w)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print("forked", forked)
"#;

/// The files the children of [`FORKS`] left in `dir`: each one a process that ran at once with
/// every other.
fn children_seen(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("p-"))
            })
            .count()
        })
        .unwrap_or(0)
}

/// A folder in the lab's runtime for one run's files, the lab user's.
fn fresh_dir(lab: &Lab, name: &str) -> PathBuf {
    let dir = lab.demo.runtime.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    lab.own(&dir);
    dir
}

/// Whether this launcher can make a cgroup with these controllers here; otherwise skips `test`
/// (an error where CI asks for real confinement: its machines have one).
fn cgroup_or_skip(test: &str, memory: bool, pids: bool) -> bool {
    match sandbox_linux::cgroup::place(memory, pids) {
        Ok(_) => true,
        Err(why) => {
            cli_sandbox_tests::skip(
                test,
                &format!("no cgroup can be made here ({why})"),
                cli_sandbox_tests::REQUIRE_LANDLOCK,
            );
            false
        }
    }
}

#[test]
fn a_chat_runs_at_most_its_processes_however_it_starts_them_and_ends_cleanly() {
    let test = "a_chat_runs_at_most_its_processes_however_it_starts_them_and_ends_cleanly";
    if !confinement_available(test) || !cgroup_or_skip(test, false, true) {
        return;
    }
    const N: usize = 12;
    let asked = (2 * N).to_string();
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::with_config(user.as_ref(), &format!("\n[limits]\nprocesses = {N}\n"));
        // The control: unconfined, every child runs.
        let control = fresh_dir(&lab, "control");
        let out = run(lab.unconfined(&python(
            FORKS,
            &[&asked, "plain", control.to_str().unwrap()],
        )));
        assert_eq!(
            children_seen(&control),
            2 * N,
            "control {}: {}",
            lab.who(),
            text(&out)
        );
        // The user's processes outside do not count against the chat (nor the chat's against
        // them): RLIMIT_NPROC is counted per user namespace. N of them sleep meanwhile.
        let _outside: Vec<Killed> = (0..N)
            .map(|_| {
                Killed(
                    command_as(user.as_ref(), "/bin/sleep")
                        .arg("600")
                        .stdin(Stdio::null())
                        .spawn()
                        .unwrap(),
                )
            })
            .collect();
        for mode in ["plain", "setsid", "userns", "cgroup"] {
            let dir = fresh_dir(&lab, mode);
            let out = run(lab.confined(
                Plan::Namespaces,
                &[],
                &python(FORKS, &[&asked, mode, dir.to_str().unwrap()]),
            ));
            let seen = children_seen(&dir);
            let case = format!("{} ({mode})", lab.who());
            // Python and its children are the chat's processes (init is not counted): N - 1
            // children at most, and as many where nothing else holds a place (plain).
            if seen > N - 1 || (mode == "plain" && seen < N - 1) {
                failures.push(format!(
                    "{case}: {seen} processes ran at once with processes = {N}\n{}",
                    text(&out)
                ));
            }
            if !out.status.success() {
                failures.push(format!(
                    "{case}: the chat did not end cleanly\n{}",
                    text(&out)
                ));
            }
            if String::from_utf8_lossy(&out.stdout).contains("wrote") {
                failures.push(format!("{case}: a cgroup file was written\n{}", text(&out)));
            }
            // Root's limit is the pids cgroup's, which counts what it refused: the launcher
            // says which limit the chat reached.
            if user.is_none()
                && mode == "plain"
                && !String::from_utf8_lossy(&out.stderr).contains("`[limits] processes = 12`")
            {
                failures.push(format!(
                    "{case}: the launcher does not name the limit\n{}",
                    text(&out)
                ));
            }
        }
    }
    no_failures(test, failures);
}

/// Writes `argv[1]` MiB, touched, into memory (`heap`) or into the file `argv[2]` (a tmpfs
/// folder's: its pages are memory too); `argv[3]` a file made first (the program ran).
const ALLOCATE: &str = r#"
import sys
mb, where, ran = int(sys.argv[1]), sys.argv[2], sys.argv[3]
open(ran, "w").close()
chunks = []
f = None if where == "heap" else open(where, "wb")
for i in range(mb):
    block = bytes([i % 251]) * (1 << 20)
    if f is None:
        chunks.append(block)
    else:
        f.write(block)
        f.flush()
print("allocated", mb, flush=True)
"#;

#[test]
fn a_chat_past_its_memory_is_stopped_and_the_launcher_says_which_limit() {
    let test = "a_chat_past_its_memory_is_stopped_and_the_launcher_says_which_limit";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::with_config(user.as_ref(), "\n[limits]\nmemory = \"64M\"\n");
        let ran = lab.demo.runtime.join("ran");
        let ran_arg = ran.display().to_string();
        let out = run(lab.unconfined(&python(ALLOCATE, &["128", "heap", &ran_arg])));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("allocated 128"),
            "control {}: {}",
            lab.who(),
            text(&out)
        );
        let _ = std::fs::remove_file(&ran);
        let out = run(lab.confined(
            Plan::Namespaces,
            &[],
            &python(ALLOCATE, &["128", "heap", &ran_arg]),
        ));
        if user.is_some() && String::from_utf8_lossy(&out.stderr).contains("not started") {
            // No cgroup for this user here (cgroup v1 is root's, or no delegated v2 subtree):
            // the launch is refused, never run unbounded.
            if out.status.success()
                || ran.exists()
                || !String::from_utf8_lossy(&out.stderr).contains("[limits] memory")
            {
                failures.push(format!(
                    "{}: no cgroup can be made, yet the chat ran or the refusal does not name the limit\n{}",
                    lab.who(),
                    text(&out)
                ));
            }
            continue;
        }
        if !cgroup_or_skip(test, true, false) {
            return;
        }
        for (case, where_) in [
            ("heap", "heap".to_owned()),
            ("/dev/shm", "/dev/shm/big".to_owned()),
            ("/tmp", "/tmp/big".to_owned()),
        ] {
            // The private /tmp and /dev/shm are 1G by default: the memory limit comes first.
            let out = run(lab.confined(
                Plan::Namespaces,
                &[],
                &python(ALLOCATE, &["128", &where_, &ran_arg]),
            ));
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success()
                || String::from_utf8_lossy(&out.stdout).contains("allocated 128")
                || !stderr.contains("`[limits] memory = \"64M\"`")
            {
                failures.push(format!(
                    "{} ({case}): 128M in a chat limited to 64M was not stopped, or the launcher does not say why\n{}",
                    lab.who(),
                    text(&out)
                ));
            }
        }
        // The chat cannot raise its limit nor leave its cgroup: it writes every cgroup file it
        // finds, then allocates.
        let out = run(lab.confined(
            Plan::Namespaces,
            &[],
            &python(
                &format!("{FORKS_CGROUP_PREFIX}{ALLOCATE}"),
                &["128", "heap", &ran_arg],
            ),
        ));
        if out.status.success() || String::from_utf8_lossy(&out.stdout).contains("wrote") {
            failures.push(format!(
                "{}: after writing cgroup files the chat got past its memory\n{}",
                lab.who(),
                text(&out)
            ));
        }
    }
    no_failures(test, failures);
}

/// Writes this process into every `cgroup.procs` under /sys/fs/cgroup and `max` into every limit
/// it finds; prints each file it could write.
const FORKS_CGROUP_PREFIX: &str = r#"
import os
for root, dirs, files in os.walk("/sys/fs/cgroup"):
    for name in ("cgroup.procs", "pids.max", "memory.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
        if name in files:
            path = os.path.join(root, name)
            try:
                with open(path, "w") as f:
                    f.write(str(os.getpid()) if name == "cgroup.procs" else "max")
                print("wrote", path, flush=True)
            except OSError:
                pass
"#;

/// Leaves `argv[1]` in /tmp, /var/tmp and /dev/shm, says so with the file `argv[2]`, and waits
/// until the file `argv[3]` exists.
const LEAVE_IN_TMP: &str = r#"
import os, sys, time
name, ready, stop = sys.argv[1], sys.argv[2], sys.argv[3]
for d in ("/tmp", "/var/tmp", "/dev/shm"):
    with open(os.path.join(d, name), "w") as f:
        f.write("secret")
open(ready, "w").close()
while not os.path.exists(stop):
    time.sleep(0.02)
"#;

/// Writes into the file `argv[2]` the names among `argv[3:]` that exist here; fills /tmp,
/// /var/tmp and /dev/shm with `argv[1]` MiB each and prints what each write said at its end.
const LOOK_AND_FILL: &str = r#"
import os, sys
mb, found = int(sys.argv[1]), sys.argv[2]
with open(found, "w") as f:
    for path in sys.argv[3:]:
        if os.path.exists(path):
            f.write(path + "\n")
for d in ("/tmp", "/var/tmp", "/dev/shm"):
    path = os.path.join(d, "fill-%d" % os.getpid())
    try:
        with open(path, "wb") as f:
            for i in range(mb):
                f.write(b"x" * (1 << 20))
                f.flush()
        print(d, "took", mb)
    except OSError as e:
        print(d, "errno", e.errno)
    try:
        os.unlink(path)
    except OSError:
        pass
"#;

#[test]
fn a_chats_tmp_is_its_own_and_bounded() {
    let test = "a_chats_tmp_is_its_own_and_bounded";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::with_config(user.as_ref(), "\n[limits]\ntmp = \"8M\"\n");
        let token = format!("cli-sandbox-tmp-{}-{}", std::process::id(), lab.who().len());
        let ready = lab.demo.runtime.join("ready");
        let stop = lab.demo.runtime.join("stop");
        let places: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
            .iter()
            .map(|d| Path::new(d).join(&token))
            .collect();
        // The control: unconfined, the machine sees what the program left.
        std::fs::write(&stop, "").unwrap();
        let out = run(lab.unconfined(&python(
            LEAVE_IN_TMP,
            &[&token, ready.to_str().unwrap(), stop.to_str().unwrap()],
        )));
        assert!(
            places.iter().all(|p| p.exists()),
            "control {}: {}",
            lab.who(),
            text(&out)
        );
        for p in &places {
            std::fs::remove_file(p).unwrap();
        }
        let _ = std::fs::remove_file(&stop);
        let _ = std::fs::remove_file(&ready);
        // A file the machine has in its /tmp.
        let machines = Path::new("/tmp").join(format!("{token}-machine"));
        std::fs::write(&machines, "the machine's").unwrap();
        std::fs::set_permissions(&machines, std::fs::Permissions::from_mode(0o644)).unwrap();

        // Chat A leaves its files and waits; the machine and chat B look for them meanwhile.
        let mut a = Killed(
            lab.confined(
                Plan::Namespaces,
                &[],
                &python(
                    LEAVE_IN_TMP,
                    &[&token, ready.to_str().unwrap(), stop.to_str().unwrap()],
                ),
            )
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(lab.demo.root.join("chat-a.stderr")).unwrap())
            .spawn()
            .unwrap(),
        );
        assert!(
            wait_until(Duration::from_secs(30), || ready.exists()),
            "{}: chat A never got ready: {}",
            lab.who(),
            read(lab.demo.root.join("chat-a.stderr").to_str().unwrap())
        );
        for p in &places {
            if p.exists() {
                failures.push(format!(
                    "{}: chat A's {} is in the machine's",
                    lab.who(),
                    p.display()
                ));
            }
        }
        let found = lab.demo.runtime.join("found");
        let mut look: Vec<String> = vec!["4".into(), found.display().to_string()];
        look.extend(places.iter().map(|p| p.display().to_string()));
        look.push(machines.display().to_string());
        let look: Vec<&str> = look.iter().map(String::as_str).collect();
        let out = run(lab.confined(Plan::Namespaces, &[], &python(LOOK_AND_FILL, &look)));
        let seen = std::fs::read_to_string(&found).unwrap_or_default();
        if !out.status.success() || !seen.is_empty() {
            failures.push(format!(
                "{}: chat B saw {seen:?} (chat A's files or the machine's)\n{}",
                lab.who(),
                text(&out)
            ));
        }
        std::fs::write(&stop, "").unwrap();
        let _ = a.0.wait();
        let _ = std::fs::remove_file(&machines);

        // Bounded: 16M into an 8M /tmp, /var/tmp and /dev/shm each end with ENOSPC.
        let out = run(lab.confined(
            Plan::Namespaces,
            &[],
            &python(LOOK_AND_FILL, &["16", found.to_str().unwrap()]),
        ));
        let said = String::from_utf8_lossy(&out.stdout);
        for d in ["/tmp", "/var/tmp", "/dev/shm"] {
            if !said.contains(&format!("{d} errno {}", libc::ENOSPC)) {
                failures.push(format!(
                    "{}: 16M went into an 8M {d}\n{}",
                    lab.who(),
                    text(&out)
                ));
            }
        }
    }
    no_failures(test, failures);
}

/// A program installed in the machine's /tmp (a checkout or an install there) still runs in a
/// chat whose /tmp is its own: the entry of the machine's /tmp that holds it is brought back,
/// and only that one. The second path: the program itself, run from there, reads another entry
/// of the machine's /tmp (a name beside its own tree, and one inside a link its tree holds) and
/// finds nothing. The control: unconfined, the same program reads both.
#[test]
fn a_program_in_the_machines_tmp_runs_and_sees_only_its_own_tree_there() {
    let test = "a_program_in_the_machines_tmp_runs_and_sees_only_its_own_tree_there";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let token = format!(
            "cli-sandbox-prog-{}-{}",
            std::process::id(),
            lab.who().len()
        );
        let tree = Path::new("/tmp").join(format!("{token}-tree"));
        let other = Path::new("/tmp").join(format!("{token}-other"));
        std::fs::create_dir_all(tree.join("bin")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("secret"), "the machine's\n").unwrap();
        // A link inside the program's tree to the other entry: followed inside the chat, it
        // leads to the chat's own /tmp, where that name is not.
        std::os::unix::fs::symlink(&other, tree.join("link")).unwrap();
        let found = lab.demo.runtime.join(format!("{token}-found"));
        let program = tree.join("bin/prog");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\necho ran > '{f}'\ncat '{o}/secret' >> '{f}' 2>/dev/null\ncat '{t}/link/secret' >> '{f}' 2>/dev/null\nexit 0\n",
                f = found.display(),
                o = other.display(),
                t = tree.display()
            ),
        )
        .unwrap();
        for p in [&tree, &tree.join("bin"), &other] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(other.join("secret"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        if let Some(user) = &lab.user {
            user.own(&lab.demo.runtime);
        }
        let program_arg = program.to_str().unwrap();
        // The control.
        let _ = std::fs::remove_file(&found);
        let out = run(lab.unconfined(&[program_arg]));
        let seen = std::fs::read_to_string(&found).unwrap_or_default();
        assert_eq!(
            seen.matches("the machine's").count(),
            2,
            "control {}: {seen:?} {}",
            lab.who(),
            text(&out)
        );
        let _ = std::fs::remove_file(&found);
        let out = run(lab.confined(Plan::Namespaces, &[], &[program_arg]));
        let seen = std::fs::read_to_string(&found).unwrap_or_default();
        if !seen.starts_with("ran") {
            failures.push(format!(
                "{}: the program in the machine's /tmp did not run: {seen:?}\n{}",
                lab.who(),
                text(&out)
            ));
        } else if seen.contains("the machine's") {
            failures.push(format!(
                "{}: the program read another entry of the machine's /tmp: {seen:?}",
                lab.who()
            ));
        }
        let _ = std::fs::remove_dir_all(&tree);
        let _ = std::fs::remove_dir_all(&other);
    }
    no_failures(test, failures);
}

#[test]
fn a_root_chat_cannot_change_the_machines_tmp() {
    let test = "a_root_chat_cannot_change_the_machines_tmp";
    if !confinement_available(test) || !root_or_skip(test, "the launcher is root in this case") {
        return;
    }
    let lab = Lab::new(None);
    // The control on a place of the lab's own shaped like /tmp (the machine's is not changed
    // by a test that works).
    let place = tempfile::tempdir().unwrap();
    std::fs::set_permissions(place.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let place = std::fs::canonicalize(place.path()).unwrap();
    let before = std::fs::metadata(&place).unwrap();
    let out = run(lab.unconfined(&python(METADATA, &[place.to_str().unwrap()])));
    assert_eq!(
        metadata_changed(&place, &before).len(),
        3,
        "control: {}",
        text(&out)
    );
    let mut failures = Vec::new();
    let targets: Vec<PathBuf> = ["/tmp", "/var/tmp"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .collect();
    let before: Vec<_> = targets
        .iter()
        .map(|p| std::fs::metadata(p).unwrap())
        .collect();
    let args: Vec<&str> = targets.iter().map(|p| p.to_str().unwrap()).collect();
    let out = run(lab.confined(Plan::Namespaces, &[], &python(METADATA, &args)));
    for (path, meta) in targets.iter().zip(&before) {
        let changed = metadata_changed(path, meta);
        if !changed.is_empty() {
            failures.push(format!(
                "{}: {changed:?} changed by a root chat\n{}",
                path.display(),
                text(&out)
            ));
            put_back(path, meta);
        }
    }
    no_failures(test, failures);
}

#[test]
fn the_plans_say_what_holds_of_the_limits() {
    let lab = Lab::with_config(None, "\n[limits]\nprocesses = 50\ntmp = \"64M\"\n");
    let plan = lab.compile(Plan::Namespaces, Some(7), &[]);
    let of = |p: Promise| {
        plan.guarantees
            .iter()
            .find(|g| g.is(p))
            .unwrap_or_else(|| panic!("no {} guarantee", p.id()))
            .enforcement
            .clone()
    };
    assert_eq!(of(Promise::Processes), Enforcement::Fully);
    assert_eq!(of(Promise::PrivateTmp), Enforcement::Fully);
    assert!(matches!(of(Promise::Memory), Enforcement::Not(_)));
    let ns = plan.namespaces.as_ref().unwrap();
    let tmp = ns.private_tmp.as_ref().unwrap();
    assert_eq!(tmp.size, 64 << 20);
    assert_eq!(plan.limits.processes, 50);
    // The lab lies in the machine's /tmp: its home is bound back into the chat's own.
    let home = std::fs::canonicalize(&lab.demo.home).unwrap();
    if home.starts_with("/tmp") {
        assert!(
            tmp.places[0].bind_back.iter().any(|b| home.starts_with(b)),
            "{:?}",
            tmp.places
        );
    }
    // The fallback holds none of them and refuses a configured one.
    let ctx = lab.context();
    let policy = ctx.policy(&lab.demo.chat, &[]).unwrap();
    let err = sandbox_linux::compile(
        &policy,
        Kernel {
            landlock_abi: 7,
            namespaces: false,
            fuse: false,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("[limits] processes"), "{err}");
}
