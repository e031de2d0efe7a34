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
//! Not yet enforced by any backend: `Policy::build` refuses `network = "allowlist"` with
//! [`crate::PolicyError::EgressNotYet`] after these rules validated (docs/linux.md, "Egress by
//! host name", has the design of the proxy that will enforce them).

use std::net::IpAddr;

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

#[cfg(test)]
mod tests {
    use super::*;

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
