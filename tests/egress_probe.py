# The chat's side of tests/egress.rs: every way out a program would try, each marked with its
# name in what it sends, so that the servers outside tell which reached them. What this script
# prints is for the reader of a failure only; the verdicts are what the servers saw and the
# proxy's log.
import os
import socket
import ssl
import sys

listed_port, other_port, v6_port, udp_port = (int(a) for a in sys.argv[1:5])
host = sys.argv[5]
proxy = os.environ.get("HTTP_PROXY", "")


def attempt(name, fn):
    try:
        fn()
        print(f"{name}: done")
    except Exception as e:  # noqa: BLE001 - every failure is the same to the verdict
        print(f"{name}: {type(e).__name__}: {e}")


def proxy_address():
    hostport = proxy.removeprefix("http://").rstrip("/")
    h, p = hostport.rsplit(":", 1)
    return (h, int(p))


def to_proxy(data, read=True):
    s = socket.create_connection(proxy_address(), timeout=5)
    s.sendall(data)
    got = b""
    if read:
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
    s.close()
    return got


def get(name, authority, host_header=None, extra=b""):
    hh = host_header or authority
    return to_proxy(
        f"GET http://{authority}/{name} HTTP/1.1\r\nHost: {hh}\r\n\r\n".encode() + extra
    )


def client_hello(server_name):
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def connect_then(name, target, sni):
    s = socket.create_connection(proxy_address(), timeout=5)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    answer = s.recv(4096)
    if b" 200 " in answer.split(b"\r\n")[0]:
        s.sendall(client_hello(sni) + f"\r\n{name}\r\n".encode())
        try:
            s.recv(4096)
        except OSError:
            pass
    s.close()
    return answer


def direct_tcp(name, family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(address)
    s.sendall(f"{name}\n".encode())
    s.close()


def udp(name, address):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(f"{name}\n".encode(), address)
    s.close()


def dns_query(name, qname, address):
    # A DNS query (id, flags, one question) for `qname`, marked with the probe's name.
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
    for label in qname.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\x00\x00\x01\x00\x01" + name.encode()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(q, address)
    s.close()


# Through the proxy, as a program using the variables does.
attempt("listed-http", lambda: get("listed-http", f"listed.test:{listed_port}"))
attempt("listed-tls", lambda: connect_then("listed-tls", f"listed.test:{listed_port}", "listed.test"))
attempt("unlisted-http", lambda: get("unlisted-http", f"unlisted.test:{other_port}"))
attempt("unlisted-connect", lambda: connect_then("unlisted-connect", f"unlisted.test:{other_port}", "unlisted.test"))
attempt("bare-address-http", lambda: get("bare-address-http", f"127.0.0.1:{other_port}"))
attempt("bare-address-connect", lambda: connect_then("bare-address-connect", f"127.0.0.1:{other_port}", "x.test"))
attempt("machine-address-connect", lambda: connect_then("machine-address-connect", f"{host}:{other_port}", "x.test"))
attempt("ipv6-connect", lambda: connect_then("ipv6-connect", f"[::1]:{v6_port}", "x.test"))
attempt("sni-mismatch", lambda: connect_then("sni-mismatch", f"listed.test:{listed_port}", "unlisted.test"))
attempt("relay-host-header", lambda: get("relay-host-header", f"listed.test:{listed_port}", f"unlisted.test:{other_port}"))
attempt(
    "relay-second-request",
    lambda: get(
        "relay-first",
        f"listed.test:{listed_port}",
        extra=f"GET http://unlisted.test:{other_port}/relay-second-request HTTP/1.1\r\nHost: unlisted.test:{other_port}\r\n\r\n".encode(),
    ),
)
attempt("dns-through-proxy", lambda: connect_then("dns-through-proxy", "unlisted.test:53", "unlisted.test"))
# Around the proxy: the variables dropped, every address and family the chat can name.
for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    os.environ.pop(var, None)
attempt("noproxy-listed", lambda: direct_tcp("noproxy-listed", socket.AF_INET, ("127.0.0.1", listed_port)))
attempt("loopback-direct", lambda: direct_tcp("loopback-direct", socket.AF_INET, ("127.0.0.1", other_port)))
attempt("machine-address-direct", lambda: direct_tcp("machine-address-direct", socket.AF_INET, (host, other_port)))
attempt("ipv6-direct", lambda: direct_tcp("ipv6-direct", socket.AF_INET6, ("::1", v6_port)))
attempt("ipv4-mapped-direct", lambda: direct_tcp("ipv4-mapped-direct", socket.AF_INET6, ("::ffff:127.0.0.1", other_port)))
attempt("udp-loopback", lambda: udp("udp-loopback", ("127.0.0.1", udp_port)))
attempt("udp-machine-address", lambda: udp("udp-machine-address", (host, udp_port)))
attempt("dns-unlisted", lambda: dns_query("dns-unlisted", "unlisted.test", (host, udp_port)))
attempt("resolve-unlisted", lambda: socket.getaddrinfo("unlisted.test", 80))
attempt("raw-socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP).sendto(b"raw-socket\n", (host, udp_port)))
attempt("packet-socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
print("probe: end")
