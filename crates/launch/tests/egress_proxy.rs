//! The egress proxy's judgement (issue 28), on its own: not yet a chat's route (the launch
//! refuses `network = "allowlist"`), so no chat is confined here. Each refusal has its control:
//! the same request to a listed name reaches the server. Verdicts come from the servers (what
//! they received), and each decision is in the proxy's log. The listed names stand for real
//! hosts through the proxy's resolver override ([`Resolve::Map`]), mapped to local servers on
//! `127.0.0.1`.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use launch::egress::{EgressProxy, Resolve};
use sandbox_core::egress::HostRules;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn lines(&self) -> Vec<serde_json::Value> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// An HTTP server that answers `reached` and counts the connections it accepted.
async fn http_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nreached")
                    .await;
            });
        }
    });
    (addr, hits)
}

/// A server that takes one connection and returns every byte it received, to its end.
async fn sink() -> (SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got).await;
        got
    });
    (addr, task)
}

async fn proxy(log: Log) -> SocketAddr {
    let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rules = HostRules::new(
        &own(&["listed.test", "*.example.test"]),
        &own(&["bad.example.test"]),
    )
    .unwrap();
    let local: IpAddr = "127.0.0.1".parse().unwrap();
    let map: BTreeMap<String, Vec<IpAddr>> = [
        "listed.test",
        "unlisted.test",
        "x.example.test",
        "bad.example.test",
    ]
    .into_iter()
    .map(|n| (n.to_owned(), vec![local]))
    .collect();
    let proxy = Arc::new(EgressProxy::new(rules, Resolve::Map(map), Box::new(log)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(proxy.clone().serve("chat-1".into(), s));
        }
    });
    addr
}

/// Sends `bytes` through the proxy, closes the sending side, and returns all it answered.
async fn through(proxy: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(bytes).await.unwrap();
    s.shutdown().await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// A TLS ClientHello record naming `name`.
fn client_hello(name: &str) -> Vec<u8> {
    let mut entry = vec![0u8];
    entry.extend((name.len() as u16).to_be_bytes());
    entry.extend(name.as_bytes());
    let mut list = (entry.len() as u16).to_be_bytes().to_vec();
    list.extend(entry);
    let mut ext = 0u16.to_be_bytes().to_vec();
    ext.extend((list.len() as u16).to_be_bytes());
    ext.extend(list);
    let mut body = vec![3, 3];
    body.extend([7u8; 32]);
    body.push(0);
    body.extend(2u16.to_be_bytes());
    body.extend([0x13, 0x01]);
    body.extend([1, 0]);
    body.extend((ext.len() as u16).to_be_bytes());
    body.extend(ext);
    let mut hs = vec![1u8];
    hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend(body);
    let mut record = vec![22u8, 3, 1];
    record.extend((hs.len() as u16).to_be_bytes());
    record.extend(hs);
    record
}

#[tokio::test(flavor = "current_thread")]
async fn plain_http_reaches_a_listed_name_and_nothing_else() {
    let log = Log::default();
    let proxy = proxy(log.clone()).await;
    let (server, hits) = http_server().await;
    let port = server.port();
    let get = |host: &str, header: &str| {
        format!("GET http://{host}:{port}/x HTTP/1.1\r\nHost: {header}\r\n\r\n").into_bytes()
    };

    // The control: a listed name reaches the server.
    let answer = through(proxy, &get("listed.test", &format!("listed.test:{port}"))).await;
    assert!(answer.ends_with("reached"), "{answer}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    for (what, request) in [
        (
            "an unlisted name",
            get("unlisted.test", &format!("unlisted.test:{port}")),
        ),
        (
            "a bare address",
            get("127.0.0.1", &format!("127.0.0.1:{port}")),
        ),
        ("IPv6's loopback", get("[::1]", &format!("[::1]:{port}"))),
        (
            "a Host header naming another host",
            get("listed.test", &format!("unlisted.test:{port}")),
        ),
        (
            "a suffix match that resolves to the loopback",
            get("x.example.test", &format!("x.example.test:{port}")),
        ),
        (
            "a denied name inside an allowed suffix",
            get("bad.example.test", &format!("bad.example.test:{port}")),
        ),
        (
            "an origin-form request (not a proxy request)",
            format!("GET /x HTTP/1.1\r\nHost: listed.test:{port}\r\n\r\n").into_bytes(),
        ),
    ] {
        let answer = through(proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 40"), "{what}: {answer}");
        assert_eq!(hits.load(Ordering::SeqCst), 1, "{what} reached the server");
    }

    let lines = log.lines();
    assert_eq!(lines.len(), 8, "{lines:?}");
    assert_eq!(lines[0]["verdict"], "allowed");
    assert_eq!(lines[0]["host"], "listed.test");
    assert_eq!(lines[0]["chat"], "chat-1");
    assert!(lines[0]["bytes_down"].as_u64().unwrap() > 0);
    assert!(
        lines[1..].iter().all(|l| l["verdict"] == "denied"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn connect_carries_only_a_client_hello_naming_its_own_target() {
    let log = Log::default();
    let proxy = proxy(log.clone()).await;

    // The control: the ClientHello for the listed name reaches the server, whole.
    let (server, received) = sink().await;
    let hello = client_hello("listed.test");
    let mut request =
        format!("CONNECT listed.test:{} HTTP/1.1\r\n\r\n", server.port()).into_bytes();
    request.extend(&hello);
    let answer = through(proxy, &request).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(received.await.unwrap(), hello);

    // Another server name through a listed CONNECT: the server gets a connection and no byte.
    let (server, received) = sink().await;
    let mut request =
        format!("CONNECT listed.test:{} HTTP/1.1\r\n\r\n", server.port()).into_bytes();
    request.extend(client_hello("unlisted.test"));
    through(proxy, &request).await;
    assert_eq!(
        received.await.unwrap(),
        Vec::<u8>::new(),
        "another SNI was carried"
    );

    // Not TLS at all through a tunnel: nothing carried either.
    let (server, received) = sink().await;
    let mut request =
        format!("CONNECT listed.test:{} HTTP/1.1\r\n\r\n", server.port()).into_bytes();
    request.extend(b"SSH-2.0-OpenSSH_9.6\r\n");
    through(proxy, &request).await;
    assert_eq!(
        received.await.unwrap(),
        Vec::<u8>::new(),
        "not TLS was carried"
    );

    // CONNECT to an unlisted name, a bare address, IPv6's loopback: refused before connecting.
    let (http, hits) = http_server().await;
    for target in ["unlisted.test", "127.0.0.1", "[::1]"] {
        let answer = through(
            proxy,
            format!("CONNECT {target}:{} HTTP/1.1\r\n\r\n", http.port()).as_bytes(),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{target}: {answer}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    let lines = log.lines();
    let verdicts: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["verdict"].as_str().unwrap(), l["why"].as_str().unwrap()))
        .collect();
    assert_eq!(verdicts[0].0, "allowed", "{verdicts:?}");
    assert!(verdicts[1].1.starts_with("sni mismatch"), "{verdicts:?}");
    assert_eq!(verdicts[2].1, "not tls", "{verdicts:?}");
    assert!(
        verdicts[3..].iter().all(|v| v.0 == "denied"),
        "{verdicts:?}"
    );
    assert_eq!(lines.len(), 6);
}
