//! Nothing a chat leaves behind runs in a later launch: the Linux helper, which every confined
//! launch starts unconfined (issue 24, requirement 3).
//!
//! A helper a chat could replace (in the home, in a grant, reached through a link into the
//! home, in a system folder writable by others) is refused by the library
//! (`launch::Error::HelperReplaceable`) and by the binary (exit 125, for `plan`, `run` and
//! `step` alike), unless the provider accepts that exact path. The control: the same binary,
//! root's, in a root-owned folder of the system, is run. Each case as root and as an ordinary
//! user the test creates (the layout then that user's, as a person's home is theirs). The
//! system folder is a fresh one in `/usr/local/libexec` (root only: without root those cases
//! are skipped, said on stderr); a temporary folder under `/tmp` would not do as the control,
//! since a root chat may write `/tmp` by the policy.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use assert_cmd::cargo::cargo_bin;
use cli_sandbox_tests::process::trimmed_text as text;
use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{cli_sandbox, confinement_available, root_or_skip};
use launch::demo::Demo;

fn who(user: &Option<TestUser>) -> &'static str {
    if user.is_some() {
        "as the ordinary user"
    } else {
        "as root"
    }
}

/// A demo layout in a folder every user can enter, the user's when given.
struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

impl Lab {
    fn new(user: &Option<TestUser>) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).unwrap();
        let lab = Lab {
            _dir: dir,
            demo,
            user: user.clone(),
        };
        lab.own(&lab.demo.root);
        lab
    }

    fn own(&self, path: &Path) {
        if let Some(user) = &self.user {
            user.own(path);
        }
    }

    fn context(&self, helper: &Path) -> launch::Context {
        let mut settings = self.demo.settings();
        settings.helper = Some(helper.to_owned());
        let mut ctx = launch::Context::load(&settings).unwrap();
        ctx.privileged = self.user.is_none();
        ctx
    }

    fn policy(&self, ctx: &launch::Context) -> sandbox_core::Policy {
        let grant = sandbox_core::GrantRequest::parse(&self.demo.grant_arg()).unwrap();
        ctx.policy(&self.demo.chat, &[grant]).unwrap()
    }

    /// The binary as the lab's user, pointed at the layout, with `CLI_SANDBOX_HELPER=helper`.
    fn cli(&self, helper: &Path) -> Command {
        let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
        cmd.env("HOME", &self.demo.home)
            .env("CLI_SANDBOX_HELPER", helper)
            .env_remove("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER")
            .env_remove("AGENTWORKS_STATE_ROOT")
            .env_remove("AGENTWORKS_WORKSPACE_DOCS")
            .env_remove("XDG_DATA_HOME")
            .env_remove("RUST_LOG")
            .arg("--config")
            .arg(&self.demo.config)
            .arg("--state-root")
            .arg(&self.demo.state_root)
            .current_dir(&self.demo.root)
            .stdin(Stdio::null());
        cmd
    }

    fn plan(&self, helper: &Path) -> Output {
        self.cli(helper)
            .args(["plan", "--cli", "codex", "--chat", "chat-1", "--json"])
            .args(["--grant", &self.demo.grant_arg()])
            .output()
            .unwrap()
    }

    /// `cli-sandbox step` of a program that leaves `marker` in the layout's `outside` folder.
    fn step(&self, helper: &Path, marker: &str) -> Output {
        let evidence = self.demo.outside.join(marker);
        self.cli(helper)
            .args(["step", "--chat", "chat-1", "--"])
            .args([
                "/bin/sh",
                "-c",
                &format!("echo ran > {}", evidence.display()),
            ])
            .output()
            .unwrap()
    }
}

/// A fresh root-owned folder in `/usr/local/libexec` (0755, every user may enter it), removed
/// at the end; `None` without root.
fn system_folder(test: &str) -> Option<tempfile::TempDir> {
    if !root_or_skip(test, "only root can place a helper in a system folder") {
        return None;
    }
    std::fs::create_dir_all("/usr/local/libexec").unwrap();
    let dir = tempfile::Builder::new()
        .prefix("cli-sandbox-test-")
        .tempdir_in("/usr/local/libexec")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(dir)
}

/// A copy of this build's helper at `path` (its folders made), 0755.
fn place_helper(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(cargo_bin("cli-sandbox-helper"), path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The places a chat could replace, for `lab`: (what, the helper's path as named).
fn replaceable_places(lab: &Lab, system: Option<&Path>) -> Vec<(&'static str, PathBuf)> {
    let d = &lab.demo;
    // A folder of its own for each user's run, root's, 0755.
    let system = system.map(|s| {
        let own = s.join(if lab.user.is_some() { "user" } else { "root" });
        std::fs::create_dir_all(&own).unwrap();
        own
    });
    let system = system.as_deref();
    // Where `cargo install` puts it.
    let in_home = d.home.join(".cargo/bin/cli-sandbox-helper");
    place_helper(&in_home);
    let in_grant = d.granted.join("tools/cli-sandbox-helper");
    place_helper(&in_grant);
    lab.own(&d.home.join(".cargo"));
    lab.own(&d.granted.join("tools"));
    let mut places = vec![("in the home", in_home.clone()), ("in a grant", in_grant)];
    if let Some(system) = system {
        // A root-owned link in a root-owned system folder, into the home.
        let link = system.join("linked/cli-sandbox-helper");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&in_home, &link).unwrap();
        places.push(("through a link from a system folder into the home", link));
        // Root's own file, in a system folder that its group or everyone may write.
        for (name, mode) in [("group-writable", 0o775), ("world-writable", 0o777)] {
            let helper = system.join(name).join("cli-sandbox-helper");
            place_helper(&helper);
            std::fs::set_permissions(
                helper.parent().unwrap(),
                std::fs::Permissions::from_mode(mode),
            )
            .unwrap();
            places.push(("in a system folder others may write", helper));
        }
    }
    places
}

#[test]
fn the_library_refuses_a_helper_a_chat_could_replace_and_runs_a_root_owned_one() {
    let test = "the_library_refuses_a_helper_a_chat_could_replace_and_runs_a_root_owned_one";
    let system = system_folder(test);
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(&user);
        for (what, helper) in replaceable_places(&lab, system.as_ref().map(|s| s.path())) {
            let ctx = lab.context(&helper);
            let policy = lab.policy(&ctx);
            match launch::wrap::helper_for(&ctx, &policy) {
                Err(launch::Error::HelperReplaceable { place, .. }) => {
                    let resolved = std::fs::canonicalize(&helper).unwrap();
                    if !(helper.starts_with(&place) || resolved.starts_with(&place)) {
                        failures.push(format!(
                            "{}: {what}: the place named, {}, is not on the helper's way",
                            who(&user),
                            place.display()
                        ));
                    }
                }
                other => failures.push(format!(
                    "{}: {what} ({}): not refused: {other:?}",
                    who(&user),
                    helper.display()
                )),
            }
            // The provider's opt-in, for that exact path only.
            let mut accepted = ctx.clone();
            accepted.accept_replaceable_helper = Some(helper.clone());
            if launch::wrap::helper_for(&accepted, &policy).is_err() {
                failures.push(format!(
                    "{}: {what}: refused although accepted by name",
                    who(&user)
                ));
            }
            accepted.accept_replaceable_helper = Some(helper.with_file_name("other"));
            if launch::wrap::helper_for(&accepted, &policy).is_ok() {
                failures.push(format!(
                    "{}: {what}: accepted by another path's name",
                    who(&user)
                ));
            }
        }
        // The control: root's file in a root-owned system folder is used, as it is named.
        if let Some(system) = &system {
            let helper = system.path().join("cli-sandbox-helper");
            place_helper(&helper);
            let ctx = lab.context(&helper);
            match launch::wrap::helper_for(&ctx, &lab.policy(&ctx)) {
                Ok(used) if used == helper => {}
                other => failures.push(format!(
                    "{}: the root-owned helper in {} was not used: {other:?}",
                    who(&user),
                    system.path().display()
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_binary_refuses_a_helper_a_chat_could_replace_with_125_for_plan_and_step() {
    let test = "the_binary_refuses_a_helper_a_chat_could_replace_with_125_for_plan_and_step";
    let system = system_folder(test);
    let confined = confinement_available(test);
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(&user);
        for (n, (what, helper)) in replaceable_places(&lab, system.as_ref().map(|s| s.path()))
            .into_iter()
            .enumerate()
        {
            let out = lab.plan(&helper);
            let said = String::from_utf8_lossy(&out.stderr);
            if out.status.code() != Some(125)
                || !said.contains("could be replaced by a chat")
                || !said.contains("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER")
                || !said.contains("/usr/local/bin")
            {
                failures.push(format!("{}: plan, {what}: {}", who(&user), text(&out)));
            }
            // `step` applies its plan itself, and still refuses the helper the provider named.
            let marker = format!("step-ran-{n}");
            let out = lab.step(&helper, &marker);
            if out.status.code() != Some(125) || lab.demo.outside.join(&marker).exists() {
                failures.push(format!("{}: step, {what}: {}", who(&user), text(&out)));
            }
        }
        if let Some(system) = &system {
            let helper = system.path().join("cli-sandbox-helper");
            place_helper(&helper);
            let out = lab.plan(&helper);
            let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            if !out.status.success() || plan["argv"][0] != helper.to_str().unwrap() {
                failures.push(format!(
                    "{}: plan with the root-owned helper: {}",
                    who(&user),
                    text(&out)
                ));
            }
            if confined {
                let out = lab.step(&helper, "control-ran");
                if !out.status.success() || !lab.demo.outside.join("control-ran").exists() {
                    failures.push(format!(
                        "{}: step with the root-owned helper named: {}",
                        who(&user),
                        text(&out)
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// The launcher installed where a chat could replace it (`cargo install` puts it in the home)
/// runs a copy of its own image that it keeps in the state root: one per content, whatever the
/// file it was started from, and the copies of other contents removed.
#[test]
fn the_launchers_kept_copy_is_one_per_content_and_old_ones_are_removed() {
    let test = "the_launchers_kept_copy_is_one_per_content_and_old_ones_are_removed";
    if !root_or_skip(test, "the test copies the binary into a home as root's") {
        return;
    }
    let lab = Lab::new(&None);
    let d = &lab.demo;
    let kept = d.state_root.join("state/cli-sandbox/helper");
    let expected = kept.join(format!("cli-sandbox-{}", sha256(&cli_sandbox())));
    std::fs::create_dir_all(&kept).unwrap();
    let old = kept.join(format!("cli-sandbox-{}", "a".repeat(64)));
    std::fs::write(&old, "an older build").unwrap();
    let mut used = Vec::new();
    for bin in ["bin-a", "bin-b"] {
        let installed = d.home.join(bin).join("cli-sandbox");
        place_helper(&installed.with_file_name("cli-sandbox-helper"));
        std::fs::copy(cli_sandbox(), &installed).unwrap();
        let out = Command::new(&installed)
            .env("HOME", &d.home)
            .env_remove("CLI_SANDBOX_HELPER")
            .env_remove("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER")
            .args(["--config", d.config.to_str().unwrap()])
            .args(["--state-root", d.state_root.to_str().unwrap()])
            .args(["plan", "--cli", "codex", "--chat", "chat-1", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{bin}: {}", text(&out));
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        used.push(PathBuf::from(plan["argv"][0].as_str().unwrap()));
        // `plan` names the copy and writes only its plan file: `pre-trust`, the launch's
        // writing step, makes it.
        if bin == "bin-a" {
            assert!(!expected.exists(), "plan made the kept copy");
            assert!(old.exists(), "plan removed an older copy");
        }
        let out = Command::new(&installed)
            .env("HOME", &d.home)
            .env_remove("CLI_SANDBOX_HELPER")
            .env_remove("CLI_SANDBOX_ACCEPT_REPLACEABLE_HELPER")
            .args(["--config", d.config.to_str().unwrap()])
            .args(["--state-root", d.state_root.to_str().unwrap()])
            .args(["pre-trust", "--cli", "codex", "--chat", "chat-1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{bin}: {}", text(&out));
        assert!(expected.is_file(), "pre-trust made the kept copy");
    }
    assert_eq!(used, [expected.clone(), expected.clone()]);
    let copies: Vec<_> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cli-sandbox-"))
        .collect();
    assert_eq!(copies, [expected.file_name().unwrap().to_str().unwrap()]);
    assert!(!old.exists(), "the older copy was kept");
    assert_eq!(sha256(&expected), sha256(&cli_sandbox()));
}

// ---------------------------------------------------------------------------------------------
// Git's own files in a read-write grant (issue 24, requirement 4): what git run outside later
// acts on (hooks, `core.fsmonitor` in `.git/config`, submodules' URLs) is read-only inside.

const PYTHON: &str = "/usr/bin/python3";

/// Tries each write and prints `NAME ok` or `NAME refused`, one a line. Arguments: the
/// repository, its nested repository, its worktree (whose `.git` is a `gitdir:` file), a bare
/// repository (`project.git`, whose hooks a push runs).
const GIT_WRITES: &str = r##"
import os, sys
repo, inner, worktree, bare = sys.argv[1:5]
gitdir = os.path.join(repo, ".git/worktrees", os.path.basename(worktree))
def attempt(name, action):
    try:
        action()
        print(name, "ok")
    except OSError as e:
        print(name, "refused", e.errno)
def write(path, text, mode="w"):
    def act():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, mode).write(text)
    return act
attempt("hook", write(repo + "/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n"))
attempt("config", write(repo + "/.git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n", "a"))
attempt("gitmodules", write(repo + "/.gitmodules", "[submodule \"x\"]\n\tpath = x\n\turl = /tmp/x\n", "a"))
attempt("nested-hook", write(inner + "/.git/hooks/pre-commit", "#!/bin/sh\n"))
attempt("nested-config", write(inner + "/.git/config", "[core]\n\tfsmonitor = x\n", "a"))
attempt("worktree-gitfile", write(worktree + "/.git", "gitdir: /tmp/elsewhere\n"))
attempt("worktree-commondir", write(gitdir + "/commondir", "/tmp/elsewhere\n"))
attempt("bare-hook", write(bare + "/hooks/post-receive", "#!/bin/sh\n"))
attempt("bare-config", write(bare + "/config", "[core]\n\tfsmonitor = x\n", "a"))
attempt("hooks-renamed", lambda: os.rename(repo + "/.git/hooks", repo + "/.git/hooks-old"))
attempt("gitdir-renamed", lambda: os.rename(repo + "/.git", repo + "/.git-old"))
"##;

const GIT_ATTEMPTS: [&str; 11] = [
    "hook",
    "config",
    "gitmodules",
    "nested-hook",
    "nested-config",
    "worktree-gitfile",
    "worktree-commondir",
    "bare-hook",
    "bare-config",
    "hooks-renamed",
    "gitdir-renamed",
];

/// A lab for the git tests: the demo layout with `[policy]` additions, the user's.
struct GitLab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
    repo: PathBuf,
    inner: PathBuf,
    worktree: PathBuf,
}

fn git(args: &[&str], at: &Path) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(at)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out));
}

impl GitLab {
    fn new(user: &Option<TestUser>, extra: &str) -> GitLab {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).unwrap();
        let mut config = std::fs::read_to_string(&demo.config).unwrap();
        config.push_str(extra);
        std::fs::write(&demo.config, config).unwrap();
        let repo = demo.granted.join("repo");
        let inner = repo.join("vendor/inner");
        let worktree = demo.granted.join("repo-wt");
        std::fs::create_dir_all(&inner).unwrap();
        git(&["init", "-q"], &repo);
        git(&["init", "-q"], &inner);
        git(&["init", "-q", "--bare", "project.git"], &demo.granted);
        std::fs::write(repo.join("README"), "x\n").unwrap();
        // An existing .gitmodules (one created during the chat is the gap SECURITY.md states).
        std::fs::write(repo.join(".gitmodules"), "").unwrap();
        git(&["add", "README", ".gitmodules"], &repo);
        git(&["commit", "-q", "-m", "first"], &repo);
        git(
            &["worktree", "add", "-q", worktree.to_str().unwrap()],
            &repo,
        );
        // The nested repository without its hooks folder: the plan makes it, empty, and closes
        // it, so that the chat cannot make it with hooks of its own.
        std::fs::remove_dir_all(inner.join(".git/hooks")).unwrap();
        if let Some(user) = user {
            user.own(&demo.root);
        }
        GitLab {
            _dir: dir,
            demo,
            user: user.clone(),
            repo,
            inner,
            worktree,
        }
    }

    /// The chat's namespace plan for this kernel, written into the layout.
    fn plan(&self) -> PathBuf {
        let mut ctx = launch::Context::load(&self.demo.settings()).unwrap();
        ctx.privileged = self.user.is_none();
        let grant = sandbox_core::GrantRequest::parse(&self.demo.grant_arg()).unwrap();
        let policy = ctx.policy(&self.demo.chat, &[grant]).unwrap();
        ctx.ensure_runtime(&policy).unwrap();
        let plan = sandbox_linux::compile(&policy, cli_sandbox_tests::this_kernel()).unwrap();
        assert!(plan.namespaces.is_some(), "not the namespace plan");
        let file = self.demo.root.join("git-plan.json");
        std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        file
    }

    /// How the chat's plan (with namespaces or without) keeps the `git-metadata` promise.
    fn guarantee(&self, namespaces: bool) -> String {
        let mut ctx = launch::Context::load(&self.demo.settings()).unwrap();
        ctx.privileged = self.user.is_none();
        let grant = sandbox_core::GrantRequest::parse(&self.demo.grant_arg()).unwrap();
        let policy = ctx.policy(&self.demo.chat, &[grant]).unwrap();
        let kernel = sandbox_linux::plan::Kernel {
            landlock_abi: cli_sandbox_tests::this_kernel().landlock_abi,
            namespaces,
            fuse: cli_sandbox_tests::fuse_for_every_user(),
        };
        let plan = sandbox_linux::compile(&policy, kernel).unwrap();
        let json = serde_json::to_value(&plan.guarantees).unwrap();
        json.as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == "git-metadata")
            .map(|g| g["enforced"].as_str().unwrap_or("?").to_owned())
            .unwrap_or_else(|| "missing".into())
    }

    fn command(&self, confined: bool, argv: &[&str]) -> Command {
        let mut cmd = if confined {
            let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
            cmd.arg("exec").arg("--policy").arg(self.plan()).arg("--");
            cmd.args(argv);
            cmd
        } else {
            let mut cmd = command_as(self.user.as_ref(), argv[0]);
            cmd.args(&argv[1..]);
            cmd
        };
        cmd.env("HOME", &self.demo.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(&self.demo.runtime)
            .stdin(Stdio::null());
        cmd
    }

    /// Each of [`GIT_ATTEMPTS`] with whether it succeeded.
    fn attempts(&self, confined: bool) -> Vec<(String, bool)> {
        let bare = self.demo.granted.join("project.git");
        let argv = [
            PYTHON,
            "-c",
            GIT_WRITES,
            self.repo.to_str().unwrap(),
            self.inner.to_str().unwrap(),
            self.worktree.to_str().unwrap(),
            bare.to_str().unwrap(),
        ];
        let out = self.command(confined, &argv).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let results: Vec<(String, bool)> = said
            .lines()
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                Some((words.next()?.to_owned(), words.next()? == "ok"))
            })
            .collect();
        assert_eq!(results.len(), GIT_ATTEMPTS.len(), "{said}");
        results
    }
}

#[test]
fn gits_hooks_and_configuration_in_a_read_write_grant_are_read_only_inside_and_writable_outside() {
    let test = "gits_hooks_and_configuration_in_a_read_write_grant_are_read_only_inside_and_writable_outside";
    if !confinement_available(test) {
        return;
    }
    let mut failures = Vec::new();
    for user in every_user(test) {
        // Inside: every write refused, and what the chat saw is what the disk holds.
        let lab = GitLab::new(&user, "");
        let config_before = std::fs::read(lab.repo.join(".git/config")).unwrap();
        for (name, ok) in lab.attempts(true) {
            if ok {
                failures.push(format!("{}: inside, {name} was written", who(&user)));
            }
        }
        if std::fs::read(lab.repo.join(".git/config")).unwrap() != config_before
            || lab.repo.join(".git/hooks/post-checkout").exists()
            || std::fs::metadata(lab.repo.join(".gitmodules"))
                .unwrap()
                .len()
                != 0
            || !lab.repo.join(".git/HEAD").exists()
        {
            failures.push(format!("{}: inside, the repository changed", who(&user)));
        }
        let hooks = std::fs::read_dir(lab.inner.join(".git/hooks")).map(|d| d.count());
        if hooks.as_ref().ok() != Some(&0) {
            failures.push(format!(
                "{}: the missing hooks folder was not made empty and kept so: {hooks:?}",
                who(&user)
            ));
        }
        // Both plans say what they do: the namespace plan partly (what is made during the
        // chat), the Landlock-only fallback not at all.
        for (namespaces, expected) in [(true, "partly"), (false, "not")] {
            let said = lab.guarantee(namespaces);
            if said != expected {
                failures.push(format!(
                    "{}: namespaces {namespaces}: git-metadata is {said}, not {expected}",
                    who(&user)
                ));
            }
        }
        // Git itself still works inside: status, a commit (index, objects, refs, logs).
        let script = format!(
            "cd {} && git status --short && echo y > more && git add more && git -c user.name=t -c user.email=t@t commit -q -m second && git log --oneline | wc -l",
            lab.repo.display()
        );
        let out = lab
            .command(true, &["/bin/sh", "-c", &script])
            .output()
            .unwrap();
        if !out.status.success() || !String::from_utf8_lossy(&out.stdout).contains('2') {
            failures.push(format!("{}: git inside: {}", who(&user), text(&out)));
        }
        // The control: the same writes outside the sandbox succeed (after the commit, so that
        // the renamed .git does not stop it).
        for (name, ok) in lab.attempts(false) {
            if !ok {
                failures.push(format!("{}: outside, {name} was refused", who(&user)));
            }
        }
        // With the grant opted out, the chat writes them.
        let opted = GitLab::new(
            &user, "", // the opt-out is added below, once the grant's path is known
        );
        let mut config = std::fs::read_to_string(&opted.demo.config).unwrap();
        config = config.replacen(
            "[policy]\n",
            &format!(
                "[policy]\ngit_writable = [{:?}]\n",
                opted.demo.granted.display().to_string()
            ),
            1,
        );
        std::fs::write(&opted.demo.config, config).unwrap();
        for (name, ok) in opted.attempts(true) {
            if !ok {
                failures.push(format!(
                    "{}: opted out, inside, {name} was refused",
                    who(&user)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
