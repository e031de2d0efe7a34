//! `harden = true` under the real kernel: the persistence paths of the home (shell startup
//! files, autostart entries, systemd user units, git's and ssh's configuration) cannot be written,
//! replaced or removed from inside, while the rest of the home stays open. Both Linux plans are
//! run: the namespace plan through `cli-sandbox step`, the Landlock-only fallback through
//! `cli-sandbox exec` with a plan compiled for a kernel without namespaces. Verdicts come from the
//! disk and are compared with `Policy::decide`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cli_sandbox_tests::{cli_sandbox, confinement_available};
use launch::Context;
use launch::demo::Demo;
use launch::linux::plan::{Enforcement, Kernel, LinuxPlan};
use sandbox_core::{Op, Policy};

struct Fixture {
    _dir: tempfile::TempDir,
    demo: Demo,
}

const BASHRC: &str = "# the person's own .bashrc\nalias ll='ls -l'\n";
const PROFILE: &str = "# the person's own .profile\n";

/// The demo layout with a few startup files in the home, and `harden` on or off.
fn fixture(harden: bool) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let demo = Demo::create(dir.path()).expect("demo layout");
    std::fs::write(demo.home.join(".bashrc"), BASHRC).unwrap();
    std::fs::write(demo.home.join(".profile"), PROFILE).unwrap();
    std::fs::write(demo.home.join(".bash_logout"), "clear\n").unwrap();
    std::fs::create_dir_all(demo.home.join(".config/some-app")).unwrap();
    if harden {
        // The demo's configuration ends inside its [policy] table.
        let mut config = std::fs::read_to_string(&demo.config).unwrap();
        config.push_str("harden = true\n");
        std::fs::write(&demo.config, config).unwrap();
    }
    Fixture { _dir: dir, demo }
}

fn policy(demo: &Demo) -> Policy {
    Context::load(&demo.settings())
        .expect("context")
        .policy(&demo.chat, &[])
        .expect("policy")
}

fn base_command(program: &Path, demo: &Demo) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("HOME", &demo.home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("AGENTWORKS_STATE_ROOT")
        .env_remove("AGENTWORKS_WORKSPACE_DOCS")
        .stdin(Stdio::null());
    cmd
}

fn step(demo: &Demo, script: &str) -> Output {
    base_command(&cli_sandbox(), demo)
        .arg("--config")
        .arg(&demo.config)
        .arg("step")
        .args(["--chat", &demo.chat, "--", "/bin/sh", "-c", script])
        .output()
        .expect("run cli-sandbox step")
}

/// Runs `script` under a plan compiled for a kernel without namespaces (the Landlock-only
/// fallback), through the real helper.
fn exec_frozen(demo: &Demo, script: &str) -> (Output, LinuxPlan) {
    let policy = policy(demo);
    let kernel = Kernel {
        namespaces: false,
        ..launch::linux::this_kernel()
    };
    let plan = launch::linux::compile(&policy, kernel).expect("plan");
    assert!(plan.namespaces.is_none());
    let file = demo.root.join("frozen-plan.json");
    std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let out = base_command(&cli_sandbox(), demo)
        .arg("exec")
        .arg("--policy")
        .arg(&file)
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .expect("run cli-sandbox exec");
    (out, plan)
}

fn q(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// One attempt: what it does, the operation and path `decide()` is asked about, and how its
/// success shows on the disk.
struct Attempt {
    name: &'static str,
    op: Op,
    path: PathBuf,
    script: String,
    succeeded: Box<dyn Fn() -> bool>,
}

fn attempts(demo: &Demo) -> Vec<Attempt> {
    let home = demo.home.clone();
    let bashrc = home.join(".bashrc");
    let profile = home.join(".profile");
    let logout = home.join(".bash_logout");
    let autostart = home.join(".config/autostart");
    let unit = home.join(".config/systemd/user/evil.service");
    let config = home.join(".config");
    let gitconfig = home.join(".gitconfig");
    let keys = home.join(".ssh/authorized_keys");
    let notes = home.join("notes.txt");
    let app = home.join(".config/some-app/settings.json");
    let copy = demo.runtime.join("bashrc-copy");
    let holds = |path: PathBuf, text: &'static str| -> Box<dyn Fn() -> bool> {
        Box::new(move || std::fs::read_to_string(&path).is_ok_and(|content| content.contains(text)))
    };
    let exists = |path: PathBuf| -> Box<dyn Fn() -> bool> {
        Box::new(move || path.symlink_metadata().is_ok())
    };
    vec![
        Attempt {
            name: "append to ~/.bashrc",
            op: Op::Write,
            path: bashrc.clone(),
            script: format!("echo injected >> {}", q(&bashrc)),
            succeeded: holds(bashrc.clone(), "injected"),
        },
        Attempt {
            name: "replace ~/.profile by renaming a file over it",
            op: Op::Move,
            path: profile.clone(),
            script: format!(
                "printf injected > {n} && mv -f {n} {p}",
                n = q(&home.join("new-profile")),
                p = q(&profile)
            ),
            succeeded: holds(profile.clone(), "injected"),
        },
        Attempt {
            name: "remove ~/.bash_logout",
            op: Op::Move,
            path: logout.clone(),
            script: format!("rm -f {}", q(&logout)),
            succeeded: Box::new(move || !logout.exists()),
        },
        Attempt {
            name: "add an autostart entry",
            op: Op::Write,
            path: autostart.join("evil.desktop"),
            script: format!(
                "mkdir -p {a} && printf injected > {a}/evil.desktop",
                a = q(&autostart)
            ),
            succeeded: exists(autostart.join("evil.desktop")),
        },
        Attempt {
            name: "add a systemd user unit",
            op: Op::Write,
            path: unit.clone(),
            script: format!(
                "mkdir -p {d} && printf injected > {u}",
                d = q(unit.parent().unwrap()),
                u = q(&unit)
            ),
            succeeded: exists(unit.clone()),
        },
        Attempt {
            name: "rename ~/.config away (to put another in its place)",
            op: Op::Move,
            path: config.clone(),
            script: format!(
                "mv {c} {m} && mv {m} {c} && printf moved > {k}",
                c = q(&config),
                m = q(&home.join(".config.moved")),
                k = q(&demo.runtime.join("config-moved"))
            ),
            succeeded: exists(demo.runtime.join("config-moved")),
        },
        Attempt {
            name: "git config --global (writes ~/.gitconfig)",
            op: Op::Write,
            path: gitconfig.clone(),
            script: "git config --global core.fsmonitor injected".into(),
            succeeded: holds(gitconfig, "injected"),
        },
        Attempt {
            name: "add an ssh key to authorized_keys",
            op: Op::Write,
            path: keys.clone(),
            script: format!(
                "mkdir -p {d} && printf injected >> {k}",
                d = q(keys.parent().unwrap()),
                k = q(&keys)
            ),
            succeeded: holds(keys, "injected"),
        },
        Attempt {
            name: "read ~/.bashrc",
            op: Op::Read,
            path: home.join(".bashrc"),
            script: format!("cat {} > {}", q(&home.join(".bashrc")), q(&copy)),
            succeeded: holds(copy, "alias ll"),
        },
        Attempt {
            name: "write a personal file in the home",
            op: Op::Write,
            path: notes.clone(),
            script: format!("echo injected >> {}", q(&notes)),
            succeeded: holds(notes, "injected"),
        },
        Attempt {
            name: "write another app's settings in ~/.config",
            op: Op::Write,
            path: app.clone(),
            script: format!("printf injected > {}", q(&app)),
            succeeded: holds(app, "injected"),
        },
    ]
}

/// Every attempt in turn, none stopping the others; the script itself succeeds.
fn script_of(attempts: &[Attempt]) -> String {
    let mut script: String = attempts
        .iter()
        .map(|a| format!("( {} ) 2>/dev/null\n", a.script))
        .collect();
    script.push_str("true\n");
    script
}

/// Every attempt's verdict from the disk against `decide()`; the table on failure.
fn check(policy: &Policy, attempts: &[Attempt], known_gaps: &[&str]) {
    let mut report = String::new();
    let mut wrong = 0;
    for a in attempts {
        let expected = policy.decide(a.op, &a.path);
        let actual = (a.succeeded)();
        let gap = known_gaps.contains(&a.name);
        let ok = actual == expected.allowed || gap;
        wrong += usize::from(!ok);
        report.push_str(&format!(
            "{} {:<55} decide: {} ({}), kernel: {}{}\n",
            if ok { "  " } else { "!!" },
            a.name,
            if expected.allowed {
                "allowed"
            } else {
                "refused"
            },
            expected.rule.name(),
            if actual { "allowed" } else { "refused" },
            if gap { " [known gap]" } else { "" }
        ));
    }
    eprintln!("{report}");
    assert_eq!(wrong, 0, "the kernel and decide() disagree:\n{report}");
}

#[test]
fn with_harden_the_persistence_paths_are_closed_in_the_namespace_plan() {
    if !confinement_available("with_harden_the_persistence_paths_are_closed_in_the_namespace_plan")
    {
        return;
    }
    let f = fixture(true);
    let demo = &f.demo;
    let policy = policy(demo);
    assert!(!policy.hardened().is_empty(), "harden = true was not read");
    let attempts = attempts(demo);
    let out = step(demo, &script_of(&attempts));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Files that do not exist at launch are the namespace plan's gap, reported by the plan (see
    // the next test); everything else is closed as decide() says.
    check(
        &policy,
        &attempts,
        &[
            "git config --global (writes ~/.gitconfig)",
            "add an ssh key to authorized_keys",
        ],
    );
    // Every refusal above was a refusal: the person's files are as they were.
    assert_eq!(
        std::fs::read_to_string(demo.home.join(".bashrc")).unwrap(),
        BASHRC
    );
    assert_eq!(
        std::fs::read_to_string(demo.home.join(".profile")).unwrap(),
        PROFILE
    );
    // The missing persistence folders were created empty and private, to be bound read-only.
    let autostart = demo.home.join(".config/autostart");
    assert_eq!(std::fs::read_dir(&autostart).unwrap().count(), 0);
    assert_eq!(
        std::fs::metadata(&autostart).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // No file whose empty form means something else was created in the home to close a missing
    // one: that would change what a shell reads (an empty ~/.bash_profile hides ~/.profile from
    // bash). The others were made empty, private and owned like their folder.
    for missing in [
        ".bash_profile",
        ".bash_login",
        ".zshrc",
        ".zshenv",
        ".ssh/rc",
    ] {
        assert!(
            !demo.home.join(missing).exists(),
            "{missing} was created by the launcher"
        );
    }
}

#[test]
fn with_harden_a_missing_startup_file_is_the_gap_the_namespace_plan_reports() {
    if !confinement_available(
        "with_harden_a_missing_startup_file_is_the_gap_the_namespace_plan_reports",
    ) {
        return;
    }
    let f = fixture(true);
    let demo = &f.demo;
    let policy = policy(demo);
    let plan = launch::linux::compile(&policy, launch::linux::this_kernel()).unwrap();
    let guarantee = plan
        .guarantees
        .iter()
        .find(|g| g.what.starts_with("persistence paths"))
        .expect("the plan reports the persistence paths");
    let Enforcement::Partly(gap) = &guarantee.enforcement else {
        panic!("a missing ~/.zshrc is a gap, said plainly: {guarantee:?}");
    };
    for missing in ["~/.zshrc", "~/.bash_profile", "~/.ssh/rc"] {
        assert!(gap.contains(missing), "{missing} is not named: {gap}");
    }
    assert!(!gap.contains("~/.bashrc"), "~/.bashrc exists: {gap}");
    // A missing file whose empty form means its absence is made empty and closed: no gap.
    for closed in [
        "~/.gitconfig",
        "~/.ssh/authorized_keys",
        "~/.tmux.conf",
        "~/.profile",
    ] {
        assert!(!gap.contains(closed), "{closed} is named: {gap}");
    }
    let tmux = demo.home.join(".tmux.conf");
    step(demo, &format!("printf 'run-shell x' > {}", q(&tmux)));
    assert_eq!(
        std::fs::read_to_string(&tmux).unwrap(),
        "",
        "~/.tmux.conf was written"
    );
    // And the gap is real: the file can be created. (The fallback below closes it, at the cost
    // of freezing the home.)
    let zshrc = demo.home.join(".zshrc");
    step(demo, &format!("printf created > {}", q(&zshrc)));
    assert_eq!(std::fs::read_to_string(&zshrc).unwrap(), "created");
}

#[test]
fn without_harden_the_same_attempts_succeed() {
    // Proves the evidence can see a success: the home is open by the owner's decision.
    if !confinement_available("without_harden_the_same_attempts_succeed") {
        return;
    }
    let f = fixture(false);
    let demo = &f.demo;
    let policy = policy(demo);
    assert!(policy.hardened().is_empty());
    let attempts = attempts(demo);
    let out = step(demo, &script_of(&attempts));
    assert!(out.status.success());
    check(&policy, &attempts, &[]);
    for a in &attempts {
        assert!((a.succeeded)(), "{} did not succeed unhardened", a.name);
    }
}

#[test]
fn with_harden_the_landlock_only_fallback_closes_them_too() {
    if !confinement_available("with_harden_the_landlock_only_fallback_closes_them_too") {
        return;
    }
    let f = fixture(true);
    let demo = &f.demo;
    let policy = policy(demo);
    let mut attempts = attempts(demo);
    // The fallback freezes the home: a missing startup file cannot be created either.
    let zshrc = demo.home.join(".zshrc");
    attempts.push(Attempt {
        name: "create a missing ~/.zshrc",
        op: Op::Write,
        path: zshrc.clone(),
        script: format!("printf injected > {}", q(&zshrc)),
        succeeded: Box::new(move || zshrc.exists()),
    });
    let (out, plan) = exec_frozen(demo, &script_of(&attempts));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        plan.guarantees
            .iter()
            .any(|g| g.what.starts_with("persistence paths")
                && matches!(&g.enforcement, Enforcement::Partly(cost) if cost.contains("directly in"))),
        "the fallback says what it costs: {:#?}",
        plan.guarantees
    );
    // git config --global cannot write ~/.gitconfig (refused, as decide() says) and the rename
    // of ~/.config is refused by the frozen home.
    check(&policy, &attempts, &[]);
    assert_eq!(
        std::fs::read_to_string(demo.home.join(".bashrc")).unwrap(),
        BASHRC
    );
    assert!(!demo.home.join(".config/autostart").exists());
}
