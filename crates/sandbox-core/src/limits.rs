//! `[limits]`: how much of the machine one chat may take. Decided here, once, for every backend:
//! the values (the configured ones or the defaults) and what a backend must do when it cannot
//! hold a configured one. How each backend holds them is its own (Linux: `limits.rs` and
//! `cgroup.rs` of `sandbox-linux`; macOS: nothing yet, said in its plan).

use serde::{Deserialize, Serialize};

/// The processes (threads included: the kernel counts tasks) a chat may run at once when the
/// configuration names no number. A Node CLI runs a dozen threads, each tool it starts a few
/// more: far below this, while a fork bomb stops here.
pub const DEFAULT_PROCESSES: u32 = 4096;

/// The size of a chat's private `/tmp` when the configuration names none: what a CLI writes
/// there (shell snapshots, a download, a build's objects) fits; a chat that fills it gets
/// `ENOSPC`, the machine's `/tmp` is not touched.
pub const DEFAULT_TMP: u64 = 1 << 30;

/// A size in bytes, written as in the configuration: a number with an optional unit `K`, `M`,
/// `G` or `T` (powers of 1024), as `"512M"` or `"2G"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct Size(pub u64);

impl Size {
    /// Parses `"512M"`, `"2G"`, `"65536"`; `None` for anything else (no fraction, no zero).
    pub fn parse(text: &str) -> Option<Size> {
        let text = text.trim();
        let (digits, shift) = match text.char_indices().last()? {
            (i, 'K' | 'k') => (&text[..i], 10),
            (i, 'M' | 'm') => (&text[..i], 20),
            (i, 'G' | 'g') => (&text[..i], 30),
            (i, 'T' | 't') => (&text[..i], 40),
            _ => (text, 0),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u64 = digits.parse().ok()?;
        let bytes = n.checked_mul(1u64 << shift)?;
        (bytes > 0).then_some(Size(bytes))
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
            if self.0.is_multiple_of(1u64 << shift) {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl From<Size> for String {
    fn from(s: Size) -> String {
        s.to_string()
    }
}

/// By hand, so that a wrong value says what a size looks like.
impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(r#"a size such as "512M" or "2G""#)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Size, E> {
                Size::parse(v).ok_or_else(|| {
                    E::custom(format!(
                        r#"limits: "{v}" is not a size: write a number above 0 with K, M, G or T, as "512M" or "2G""#
                    ))
                })
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .ok()
                    .filter(|v| *v > 0)
                    .map(Size)
                    .ok_or_else(|| E::custom(format!("limits: {v} is not a size above 0")))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[limits]` as configured; every key optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// The processes and threads the chat may run at once (its own; the sandbox's init is not
    /// counted). Default [`DEFAULT_PROCESSES`].
    pub processes: Option<u32>,
    /// The memory the chat's processes may use together (what they map and what they keep in
    /// their tmpfs folders). No default: the launcher's own.
    pub memory: Option<Size>,
    /// The size of the chat's private `/tmp` (and `/var/tmp`, `/dev/shm`). Default
    /// [`DEFAULT_TMP`].
    pub tmp: Option<Size>,
}

/// One chat's limits, as every backend is to hold them ([`crate::Policy::limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// The chat's processes and threads at once (init not counted).
    pub processes: u32,
    /// Whether `processes` was configured: then a backend that cannot hold it refuses the
    /// launch; the default is held where it can be and the plan says where not.
    pub processes_configured: bool,
    /// The memory of the chat's processes together; `None`: not limited. When set, a backend
    /// that cannot hold it refuses the launch, never runs the chat unbounded.
    pub memory: Option<Size>,
    /// The size of the chat's private `/tmp`.
    pub tmp: Size,
}

impl Limits {
    /// The configured values, the defaults for the rest.
    pub fn from_config(config: &LimitsConfig) -> Limits {
        Limits {
            processes: config.processes.unwrap_or(DEFAULT_PROCESSES),
            processes_configured: config.processes.is_some(),
            memory: config.memory,
            tmp: config.tmp.unwrap_or(Size(DEFAULT_TMP)),
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::from_config(&LimitsConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_their_units_and_print_back() {
        assert_eq!(Size::parse("512M"), Some(Size(512 << 20)));
        assert_eq!(Size::parse("2g"), Some(Size(2 << 30)));
        assert_eq!(Size::parse("4096"), Some(Size(4096)));
        for bad in ["", "0", "0M", "1.5G", "M", "-1G", "12X", "99999999999T"] {
            assert_eq!(Size::parse(bad), None, "{bad}");
        }
        assert_eq!(Size(512 << 20).to_string(), "512M");
        assert_eq!(Size(1 << 30).to_string(), "1G");
        assert_eq!(Size(1000).to_string(), "1000");
    }

    #[test]
    fn the_defaults_hold_what_no_configuration_names() {
        let limits = Limits::default();
        assert_eq!(limits.processes, DEFAULT_PROCESSES);
        assert!(!limits.processes_configured);
        assert_eq!(limits.memory, None);
        assert_eq!(limits.tmp, Size(DEFAULT_TMP));
    }
}
