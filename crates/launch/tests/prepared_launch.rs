//! The prepared launch as a provider sees it: a command that cannot be built before its working
//! folder exists says which folder and what to do, and a program that is not a CLI is a launch
//! of its own (no pre-trust, the chat's confinement, never bridge-only).

use launch::demo::Demo;
use launch::{Context, Error, LaunchSpec, Mode, PreparedLaunch, Shape};
use sandbox_core::platform::{Facts, LinuxFacts};

fn linux_facts(landlock_abi: Option<u32>) -> Facts {
    Facts::Linux(LinuxFacts {
        landlock_abi,
        user_namespaces: true,
        user_namespaces_error: None,
    })
}

fn context(demo: &Demo) -> Context {
    let mut settings = demo.settings();
    settings.helper = Some("/usr/bin/true".into());
    Context::load(&settings).unwrap()
}

#[test]
fn a_command_before_pre_trust_names_the_missing_working_folder_and_the_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::create(dir.path()).unwrap();
    let ctx = context(&demo);
    let spec = LaunchSpec::new("pi", "a-chat-not-made-yet")
        .shape(Shape::Tmux)
        .mode(Mode::BridgeOnly);
    let launch = PreparedLaunch::prepare(&ctx, &spec, &linux_facts(Some(7))).unwrap();
    assert!(!launch.cwd().exists(), "prepare made the runtime");
    match launch.std_command() {
        Err(Error::NoWorkingFolder { cwd }) => {
            assert_eq!(cwd, launch.cwd());
            let message = Error::NoWorkingFolder { cwd: cwd.clone() }.to_string();
            assert!(message.contains(&cwd.display().to_string()), "{message}");
            assert!(message.contains("pre_trust"), "{message}");
        }
        other => panic!("not refused with the folder: {other:?}"),
    }
    // The control: once pre-trust has made the folder, the command is built.
    launch.pre_trust().unwrap();
    assert!(launch.std_command().is_ok());
}

#[test]
fn a_program_that_is_not_a_cli_is_a_launch_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::create(dir.path()).unwrap();
    let ctx = context(&demo);
    let spec = LaunchSpec::program(&demo.chat, "/bin/echo", ["hi".into()]);
    let launch = PreparedLaunch::prepare(&ctx, &spec, &linux_facts(Some(7))).unwrap();
    assert_eq!(launch.cli(), None);
    assert!(launch.pre_trust_edits().is_empty() && launch.files().is_empty());
    assert_eq!(launch.command(), ["/bin/echo", "hi"]);
    // Wrapped by the helper, which applies the plan file it names.
    assert_eq!(launch.argv()[0], "/usr/bin/true");
    let plan = launch.plan_file().expect("a plan file");
    assert!(
        launch.argv().iter().any(|a| a == plan.as_os_str()),
        "{:?}",
        launch.argv()
    );
    // The same launch prepared to run in this process has no command for another one.
    let here = PreparedLaunch::prepare_to_exec(&ctx, &spec, &linux_facts(Some(7))).unwrap();
    if cfg!(target_os = "linux") {
        assert!(here.in_process_plan().is_some() && here.plan_file().is_none());
        assert_eq!(here.argv(), ["/bin/echo", "hi"]);
        assert!(matches!(here.std_command(), Err(Error::ExecOnly)));
    }
}

#[test]
fn a_program_launch_never_runs_unconfined() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::create(dir.path()).unwrap();
    let ctx = context(&demo);
    let spec = LaunchSpec::program("another-chat", "/bin/echo", ["hi".into()]);
    let refused = PreparedLaunch::prepare(&ctx, &spec, &linux_facts(None)).unwrap_err();
    assert!(
        matches!(
            refused,
            Error::CannotConfine(_) | Error::NeedsConfinement { .. }
        ),
        "{refused:?}"
    );
    // The control: a CLI that has bridge-only is launched there, unwrapped.
    let cli = LaunchSpec::new("pi", "another-chat").mode(Mode::BridgeOnly);
    let bridge = PreparedLaunch::prepare(&ctx, &cli, &linux_facts(None)).unwrap();
    assert_eq!(bridge.command_start(), 0);
}
