//! Applying a [`LinuxPlan`] to this process: the `cli-sandbox exec` helper.
//!
//! Runs single-threaded (no async runtime: `clone(CLONE_NEWUSER)` refuses a threaded process).
//! With namespaces, three processes take part (`process.rs`): this helper, which waits;
//! init, which builds the mounts (`mounts.rs`), confines itself and starts the program;
//! and the program. Without namespaces (the Landlock-only plan) this process confines itself
//! and becomes the program.
//!
//! If any step of the plan fails, the program is not started: the error says which step.

use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

pub use super::sys::ApplyError;
use super::sys::{self, Never, cstr, fail, os_fail};
use super::{caps, cgroup, landlock, limits, mounts, network, process, seccomp};
use crate::plan::format::{LinuxPlan, NamespacePlan, PLAN_VERSION};

/// The kernel's Landlock ABI (0 when Landlock is missing or disabled).
pub fn kernel_landlock_abi() -> u32 {
    landlock::kernel_abi()
}

pub use super::process::EgressServer;

/// Applies the plan and runs `argv` confined. Returns only on failure; on success this process
/// ends with the program's status. `egress` serves the proxy of a plan that asks for one.
pub fn exec(
    plan: &LinuxPlan,
    argv: &[OsString],
    egress: Option<&'static EgressServer>,
) -> ApplyError {
    match exec_inner(plan, argv, egress) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

fn exec_inner(
    plan: &LinuxPlan,
    argv: &[OsString],
    egress: Option<&'static EgressServer>,
) -> Result<Never, ApplyError> {
    if plan.version != PLAN_VERSION {
        return Err(fail(
            "plan",
            format!(
                "version {} is not {PLAN_VERSION}: compile it again with this cli-sandbox",
                plan.version
            ),
        ));
    }
    let kernel_abi = kernel_landlock_abi();
    if kernel_abi < plan.landlock.abi {
        return Err(fail(
            "landlock",
            format!(
                "the plan needs Landlock ABI {} and this kernel has {kernel_abi}",
                plan.landlock.abi
            ),
        ));
    }
    if argv.is_empty() {
        return Err(fail("program", "no program given"));
    }
    let program: Vec<CString> = argv
        .iter()
        .map(|a| {
            CString::new(a.as_bytes())
                .map_err(|_| fail("program", "an argument contains a NUL byte"))
        })
        .collect::<Result<_, _>>()?;
    let workdir = cstr(&plan.workdir)?;
    // Compiled with the plan; an empty one (never compiled) is refused before anything is done.
    if plan.seccomp_program.instructions().is_empty() {
        return Err(fail(
            "seccomp",
            "the plan carries no seccomp program: compile it again with cli-sandbox on Linux",
        ));
    }
    let loaded = seccomp::loadable(&plan.seccomp_program);
    let filter = &loaded[..];
    crate::phase!("read the seccomp program");

    for dir in &plan.create_dirs {
        sys::create_dirs(dir)?;
    }
    // The persistence folders and files `harden` closes that do not exist yet, made empty
    // (owned like the folder that holds them) so that they can be bound read-only.
    for dir in &plan.create_home_dirs {
        sys::create_without_links(dir, false)?;
    }
    for file in &plan.create_home_files {
        sys::create_without_links(file, true)?;
    }
    // The acted-on settings that do not exist yet (`Rule::Settings`), made in their neutral
    // form so that they can be bound read-only and none can be made during the chat.
    for file in &plan.create_settings_files {
        sys::create_with_text(&file.path, Some(&file.text))?;
    }
    let Some(ns) = &plan.namespaces else {
        if let Some(path) = &plan.denials_record {
            // No process stays beside the chat to read the kernel's records.
            super::denials::write(
                path,
                &super::denials::Record {
                    version: 1,
                    chat: &plan.chat,
                    recorded: false,
                    why: Some(
                        "not recorded here: the Landlock-only plan keeps no process beside the \
                         chat to read the kernel's records (with the kernel's audit on they are in \
                         its log: `ausearch -m 1423`)"
                            .to_owned(),
                    ),
                    denials: None,
                    incomplete: None,
                    never: super::denials::NEVER,
                },
            );
        }
        return exec_in_place(plan, filter, &program, &workdir);
    };
    // The reader of the kernel's refusals, joined before the chat starts (or why it cannot be).
    let denials = plan
        .denials_record
        .as_ref()
        .map(|_| super::denials::open(kernel_abi));
    // The refused folders the stand-ins cover, made where missing and held until the chat
    // ends, then removed if this launch made them (`stand_in_dirs.rs`).
    let stand_ins = super::stand_in_dirs::take(&plan.stand_in_dirs)?;
    check_single_threaded()?;
    crate::phase!("make the folders");

    let (uid, gid) = sys::real_ids();
    let (report_read, report_write) = sys::pipe()?;
    sys::set_nonblocking(&report_read)?;
    let (go_read, go_write) = sys::pipe()?;
    // Blocked before the clone, so that none is lost or acted on by default in between; init
    // inherits the mask and takes them with sigwaitinfo, the helper through a descriptor.
    sys::mask(libc::SIG_BLOCK, &process::watched())?;
    let signals = sys::signalfd(&process::watched())?;
    let terminal = sys::foreground_terminal();
    crate::phase!("pipes and signals");

    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_PIDFD;
    if ns.pid_namespace {
        flags |= libc::CLONE_NEWPID;
    }
    if ns.ipc_namespace {
        flags |= libc::CLONE_NEWIPC;
    }
    if ns.network.is_some() || ns.egress.is_some() {
        flags |= libc::CLONE_NEWNET;
    }
    // `network = "allowlist"`: the pair the listener travels over, and what serves it; without
    // a server the launch is refused (no chat runs with a route that nothing serves).
    let egress_pair = match (&ns.egress, egress) {
        (Some(_), None) => {
            return Err(fail(
                "egress",
                "the plan asks for the egress proxy and this launch cannot serve it",
            ));
        }
        (Some(_), Some(_)) => Some(super::egress::pair()?),
        (None, _) => None,
    };
    let mut pidfd: RawFd = -1;
    // SAFETY: a fork-like clone (no new stack) of a single-threaded process; the kernel stores
    // init's pidfd in `pidfd`; the child runs only `process::run_init`, which never returns.
    let init = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            &mut pidfd as *mut RawFd,
            0usize,
            0usize,
        )
    } as libc::pid_t;
    if init < 0 {
        return Err(os_fail(
            "clone into new user, mount, PID and IPC namespaces",
        ));
    }
    if init == 0 {
        drop(report_read);
        drop(go_write);
        drop(signals);
        let (egress_helper, egress_init) = match egress_pair {
            Some((h, i)) => (Some(h), Some(i)),
            None => (None, None),
        };
        drop(egress_helper);
        process::run_init(
            report_write,
            go_read,
            || match (&ns.egress, egress_init) {
                (Some(e), Some(to_helper)) => {
                    super::egress::hand_listener(e, to_helper)?;
                    super::egress::proxy_environment(e);
                    Ok(())
                }
                _ => Ok(()),
            },
            || confine_in_namespace(plan, ns, filter, &argv[0]),
            &program,
            &workdir,
        );
    }
    // SAFETY: the kernel just stored init's new pidfd here; nothing else owns it.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    crate::phase!("clone init into the namespaces");
    drop(report_write);
    drop(go_read);
    let mapped = write_id_maps(init, uid, gid);
    let mut go = std::fs::File::from(go_write);
    if let Err(e) = mapped {
        sys::kill(init, libc::SIGKILL);
        return Err(e);
    }
    // `[limits]`: the chat's cgroup, init in it before it starts anything. Root is exempt from
    // RLIMIT_NPROC (`limits.rs`): its processes are held by the cgroup's pids.max.
    let cgroup = match cgroup::ChatCgroup::make(&plan.limits, uid == 0, init) {
        Ok(cgroup) => cgroup,
        Err(e) => {
            sys::kill(init, libc::SIGKILL);
            return Err(e);
        }
    };
    crate::phase!("the chat's cgroup");
    // The chat's own network is up before init goes on (and so before the program starts).
    let pasta = match &ns.network {
        Some(net) => match network::Pasta::start(net, init) {
            Ok(pasta) => Some(pasta),
            Err(e) => {
                sys::kill(init, libc::SIGKILL);
                return Err(e);
            }
        },
        None => None,
    };
    go.write_all(b"g")
        .map_err(|e| fail("start the sandbox's init", e))?;
    drop(go);
    // The egress listener from init, received and served by `wait_for_init` once it has
    // closed what the helper does not need (the proxy's own descriptors come after).
    let egress = match (egress_pair, &ns.egress, egress) {
        (Some((from_init, to_helper)), Some(plan), Some(serve)) => {
            drop(to_helper);
            Some(process::EgressHandoff {
                from_init,
                plan: plan.clone(),
                serve,
            })
        }
        _ => None,
    };
    crate::phase!("write the id maps");
    process::wait_for_init(
        process::Init {
            pid: init,
            pidfd,
            report: report_read,
            pasta,
            terminal,
            stand_ins,
            denials: denials.map(|d| {
                d.map(|mut reader| {
                    reader.set_pid(init);
                    reader
                })
            }),
            chat: plan.chat.clone(),
            denials_record: plan.denials_record.clone(),
            cgroup,
            egress,
        },
        signals,
    )
}

/// Whether this process is down to its one thread, as clone's namespaces need. The compile of
/// a `step` in this very process lists many folders on threads (`RealDisk::entries_of`), joined
/// before it returns; but a joined thread leaves the kernel's thread group a moment after
/// (its join is woken as it releases its memory, before it is gone from `/proc/self/task`),
/// and a launch on a loaded machine saw it there once ("runs 2 threads"). So a second thread is
/// waited for, up to [`THREADS_PATIENCE`]: one that has been joined has run its last code and
/// is only leaving; one that is still there after it really runs, and the launch is refused.
fn check_single_threaded() -> Result<(), ApplyError> {
    wait_for_one_thread(thread_count, THREADS_PATIENCE)
}

/// The threads of this process: the entries of `/proc/self/task`, listed as the compile lists a
/// folder (`disk::linux_entries`, with `rustix`) rather than with `std::fs::read_dir`, whose
/// `opendir` takes its buffer from the C library's allocator: musl's maps and unmaps it afresh at
/// each listing, four system calls more on every launch.
fn thread_count() -> Result<usize, ApplyError> {
    // Never empty when it can be listed: the calling thread is in it.
    match super::disk::linux_entries(None, std::path::Path::new("/proc/self/task")).len() {
        0 => Err(fail("count threads", "/proc/self/task cannot be listed")),
        threads => Ok(threads),
    }
}

/// How long [`check_single_threaded`] waits for a joined thread to leave.
const THREADS_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

fn wait_for_one_thread(
    mut count: impl FnMut() -> Result<usize, ApplyError>,
    patience: std::time::Duration,
) -> Result<(), ApplyError> {
    let start = std::time::Instant::now();
    loop {
        let threads = count()?;
        if threads == 1 {
            return Ok(());
        }
        if start.elapsed() >= patience {
            return Err(fail(
                "exec helper",
                format!("runs {threads} threads; it must be single-threaded to enter namespaces"),
            ));
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// Writes the id maps of `child`, a process that entered a new user namespace. Done by the
/// parent: a map wider than one's own id needs the credentials of the parent namespace.
fn write_id_maps(child: libc::pid_t, uid: libc::uid_t, gid: libc::gid_t) -> Result<(), ApplyError> {
    let write = |file: &str, text: &str| {
        let path = format!("/proc/{child}/{file}");
        std::fs::write(&path, text).map_err(|e| fail(format!("write {path}"), e))
    };
    if uid == 0 {
        // Root owns the machine's files: keep every id as it is, so files keep their owners.
        // What a root chat could change outside is closed by the mounts (the system read-only,
        // the kernel's tunables read-only) and by having no capability.
        write("uid_map", "0 0 4294967295")?;
        write("gid_map", "0 0 4294967295")?;
    } else {
        write("setgroups", "deny")?;
        write("uid_map", &format!("{uid} {uid} 1"))?;
        write("gid_map", &format!("{gid} {gid} 1"))?;
    }
    Ok(())
}

/// Everything init does to itself before starting the program; inherited by the program.
fn confine_in_namespace(
    plan: &LinuxPlan,
    ns: &NamespacePlan,
    filter: seccompiler::BpfProgramRef,
    program: &OsString,
) -> Result<(), ApplyError> {
    if let Some(net) = &ns.network {
        network::keep_loopback_inside(net)?;
    }
    // Opened before the chat's fresh `/dev` replaces the machine's.
    let fuse = super::guard::open_devices(&ns.guards)?;
    mounts::build(ns, std::path::Path::new(program))?;
    super::guard::start(&ns.guards, fuse)?;
    crate::phase!("init: the mounts");
    limits::apply_in_init(&plan.limits)?;
    tracing::info!(
        mounts = ns.mounts.len() + ns.kernel.len(),
        "the mounts are in place"
    );
    super::descriptors::check_standard_descriptors()?;
    caps::drop_all()?;
    landlock::restrict_self(plan)?;
    crate::phase!("init: capabilities and Landlock");
    seccompiler::apply_filter(filter).map_err(|e| fail("seccomp", e))?;
    crate::phase!("init: seccomp");
    tracing::info!(
        instructions = filter.len(),
        "the kernel enforces the seccomp filter"
    );
    Ok(())
}

/// The fallback without namespaces: confine this very process and exec the program (it keeps
/// our pid). Descriptors above stderr would outlive the confinement (a folder opened outside is a
/// way back into it): they are closed at exec.
fn exec_in_place(
    plan: &LinuxPlan,
    filter: seccompiler::BpfProgramRef,
    program: &[CString],
    workdir: &CString,
) -> Result<Never, ApplyError> {
    super::descriptors::check_standard_descriptors()?;
    sys::cloexec_from_3()?;
    // A process group of the chat's own (see `sys::own_process_group`); the program keeps the
    // terminal when it exits, and the caller's shell takes it back as it does after any job.
    sys::own_process_group()?;
    // SAFETY: geteuid has no failure and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        caps::drop_all()?;
    }
    landlock::restrict_self(plan)?;
    seccompiler::apply_filter(filter).map_err(|e| fail("seccomp", e))?;
    tracing::info!(
        instructions = filter.len(),
        "the kernel enforces the seccomp filter"
    );
    exec_program(program, workdir)
}

/// Becomes the program (the fallback without namespaces: it keeps our pid). On failure, says
/// why and exits as a shell would: 127 for a missing program, 126 otherwise.
fn exec_program(program: &[CString], workdir: &CString) -> ! {
    // SAFETY: `workdir` is a C string the caller holds for the call; chdir only reads it.
    if unsafe { libc::chdir(workdir.as_ptr()) } != 0 {
        say!(
            "cli-sandbox exec: cannot enter the working folder {}: {}",
            workdir.to_string_lossy(),
            std::io::Error::last_os_error()
        );
        process::end_like(sys::exited(126));
    }
    let mut argv: Vec<*const libc::c_char> = program.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SIGPIPE at its default action, as `process::start_program` gives it (Rust's runtime
    // ignored it here, and an ignored signal stays ignored across exec). Setting a default
    // action cannot fail for SIGPIPE; were it to, the program would only see EPIPE.
    // SAFETY: SIG_DFL installs no handler of ours.
    let _ = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // SAFETY: argv is a NULL-terminated array of pointers into `program`'s C strings, which
    // outlive the call; execvp returns only on failure, reported below.
    unsafe { libc::execvp(argv[0], argv.as_ptr()) };
    let err = std::io::Error::last_os_error();
    say!(
        "cli-sandbox exec: cannot run {}: {err}",
        program[0].to_string_lossy()
    );
    process::end_like(sys::exited(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }));
}

#[cfg(test)]
mod tests {
    use super::sys::open_no_symlinks;
    use super::{thread_count, wait_for_one_thread};
    use std::time::Duration;

    #[test]
    fn the_threads_are_counted_a_second_one_among_them() {
        // The test harness runs other threads too: what is checked is that a thread of ours is
        // counted while it lives, so a listing that always said 1 would fail.
        let (started, running) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            started.send(()).unwrap();
            let _ = stopped.recv();
        });
        running.recv().unwrap();
        let with_it = thread_count().unwrap();
        assert!(
            with_it >= 2,
            "{with_it} threads counted with a second one running"
        );
        let listed = std::fs::read_dir("/proc/self/task").unwrap().count();
        assert!(listed >= 2, "the control listing sees {listed}");
        stop.send(()).unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn a_joined_thread_still_leaving_is_waited_for_and_a_live_one_refuses_the_launch() {
        // Two looks see a thread leaving, the third sees it gone: the launch goes on.
        let mut looks = [3, 2, 1].into_iter();
        let leaving = wait_for_one_thread(|| Ok(looks.next().unwrap()), Duration::from_secs(5));
        assert!(leaving.is_ok());
        assert_eq!(looks.next(), None, "looked until one thread was left");
        // A thread that stays is refused once the patience is over, naming the count.
        let mut calls = 0;
        let staying = wait_for_one_thread(
            || {
                calls += 1;
                Ok(2)
            },
            Duration::from_millis(5),
        );
        let err = staying.unwrap_err().to_string();
        assert!(err.contains("runs 2 threads"), "{err}");
        assert!(calls > 1, "looked again before refusing");
    }

    #[test]
    fn a_bind_source_reached_through_a_symlink_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        let real = dir.join("real/grant");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("swapped")).unwrap();
        assert!(open_no_symlinks(&real, true).is_ok());
        let err = open_no_symlinks(&dir.join("swapped/grant"), true).unwrap_err();
        assert!(err.detail.contains("symlink"), "{err}");
        // The symlink itself as the last component: not a folder (O_NOFOLLOW).
        assert!(open_no_symlinks(&dir.join("swapped"), true).is_err());
        assert!(open_no_symlinks(&dir.join("missing"), true).is_err());
    }
}
