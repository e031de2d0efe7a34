use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The optional configuration file (`--config FILE`, TOML). Every key is documented in
/// `config.example.toml` at the repository's root. Unknown keys are an error, so that a typo does
/// not silently leave something open.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub layout: LayoutConfig,
    #[serde(default)]
    pub policy: PolicyConfig,
    /// One table per CLI name.
    #[serde(default)]
    pub cli: BTreeMap<String, CliConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutConfig {
    pub state_root: Option<PathBuf>,
    pub workspace_docs: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Added to workspace-docs and the state root.
    #[serde(default)]
    pub protected: Vec<PathBuf>,
    /// Patterns refused inside grants, added to the defaults.
    #[serde(default)]
    pub refused: Vec<String>,
    /// Added to the OS's default list.
    #[serde(default)]
    pub blocked_programs: Vec<PathBuf>,
    /// Unix sockets a confined CLI may still connect to (everything else is refused).
    #[serde(default)]
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Closes the persistence paths of the home (shell startup files, autostart entries, user
    /// services, git's global configuration, ssh's) to writing: see [`crate::PERSISTENCE_COMMON`].
    /// Off by default: the person's home stays open.
    #[serde(default)]
    pub harden: bool,
    /// When the launcher runs as root: places outside the home and the temporary folders that a
    /// chat may still write (everything else of the system is read-only to a root chat).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliConfig {
    /// An absolute path that replaces the PATH lookup of the CLI's program.
    pub program: Option<PathBuf>,
}

/// A configuration file that cannot be used, with the line that is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("configuration `{source_name}`{}: {message}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
pub struct ConfigError {
    pub source_name: String,
    pub line: Option<usize>,
    pub message: String,
}

impl Config {
    /// Parses the text of a configuration file; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError {
            source_name: source_name.to_owned(),
            line: e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1),
            message: e.message().trim().to_owned(),
        })?;
        let error = |message: String| ConfigError {
            source_name: source_name.to_owned(),
            line: None,
            message,
        };
        for (name, cli) in &config.cli {
            if let Some(program) = &cli.program
                && !program.is_absolute()
            {
                return Err(error(format!(
                    "cli.{name}.program `{}` is not absolute: give the full path",
                    program.display()
                )));
            }
        }
        Ok(config)
    }

    /// The program configured for a CLI, if any.
    pub fn program_for(&self, cli: &str) -> Option<&PathBuf> {
        self.cli.get(cli).and_then(|c| c.program.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let text = include_str!("../../../config.example.toml");
        let config = Config::parse(text, "config.example.toml").unwrap();
        assert_eq!(
            config.layout.state_root.as_deref(),
            Some(std::path::Path::new("/srv/agentworks/state"))
        );
        assert_eq!(config.policy.refused, ["planning/", "*.sqlite"]);
        assert!(!config.policy.harden, "the example shows the default");
        assert_eq!(
            config.program_for("codex").map(|p| p.to_str().unwrap()),
            Some("/opt/codex/bin/codex")
        );
    }

    #[test]
    fn an_unknown_key_names_its_line() {
        let err = Config::parse("[policy]\nprotect = []\n", "x.toml").unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
        assert!(err.to_string().contains("protect"), "{err}");
    }

    #[test]
    fn a_relative_program_is_refused() {
        let err = Config::parse("[cli.codex]\nprogram = \"codex\"\n", "x.toml").unwrap_err();
        assert!(err.to_string().contains("not absolute"), "{err}");
    }
}
