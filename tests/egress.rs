//! `[policy] network = "allowlist"` (issue 28), attacked for real under the kernel, as root and as
//! an ordinary user the test creates. The chat (the namespace plan, through the real helper) runs
//! `tests/egress_probe.py`, which tries every way out a program would: through the proxy the
//! launch gives it (a listed name by HTTP and by TLS; an unlisted name, a bare address, the
//! machine's address, IPv6, a CONNECT to a listed name carrying another TLS server name, a
//! request relayed through the listed host by its Host header or as a second request on the
//! connection, DNS by CONNECT) and around it, the proxy variables dropped (the listed server's
//! port, the machine's loopback, the machine's own address, `::1`, `::ffff:127.0.0.1`, UDP, a
//! DNS query, a raw and a packet socket). The servers are the test's own, outside, on the
//! machine's loopback and on `0.0.0.0`; the proxy maps the listed name (and, so that a wrong
//! allow would land somewhere, the unlisted one) to them by its resolver override for tests
//! (`EgressPlan::resolve`). Verdicts are what the servers saw and the proxy's log, never what
//! the probe says. The control: the same probe unconfined, as the same user, reaches every
//! server it names directly; the confined listed requests are the proxy's own control.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cli_sandbox_tests::users::{TestUser, command_as, every_user};
use cli_sandbox_tests::{cli_sandbox, confinement_available, repo_root};
use launch::Context;
use launch::demo::Demo;
use sandbox_linux::plan::{Kernel, LinuxPlan};

const PYTHON: &str = "/usr/bin/python3";

/// What one server outside saw: its name and the bytes of one connection or datagram.
#[derive(Debug, Clone)]
struct Seen {
    server: &'static str,
    bytes: String,
}

struct Servers {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// HTTP on 127.0.0.1: the listed name's server.
    listed: u16,
    /// TCP on 0.0.0.0: what an unlisted name, a bare address or the loopback would reach.
    other: u16,
    /// TCP on ::1 (0 when the machine has no IPv6 loopback).
    v6: u16,
    /// UDP on 0.0.0.0.
    udp: u16,
}

impl Servers {
    fn start() -> Servers {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let tcp = |server: &'static str, at: SocketAddr| -> Option<u16> {
            let listener = TcpListener::bind(at).ok()?;
            let port = listener.local_addr().ok()?.port();
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                for mut stream in listener.incoming().flatten() {
                    let seen = Arc::clone(&seen);
                    std::thread::spawn(move || {
                        let _ = stream.set_read_timeout(Some(Duration::from_millis(1500)));
                        let mut got = Vec::new();
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = stream.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            got.extend_from_slice(&buf[..n]);
                            if got.windows(4).any(|w| w == b"\r\n\r\n") {
                                let _ = stream.write_all(
                                    b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\noutside\n",
                                );
                                break;
                            }
                        }
                        seen.lock().unwrap().push(Seen {
                            server,
                            bytes: String::from_utf8_lossy(&got).into_owned(),
                        });
                    });
                }
            });
            Some(port)
        };
        let listed = tcp("listed 127.0.0.1", (Ipv4Addr::LOCALHOST, 0).into()).expect("bind");
        let other = tcp("other 0.0.0.0", (Ipv4Addr::UNSPECIFIED, 0).into()).expect("bind");
        let v6 = tcp("v6 ::1", (Ipv6Addr::LOCALHOST, 0).into()).unwrap_or(0);
        let udp = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("bind udp");
        let udp_port = udp.local_addr().unwrap().port();
        {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while let Ok((n, _)) = udp.recv_from(&mut buf) {
                    seen.lock().unwrap().push(Seen {
                        server: "udp 0.0.0.0",
                        bytes: String::from_utf8_lossy(&buf[..n]).into_owned(),
                    });
                }
            });
        }
        Servers {
            seen,
            listed,
            other,
            v6,
            udp: udp_port,
        }
    }

    fn mark(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// What reached the servers since `mark`, once the last connection has been read.
    fn since(&self, mark: usize) -> Vec<Seen> {
        std::thread::sleep(Duration::from_millis(1800));
        self.seen.lock().unwrap()[mark..].to_vec()
    }
}

/// The machine's own address toward its default gateway (no packet is sent), or a documentation
/// address no route leads to.
fn host_address() -> Ipv4Addr {
    let found = || -> Option<Ipv4Addr> {
        let route = std::fs::read_to_string("/proc/net/route").ok()?;
        let gateway = route.lines().skip(1).find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.get(1) == Some(&"00000000"))
                .then(|| u32::from_str_radix(f.get(2)?, 16).ok())
                .flatten()
        })?;
        let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
        socket
            .connect((Ipv4Addr::from(u32::from_be(gateway)), 9))
            .ok()?;
        match socket.local_addr().ok()?.ip() {
            IpAddr::V4(a) if !a.is_loopback() && !a.is_unspecified() => Some(a),
            _ => None,
        }
    };
    found().unwrap_or(Ipv4Addr::new(192, 0, 2, 1))
}

struct Lab {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
    probe: PathBuf,
}

impl Lab {
    fn new(user: Option<&TestUser>) -> Lab {
        Lab::with_hosts(user, "[\"listed.test\"]")
    }

    /// The lab with `allowed_hosts = HOSTS` (TOML).
    fn with_hosts(user: Option<&TestUser>, hosts: &str) -> Lab {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
        let mut config = std::fs::read_to_string(&demo.config).unwrap();
        config.push_str(&format!(
            "network = \"allowlist\"\nallowed_hosts = {hosts}\n"
        ));
        std::fs::write(&demo.config, config).unwrap();
        let probe = dir.path().join("egress_probe.py");
        std::fs::copy(repo_root().join("tests/egress_probe.py"), &probe).unwrap();
        std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o644)).unwrap();
        if let Some(user) = user {
            user.own(&demo.root);
        }
        Lab {
            _dir: dir,
            demo,
            user: user.cloned(),
            probe,
        }
    }

    fn who(&self) -> &'static str {
        if self.user.is_some() {
            "as an ordinary user"
        } else {
            "as root"
        }
    }

    /// The namespace plan of the chat, the listed and unlisted names mapped to the test's
    /// servers on the machine's loopback.
    fn plan(&self) -> LinuxPlan {
        let mut ctx = Context::load(&self.demo.settings()).expect("context");
        ctx.privileged = self.user.is_none();
        let policy = ctx.policy(&self.demo.chat, &[]).expect("policy");
        let kernel = Kernel {
            namespaces: true,
            ..sandbox_linux::this_kernel()
        };
        let mut plan = sandbox_linux::compile(&policy, kernel).expect("plan");
        let egress = plan
            .namespaces
            .as_mut()
            .and_then(|ns| ns.egress.as_mut())
            .expect("an egress plan");
        for name in ["listed.test", "unlisted.test"] {
            egress
                .resolve
                .insert(name.into(), vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        }
        plan
    }

    fn probe_args(&self, servers: &Servers) -> Vec<String> {
        vec![
            self.probe.display().to_string(),
            servers.listed.to_string(),
            servers.other.to_string(),
            servers.v6.to_string(),
            servers.udp.to_string(),
            host_address().to_string(),
        ]
    }

    /// The probe confined by the namespace plan, through the real helper.
    fn confined(&self, plan: &LinuxPlan, servers: &Servers) -> Output {
        let file = self.demo.root.join("plan.json");
        std::fs::write(&file, serde_json::to_vec(plan).unwrap()).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::create_dir_all(&self.demo.runtime).unwrap();
        if let Some(user) = &self.user {
            user.own(&self.demo.runtime);
        }
        let mut cmd = command_as(self.user.as_ref(), cli_sandbox());
        cmd.arg("exec")
            .arg("--policy")
            .arg(&file)
            .args(["--", PYTHON])
            .args(self.probe_args(servers));
        self.environment(&mut cmd);
        // A proxy the caller set for itself must not be the chat's (the launch replaces it).
        cmd.env("NO_PROXY", "*")
            .env("HTTP_PROXY", "http://10.9.9.9:1");
        cmd.output().expect("run cli-sandbox exec")
    }

    /// The control: the same probe, unconfined, as the same user.
    fn unconfined(&self, servers: &Servers) -> Output {
        let mut cmd = command_as(self.user.as_ref(), PYTHON);
        cmd.args(self.probe_args(servers));
        self.environment(&mut cmd);
        cmd.env_remove("HTTP_PROXY");
        cmd.output().expect("run the probe")
    }

    fn environment(&self, cmd: &mut Command) {
        cli_sandbox_tests::launches::demo_env(cmd, &self.demo).current_dir(&self.demo.root);
    }
}

/// Whether a connection or datagram marked `probe` reached `server` (any server if `None`).
fn reached(seen: &[Seen], probe: &str, server: Option<&str>) -> bool {
    seen.iter()
        .any(|s| s.bytes.contains(probe) && server.is_none_or(|name| s.server == name))
}

/// The proxy's decisions, one JSON object a line.
fn decisions(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// What the probe tries around the proxy, and where the control reaches it.
const AROUND: &[(&str, &str)] = &[
    ("noproxy-listed", "listed 127.0.0.1"),
    ("loopback-direct", "other 0.0.0.0"),
    ("ipv4-mapped-direct", "other 0.0.0.0"),
    ("udp-loopback", "udp 0.0.0.0"),
    ("dns-unlisted", "udp 0.0.0.0"),
];

/// What the probe tries through the proxy that must reach nothing.
const REFUSED: &[&str] = &[
    "unlisted-http",
    "unlisted-connect",
    "bare-address-http",
    "bare-address-connect",
    "machine-address-connect",
    "ipv6-connect",
    "sni-mismatch",
    "relay-host-header",
    "dns-through-proxy",
    "machine-address-direct",
    "ipv6-direct",
    "udp-machine-address",
    "raw-socket",
];

#[test]
fn allowlist_reaches_the_listed_host_only_through_the_proxy_and_every_other_way_is_refused() {
    let test =
        "allowlist_reaches_the_listed_host_only_through_the_proxy_and_every_other_way_is_refused";
    if !confinement_available(test) {
        return;
    }
    let servers = Servers::start();
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::new(user.as_ref());
        let who = lab.who();

        // The control: unconfined, every direct way reaches its server.
        let mark = servers.mark();
        let out = lab.unconfined(&servers);
        let seen = servers.since(mark);
        for (probe, server) in AROUND {
            if !reached(&seen, probe, Some(server)) {
                failures.push(format!(
                    "{who} control: {probe} did not reach {server} unconfined: {}",
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
        }
        if servers.v6 != 0 && !reached(&seen, "ipv6-direct", Some("v6 ::1")) {
            failures.push(format!("{who} control: ipv6-direct did not reach ::1"));
        }

        // Confined: the listed host through the proxy, nothing else anywhere.
        let plan = lab.plan();
        let log = plan
            .namespaces
            .as_ref()
            .and_then(|ns| ns.egress.as_ref())
            .map(|e| e.log.clone())
            .unwrap();
        let mark = servers.mark();
        let out = lab.confined(&plan, &servers);
        let seen = servers.since(mark);
        let said = format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for probe in ["listed-http", "listed-tls"] {
            if !reached(&seen, probe, Some("listed 127.0.0.1")) {
                failures.push(format!(
                    "{who}: {probe} did not reach the listed server: {said}"
                ));
            }
        }
        if !seen
            .iter()
            .any(|s| s.bytes.contains("GET /listed-http ") && s.bytes.contains("Host: listed.test"))
        {
            failures.push(format!("{who}: the listed request came without its Host"));
        }
        for (probe, _) in AROUND {
            if reached(&seen, probe, None) {
                failures.push(format!("{who}: {probe} reached a server outside: {said}"));
            }
        }
        for probe in REFUSED {
            if reached(&seen, probe, None) {
                failures.push(format!("{who}: {probe} reached a server outside: {said}"));
            }
        }
        // The second request on a kept connection went nowhere but to the listed server (the
        // one connection, `Connection: close`: what a listed host does with more bytes is the
        // owner's choice in listing it), never to what the unlisted name resolves to.
        if seen
            .iter()
            .any(|s| s.server != "listed 127.0.0.1" && s.bytes.contains("relay-"))
        {
            failures.push(format!("{who}: a relayed request reached another server"));
        }

        // Each decision in the proxy's log, outside the chat.
        let lines = decisions(&log);
        let has = |host: &str, verdict: &str, why: Option<&str>| {
            lines.iter().any(|d| {
                d["host"] == host
                    && d["verdict"] == verdict
                    && d["chat"] == lab.demo.chat.as_str()
                    && why.is_none_or(|w| d["why"].as_str().is_some_and(|t| t.contains(w)))
            })
        };
        for (host, verdict, why) in [
            ("listed.test", "allowed", Some("listed listed.test")),
            ("unlisted.test", "denied", Some("not listed")),
            ("127.0.0.1", "denied", Some("not a host name")),
            ("::1", "denied", Some("not a host name")),
            ("listed.test", "denied", Some("sni mismatch")),
            ("listed.test", "denied", Some("host header")),
        ] {
            if !has(host, verdict, why) {
                failures.push(format!(
                    "{who}: no {verdict} decision for {host} ({why:?}) in {}: {lines:?}",
                    log.display()
                ));
            }
        }
        let mode = std::fs::metadata(&log).map(|m| m.permissions().mode() & 0o777);
        if mode.as_ref().ok() != Some(&0o600) {
            failures.push(format!("{who}: the log's mode is {mode:?}, not 0600"));
        }
    }
    assert!(failures.is_empty(), "{test}:\n{}", failures.join("\n"));
}

/// The plans: the namespace plan has the egress proxy and no pasta (no route but the proxy's
/// listener), and says so as attacked above; the Landlock-only fallback, which cannot make a
/// network namespace, refuses `allowlist`, naming the key and the remedy, never runs it shared.
#[test]
fn allowlist_is_the_proxy_alone_in_the_namespace_plan_and_refused_in_the_fallback() {
    let lab = Lab::new(None);
    let ctx = Context::load(&lab.demo.settings()).expect("context");
    let policy = ctx.policy(&lab.demo.chat, &[]).expect("policy");
    let kernel = |namespaces| Kernel {
        namespaces,
        landlock_abi: 6,
        ..sandbox_linux::this_kernel()
    };
    let plan = sandbox_linux::compile(&policy, kernel(true)).expect("namespace plan");
    let ns = plan.namespaces.as_ref().expect("namespaces");
    assert!(ns.network.is_none(), "no pasta with the allowlist");
    let egress = ns.egress.as_ref().expect("the egress plan");
    assert_eq!(egress.allowed_hosts, vec!["listed.test".to_owned()]);
    assert!(egress.resolve.is_empty(), "the compile never maps names");
    assert!(egress.log.ends_with("state/egress/chat-1.jsonl"));
    let said = plan
        .guarantees
        .iter()
        .find(|g| g.is(sandbox_core::Promise::LoopbackTcp))
        .expect("the network's guarantee");
    assert_eq!(said.enforcement, sandbox_core::Enforcement::Fully);
    let err = sandbox_linux::compile(&policy, kernel(false)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("network = \"allowlist\"") && text.contains("user namespaces"),
        "{text}"
    );
}

/// `cli-sandbox step` (which applies the plan in its own process) serves the proxy too, with the
/// machine's resolver: a request for `localhost` (listed exactly, so reachable wherever it
/// resolves) reaches the test's server through `HTTP_PROXY`; one for an unlisted name is refused
/// and logged; the step's direct connection to the machine's loopback reaches nothing. The
/// control: the same direct connection unconfined reaches the server.
#[test]
fn a_scripted_step_with_allowlist_has_the_proxy_as_its_only_route() {
    let test = "a_scripted_step_with_allowlist_has_the_proxy_as_its_only_route";
    if !confinement_available(test) {
        return;
    }
    let servers = Servers::start();
    let script = r#"
import os, socket, sys
h, p = os.environ["HTTP_PROXY"].removeprefix("http://").rsplit(":", 1)
s = socket.create_connection((h, int(p)), timeout=5)
s.sendall(b"CONNECT unlisted.test:443 HTTP/1.1\r\nHost: unlisted.test:443\r\n\r\n")
print(s.recv(4096))
a = socket.create_connection((h, int(p)), timeout=5)
a.sendall(f"GET http://localhost:{sys.argv[1]}/step-allowed HTTP/1.1\r\nHost: localhost:{sys.argv[1]}\r\n\r\n".encode())
print(a.recv(4096))
try:
    d = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    d.sendall(b"step-direct\n")
except OSError as e:
    print(e)
"#;
    let mut failures = Vec::new();
    for user in every_user(test) {
        let lab = Lab::with_hosts(user.as_ref(), "[\"localhost\"]");
        let who = lab.who();
        let mark = servers.mark();
        let mut control = command_as(lab.user.as_ref(), PYTHON);
        control.args(["-c", "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1]))).sendall(b'step-direct\\n')"])
            .arg(servers.other.to_string());
        lab.environment(&mut control);
        let _ = control.output();
        if !reached(&servers.since(mark), "step-direct", None) {
            failures.push(format!(
                "{who} control: the unconfined connection reached nothing"
            ));
        }
        std::fs::create_dir_all(&lab.demo.runtime).unwrap();
        if let Some(user) = &lab.user {
            user.own(&lab.demo.runtime);
        }
        let mark = servers.mark();
        let other = servers.other.to_string();
        let mut cmd = cli_sandbox_tests::launches::step(
            lab.user.as_ref(),
            &lab.demo,
            &[],
            [PYTHON, "-c", script, &other],
        );
        lab.environment(&mut cmd);
        let out = cmd.output().expect("run cli-sandbox step");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let seen = servers.since(mark);
        if reached(&seen, "step-direct", None) {
            failures.push(format!(
                "{who}: the step's direct connection reached the loopback"
            ));
        }
        if !reached(&seen, "GET /step-allowed ", Some("other 0.0.0.0")) {
            failures.push(format!(
                "{who}: the listed localhost was not reached: {said}"
            ));
        }
        let policy = {
            let mut ctx = Context::load(&lab.demo.settings()).expect("context");
            ctx.privileged = lab.user.is_none();
            ctx.policy(&lab.demo.chat, &[]).expect("policy")
        };
        let log = policy.egress().expect("egress").log.clone();
        if !decisions(&log)
            .iter()
            .any(|d| d["host"] == "unlisted.test" && d["verdict"] == "denied")
        {
            failures.push(format!(
                "{who}: no denied decision for unlisted.test in {}: {said}",
                log.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{test}:\n{}", failures.join("\n"));
}
