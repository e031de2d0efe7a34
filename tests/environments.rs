//! The environment matrix: `cli-sandbox` where providers run it, each place made by the test in a
//! process tree of its own (`cli_sandbox_tests::environments`), plus our own `step` nested in a
//! step. In each, as root and (where the place has one) as an ordinary user:
//!
//! - `doctor --json` and `plan --json` give the same decision (one decision of the plan);
//! - a step runs confined (the granted workflow written, another workflow refused, both read
//!   back from the disk) or, where nothing confines, is refused with a message naming the
//!   missing feature, status 125;
//! - `contract` passes (where nothing confines: its rows say bridge-only or "cannot run here").
//!
//! Unconfined controls: the same writes without the sandbox reach both workflows, and the
//! environment really took away what it stands for (the namespaces, or Landlock).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Command, Output};

use cli_sandbox_tests::environments::Environment;
use cli_sandbox_tests::users::TestUser;
use cli_sandbox_tests::{cli_sandbox, confinement_available, say};
use launch::demo::Demo;
use serde_json::Value;

/// The places each environment is made for: root, and the ordinary user where it has one.
fn users(env: Environment, test: &str) -> Vec<Option<TestUser>> {
    let mut users = vec![None];
    if matches!(
        env,
        Environment::DockerDefault
            | Environment::NoLandlock
            | Environment::AppArmorRestricted
            | Environment::RootlessContainerRoot
            | Environment::NestedStep
    ) && let Some(user) = TestUser::get(test)
    {
        users.push(Some(user));
    }
    users
}

fn is_root() -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

fn run(env: Environment, user: Option<&TestUser>, demo: &Demo, args: &[&str]) -> Output {
    let mut cmd = env.command(user, cli_sandbox());
    cmd.arg("--config")
        .arg(&demo.config)
        .arg("--state-root")
        .arg(&demo.state_root)
        .arg("--workspace-docs")
        .arg(&demo.workspace_docs)
        .args(args)
        .env("HOME", &demo.home)
        .current_dir(&demo.root);
    cmd.output().expect("run cli-sandbox in the environment")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(out)))
}

/// An existing file of each workflow, to append to (the Landlock-only plan creates nothing
/// directly at a grant's top, so the benign write appends).
fn file_in(demo: &Demo, folder: &Path) -> std::path::PathBuf {
    demo.secrets
        .keys()
        .find(|p| p.parent() == Some(folder))
        .unwrap_or_else(|| panic!("the demo has a file in {}", folder.display()))
        .clone()
}

/// A demo layout in the temporary folder; nested in our own step, in the outer chat's home:
/// the outer chat's /tmp is its own (issue 27), and a root chat writes only its home, its
/// grants and its own /tmp.
fn layout(env: Environment, user: Option<&TestUser>) -> (tempfile::TempDir, Demo) {
    let mut builder = tempfile::Builder::new();
    builder.prefix("cli-sandbox-env-");
    let tmp = if env == Environment::NestedStep {
        builder
            .tempdir_in(cli_sandbox_tests::environments::outer_state_root(user).join("home"))
            .unwrap()
    } else {
        builder.tempdir().unwrap()
    };
    let demo = Demo::create(tmp.path()).unwrap();
    if let Some(user) = user {
        user.own(tmp.path());
    }
    (tmp, demo)
}

fn check(env: Environment, user: Option<&TestUser>) {
    let who = if user.is_some() {
        "an ordinary user"
    } else {
        "root"
    };
    say(&format!("== {} as {who}", env.name()));
    let (_tmp, demo) = layout(env, user);

    // One decision: doctor's and plan's.
    let doctor = run(env, user, &demo, &["doctor", "--json"]);
    assert!(doctor.status.success(), "doctor: {}", text(&doctor));
    let doctor = json(&doctor);
    let chat = ["--chat", demo.chat.as_str()];
    let plan = run(
        env,
        user,
        &demo,
        &[&["plan", "--json", "--cli", "claude"][..], &chat].concat(),
    );
    if env.has_landlock() {
        assert!(plan.status.success(), "plan: {}", text(&plan));
        let plan = json(&plan);
        assert_eq!(
            plan["decision"]["backend"],
            doctor["backend"],
            "{}: plan and doctor disagree",
            env.name()
        );
        assert_eq!(
            doctor["backend"]["namespaces"],
            Value::Bool(false),
            "{}: the environment takes the namespaces away, yet the namespace plan was chosen: {doctor}",
            env.name()
        );
        let why = doctor["facts"]["user_namespaces_error"]
            .as_str()
            .unwrap_or("");
        assert!(!why.is_empty(), "the plan says why: {doctor}");
        say(&format!("   Landlock-only plan, because: {why}"));
    } else {
        assert_eq!(doctor["backend"]["backend"], "none", "{doctor}");
        assert_eq!(
            plan.status.code(),
            Some(125),
            "Full CLI refused: {}",
            text(&plan)
        );
        let said = String::from_utf8_lossy(&plan.stderr);
        assert!(
            said.contains("Landlock") && said.contains("lsm="),
            "the refusal names the missing feature and the remedy: {said}"
        );
        let bridge_only = |cli: &str, shape: &str, extra: &[&str]| {
            let args = [
                &[
                    "plan",
                    "--json",
                    "--cli",
                    cli,
                    "--mode",
                    "bridge-only",
                    "--shape",
                    shape,
                ][..],
                &chat,
                &["--"],
                extra,
            ]
            .concat();
            run(env, user, &demo, &args)
        };
        let bridge = bridge_only("claude", "structured", &[]);
        assert!(
            bridge.status.success(),
            "bridge-only plan: {}",
            text(&bridge)
        );
        assert_eq!(json(&bridge)["decision"]["backend"], doctor["backend"]);
        // No shell by any path: no pane (a `!` line typed there runs one), and no extra
        // argument that gives the CLI its tools back.
        for (cli, shape, extra, said) in [
            ("claude", "tmux", &[][..], "`!`"),
            ("pi", "tmux", &[][..], "`!`"),
            (
                "claude",
                "structured",
                &["--tools=Bash"][..],
                "--tools=Bash",
            ),
            (
                "claude",
                "structured",
                &["--allowedTools=Bash"][..],
                "--allowedTools=Bash",
            ),
            ("pi", "structured", &["--tools", "bash"][..], "`--tools`"),
        ] {
            let out = bridge_only(cli, shape, extra);
            assert_eq!(
                out.status.code(),
                Some(125),
                "{cli} {shape} {extra:?}: {}",
                text(&out)
            );
            let words = String::from_utf8_lossy(&out.stderr);
            assert!(words.contains(said), "{cli} {shape} {extra:?}: {words}");
        }
    }

    // A step: the granted workflow written, another workflow refused, both read from the disk.
    let granted = file_in(&demo, &demo.granted);
    let other = file_in(&demo, &demo.other_workflow);
    let token = format!("env-{}", std::process::id());
    let script = format!(
        "printf '%s' {token} >> '{}'; printf '%s' {token} >> '{}'; exit 0",
        granted.display(),
        other.display()
    );
    let grant = demo.grant_arg();
    let step = run(
        env,
        user,
        &demo,
        &[
            &["step", "--grant", grant.as_str()][..],
            &chat,
            &["--", "/bin/sh", "-c", &script],
        ]
        .concat(),
    );
    let wrote = |path: &Path| std::fs::read_to_string(path).unwrap().contains(&token);
    if env.has_landlock() {
        assert!(step.status.success(), "step: {}", text(&step));
        assert!(
            wrote(&granted),
            "the benign write reached the granted workflow"
        );
        assert!(
            !wrote(&other),
            "{}: another workflow was written",
            env.name()
        );
    } else {
        assert_eq!(
            step.status.code(),
            Some(125),
            "step refused: {}",
            text(&step)
        );
        assert!(
            String::from_utf8_lossy(&step.stderr).contains("Landlock"),
            "{}",
            text(&step)
        );
        assert!(!wrote(&granted) && !wrote(&other), "nothing ran");
    }

    if user.is_none() && env.has_landlock() && env != Environment::NestedStep {
        root_owned_file_keeps_its_metadata(env, &demo);
    }

    // The contract, on a demo layout of its own.
    let contract = run(
        env,
        user,
        &demo,
        &["contract", "--json", "--cli", "claude,codex,pi"],
    );
    let report: Value = serde_json::from_slice(&contract.stdout).unwrap_or(Value::Null);
    assert_eq!(
        contract.status.code(),
        Some(0),
        "{}: the contract fails: errors {}\n{}",
        env.name(),
        report["errors"],
        text(&contract)
    );
    if !env.has_landlock() {
        let rows = report["rows"].as_array().expect("rows");
        for cli in ["claude", "codex", "pi"] {
            assert!(
                rows.iter().any(|r| r["cli"] == cli),
                "{cli} has a row: {report}"
            );
        }
        assert!(
            rows.iter()
                .any(|r| r["cli"] == "codex" && r["action"] == "cannot-run-here"),
            "codex, which has no bridge-only mode, cannot run here: {report}"
        );
    }
}

/// A root chat in the Landlock-only plan cannot change the mode, owner or times of a root-owned
/// file outside its writable places (a stand-in for `/etc/passwd` the test makes in `/var/lib`;
/// no file of the machine is touched). The control: the same commands in the same environment
/// without the sandbox change them.
fn root_owned_file_keeps_its_metadata(env: Environment, demo: &Demo) {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::Builder::new()
        .prefix("cli-sandbox-env-")
        .tempdir_in("/var/lib")
        .unwrap();
    let file = dir.path().join("passwd-stand-in");
    std::fs::write(&file, "root:x:0:0::/root:/bin/sh\n").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&file).unwrap();
    let script = format!(
        "chmod 0666 '{f}'; chown 1:1 '{f}'; touch -d 2001-01-01 '{f}'; exit 0",
        f = file.display()
    );
    let chat = ["--chat", demo.chat.as_str()];
    let step = run(
        env,
        None,
        demo,
        &[&["step"][..], &chat, &["--", "/bin/sh", "-c", &script]].concat(),
    );
    assert!(step.status.success(), "step: {}", text(&step));
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (after.mode() & 0o7777, after.uid(), after.mtime()),
        (0o644, 0, before.mtime()),
        "{}: a root chat changed a root-owned file's metadata",
        env.name()
    );
    // The control: unconfined, the same root changes all three.
    let mut control = env.command(None, "/bin/sh");
    control.args(["-c", &script]);
    assert!(control.status().unwrap().success());
    let changed = std::fs::metadata(&file).unwrap();
    assert!(
        changed.mode() & 0o7777 == 0o666 && changed.mtime() != before.mtime(),
        "{}: the control could not change the file ({:o})",
        env.name(),
        changed.mode()
    );
}

/// The unconfined control: without the sandbox the same script writes both workflows, and the
/// environment took away what it stands for.
fn control(env: Environment) {
    let (_tmp, demo) = layout(env, None);
    let other = file_in(&demo, &demo.other_workflow);
    // Read back inside: gVisor's `runsc do` keeps its writes in an overlay of its own.
    let mut cmd = env.command(None, "/bin/sh");
    cmd.args([
        "-c",
        &format!(
            "printf control >> '{f}' && grep -q control '{f}'",
            f = other.display()
        ),
    ]);
    assert!(
        cmd.status().unwrap().success(),
        "{}: the control could not write another workflow",
        env.name()
    );
    // What the environment takes away, tried without cli-sandbox.
    let probe = match env {
        Environment::NoLandlock | Environment::GVisor => {
            "python3 -c 'import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); sys.exit(0 if l.syscall(444, None, 0, 1) < 0 else 1)'"
        }
        Environment::NoCapabilities => {
            "grep -q '^CapBnd:[[:space:]]*0000000000000000$' /proc/self/status"
        }
        Environment::RootlessContainerRoot => {
            "[ \"$(awk '{print $1, $3}' /proc/self/uid_map)\" = '0 1' ]"
        }
        Environment::UserNamespacesForbidden => {
            "[ \"$(cat /proc/sys/user/max_user_namespaces)\" = 0 ] && ! unshare --user true 2>/dev/null"
        }
        Environment::DockerDefault | Environment::AppArmorRestricted | Environment::NestedStep => {
            "! unshare --user --map-root-user --mount true 2>/dev/null"
        }
    };
    let mut cmd = env.command(None, "/bin/sh");
    cmd.args(["-c", probe]);
    assert!(
        cmd.status().unwrap().success(),
        "{}: the environment does not take away what it stands for",
        env.name()
    );
}

fn matrix(env: Environment) {
    let test = env.name();
    if !confinement_available(test) {
        return;
    }
    if !is_root() {
        say(&format!(
            "!!! {test}: skipped: the environments are made by root"
        ));
        return;
    }
    if env == Environment::GVisor && Command::new("runsc").arg("--version").output().is_err() {
        // Installed by `.ci/run` (Debian's `runsc`); elsewhere a skip that says so.
        cli_sandbox_tests::skip(
            test,
            "runsc (gVisor) is not installed: apt-get install runsc",
            cli_sandbox_tests::REQUIRE_LANDLOCK,
        );
        return;
    }
    control(env);
    for user in users(env, test) {
        check(env, user.as_ref());
    }
}

#[test]
fn in_a_stand_in_for_dockers_default_profile() {
    matrix(Environment::DockerDefault);
}

#[test]
fn in_a_stand_in_for_a_kernel_without_landlock() {
    matrix(Environment::NoLandlock);
}

#[test]
fn as_root_without_capabilities() {
    matrix(Environment::NoCapabilities);
}

#[test]
fn with_user_namespaces_forbidden_by_a_sysctl_of_its_own() {
    matrix(Environment::UserNamespacesForbidden);
}

#[test]
fn as_root_of_a_rootless_container() {
    matrix(Environment::RootlessContainerRoot);
}

#[test]
fn in_a_stand_in_for_ubuntus_apparmor_restriction() {
    matrix(Environment::AppArmorRestricted);
}

#[test]
fn nested_in_our_own_step() {
    matrix(Environment::NestedStep);
}

#[test]
fn in_gvisor() {
    matrix(Environment::GVisor);
}
