//! The launch's own files (Pi's bridge extension) land in the chat's runtime as new files: a
//! symlink the chat left at the name is replaced, never followed, so the unconfined launcher
//! cannot be made to write through it into a file of the person's (or into protected data).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use launch::demo::Demo;
use launch::{Context, LaunchSpec, PreparedLaunch};
use sandbox_core::platform::{Facts, LinuxFacts};
use sandbox_core::{GrantRequest, McpServer, Mode, Shape};

fn linux_facts() -> Facts {
    Facts::Linux(LinuxFacts {
        landlock_abi: Some(7),
        user_namespaces: true,
        user_namespaces_error: None,
    })
}

#[test]
fn a_symlink_at_the_bridge_extensions_name_is_replaced_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::create(dir.path()).unwrap();
    let mut settings = demo.settings();
    settings.helper = Some("/usr/bin/true".into());
    let ctx = Context::load(&settings).unwrap();
    let spec = LaunchSpec {
        cli: "pi".into(),
        chat: demo.chat.clone(),
        grants: vec![GrantRequest::parse(&demo.grant_arg()).unwrap()],
        shape: Shape::Structured,
        mode: Mode::BridgeOnly,
        mcp_bridge: Some(McpServer {
            name: "agentworks".into(),
            command: "/opt/bridge".into(),
            args: vec![],
            env: BTreeMap::from([("AW_TOKEN".into(), "t0k3n".into())]),
        }),
        prompt: Some("hello".into()),
        model: None,
        extra_args: vec![],
        denials: None,
        program: None,
    };
    let launch = PreparedLaunch::prepare(&ctx, &spec, &linux_facts()).unwrap();
    assert_eq!(launch.files().len(), 1, "{:?}", launch.files());
    let name = &launch.files()[0].path;
    assert_eq!(name.parent(), Some(demo.runtime.as_path()));

    // What a chat could leave there: a link to the person's shell startup file.
    let bashrc = demo.home.join(".bashrc");
    std::fs::write(&bashrc, "# the person's own\n").unwrap();
    std::os::unix::fs::symlink(&bashrc, name).unwrap();

    launch.pre_trust().unwrap();
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "# the person's own\n",
        "the launch wrote through the chat's symlink"
    );
    let meta = std::fs::symlink_metadata(name).unwrap();
    assert!(meta.file_type().is_file(), "still a symlink");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(name).unwrap();
    assert!(text.contains("\"AW_TOKEN\":\"t0k3n\""), "{text}");
    assert!(
        launch.argv().iter().any(|a| a == name.as_os_str()),
        "the extension is passed with -e: {:?}",
        launch.argv()
    );
}

#[test]
fn without_a_bridge_pi_gets_no_extension_file() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Demo::create(dir.path()).unwrap();
    let mut settings = demo.settings();
    settings.helper = Some("/usr/bin/true".into());
    let ctx = Context::load(&settings).unwrap();
    let spec = LaunchSpec {
        cli: "pi".into(),
        chat: demo.chat.clone(),
        grants: vec![],
        shape: Shape::Tmux,
        mode: Mode::BridgeOnly,
        mcp_bridge: None,
        prompt: None,
        model: None,
        extra_args: vec![],
        denials: None,
        program: None,
    };
    let launch = PreparedLaunch::prepare(&ctx, &spec, &linux_facts()).unwrap();
    assert!(launch.files().is_empty(), "no bridge, no extension file");
}
