//! The launcher's egress proxy for `network = "allowlist"` (issue 28): HTTP and HTTPS by host
//! name, judged by [`sandbox_core::egress::HostRules`].
//!
//! The route (Linux namespace plan): the chat's own network namespace has only `lo`, and its one
//! listener, made by init and handed to the helper outside, is served here ([`serve_plan`]) for
//! the chat's life (docs/linux.md, "Egress by host name"; attacked by `tests/egress.rs`). The
//! judgement of each connection, tested on its own too (`tests/egress_proxy.rs`):
//!
//! - `CONNECT host:port`: the name judged (deny wins; a bare address never), resolved here (as
//!   the machine resolves it, or by [`Resolve::Map`] in tests), each address judged
//!   ([`HostRules::address_allowed`]), the first allowed one connected to. Then the client's
//!   first bytes must be a TLS ClientHello whose server name is the CONNECT target, else the
//!   tunnel is closed before a byte reaches the server.
//! - A plain HTTP request (`GET http://host/path`): the URI's host and the `Host` header must
//!   name the same host, which is judged the same way; the request goes out in origin form with
//!   `Connection: close`, and one request is served per connection (a second one on it would go
//!   to the same server under another `Host`).
//! - Each decision one JSON line ([`Decision`]), with the bytes each way.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use sandbox_core::egress::{
    CLIENT_HELLO_MAX, ClientHello, HostRules, HostVerdict, client_hello_server_name, normalize_host,
};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Each direction's buffer of a relayed connection: with tokio's default (8 KiB) a 32 MiB body
/// came through the proxy about half as fast as with this (BENCHMARKS.md, "Issue 28").
const COPY_BUFFER: usize = 64 * 1024;

/// The most bytes of a request's head (request line and headers) the proxy reads.
const HEAD_MAX: usize = 16 * 1024;

/// How the proxy resolves a name it has allowed.
#[derive(Debug, Clone)]
pub enum Resolve {
    /// As the machine does (`getaddrinfo`, through tokio).
    System,
    /// Only these names, to these addresses (tests: a listed name mapped to a local server on
    /// `127.0.0.1`). Any other name does not resolve.
    Map(BTreeMap<String, Vec<IpAddr>>),
}

/// One decision, as its JSON line.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Decision {
    /// The chat the connection came from.
    pub chat: String,
    /// The host as the chat named it (a CONNECT target or a request's host).
    pub host: String,
    /// The port asked.
    pub port: u16,
    /// `allowed` or `denied`.
    pub verdict: &'static str,
    /// Why, in a word or two (`listed *.example.com`, `not listed`, `sni mismatch`, ...).
    pub why: String,
    /// Bytes from the chat to the server.
    pub bytes_up: u64,
    /// Bytes from the server to the chat.
    pub bytes_down: u64,
}

/// The proxy's rules, resolver and log; one per launcher, shared by its chats.
pub struct EgressProxy {
    rules: HostRules,
    resolve: Resolve,
    log: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy")
            .field("rules", &self.rules)
            .field("resolve", &self.resolve)
            .finish_non_exhaustive()
    }
}

impl EgressProxy {
    /// A proxy judging by `rules`, resolving by `resolve`, writing one JSON line per decision
    /// to `log`.
    pub fn new(rules: HostRules, resolve: Resolve, log: Box<dyn Write + Send>) -> EgressProxy {
        EgressProxy {
            rules,
            resolve,
            log: Mutex::new(log),
        }
    }

    fn record(&self, decision: &Decision) {
        if let Ok(line) = serde_json::to_string(decision)
            && let Ok(mut log) = self.log.lock()
        {
            // A log that cannot be written does not stop the proxy's judgement.
            let _ = writeln!(log, "{line}");
            let _ = log.flush();
        }
    }

    /// Serves one connection of `chat`'s, to its end.
    pub async fn serve(self: Arc<Self>, chat: String, mut client: TcpStream) {
        let mut decision = Decision {
            chat,
            host: String::new(),
            port: 0,
            verdict: "denied",
            why: String::new(),
            bytes_up: 0,
            bytes_down: 0,
        };
        match self.handle(&mut client, &mut decision).await {
            Ok(()) => {}
            Err(why) => {
                decision.verdict = "denied";
                if decision.why.is_empty() {
                    decision.why = why;
                }
            }
        }
        self.record(&decision);
    }

    async fn handle(&self, client: &mut TcpStream, d: &mut Decision) -> Result<(), String> {
        let (head, rest) = read_head(client).await?;
        let text = std::str::from_utf8(&head).map_err(|_| "a request head that is not text")?;
        let mut lines = text.split("\r\n");
        let request = lines.next().unwrap_or_default();
        let mut words = request.split(' ');
        let (Some(method), Some(target), Some(version)) =
            (words.next(), words.next(), words.next())
        else {
            refuse(client, 400, "not an HTTP request").await;
            return Err("not an HTTP request".into());
        };
        let headers: Vec<(&str, &str)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) =
                split_host_port(target, None).ok_or("a CONNECT target without a port")?;
            d.host = host.clone();
            d.port = port;
            let (mut server, verdict) = match self.open(&host, port, d).await {
                Ok(open) => open,
                Err(e) => {
                    refuse(client, 403, &e).await;
                    return Err(e);
                }
            };
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .map_err(|e| e.to_string())?;
            // The TLS server name, from the client's first bytes, before any reach the server.
            let mut first = rest;
            let name = loop {
                match client_hello_server_name(&first) {
                    ClientHello::Incomplete if first.len() < CLIENT_HELLO_MAX => {
                        let mut buf = [0u8; 4096];
                        let n = client.read(&mut buf).await.map_err(|e| e.to_string())?;
                        if n == 0 {
                            return Err("closed before its TLS ClientHello".into());
                        }
                        first.extend_from_slice(&buf[..n]);
                    }
                    ClientHello::ServerName(name) => break name,
                    ClientHello::NoServerName => {
                        d.why = "no tls server name".into();
                        return Err(d.why.clone());
                    }
                    _ => {
                        d.why = "not tls".into();
                        return Err(d.why.clone());
                    }
                }
            };
            if normalize_host(&name).as_deref() != Some(host.as_str()) {
                d.why = format!("sni mismatch: {name}");
                return Err(d.why.clone());
            }
            d.verdict = "allowed";
            d.why = why_allowed(&verdict);
            server.write_all(&first).await.map_err(|e| e.to_string())?;
            d.bytes_up = first.len() as u64;
            let (up, down) = tokio::io::copy_bidirectional_with_sizes(
                client,
                &mut server,
                COPY_BUFFER,
                COPY_BUFFER,
            )
            .await
            .unwrap_or((0, 0));
            d.bytes_up += up;
            d.bytes_down = down;
            return Ok(());
        }

        // Plain HTTP: an absolute URI, whose host the Host header must name too.
        let Some(after) = target.strip_prefix("http://") else {
            refuse(client, 400, "only absolute http:// URIs and CONNECT").await;
            return Err("not a proxy request".into());
        };
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, "/"),
        };
        let (host, port) = split_host_port(authority, Some(80)).ok_or("a bad URI host")?;
        d.host = host.clone();
        d.port = port;
        let host_header = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("host"))
            .map(|(_, v)| *v)
            .unwrap_or(authority);
        let same =
            split_host_port(host_header, Some(80)).is_some_and(|(h, p)| h == host && p == port);
        if !same {
            d.why = format!("host header {host_header} is not the URI's");
            refuse(client, 403, &d.why).await;
            return Err(d.why.clone());
        }
        let (mut server, verdict) = match self.open(&host, port, d).await {
            Ok(open) => open,
            Err(e) => {
                refuse(client, 403, &e).await;
                return Err(e);
            }
        };
        let mut out = format!("{method} {path} {version}\r\n");
        for (k, v) in &headers {
            let hop = [
                "connection",
                "proxy-connection",
                "proxy-authorization",
                "keep-alive",
            ];
            if !hop.iter().any(|h| k.eq_ignore_ascii_case(h)) {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        out.push_str("Connection: close\r\n\r\n");
        server
            .write_all(out.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        server.write_all(&rest).await.map_err(|e| e.to_string())?;
        d.verdict = "allowed";
        d.why = why_allowed(&verdict);
        d.bytes_up = (out.len() + rest.len()) as u64;
        let (up, down) =
            tokio::io::copy_bidirectional_with_sizes(client, &mut server, COPY_BUFFER, COPY_BUFFER)
                .await
                .unwrap_or((0, 0));
        d.bytes_up += up;
        d.bytes_down = down;
        Ok(())
    }

    /// Judges `host`, resolves it and connects to its first allowed address.
    async fn open(
        &self,
        host: &str,
        port: u16,
        d: &mut Decision,
    ) -> Result<(TcpStream, HostVerdict), String> {
        let verdict = self.rules.decide(host);
        match &verdict {
            HostVerdict::Allowed { .. } => {}
            HostVerdict::Denied { pattern } => {
                d.why = format!("denied by {pattern}");
                return Err(d.why.clone());
            }
            HostVerdict::NotListed => {
                d.why = "not listed".into();
                return Err(d.why.clone());
            }
            HostVerdict::NotAName => {
                d.why = "not a host name".into();
                return Err(d.why.clone());
            }
        }
        let addresses: Vec<IpAddr> = match &self.resolve {
            Resolve::Map(map) => map.get(host).cloned().unwrap_or_default(),
            Resolve::System => tokio::net::lookup_host((host, port))
                .await
                .map(|it| it.map(|a| a.ip()).collect())
                .unwrap_or_default(),
        };
        let allowed: Vec<IpAddr> = addresses
            .iter()
            .copied()
            .filter(|a| HostRules::address_allowed(&verdict, *a))
            .collect();
        if allowed.is_empty() {
            d.why = if addresses.is_empty() {
                "does not resolve".into()
            } else {
                format!("resolves only to special addresses ({})", addresses[0])
            };
            return Err(d.why.clone());
        }
        for address in allowed {
            if let Ok(stream) = TcpStream::connect(SocketAddr::new(address, port)).await {
                return Ok((stream, verdict));
            }
        }
        d.why = "connection failed".into();
        Err(d.why.clone())
    }
}

fn why_allowed(verdict: &HostVerdict) -> String {
    match verdict {
        HostVerdict::Allowed { pattern, .. } => format!("listed {pattern}"),
        _ => String::new(),
    }
}

/// `host:port` or `[v6]:port` (`default` when no port is given); the host normalized. A bare
/// address stays as written, so that the rules refuse it as one.
fn split_host_port(text: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default?,
            None => return None,
        };
        (inside.to_owned(), port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse().ok()?),
            None => (text.to_owned(), default?),
        }
    };
    let host = normalize_host(&host).unwrap_or(host);
    Some((host, port))
}

/// Reads up to the end of the request head; the bytes after it come back too.
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            return Ok((buf, rest));
        }
        if buf.len() > HEAD_MAX {
            return Err("a request head over 16 KiB".into());
        }
        let n = client.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before its request head ended".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn refuse(client: &mut TcpStream, status: u16, why: &str) {
    let reason = if status == 403 {
        "Forbidden"
    } else {
        "Bad Request"
    };
    let body = format!("cli-sandbox egress: {why}\n");
    let _ = client
        .write_all(
            format!(
                "HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await;
}

/// Serves the proxy for one chat on `listener` (the listener init made in the chat's own network
/// namespace: `sandbox_linux::egress`), on a thread of its own, for the rest of this process
/// (the helper's, which ends with the chat). Each decision a JSON line in the plan's log, made
/// here outside the chat (`<state root>/state/egress/<chat>.jsonl`, mode 0600, its folder 0700).
#[cfg(target_os = "linux")]
pub fn serve_plan(
    listener: std::os::fd::OwnedFd,
    plan: &sandbox_linux::plan::EgressPlan,
) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let rules =
        HostRules::new(&plan.allowed_hosts, &plan.denied_hosts).map_err(|e| e.to_string())?;
    let resolve = if plan.resolve.is_empty() {
        Resolve::System
    } else {
        Resolve::Map(plan.resolve.clone())
    };
    if let Some(folder) = plan.log.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .map_err(|e| format!("the egress log's folder {}: {e}", folder.display()))?;
    }
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&plan.log)
        .map_err(|e| format!("the egress log {}: {e}", plan.log.display()))?;
    let proxy = Arc::new(EgressProxy::new(rules, resolve, Box::new(log)));
    let listener = std::net::TcpListener::from(listener);
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("the egress listener: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("the egress proxy's runtime: {e}"))?;
    let chat = plan.chat.clone();
    std::thread::Builder::new()
        .name("egress-proxy".into())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                loop {
                    // A failed accept (the chat's connection reset before it was taken) loses
                    // that connection only.
                    if let Ok((client, _)) = listener.accept().await {
                        tokio::spawn(proxy.clone().serve(chat.clone(), client));
                    }
                }
            })
        })
        .map_err(|e| format!("the egress proxy's thread: {e}"))?;
    Ok(())
}
