//! An ordinary user for the tests that must hold for a chat run by root and by someone else.
//!
//! A launch as root and a launch as an ordinary user differ where it matters: root keeps every
//! id inside the user namespace (uid 0 owns root's files, even without capabilities), an
//! ordinary user maps only its own. [`TestUser::get`] creates the user `cli-sandbox-test` with
//! `useradd` the first time (no home folder: each test gives it a demo home of its own), and
//! [`TestUser::command`] runs a program as that user with `setpriv`, keeping the environment the
//! test sets. Only root can do either; elsewhere the tests already run as an ordinary user, and
//! [`TestUser::get`] says so and returns `None`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crate::say;

/// The name of the user the tests create.
pub const NAME: &str = "cli-sandbox-test";

/// The ordinary user the tests run launches as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl TestUser {
    /// The test user, created when missing. `None` when this process is not root (then the
    /// tests run as an ordinary user already) or the user cannot be created; both are said on
    /// the real stderr, naming `test`. Where CI asks for real confinement
    /// (`CLI_SANDBOX_REQUIRE_LANDLOCK=1`), root failing to create the user is a failure.
    pub fn get(test: &str) -> Option<TestUser> {
        static USER: OnceLock<Result<TestUser, String>> = OnceLock::new();
        match USER.get_or_init(create) {
            Ok(user) => Some(user.clone()),
            Err(why)
                if is_root() && std::env::var(crate::REQUIRE_LANDLOCK).as_deref() == Ok("1") =>
            {
                panic!("{test}: the ordinary-user runs cannot be made: {why}")
            }
            Err(why) => {
                say(&format!(
                    "\n!!! {test}: the ordinary-user runs are left out: {why}\n"
                ));
                None
            }
        }
    }

    /// `program` run as this user (real and effective ids, its groups), with the environment,
    /// working folder and standard descriptors the caller sets on the returned command.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--init-groups")
            .arg("--")
            .arg(program);
        cmd
    }

    /// Makes `path` and everything beneath it this user's, as a layout the user had made.
    pub fn own(&self, path: &Path) {
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{}:{}", self.uid, self.gid))
            .arg(path)
            .status()
            .expect("run chown");
        assert!(status.success(), "chown -R {} failed", path.display());
    }
}

/// Who a test's launches run as: this process's own user (`None`; root where the tests run as
/// root), then the ordinary user where one can be made ([`TestUser::get`], which says why not).
pub fn every_user(test: &str) -> Vec<Option<TestUser>> {
    let mut users = vec![None];
    if let Some(user) = TestUser::get(test) {
        users.push(Some(user));
    }
    users
}

/// `program` run as `user`, or as this process's own user when `None`.
pub fn command_as(user: Option<&TestUser>, program: impl AsRef<OsStr>) -> Command {
    match user {
        Some(user) => user.command(program),
        None => Command::new(program),
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

fn create() -> Result<TestUser, String> {
    if !is_root() {
        return Err("this process is not root, so it already is an ordinary user".into());
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        return Err("`setpriv` is missing (Debian package util-linux)".into());
    }
    if lookup().is_none() {
        let out = Command::new("useradd")
            .args(["--no-create-home", "--shell", "/usr/sbin/nologin"])
            .args(["--comment", "cli-sandbox tests"])
            .arg(NAME)
            .output()
            .map_err(|e| format!("`useradd` cannot run ({e}; Debian package passwd)"))?;
        // 9: the name is taken, by a test binary running beside this one.
        if !out.status.success() && out.status.code() != Some(9) {
            return Err(format!(
                "`useradd {NAME}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    lookup().ok_or_else(|| format!("`{NAME}` is not in the user database after useradd"))
}

/// The user's ids from the user database (`getent`, so that NSS is asked as `setpriv` will).
fn lookup() -> Option<TestUser> {
    let out = Command::new("getent")
        .args(["passwd", NAME])
        .output()
        .ok()?;
    let line = String::from_utf8(out.stdout).ok()?;
    let fields: Vec<&str> = line.trim().split(':').collect();
    Some(TestUser {
        name: NAME.to_owned(),
        uid: fields.get(2)?.parse().ok()?,
        gid: fields.get(3)?.parse().ok()?,
    })
}
