//! Linux confinement, for real: processes run through `cli-sandbox step` try the forbidden thing
//! and fail; verdicts come from the disk, compared with `Policy::decide`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cli_sandbox_tests::{cli_sandbox, confinement_available};
use contract::{self, Outside};
use launch::Context;
use launch::demo::Demo;
use sandbox_core::{GrantRequest, Op, Policy};

struct Fixture {
    _dir: tempfile::TempDir,
    demo: Demo,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let demo = Demo::create(dir.path()).expect("demo layout");
    Fixture { _dir: dir, demo }
}

fn step_command(demo: &Demo, grants: &[String], argv: &[&str]) -> Command {
    cli_sandbox_tests::launches::step(None, demo, grants, argv)
}

/// `cli-sandbox exec --policy PLAN -- argv`: the helper applying a plan the test wrote.
fn exec_command(plan: &Path, argv: &[&str]) -> Command {
    let mut cmd = Command::new(cli_sandbox());
    cmd.arg("exec")
        .arg("--policy")
        .arg(plan)
        .arg("--")
        .args(argv);
    cmd
}

fn step(demo: &Demo, grants: &[String], argv: &[&str]) -> Output {
    step_command(demo, grants, argv)
        .output()
        .expect("run cli-sandbox step")
}

fn policy(demo: &Demo, grants: &[String]) -> Policy {
    let ctx = Context::load(&demo.settings()).expect("context");
    let grants: Vec<_> = grants
        .iter()
        .map(|g| GrantRequest::parse(g).unwrap())
        .collect();
    ctx.policy(&demo.chat, &grants).expect("policy")
}

fn table(outcomes: &[contract::Outcome]) -> String {
    outcomes
        .iter()
        .map(|o| {
            format!(
                "{} {:<26} expected {:?}, actual {:?} ({})",
                if o.passed() { "  " } else { "!!" },
                o.id,
                o.expected,
                o.actual,
                o.rule
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_contract_action_under_step_gets_the_verdict_decide_gives() {
    if !confinement_available("every_contract_action_under_step_gets_the_verdict_decide_gives") {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let outside = Outside::start(demo).expect("start tmux and the sentinel outside");
    let grants = vec![demo.grant_arg()];
    let policy = policy(demo, &grants);
    let contract::Harness { actions, script } =
        contract::Harness::write(demo, &policy, &outside, "tok-step").unwrap();

    let out = step(demo, &grants, &["/bin/sh", script.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "harness failed: {out:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcomes = contract::read_verdicts(&actions, &outside);
    let report = table(&outcomes);
    eprintln!("{report}");
    assert!(outcomes.iter().all(|o| o.passed()), "mismatches:\n{report}");
    // The table must cover both sides: a contract where nothing is allowed proves nothing.
    assert!(
        outcomes
            .iter()
            .filter(|o| o.actual == contract::Verdict::Allowed)
            .count()
            >= 8
    );
    assert!(
        outcomes
            .iter()
            .filter(|o| o.actual == contract::Verdict::Refused)
            .count()
            >= 15
    );
    for way_out in ["tmux-outside", "signal-launcher", "environ-launcher"] {
        assert!(
            outcomes.iter().any(|o| o.id == way_out),
            "{way_out} was not tried"
        );
    }
}

#[test]
fn a_read_only_grant_is_readable_and_not_writable() {
    if !confinement_available("a_read_only_grant_is_readable_and_not_writable") {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let grants = vec![format!("{}:ro", demo.other_workflow.display())];
    let doc = demo.other_workflow.join("doc.md");
    let copy = demo.runtime.join("copy");
    let script = format!(
        "cat '{}' > '{}'; echo changed >> '{}'; touch '{}/new'",
        doc.display(),
        copy.display(),
        doc.display(),
        demo.other_workflow.display()
    );
    step(demo, &grants, &["/bin/sh", "-c", &script]);
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), demo.secret(&doc));
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), demo.secret(&doc));
    assert!(!demo.other_workflow.join("new").exists());
}

#[test]
fn planning_created_after_launch_is_not_writable() {
    if !confinement_available("planning_created_after_launch_is_not_writable") {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    std::fs::remove_dir_all(demo.granted.join("planning")).unwrap();
    let grants = vec![demo.grant_arg()];
    let target = demo.granted.join("planning/plan.json");
    let script = format!(
        "mkdir -p '{0}/planning'; echo injected > '{1}'",
        demo.granted.display(),
        target.display()
    );
    step(demo, &grants, &["/bin/sh", "-c", &script]);
    assert!(
        !target.exists(),
        "a planning/plan.json was written from inside"
    );
}

#[test]
fn the_exit_status_and_a_fatal_signal_are_the_programs() {
    if !confinement_available("the_exit_status_and_a_fatal_signal_are_the_programs") {
        return;
    }
    let f = fixture();
    let out = step(&f.demo, &[], &["/bin/sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    let out = step(&f.demo, &[], &["/bin/sh", "-c", "kill -TERM $$"]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(15), "{:?}", out.status);
    let out = step(&f.demo, &[], &["/nonexistent/program"]);
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn stdio_and_the_harmless_devices_work_and_the_working_folder_is_the_runtime() {
    if !confinement_available(
        "stdio_and_the_harmless_devices_work_and_the_working_folder_is_the_runtime",
    ) {
        return;
    }
    let f = fixture();
    let out = step_command(
        &f.demo,
        &[],
        &[
            "/bin/sh",
            "-c",
            "pwd; read line; echo \"got $line\"; head -c 4 /dev/zero | wc -c; head -c 4 /dev/urandom | wc -c; echo x > /dev/null && echo null-ok; python3 -c 'import os; os.openpty()' && echo pty-ok; echo s > /dev/shm/cli-sandbox-shm && cp /bin/true /dev/shm/t && /dev/shm/t && echo shm-ok; { touch /dev/cli-sandbox-dev || mkdir /dev/cli-sandbox-dir || ln -s x /dev/cli-sandbox-link || mv /dev/shm/cli-sandbox-shm /dev/cli-sandbox-moved; } 2>/dev/null || echo dev-sealed; grep -q ' /dev/shm rw,nosuid,nodev' /proc/self/mountinfo && echo shm-nosuid-nodev",
        ],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .spawn()
    .and_then(|mut child| {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"hello\n")?;
        child.wait_with_output()
    })
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            f.demo.runtime.to_str().unwrap(),
            "got hello",
            "4",
            "4",
            "null-ok",
            "pty-ok",
            // /dev/shm is writable (and holds programs), /dev itself is sealed.
            "shm-ok",
            "dev-sealed",
            "shm-nosuid-nodev"
        ],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// When the launch has ended, no process of the chat runs: tried with a process in the
/// background, one in a session of its own, one that ignores every signal it can, one stopped,
/// and a loop that keeps starting processes while the program ends. The same script run
/// unconfined is the control: there, all of them are found running afterwards.
#[test]
fn no_process_of_the_chat_outlives_it() {
    if !confinement_available("no_process_of_the_chat_outlives_it") {
        return;
    }
    let f = fixture();
    let marker = format!("cli-sandbox-left-behind-{}", std::process::id());
    let script = format!(
        "(exec -a {marker}-background sleep 300) & \
         (setsid sh -c 'exec -a {marker}-detached sleep 301' &) ; \
         (trap '' TERM HUP INT QUIT USR1 USR2; exec -a {marker}-deaf sleep 302) & \
         (exec -a {marker}-stopped sleep 303) & kill -STOP $! ; \
         (for i in $(seq 300); do (exec -a {marker}-spawned sleep 304 &) ; done) & \
         sleep 0.2; exit 0"
    );
    let running = |what: &str| {
        let out = Command::new("pgrep")
            .args(["-f", &format!("{marker}-{what}")])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    };
    let kinds = ["background", "detached", "deaf", "stopped", "spawned"];

    // The control: unconfined, every kind is still there after the script has ended.
    let control = Command::new("/bin/bash")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(control.success());
    let seen: Vec<&str> = kinds.iter().copied().filter(|k| running(k)).collect();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // Until none is left: a process the control's loop forks while pkill reads /proc escapes
    // that round (on a loaded machine the loop is still forking), and would be taken for the
    // chat's below.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while kinds.iter().any(|k| running(k)) && std::time::Instant::now() < deadline {
        let _ = Command::new("pkill")
            .args(["-KILL", "-f", &marker])
            .status();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(seen, kinds, "the control did not leave every kind running");
    assert!(
        !kinds.iter().any(|k| running(k)),
        "the control's processes could not be ended"
    );

    let out = step(&f.demo, &[], &["/bin/bash", "-c", &script]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<&str> = kinds.iter().copied().filter(|k| running(k)).collect();
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &marker])
        .status();
    assert!(left.is_empty(), "processes outlived the chat: {left:?}");
}

/// The order behind the test above, for a launch that would end a moment too early (as one that
/// ended on init's report before init had ended the rest of the chat did: the chat ran on for up
/// to 40 ms, too short for `pgrep`). A process of the chat writes the clock (bash's
/// `$EPOCHREALTIME`, microseconds) as fast as it can (four of them), ignoring every signal they
/// may, and the last time it wrote must come before the moment the caller saw the launch end
/// (with no pipe of the caller's held by the chat, which would make the caller wait for init). A process of the chat found running during the launch is also gone then, reaped,
/// not even a zombie; the control is that probe during the launch, which sees it.
#[test]
fn the_launch_ends_only_after_the_chats_last_process() {
    if !confinement_available("the_launch_ends_only_after_the_chats_last_process") {
        return;
    }
    let f = fixture();
    // Twenty launches: the moment is short, and a launch that ended too early is not seen at
    // every try (the launch that ended on init's report without init's ending the rest showed
    // it in about one launch in five, by 0.7 to 10 ms: tried). Four writers keep both cores
    // busy, which delays init's end, and with it the chat's, past the moment the caller sees.
    for round in 0..20 {
        launch_and_read_the_clock(&f.demo, round);
    }
}

fn launch_and_read_the_clock(demo: &Demo, round: u32) {
    let marker = format!("cli-sandbox-lingering-{}-{round}", std::process::id());
    let clock = demo
        .home
        .join(format!("clock-{}-{round}", std::process::id()));
    let script = format!(
        "exec 3>>'{}'; \
         (trap '' TERM HUP INT; exec -a {marker} sleep 305) & \
         for i in 1 2 3 4; do \
           (trap '' TERM HUP INT; while :; do printf '%s\\n' \"$EPOCHREALTIME\" >&3; done) & \
         done; \
         sleep 0.1; exit 0",
        clock.display()
    );
    let mut launch = step_command(demo, &[], &["/bin/bash", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let pid = loop {
        let out = Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        let found = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<i32>().ok());
        if let Some(pid) = found {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the chat's process never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let process = rustix::process::Pid::from_raw(pid).unwrap();
    assert!(
        rustix::process::test_kill_process(process).is_ok(),
        "the control: the probe sees the chat's process while the launch runs"
    );
    assert!(launch.wait().unwrap().success());
    let ended = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let alive = rustix::process::test_kill_process(process).is_ok();
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &marker])
        .status();
    assert!(
        !alive,
        "the launch ended while a process of the chat still existed"
    );
    let written = std::fs::read_to_string(&clock).unwrap();
    let times: Vec<f64> = written
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(
        times.len() > 100,
        "the clock was hardly written: {}",
        times.len()
    );
    let last = times.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        last < ended,
        "the chat wrote the clock {:.0} µs after its launch had ended",
        (last - ended) * 1e6
    );
}

#[test]
fn a_plan_the_kernel_cannot_meet_is_refused_with_status_125_and_nothing_runs() {
    if !confinement_available(
        "a_plan_the_kernel_cannot_meet_is_refused_with_status_125_and_nothing_runs",
    ) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let policy = policy(demo, &[]);
    let mut plan = sandbox_linux::compile(&policy, cli_sandbox_tests::this_kernel()).unwrap();
    plan.landlock.abi = 99;
    let file = demo.root.join("plan.json");
    std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let ran = demo.root.join("ran");
    let out = exec_command(&file, &["/bin/touch"])
        .arg(&ran)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ABI 99"));
    assert!(!ran.exists(), "the program ran although confinement failed");
}

#[test]
fn each_kind_of_plan_carries_the_seccomp_program_its_rules_compile_to() {
    let f = fixture();
    let policy = policy(&f.demo, &[f.demo.grant_arg()]);
    for namespaces in [true, false] {
        let kernel = sandbox_linux::plan::Kernel {
            namespaces,
            fuse: cli_sandbox_tests::fuse_for_every_user(),
            ..cli_sandbox_tests::this_kernel()
        };
        let plan = sandbox_linux::compile(&policy, kernel).unwrap();
        let read: sandbox_linux::plan::LinuxPlan =
            serde_json::from_slice(&serde_json::to_vec(&plan).unwrap()).unwrap();
        let rules = sandbox_linux::plan::seccomp_program(&read.seccomp).unwrap();
        assert!(!rules.instructions().is_empty());
        assert_eq!(
            read.seccomp_program, rules,
            "namespaces {namespaces}: the plan's program is not its rules'"
        );
    }
}

#[test]
fn a_plan_without_its_seccomp_program_is_refused_with_status_125_and_nothing_runs() {
    if !confinement_available(
        "a_plan_without_its_seccomp_program_is_refused_with_status_125_and_nothing_runs",
    ) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let policy = policy(demo, &[]);
    let plan = sandbox_linux::compile(&policy, cli_sandbox_tests::this_kernel()).unwrap();
    let mut json = serde_json::to_value(&plan).unwrap();
    let file = demo.root.join("plan.json");
    let ran = demo.root.join("ran");
    let run = |json: &serde_json::Value| {
        std::fs::write(&file, serde_json::to_vec(json).unwrap()).unwrap();
        exec_command(&file, &["/bin/touch"])
            .arg(&ran)
            .output()
            .unwrap()
    };
    // The control: the plan as compiled runs the program.
    assert!(run(&json).status.success());
    assert!(ran.exists(), "the control did not run");
    std::fs::remove_file(&ran).unwrap();
    for (damage, said) in [
        (serde_json::json!(""), "seccomp program"),
        (serde_json::Value::Null, "expected a string"),
    ] {
        json["seccomp_program"] = damage;
        let out = run(&json);
        assert_eq!(out.status.code(), Some(125), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(said),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!ran.exists(), "the program ran without its seccomp filter");
    }
}

#[test]
fn the_program_is_looked_up_and_refused_as_posix_spawnp_does() {
    let test = "the_program_is_looked_up_and_refused_as_posix_spawnp_does";
    if !confinement_available(test) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let plan =
        sandbox_linux::compile(&policy(demo, &[]), cli_sandbox_tests::this_kernel()).unwrap();
    let file = demo.root.join("lookup-plan.json");
    std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
    std::fs::create_dir_all(&demo.runtime).unwrap();
    let ran = demo.runtime.join("ran");
    let script = |name: &str, text: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        let path = demo.runtime.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let touch = format!("touch '{}'\n", ran.display());
    // No `#!`, executable: the kernel cannot run it, and it is not handed to a shell.
    script("no-interpreter", &touch, 0o755);
    script("not-executable", &format!("#!/bin/sh\n{touch}"), 0o644);
    for (program, code) in [
        ("/bin/true", 0),
        ("true", 0),
        ("/no/such/program", 127),
        ("no-such-program-anywhere", 127),
        ("./no-interpreter", 126),
        ("./not-executable", 126),
        ("/etc", 126),
    ] {
        let out = exec_command(&file, &[program]).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{program}: {out:?}");
        assert!(!ran.exists(), "{program}: a file it should not run ran");
    }
    // The control: a shell runs the script without `#!` (so the check above can fail).
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg("./no-interpreter")
        .current_dir(&demo.runtime)
        .output()
        .unwrap();
    assert!(out.status.success() && ran.exists(), "the control: {out:?}");
}

/// The signals `/proc/PID/status` says are ignored, as a bit set (bit N-1 for signal N).
fn ignored_signals(status: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .expect("a SigIgn line");
    u64::from_str_radix(line.trim(), 16).unwrap()
}

#[test]
fn the_program_starts_with_sigpipe_at_its_default_action_in_both_plans() {
    let test = "the_program_starts_with_sigpipe_at_its_default_action_in_both_plans";
    if !confinement_available(test) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let policy = policy(demo, &[]);
    let sigpipe = 1u64 << (libc::SIGPIPE - 1);
    for namespaces in [true, false] {
        let kernel = sandbox_linux::plan::Kernel {
            namespaces,
            fuse: cli_sandbox_tests::fuse_for_every_user(),
            ..cli_sandbox_tests::this_kernel()
        };
        let plan = sandbox_linux::compile(&policy, kernel).unwrap();
        let file = demo.root.join(format!("sigpipe-{namespaces}.json"));
        std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
        let seen = demo.runtime.join(format!("sigpipe-{namespaces}"));
        let script = format!("cat /proc/self/status > '{}'; sleep 0.5", seen.display());
        let mut child = exec_command(&file, &["/bin/sh", "-c", &script])
            .spawn()
            .unwrap();
        // The control: the helper itself ignores it (Rust's runtime does), so a program that
        // inherited its disposition would too (with namespaces the helper stays beside the
        // program; without, it becomes the program, and only the program's is checked).
        // Read until the helper's runtime is up, or the launch is done. With namespaces the
        // helper lives as long as the program (half a second): a look that comes only after
        // the program has written its status (a loaded machine) still sees the helper's.
        // Without, the helper becomes the program once that has written it.
        let mut helper_ignores = false;
        while !helper_ignores
            && (namespaces || !seen.exists())
            && child.try_wait().unwrap().is_none()
        {
            if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
                helper_ignores = status.contains("Name:\tcli-sandbox")
                    && ignored_signals(&status) & sigpipe != 0;
            }
        }
        assert!(child.wait().unwrap().success());
        let program = std::fs::read_to_string(&seen).unwrap();
        if namespaces {
            assert!(
                helper_ignores,
                "the control: the helper was not seen ignoring SIGPIPE"
            );
        }
        assert_eq!(
            ignored_signals(&program) & sigpipe,
            0,
            "namespaces {namespaces}: the program ignores SIGPIPE"
        );
    }
}

#[test]
fn mounts_cannot_be_undone_from_inside() {
    if !confinement_available("mounts_cannot_be_undone_from_inside") {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let copy = demo.runtime.join("copy");
    let script = format!(
        "umount -l '{s}' 2>/dev/null; umount '{s}' 2>/dev/null; unshare -Urm sh -c \"umount -l '{s}'; cat '{s}/config.json'\" > '{c}' 2>/dev/null; cat '{s}/config.json' >> '{c}' 2>/dev/null; true",
        s = demo.state_root.display(),
        c = copy.display()
    );
    step(demo, &[], &["/bin/sh", "-c", &script]);
    let read = std::fs::read_to_string(&copy).unwrap_or_default();
    assert!(
        !read.contains("secret"),
        "config.json was read after undoing a mount: {read}"
    );
}

/// Reads the kernel's verdict for one operation on one path, from the disk.
fn probe_script(op: Op, path: &Path, evidence: &Path, token: &str) -> String {
    let p = shell_quote(path);
    let e = shell_quote(evidence);
    match op {
        Op::Read => format!("cat {p} > {e}"),
        Op::Write => format!("printf '%s' {token} >> {p}"),
        Op::List => format!("ls -a {p} > {e}"),
        _ => unreachable!("not probed"),
    }
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// A random layout: workflows with files, some granted ro or rw, some with refused entries.
    #[derive(Debug, Clone)]
    struct Shape {
        workflows: Vec<(Vec<String>, Option<bool>, bool, bool)>,
    }

    fn shape() -> impl Strategy<Value = Shape> {
        let workflow = (
            proptest::collection::vec("[a-z]{1,6}(\\.md|\\.txt|\\.db)?", 1..4),
            proptest::option::of(any::<bool>()),
            any::<bool>(),
            any::<bool>(),
        );
        proptest::collection::vec(workflow, 1..4).prop_map(|workflows| Shape { workflows })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn the_kernels_verdict_equals_decide(shape in shape()) {
            if !confinement_available("the_kernels_verdict_equals_decide") {
                return Ok(());
            }
            let f = fixture();
            let demo = &f.demo;
            let mut grants = Vec::new();
            let mut probes: Vec<(Op, PathBuf, String)> = Vec::new();
            for (i, (files, grant, with_planning, with_db)) in shape.workflows.iter().enumerate() {
                let wf = demo.workspace_docs.join(format!("workflows/random-{i}"));
                std::fs::create_dir_all(&wf).unwrap();
                // Each name once: a name drawn twice would be written twice, and the first
                // probe of it would look for content the second write replaced.
                let mut names: Vec<String> = Vec::new();
                for name in files {
                    if !names.contains(name) { names.push(name.clone()); }
                }
                if *with_planning { names.push("planning/p.json".into()); }
                if *with_db { names.push("raw.sqlite3".into()); }
                for (j, name) in names.iter().enumerate() {
                    let path = wf.join(name);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    let content = format!("content-{i}-{j}");
                    std::fs::write(&path, &content).unwrap();
                    probes.push((Op::Read, path.clone(), content));
                    probes.push((Op::Write, path, String::new()));
                }
                probes.push((Op::Write, wf.join(format!("new-{i}.txt")), String::new()));
                probes.push((Op::List, wf.clone(), names[0].split('/').next().unwrap().to_owned()));
                if let Some(rw) = grant {
                    grants.push(format!("{}:{}", wf.display(), if *rw { "rw" } else { "ro" }));
                }
            }
            probes.push((Op::Read, demo.home.join("notes.txt"), demo.secret(&demo.home.join("notes.txt")).to_owned()));
            probes.push((Op::Write, demo.home.join("fresh.txt"), String::new()));

            let policy = policy(demo, &grants);
            let token = "probe-token";
            let mut script = String::new();
            let mut expected = Vec::new();
            for (n, (op, path, content)) in probes.iter().enumerate() {
                let evidence = demo.runtime.join(format!("e{n}"));
                script.push_str(&format!("( {} ) 2>/dev/null\n", probe_script(*op, path, &evidence, token)));
                expected.push((n, *op, path.clone(), content.clone(), evidence, policy.decide(*op, path)));
            }
            let out = step(demo, &grants, &["/bin/sh", "-c", &script]);
            prop_assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            for (_, op, path, content, evidence, verdict) in expected {
                let actual = match op {
                    Op::Read | Op::List => std::fs::read_to_string(&evidence).map(|t| t.contains(&content)).unwrap_or(false),
                    Op::Write => std::fs::read_to_string(&path).map(|t| t.contains(token)).unwrap_or(false),
                    _ => unreachable!(),
                };
                prop_assert_eq!(actual, verdict.allowed, "{:?} {} decided by {:?}", op, path.display(), verdict.rule);
            }
        }
    }
}

#[test]
fn the_home_stays_open_with_the_default_settings() {
    // Not a confinement check: a sanity check that the demo's policy keeps the home open, so
    // that the contract's expectations are the owner's decision and not an accident.
    let f = fixture();
    let p = policy(&f.demo, &[]);
    assert!(p.decide(Op::Write, &f.demo.home.join(".bashrc")).allowed);
}

#[test]
fn without_the_sandbox_the_same_harness_succeeds_at_what_the_sandbox_refuses() {
    // Proves the evidence can see a success: the same actions, run unconfined (a stand-in for a
    // broken sandbox), must come out allowed where the contract expects a refusal.
    let f = fixture();
    let demo = &f.demo;
    let outside = Outside::start(demo).expect("start tmux and the sentinel outside");
    let policy = policy(demo, &[demo.grant_arg()]);
    let contract::Harness { actions, script } =
        contract::Harness::write(demo, &policy, &outside, "tok-unconfined").unwrap();
    let status = Command::new("/bin/sh")
        .arg(&script)
        .env("HOME", &demo.home)
        .current_dir(&demo.runtime)
        .status()
        .unwrap();
    assert!(status.success());
    let outcomes = contract::read_verdicts(&actions, &outside);
    let allowed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.actual == contract::Verdict::Allowed)
        .map(|o| o.id.as_str())
        .collect();
    for id in [
        "other-workflow-read",
        "other-workflow-write",
        "plan-read",
        "config-json-read",
        "runtimes-list",
        "hardlink-protected",
        "exec-opener",
        "signal-launcher",
        "environ-launcher",
        "move-workspace-docs",
    ] {
        assert!(
            allowed.contains(&id),
            "{id} not seen as allowed: {}",
            table(&outcomes)
        );
    }
    if outside.targets.tmux_socket.is_some() {
        assert!(allowed.contains(&"tmux-outside"), "{}", table(&outcomes));
    }
}

#[test]
fn without_namespaces_the_frozen_fallback_gives_decides_verdicts_except_its_stated_gaps() {
    if !confinement_available(
        "without_namespaces_the_frozen_fallback_gives_decides_verdicts_except_its_stated_gaps",
    ) {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let outside = Outside::start(demo).expect("start tmux and the sentinel outside");
    let grants = vec![demo.grant_arg()];
    let policy = policy(demo, &grants);
    // Written before the plan is compiled: a new entry in a frozen folder stays closed.
    let contract::Harness { actions, script } =
        contract::Harness::write(demo, &policy, &outside, "tok-frozen").unwrap();
    let plan_file = demo.root.join("frozen-plan.json");
    std::fs::write(&plan_file, "").unwrap();
    let mut kernel = cli_sandbox_tests::this_kernel();
    kernel.namespaces = false;
    let plan = sandbox_linux::compile(&policy, kernel).unwrap();
    assert!(plan.namespaces.is_none());
    std::fs::write(&plan_file, serde_json::to_vec(&plan).unwrap()).unwrap();
    let script = script.to_str().unwrap();
    let out = exec_command(&plan_file, &["/bin/sh", script])
        .env("HOME", &demo.home)
        .current_dir(&demo.runtime)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcomes = contract::read_verdicts(&actions, &outside);
    // The gaps the plan states: nothing new directly in a frozen folder (the home, and here
    // /tmp, an ancestor of this temporary layout) or at a grant's top.
    let mut gaps = vec!["home-create", "git-config-global", "granted-write"];
    if demo.root.starts_with("/tmp") {
        gaps.push("tmp-create");
    }
    let report = table(&outcomes);
    for o in &outcomes {
        if gaps.contains(&o.id.as_str()) {
            continue;
        }
        assert!(o.passed(), "{} differs from decide():\n{report}", o.id);
    }
    assert!(
        plan.guarantees.iter().any(|g| matches!(
            g.enforcement,
            sandbox_linux::plan::Enforcement::Partly(_)
        ) && g.what.contains("protected roots")),
        "the plan does not state its gap"
    );
}

#[test]
fn a_mount_inside_a_read_only_grant_is_read_only_too() {
    if !confinement_available("a_mount_inside_a_read_only_grant_is_read_only_too") {
        return;
    }
    let f = fixture();
    let demo = &f.demo;
    let sub = demo.other_workflow.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    // A folder mounted inside the grant on the host (root can make one; others skip this test).
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&sub)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        cli_sandbox_tests::skip(
            "a_mount_inside_a_read_only_grant_is_read_only_too",
            "cannot mount a tmpfs here (it needs root)",
            cli_sandbox_tests::REQUIRE_ROOT,
        );
        return;
    }
    let grants = vec![format!("{}:ro", demo.other_workflow.display())];
    let target = sub.join("inner");
    step(
        demo,
        &grants,
        &["/bin/sh", "-c", &format!("echo x > '{}'", target.display())],
    );
    let written = target.exists();
    let _ = Command::new("umount").arg(&sub).status();
    assert!(!written, "a mount inside a read-only grant was writable");
}
