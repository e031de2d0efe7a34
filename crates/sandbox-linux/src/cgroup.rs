//! The chat's own cgroup: `[limits] memory` and, for a root launcher, `[limits] processes`
//! (root is exempt from `RLIMIT_NPROC`, see `limits.rs`).
//!
//! Made by the helper, outside the sandbox, as a child of a cgroup this process may create
//! children in: with cgroup v1 (separate `memory` and `pids` hierarchies, which only root can
//! write) a child of the launcher's own cgroup in each; with cgroup v2 a child of the nearest
//! cgroup, from the launcher's own upward, whose `cgroup.subtree_control` enables the
//! controllers and where this process may make one (root anywhere; an ordinary user in a
//! subtree delegated to it). A child, never a cgroup beside the launcher's tree: every limit
//! above it still holds. Init is moved into it before it starts anything, so every process of
//! the chat is born inside.
//!
//! The chat cannot leave it or change it: its files are outside every grant (Landlock refuses
//! writing them, root or not) and, for a root chat, on a read-only mount; no capability is left
//! to mount a cgroup filesystem of its own (`tests/limits.rs` attacks both).
//!
//! When the chat has ended the helper reads what the kernel counted (an OOM kill, a refused
//! fork), says which limit stopped the chat, and removes the cgroup.

use std::path::{Path, PathBuf};

use super::sys::{ApplyError, fail};
use crate::plan::format::LimitsPlan;

/// A cgroup hierarchy mounted here, as `/proc/self/mountinfo` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hierarchy {
    /// Where it is mounted.
    mount_point: PathBuf,
    /// The cgroup the mount shows at its top (`/` unless the mount shows a subtree).
    root: PathBuf,
    /// v2 (`cgroup2`), else v1 with these controllers.
    v2: bool,
    controllers: Vec<String>,
}

/// The cgroup hierarchies of this machine.
fn hierarchies(mountinfo: &str) -> Vec<Hierarchy> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(mount_point), Some(fstype), Some(options)) =
            (left.get(3), left.get(4), right.first(), right.get(2))
        else {
            continue;
        };
        let v2 = match *fstype {
            "cgroup2" => true,
            "cgroup" => false,
            _ => continue,
        };
        out.push(Hierarchy {
            mount_point: PathBuf::from(unescape(mount_point)),
            root: PathBuf::from(unescape(root)),
            v2,
            controllers: options.split(',').map(str::to_owned).collect(),
        });
    }
    out
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            if let Ok(b) = u8::from_str_radix(&code, 8) {
                out.push(b as char);
                continue;
            }
            out.push(c);
            out.push_str(&code);
        } else {
            out.push(c);
        }
    }
    out
}

/// This process's cgroup in a hierarchy (`/proc/self/cgroup`): `0::PATH` for v2, the line
/// naming the controller for v1.
fn own_cgroup(proc_cgroup: &str, v2: bool, controller: &str) -> Option<PathBuf> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if v2 {
            names.is_empty()
        } else {
            names.split(',').any(|n| n == controller)
        };
        matches.then(|| PathBuf::from(path))
    })
}

/// The folder of a cgroup path inside a hierarchy's mount.
fn folder(h: &Hierarchy, cgroup: &Path) -> Option<PathBuf> {
    let inside = cgroup.strip_prefix(&h.root).ok()?;
    Some(h.mount_point.join(inside))
}

/// Where a chat's cgroup can be made, with the controllers it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// cgroup v1: the folders (of the memory and the pids hierarchy) to make a child in.
    V1 {
        /// In the memory hierarchy, when memory is needed.
        memory: Option<PathBuf>,
        /// In the pids hierarchy, when processes are needed.
        pids: Option<PathBuf>,
    },
    /// cgroup v2: the folder to make a child in.
    V2(PathBuf),
}

impl Place {
    /// In words, for `doctor`.
    pub fn describe(&self) -> String {
        match self {
            Place::V1 { memory, pids } => format!(
                "cgroup v1: a child of {}",
                memory
                    .iter()
                    .chain(pids.iter())
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            Place::V2(p) => format!("cgroup v2: a child of {}", p.display()),
        }
    }
}

/// Where this process can make a chat's cgroup with `memory` and/or `pids`, tried for real (a
/// child made and removed again), or why it cannot.
pub fn place(memory: bool, pids: bool) -> Result<Place, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo cannot be read: {e}"))?;
    let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("/proc/self/cgroup cannot be read: {e}"))?;
    let all = hierarchies(&mountinfo);
    let probe = format!("cli-sandbox-probe-{}", std::process::id());
    let try_make = |dir: &Path| -> Result<(), String> {
        let child = dir.join(&probe);
        std::fs::create_dir(&child).map_err(|e| format!("{}: {e}", child.display()))?;
        let _ = std::fs::remove_dir(&child);
        Ok(())
    };
    // v1 where the controllers are mounted as v1 (a machine with both has them on one side).
    let v1 = |controller: &str| -> Result<PathBuf, String> {
        let h = all
            .iter()
            .find(|h| !h.v2 && h.controllers.iter().any(|c| c == controller))
            .ok_or_else(|| format!("no cgroup v1 hierarchy has {controller}"))?;
        let own = own_cgroup(&proc_cgroup, false, controller)
            .ok_or_else(|| format!("/proc/self/cgroup names no {controller} cgroup"))?;
        let dir = folder(h, &own).ok_or_else(|| {
            format!(
                "this process's {controller} cgroup {} is outside the mount at {}",
                own.display(),
                h.mount_point.display()
            )
        })?;
        try_make(&dir).map(|()| dir)
    };
    let needed: Vec<&str> = [("memory", memory), ("pids", pids)]
        .into_iter()
        .filter_map(|(c, n)| n.then_some(c))
        .collect();
    if needed.iter().all(|c| {
        all.iter()
            .any(|h| !h.v2 && h.controllers.iter().any(|x| x == c))
    }) {
        let memory = memory.then(|| v1("memory")).transpose()?;
        let pids = pids.then(|| v1("pids")).transpose()?;
        return Ok(Place::V1 { memory, pids });
    }
    let h = all.iter().find(|h| h.v2).ok_or_else(|| {
        format!(
            "no cgroup hierarchy here has the {} controller",
            needed.join(" and ")
        )
    })?;
    let own =
        own_cgroup(&proc_cgroup, true, "").ok_or("/proc/self/cgroup names no cgroup v2 path")?;
    let mut why = Vec::new();
    for cgroup in own.ancestors() {
        let Some(dir) = folder(h, cgroup) else {
            break;
        };
        let enabled =
            std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        let enabled: Vec<&str> = enabled.split_whitespace().collect();
        if !needed.iter().all(|c| enabled.contains(c)) {
            continue;
        }
        match try_make(&dir) {
            Ok(()) => return Ok(Place::V2(dir)),
            Err(e) => why.push(e),
        }
    }
    Err(if why.is_empty() {
        format!(
            "cgroup v2 at {}, and no cgroup from this process's own ({}) upward enables {} for its children",
            h.mount_point.display(),
            own.display(),
            needed.join(" and ")
        )
    } else {
        format!(
            "no cgroup can be made where {} is enabled: {}",
            needed.join(" and "),
            why.join("; ")
        )
    })
}

/// The chat's cgroup, made by the helper, removed by it when the chat has ended.
pub(super) struct ChatCgroup {
    /// The folders made (one per v1 hierarchy, one for v2).
    dirs: Vec<PathBuf>,
    /// The one holding the memory controller's files, when memory is limited.
    memory: Option<PathBuf>,
    /// The one holding the pids controller's files, when processes are limited there.
    pids: Option<PathBuf>,
    v2: bool,
    limits: LimitsPlan,
}

/// `[limits]` in the words of the configuration, for the launcher's lines.
fn memory_words(limits: &LimitsPlan) -> String {
    limits
        .memory
        .map(|m| format!("`[limits] memory = \"{}\"`", sandbox_core::Size(m)))
        .unwrap_or_default()
}

impl ChatCgroup {
    /// Makes the chat's cgroup for `limits` (`pids`: whether processes are limited there too)
    /// and moves `init` into it. `Ok(None)`: none was needed, or none could be made for a limit
    /// that holds without it (the plan says so).
    pub(super) fn make(
        limits: &LimitsPlan,
        pids: bool,
        init: libc::pid_t,
    ) -> Result<Option<ChatCgroup>, ApplyError> {
        let memory = limits.memory.is_some();
        if !memory && !pids {
            return Ok(None);
        }
        let place = match place(memory, pids) {
            Ok(place) => place,
            Err(why) => {
                if memory {
                    return Err(fail(
                        "[limits] memory",
                        format!(
                            "{} needs a cgroup of the chat's own, and none can be made here ({why}): the chat is not started unbounded. Run the launcher as root where the cgroup v1 controllers are mounted, or in a delegated cgroup v2 subtree (`systemd-run --user --scope -p Delegate=yes`), or take `memory` out of `[limits]`",
                            memory_words(limits)
                        ),
                    ));
                }
                if limits.processes_configured {
                    return Err(fail(
                        "[limits] processes",
                        format!(
                            "`[limits] processes = {}` needs a pids cgroup for a root launcher (root is exempt from RLIMIT_NPROC), and none can be made here ({why}): take `processes` out of `[limits]` or run the launcher where a cgroup can be made",
                            limits.processes
                        ),
                    ));
                }
                // The default process limit of a root chat, where no cgroup can be made: the
                // plan and `doctor` say it does not hold here.
                return Ok(None);
            }
        };
        let name = format!("cli-sandbox-{}", std::process::id());
        let make_dir = |parent: &Path| -> Result<PathBuf, ApplyError> {
            let dir = parent.join(&name);
            // One left by a helper of the same pid that was killed: empty, so removable.
            let _ = std::fs::remove_dir(&dir);
            std::fs::create_dir(&dir).map_err(|e| fail(format!("mkdir {}", dir.display()), e))?;
            Ok(dir)
        };
        let mut cg = ChatCgroup {
            dirs: Vec::new(),
            memory: None,
            pids: None,
            v2: matches!(place, Place::V2(_)),
            limits: limits.clone(),
        };
        match &place {
            Place::V1 { memory, pids } => {
                if let Some(parent) = memory {
                    let dir = make_dir(parent)?;
                    cg.dirs.push(dir.clone());
                    cg.memory = Some(dir);
                }
                if let Some(parent) = pids {
                    let dir = make_dir(parent)?;
                    cg.dirs.push(dir.clone());
                    cg.pids = Some(dir);
                }
            }
            Place::V2(parent) => {
                let dir = make_dir(parent)?;
                cg.dirs.push(dir.clone());
                cg.memory = memory.then(|| dir.clone());
                cg.pids = pids.then(|| dir.clone());
            }
        }
        // From here on a failure removes what was made (`Drop`).
        cg.set_limits()?;
        for dir in &cg.dirs {
            write(&dir.join("cgroup.procs"), &init.to_string())?;
        }
        Ok(Some(cg))
    }

    fn set_limits(&self) -> Result<(), ApplyError> {
        if let (Some(dir), Some(bytes)) = (&self.memory, self.limits.memory) {
            if self.v2 {
                write(&dir.join("memory.max"), &bytes.to_string())?;
                // Swap would carry the chat past its limit: none for it (where swap is
                // accounted at all).
                let swap = dir.join("memory.swap.max");
                if swap.exists() {
                    write(&swap, "0")?;
                }
            } else {
                write(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
                // Memory and swap together (after the memory limit: it may not be lower).
                let memsw = dir.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    write(&memsw, &bytes.to_string())?;
                }
            }
        }
        if let Some(dir) = &self.pids {
            // Init is in the cgroup too: the chat's own processes are `processes`.
            write(
                &dir.join("pids.max"),
                &(u64::from(self.limits.processes) + 1).to_string(),
            )?;
        }
        Ok(())
    }

    /// What the kernel counted once the chat has ended, in the launcher's words: which limit
    /// stopped it, if one did.
    pub(super) fn report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(dir) = &self.memory {
            let (file, key) = if self.v2 {
                ("memory.events", "oom_kill")
            } else {
                ("memory.oom_control", "oom_kill")
            };
            let killed = counter(&dir.join(file), key);
            if killed > 0 {
                lines.push(format!(
                    "cli-sandbox: the chat went past its memory limit, {}: the kernel ended {killed} of its processes",
                    memory_words(&self.limits)
                ));
            }
        }
        if let Some(dir) = &self.pids {
            let refused = counter(&dir.join("pids.events"), "max");
            if refused > 0 {
                lines.push(format!(
                    "cli-sandbox: the chat reached its process limit, `[limits] processes = {}`: {refused} new processes or threads were refused",
                    self.limits.processes
                ));
            }
        }
        lines
    }
}

impl Drop for ChatCgroup {
    /// Removes the chat's cgroup: empty once init has been reaped (the kernel ends and reaps
    /// every process of the PID namespace before init's end is seen), but a memory cgroup's
    /// last pages can keep it busy a moment longer.
    fn drop(&mut self) {
        for dir in self.dirs.iter().rev() {
            for _ in 0..100 {
                match std::fs::remove_dir(dir) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    _ => break,
                }
            }
        }
    }
}

fn write(path: &Path, text: &str) -> Result<(), ApplyError> {
    std::fs::write(path, text).map_err(|e| fail(format!("write {text} to {}", path.display()), e))
}

/// The number after `key` in a flat-keyed cgroup file (`oom_kill 1`), 0 when absent.
fn counter(path: &Path, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchies_and_own_cgroups_are_read_from_the_kernels_lists() {
        let mountinfo = "\
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/pids rw,relatime shared:10 - cgroup cgroup rw,pids
32 25 0:28 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw
33 25 0:29 /sub /mnt/odd\\040dir rw - cgroup2 cgroup2 rw
";
        let h = hierarchies(mountinfo);
        assert_eq!(h.len(), 4);
        assert!(!h[0].v2 && h[0].controllers.contains(&"memory".to_owned()));
        assert!(h[2].v2);
        assert_eq!(h[3].mount_point, Path::new("/mnt/odd dir"));
        let proc_cgroup = "8:pids:/\n4:memory:/api/x\n0::/user.slice\n";
        assert_eq!(
            own_cgroup(proc_cgroup, false, "memory"),
            Some(PathBuf::from("/api/x"))
        );
        assert_eq!(
            own_cgroup(proc_cgroup, true, ""),
            Some(PathBuf::from("/user.slice"))
        );
        assert_eq!(
            folder(&h[0], Path::new("/api/x")),
            Some(PathBuf::from("/sys/fs/cgroup/memory/api/x"))
        );
        assert_eq!(
            folder(&h[3], Path::new("/sub/a")),
            Some(PathBuf::from("/mnt/odd dir/a"))
        );
    }
}
