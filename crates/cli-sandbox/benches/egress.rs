//! What the egress proxy costs a chat's HTTP (issue 28): latency (a small GET, a new connection
//! each, the median) and throughput (a 32 MiB body) of the same Python client, side by side in
//! one run: unconfined and direct; in a chat of the namespace plan with `network = "shared"`,
//! direct; in a chat with `network = "allowlist"`, through the proxy (the listed name mapped to
//! the bench's server on 127.0.0.1 by the plan's resolver override for tests). A benchmark, not a
//! test: nothing fails on a figure. Linux, as root (the plans are compiled for a root launcher).
//!
//! `cargo bench -p cli-sandbox --bench egress` (`-- --rounds N` for more small requests).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::process::Command;

const PYTHON: &str = "/usr/bin/python3";
const BIG: usize = 32 << 20;

const CLIENT: &str = r#"
import json, os, socket, sys, time
mode, port, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = os.environ.get("HTTP_PROXY", "").removeprefix("http://").rstrip("/")
def get(path):
    if mode == "proxy":
        h, p = proxy.rsplit(":", 1)
        s = socket.create_connection((h, int(p)))
        s.sendall(f"GET http://bench.test:{port}{path} HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n".encode())
    else:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    n = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        n += len(b)
    s.close()
    return n
get("/small")
lat = []
for _ in range(rounds):
    t = time.perf_counter(); get("/small"); lat.append(time.perf_counter() - t)
lat.sort()
thr = []
for _ in range(3):
    t = time.perf_counter(); n = get("/big"); thr.append(n / (time.perf_counter() - t) / (1 << 20))
print(json.dumps({"latency_us": lat[len(lat) // 2] * 1e6, "mib_s": max(thr)}))
"#;

fn serve() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let port = listener.local_addr().unwrap().port();
    let big = std::sync::Arc::new(vec![b'x'; BIG]);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let big = std::sync::Arc::clone(&big);
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut head = Vec::new();
                let mut buf = [0u8; 2048];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body: &[u8] = if head.starts_with(b"GET /big") {
                    big.as_slice()
                } else {
                    b"ok"
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(body);
            });
        }
    });
    port
}

/// A chat's plan for `network`, written beside its demo layout; the helper's command for it.
fn chat(dir: &std::path::Path, network: &str, port: u16, rounds: u32) -> Command {
    let demo = launch::demo::Demo::create(&dir.join(network)).expect("demo layout");
    let mut config = std::fs::read_to_string(&demo.config).unwrap();
    config.push_str(&format!("network = \"{network}\"\n"));
    if network == "allowlist" {
        config.push_str("allowed_hosts = [\"bench.test\"]\n");
    }
    std::fs::write(&demo.config, config).unwrap();
    let mut ctx = launch::Context::load(&demo.settings()).expect("context");
    ctx.privileged = true;
    let policy = ctx.policy(&demo.chat, &[]).expect("policy");
    let mut plan = sandbox_linux::compile(&policy, sandbox_linux::this_kernel()).expect("plan");
    if let Some(egress) = plan.namespaces.as_mut().and_then(|ns| ns.egress.as_mut()) {
        egress
            .resolve
            .insert("bench.test".into(), vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    }
    let file = demo.root.join("plan.json");
    std::fs::write(&file, serde_json::to_vec(&plan).unwrap()).unwrap();
    std::fs::create_dir_all(&demo.runtime).unwrap();
    let mode = if network == "allowlist" {
        "proxy"
    } else {
        "direct"
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cli-sandbox"));
    cmd.arg("exec")
        .arg("--policy")
        .arg(&file)
        .args(["--", PYTHON, "-c", CLIENT, mode])
        .arg(port.to_string())
        .arg(rounds.to_string())
        .env("HOME", &demo.home)
        .env_remove("XDG_DATA_HOME")
        .env_remove("AGENTWORKS_STATE_ROOT")
        .env_remove("AGENTWORKS_WORKSPACE_DOCS");
    cmd
}

fn measure(mut cmd: Command) -> (f64, f64) {
    let out = cmd.output().expect("run the client");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "the client said {text:?} ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        v["latency_us"].as_f64().unwrap_or(f64::NAN),
        v["mib_s"].as_f64().unwrap_or(f64::NAN),
    )
}

fn main() {
    let mut rounds = 300u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rounds" {
            rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(rounds);
        }
    }
    // SAFETY: geteuid only reads this process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("egress bench: left out: it compiles plans for a root launcher; run it as root");
        return;
    }
    let port = serve();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut unconfined = Command::new(PYTHON);
    unconfined
        .args(["-c", CLIENT, "direct"])
        .arg(port.to_string())
        .arg(rounds.to_string());
    let rows = [
        ("unconfined, direct", measure(unconfined)),
        (
            "chat, network = \"shared\", direct",
            measure(chat(dir.path(), "shared", port, rounds)),
        ),
        (
            "chat, network = \"allowlist\", through the proxy",
            measure(chat(dir.path(), "allowlist", port, rounds)),
        ),
    ];
    let (base_lat, base_thr) = rows[0].1;
    println!(
        "\n| {rounds} GETs (median), 32 MiB body (best of 3) | latency µs | × unconfined | MiB/s | × unconfined |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, (lat, thr)) in rows {
        println!(
            "| {name} | {lat:.0} | {:.2} | {thr:.0} | {:.2} |",
            lat / base_lat,
            thr / base_thr
        );
    }
}
