//! The Seatbelt profile under the real `/usr/bin/sandbox-exec`, on a Mac: the probes of
//! `seatbelt.rs` run as shell commands in a layout built in a temporary folder, and each verdict
//! is read from the disk, never from what a program says. Then the ways out, which `decide()`
//! does not model. How to run it: `docs/macos.md`.
#![cfg(target_os = "macos")]

mod seatbelt_support;
// The count of skipped tests, shared with the tests in the repository's `tests/` folder.
// This suite records one kind of skip; the module has more.
#[allow(dead_code)]
#[path = "../../../tests/support/skips.rs"]
mod skips;

use std::ffi::OsString;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use launch::seatbelt::{SeatbeltProfile, already_sandboxed};
use sandbox_core::BLOCKED_PROGRAMS_MACOS;

use seatbelt_support::probes::{quote, shell_probes, two_path_shell_probes, unreadable};
use seatbelt_support::world::{Spec, World};

/// The demo layout on disk and its profile; `None` (said loudly) where Seatbelt cannot run.
fn setup() -> Option<(tempfile::TempDir, World, SeatbeltProfile)> {
    if already_sandboxed() {
        let why = "this process already runs inside a Seatbelt sandbox, and macOS refuses a \
             sandbox inside a sandbox. Run `cargo test -p launch --test seatbelt_macos` from a \
             plain Terminal";
        assert!(
            std::env::var("CLI_SANDBOX_REQUIRE_SEATBELT").as_deref() != Ok("1"),
            "{why} (CLI_SANDBOX_REQUIRE_SEATBELT=1 asks for this suite to run)"
        );
        skips::record("CLI_SANDBOX_REQUIRE_SEATBELT", "seatbelt_macos", why);
        // On the real stderr: libtest captures `eprintln!`.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "\n!!! SKIPPED: {why}.\n");
        return None;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let base = std::fs::canonicalize(dir.path()).expect("its canonical path");
    let world = World::on_disk(&base, &Spec::demo()).expect("the demo layout on disk");
    let profile = SeatbeltProfile::for_policy(&world.policy).expect("the profile");
    Some((dir, world, profile))
}

/// Runs `script` with `/bin/sh -c` under the profile, in the world's scratch folder.
fn confined(world: &World, profile: &SeatbeltProfile, script: &str) -> std::process::Output {
    let argv = profile.wrap(&["/bin/sh".into(), "-c".into(), script.into()]);
    Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(&world.scratch)
        .output()
        .expect("sandbox-exec runs")
}

#[test]
fn the_profile_compiles_and_runs_a_program() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let out = confined(&world, &profile, "exit 0");
    assert!(
        out.status.success(),
        "sandbox-exec refused the profile: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        profile.text
    );
}

#[test]
fn every_probe_gets_the_verdict_decide_gives() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let wrap = |argv: &[OsString]| profile.wrap(argv);
    let mut wrong = Vec::new();
    for probe in shell_probes(&world) {
        let expected = world.policy.decide(probe.op, &probe.path);
        let happened = probe.run(&world, &wrap).expect("the probe runs");
        if happened != expected.allowed {
            wrong.push(format!(
                "{} {}: decide() says {} ({}), sandbox-exec {}",
                probe.op.as_str(),
                probe.path.display(),
                if expected.allowed {
                    "allowed"
                } else {
                    "refused"
                },
                expected.rule.name(),
                if happened { "allowed it" } else { "refused it" },
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `printf x > OUT` after `action` succeeds, and whether OUT then exists.
fn succeeds(world: &World, profile: &SeatbeltProfile, name: &str, action: &str) -> bool {
    let marker = world.scratch.join(format!("marker-{name}"));
    let _ = std::fs::remove_file(&marker);
    confined(
        world,
        profile,
        &format!("{action} && printf x > {}", quote(&marker)),
    );
    marker.exists()
}

#[test]
fn blocked_programs_neither_run_nor_copy() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    for program in BLOCKED_PROGRAMS_MACOS {
        let status = world.scratch.join("status");
        // 126: the shell could not execute it; above 128: the kernel killed it for trying.
        confined(
            &world,
            &profile,
            &format!(
                "{program} </dev/null >/dev/null 2>&1; printf '%s' $? > {}",
                quote(&status)
            ),
        );
        let code: i32 = std::fs::read_to_string(&status)
            .unwrap_or_default()
            .parse()
            .unwrap_or(-1);
        assert!(code == 126 || code > 128, "{program} ran (exit {code})");
        let copy = world.scratch.join("copy");
        confined(&world, &profile, &format!("cp {program} {}", quote(&copy)));
        assert!(!copy.exists(), "{program} was copied");
    }
}

#[test]
fn unix_socket_servers_started_outside_are_out_of_reach_but_the_allowed_one() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    // A stand-in for a tmux server started outside: a listener of this (unconfined) test.
    let tmux = world.base.join("tmux-501/default");
    std::fs::create_dir_all(tmux.parent().unwrap()).unwrap();
    let allowed = world.policy.unix_socket_allow()[0].clone();
    for (socket, expected) in [(tmux, false), (allowed, true)] {
        let listener = UnixListener::bind(&socket).expect("a listener outside");
        listener.set_nonblocking(true).unwrap();
        confined(
            &world,
            &profile,
            &format!("/usr/bin/nc -U {} </dev/null", quote(&socket)),
        );
        let connected = listener.accept().is_ok();
        assert_eq!(connected, expected, "{}", socket.display());
    }
}

#[test]
fn signals_reach_this_sandbox_only() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let launcher = std::process::id();
    assert!(!succeeds(
        &world,
        &profile,
        "launcher",
        &format!("kill -0 {launcher}")
    ));
    assert!(succeeds(&world, &profile, "itself", "kill -0 $$"));
}

#[test]
fn a_closed_file_is_not_reached_by_another_case_or_a_hard_link() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let config = world.layout.app_folder.join("config.json");
    let lower = PathBuf::from(config.to_str().unwrap().to_lowercase());
    let content = &world.files[&config];
    let read = |path: &Path| {
        let out = world.scratch.join("read");
        let _ = std::fs::remove_file(&out);
        confined(
            &world,
            &profile,
            &format!("cat -- {} > {}", quote(path), quote(&out)),
        );
        std::fs::read_to_string(&out).unwrap_or_default()
    };
    assert_ne!(&read(&config), content, "the canonical path");
    assert_ne!(&read(&lower), content, "{}", lower.display());
    // file-link and file-clone fall back to default, not to file*: the profile names them.
    for (name, command) in [("linked", "ln"), ("cloned", "cp -c")] {
        let copy = world.home.join(name);
        let made = succeeds(
            &world,
            &profile,
            name,
            &format!("{command} {} {}", quote(&config), quote(&copy)),
        );
        assert!(
            !made || &read(&copy) != content,
            "config.json {name} into the home"
        );
    }
    let plan = world
        .policy
        .grants()
        .iter()
        .find(|g| g.access == sandbox_core::Access::ReadWrite)
        .unwrap()
        .path
        .join("PLANNING/plan.json");
    assert_eq!(read(&plan), "", "{}", plan.display());
}

#[test]
fn hard_links_and_clones_get_the_verdict_decide_implies_at_either_end() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let wrap = |argv: &[OsString]| profile.wrap(argv);
    let unreadable = unreadable(&world);
    let mut wrong = Vec::new();
    for probe in two_path_shell_probes(&world) {
        let expected = probe.expected(&world, &unreadable);
        let happened = probe.run(&world, &wrap).expect("the probe runs");
        if happened != expected.allowed {
            wrong.push(format!(
                "{} {} -> {}: decide() implies {expected:?}, sandbox-exec {}",
                probe.op,
                probe.source.display(),
                probe.destination.display(),
                if happened { "allowed it" } else { "refused it" },
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Runs `script` unconfined (the control) or under the profile.
fn run(world: &World, profile: Option<&SeatbeltProfile>, script: &str) {
    match profile {
        Some(profile) => {
            confined(world, profile, script);
        }
        None => {
            Command::new("/bin/sh")
                .args(["-c", script])
                .current_dir(&world.scratch)
                .output()
                .expect("sh runs");
        }
    }
}

#[test]
fn launchd_jobs_and_preference_writes_are_refused_and_succeed_unconfined() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    for confine in [false, true] {
        let under = confine.then_some(&profile);
        // A preference written through cfprefsd: read back outside, then removed.
        let domain = "com.example.cli-sandbox-test";
        run(
            &world,
            under,
            &format!("defaults write {domain} probe written"),
        );
        let read = Command::new("/usr/bin/defaults")
            .args(["read", domain, "probe"])
            .output()
            .expect("defaults runs");
        let written = String::from_utf8_lossy(&read.stdout).trim() == "written";
        let _ = Command::new("/usr/bin/defaults")
            .args(["delete", domain])
            .output();
        assert_eq!(
            written, !confine,
            "preference written (confined: {confine})"
        );

        // A launchd job that would run outside: it makes a marker, then is removed.
        let label = "com.example.cli-sandbox-test";
        let marker = world.scratch.join("job-ran");
        let _ = std::fs::remove_file(&marker);
        run(
            &world,
            under,
            &format!(
                "launchctl submit -l {label} -- /usr/bin/touch {}",
                quote(&marker)
            ),
        );
        std::thread::sleep(std::time::Duration::from_secs(2));
        let _ = Command::new("/bin/launchctl")
            .args(["remove", label])
            .output();
        assert_eq!(
            marker.exists(),
            !confine,
            "launchd job ran (confined: {confine})"
        );
    }
}

/// `renameatx_np(AT_FDCWD, $1, AT_FDCWD, $2, RENAME_SWAP)` (system call 488) through perl, which
/// macOS ships (unlike a compiler).
const SWAP: &str =
    "/usr/bin/perl -e 'exit(syscall(488, -2, $ARGV[0], -2, $ARGV[1], 2) == 0 ? 0 : 1)'";

#[test]
fn a_pinned_folder_cannot_be_swapped_with_a_decoy_and_succeeds_unconfined() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let pinned = world.layout.app_folder.parent().unwrap().to_owned();
    let decoy = world.home.join("decoy");
    std::fs::create_dir_all(&decoy).unwrap();
    std::fs::write(decoy.join("fake"), "fake").unwrap();
    let swap = format!("{SWAP} {} {}", quote(&decoy), quote(&pinned));
    for confine in [false, true] {
        run(&world, confine.then_some(&profile), &swap);
        let swapped = pinned.join("fake").exists();
        if swapped {
            // Put the world back: the same swap again.
            run(&world, None, &swap);
        }
        assert_eq!(
            swapped,
            !confine,
            "{} swapped with a decoy (confined: {confine})",
            pinned.display()
        );
    }
}

#[test]
fn another_case_reaches_neither_a_blocked_program_nor_a_missing_hardened_file() {
    // Says why and returns where Seatbelt cannot run; the world it builds is the plain demo's.
    let Some(_) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let base = std::fs::canonicalize(dir.path()).expect("its canonical path");
    let spec = Spec {
        harden: true,
        ..Spec::demo()
    };
    let world = World::on_disk(&base, &spec).expect("the hardened layout on disk");
    let profile = SeatbeltProfile::for_policy(&world.policy).expect("the profile");
    if !base.join(spec.home.to_uppercase()).exists() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n!!! SKIPPED: this volume is case-sensitive, so no other case names the same file.\n"
        );
        return;
    }
    // A blocked program of the world, run by another case: it writes a marker when it runs.
    let blocked = base.join(&spec.blocked[0]);
    let upper = PathBuf::from(blocked.to_str().unwrap().to_uppercase());
    let marker = world.scratch.join("ran");
    let zlogin = world.home.join(".zlogin");
    for confine in [false, true] {
        let _ = std::fs::remove_file(&marker);
        run(
            &world,
            confine.then_some(&profile),
            &format!("{} {}", quote(&upper), quote(&marker)),
        );
        assert_eq!(
            marker.exists(),
            !confine,
            "{} ran (confined: {confine})",
            upper.display()
        );
        // A hardened file missing from the world, created in another case.
        let _ = std::fs::remove_file(&zlogin);
        run(
            &world,
            confine.then_some(&profile),
            &format!(": > {}", quote(&world.home.join(".ZLOGIN"))),
        );
        assert_eq!(
            zlogin.exists(),
            !confine,
            "~/.ZLOGIN created (confined: {confine})"
        );
        let _ = std::fs::remove_file(&zlogin);
    }
}

/// Issue 24: what a chat leaves in the CLIs' settings is acted on by every later chat's CLI. Each
/// way in, tried under the profile, its verdict read from the disk, each beside its control: the
/// same operation on a neighbour that is the CLI's state (or the chat's own file), under the same
/// profile, succeeds.
#[test]
fn settings_are_not_written_made_linked_or_moved_and_their_neighbours_are() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let home = &world.home;
    let q = |p: &Path| quote(p);
    let settings = home.join(".claude/settings.json");
    let original = world.files[&settings].clone();
    let planted = home.join("work/planted.json");
    std::fs::write(&planted, "{\"hooks\":{}}").unwrap();
    let content = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    let state = home.join(".claude/history.jsonl");
    let sh = |script: String| run(&world, Some(&profile), &script);

    // Written in place (appended, truncated), and the control: the CLI's state beside it.
    sh(format!("printf planted >> {}", q(&settings)));
    sh(format!(": > {}", q(&settings)));
    assert_eq!(content(&settings), original, "written");
    sh(format!("printf more >> {}", q(&state)));
    assert!(content(&state).ends_with("more"), "control: the state file");

    // Renamed over, or a swap of the planted file with it (perl's rename(2)).
    sh(format!(
        "cp {} {}.x && mv -f {}.x {}",
        q(&planted),
        q(&planted),
        q(&planted),
        q(&settings)
    ));
    assert_eq!(content(&settings), original, "renamed over");
    let neighbour = home.join(".claude/new-state.json");
    sh(format!(
        "cp {} {}.y && mv -f {}.y {}",
        q(&planted),
        q(&planted),
        q(&planted),
        q(&neighbour)
    ));
    assert!(
        there(&neighbour),
        "control: a rename onto a new name beside it"
    );

    // Missing: made as a file, a folder, a symlink, a hard link, by a rename; in another case.
    let missing = home.join(".claude/CLAUDE.md");
    let skills = home.join(".claude/skills");
    for script in [
        format!("printf x > {}", q(&missing)),
        format!("ln -s {} {}", q(&planted), q(&missing)),
        format!("ln {} {}", q(&planted), q(&missing)),
        format!(
            "cp {} {}.z && mv {}.z {}",
            q(&planted),
            q(&planted),
            q(&planted),
            q(&missing)
        ),
        format!("mkdir {}", q(&skills)),
        format!("mkdir -p {}/evil", q(&skills)),
        format!("ln -s {} {}", q(&home.join("work")), q(&skills)),
        format!(
            "printf x > {}",
            q(&PathBuf::from(
                missing.to_str().unwrap().replace(".claude", ".CLAUDE")
            ))
        ),
    ] {
        sh(script.clone());
        assert!(!there(&missing) && !there(&skills), "made by: {script}");
    }
    let todo = home.join(".claude/todos");
    sh(format!(
        "mkdir {} && ln -s {} {}/l",
        q(&todo),
        q(&planted),
        q(&todo)
    ));
    assert!(
        there(&todo.join("l")),
        "control: a folder and a link of the CLI's state"
    );

    // Another case of an existing one (the same file on a case-insensitive volume).
    let upper = PathBuf::from(settings.to_str().unwrap().replace(".claude", ".CLAUDE"));
    sh(format!("printf planted > {}", q(&upper)));
    assert_eq!(
        content(&settings),
        original,
        "written as {}",
        upper.display()
    );

    // A hard link of it (another writable name for the same file), then written through it.
    let link = home.join("work/link.json");
    sh(format!(
        "ln {} {} ; printf planted >> {}",
        q(&settings),
        q(&link),
        q(&link)
    ));
    assert_eq!(content(&settings), original, "written through a hard link");

    // The folder above renamed away and a new one made in its place; swapped with a prepared
    // one. The control: a folder of the open home beside it moves.
    let prepared = home.join("work/prepared");
    std::fs::create_dir_all(&prepared).unwrap();
    std::fs::write(prepared.join("settings.json"), "{\"hooks\":{}}").unwrap();
    let claude = home.join(".claude");
    sh(format!(
        "mv {} {} ; mkdir {} ; printf planted > {}",
        q(&claude),
        q(&home.join("claude-away")),
        q(&claude),
        q(&settings)
    ));
    assert_eq!(content(&settings), original, "the folder above replaced");
    assert!(!there(&home.join("claude-away")));
    // A prepared folder renamed (rename(2), through perl: mv would move it inside) into the
    // place of a CLI's missing folder (~/.gemini).
    let gemini = home.join(".gemini");
    sh(format!(
        "/usr/bin/perl -e 'rename($ARGV[0], $ARGV[1]) or exit 1' {} {}",
        q(&prepared),
        q(&gemini)
    ));
    assert!(!there(&gemini), "a prepared folder renamed into ~/.gemini");
    sh(format!(
        "mv {} {}",
        q(&prepared),
        q(&home.join("work/moved"))
    ));
    assert!(
        there(&home.join("work/moved/settings.json")),
        "control: a folder of the open home moves"
    );

    // A CLI's folder that is missing (~/.gemini): not made, not as a link to planted settings.
    sh(format!("mkdir {}", q(&gemini)));
    sh(format!(
        "ln -s {} {}",
        q(&home.join("work/moved")),
        q(&gemini)
    ));
    assert!(!there(&gemini), "~/.gemini made");
    sh(format!("mkdir {}", q(&home.join(".gemini-notes"))));
    assert!(
        there(&home.join(".gemini-notes")),
        "control: a new folder of the home"
    );

    // Read, always: the person's settings reach the chat's CLI.
    let out = world.scratch.join("settings-read");
    sh(format!("cat {} > {}", q(&settings), q(&out)));
    assert_eq!(content(&out), original);
}

/// Seatbelt's side of the record of refusals (issue 31): a read the profile refuses shows in the
/// unified log as a `Sandbox` denial of that path, tagged with the rule `decide()` names
/// (`(with message "cli-sandbox: closed")`). The control: unconfined, the same read succeeds.
/// Run once on a Mac, this tells whether the tag reaches the log line as `docs/macos.md` says
/// (not yet seen on a Mac); `log` itself cannot run inside a sandbox, so it runs here, outside.
/// The unified log is written asynchronously: it is asked up to ten times, a second apart.
#[test]
fn a_refused_read_is_in_the_unified_log_tagged_with_its_rule() {
    let Some((_dir, world, profile)) = setup() else {
        return;
    };
    let app = &world.layout.app_folder;
    let secret = world
        .files
        .keys()
        .find(|p| p.starts_with(app))
        .expect("the demo layout holds a file in the app folder")
        .clone();
    let rule = world
        .policy
        .decide(sandbox_core::Op::Read, &secret)
        .rule
        .name();
    let script = format!("cat {} >/dev/null", quote(&secret));
    let confined_out = confined(&world, &profile, &script);
    assert!(
        !confined_out.status.success(),
        "the profile let {} be read",
        secret.display()
    );
    let unconfined = Command::new("/bin/sh")
        .args(["-c", &script])
        .status()
        .expect("sh runs");
    assert!(
        unconfined.success(),
        "the control read of {} failed",
        secret.display()
    );
    let wanted = format!("cli-sandbox: {rule}");
    let mut last = String::new();
    for _ in 0..10 {
        let out = Command::new("/usr/bin/log")
            .args(["show", "--last", "2m", "--style", "compact", "--predicate"])
            .arg("sender == \"Sandbox\" AND eventMessage CONTAINS \"deny\"")
            .output()
            .expect("log runs");
        last = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = last
            .lines()
            .find(|l| l.contains(&*secret.to_string_lossy()));
        if let Some(line) = line {
            assert!(
                line.contains(&wanted),
                "the denial is logged without its tag `{wanted}`: {line}"
            );
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    panic!(
        "no Sandbox denial of {} in the unified log:\n{last}",
        secret.display()
    );
}
