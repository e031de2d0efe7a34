//! `[policy] env = "allowlist"`: which of the caller's environment variables reach a chat.
//!
//! Decided here, applied by the launch (`launch::wrap`): every variable of the launcher's
//! environment that [`EnvAllow::keeps`] refuses is removed from the chat's ([`EnvAllow::removed`]
//! lists them for the plan, and the command is built from an empty environment), whatever the
//! backend. The caller's credentials (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, a database URL)
//! do not reach the chat unless `env_allow` names them.

use crate::{Config, EnvPolicy};

/// What every chat keeps with `env = "allowlist"`, besides `env_allow` and the CLI's own: what
/// a program needs to run at all and to talk to its terminal (the home, the program path, the
/// user's name, the terminal, the locale, the time zone, the temporary folder). None holds a
/// credential.
pub const ENV_ALWAYS_KEPT: &[&str] = &[
    "HOME",
    "PATH",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "TERM_PROGRAM",
    "NO_COLOR",
    "FORCE_COLOR",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
];

/// A name of `env_allow` that cannot be a variable's, with the remedy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "policy.env_allow: `{name}` is not a variable's name: use letters, digits and `_`, with an optional `*` at the end for a prefix (`LC_*`)"
)]
pub struct BadEnvName {
    /// The name as configured.
    pub name: String,
}

/// The variables a chat keeps with `env = "allowlist"`: [`ENV_ALWAYS_KEPT`], the configured
/// `env_allow`, and the names the CLI's adapter reads itself (its login's key, the variables
/// that move its settings). Each an exact name or a prefix ending in `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvAllow {
    patterns: Vec<String>,
}

impl EnvAllow {
    /// `None` with `env = "inherit"` (the caller's environment reaches the chat, as the adapter
    /// leaves it); else the rules. `adapter_kept` is what the CLI's adapter needs
    /// ([`crate::CliAdapter::env_kept`]).
    pub fn from_config(
        config: &Config,
        adapter_kept: &[&str],
    ) -> Result<Option<EnvAllow>, BadEnvName> {
        if config.policy.env != EnvPolicy::Allowlist {
            return Ok(None);
        }
        let mut patterns = Vec::new();
        for name in ENV_ALWAYS_KEPT
            .iter()
            .copied()
            .chain(adapter_kept.iter().copied())
            .chain(config.policy.env_allow.iter().map(String::as_str))
        {
            let stem = name.strip_suffix('*').unwrap_or(name);
            let valid =
                !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid {
                return Err(BadEnvName {
                    name: name.to_owned(),
                });
            }
            if !patterns.iter().any(|p| p == name) {
                patterns.push(name.to_owned());
            }
        }
        Ok(Some(EnvAllow { patterns }))
    }

    /// Whether the variable `name` reaches the chat. A name that is not text never does.
    pub fn keeps(&self, name: &std::ffi::OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        self.patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        })
    }

    /// The names of `env` (a process's environment) that do not reach the chat, sorted.
    pub fn removed<'a>(
        &self,
        env: impl IntoIterator<Item = &'a std::ffi::OsStr>,
    ) -> Vec<std::ffi::OsString> {
        let mut out: Vec<std::ffi::OsString> = env
            .into_iter()
            .filter(|name| !self.keeps(name))
            .map(|name| name.to_owned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The patterns, in the order given (the always-kept ones first).
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn allow(list: &[&str]) -> EnvAllow {
        let mut config = Config::default();
        config.policy.env = EnvPolicy::Allowlist;
        config.policy.env_allow = list.iter().map(|s| s.to_string()).collect();
        EnvAllow::from_config(&config, &["ANTHROPIC_API_KEY"])
            .unwrap()
            .unwrap()
    }

    #[test]
    fn inherit_is_no_rule_at_all() {
        assert_eq!(EnvAllow::from_config(&Config::default(), &[]), Ok(None));
    }

    #[test]
    fn only_the_listed_the_adapters_and_the_basic_names_are_kept() {
        let rules = allow(&["GOPATH", "MY_*"]);
        for kept in [
            "HOME",
            "PATH",
            "LC_ALL",
            "GOPATH",
            "MY_THING",
            "ANTHROPIC_API_KEY",
        ] {
            assert!(rules.keeps(OsStr::new(kept)), "{kept}");
        }
        for removed in [
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "GOPATHX",
            "MY",
            "LD_PRELOAD",
            "path",
        ] {
            assert!(!rules.keeps(OsStr::new(removed)), "{removed}");
        }
        let gone = rules.removed(
            ["HOME", "GITHUB_TOKEN", "NPM_TOKEN", "GITHUB_TOKEN"]
                .into_iter()
                .map(OsStr::new),
        );
        assert_eq!(gone, ["GITHUB_TOKEN", "NPM_TOKEN"]);
    }

    #[test]
    fn a_name_that_is_no_variables_is_refused_with_the_remedy() {
        for bad in ["", "*", "A-B", "A*B", "PATH ", "X=1"] {
            let mut config = Config::default();
            config.policy.env = EnvPolicy::Allowlist;
            config.policy.env_allow = vec![bad.to_owned()];
            let err = EnvAllow::from_config(&config, &[]).unwrap_err();
            assert!(err.to_string().contains("policy.env_allow"), "{err}");
        }
    }
}
