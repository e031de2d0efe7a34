//! `[policy] network = "allowlist"`: which hosts a chat may reach, decided here for every
//! backend and for the launcher's proxy.
//!
//! A name is allowed when `allowed_hosts` matches it and `denied_hosts` does not (deny wins).
//! A pattern is an exact name (`api.anthropic.com`) or a suffix (`*.example.com`: every name
//! below `example.com`, not `example.com` itself). Names are compared in ASCII lowercase, without
//! a trailing dot. A bare address (`93.184.216.34`, `[::1]`) is never a name: refused, whatever
//! the lists say, so that a listed name is the only way to an address.
//!
//! After the proxy resolves an allowed name, [`HostRules::address_allowed`] refuses the
//! machine's loopback, private, link-local and other special ranges, unless the name was listed
//! exactly (`allowed_hosts = ["db.internal"]` reaches it wherever it resolves; a suffix pattern
//! never reaches such a range: a DNS answer of the attacker's for `x.example.com` must not lead
//! to `127.0.0.1`).
//!
//! Enforced by the Linux namespace plan: the chat's own network namespace with only `lo`, whose
//! one listener is the proxy's (`launch::egress`, served by the helper outside; docs/linux.md,
//! "Egress by host name"). The Landlock-only fallback and Seatbelt refuse `allowlist`.

use core::net::IpAddr;

/// One pattern of `allowed_hosts` or `denied_hosts`, validated.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(into = "String")]
pub enum HostPattern {
    /// Exactly this name (lowercase, no trailing dot).
    Exact(String),
    /// Any name ending in `.` and this suffix (lowercase), not the suffix itself.
    Suffix(String),
}

impl From<HostPattern> for String {
    fn from(p: HostPattern) -> String {
        match p {
            HostPattern::Exact(name) => name,
            HostPattern::Suffix(suffix) => format!("*.{suffix}"),
        }
    }
}

/// A pattern that cannot name hosts, with the key it is in and the remedy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "policy.{key}: `{pattern}` is not a host name pattern: write a name (`api.example.com`) or `*.` and a name (`*.example.com`); addresses, ports, schemes, paths and other wildcards are not taken ({why})"
)]
pub struct BadHostPattern {
    /// `allowed_hosts` or `denied_hosts`.
    pub key: &'static str,
    /// The pattern as configured.
    pub pattern: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// A host name as the rules compare it: ASCII lowercase, without one trailing dot; `None` when
/// it is not a name (empty, too long, a label out of `[a-z0-9-_]`, an address).
pub fn normalize_host(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.len() > 253 || host.parse::<IpAddr>().is_ok() {
        return None;
    }
    let lower = host.to_ascii_lowercase();
    let labels_ok = lower.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    // A name all of digits and dots (`1.2.3`, `0x7f.1`) reads as an address to some resolvers.
    let numeric = lower
        .split('.')
        .all(|l| l.bytes().all(|b| b.is_ascii_digit()) || l.starts_with("0x"));
    (labels_ok && !numeric).then_some(lower)
}

impl HostPattern {
    /// Reads one pattern of `key`.
    pub fn parse(key: &'static str, text: &str) -> Result<HostPattern, BadHostPattern> {
        let bad = |why| BadHostPattern {
            key,
            pattern: text.to_owned(),
            why,
        };
        let (suffix, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if name.contains('*') {
            return Err(bad("`*` only as the first label"));
        }
        if name.contains(':') || name.contains('/') || name.contains('[') {
            return Err(bad("a name only"));
        }
        let name = normalize_host(name).ok_or_else(|| bad("not a DNS name"))?;
        if suffix && !name.contains('.') {
            // `*.com` would open a whole top-level domain.
            return Err(bad("a suffix needs at least two labels"));
        }
        Ok(if suffix {
            HostPattern::Suffix(name)
        } else {
            HostPattern::Exact(name)
        })
    }

    /// Whether this pattern matches `name` (normalized).
    pub fn matches(&self, name: &str) -> bool {
        match self {
            HostPattern::Exact(exact) => exact == name,
            HostPattern::Suffix(suffix) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

/// A decision on one host.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum HostVerdict {
    /// Allowed by this pattern of `allowed_hosts`.
    Allowed {
        /// The pattern.
        pattern: String,
        /// Whether the pattern names the host exactly (then any address it resolves to is
        /// reachable).
        exact: bool,
    },
    /// Listed in `denied_hosts` (deny wins).
    Denied {
        /// The pattern.
        pattern: String,
    },
    /// Not listed in `allowed_hosts`.
    NotListed,
    /// Not a host name: a bare address, or text no name looks like.
    NotAName,
}

impl HostVerdict {
    /// Whether the host may be connected to (by name; its addresses are judged next).
    pub fn allowed(&self) -> bool {
        matches!(self, HostVerdict::Allowed { .. })
    }
}

/// The host rules of one policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostRules {
    /// `allowed_hosts`, validated.
    pub allowed: Vec<HostPattern>,
    /// `denied_hosts`, validated.
    pub denied: Vec<HostPattern>,
}

impl HostRules {
    /// Validates both lists; the first bad pattern is the error.
    pub fn new(allowed: &[String], denied: &[String]) -> Result<HostRules, BadHostPattern> {
        let read = |key, list: &[String]| {
            list.iter()
                .map(|t| HostPattern::parse(key, t))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(HostRules {
            allowed: read("allowed_hosts", allowed)?,
            denied: read("denied_hosts", denied)?,
        })
    }

    /// The decision on `host` as a chat named it (a CONNECT target, a Host header, a TLS
    /// server name): deny first, then allow; a bare address is never allowed.
    pub fn decide(&self, host: &str) -> HostVerdict {
        let Some(name) = normalize_host(host) else {
            return HostVerdict::NotAName;
        };
        if let Some(p) = self.denied.iter().find(|p| p.matches(&name)) {
            return HostVerdict::Denied {
                pattern: p.clone().into(),
            };
        }
        // An exact pattern before a suffix: it decides whether special ranges are reachable.
        let found = self
            .allowed
            .iter()
            .find(|p| matches!(p, HostPattern::Exact(_)) && p.matches(&name))
            .or_else(|| self.allowed.iter().find(|p| p.matches(&name)));
        match found {
            Some(p) => HostVerdict::Allowed {
                pattern: p.clone().into(),
                exact: matches!(p, HostPattern::Exact(_)),
            },
            None => HostVerdict::NotListed,
        }
    }

    /// Whether an address that an allowed host resolved to may be connected to: any public
    /// address; the loopback, private, link-local, shared, multicast and other special ranges
    /// only for a host listed exactly.
    pub fn address_allowed(verdict: &HostVerdict, address: IpAddr) -> bool {
        match verdict {
            HostVerdict::Allowed { exact, .. } => *exact || !special(address),
            _ => false,
        }
    }
}

/// The ranges a name matched by a suffix never reaches: the machine itself, the local networks,
/// and addresses that are not one host's.
pub fn special(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(a) => {
            let [b0, b1, ..] = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || a.is_documentation()
                || b0 == 0
                // 100.64.0.0/10, shared address space (carrier NAT, and many VPNs).
                || (b0 == 100 && (64..128).contains(&b1))
                // 198.18.0.0/15, benchmarking (the isolated network's own addresses).
                || (b0 == 198 && (b1 == 18 || b1 == 19))
                || b0 >= 240
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return special(IpAddr::V4(v4));
            }
            let first = a.segments()[0];
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                // fc00::/7 unique local, fe80::/10 link-local.
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                // 64:ff9b::/96 NAT64 and 2001:db8::/32 documentation.
                || first == 0x64
                || (first == 0x2001 && a.segments()[1] == 0x0db8)
                // ::ffff:0:0/96 handled above; ::/96 IPv4-compatible.
                || a.segments()[..6].iter().all(|s| *s == 0)
        }
    }
}

/// What the first bytes of a tunnel say about the TLS server name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientHello {
    /// More bytes are needed to tell (at most [`CLIENT_HELLO_MAX`] in all).
    Incomplete,
    /// A ClientHello naming this server (its `server_name` extension's host name, lowercase).
    ServerName(String),
    /// A ClientHello without a server name.
    NoServerName,
    /// Not a TLS ClientHello, or one that breaks its own lengths.
    NotTls,
}

/// The most bytes of a ClientHello the proxy reads before deciding (a ClientHello with a
/// post-quantum key share is about 1.8 KB; one record holds at most 16 KB).
pub const CLIENT_HELLO_MAX: usize = 16 * 1024 + 5;

/// Reads the TLS server name from the first bytes a client sent through a tunnel: one
/// handshake record (content type 22) holding a ClientHello (type 1), its extensions walked with
/// every length checked against what holds it. A ClientHello split over several records is
/// [`ClientHello::NotTls`] (no client does that for the first message; refusing is the safe
/// side).
pub fn client_hello_server_name(bytes: &[u8]) -> ClientHello {
    /// A cursor that refuses to read past its slice.
    struct Cursor<'a> {
        bytes: &'a [u8],
    }
    impl<'a> Cursor<'a> {
        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            if self.bytes.len() < n {
                return None;
            }
            let (head, rest) = self.bytes.split_at(n);
            self.bytes = rest;
            Some(head)
        }
        fn u8(&mut self) -> Option<usize> {
            self.take(1).map(|b| b[0] as usize)
        }
        fn u16(&mut self) -> Option<usize> {
            self.take(2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
        }
        fn u24(&mut self) -> Option<usize> {
            self.take(3)
                .map(|b| ((b[0] as usize) << 16) | ((b[1] as usize) << 8) | b[2] as usize)
        }
        fn vec8(&mut self) -> Option<&'a [u8]> {
            let n = self.u8()?;
            self.take(n)
        }
        fn vec16(&mut self) -> Option<&'a [u8]> {
            let n = self.u16()?;
            self.take(n)
        }
    }

    if bytes.len() < 5 {
        // Not even a record header: more, unless what is there already is not TLS.
        return if bytes.first().is_some_and(|b| *b != 22) {
            ClientHello::NotTls
        } else {
            ClientHello::Incomplete
        };
    }
    let mut record = Cursor { bytes };
    let (Some(22), Some(_version), Some(length)) = (record.u8(), record.u16(), record.u16()) else {
        return ClientHello::NotTls;
    };
    if length == 0 || length > 16 * 1024 + 256 {
        return ClientHello::NotTls;
    }
    let Some(body) = record.take(length) else {
        return if bytes.len() >= CLIENT_HELLO_MAX {
            ClientHello::NotTls
        } else {
            ClientHello::Incomplete
        };
    };
    let parse = || -> Option<ClientHello> {
        let mut hs = Cursor { bytes: body };
        if hs.u8()? != 1 {
            return Some(ClientHello::NotTls);
        }
        let hello_len = hs.u24()?;
        let mut hello = Cursor {
            bytes: hs.take(hello_len)?,
        };
        hello.take(2)?; // legacy_version
        hello.take(32)?; // random
        hello.vec8()?; // legacy_session_id
        hello.vec16()?; // cipher_suites
        hello.vec8()?; // legacy_compression_methods
        if hello.bytes.is_empty() {
            return Some(ClientHello::NoServerName);
        }
        let mut extensions = Cursor {
            bytes: hello.vec16()?,
        };
        while !extensions.bytes.is_empty() {
            let kind = extensions.u16()?;
            let data = extensions.vec16()?;
            if kind != 0 {
                continue;
            }
            // server_name: a list of (type, name); the host_name type is 0, and RFC 6066 allows
            // one name of each type.
            let mut list = Cursor {
                bytes: Cursor { bytes: data }.vec16()?,
            };
            while !list.bytes.is_empty() {
                let name_type = list.u8()?;
                let name = list.vec16()?;
                if name_type == 0 {
                    let name = std::str::from_utf8(name).ok()?;
                    return Some(ClientHello::ServerName(name.to_ascii_lowercase()));
                }
            }
            return Some(ClientHello::NoServerName);
        }
        Some(ClientHello::NoServerName)
    };
    // A length that points past what holds it is not a ClientHello any client sends.
    parse().unwrap_or(ClientHello::NotTls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ClientHello record naming `name` (or none).
    pub(crate) fn hello(name: Option<&str>) -> Vec<u8> {
        let mut ext = Vec::new();
        if let Some(name) = name {
            let mut entry = vec![0u8];
            entry.extend((name.len() as u16).to_be_bytes());
            entry.extend(name.as_bytes());
            let mut list = (entry.len() as u16).to_be_bytes().to_vec();
            list.extend(entry);
            ext.extend(0u16.to_be_bytes());
            ext.extend((list.len() as u16).to_be_bytes());
            ext.extend(list);
        }
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend(2u16.to_be_bytes());
        body.extend([0x13, 0x01]);
        body.extend([1, 0]); // compression
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

    #[test]
    fn the_server_name_is_read_from_a_client_hello_and_every_short_or_broken_one_is_no_name() {
        let full = hello(Some("API.Example.com"));
        assert_eq!(
            client_hello_server_name(&full),
            ClientHello::ServerName("api.example.com".into())
        );
        assert_eq!(
            client_hello_server_name(&hello(None)),
            ClientHello::NoServerName
        );
        for cut in 0..full.len() {
            let v = client_hello_server_name(&full[..cut]);
            assert!(
                v == ClientHello::Incomplete || v == ClientHello::NotTls,
                "{cut}: {v:?}"
            );
        }
        assert_eq!(
            client_hello_server_name(b"GET / HTTP/1.1\r\n"),
            ClientHello::NotTls
        );
        // Each length byte made larger than what holds it: never a name, never a panic.
        for i in 0..full.len() {
            let mut broken = full.clone();
            broken[i] = broken[i].wrapping_add(0x41);
            let _ = client_hello_server_name(&broken);
        }
    }

    fn rules(allowed: &[&str], denied: &[&str]) -> HostRules {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        HostRules::new(&own(allowed), &own(denied)).unwrap()
    }

    #[test]
    fn exact_and_suffix_names_match_as_written_and_deny_wins() {
        let r = rules(
            &[
                "api.anthropic.com",
                "*.githubusercontent.com",
                "*.example.com",
            ],
            &["evil.example.com", "*.bad.example.com"],
        );
        for host in [
            "api.anthropic.com",
            "API.Anthropic.COM.",
            "raw.githubusercontent.com",
            "a.b.githubusercontent.com",
            "ok.example.com",
        ] {
            assert!(r.decide(host).allowed(), "{host}");
        }
        for host in [
            "anthropic.com",
            "xapi.anthropic.com",
            "api.anthropic.com.evil.net",
            "githubusercontent.com",
            "xgithubusercontent.com",
            "evil.example.com",
            "x.bad.example.com",
            "example.com",
            "github.com",
        ] {
            assert!(!r.decide(host).allowed(), "{host}");
        }
        assert!(matches!(
            r.decide("evil.example.com"),
            HostVerdict::Denied { .. }
        ));
    }

    #[test]
    fn a_bare_address_is_never_a_name() {
        let r = rules(&["*.example.com", "localhost"], &[]);
        for host in [
            "127.0.0.1",
            "::1",
            "93.184.216.34",
            "2130706433",
            "0x7f.0.0.1",
            "1.2.3",
            "",
            ".",
            "a..b",
            "-x.example.com",
            "x y.example.com",
        ] {
            assert_eq!(r.decide(host), HostVerdict::NotAName, "{host:?}");
        }
    }

    #[test]
    fn special_ranges_only_for_a_name_listed_exactly() {
        let r = rules(&["db.internal", "*.example.com"], &[]);
        let exact = r.decide("db.internal");
        let suffix = r.decide("x.example.com");
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
        ] {
            let a: IpAddr = address.parse().unwrap();
            assert!(HostRules::address_allowed(&exact, a), "{address}");
            assert!(!HostRules::address_allowed(&suffix, a), "{address}");
        }
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(HostRules::address_allowed(&suffix, public));
        assert!(!HostRules::address_allowed(&HostVerdict::NotListed, public));
    }

    #[test]
    fn a_bad_pattern_names_its_key_and_the_remedy() {
        for bad in [
            "*",
            "*.com",
            "a.*.com",
            "https://x.com",
            "x.com:443",
            "10.0.0.1",
            "[::1]",
            "x.com/path",
            "",
        ] {
            let err = HostRules::new(&[bad.to_owned()], &[]).unwrap_err();
            assert!(err.to_string().contains("policy.allowed_hosts"), "{err}");
        }
        let err = HostRules::new(&[], &["**.x.com".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("policy.denied_hosts"), "{err}");
    }
}
