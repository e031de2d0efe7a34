//! Fixtures for running the real coding CLIs (`tests/node_modules/.bin`, pinned by
//! `tests/package.json`) against a scratch home: finding them (or saying loudly why a test is
//! skipped), applying an adapter's launch, running with a time limit, tmux panes, and a stand-in
//! MCP server that leaves a marker file when it starts.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use sandbox_core::{CliAdapter, CliLaunch, LaunchRequest, Mode, PersonFiles, Shape, Stdin};

/// `CLI_SANDBOX_REQUIRE_REAL_CLIS=1` turns a missing CLI from a skip into a failure (CI).
pub const REQUIRE: &str = "CLI_SANDBOX_REQUIRE_REAL_CLIS";

/// The real CLIs `tests/package.json` pins, by their name in the registry (also their program in
/// `tests/node_modules/.bin`), in the registry's order: those whose adapter names an npm package
/// in its driving data (`contract::agents::installed`). A test compares them with
/// `tests/package.json`.
pub fn pinned() -> Vec<&'static str> {
    contract::agents::installed()
        .into_iter()
        .map(|(cli, _)| cli)
        .collect()
}

/// `tests/node_modules/.bin`, where `npm ci --prefix tests` installs the pinned real CLIs.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin")
}

/// PATH with the pinned real CLIs first.
pub fn path_with_real_clis() -> std::ffi::OsString {
    let mut paths = vec![bin_dir()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).expect("PATH entries hold no separator")
}

/// The installed CLI `name`, or `None` after saying loudly which test is skipped and how to
/// enable it. Panics instead when [`REQUIRE`] is set.
pub fn require(name: &str, test: &str) -> Option<PathBuf> {
    let path = bin_dir().join(name);
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "`{name}` is not installed at {}: run `npm ci --prefix tests` to install the pinned CLIs",
        path.display()
    );
    if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
        panic!("{test}: {why} ({REQUIRE}=1 makes a missing CLI a failure)");
    }
    crate::skips::record(REQUIRE, test, &why);
    crate::say(&format!(
        "\n!!! SKIPPED {test}: {why}. Set {REQUIRE}=1 to make this an error.\n"
    ));
    None
}

/// A scratch home and a working folder (the chat's runtime) inside it, both canonical.
#[derive(Debug)]
pub struct Scratch {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub workdir: PathBuf,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("cli-sandbox-real-")
            .tempdir()
            .unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        let workdir = home.join("runtime/chat-1");
        fs::create_dir_all(&workdir).unwrap();
        Scratch {
            _dir: dir,
            home,
            workdir,
        }
    }

    /// A request for this scratch: confined, no grants, no prompt.
    pub fn request(&self, shape: Shape, mode: Mode) -> LaunchRequest {
        LaunchRequest {
            shape,
            mode,
            workdir: self.workdir.clone(),
            home: self.home.clone(),
            grants: Vec::new(),
            mcp_bridge: None,
            prompt: None,
            model: None,
            extra_args: Vec::new(),
            confined: true,
            nonce: String::new(),
        }
    }

    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.home.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new()
    }
}

/// The person's files on disk; none of the launcher's variables (the scratch home is the
/// whole person).
#[derive(Debug)]
pub struct DiskOnly;

impl PersonFiles for DiskOnly {
    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        match fs::read_to_string(path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The adapter's launch for `req`, with its pre-trust edits applied to the scratch files, as
/// the launcher applies them: through the guard of a person whose home is the scratch home.
pub fn prepare(adapter: &dyn CliAdapter, req: &LaunchRequest) -> CliLaunch {
    let launch = adapter.launch(req, &DiskOnly).unwrap();
    apply_edits(&req.home, &launch.pre_trust);
    launch
}

/// Applies pre-trust edits to a scratch home as the launcher does: through the guard of a chat
/// whose AgentWorks data lies beside the home, where no test here writes.
pub fn apply_edits(home: &Path, edits: &[sandbox_core::FileEdit]) {
    // A state root must exist (a missing one is refused, not created).
    let state_root = home.with_file_name("agentworks");
    fs::create_dir_all(&state_root).unwrap();
    let ctx = launch::Context::load(&launch::Settings {
        home: Some(home.to_owned()),
        state_root: Some(state_root),
        ..Default::default()
    })
    .unwrap();
    let guard =
        launch::person_files::PersonFilesGuard::for_policy(&ctx.policy("real-clis", &[]).unwrap());
    for edit in edits {
        guard.apply(edit).unwrap();
    }
}

/// The temporary folder of a CLI run from the scratch `home`: `tmp` beside it, in the test's own
/// temporary folder, so that what the CLI leaves there (Claude's telemetry files among it) goes
/// when the test's folder does, not into the machine's `/tmp`.
pub fn scratch_tmp(home: &Path) -> PathBuf {
    let tmp = home.with_file_name("tmp");
    fs::create_dir_all(&tmp).unwrap();
    tmp
}

/// The environment the CLI gets: a clean one (nothing of the developer's leaks in), the
/// scratch home and its temporary folder ([`scratch_tmp`]), and the adapter's changes.
pub fn clean_env(
    home: &Path,
    launch: &CliLaunch,
    extra: &[(&str, &str)],
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default());
    env.insert("HOME".to_owned(), home.display().to_string());
    env.insert("TMPDIR".to_owned(), scratch_tmp(home).display().to_string());
    env.insert("TERM".to_owned(), "xterm-256color".to_owned());
    env.insert("LANG".to_owned(), "C.UTF-8".to_owned());
    for (k, v) in &launch.env.set {
        env.insert(k.clone(), v.clone());
    }
    for k in &launch.env.remove {
        env.remove(k);
    }
    for (k, v) in extra {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    env
}

#[derive(Debug)]
pub struct Ran {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Runs `program args` in `cwd` with exactly `env`, stdin as the launch says, for at most
/// `limit` (then killed: `status` is `None`).
pub fn run(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    stdin: Stdin,
    limit: Duration,
) -> Ran {
    run_until(program, args, cwd, env, stdin, limit, &|_| false)
}

/// Like [`run`], but also stops (kills) the program as soon as `done(stdout)` holds.
pub fn run_until(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    stdin: Stdin,
    limit: Duration,
    done: &dyn Fn(&str) -> bool,
) -> Ran {
    let out_dir = tempfile::tempdir().unwrap();
    let (out, err) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        // A group of its own, ended whole below: an npm launcher's own child (Codex's native
        // binary) outlived a kill of the launcher alone and ran on after the tests.
        .process_group(0)
        .stdin(match stdin {
            Stdin::Null => Stdio::null(),
            Stdin::Inherit => Stdio::null(),
        })
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit || done(&fs::read_to_string(&out).unwrap_or_default()) {
            end_group(child.id());
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // What the program left behind in its group ends with it.
    end_group(child.id());
    Ran {
        status,
        stdout: fs::read_to_string(&out).unwrap_or_default(),
        stderr: fs::read_to_string(&err).unwrap_or_default(),
    }
}

/// A stand-in for an MCP server (not a real one): a node script that writes `marker` as soon
/// as it starts, then answers `initialize` and `tools/list` (one tool, `ping`) so a client
/// counts it as connected.
pub fn stand_in_mcp_server(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let script = dir.join(format!("{name}-stand-in-mcp.js"));
    let marker = dir.join(format!("{name}.started"));
    let js = format!(
        r#"const fs = require("fs");
fs.writeFileSync({marker:?}, String(process.pid));
let buf = "";
process.stdin.on("data", (d) => {{
  buf += d;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {{
    const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
    let msg; try {{ msg = JSON.parse(line); }} catch {{ continue; }}
    if (msg.id === undefined) continue;
    let result = {{}};
    if (msg.method === "initialize") result = {{ protocolVersion: msg.params.protocolVersion, capabilities: {{ tools: {{}} }}, serverInfo: {{ name: {name:?}, version: "0" }} }};
    if (msg.method === "tools/list") result = {{ tools: [{{ name: "ping", description: "stand-in", inputSchema: {{ type: "object", properties: {{}} }} }}] }};
    process.stdout.write(JSON.stringify({{ jsonrpc: "2.0", id: msg.id, result }}) + "\n");
  }}
}});
"#,
        marker = marker.display().to_string(),
    );
    fs::write(&script, js).unwrap();
    (script, marker)
}

/// A tmux server of our own (`-L` socket, no config file), killed on drop.
#[derive(Debug)]
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `program args` with exactly `env` in a detached session.
    pub fn start(
        program: &Path,
        args: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Tmux {
        // One server per pane: tests run in parallel, and one test's kill-server must not end
        // another's session.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let socket = format!(
            "cli-sandbox-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut cmd = Command::new("tmux");
        cmd.args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
        ])
        .arg(cwd)
        .arg("--")
        .arg("env")
        .arg("-i");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg(program).args(args);
        let status = cmd.status().expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        Tmux { socket }
    }

    /// Types `keys` into the pane, as `tmux send-keys` takes them (`Enter` for the key).
    pub fn send(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success(), "tmux send-keys failed");
    }

    pub fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the pane shows any of `signs`; returns the pane either way.
    pub fn wait_for(&self, signs: &[&str], limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let pane = self.capture();
            if signs.iter().any(|s| pane.contains(s)) || start.elapsed() > limit {
                return pane;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // The pane's program leads a group of its own (tmux makes it a session): the group ends
        // first, then the server. A CLI's own children (Gemini's second node) otherwise outlived
        // `kill-server` and ran on after the tests.
        let pane = Command::new("tmux")
            .args(["-L", &self.socket, "display-message", "-p", "#{pane_pid}"])
            .output();
        if let Some(pid) = pane.ok().and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u32>()
                .ok()
        }) {
            end_group(pid);
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// SIGKILL to every process of the group `leader` leads (one this file started as a group of
/// its own); a group already gone is what this wants.
fn end_group(leader: u32) {
    let Ok(leader) = i32::try_from(leader) else {
        return;
    };
    // SAFETY: kill touches no memory; the group is one this file made for a program it started.
    let _ = unsafe { libc::kill(-leader, libc::SIGKILL) };
}

/// Whether tmux is installed (the pane tests need it).
pub fn tmux_available(test: &str) -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var(REQUIRE).is_ok_and(|v| v == "1") {
            panic!("{test}: tmux is not installed ({REQUIRE}=1)");
        }
        crate::skips::record(REQUIRE, test, "tmux is not installed");
        crate::say(&format!(
            "\n!!! SKIPPED {test}: tmux is not installed (apt-get install tmux). Set {REQUIRE}=1 to make this an error.\n"
        ));
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_list_is_tests_package_json_and_each_is_registered() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("package.json");
        let json: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
        let pinned: std::collections::BTreeMap<String, String> = json["dependencies"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        let listed: std::collections::BTreeMap<String, String> = contract::agents::installed()
            .into_iter()
            .map(|(_, i)| (i.npm_package.to_owned(), i.version.to_owned()))
            .collect();
        assert_eq!(
            listed, pinned,
            "tests/package.json pins other CLIs or versions than the adapters' driving data \
             (`Driving::install` in crates/adapter-*/src/driving.rs): make them the same"
        );
        assert!(!pinned.is_empty(), "no CLI is pinned");
    }
}
