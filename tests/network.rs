//! `[policy] network`, attacked for real under the kernel: servers on the machine's loopback
//! outside (TCP on `127.0.0.1` and `::1`, UDP on `127.0.0.1`, a server on `0.0.0.0`) started
//! by the test, and a chat that tries to reach them by every address it can name: the loopback
//! itself, the gateway of its namespace, the machine's own address, `::ffff:127.0.0.1`, a socket
//! bound to its outer interface, a packet of its own making. With `network = "shared"` (the
//! control) the loopback servers are reached; with `"isolated"` none is, while the server on
//! `0.0.0.0` is still reached through the machine's own address (outbound works), the chat's
//! own loopback works, and DNS works. Verdicts are what the servers outside saw (and, for the
//! chat's own server, what that server wrote to the disk), never the client's report.
//!
//! Pasta's own part: a packet addressed to `127.0.0.1`, handed to pasta from inside the chat's
//! namespace by a process that has the capabilities the chat lacks, does reach the machine's
//! loopback (this pasta forwards it). That is the control for the probe the chat makes: it holds
//! no capability, so it cannot make such a packet. And pasta ends with the chat: when the
//! program exits, when it leaves a daemon, when the launcher gets SIGTERM or is killed.
//!
//! Where namespaces cannot be made (the Landlock-only fallback), `isolated` is refused and
//! `doctor` says why. Everything runs as root and as an ordinary user the test creates.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cli_sandbox_tests::process::{children_of, text, wait_child, wait_until};
use cli_sandbox_tests::users::{TestUser, command_as};
use cli_sandbox_tests::{REQUIRE_LANDLOCK, cli_sandbox, confinement_available, say};
use launch::demo::Demo;
use sandbox_core::{Enforcement, EntryKind, Network, Promise};
use sandbox_linux::plan::{Kernel, LaunchDisk, LinuxPlan, PASTA, compile};

const PYTHON: &str = "/usr/bin/python3";

// ---------- what the tests need from the machine ----------

/// `true` when the kernel confines and pasta is installed. Otherwise says why the test is left
/// out, or panics where CI asks for real confinement (`.ci/run` installs pasta).
fn isolation_available(test: &str) -> bool {
    if !confinement_available(test) {
        return false;
    }
    let missing = [PASTA, PYTHON, "/usr/bin/unshare"]
        .into_iter()
        .find(|p| !Path::new(p).exists());
    let Some(missing) = missing else {
        return true;
    };
    let why = format!("{test}: {missing} is missing (apt-get install passt python3 util-linux)");
    if std::env::var(REQUIRE_LANDLOCK).as_deref() == Ok("1") {
        panic!("{why}, and {REQUIRE_LANDLOCK}=1 requires the tests to run");
    }
    cli_sandbox_tests::skips::record(REQUIRE_LANDLOCK, test, &why);
    say(&format!("\n!!! SKIPPED {why}\n"));
    false
}

/// Root, and the ordinary user when this process can make one and that user can open the tun
/// device pasta needs (the usual mode 0666; a user who cannot gets a clear refusal, checked by
/// `an_ordinary_user_without_the_tun_device_gets_a_clear_refusal`).
fn every_user(test: &str) -> Vec<Option<TestUser>> {
    let mut users = vec![None];
    if let Some(user) = TestUser::get(test) {
        if tun_usable(Some(&user)) {
            users.push(Some(user));
        } else {
            let why = format!(
                "{test}: /dev/net/tun cannot be opened by {} (it is usually mode 0666; .ci/run makes it so), so the ordinary-user runs of `network = \"isolated\"` are left out",
                user.name
            );
            if std::env::var(REQUIRE_LANDLOCK).as_deref() == Ok("1") {
                panic!("{why}, and {REQUIRE_LANDLOCK}=1 requires them");
            }
            say(&format!("\n!!! {why}\n"));
        }
    }
    users
}

fn tun_usable(user: Option<&TestUser>) -> bool {
    command_as(user, "/bin/sh")
        .args(["-c", "test -r /dev/net/tun && test -w /dev/net/tun"])
        .status()
        .is_ok_and(|s| s.success())
}

fn who(user: &Option<TestUser>) -> &str {
    user.as_ref().map_or("root", |u| u.name.as_str())
}

/// The machine's own address toward its default gateway (no packet is sent): the address a
/// server on `0.0.0.0` is reached at from another machine.
fn host_address() -> Option<Ipv4Addr> {
    let route = std::fs::read_to_string("/proc/net/route").ok()?;
    let gateway = route.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&"00000000"))
            .then(|| u32::from_str_radix(f.get(2)?, 16).ok())
            .flatten()
    })?;
    let gateway = Ipv4Addr::from(u32::from_be(gateway));
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect((gateway, 9)).ok()?;
    match socket.local_addr().ok()?.ip() {
        IpAddr::V4(a) if !a.is_loopback() && !a.is_unspecified() => Some(a),
        _ => None,
    }
}

// ---------- servers outside, and what they saw ----------

/// What one server outside saw: a connection or a datagram, and the first line sent on it (the
/// probe's name, or nothing for a handshake pasta made on its own).
#[derive(Debug, Clone)]
struct Seen {
    server: &'static str,
    peer: SocketAddr,
    said: String,
}

/// The servers the tests start on the machine, each recording everything that reached it.
struct Servers {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// TCP on 127.0.0.1 only.
    loopback4: u16,
    /// TCP on ::1 only.
    loopback6: u16,
    /// UDP on 127.0.0.1 only.
    udp4: u16,
    /// TCP on 0.0.0.0: every address of the machine.
    any4: u16,
}

impl Servers {
    fn start() -> Servers {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let tcp = |server: &'static str, at: SocketAddr| -> u16 {
            let listener = TcpListener::bind(at).unwrap_or_else(|e| panic!("bind {at}: {e}"));
            let port = listener.local_addr().unwrap().port();
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let seen = Arc::clone(&seen);
                    // Recorded when accepted (a handshake with nothing said counts too), and
                    // what it says added when it comes.
                    let peer = stream.peer_addr().unwrap_or(at);
                    let index = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(Seen {
                            server,
                            peer,
                            said: String::new(),
                        });
                        seen.len() - 1
                    };
                    std::thread::spawn(move || {
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut line = String::new();
                        let _ = BufReader::new(&stream).read_line(&mut line);
                        let _ = (&stream).write_all(b"outside\n");
                        seen.lock().unwrap()[index].said = line.trim().to_owned();
                    });
                }
            });
            port
        };
        let loopback4 = tcp("tcp 127.0.0.1", (Ipv4Addr::LOCALHOST, 0).into());
        let loopback6 = tcp("tcp ::1", (Ipv6Addr::LOCALHOST, 0).into());
        let any4 = tcp("tcp 0.0.0.0", (Ipv4Addr::UNSPECIFIED, 0).into());
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind udp");
        let udp4 = udp.local_addr().unwrap().port();
        {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                while let Ok((n, peer)) = udp.recv_from(&mut buf) {
                    seen.lock().unwrap().push(Seen {
                        server: "udp 127.0.0.1",
                        peer,
                        said: String::from_utf8_lossy(&buf[..n]).trim().to_owned(),
                    });
                }
            });
        }
        Servers {
            seen,
            loopback4,
            loopback6,
            udp4,
            any4,
        }
    }

    /// What reached the servers since `mark` (an index into what they saw).
    fn since(&self, mark: usize) -> Vec<Seen> {
        self.seen.lock().unwrap()[mark..].to_vec()
    }

    fn mark(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Lets a last connection or datagram land.
    fn settle(&self) {
        std::thread::sleep(Duration::from_millis(300));
    }
}

// ---------- the chat ----------

/// A demo layout with `network = ...` in its configuration, in a folder every user can enter,
/// owned by `user` when given.
struct Fixture {
    _dir: tempfile::TempDir,
    demo: Demo,
    user: Option<TestUser>,
}

fn fixture(network: Network, user: Option<&TestUser>) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let demo = Demo::create(&dir.path().join("layout")).expect("demo layout");
    // The demo's configuration ends inside its [policy] table.
    let mut config = std::fs::read_to_string(&demo.config).unwrap();
    config.push_str(&format!("network = \"{}\"\n", network.as_str()));
    std::fs::write(&demo.config, config).unwrap();
    if let Some(user) = user {
        user.own(&demo.root);
    }
    Fixture {
        _dir: dir,
        demo,
        user: user.cloned(),
    }
}

impl Fixture {
    /// `cli-sandbox step -- python3 -c program args...` for this layout's chat, as the
    /// fixture's user.
    fn python(&self, program: &str, args: &[&str]) -> Command {
        let argv = [PYTHON, "-c", program]
            .into_iter()
            .chain(args.iter().copied());
        cli_sandbox_tests::launches::step(self.user.as_ref(), &self.demo, &[], argv)
    }

    fn runtime_file(&self, name: &str) -> PathBuf {
        self.demo.runtime.join(name)
    }
}

/// A process as the kernel knows it: its pid and start time (a pid used again is another).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Process {
    pid: u32,
    start: String,
}

impl Process {
    fn of(pid: u32) -> Option<Process> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command (which may hold spaces) end in `)`.
        let rest = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // Field 22 (starttime) is the 20th after the command; a zombie is gone for our purpose.
        if fields.first() == Some(&"Z") {
            return None;
        }
        Some(Process {
            pid,
            start: fields.get(19)?.to_string(),
        })
    }

    fn alive(&self) -> bool {
        Process::of(self.pid).as_ref() == Some(self)
    }

    fn is_pasta(&self) -> bool {
        std::fs::read_link(format!("/proc/{}/exe", self.pid)).is_ok_and(|exe| {
            exe.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("passt"))
        })
    }
}

/// The launch's helper (the `cli-sandbox` process), its pasta and its init, once the chat's
/// program has started (it writes `ready`).
struct Launch {
    child: Child,
    helper: u32,
    pasta: Vec<Process>,
    init: Vec<Process>,
}

fn start_launch(mut cmd: Command, ready: &Path) -> Launch {
    let _ = std::fs::remove_file(ready);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the launch");
    if !wait_until(Duration::from_secs(20), || ready.exists()) {
        let _ = child.kill();
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        panic!("the chat's program never started: {err}");
    }
    // `setpriv` (the ordinary user's launches) execs cli-sandbox: the same pid.
    let helper = child.id();
    let processes: Vec<Process> = children_of(helper)
        .into_iter()
        .filter_map(Process::of)
        .collect();
    let (pasta, init) = processes.into_iter().partition(Process::is_pasta);
    Launch {
        child,
        helper,
        pasta,
        init,
    }
}

// ---------- the probes, run inside ----------

/// The chat's attempts, in Python. `argv[1]`: JSON with the servers' ports, the machine's
/// address, where to write what the chat's own server saw, and what to resolve. Each attempt
/// sends its name as the first line, so that a server outside can say which one reached it.
/// The gateways are read from the namespace's own routing tables.
const PROBE_LIB: &str = r#"
import json, os, socket, sys, time
cfg = json.loads(sys.argv[1])
lo4, lo6, udp4, any4, host = cfg["lo4"], cfg["lo6"], cfg["udp4"], cfg["any4"], cfg["host"]

def gateways():
    gw4 = gw6 = None
    dev = None
    for line in open("/proc/net/route").read().splitlines()[1:]:
        f = line.split()
        if f[1] == "00000000" and f[2] != "00000000":
            gw4 = socket.inet_ntoa(int(f[2], 16).to_bytes(4, "little")); dev = f[0]
    try:
        for line in open("/proc/net/ipv6_route").read().splitlines():
            f = line.split()
            if f[0] == "0" * 32 and f[1] == "00" and f[4] != "0" * 32:
                gw6 = socket.inet_ntop(socket.AF_INET6, bytes.fromhex(f[4]))
    except OSError:
        pass
    return gw4, gw6, dev
gw4, gw6, dev = gateways()

def tcp(name, address, port, device=None, scope=0):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(1.5)
    try:
        if device:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
        s.connect((address, port, 0, scope) if family == socket.AF_INET6 else (address, port))
        s.sendall((name + "\n").encode())
        s.recv(16)
        print("reached?", name)
    except Exception as e:
        print("no", name, e)
    finally:
        s.close()

def udp(name, address, port):
    s = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _ in range(3):
            s.sendto((name + "\n").encode(), (address, port))
    except Exception as e:
        print("no", name, e)
    s.close()

def tied(dev, tag):
    """Sockets tied to the outer interface, each way the kernel offers without a capability:
    the kernel would send their packets for the loopback out of it, to pasta."""
    index = socket.if_nametoindex(dev)
    tcp("bound-to-device" + tag, "127.0.0.1", lo4, device=dev)
    tcp("bound-to-device6" + tag, "::1", lo6, device=dev)
    tcp("bound-to-device-mapped" + tag, "::ffff:127.0.0.1", lo4, device=dev)
    tcp("scoped6" + tag, "::1", lo6, scope=index)
    for name, family, address, opt in [
        ("udp-bound-to-device" + tag, socket.AF_INET, "127.0.0.1", (socket.SOL_SOCKET, 25, dev.encode())),
        ("udp-bound-to-ifindex" + tag, socket.AF_INET, "127.0.0.1", (socket.SOL_SOCKET, 62, index.to_bytes(4, sys.byteorder))),
        ("udp-unicast-if" + tag, socket.AF_INET, "127.0.0.1", (socket.IPPROTO_IP, 50, index.to_bytes(4, "big"))),
        ("udp-unicast-if-mapped" + tag, socket.AF_INET6, "::ffff:127.0.0.1", (socket.IPPROTO_IPV6, 76, index.to_bytes(4, sys.byteorder))),
    ]:
        u = socket.socket(family, socket.SOCK_DGRAM)
        try:
            u.setsockopt(*opt)
            for _ in range(3):
                u.sendto((name + "\n").encode(), (address, udp4))
        except OSError as e:
            print("no", name, e)
        u.close()
    # A per-datagram interface: IP_PKTINFO (8) and IPV6_PKTINFO (50) with its index.
    for name, family, address, level, kind, info in [
        ("udp-pktinfo" + tag, socket.AF_INET, "127.0.0.1", socket.IPPROTO_IP, 8, index.to_bytes(4, sys.byteorder) + bytes(8)),
        ("udp-pktinfo-mapped" + tag, socket.AF_INET6, "::ffff:127.0.0.1", socket.IPPROTO_IPV6, 50, bytes(16) + index.to_bytes(4, sys.byteorder)),
    ]:
        u = socket.socket(family, socket.SOCK_DGRAM)
        try:
            for _ in range(3):
                u.sendmsg([(name + "\n").encode()], [(level, kind, info)], 0, (address, udp4))
        except OSError as e:
            print("no", name, e)
        u.close()
    # Datagrams still on their way to pasta when the chat ends would be lost with it.
    time.sleep(0.5)
"#;

/// The attempts themselves (after [`PROBE_LIB`]).
const PROBE_MAIN: &str = r#"
tcp("loopback4", "127.0.0.1", lo4)
tcp("loopback4-other", "127.0.0.2", lo4)
tcp("mapped", "::ffff:127.0.0.1", lo4)
tcp("loopback6", "::1", lo6)
tcp("host-address-to-loopback-only", host, lo4)
tcp("outbound", host, any4)
udp("udp-loopback4", "127.0.0.1", udp4)
if gw4:
    tcp("gateway4", gw4, lo4)
    tcp("gateway4-any", gw4, any4)
    udp("udp-gateway4", gw4, udp4)
if gw6:
    tcp("gateway6", gw6, lo6)
if dev and dev != "lo":
    tied(dev, "")
# The routing that would let 127.0.0.0/8 leave the namespace is a kernel tunable.
try:
    open("/proc/sys/net/ipv4/conf/all/route_localnet", "w").write("1")
    print("route_localnet WRITTEN")
except OSError as e:
    print("no route_localnet", e)
# A packet of the chat's own making needs CAP_NET_RAW.
for family, kind, proto in [(socket.AF_PACKET, socket.SOCK_RAW, 0), (socket.AF_PACKET, socket.SOCK_DGRAM, 0),
                            (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP), (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP)]:
    try:
        socket.socket(family, kind, proto)
        print("RAW SOCKET OPEN", family, kind)
        open(cfg["raw"], "a").write("%s %s\n" % (family, kind))
    except OSError as e:
        print("no raw", family, kind, e)

# The chat's own loopback: a server inside, reached from inside. It writes what it saw.
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname(), timeout=2)
c.sendall(b"inside\n")
conn, peer = srv.accept()
got = conn.recv(64).decode().strip()
open(cfg["inside"], "w").write("%s from %s\n" % (got, peer[0]))

# DNS, through the resolver the chat's /etc/resolv.conf names.
if cfg.get("name"):
    try:
        addresses = sorted({a[4][0] for a in socket.getaddrinfo(cfg["name"], 80, socket.AF_INET)})
    except Exception as e:
        addresses = ["failed: %s" % e]
    open(cfg["dns"], "w").write(" ".join(addresses))
"#;

/// A name the machine itself resolves through DNS, with its addresses: the control for the
/// chat's DNS. `None` (and a word on stderr) when the machine resolves none of them.
fn resolvable_name(test: &str) -> Option<(String, String)> {
    for name in ["deb.debian.org", "example.com", "crates.io"] {
        if let Ok(addresses) = (name, 80).to_socket_addrs() {
            let mut v4: Vec<String> = addresses
                .filter(|a| a.is_ipv4())
                .map(|a| a.ip().to_string())
                .collect();
            v4.sort();
            v4.dedup();
            if !v4.is_empty() {
                return Some((name.to_owned(), v4.join(" ")));
            }
        }
    }
    say(&format!(
        "\n!!! {test}: this machine resolves none of deb.debian.org, example.com, crates.io, so the chat's DNS is not checked\n"
    ));
    None
}

struct ProbeRun {
    seen: Vec<Seen>,
    inside: String,
    dns: Option<String>,
    raw: String,
    out: Output,
}

fn probe(f: &Fixture, servers: &Servers, host: Ipv4Addr, name: Option<&str>) -> ProbeRun {
    let inside = f.runtime_file("inside");
    let dns = f.runtime_file("dns");
    let raw = f.runtime_file("raw");
    for p in [&inside, &dns, &raw] {
        let _ = std::fs::remove_file(p);
    }
    let cfg = serde_json::json!({
        "lo4": servers.loopback4, "lo6": servers.loopback6, "udp4": servers.udp4,
        "any4": servers.any4, "host": host.to_string(),
        "inside": inside, "dns": dns, "raw": raw, "name": name,
    })
    .to_string();
    let mark = servers.mark();
    let program = format!("{PROBE_LIB}{PROBE_MAIN}");
    let out = f
        .python(&program, &[&cfg])
        .output()
        .expect("run the probes");
    servers.settle();
    ProbeRun {
        seen: servers.since(mark),
        inside: std::fs::read_to_string(&inside).unwrap_or_default(),
        dns: std::fs::read_to_string(&dns).ok(),
        raw: std::fs::read_to_string(&raw).unwrap_or_default(),
        out,
    }
}

fn reached(run: &ProbeRun, server: &str, probe: &str) -> bool {
    run.seen
        .iter()
        .any(|s| s.server == server && s.said == probe)
}

// ---------- the tests ----------

#[test]
fn shared_reaches_the_machines_loopback_and_isolated_reaches_only_the_outside() {
    let test = "shared_reaches_the_machines_loopback_and_isolated_reaches_only_the_outside";
    if !isolation_available(test) {
        return;
    }
    let Some(host) = host_address() else {
        panic!("{test}: this machine has no address besides the loopback to reach a server at");
    };
    let name = resolvable_name(test);
    let servers = Servers::start();
    for user in every_user(test) {
        // The control: the shared network reaches every server on the loopback.
        let f = fixture(Network::Shared, user.as_ref());
        let shared = probe(&f, &servers, host, None);
        assert!(
            shared.out.status.success(),
            "{}: {}",
            who(&user),
            text(&shared.out)
        );
        for (server, probe) in [
            ("tcp 127.0.0.1", "loopback4"),
            ("tcp 127.0.0.1", "mapped"),
            ("tcp ::1", "loopback6"),
            ("udp 127.0.0.1", "udp-loopback4"),
            ("tcp 0.0.0.0", "outbound"),
        ] {
            assert!(
                reached(&shared, server, probe),
                "control ({}): `{probe}` did not reach the {server} server on the shared network, so the probe proves nothing: {:?}\n{}",
                who(&user),
                shared.seen,
                text(&shared.out)
            );
        }

        let f = fixture(Network::Isolated, user.as_ref());
        let isolated = probe(&f, &servers, host, name.as_ref().map(|(n, _)| n.as_str()));
        assert!(
            isolated.out.status.success(),
            "{}: {}",
            who(&user),
            text(&isolated.out)
        );
        // Nothing at all reached a loopback server: no probe, and no handshake of pasta's own.
        let on_loopback: Vec<&Seen> = isolated
            .seen
            .iter()
            .filter(|s| s.server != "tcp 0.0.0.0")
            .collect();
        assert!(
            on_loopback.is_empty(),
            "{}: an isolated chat reached the machine's loopback: {on_loopback:?}\n{}",
            who(&user),
            text(&isolated.out)
        );
        // Outbound works: the server on 0.0.0.0, through the machine's own address, saw the
        // probe come from that address (pasta's socket on the machine).
        let outbound: Vec<&Seen> = isolated
            .seen
            .iter()
            .filter(|s| s.server == "tcp 0.0.0.0" && s.said == "outbound")
            .collect();
        assert!(
            !outbound.is_empty(),
            "{}: an isolated chat did not reach the machine's own address {host}: {:?}\n{}",
            who(&user),
            isolated.seen,
            text(&isolated.out)
        );
        assert!(
            outbound.iter().all(|s| s.peer.ip() == IpAddr::V4(host)),
            "{outbound:?}"
        );
        assert!(
            isolated.raw.is_empty(),
            "{}: the chat opened a raw socket: {}",
            who(&user),
            isolated.raw
        );
        assert!(
            !String::from_utf8_lossy(&isolated.out.stdout).contains("route_localnet WRITTEN"),
            "{}: {}",
            who(&user),
            text(&isolated.out)
        );
        // The chat's own loopback works: its server saw its client, from 127.0.0.1.
        assert_eq!(
            isolated.inside.trim(),
            "inside from 127.0.0.1",
            "{}: {}",
            who(&user),
            text(&isolated.out)
        );
        if let Some((name, addresses)) = &name {
            assert_eq!(
                isolated.dns.as_deref(),
                Some(addresses.as_str()),
                "{}: the chat did not resolve {name} as the machine does\n{}",
                who(&user),
                text(&isolated.out)
            );
        }
    }
}

/// In the chat's network namespace, a process with the capabilities the chat lacks (it joins
/// the chat's user and network namespaces itself, `argv[1]` being the chat's program, and so
/// holds every capability there): it injects a TCP SYN and a UDP datagram addressed to
/// 127.0.0.1 onto the namespace's interface, straight to pasta (`AF_PACKET`).
const INJECT: &str = r#"
import ctypes, os, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid, lo4, udp4 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for name, flag in (("user", 0x10000000), ("net", 0x40000000)):
    fd = os.open("/proc/%s/ns/%s" % (pid, name), os.O_RDONLY)
    if libc.setns(fd, flag) != 0:
        raise OSError(ctypes.get_errno(), "setns " + name)
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return (~s) & 0xffff
dev = gw = None
for line in open("/proc/self/net/route").read().splitlines()[1:]:
    f = line.split()
    if f[1] == "00000000" and f[2] != "00000000":
        dev, gw = f[0], socket.inet_ntoa(int(f[2], 16).to_bytes(4, "little"))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect((gw, 9)); own = u.getsockname()[0]
u.send(b"x"); time.sleep(0.3)
mac = None
for line in open("/proc/self/net/arp").read().splitlines()[1:]:
    f = line.split()
    if f[0] == gw: mac = bytes.fromhex(f[3].replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((dev, 0))
me = s.getsockname()[4]
def send(proto, l4):
    pseudo = socket.inet_aton(own) + socket.inet_aton("127.0.0.1") + struct.pack("!BBH", 0, proto, len(l4))
    at = 16 if proto == 6 else 6
    l4 = l4[:at] + struct.pack("!H", csum(pseudo + l4)) + l4[at + 2:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0, socket.inet_aton(own), socket.inet_aton("127.0.0.1"))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s.send(mac + me + b"\x08\x00" + ip + l4)
for _ in range(3):
    send(6, struct.pack("!HHLLBBHHH", 40001, lo4, 1000, 0, 5 << 4, 0x02, 64240, 0, 0))
    payload = b"injected\n"
    send(17, struct.pack("!HHHH", 40002, udp4, 8 + len(payload), 0) + payload)
    time.sleep(0.2)
print("sent")
"#;

/// After [`PROBE_LIB`]: writes `cfg["ready"]`, waits for `cfg["go"]`, then makes the tied
/// attempts again, each name ending in `-again`.
const TIED_AFTER_GO: &str = r#"
open(cfg["ready"], "w").write("ready")
deadline = time.time() + 30
while not os.path.exists(cfg["go"]) and time.time() < deadline:
    time.sleep(0.02)
if dev and dev != "lo":
    tied(dev, "-again")
"#;

/// `ip`, where iproute2 is installed.
fn ip_command() -> Option<&'static str> {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

#[test]
fn a_packet_for_127_0_0_1_reaches_the_loopback_through_pasta_only_with_capabilities_the_chat_lacks()
{
    let test = "a_packet_for_127_0_0_1_reaches_the_loopback_through_pasta_only_with_capabilities_the_chat_lacks";
    if !isolation_available(test) {
        return;
    }
    let servers = Servers::start();
    for user in every_user(test) {
        let f = fixture(Network::Isolated, user.as_ref());
        let go = f.runtime_file("go");
        let ready = f.runtime_file("ready");
        let _ = std::fs::remove_file(&go);
        let cfg = serde_json::json!({
            "lo4": servers.loopback4, "lo6": servers.loopback6, "udp4": servers.udp4,
            "any4": servers.any4, "host": "0.0.0.0", "go": go, "ready": ready,
        })
        .to_string();
        let program = format!("{PROBE_LIB}{TIED_AFTER_GO}");
        let mut launch = start_launch(f.python(&program, &[&cfg]), &ready);
        let program = launch
            .init
            .first()
            .map(|init| children_of(init.pid))
            .and_then(|c| c.first().copied())
            .expect("the chat's program, init's child");
        // The chat's own process holds no capability (the kernel's word).
        let status = std::fs::read_to_string(format!("/proc/{program}/status")).unwrap();
        let cap = |field: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .map(|v| v.trim().to_owned())
        };
        assert_eq!(
            cap("CapEff:").as_deref(),
            Some("0000000000000000"),
            "{status}"
        );
        assert_eq!(
            cap("CapBnd:").as_deref(),
            Some("0000000000000000"),
            "{status}"
        );

        // The control: root joins the chat's user and network namespaces (with every
        // capability there) and hands pasta hand-made packets for 127.0.0.1.
        let mark = servers.mark();
        let out = Command::new(PYTHON)
            .args(["-c", INJECT])
            .arg(program.to_string())
            .arg(servers.loopback4.to_string())
            .arg(servers.udp4.to_string())
            .output()
            .expect("nsenter");
        assert!(out.status.success(), "{}", text(&out));
        servers.settle();
        let seen = servers.since(mark);
        assert!(
            seen.iter().any(|s| s.server == "tcp 127.0.0.1")
                && seen
                    .iter()
                    .any(|s| s.server == "udp 127.0.0.1" && s.said == "injected"),
            "{}: with capabilities in the chat's namespace, packets for 127.0.0.1 did not reach the loopback through pasta; if this pasta drops them, the docs overstate the gap: {seen:?}",
            who(&user)
        );

        // The control of the tied attempts: without init's routes (root takes them away from
        // inside the chat's namespaces), the same program's sockets tied to the outer
        // interface do reach the machine's loopback.
        let removed = match (user.is_none(), ip_command()) {
            (true, Some(ip)) => {
                for (family, destination) in [("-4", "127.0.0.0/8"), ("-6", "::1/128")] {
                    let out = Command::new("nsenter")
                        .args([
                            "-t",
                            &program.to_string(),
                            "-U",
                            "-n",
                            "--preserve-credentials",
                        ])
                        .args([
                            ip,
                            family,
                            "route",
                            "del",
                            "local",
                            destination,
                            "dev",
                            "eth0",
                        ])
                        .args(["table", "local", "metric", "1"])
                        .output()
                        .expect("nsenter ip");
                    assert!(out.status.success(), "{}", text(&out));
                }
                true
            }
            (true, None) => {
                cli_sandbox_tests::skip(
                    &format!("the control of the tied attempts in {test}"),
                    "iproute2 (`ip`) is missing (init's routes cannot be taken away)",
                    REQUIRE_LANDLOCK,
                );
                false
            }
            // An ordinary user's chat: root joining it keeps no capability through exec.
            (false, _) => false,
        };
        let mark = servers.mark();
        std::fs::write(&go, "").unwrap();
        let status = wait_child(&mut launch.child, Duration::from_secs(30)).expect("launch ends");
        assert!(status.success(), "{status:?}");
        servers.settle();
        let seen = servers.since(mark);
        let tied: Vec<&Seen> = seen.iter().filter(|s| s.server != "tcp 0.0.0.0").collect();
        if removed {
            assert!(
                tied.iter().any(|s| s.said == "udp-bound-to-device-again")
                    && tied.iter().any(|s| s.server == "tcp 127.0.0.1"),
                "control: without init's routes the tied sockets did not reach the loopback, so the probe proves nothing: {seen:?}"
            );
        } else {
            assert!(tied.is_empty(), "{}: {tied:?}", who(&user));
        }
    }
}

#[test]
fn pasta_ends_with_the_chat_however_the_chat_ends() {
    let test = "pasta_ends_with_the_chat_however_the_chat_ends";
    if !isolation_available(test) {
        return;
    }
    // The program: (with "daemon", first leaves a daemon that ignores every signal), writes
    // `ready`, then waits for `go` and exits.
    const PROGRAM: &str = r#"
import os, signal, sys, time
go, ready, how = sys.argv[1], sys.argv[2], sys.argv[3]
if how == "daemon" and os.fork() == 0:
    os.setsid()
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    time.sleep(300)
    os._exit(0)
open(ready, "w").write("ready")
deadline = time.time() + 60
while not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.02)
"#;
    for user in every_user(test) {
        for how in ["exit", "daemon", "sigterm", "sigkill"] {
            let f = fixture(Network::Isolated, user.as_ref());
            let go = f.runtime_file("go");
            let ready = f.runtime_file("ready");
            let _ = std::fs::remove_file(&go);
            let mut launch = start_launch(
                f.python(
                    PROGRAM,
                    &[go.to_str().unwrap(), ready.to_str().unwrap(), how],
                ),
                &ready,
            );
            let context = format!("{} ({how})", who(&user));
            assert_eq!(
                (launch.pasta.len(), launch.init.len()),
                (1, 1),
                "{context}: the helper should have one pasta child and one init: {:?} {:?}",
                launch.pasta,
                launch.init
            );
            // Every process of the chat (the program, the daemon), from the kernel's list.
            let mut chat: Vec<Process> = Vec::new();
            let mut parents = vec![launch.init[0].pid];
            while let Some(parent) = parents.pop() {
                for pid in children_of(parent) {
                    parents.push(pid);
                    chat.extend(Process::of(pid));
                }
            }
            assert!(
                chat.len() >= if how == "daemon" { 2 } else { 1 },
                "{context}: {chat:?}"
            );
            match how {
                "exit" | "daemon" => std::fs::write(&go, "").unwrap(),
                "sigterm" => {
                    // SAFETY: kill touches no memory; the helper is this test's child, not
                    // yet reaped.
                    let rc = unsafe { libc::kill(launch.helper as i32, libc::SIGTERM) };
                    assert_eq!(rc, 0, "{context}: {}", std::io::Error::last_os_error());
                }
                "sigkill" => {
                    // SAFETY: kill touches no memory; the helper is this test's child, not
                    // yet reaped.
                    let rc = unsafe { libc::kill(launch.helper as i32, libc::SIGKILL) };
                    assert_eq!(rc, 0, "{context}: {}", std::io::Error::last_os_error());
                }
                _ => {}
            }
            let status = wait_child(&mut launch.child, Duration::from_secs(20))
                .unwrap_or_else(|| panic!("{context}: the launch never ended"));
            if how == "exit" || how == "daemon" {
                assert!(status.success(), "{context}: {status:?}");
            }
            // The helper waits for pasta's end before it exits; killed, the kernel ends pasta
            // (and init) at once, which takes a moment.
            let limit = if how == "sigkill" {
                Duration::from_secs(3)
            } else {
                Duration::ZERO
            };
            let gone = wait_until(limit, || {
                launch
                    .pasta
                    .iter()
                    .chain(&launch.init)
                    .chain(&chat)
                    .all(|p| !p.alive())
            });
            assert!(
                gone,
                "{context}: a process of the chat outlived it: pasta {:?}, init {:?}, the chat {:?}",
                launch.pasta, launch.init, chat
            );
            std::fs::write(&go, "").unwrap();
        }
    }
}

#[test]
fn without_user_namespaces_isolated_is_refused_and_doctor_says_why() {
    let test = "without_user_namespaces_isolated_is_refused_and_doctor_says_why";
    if !isolation_available(test) {
        return;
    }
    // A user namespace whose own limit forbids any further one: inside it, cli-sandbox finds
    // no user namespaces and falls back to Landlock alone, as on a machine that refuses them.
    // Only root can map itself this way here; the ordinary user's fallback is the same code.
    let forbid = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"";
    for network in [Network::Shared, Network::Isolated] {
        let f = fixture(network, None);
        let marker = f.runtime_file("ran");
        let _ = std::fs::remove_file(&marker);
        let mut cmd = Command::new("unshare");
        cmd.args(["--user", "--map-root-user", "/bin/sh", "-c", forbid, "sh"])
            .arg(cli_sandbox())
            .arg("--config")
            .arg(&f.demo.config)
            .args(["step", "--chat", &f.demo.chat, "--", "/bin/sh", "-c"])
            .arg(format!("echo ran > {}", marker.display()));
        cli_sandbox_tests::launches::demo_env(&mut cmd, &f.demo);
        let out = cmd.output().expect("run unshare");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match network {
            // The control: the fallback itself runs the program here.
            Network::Shared => {
                assert!(out.status.success(), "{}", text(&out));
                assert!(
                    marker.exists(),
                    "the fallback did not run the program: {}",
                    text(&out)
                );
            }
            Network::Isolated => {
                assert_eq!(out.status.code(), Some(125), "{}", text(&out));
                assert!(
                    !marker.exists(),
                    "the program ran on the shared network: {}",
                    text(&out)
                );
                assert!(
                    stderr.contains("network = \"isolated\"")
                        && stderr.contains("cannot create user namespaces")
                        && stderr.contains("network = \"shared\""),
                    "{stderr}"
                );
            }
            Network::Allowlist => unreachable!("not among the networks this test runs"),
        }
        if network == Network::Isolated {
            let mut doctor = Command::new("unshare");
            doctor
                .args(["--user", "--map-root-user", "/bin/sh", "-c", forbid, "sh"])
                .arg(cli_sandbox())
                .arg("--config")
                .arg(&f.demo.config)
                .args(["doctor", "--json"])
                .env("HOME", &f.demo.home);
            let out = doctor.output().expect("run doctor");
            let report: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("doctor --json: {e}\n{}", text(&out)));
            let loopback = report["ways_out"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["id"] == Promise::LoopbackTcp.id())
                .expect("the loopback guarantee")
                .clone();
            assert_eq!(loopback["enforced"], "not", "{loopback}");
            assert!(
                loopback["note"]
                    .as_str()
                    .unwrap()
                    .contains("cannot create user namespaces"),
                "{loopback}"
            );
        }
    }
}

#[test]
fn an_ordinary_user_without_the_tun_device_gets_a_clear_refusal() {
    let test = "an_ordinary_user_without_the_tun_device_gets_a_clear_refusal";
    if !isolation_available(test) {
        return;
    }
    let Some(user) = TestUser::get(test) else {
        return;
    };
    if tun_usable(Some(&user)) {
        say(&format!(
            "\n!!! {test}: /dev/net/tun is usable by {} here, so the refusal is not seen (it is, on a machine where the device is mode 0600)\n",
            user.name
        ));
        return;
    }
    let f = fixture(Network::Isolated, Some(&user));
    let marker = f.runtime_file("ran");
    let out = f
        .python(
            "import sys; open(sys.argv[1], 'w').write('ran')",
            &[marker.to_str().unwrap()],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(!marker.exists(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/dev/net/tun"),
        "{}",
        text(&out)
    );
}

// ---------- the plan (no kernel needed) ----------

/// The machine's disk, with pasta present or missing whatever this machine has (the plan only
/// asks whether it is there).
struct Disk {
    pasta: bool,
}

impl LaunchDisk for Disk {
    fn exists(&self, path: &Path) -> bool {
        if path == Path::new(PASTA) {
            return self.pasta;
        }
        path.symlink_metadata().is_ok()
    }
    fn kind(&self, path: &Path) -> Option<EntryKind> {
        if path == Path::new(PASTA) {
            return self.pasta.then_some(EntryKind::File);
        }
        let meta = path.symlink_metadata().ok()?;
        Some(if meta.file_type().is_symlink() {
            EntryKind::Symlink
        } else if meta.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        })
    }
    fn entries(&self, dir: &Path) -> Vec<(std::ffi::OsString, EntryKind)> {
        std::fs::read_dir(dir)
            .map(|r| {
                r.flatten()
                    .filter_map(|e| Some((e.file_name(), self.kind(&e.path())?)))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn target_kind(&self, path: &Path) -> Option<EntryKind> {
        if path == Path::new(PASTA) {
            return self.pasta.then_some(EntryKind::File);
        }
        let meta = std::fs::metadata(path).ok()?;
        Some(if meta.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        })
    }
}

fn policy_of(f: &Fixture) -> sandbox_core::Policy {
    launch::Context::load(&f.demo.settings())
        .expect("context")
        .policy(&f.demo.chat, &[])
        .expect("policy")
}

const WITH_NAMESPACES: Kernel = Kernel {
    landlock_abi: 6,
    namespaces: true,
    fuse: false,
};
const WITHOUT_NAMESPACES: Kernel = Kernel {
    landlock_abi: 6,
    namespaces: false,
    fuse: false,
};

fn loopback(plan: &LinuxPlan) -> Enforcement {
    plan.guarantees
        .iter()
        .find(|g| g.is(Promise::LoopbackTcp))
        .expect("the loopback guarantee")
        .enforcement
        .clone()
}

#[test]
fn shared_is_said_to_be_open_in_both_plans() {
    let f = fixture(Network::Shared, None);
    let policy = policy_of(&f);
    for pasta in [true, false] {
        let plan = compile(&policy, WITH_NAMESPACES, &Disk { pasta }).unwrap();
        assert!(plan.namespaces.as_ref().unwrap().network.is_none());
        assert!(matches!(loopback(&plan), Enforcement::Not(_)));
        let frozen = compile(&policy, WITHOUT_NAMESPACES, &Disk { pasta }).unwrap();
        assert!(matches!(loopback(&frozen), Enforcement::Not(_)));
    }
}

#[test]
fn isolated_is_a_network_namespace_with_pasta_and_nothing_forwarded() {
    let f = fixture(Network::Isolated, None);
    let policy = policy_of(&f);
    assert_eq!(policy.network(), Network::Isolated);
    let plan = compile(&policy, WITH_NAMESPACES, &Disk { pasta: true }).unwrap();
    let net = plan
        .namespaces
        .as_ref()
        .unwrap()
        .network
        .as_ref()
        .expect("a network plan");
    assert_eq!(net.pasta, Path::new(PASTA));
    for (option, value) in [
        ("--tcp-ports", Some("none")),
        ("--udp-ports", Some("none")),
        ("--tcp-ns", Some("none")),
        ("--udp-ns", Some("none")),
        ("--no-map-gw", None),
        ("--config-net", None),
        ("--dns-forward", Some(net.dns.as_str())),
    ] {
        let at = net
            .pasta_args
            .iter()
            .position(|a| a == option)
            .unwrap_or_else(|| panic!("{option} missing: {:?}", net.pasta_args));
        if let Some(value) = value {
            assert_eq!(net.pasta_args[at + 1], value, "{option}");
        }
    }
    assert_eq!(loopback(&plan), Enforcement::Fully);
}

#[test]
fn isolated_without_pasta_or_without_namespaces_is_refused_never_shared() {
    let f = fixture(Network::Isolated, None);
    let policy = policy_of(&f);
    let err = compile(&policy, WITH_NAMESPACES, &Disk { pasta: false })
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("needs pasta") && err.contains("apt-get install passt"),
        "{err}"
    );
    for pasta in [true, false] {
        let err = compile(&policy, WITHOUT_NAMESPACES, &Disk { pasta })
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot create user namespaces"), "{err}");
    }
}

#[test]
fn a_root_chat_that_may_write_where_pasta_lives_is_refused() {
    let f = fixture(Network::Isolated, None);
    let mut config = std::fs::read_to_string(&f.demo.config).unwrap();
    config.push_str("writable = [\"/usr\"]\n");
    std::fs::write(&f.demo.config, config).unwrap();
    // Built as root's launch would be, whoever runs the test.
    let mut ctx = launch::Context::load(&f.demo.settings()).expect("context");
    ctx.privileged = true;
    let policy = ctx.policy(&f.demo.chat, &[]).expect("policy");
    assert!(policy.system_read_only() && policy.writable().contains(&PathBuf::from("/usr")));
    let err = compile(&policy, WITH_NAMESPACES, &Disk { pasta: true })
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("could replace pasta") && err.contains("writable"),
        "{err}"
    );
    // The control: without `/usr` among the writable places, the same plan compiles.
    ctx.config
        .policy
        .writable
        .retain(|w| w != Path::new("/usr"));
    let policy = ctx.policy(&f.demo.chat, &[]).expect("policy");
    assert!(compile(&policy, WITH_NAMESPACES, &Disk { pasta: true }).is_ok());
}
