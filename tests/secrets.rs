//! Issue 28 under the real kernel: `[policy] secrets = "closed"` closes the home's credential
//! places (`~/.ssh`, `~/.aws`, `~/.netrc`, `~/.docker/config.json`, `~/.config/gh`, ...) in both
//! Linux plans, as root and as an ordinary user, while the CLIs' own logins (`~/.codex/auth.json`)
//! stay readable; and `[policy] env = "allowlist"` keeps the caller's `GITHUB_TOKEN` out of a
//! chat. Each attack has its control: the same script without the option reads what it reads.
//! Verdicts come from the disk (what the chat copied out into its runtime), never from what the
//! confined program says.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{cli_sandbox, confinement_available};
use launch::Context;
use launch::demo::Demo;
use sandbox_core::Policy;
use sandbox_linux::plan::Kernel;

const KEY: &str = "SSH-PRIVATE-KEY-OF-THE-PERSON";
const LOGIN: &str = "CODEX-LOGIN-OF-THE-PERSON";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Namespaces,
    Fallback,
}

struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

impl Lab {
    /// The demo layout with credentials in the home, `extra` appended to its `[policy]` table.
    fn new(user: Option<&TestUser>, extra: &str) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
        let mut config = std::fs::read_to_string(&demo.config).unwrap();
        config.push_str(extra);
        std::fs::write(&demo.config, config).unwrap();
        let h = &demo.home;
        for (file, text) in [
            (".ssh/id_ed25519", KEY),
            (".aws/credentials", "aws_secret_access_key=AWS-SECRET"),
            (".netrc", "machine github.com password NETRC-SECRET"),
            (
                ".docker/config.json",
                "{\"auths\":{\"x\":\"DOCKER-SECRET\"}}",
            ),
            (".docker/other.json", "{}"),
            (".config/gh/hosts.yml", "oauth_token: GH-SECRET"),
            (".config/other-app/settings.json", "{}"),
            (".codex/auth.json", LOGIN),
        ] {
            let path = h.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        // A hard link the person made before the chat: another name of the key, outside the
        // list (the stated gap: a path-based rule cannot know every name of an inode).
        std::fs::hard_link(h.join(".ssh/id_ed25519"), h.join("key-backup")).unwrap();
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

    /// `sh -c script` confined by `plan`, as the lab's user, through the real helper.
    fn confined(&self, plan: Plan, script: &str) -> Output {
        self.confined_command(plan, script)
            .output()
            .expect("run cli-sandbox exec")
    }

    /// The command of [`Lab::confined`], not started.
    fn confined_command(&self, plan: Plan, script: &str) -> Command {
        let policy = self.policy();
        let kernel = Kernel {
            namespaces: plan == Plan::Namespaces,
            ..sandbox_linux::this_kernel()
        };
        let compiled = sandbox_linux::compile(&policy, kernel).expect("plan");
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
        self.environment(&mut cmd);
        cmd
    }

    fn environment(&self, cmd: &mut Command) {
        cli_sandbox_tests::launches::demo_env(cmd, &self.demo).current_dir(&self.demo.root);
    }
}

fn q(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// The attacks, each copying what it reaches into `out/NAME` in the runtime (a missing or empty
/// file: refused). Names, with the secret each would bring out.
/// The third of each: whether the attack works unconfined-like in the fallback's control too
/// (there the home is frozen, as every protected root's ancestor: nothing is made or renamed
/// directly in it, with or without the option).
fn attacks(demo: &Demo) -> (String, Vec<(&'static str, &'static str, bool)>) {
    let h = &demo.home;
    let out = demo.runtime.join("out");
    let o = |name: &str| q(&out.join(name));
    let script = format!(
        "mkdir -p {out}\n\
         cat {key} > {direct} 2>/dev/null\n\
         ln -s {key} {rlink} 2>/dev/null; cat {rlink} > {symlink} 2>/dev/null\n\
         ln -s {ssh} {hlink} 2>/dev/null; cat {hlink}/id_ed25519 > {homelink} 2>/dev/null\n\
         ln {key} {rhard} 2>/dev/null; cat {rhard} > {hard} 2>/dev/null\n\
         ls -a {ssh} > {list} 2>/dev/null; grep -q id_ed25519 {list} || rm -f {list}\n\
         cat {aws} > {aws_out} 2>/dev/null\n\
         cat {netrc} > {netrc_out} 2>/dev/null\n\
         cat {docker} > {docker_out} 2>/dev/null\n\
         cat {gh} > {gh_out} 2>/dev/null\n\
         mv {config} {config2} 2>/dev/null; cat {config2}/gh/hosts.yml > {moved} 2>/dev/null; mv {config2} {config} 2>/dev/null\n\
         cp -r {ssh} {copied_dir} 2>/dev/null; cat {copied_dir}/id_ed25519 > {copied} 2>/dev/null\n\
         cat {codex} > {codex_out} 2>/dev/null\n\
         cat {backup} > {backup_out} 2>/dev/null\n\
         true\n",
        out = q(&out),
        key = q(&h.join(".ssh/id_ed25519")),
        ssh = q(&h.join(".ssh")),
        rlink = q(&demo.runtime.join("key-link")),
        hlink = q(&h.join("ssh-link")),
        rhard = q(&h.join("key-hard")),
        aws = q(&h.join(".aws/credentials")),
        netrc = q(&h.join(".netrc")),
        docker = q(&h.join(".docker/config.json")),
        gh = q(&h.join(".config/gh/hosts.yml")),
        config = q(&h.join(".config")),
        config2 = q(&h.join(".config-moved")),
        copied_dir = q(&demo.runtime.join("ssh-copy")),
        codex = q(&h.join(".codex/auth.json")),
        backup = q(&h.join("key-backup")),
        direct = o("direct"),
        symlink = o("symlink"),
        homelink = o("homelink"),
        hard = o("hard"),
        list = o("list"),
        aws_out = o("aws"),
        netrc_out = o("netrc"),
        docker_out = o("docker"),
        gh_out = o("gh"),
        moved = o("moved"),
        copied = o("copied"),
        codex_out = o("codex"),
        backup_out = o("backup"),
    );
    let expect = vec![
        ("direct", KEY, true),
        ("symlink", KEY, true),
        ("homelink", KEY, false),
        ("hard", KEY, false),
        ("list", "id_ed25519", true),
        ("aws", "AWS-SECRET", true),
        ("netrc", "NETRC-SECRET", true),
        ("docker", "DOCKER-SECRET", true),
        ("gh", "GH-SECRET", true),
        ("moved", "GH-SECRET", false),
        ("copied", KEY, true),
    ];
    (script, expect)
}

fn got(demo: &Demo, name: &str, secret: &str) -> bool {
    std::fs::read_to_string(demo.runtime.join("out").join(name)).is_ok_and(|t| t.contains(secret))
}

#[test]
fn with_secrets_closed_every_way_to_a_credential_is_refused_in_both_plans_and_the_logins_stay() {
    let test = "with_secrets_closed_every_way_to_a_credential_is_refused_in_both_plans_and_the_logins_stay";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in [Plan::Namespaces, Plan::Fallback] {
            for closed in [true, false] {
                let extra = if closed { "secrets = \"closed\"\n" } else { "" };
                let lab = Lab::new(user.as_ref(), extra);
                let (script, expect) = attacks(&lab.demo);
                let out = lab.confined(plan, &script);
                let what = format!(
                    "{} {plan:?} {}",
                    lab.who(),
                    if closed { "closed" } else { "control (open)" }
                );
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                for (name, secret, in_fallback) in &expect {
                    // `~/.config` holds places CLIs act on at start (Muse's settings, Cursor's
                    // under `$XDG_CONFIG_HOME`): renaming it is refused in every chat by the
                    // settings rule, whatever `secrets` says, so this way has no control here.
                    if *name == "moved" && !closed {
                        continue;
                    }
                    let reached = got(&lab.demo, name, secret);
                    let control_applies = plan == Plan::Namespaces || *in_fallback;
                    if reached == closed && (closed || control_applies) {
                        failures.push(format!(
                            "{what}: `{name}` {}",
                            if closed {
                                "reached a secret"
                            } else {
                                "did not reach it (the control failed)"
                            }
                        ));
                    }
                }
                // The CLIs' own logins, whatever the option.
                if !got(&lab.demo, "codex", LOGIN) {
                    failures.push(format!("{what}: ~/.codex/auth.json not read"));
                }
                // The stated gap: a hard link the person made before the chat is a name of its
                // own, open in the namespace plan (SECURITY.md); in the fallback it lies in the
                // frozen home, where it gets no rule (a rule there would be on the key's inode,
                // and would open `~/.ssh/id_ed25519` itself: found by this test).
                let backup_expected = !(closed && plan == Plan::Fallback);
                if got(&lab.demo, "backup", KEY) != backup_expected {
                    failures.push(format!(
                        "{what}: the person's own hard link was closed: the stated gap changed, update SECURITY.md"
                    ));
                }
                // What the plan says of it.
                let plan_json =
                    std::fs::read_to_string(lab.demo.root.join(format!("plan-{plan:?}.json")))
                        .unwrap();
                if closed != plan_json.contains("\"secrets\"") {
                    failures.push(format!(
                        "{what}: the plan's guarantees and the option disagree"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{test}:\n{}", failures.join("\n"));
}

/// A stand-in CLI that writes its whole environment into its working folder (the runtime).
fn env_writer(root: &Path) -> PathBuf {
    let path = root.join("env-writer.sh");
    std::fs::write(&path, "#!/bin/sh\nenv > ./env-seen.txt\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn with_env_allowlist_the_callers_token_does_not_reach_a_chat_stand_in_cli() {
    let test = "with_env_allowlist_the_callers_token_does_not_reach_a_chat_stand_in_cli";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for allowlist in [true, false] {
            let probe = tempfile::tempdir().unwrap();
            std::fs::set_permissions(probe.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let writer = env_writer(probe.path());
            let mut extra = String::new();
            if allowlist {
                extra.push_str("env = \"allowlist\"\nenv_allow = [\"KEPT_*\"]\n");
            }
            extra.push_str(&format!(
                "\n[cli.claude]\nprogram = {:?}\n",
                writer.display()
            ));
            let lab = Lab::new(user.as_ref(), &extra);
            let mut cmd = command_as(lab.user.as_ref(), cli_sandbox());
            cmd.arg("--config").arg(&lab.demo.config).args([
                "run",
                "--cli",
                "claude",
                "--chat",
                "chat-1",
                "--shape",
                "structured",
            ]);
            lab.environment(&mut cmd);
            cmd.env("GITHUB_TOKEN", "ghp_CALLERS_TOKEN")
                .env("KEPT_SETTING", "kept-value")
                .env("ANTHROPIC_API_KEY", "the-clis-own-key");
            let out = cmd.output().expect("run cli-sandbox run");
            let what = format!(
                "{} {}",
                lab.who(),
                if allowlist {
                    "allowlist"
                } else {
                    "control (inherit)"
                }
            );
            let seen = std::fs::read_to_string(lab.demo.runtime.join("env-seen.txt"))
                .unwrap_or_else(|e| {
                    panic!(
                        "{what}: the stand-in CLI wrote nothing ({e}): {}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            let has = |line: &str| seen.lines().any(|l| l == line);
            if has("GITHUB_TOKEN=ghp_CALLERS_TOKEN") == allowlist {
                failures.push(format!("{what}: GITHUB_TOKEN reached: {}", !allowlist));
            }
            for kept in [
                "KEPT_SETTING=kept-value",
                "ANTHROPIC_API_KEY=the-clis-own-key",
            ] {
                if !has(kept) {
                    failures.push(format!("{what}: {kept} did not reach the chat"));
                }
            }
            if !seen.lines().any(|l| l.starts_with("PATH=")) {
                failures.push(format!("{what}: PATH did not reach the chat"));
            }
        }
    }
    assert!(failures.is_empty(), "{test}:\n{}", failures.join("\n"));
}

/// `cli-sandbox step` (a scripted step, no CLI): with `env = "allowlist"` the caller's
/// `GITHUB_TOKEN` does not reach the step's program, `env_allow` and the basic names do; the
/// control (`inherit`) sees the token. The verdict is the file the program wrote in its runtime.
#[test]
fn with_env_allowlist_the_callers_token_does_not_reach_a_scripted_step() {
    let test = "with_env_allowlist_the_callers_token_does_not_reach_a_scripted_step";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for allowlist in [true, false] {
            let extra = if allowlist {
                "env = \"allowlist\"\nenv_allow = [\"KEPT_*\"]\n"
            } else {
                ""
            };
            let lab = Lab::new(user.as_ref(), extra);
            std::fs::create_dir_all(&lab.demo.runtime).unwrap();
            if let Some(user) = &lab.user {
                user.own(&lab.demo.runtime);
            }
            let mut cmd = command_as(lab.user.as_ref(), cli_sandbox());
            cmd.arg("--config").arg(&lab.demo.config).args([
                "step",
                "--chat",
                "chat-1",
                "--",
                "/bin/sh",
                "-c",
                "env > ./env-step.txt",
            ]);
            lab.environment(&mut cmd);
            cmd.env("GITHUB_TOKEN", "ghp_CALLERS_TOKEN")
                .env("KEPT_SETTING", "kept-value");
            let out = cmd.output().expect("run cli-sandbox step");
            let what = format!(
                "{} {}",
                lab.who(),
                if allowlist {
                    "allowlist"
                } else {
                    "control (inherit)"
                }
            );
            let seen = std::fs::read_to_string(lab.demo.runtime.join("env-step.txt"))
                .unwrap_or_else(|e| {
                    panic!(
                        "{what}: the step wrote nothing ({e}): {}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            let has = |line: &str| seen.lines().any(|l| l == line);
            if has("GITHUB_TOKEN=ghp_CALLERS_TOKEN") == allowlist {
                failures.push(format!("{what}: GITHUB_TOKEN reached: {}", !allowlist));
            }
            if !has("KEPT_SETTING=kept-value") {
                failures.push(format!("{what}: KEPT_SETTING did not reach the step"));
            }
            if !seen.lines().any(|l| l.starts_with("PATH=")) {
                failures.push(format!("{what}: PATH did not reach the step"));
            }
            if !seen.lines().any(|l| l.starts_with("CLI_SANDBOX_CHAT=")) {
                failures.push(format!(
                    "{what}: the chat's own variables did not reach the step"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{test}:\n{}", failures.join("\n"));
}

/// The person acts during the chat: `aws configure` makes `~/.aws` where none was at launch, and
/// `docker login` saves `~/.docker/config.json` by rename. The chat waits on a fifo until the
/// person is done (no timing), then reads both. The fallback closes both (a rule is on an
/// inode: a new entry in a frozen folder has none); the namespace plan leaves both open, the gap
/// its guarantee states (a stand-in is a mount on a name) — checked here so that the statement
/// stays true. The control is the same run without the option. The person acts once the chat's
/// script has begun (a second fifo), so the chat's mounts and rules are in place.
#[test]
fn credentials_the_person_makes_or_saves_during_the_chat_are_closed_in_the_fallback_and_the_stated_gap_in_the_namespace_plan()
 {
    let test = "credentials_the_person_makes_or_saves_during_the_chat_are_closed_in_the_fallback_and_the_stated_gap_in_the_namespace_plan";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        for plan in [Plan::Namespaces, Plan::Fallback] {
            for closed in [true, false] {
                let extra = if closed { "secrets = \"closed\"\n" } else { "" };
                let lab = Lab::new(user.as_ref(), extra);
                let h = lab.demo.home.clone();
                std::fs::remove_dir_all(h.join(".aws")).unwrap();
                let go = lab.demo.root.join("go");
                let ready = lab.demo.root.join("ready");
                for fifo in [&go, &ready] {
                    let made = Command::new("mkfifo").arg(fifo).status().unwrap();
                    assert!(made.success());
                    if let Some(user) = &lab.user {
                        user.own(fifo);
                    }
                }
                let out = lab.demo.runtime.join("out");
                let script = format!(
                    "mkdir -p {out}; echo ready > {ready}; cat {go} >/dev/null; cat {aws} > {out}/late 2>/dev/null; cat {docker} > {out}/saved 2>/dev/null; true",
                    out = q(&out),
                    go = q(&go),
                    ready = q(&ready),
                    aws = q(&h.join(".aws/credentials")),
                    docker = q(&h.join(".docker/config.json")),
                );
                let mut chat = lab
                    .confined_command(plan, &script)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start the chat");
                // The chat runs, confined: its script has begun.
                std::fs::read(&ready).unwrap();
                // The person, outside: a new ~/.aws, and docker's atomic save.
                std::fs::create_dir_all(h.join(".aws")).unwrap();
                std::fs::write(h.join(".aws/credentials"), "LATE-AWS-SECRET").unwrap();
                std::fs::write(h.join(".docker/config.json.tmp"), "SAVED-DOCKER-SECRET").unwrap();
                std::fs::rename(
                    h.join(".docker/config.json.tmp"),
                    h.join(".docker/config.json"),
                )
                .unwrap();
                if let Some(user) = &lab.user {
                    user.own(&h.join(".aws"));
                    user.own(&h.join(".docker"));
                }
                // Opening the fifo waits for the chat to open it: the chat reads after this.
                std::fs::write(&go, "go\n").unwrap();
                let status = chat.wait().unwrap();
                assert!(status.success(), "{} {plan:?}", lab.who());
                let late = got(&lab.demo, "late", "LATE-AWS-SECRET");
                let saved = got(&lab.demo, "saved", "SAVED-DOCKER-SECRET");
                let what = format!("{} {plan:?} closed={closed}", lab.who());
                let expected = match (plan, closed) {
                    // The stated gap.
                    (Plan::Namespaces, true) => (true, true),
                    (Plan::Namespaces, false) => (true, true),
                    (Plan::Fallback, true) => (false, false),
                    // Without the option a new ~/.aws stays closed too: an entry made in a
                    // frozen folder (the home, frozen for the state root below it) after launch
                    // gets no rule, the fallback's own cost; ~/.docker is not frozen then, so
                    // the file saved in it is read.
                    (Plan::Fallback, false) => (false, true),
                };
                if (late, saved) != expected {
                    failures.push(format!(
                        "{what}: read (late ~/.aws, saved docker config) = {:?}, expected {expected:?}",
                        (late, saved)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{test}:\n{}", failures.join("\n"));
}
