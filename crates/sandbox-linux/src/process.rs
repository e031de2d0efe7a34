//! The processes of a launch with namespaces, and how a launch ends.
//!
//! Three processes take part (the first process of a new PID namespace must be a child):
//!
//! - **the helper**, outside every namespace, the launcher's own process. It clones init into new
//!   user, mount, PID and IPC namespaces, writes init's id maps, then only waits. It learns that
//!   init ended from a pidfd (no `SIGCHLD` to lose, whenever init ends), and what became of the
//!   program from a pipe whose only writer is init ([`Report`]). It passes on signals sent to it
//!   with `kill`, and it ends the chat when told to stop: `SIGTERM`, `SIGHUP` (also a hang-up of
//!   its terminal, seen by `poll` even when the signal went elsewhere) or a `SIGINT` sent with
//!   `kill` forward the signal, then `SIGTERM`, then `SIGKILL` of init, which ends every process
//!   of the namespace, whatever they ignore.
//! - **init**, pid 1 of the chat's PID namespace. Before anything else it closes every descriptor
//!   but stdio and its report pipe, and makes itself not dumpable (no `/proc/1/fd`, no
//!   `ptrace`, no `pidfd_getfd` by the chat, which runs as the same uid). It builds the mounts,
//!   confines itself, starts the program, reaps orphans, and passes on signals sent to it with
//!   `kill` (the helper's). When the program exits it reports the wait status and exits; the
//!   kernel then ends every other process of the namespace before init's end is seen.
//! - **the program**, pid 2 inside.
//!
//! The launch ends when init has ended, not when init reports the program's end, although the
//! kernel's taking down of init's namespaces (the mount namespace's end waits for an RCU grace
//! period) costs a launch about 0.12 ms: ending on the report was tried, with init first killing
//! and reaping the rest of the chat so that no process of it ran after the launch (without that,
//! a chat ran on up to 40 ms after its launch had ended). It was not kept because init, left
//! behind, is then reaped by whoever adopts it, and a provider that runs as pid 1 of a container
//! and reaps only its own children would keep one zombie a launch until its process table fills.
//! Before it ends, the helper runs the kernel's collector of unix sockets, which frees a pipe the
//! chat left in flight in sockets no process holds ([`sys::collect_unix_garbage`]). A helper
//! killed with SIGKILL cannot wait for anything: its caller's wait returns while the kernel is
//! still ending the chat (for a few milliseconds).
//!
//! What the helper reports comes from `waitpid` of the program (through init's pipe, which the
//! program cannot reach) or of init itself, never from bytes the program can write; a program that
//! fills, closes or writes every descriptor it can reach changes nothing.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::sys::{
    self, ApplyError, close_all_from, fail, is_tty, kill, mask, prctl, read_signal, reap,
    signal_set,
};

/// What serves the egress proxy on the listener init hands out (`network = "allowlist"`), in
/// the helper, outside the chat, for the chat's life (it must return at once: a thread of its
/// own). The launch crate's `egress::serve_plan`.
pub type EgressServer = dyn Fn(OwnedFd, &crate::plan::format::EgressPlan) -> Result<(), String>;

/// After a stop request, how long the program has before it gets `SIGTERM` (when the request was
/// another signal) and before init gets `SIGKILL`.
const TERM_AFTER: Duration = Duration::from_secs(1);
const KILL_AFTER: Duration = Duration::from_secs(3);

/// Signals that ask the chat to stop.
const STOP: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];
/// Signals passed on to the program when sent with `kill` (a terminal's own signals, Ctrl-C
/// among them, reach the program directly: it shares the terminal's process group).
const PASSED_ON: [libc::c_int; 4] = [libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2, libc::SIGWINCH];

/// Every signal the helper and init take through a descriptor or `sigwaitinfo`.
pub(super) fn watched() -> libc::sigset_t {
    let all: Vec<libc::c_int> = STOP
        .iter()
        .chain(&PASSED_ON)
        .copied()
        .chain([libc::SIGCHLD])
        .collect();
    signal_set(&all)
}

fn sent_with_kill(code: libc::c_int) -> bool {
    code == libc::SI_USER || code == libc::SI_QUEUE
}

/// What init tells the helper, through a pipe only init holds: `Started` once the program runs,
/// then `Ended`; or `Failed` instead of both.
enum Report {
    /// Confinement failed before the program started.
    Failed(String),
    /// The program runs: from here on, an init that ends without `Ended` was ended from outside
    /// (the OOM killer, a root chat that raised init's OOM score), and the launch says so rather
    /// than that the program never started.
    Started,
    /// The program ended with this wait status.
    Ended(libc::c_int),
}

impl Report {
    const FAILED: u8 = b'E';
    const STARTED: u8 = b'R';
    const ENDED: u8 = b'S';

    fn encode(&self) -> Vec<u8> {
        match self {
            Report::Failed(why) => [&[Report::FAILED][..], why.as_bytes()].concat(),
            Report::Started => vec![Report::STARTED],
            Report::Ended(status) => [&[Report::ENDED][..], &status.to_ne_bytes()].concat(),
        }
    }

    /// What the pipe held: whether the program started, and the last word (`Failed` or
    /// `Ended`), if init got to say it.
    fn decode(bytes: &[u8]) -> (bool, Option<Report>) {
        let (started, rest) = match bytes.split_first() {
            Some((&Report::STARTED, rest)) => (true, rest),
            _ => (false, bytes),
        };
        let last = match rest.split_first() {
            Some((&Report::FAILED, why)) => {
                Some(Report::Failed(String::from_utf8_lossy(why).into()))
            }
            Some((&Report::ENDED, status)) => status
                .try_into()
                .ok()
                .map(|s| Report::Ended(libc::c_int::from_ne_bytes(s))),
            _ => None,
        };
        (started, last)
    }
}

/// The egress proxy's listener on its way from init (`network = "allowlist"`), and what serves it.
pub(super) struct EgressHandoff {
    /// The helper's end of the pair init sends the listener over.
    pub from_init: OwnedFd,
    /// The proxy's rules and log.
    pub plan: crate::plan::format::EgressPlan,
    /// What serves it (`launch::egress::serve_plan`).
    pub serve: &'static EgressServer,
}

/// Init as the helper sees it.
pub(super) struct Init {
    pub pid: libc::pid_t,
    pub pidfd: OwnedFd,
    /// The read end of init's report pipe (non-blocking).
    pub report: OwnedFd,
    /// The terminal the helper's group held in the foreground before init took it for the
    /// chat's group: given back once init has ended.
    pub terminal: Option<sys::ForegroundTaken>,
    /// The chat's own network, ended once init has (`network = "isolated"`).
    pub pasta: Option<super::network::Pasta>,
    /// The refused folders held for the stand-ins, let go (and removed where this launch made
    /// them) once init has ended.
    pub stand_ins: Vec<super::stand_in_dirs::Held>,
    /// The reader of the kernel's refusals, or why there is none (`None`: no record asked).
    pub denials: Option<Result<super::denials::Reader, String>>,
    /// The chat's id, for the record.
    pub chat: String,
    /// Where the record goes.
    pub denials_record: Option<std::path::PathBuf>,
    /// The chat's own cgroup (`[limits]`): read for what stopped the chat, then removed, once
    /// init has ended.
    pub cgroup: Option<super::cgroup::ChatCgroup>,
    /// `network = "allowlist"`: the egress listener to receive and serve.
    pub egress: Option<EgressHandoff>,
}

/// How long the helper waits, once the chat has ended, for its marker to come back through the
/// kernel's audit queue (it comes within milliseconds; a longer wait means the audit log is
/// backed up, and the record may then miss the last refusals).
const DENIALS_PATIENCE: Duration = Duration::from_secs(2);

/// A stop in progress: which signal asked for it, and since when.
struct Stop {
    signal: libc::c_int,
    since: Instant,
    termed: bool,
    killed: bool,
}

/// The helper's side: waits for init, passing on signals and ending the chat when asked, then
/// ends this process the way the program ended. `signals` reads [`watched`], blocked since before
/// init was cloned.
pub(super) fn wait_for_init(mut init: Init, signals: OwnedFd) -> Result<sys::Never, ApplyError> {
    // Everything the helper inherited and does not need (the caller's leaked descriptors) is
    // closed: it lives as long as the chat.
    let mut keep = vec![
        init.pidfd.as_raw_fd(),
        init.report.as_raw_fd(),
        signals.as_raw_fd(),
    ];
    keep.extend(init.stand_ins.iter().flat_map(|h| h.fds()));
    let audit = match &init.denials {
        Some(Ok(reader)) => reader.fd(),
        _ => -1,
    };
    keep.push(audit);
    if let Some(e) = &init.egress {
        keep.push(e.from_init.as_raw_fd());
    }
    close_all_from(3, &keep)?;
    // The egress listener, served outside for the chat's life (its thread opens its own
    // descriptors from here on). None comes when init failed first: it says why in its report,
    // read below.
    if let Some(e) = init.egress.take()
        && let Some(listener) = super::egress::receive_listener(&e.from_init)
        && let Err(why) = (e.serve)(listener, &e.plan)
    {
        kill(init.pid, libc::SIGKILL);
        return Err(fail("egress: serve the proxy", why));
    }
    let tty: Option<RawFd> = [0, 1, 2].into_iter().find(|fd| is_tty(*fd));
    let mut hung_up = false;
    let mut stop: Option<Stop> = None;
    let begin = |stop: &mut Option<Stop>, signal| {
        if stop.is_none() {
            *stop = Some(Stop {
                signal,
                since: Instant::now(),
                termed: signal == libc::SIGTERM,
                killed: false,
            });
        }
    };
    loop {
        // A negative descriptor is left out by `poll`.
        let pollfd = |fd: RawFd, events| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        let mut fds = [
            pollfd(init.pidfd.as_raw_fd(), libc::POLLIN),
            pollfd(signals.as_raw_fd(), libc::POLLIN),
            // Events 0: only a hang-up (or an error) is reported, and nothing is read.
            pollfd(tty.filter(|_| !hung_up).unwrap_or(-1), 0),
            pollfd(audit, libc::POLLIN),
        ];
        let timeout = stop.as_ref().map(|s| {
            let next = if s.termed { KILL_AFTER } else { TERM_AFTER };
            let left = next.saturating_sub(s.since.elapsed());
            libc::timespec {
                // A few seconds at most, as `time_t` (a name the `libc` crate deprecates on musl).
                tv_sec: left.as_secs() as _,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            }
        });
        // SAFETY: `fds` is a valid array of its length; the timeout is valid or null; no
        // signal mask is changed.
        let rc = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                timeout
                    .as_ref()
                    .map_or(std::ptr::null(), |t| t as *const libc::timespec),
                std::ptr::null(),
            )
        };
        if rc < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            // Nothing to wait with: end the chat rather than leave it unwatched.
            kill(init.pid, libc::SIGKILL);
            return Err(sys::os_fail("wait for the chat"));
        }
        if fds[3].revents & libc::POLLIN != 0
            && let Some(Ok(reader)) = init.denials.as_mut()
        {
            reader.drain();
        }
        if fds[0].revents & libc::POLLIN != 0 {
            break;
        }
        while let Some((sig, code)) = read_signal(&signals) {
            let stops = match sig {
                libc::SIGTERM | libc::SIGHUP => true,
                libc::SIGINT => sent_with_kill(code),
                _ => false,
            };
            if stops {
                begin(&mut stop, sig);
                kill(init.pid, sig);
            } else if sig != libc::SIGCHLD && sent_with_kill(code) {
                kill(init.pid, sig);
            }
        }
        if fds[2].revents != 0 {
            hung_up = true;
            begin(&mut stop, libc::SIGHUP);
            kill(init.pid, libc::SIGHUP);
        }
        if let Some(s) = stop.as_mut() {
            if !s.termed && s.since.elapsed() >= TERM_AFTER {
                s.termed = true;
                kill(init.pid, libc::SIGTERM);
            } else if s.termed && !s.killed && s.since.elapsed() >= KILL_AFTER {
                s.killed = true;
                kill(init.pid, libc::SIGKILL);
            }
        }
    }

    crate::phase!("helper: init ended");
    let init_status = loop {
        let reaped = reap(init.pid);
        if !matches!(reaped, Ok(None)) {
            // Init is gone (or can never be reaped): the terminal goes back either way.
            if let Some(taken) = init.terminal {
                sys::give_back_terminal(taken);
            }
        }
        if let Some(status) = reaped? {
            break status;
        }
        // The pidfd said init ended; its zombie is there to reap.
        std::thread::sleep(Duration::from_millis(1));
    };
    // Nothing of the chat's outlives the launch, pasta included.
    if let Some(pasta) = init.pasta.take() {
        pasta.stop();
    }
    // Nor the folders made for its stand-ins (every process of the chat has ended).
    super::stand_in_dirs::release(std::mem::take(&mut init.stand_ins));
    // What the kernel refused the chat, written where the launch asked.
    if let (Some(reader), Some(path)) = (init.denials.take(), init.denials_record.as_ref()) {
        let (recorded, why, denials, incomplete) = match reader {
            Ok(reader) => {
                let (denials, lost) = reader.finish(&init.chat, DENIALS_PATIENCE);
                (true, None, Some(denials), lost)
            }
            Err(why) => (false, Some(why), None, None),
        };
        super::denials::write(
            path,
            &super::denials::Record {
                version: 1,
                chat: &init.chat,
                recorded,
                why,
                denials,
                incomplete,
                never: super::denials::NEVER,
            },
        );
    }
    sys::collect_unix_garbage();
    // Which limit stopped the chat, if one did: from the kernel's counts, never from the chat.
    if let Some(cgroup) = init.cgroup.take() {
        for line in cgroup.report() {
            notice(&format!("{line}\n"));
        }
    }
    let mut heard = Vec::new();
    read_report(&init.report, &mut heard);
    let (started, report) = Report::decode(&heard);
    match (report, stop) {
        (Some(Report::Failed(why)), _) => Err(fail("confine", why)),
        (Some(Report::Ended(status)), _) => end_like(status),
        // No last word (`decode` never gives `Started` as one).
        (_, Some(s)) if s.killed => {
            notice(&format!(
                "cli-sandbox: the chat did not end within {} s of signal {}: every process of it was killed\n",
                KILL_AFTER.as_secs(),
                s.signal
            ));
            end_like(s.signal)
        }
        _ if started => {
            notice(&format!(
                "cli-sandbox: the sandbox's init ended while the program ran (wait status {init_status:#x}): every process of the chat ended with it\n"
            ));
            end_like(init_status)
        }
        _ => Err(fail(
            "the sandbox's init",
            format!("ended without a report (wait status {init_status:#x})"),
        )),
    }
}

/// Adds what init's pipe holds now to `heard` (init has ended: the pipe holds all it will).
fn read_report(report: &OwnedFd, heard: &mut Vec<u8>) {
    let mut bytes = [0u8; 4096];
    loop {
        // SAFETY: reading at most the buffer's size into it, from a non-blocking pipe.
        let n = unsafe { libc::read(report.as_raw_fd(), bytes.as_mut_ptr().cast(), bytes.len()) };
        match usize::try_from(n) {
            Ok(0) => return,
            Ok(n) => heard.extend_from_slice(&bytes[..n]),
            Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            // Nothing more to read now (`EAGAIN`), or nothing that can be read.
            Err(_) => return,
        }
    }
}

/// Writes a notice on stderr only if that does not block. stderr is shared with the program,
/// which may have filled it (a pipe its reader drains only at the end, or never): a helper
/// blocked there would never end the launch it was told to stop. A notice that does not fit is
/// dropped; the exit status says the same.
fn notice(text: &str) {
    let mut out = libc::pollfd {
        fd: 2,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    let ready = unsafe { libc::poll(&mut out, 1, 0) };
    if ready == 1 && out.revents & libc::POLLOUT != 0 {
        // One write of less than PIPE_BUF into a pipe with room (POLLOUT) does not wait, and
        // nothing of the chat is left to fill it between the poll and the write.
        // SAFETY: writing the bytes of a live string.
        let _ = unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    }
}

/// Ends this process the way the program ended: the same exit code, or the same signal.
pub(super) fn end_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // Each step may fail (a signal whose action cannot be reset, SIGKILL among them, needs
        // none); whatever fails, the exit below still ends the helper with the shell's code for
        // that signal, so the failures are not reported separately.
        // SAFETY: SIG_DFL installs no handler of ours; `sig` came from the kernel's wait status.
        let _ = unsafe { libc::signal(sig, libc::SIG_DFL) };
        let _ = mask(libc::SIG_UNBLOCK, &signal_set(&[sig]));
        // SAFETY: raise touches no memory; with the default action the signal ends this process.
        let _ = unsafe { libc::raise(sig) };
        std::process::exit(128 + sig);
    }
    std::process::exit(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    });
}

/// Init's side, up to the program's start: `setup` builds the mounts and confines init. Never
/// returns.
pub(super) fn run_init(
    report: OwnedFd,
    go: OwnedFd,
    early: impl FnOnce() -> Result<(), ApplyError>,
    setup: impl FnOnce() -> Result<(), ApplyError>,
    program: &[CString],
    workdir: &CString,
) -> ! {
    let report_fd = report.as_raw_fd();
    let mut report = std::fs::File::from(report);
    let mut say = |r: Report| {
        // Short writes into a pipe that holds at most the one before: they neither block nor
        // split.
        let _ = report.write_all(&r.encode());
    };
    // The chat must not outlive the helper waiting for it. Before this call the helper could
    // already have died: then the "go" below never comes and init leaves.
    if let Err(e) = prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        "PR_SET_PDEATHSIG",
    ) {
        say(Report::Failed(e.to_string()));
        leave(2);
    }
    let mut go_byte = [0u8; 1];
    let mut go = std::fs::File::from(go);
    if io::Read::read_exact(&mut go, &mut go_byte).is_err() {
        // The helper gave up (it says why); leave quietly.
        leave(2);
    }
    drop(go);
    crate::phase!("init: woken");
    // What must be done before init closes its descriptors (the egress listener handed out).
    if let Err(e) = early() {
        say(Report::Failed(e.to_string()));
        leave(2);
    }
    // The id maps are written (the helper needed init dumpable to write them): from here on
    // nothing of init's can be read or traced by the chat, which runs as the same uid.
    // A process group of the chat's own, holding the terminal if the launcher's group held it:
    // `kill(0)` and `setpriority(PRIO_PGRP, 0)` from inside reach only the chat, and a
    // terminal's Ctrl-C and resize reach the program (the helper gives the terminal back once
    // the chat has ended).
    let confined = prctl(libc::PR_SET_DUMPABLE, 0, "PR_SET_DUMPABLE")
        .and_then(|()| close_all_from(3, &[report_fd]))
        .and_then(|()| mask(libc::SIG_BLOCK, &watched()))
        .and_then(|()| sys::own_process_group().map(drop))
        .and_then(|()| setup());
    if let Err(e) = confined {
        say(Report::Failed(e.to_string()));
        leave(2);
    }
    let status = match start_program(program, workdir) {
        Ok(pid) => {
            crate::phase!("init: start the program");
            say(Report::Started);
            reap_until(pid)
        }
        // Ends as if the program had exited with this code, like a shell that cannot run it.
        Err(code) => sys::exited(code),
    };
    crate::phase!("init: the program ended");
    say(Report::Ended(status));
    // Leaving pid 1 ends every other process of the namespace.
    leave(0);
}

fn leave(code: libc::c_int) -> ! {
    // SAFETY: leaving without running destructors of state shared with the helper's image.
    unsafe { libc::_exit(code) }
}

/// Reaps every child until `program` ends, passing on signals sent to init with `kill` (the
/// helper's); returns the program's wait status.
fn reap_until(program: libc::pid_t) -> libc::c_int {
    let set = watched();
    loop {
        // SAFETY: a zeroed siginfo is a valid out-parameter.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` and `info` are locals alive for the call.
        let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
        if sig < 0 {
            // EINTR is the only failure with a valid set (a stopped-and-continued init): wait
            // again. Any other would repeat forever; init has no one to tell but the program's
            // end, which SIGCHLD still brings.
            continue;
        }
        if sig == libc::SIGCHLD {
            loop {
                let mut status = 0;
                // SAFETY: waiting for any child of ours, with a valid out-parameter.
                let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
                if pid == program {
                    return status;
                }
                if pid <= 0 {
                    break;
                }
            }
        } else if sent_with_kill(info.si_code) {
            kill(program, sig);
        }
    }
}

unsafe extern "C" {
    /// The process's environment, as the C library keeps it (glibc and musl alike; the `libc`
    /// crate names it for glibc only).
    static environ: *const *const libc::c_char;
}

/// Starts the program in the working folder with no signal blocked and `SIGPIPE` at its default
/// action (Rust's runtime ignores it in the helper, and an ignored signal stays ignored across
/// exec: a program would see `EPIPE` where it dies outside; a shell and `std::process::Command`
/// give it the default too). The folder is entered here first, so that not entering it is told
/// apart from not running the program. On failure, says why on stderr and gives the exit code a
/// shell gives: 127 for a program that is missing, 126 otherwise.
///
/// The child is made as `posix_spawn` makes it, `clone(CLONE_VM | CLONE_VFORK)` (nothing of
/// init's memory is copied; init waits until the child has exec'd or failed), but without
/// `posix_spawn`'s reset of every signal's action in the child (121 system calls, each through
/// the filter init already runs under): init handles no signal that can arrive from outside (it
/// takes its signals with `sigwaitinfo`; Rust's runtime in the full binary handles SIGSEGV and
/// SIGBUS, its own faults, which the child's few system calls do not cause), and exec resets
/// handlers anyway, so the child has only the mask to clear and SIGPIPE to reset.
fn start_program(program: &[CString], workdir: &CString) -> Result<libc::pid_t, libc::c_int> {
    // SAFETY: `workdir` is a C string the caller holds for the call; chdir only reads it.
    if unsafe { libc::chdir(workdir.as_ptr()) } != 0 {
        say!(
            "cli-sandbox exec: cannot enter the working folder {}: {}",
            workdir.to_string_lossy(),
            io::Error::last_os_error()
        );
        return Err(126);
    }
    let mut argv: Vec<*const libc::c_char> = program.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let candidates = candidates(&program[0]);
    let mut tries: Vec<*const libc::c_char> = candidates.iter().map(|c| c.as_ptr()).collect();
    tries.push(std::ptr::null());
    let mut exec = Exec {
        tries: tries.as_ptr(),
        argv: argv.as_ptr(),
        // SAFETY: init is single-threaded (the helper checked before the clone) and nothing
        // here changes the environment, so reading the `environ` pointer races with no writer.
        envp: unsafe { environ }.cast(),
        empty: signal_set(&[]),
        error: 0,
    };
    // The child's stack, for the moments before its exec; the stack grows down from its end on
    // the architectures built here, 16-byte aligned.
    let mut stack = vec![0u128; CHILD_STACK / 16];
    let top = stack.as_mut_ptr_range().end.cast::<libc::c_void>();
    // SAFETY: `exec_child` runs on `stack` (alive until clone returns, which CLONE_VFORK makes
    // wait for the child's exec or exit) and reads and writes only `exec`, which outlives that
    // too; the flags share memory and nothing else, and ask for SIGCHLD at the child's end.
    let pid = unsafe {
        libc::clone(
            exec_child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut exec as *mut Exec).cast(),
        )
    };
    drop(stack);
    if pid < 0 {
        say!(
            "cli-sandbox exec: cannot start {}: {}",
            program[0].to_string_lossy(),
            io::Error::last_os_error()
        );
        return Err(126);
    }
    if exec.error == 0 {
        return Ok(pid);
    }
    // The child did not exec: it has exited, and its zombie is reaped here (its status is
    // ours, 127, and tells nothing more than `exec.error`).
    let mut status = 0;
    // SAFETY: waiting for our own child, with a valid out-parameter.
    let _ = unsafe { libc::waitpid(pid, &mut status, 0) };
    let err = io::Error::from_raw_os_error(exec.error);
    say!(
        "cli-sandbox exec: cannot run {}: {err}",
        program[0].to_string_lossy()
    );
    Err(if err.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// The child's stack size: it calls a few system calls and nothing else.
const CHILD_STACK: usize = 16 * 1024;

/// The paths to try for `name`, as `posix_spawnp` tries them: `name` itself when it holds a
/// `/`, else each folder of the program's `PATH` (`/bin:/usr/bin` when it has none; an empty
/// entry is the working folder) joined with it.
fn candidates(name: &CString) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_bytes();
    if bytes.contains(&b'/') {
        return vec![name.clone()];
    }
    let path = std::env::var_os("PATH");
    let path = path
        .as_deref()
        .map_or(&b"/bin:/usr/bin"[..], |p| p.as_bytes());
    path.split(|&b| b == b':')
        .filter_map(|dir| {
            let dir = if dir.is_empty() { &b"."[..] } else { dir };
            CString::new([dir, b"/", bytes].concat()).ok()
        })
        .collect()
}

/// What [`exec_child`] shares with init: the paths to try (NULL-terminated), the program's
/// arguments and environment, the empty mask, and the error of an exec that failed (0 until
/// then).
struct Exec {
    tries: *const *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    empty: libc::sigset_t,
    error: libc::c_int,
}

/// The child of [`start_program`], in init's memory until it execs: clears the signal mask,
/// gives SIGPIPE its default action, becomes the program; on failure leaves the error for init
/// and exits. Only system calls here: the memory is init's, which waits.
extern "C" fn exec_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Exec` that `start_program` passed and holds for the child's life.
    let exec = unsafe { &mut *arg.cast::<Exec>() };
    // SAFETY: a valid set, this thread's mask; nothing to undo on failure (the program would
    // start with signals blocked; the set is empty and cannot be refused).
    let _ = unsafe { libc::sigprocmask(libc::SIG_SETMASK, &exec.empty, std::ptr::null_mut()) };
    // SAFETY: SIG_DFL installs no handler; the child has its own copy of init's actions (no
    // CLONE_SIGHAND), so init's are unchanged.
    let _ = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // Each path in turn, as `posix_spawnp` does: a missing one, or one not permitted, lets the
    // search go on (not permitted is the error if nothing runs); any other error ends it. A file
    // the kernel cannot run (ENOEXEC) is not handed to a shell.
    let mut denied = false;
    let mut searched_all = true;
    let mut error = libc::ENOENT;
    let mut next = exec.tries;
    // SAFETY: `tries` is a NULL-terminated array that init holds until the child has exec'd or
    // exited; reading each element until the NULL stays inside it.
    while let Some(path) = unsafe { next.as_ref() }.copied().filter(|p| !p.is_null()) {
        // SAFETY: `path`, `argv` and `envp` are NULL-terminated C strings and arrays that init
        // holds until the child has exec'd or exited; execve returns only on failure.
        unsafe { libc::execve(path, exec.argv, exec.envp) };
        // errno, of this thread (the child runs on init's thread storage, which init does not
        // read until the child has exited); reading it allocates nothing.
        error = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOEXEC);
        match error {
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            _ => {
                searched_all = false;
                break;
            }
        }
        // SAFETY: still inside the array: this element was not its NULL end.
        next = unsafe { next.add(1) };
    }
    exec.error = if denied && searched_all {
        libc::EACCES
    } else {
        error.max(1)
    };
    // SAFETY: leaving without running anything of init's image.
    unsafe { libc::_exit(127) }
}
