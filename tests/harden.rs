//! `harden = true` under the real kernel: the persistence paths of the home (shell startup
//! files, autostart entries, systemd user units, git's and ssh's configuration) cannot be written,
//! replaced or removed from inside, while the rest of the home stays open. Both Linux plans are
//! run: the namespace plan through `cli-sandbox step`, the Landlock-only fallback through
//! `cli-sandbox exec` with a plan compiled for a kernel without namespaces. Verdicts come from the
//! disk and are compared with `Policy::decide`.
//!
//! Issue 25 (the second half of the file): a process outside plays the person and saves
//! persistence files by rename while the chat runs (`sed -i`, `git config --global`, an editor's
//! atomic save), then the chat writes them; the places a list missed, and the home's top as a
//! class, attacked one by one. Both plans, as root and as an ordinary user, each with its
//! unconfined control (or without `harden`), and the namespace plan's former construction (mounts
//! on the names alone) shown to fail where Landlock's rules on inodes hold.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{cli_sandbox, confinement_available};
use launch::Context;
use launch::demo::Demo;
use sandbox_core::{Op, Policy};
use sandbox_linux::plan::{Enforcement, FsRight, Kernel, LandlockRule, LinuxPlan};

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
    cli_sandbox_tests::launches::demo_env(&mut cmd, demo);
    cmd
}

fn step(demo: &Demo, script: &str) -> Output {
    cli_sandbox_tests::launches::step(None, demo, &[], ["/bin/sh", "-c", script])
        .output()
        .expect("run cli-sandbox step")
}

/// Runs `script` under a plan compiled for a kernel without namespaces (the Landlock-only
/// fallback), through the real helper.
fn exec_frozen(demo: &Demo, script: &str) -> (Output, LinuxPlan) {
    let policy = policy(demo);
    let kernel = Kernel {
        namespaces: false,
        ..cli_sandbox_tests::this_kernel()
    };
    let plan = sandbox_linux::compile(&policy, kernel).expect("plan");
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
    // Files that do not exist at launch are closed too: the home and ~/.ssh are frozen.
    check(&policy, &attempts, &[]);
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
fn with_harden_a_missing_startup_file_cannot_be_made_in_the_namespace_plan() {
    if !confinement_available(
        "with_harden_a_missing_startup_file_cannot_be_made_in_the_namespace_plan",
    ) {
        return;
    }
    let f = fixture(true);
    let demo = &f.demo;
    let policy = policy(demo);
    let plan = sandbox_linux::compile(&policy, cli_sandbox_tests::this_kernel()).unwrap();
    let guarantee = plan
        .guarantees
        .iter()
        .find(|g| g.what.starts_with("persistence paths"))
        .expect("the plan reports the persistence paths");
    // The home is frozen by Landlock: a missing start file is not a gap any more. What the plan
    // still names is the folders closed by a mount on their name (below ~/.config, ~/.local).
    let Enforcement::Partly(gap) = &guarantee.enforcement else {
        panic!("the bound folders are a gap, said plainly: {guarantee:?}");
    };
    for closed in ["~/.zshrc", "~/.bash_profile", "~/.ssh/rc", "~/.bashrc"] {
        assert!(!gap.contains(closed), "{closed} is named: {gap}");
    }
    assert!(gap.contains("~/.config/autostart"), "{gap}");
    assert!(guarantee.by.contains("frozen: ~"), "{}", guarantee.by);
    // Nothing was made to close a missing file: the freeze closes it.
    for missing in [".zshrc", ".bash_profile", ".tmux.conf", ".ssh/rc"] {
        assert!(!demo.home.join(missing).exists(), "{missing} was made");
    }
    for name in [".zshrc", ".tmux.conf", ".bash_profile"] {
        let path = demo.home.join(name);
        step(demo, &format!("printf 'run-shell x' > {}", q(&path)));
        assert!(!path.exists(), "{name} was created by the chat");
    }
    // Without harden the same file is made (the control).
    let open = fixture(false);
    let zshrc = open.demo.home.join(".zshrc");
    step(&open.demo, &format!("printf created > {}", q(&zshrc)));
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
        // `~/.config` holds places CLIs act on at start (Muse's settings, Cursor's under
        // `$XDG_CONFIG_HOME`): renaming it is refused in every chat by the settings rule, with
        // or without harden (`check` above held the kernel to `decide()` on it).
        if a.path.ends_with(".config") && a.op == Op::Move {
            assert!(!(a.succeeded)(), "{}: the settings rule", a.name);
            continue;
        }
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

// ---------------------------------------------------------------------------------------------
// Issue 25: the person saves a persistence file by rename during the chat, and the places a
// list missed. Both plans, as root and as an ordinary user, each with its unconfined control.

/// How the chat is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// User, mount, PID and IPC namespaces, Landlock, seccomp.
    Namespaces,
    /// Landlock and seccomp alone.
    Fallback,
    /// No sandbox at all: the control.
    Unconfined,
    /// The namespace plan as it was before issue 25: the persistence paths closed by read-only
    /// mounts on their names alone (Landlock's open rule on `/`). Evidence for the construction.
    MountsOnly,
}

impl Plan {
    const CONFINED: [Plan; 2] = [Plan::Namespaces, Plan::Fallback];
}

/// A demo layout in a folder every user can enter, owned by `user` when given, with `harden` on
/// or off, and a home as people have it.
struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

impl Lab {
    fn new(user: Option<&TestUser>, harden: bool) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
        if harden {
            let mut config = std::fs::read_to_string(&demo.config).unwrap();
            config.push_str("harden = true\n");
            std::fs::write(&demo.config, config).unwrap();
        }
        let h = &demo.home;
        std::fs::write(h.join(".bashrc"), BASHRC).unwrap();
        std::fs::write(h.join(".gitconfig"), "[user]\n\tname = Ann\n").unwrap();
        std::fs::write(h.join(".npmrc"), "fund=false\n").unwrap();
        std::fs::write(h.join(".claude.json"), "{}\n").unwrap();
        for folder in [
            ".config/git",
            ".config/some-app",
            ".ssh",
            ".cargo/registry",
            ".cargo/bin",
            ".aws/cli/cache",
            ".docker",
            ".local/bin",
            ".local/lib/python3.11/site-packages",
            ".vim",
            "work",
        ] {
            std::fs::create_dir_all(h.join(folder)).unwrap();
        }
        std::fs::write(h.join(".config/git/config"), "[core]\n").unwrap();
        std::fs::write(h.join(".ssh/config"), "Host *\n").unwrap();
        std::fs::write(h.join(".ssh/known_hosts"), "").unwrap();
        std::fs::write(h.join(".aws/config"), "[default]\n").unwrap();
        if let Some(user) = user {
            user.own(&demo.root);
        }
        Lab {
            _dir: dir,
            demo,
            user: user.cloned(),
        }
    }

    fn who(&self) -> &'static str {
        if self.user.is_some() {
            "as an ordinary user"
        } else {
            "as root"
        }
    }

    fn policy(&self) -> Policy {
        let mut ctx = Context::load(&self.demo.settings()).expect("context");
        ctx.privileged = self.user.is_none();
        ctx.policy(&self.demo.chat, &[]).expect("policy")
    }

    /// `sh -c script` confined by `plan` (or not at all), as the lab's user.
    fn command(&self, plan: Plan, script: &str) -> Command {
        let mut cmd = match plan {
            Plan::Unconfined => {
                let mut cmd = command_as(self.user.as_ref(), "/bin/sh");
                cmd.args(["-c", script]);
                cmd
            }
            Plan::Namespaces | Plan::Fallback | Plan::MountsOnly => {
                let policy = self.policy();
                let kernel = Kernel {
                    namespaces: plan != Plan::Fallback,
                    fuse: cli_sandbox_tests::fuse_for_every_user(),
                    ..cli_sandbox_tests::this_kernel()
                };
                let mut compiled = sandbox_linux::compile(&policy, kernel).expect("plan");
                if plan == Plan::MountsOnly {
                    let open: Vec<FsRight> = compiled
                        .landlock
                        .handled
                        .iter()
                        .copied()
                        .filter(|r| {
                            !matches!(
                                r,
                                FsRight::MakeChar | FsRight::MakeBlock | FsRight::ResolveUnix
                            )
                        })
                        .collect();
                    compiled.landlock.rules = vec![LandlockRule {
                        path: "/".into(),
                        rights: open,
                    }];
                }
                let file = self.demo.root.join(format!("plan-{plan:?}.json"));
                std::fs::write(&file, serde_json::to_vec(&compiled).unwrap()).unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
                std::fs::create_dir_all(&self.demo.runtime).unwrap();
                if let Some(user) = &self.user {
                    user.own(&self.demo.runtime);
                }
                let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
                cmd.arg("exec")
                    .arg("--policy")
                    .arg(&file)
                    .args(["--", "/bin/sh", "-c", script]);
                cmd
            }
        };
        cli_sandbox_tests::launches::demo_env(&mut cmd, &self.demo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(&self.demo.root)
            .stdin(Stdio::null());
        cmd
    }

    /// A command of the person's, outside every sandbox, as the lab's user.
    fn person(&self, script: &str) {
        let mut cmd = command_as(self.user.as_ref(), "/bin/sh");
        cmd.args(["-c", script])
            .env("HOME", &self.demo.home)
            .env_remove("XDG_CONFIG_HOME")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(&self.demo.root)
            .stdin(Stdio::null());
        let out = cmd.output().expect("run the person's command");
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The files the person saves by rename during the chat, and how: `sed -i`, `git config
/// --global`, an editor's write to a temporary file then rename over.
fn saves(home: &Path) -> Vec<(&'static str, PathBuf, String)> {
    let tmp_then_rename = |path: &Path, line: &str| {
        format!(
            "cp {p} {p}.swp && echo '{line}' >> {p}.swp && mv -f {p}.swp {p}",
            p = q(path)
        )
    };
    vec![
        (
            "sed -i ~/.bashrc",
            home.join(".bashrc"),
            format!(
                "sed -i 's/^alias ll=.*/alias ll=\"ls -la\" # person/' {}",
                q(&home.join(".bashrc"))
            ),
        ),
        (
            "git config --global",
            home.join(".gitconfig"),
            "git config --global user.email person@example.org".into(),
        ),
        (
            "an editor's save of ~/.npmrc (a temporary file renamed over it)",
            home.join(".npmrc"),
            tmp_then_rename(&home.join(".npmrc"), "# person"),
        ),
        (
            "an editor's save of ~/.ssh/config",
            home.join(".ssh/config"),
            tmp_then_rename(&home.join(".ssh/config"), "# person"),
        ),
        (
            "an editor's save of ~/.aws/config",
            home.join(".aws/config"),
            tmp_then_rename(&home.join(".aws/config"), "# person"),
        ),
        (
            "git config --file ~/.config/git/config (a file inside a bound folder)",
            home.join(".config/git/config"),
            format!(
                "git config --file {} user.email person@example.org",
                q(&home.join(".config/git/config"))
            ),
        ),
    ]
}

/// The chat waits until the person has saved (it says `ready` on stdout, then reads `go` on
/// stdin: no clock), then appends to each file. The person's saves come in between, outside.
fn chat_writes_after_the_persons_saves(lab: &Lab, plan: Plan) -> Vec<String> {
    chat_writes_after(lab, plan, saves(&lab.demo.home))
}

/// The chat writes each file after the person's `saves` (name, file, command) took, outside.
fn chat_writes_after(
    lab: &Lab,
    plan: Plan,
    saves: Vec<(&'static str, PathBuf, String)>,
) -> Vec<String> {
    let mut script = String::from("echo ready; read go\n");
    for (_, path, _) in &saves {
        script.push_str(&format!("echo '# chat' >> {} 2>/dev/null\n", q(path)));
    }
    script.push_str("echo done\n");
    let mut cmd = lab.command(plan, &script);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the chat");
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    if line.trim() != "ready" {
        let out = child.wait_with_output().unwrap();
        panic!(
            "{plan:?} {}: the chat did not start: {line}\n{}",
            lab.who(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The chat runs, confined: now the person saves, outside.
    for (_, _, save) in &saves {
        lab.person(save);
    }
    {
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, b"go\n").unwrap();
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        rest.contains("done"),
        "{plan:?} {}: the chat did not finish: {rest}\n{}",
        lab.who(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut written = Vec::new();
    for (name, path, _) in &saves {
        let content = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            content.contains("person"),
            "{plan:?} {}: the person's save ({name}) did not take: {content}",
            lab.who()
        );
        if content.contains("# chat") {
            written.push(name.to_string());
        }
    }
    written
}

#[test]
fn with_harden_a_file_the_person_saves_by_rename_during_the_chat_stays_closed() {
    let test = "with_harden_a_file_the_person_saves_by_rename_during_the_chat_stays_closed";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        // The control: unconfined, the chat's writes after the person's saves take.
        let lab = Lab::new(user.as_ref(), true);
        let written = chat_writes_after_the_persons_saves(&lab, Plan::Unconfined);
        assert_eq!(
            written.len(),
            saves(&lab.demo.home).len(),
            "control {}: {written:?}",
            lab.who()
        );
        for plan in Plan::CONFINED {
            let lab = Lab::new(user.as_ref(), true);
            let written = chat_writes_after_the_persons_saves(&lab, plan);
            if !written.is_empty() {
                failures.push(format!(
                    "{plan:?} {}: the chat wrote {written:?}",
                    lab.who()
                ));
            }
        }
        // Why the mounts alone were not enough: each save by rename detached the mount on the
        // file's name, in every namespace, and the chat wrote the new file. A save inside a
        // bound folder held.
        let lab = Lab::new(user.as_ref(), true);
        let written = chat_writes_after_the_persons_saves(&lab, Plan::MountsOnly);
        assert_eq!(
            written.len(),
            saves(&lab.demo.home).len() - 1,
            "mounts alone {}: {written:?}",
            lab.who()
        );
        assert!(
            !written.iter().any(|w| w.contains("bound folder")),
            "{written:?}"
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The places issue 25 found missing from the list, attacked one by one, and the places beside
/// them that stay open.
fn places(demo: &Demo) -> Vec<Attempt> {
    let h = demo.home.clone();
    let holds = |path: PathBuf, text: &'static str| -> Box<dyn Fn() -> bool> {
        Box::new(move || std::fs::read_to_string(&path).is_ok_and(|c| c.contains(text)))
    };
    let write = |name: &'static str, relative: &str| {
        let path = h.join(relative);
        Attempt {
            name,
            op: Op::Write,
            path: path.clone(),
            script: format!(
                "mkdir -p {d} && printf 'injected' >> {p}",
                d = q(path.parent().unwrap()),
                p = q(&path)
            ),
            succeeded: holds(path, "injected"),
        }
    };
    vec![
        write(
            "a .pth file in the user's site-packages",
            ".local/lib/python3.11/site-packages/evil.pth",
        ),
        write(
            "a site-packages of a Python not there yet",
            ".local/lib/python3.99/site-packages/evil.pth",
        ),
        write("a program in ~/.local/bin", ".local/bin/git"),
        write("a program in a missing ~/bin", "bin/git"),
        write("~/.npmrc (script-shell)", ".npmrc"),
        write("a program in ~/.cargo/bin", ".cargo/bin/cargo-evil"),
        write("~/.cargo/config.toml (rustc-wrapper)", ".cargo/config.toml"),
        write("~/.aws/config (credential_process)", ".aws/config"),
        write("~/.kube/config (exec plugins)", ".kube/config"),
        write("~/.docker/config.json (credsStore)", ".docker/config.json"),
        write("~/.vimrc", ".vimrc"),
        write("a vim plugin", ".vim/plugin/evil.vim"),
        write("neovim's init.lua", ".config/nvim/init.lua"),
        write("~/.emacs.d/init.el", ".emacs.d/init.el"),
        write("~/.gdbinit", ".gdbinit"),
        write("~/.lldbinit", ".lldbinit"),
        write("~/.inputrc (readline macros)", ".inputrc"),
        write(
            "a desktop entry (Exec= runs when a file is opened)",
            ".local/share/applications/evil.desktop",
        ),
        write("~/.ssh/rc (missing at launch)", ".ssh/rc"),
        write(
            "a start file no list names (~/.curlrc, the home's top)",
            ".curlrc",
        ),
        write("a new file at the home's top", "notes.txt"),
        Attempt {
            name: "a hard link to ~/.bashrc made in an open folder, written through",
            op: Op::Write,
            path: h.join(".bashrc"),
            script: format!(
                "ln {b} {l} && printf 'injected' >> {l}",
                b = q(&h.join(".bashrc")),
                l = q(&h.join("work/bashrc-link"))
            ),
            succeeded: holds(h.join(".bashrc"), "injected"),
        },
        Attempt {
            name: "~/.bashrc renamed into an open folder, written, renamed back",
            op: Op::Move,
            path: h.join(".bashrc"),
            script: format!(
                "mv {b} {l} && printf 'injected' >> {l} ; mv {l} {b}",
                b = q(&h.join(".bashrc")),
                l = q(&h.join("work/bashrc-moved"))
            ),
            succeeded: holds(h.join(".bashrc"), "injected"),
        },
        // What stays open with harden.
        write("a file in a folder of the person's work", "work/notes.txt"),
        write("cargo's registry", ".cargo/registry/index"),
        write("aws's cache", ".aws/cli/cache/token.json"),
        write("ssh's known_hosts", ".ssh/known_hosts"),
        write(
            "another app's settings in ~/.config",
            ".config/some-app/settings.json",
        ),
    ]
}

#[test]
fn with_harden_each_place_a_list_missed_is_closed_and_without_it_open() {
    let test = "with_harden_each_place_a_list_missed_is_closed_and_without_it_open";
    if !confinement_available(test) {
        return;
    }
    for user in every_user(test) {
        // The controls: the same attempts without harden all succeed, unconfined and in the
        // namespace plan (the fallback freezes the home that holds the app folder with or
        // without harden: its own cost, stated in its plan).
        for plan in [Plan::Unconfined, Plan::Namespaces] {
            let lab = Lab::new(user.as_ref(), false);
            let attempts = places(&lab.demo);
            let out = lab.command(plan, &script_of(&attempts)).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            for a in &attempts {
                assert!(
                    (a.succeeded)(),
                    "control {plan:?} {}: {} did not succeed without harden",
                    lab.who(),
                    a.name
                );
            }
        }
        for plan in Plan::CONFINED {
            let lab = Lab::new(user.as_ref(), true);
            let policy = lab.policy();
            let attempts = places(&lab.demo);
            let out = lab.command(plan, &script_of(&attempts)).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("{plan:?} {}:", lab.who());
            check(&policy, &attempts, &[]);
            // decide() refuses what the issue names: the check above holds the kernel to it.
            for a in &attempts[..23] {
                assert!(
                    !policy.decide(a.op, &a.path).allowed,
                    "decide() allows {}",
                    a.name
                );
            }
        }
    }
}

#[test]
fn with_harden_a_persistence_folder_replaced_as_a_whole_outside_is_the_gap_the_plan_names() {
    // A folder below an open folder (~/.config/git) is closed by a read-only mount on its name:
    // a save of a file inside it holds (the test above), but a process outside that replaces
    // the folder itself detaches the mount. The plan names these folders (Partly); the gap is
    // real in the namespace plan, and the fallback (rules on inodes, ~/.config's entries
    // granted at launch) holds.
    let test =
        "with_harden_a_persistence_folder_replaced_as_a_whole_outside_is_the_gap_the_plan_names";
    if !confinement_available(test) {
        return;
    }
    let replace = |lab: &Lab| {
        let git = lab.demo.home.join(".config/git");
        vec![(
            "~/.config/git replaced as a whole (mv away, a new folder in its place)",
            git.join("config"),
            format!(
                "mv {g} {g}.old && mkdir {g} && echo '# person' > {g}/config",
                g = q(&git)
            ),
        )]
    };
    let lab = Lab::new(None, true);
    let policy = lab.policy();
    let plan = sandbox_linux::compile(&policy, cli_sandbox_tests::this_kernel()).unwrap();
    let persistence = plan
        .guarantees
        .iter()
        .find(|g| g.what.starts_with("persistence paths"))
        .unwrap();
    assert!(
        matches!(&persistence.enforcement, Enforcement::Partly(gap) if gap.contains("~/.config/git")),
        "{persistence:?}"
    );
    let written = chat_writes_after(&lab, Plan::Namespaces, replace(&lab));
    assert_eq!(
        written.len(),
        1,
        "the gap the plan names is not real any more: {written:?}"
    );
    let lab = Lab::new(None, true);
    let written = chat_writes_after(&lab, Plan::Fallback, replace(&lab));
    assert!(written.is_empty(), "the fallback: {written:?}");
}

/// With `harden` the home's top is frozen, so the acted-on files missing there (`~/CLAUDE.md`,
/// `~/AGENTS.md`, `~/CLAUDE.local.md`: a CLI gathers them walking up from its working folder)
/// are closed without the launch creating them in the person's home: neither the launch nor
/// the chat makes one (verdict from the disk, both plans, root and an ordinary user). The
/// control: without `harden` the namespace plan creates them empty to close them (the cost
/// SECURITY.md states), and the person's own shell makes one.
#[test]
fn with_harden_no_acted_on_file_is_created_at_the_homes_top_and_none_can_be_made() {
    let test = "with_harden_no_acted_on_file_is_created_at_the_homes_top_and_none_can_be_made";
    if !confinement_available(test) {
        return;
    }
    let names = ["CLAUDE.md", "AGENTS.md", "CLAUDE.local.md"];
    for user in every_user(test) {
        for plan in Plan::CONFINED {
            let lab = Lab::new(user.as_ref(), true);
            let h = &lab.demo.home;
            let script: String = names
                .iter()
                .map(|n| format!("( printf STEER > {} ) 2>/dev/null\n", q(&h.join(n))))
                .chain(["true\n".to_owned()])
                .collect();
            let out = lab.command(plan, &script).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            for name in names {
                assert!(
                    !h.join(name).exists(),
                    "{plan:?} {}: ~/{name} exists after a hardened chat (made by the launch or the chat)",
                    lab.who()
                );
            }
        }
        // Controls.
        let lab = Lab::new(user.as_ref(), false);
        let h = &lab.demo.home;
        let out = lab.command(Plan::Namespaces, "true").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for name in names {
            assert_eq!(
                std::fs::read_to_string(h.join(name)).ok().as_deref(),
                Some(""),
                "control {}: without harden ~/{name} is created empty to close it",
                lab.who()
            );
        }
        let lab = Lab::new(user.as_ref(), true);
        lab.person(&format!(
            "printf mine > {}",
            q(&lab.demo.home.join("AGENTS.md"))
        ));
        assert!(
            lab.demo.home.join("AGENTS.md").exists(),
            "control: the person's write"
        );
    }
}
