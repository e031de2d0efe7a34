//! How often the Linux plan's compiler looks at each path of the real disk: once per compile
//! (the persistence paths of `harden` share their ancestors), and afresh at the next compile,
//! so that a folder of the home swapped for a symlink between two launches is seen by the
//! second.
#![cfg(target_os = "linux")]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use launch::Context;
use launch::demo::Demo;
use sandbox_linux::disk::RealDisk;
use sandbox_linux::plan::{self, EntryKind, Kernel, LaunchDisk, LinuxPlan, MountStep};

/// The real disk, counting the looks at each path by `kind`.
#[derive(Default)]
struct Counting {
    looks: RefCell<BTreeMap<PathBuf, usize>>,
}

impl LaunchDisk for Counting {
    fn exists(&self, path: &Path) -> bool {
        RealDisk.exists(path)
    }
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        *self.looks.borrow_mut().entry(path.to_owned()).or_default() += 1;
        RealDisk.kind(path)
    }
    fn entries(&self, dir: &Path) -> Vec<(OsString, EntryKind)> {
        RealDisk.entries(dir)
    }
    fn target_kind(&self, path: &Path) -> Option<EntryKind> {
        RealDisk.target_kind(path)
    }
}

const KERNEL: Kernel = Kernel {
    landlock_abi: 6,
    namespaces: true,
    fuse: false,
};

/// A demo layout with `harden` on, and a `~/.config` that holds some persistence folders.
fn hardened_demo(root: &Path) -> (Demo, Context) {
    let demo = Demo::create(root).unwrap();
    std::fs::create_dir_all(demo.home.join(".config/autostart")).unwrap();
    std::fs::write(demo.home.join(".bashrc"), "# rc\n").unwrap();
    let config = demo.root.join("harden.toml");
    std::fs::write(&config, "[policy]\nharden = true\n").unwrap();
    let mut settings = demo.settings();
    settings.config = Some(config);
    let ctx = Context::load(&settings).unwrap();
    (demo, ctx)
}

fn read_only(plan: &LinuxPlan) -> Vec<PathBuf> {
    let ns = plan.namespaces.as_ref().expect("a namespace plan");
    ns.mounts
        .iter()
        .filter_map(|m| match m {
            MountStep::ReadOnly { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn each_path_is_looked_at_once_per_compile_and_the_plan_is_the_same() {
    // Not in /tmp: with `harden` the plan lists the home's ancestors (frozen folders), and the
    // other tests running beside this one make and remove entries in /tmp between two compiles.
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (demo, ctx) = hardened_demo(scratch.path());
    let policy = ctx.policy(&demo.chat, &[]).unwrap();
    assert!(policy.hardened().len() > 10, "harden is on");
    let counting = Counting::default();
    let plan = plan::compile(&policy, KERNEL, &counting).unwrap();
    let looks = counting.looks.borrow();
    let twice: Vec<_> = looks.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "looked at more than once: {twice:?}");
    // The home and its ancestors are among the looks (once each), so the test counts them.
    for ancestor in demo.home.ancestors() {
        assert_eq!(looks.get(ancestor), Some(&1), "{}", ancestor.display());
    }
    let plain = plan::compile(&policy, KERNEL, &RealDisk).unwrap();
    assert_eq!(
        serde_json::to_string(&plan).unwrap(),
        serde_json::to_string(&plain).unwrap()
    );
}

#[test]
fn a_folder_swapped_for_a_symlink_between_two_compiles_is_seen_by_the_second() {
    let scratch = tempfile::tempdir().unwrap();
    let (demo, ctx) = hardened_demo(scratch.path());
    let autostart = demo.home.join(".config/autostart");
    let policy = ctx.policy(&demo.chat, &[]).unwrap();
    let disk = Counting::default();
    let first = plan::compile(&policy, KERNEL, &disk).unwrap();
    assert!(read_only(&first).contains(&autostart));
    // Between the two launches a chat moves `~/.config` away and leaves a symlink to it.
    let elsewhere = demo.root.join("elsewhere");
    std::fs::rename(demo.home.join(".config"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, demo.home.join(".config")).unwrap();
    // The same disk, the same policy: only the compile is new.
    let second = plan::compile(&policy, KERNEL, &disk).unwrap();
    let bound = read_only(&second);
    assert!(
        !bound
            .iter()
            .any(|p| p.starts_with(demo.home.join(".config"))),
        "a path under the symlink is still bound: {bound:?}"
    );
}
