use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The optional configuration file (`--config FILE`, TOML). Every key is documented in
/// `config.example.toml` at the repository's root. Unknown keys are an error, so that a typo does
/// not silently leave something open. `Deserialize` (with its tables'): it is read from that
/// file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[layout]`: where AgentWorks' folders are.
    #[serde(default)]
    pub layout: LayoutConfig,
    /// `[policy]`: what the rules add to their defaults.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// One table per CLI name.
    #[serde(default)]
    pub cli: BTreeMap<String, CliConfig>,
    /// `[limits]`: how much of the machine one chat may take.
    #[serde(default)]
    pub limits: crate::LimitsConfig,
}

/// `[layout]`: below the flags and the environment variables in precedence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutConfig {
    /// AgentWorks' app folder as this process sees it.
    pub state_root: Option<PathBuf>,
    /// The workspace-docs folder.
    pub workspace_docs: Option<PathBuf>,
}

/// `[policy]`: each list adds to the built-in one, never replaces it.
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
    /// Closes the persistence places of the home to writing: the home's top as a class (every
    /// entry there but the CLIs' state files, [`crate::HOME_TOP_STATE_FILES`]) and the list
    /// below it ([`crate::PERSISTENCE_COMMON`]); what stays open is
    /// [`crate::HARDEN_LEAVES_OPEN`]. Off by default: the person's home stays open.
    #[serde(default)]
    pub harden: bool,
    /// Read-write grants in which git's own files stay writable to the chat (`.git/hooks`,
    /// `.git/config`, `.gitmodules`: read-only inside every other read-write grant, see
    /// [`crate::Rule::Git`]); each names a grant's folder exactly, as granted.
    #[serde(default)]
    pub git_writable: Vec<PathBuf>,
    /// When the launcher runs as root: places outside the home and the temporary folders that a
    /// chat may still write (everything else of the system is read-only to a root chat).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// Whether a chat shares the machine's network (its loopback included) or gets one of its
    /// own with outbound access only. See [`Network`].
    #[serde(default)]
    pub network: Network,
    /// With `network = "allowlist"`: the host names a chat may reach through the launcher's
    /// proxy, each exact (`api.anthropic.com`) or a suffix (`*.example.com`: any name below
    /// `example.com`, not `example.com` itself). See [`crate::egress`].
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// With `network = "allowlist"`: host names refused even when `allowed_hosts` lists them
    /// (deny wins); the same forms.
    #[serde(default)]
    pub denied_hosts: Vec<String>,
    /// Whether the credential places of the home ([`crate::SECRETS_HOME`]: `~/.ssh`, `~/.aws`,
    /// `~/.netrc`, ...) stay open to a chat (`open`, the default: the home is the person's) or
    /// are closed to every operation (`closed`). See [`Secrets`].
    #[serde(default)]
    pub secrets: Secrets,
    /// Which of the caller's environment variables reach a chat: all of them (`inherit`, the
    /// default) or only those of `env_allow` and what the CLI's adapter sets (`allowlist`).
    #[serde(default)]
    pub env: EnvPolicy,
    /// With `env = "allowlist"`: the names of the variables a chat keeps from the caller's
    /// environment (exact names, or a prefix ending in `*`: `LC_*`).
    #[serde(default)]
    pub env_allow: Vec<String>,
}

/// A lowercase word of the configuration read into one of an enum's values, with an error that
/// names the key and every value (serde's own names neither the key nor, for a value of the
/// wrong type, the values).
trait ConfigWord: Sized + Copy + PartialEq + 'static {
    /// The key under `[policy]`.
    const KEY: &'static str;
    /// Each word, its value, and what it means (for the error).
    const WORDS: &'static [(&'static str, Self, &'static str)];

    fn word(self) -> &'static str {
        Self::WORDS
            .iter()
            .find(|(_, v, _)| *v == self)
            .map_or("", |(w, _, _)| w)
    }
}

struct WordVisitor<T>(std::marker::PhantomData<T>);

impl<T: ConfigWord> serde::de::Visitor<'_> for WordVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = T::WORDS
            .iter()
            .map(|(w, _, _)| format!("\"{w}\""))
            .collect();
        write!(f, "policy.{}: {}", T::KEY, words.join(" or "))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        if let Some((_, value, _)) = T::WORDS.iter().find(|(w, _, _)| *w == v) {
            return Ok(*value);
        }
        let choices: Vec<String> = T::WORDS
            .iter()
            .map(|(w, _, meaning)| format!("\"{w}\" ({meaning})"))
            .collect();
        Err(E::custom(format!(
            "policy.{} is \"{v}\": use {}",
            T::KEY,
            choices.join(" or ")
        )))
    }
}

/// `[policy] secrets`: the credential places of the home ([`crate::SECRETS_HOME`]).
///
/// - `open` (the default, by the owner's decision): the home is open, these places with it.
/// - `closed`: each is closed to every operation (read, write, list, exec, move; none of its
///   ancestors is moved), on every backend, whatever its case on macOS and also when missing at
///   launch where the backend can (see `SECURITY.md`). The CLIs' own logins (`~/.claude`,
///   `~/.codex/auth.json`, `~/.gemini`) are not among them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Secrets {
    /// Open like the rest of the home.
    #[default]
    Open,
    /// Closed to every operation.
    Closed,
}

impl ConfigWord for Secrets {
    const KEY: &'static str = "secrets";
    const WORDS: &'static [(&'static str, Secrets, &'static str)] = &[
        (
            "open",
            Secrets::Open,
            "the home's credential places open, the default",
        ),
        (
            "closed",
            Secrets::Closed,
            "~/.ssh, ~/.aws, ~/.netrc and the others closed",
        ),
    ];
}

impl Secrets {
    /// The configuration's word for it.
    pub fn as_str(self) -> &'static str {
        self.word()
    }
}

impl<'de> Deserialize<'de> for Secrets {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Secrets, D::Error> {
        d.deserialize_str(WordVisitor(std::marker::PhantomData))
    }
}

/// `[policy] env`: which of the caller's environment variables reach a chat.
///
/// - `inherit` (the default): all of them, but those the adapter removes.
/// - `allowlist`: only the names of `env_allow`, and what the CLI's adapter sets itself (its
///   home, its settings' places, its terminal); everything else is removed before the chat
///   starts (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvPolicy {
    /// The caller's environment, as the adapter leaves it.
    #[default]
    Inherit,
    /// Only the listed variables and the adapter's own.
    Allowlist,
}

impl ConfigWord for EnvPolicy {
    const KEY: &'static str = "env";
    const WORDS: &'static [(&'static str, EnvPolicy, &'static str)] = &[
        (
            "inherit",
            EnvPolicy::Inherit,
            "the caller's environment, the default",
        ),
        (
            "allowlist",
            EnvPolicy::Allowlist,
            "only env_allow's names and the CLI's own",
        ),
    ];
}

impl EnvPolicy {
    /// The configuration's word for it.
    pub fn as_str(self) -> &'static str {
        self.word()
    }
}

impl<'de> Deserialize<'de> for EnvPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EnvPolicy, D::Error> {
        d.deserialize_str(WordVisitor(std::marker::PhantomData))
    }
}

/// `[policy] network`: what the network of a chat is.
///
/// - `shared` (the default, by the owner's decision): the machine's network, as the person has
///   it. Every TCP or UDP server on the machine's loopback (`127.0.0.1`, `::1`) is reachable:
///   a database, a dev server, another chat's tool server, a CLI's own local server that acts
///   for its clients.
/// - `isolated`: a network of the chat's own. Its own loopback works (a CLI's server inside is
///   reachable from inside); connections go out to the machine's other addresses and beyond,
///   DNS works; the machine's loopback is out of reach. Only where the backend can build it
///   (Linux with user namespaces, and `pasta`): anywhere else the launch is refused, never
///   silently shared.
/// - `allowlist`: the chat's only route out is the launcher's HTTP(S) proxy, which connects only
///   to the names of `allowed_hosts` that `denied_hosts` does not list ([`crate::egress`]).
///   Where the backend cannot make the proxy the only route, the launch is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// The machine's network, its loopback servers included.
    #[default]
    Shared,
    /// A network of the chat's own, outbound only.
    Isolated,
    /// Out only through the launcher's proxy, to the listed host names.
    Allowlist,
}

impl Network {
    /// The configuration's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Shared => "shared",
            Network::Isolated => "isolated",
            Network::Allowlist => "allowlist",
        }
    }
}

/// By hand, so that a wrong value names the key and both values (serde's own message names
/// neither the key nor, for a value of the wrong type, the values).
impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Network, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Network;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(r#"policy.network: "shared", "isolated" or "allowlist""#)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Network, E> {
                match v {
                    "shared" => Ok(Network::Shared),
                    "isolated" => Ok(Network::Isolated),
                    "allowlist" => Ok(Network::Allowlist),
                    other => Err(E::custom(format!(
                        r#"policy.network is "{other}": use "shared" (the machine's network, the default), "isolated" (a network of the chat's own) or "allowlist" (only allowed_hosts, through the launcher's proxy)"#
                    ))),
                }
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// `[cli.NAME]`: one CLI's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliConfig {
    /// An absolute path that replaces the PATH lookup of the CLI's program.
    pub program: Option<PathBuf>,
}

/// The names of the `[cli.NAME]` tables with where each stands in the text.
#[derive(Deserialize)]
struct CliNames {
    #[serde(default)]
    cli: BTreeMap<toml::Spanned<String>, serde::de::IgnoredAny>,
}

/// A configuration file that cannot be used, with the line that is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("configuration `{source_name}`{}: {message}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file, as the caller named it.
    pub source_name: String,
    /// The line that is wrong, from 1, when one is.
    pub line: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl Config {
    /// Parses the text of a configuration file; `source_name` names it in errors. `clis` are the
    /// CLI names the launcher knows (its registry): a `[cli.NAME]` table for any other name is
    /// an error, like an unknown key, so that a typo (`[cli.codx]`) does not silently leave the
    /// real CLI's setting out.
    pub fn parse(text: &str, source_name: &str, clis: &[&str]) -> Result<Config, ConfigError> {
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let config: Config = toml::from_str(text).map_err(|e| ConfigError {
            source_name: source_name.to_owned(),
            line: e.span().map(|span| line_of(span.start)),
            message: e.message().trim().to_owned(),
        })?;
        let error = |line: Option<usize>, message: String| ConfigError {
            source_name: source_name.to_owned(),
            line,
            message,
        };
        if config.cli.keys().any(|name| !clis.contains(&name.as_str())) {
            // Read once more for the table names' places (the text parsed above, so this parses).
            let names: CliNames = toml::from_str(text).map_err(|e| error(None, e.to_string()))?;
            for name in names.cli.keys() {
                if !clis.contains(&name.get_ref().as_str()) {
                    return Err(error(
                        Some(line_of(name.span().start)),
                        format!(
                            "unknown CLI table `[cli.{}]`: use one of {}",
                            name.get_ref(),
                            clis.iter()
                                .map(|c| format!("`{c}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
        }
        if config.limits.processes == Some(0) {
            return Err(error(
                None,
                "limits.processes is 0: a chat needs at least one process; give a number above 0, or leave the key out for the default".into(),
            ));
        }
        for (name, cli) in &config.cli {
            if let Some(program) = &cli.program
                && !program.is_absolute()
            {
                return Err(error(
                    None,
                    format!(
                        "cli.{name}.program `{}` is not absolute: give the full path",
                        program.display()
                    ),
                ));
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

    const CLIS: &[&str] = &["claude", "codex"];

    #[test]
    fn the_documented_example_parses() {
        let text = include_str!("../../../config.example.toml");
        let config = Config::parse(text, "config.example.toml", CLIS).unwrap();
        assert_eq!(
            config.layout.state_root.as_deref(),
            Some(std::path::Path::new("/srv/agentworks/state"))
        );
        assert_eq!(config.policy.refused, ["planning/", "*.sqlite"]);
        assert!(!config.policy.harden, "the example shows the default");
        assert_eq!(config.policy.network, Network::Shared, "the default again");
        assert_eq!(
            config.program_for("codex").map(|p| p.to_str().unwrap()),
            Some("/opt/codex/bin/codex")
        );
    }

    #[test]
    fn an_unknown_key_names_its_line() {
        let err = Config::parse("[policy]\nprotect = []\n", "x.toml", CLIS).unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
        assert!(err.to_string().contains("protect"), "{err}");
    }

    #[test]
    fn network_is_shared_unless_the_configuration_says_isolated() {
        assert_eq!(Config::default().policy.network, Network::Shared);
        let isolated = Config::parse("[policy]\nnetwork = \"isolated\"\n", "x.toml", CLIS).unwrap();
        assert_eq!(isolated.policy.network, Network::Isolated);
        let shared = Config::parse("[policy]\nnetwork = \"shared\"\n", "x.toml", CLIS).unwrap();
        assert_eq!(shared.policy.network, Network::Shared);
    }

    #[test]
    fn a_wrong_network_names_the_key_the_line_and_both_values() {
        for (text, line) in [
            ("[policy]\nnetwork = \"none\"\n", 2),
            ("[policy]\nharden = false\nnetwork = true\n", 3),
            ("[policy]\nnetwork = \"Isolated\"\n", 2),
        ] {
            let err = Config::parse(text, "x.toml", CLIS).unwrap_err();
            let message = err.to_string();
            assert_eq!(err.line, Some(line), "{message}");
            for word in ["policy.network", "\"shared\"", "\"isolated\""] {
                assert!(message.contains(word), "{word} missing: {message}");
            }
        }
    }

    #[test]
    fn an_unknown_cli_table_names_itself_its_line_and_the_known_names() {
        for (text, line) in [
            ("[cli.codx]\nprogram = \"/opt/codex\"\n", 1),
            (
                "[policy]\nharden = true\n\n[cli.codex]\nprogram = \"/x\"\n[cli.\"cla ude\"]\n",
                6,
            ),
            ("[cli]\ncodex = {}\ngemini = { program = \"/g\" }\n", 3),
        ] {
            let err = Config::parse(text, "x.toml", CLIS).unwrap_err();
            let message = err.to_string();
            assert_eq!(err.line, Some(line), "{message}");
            for word in ["unknown CLI table", "`claude`", "`codex`", "x.toml"] {
                assert!(message.contains(word), "{word} missing: {message}");
            }
        }
        // The known names pass, and an empty table is fine.
        Config::parse(
            "[cli.claude]\n[cli.codex]\nprogram = \"/c\"\n",
            "x.toml",
            CLIS,
        )
        .unwrap();
    }

    #[test]
    fn an_unknown_key_anywhere_names_the_key_and_the_known_ones() {
        for (text, key, known) in [
            ("[polcy]\n", "polcy", "`policy`"),
            (
                "[layout]\nstate_rot = \"/s\"\n",
                "state_rot",
                "`state_root`",
            ),
            ("[cli.codex]\nprogramm = \"/c\"\n", "programm", "`program`"),
            (
                "[policy]\nharden = true\nnetwrk = \"shared\"\n",
                "netwrk",
                "`network`",
            ),
        ] {
            let message = Config::parse(text, "x.toml", CLIS).unwrap_err().to_string();
            assert!(
                message.contains(key) && message.contains(known),
                "{message}"
            );
        }
    }

    #[test]
    fn secrets_and_env_read_their_words_and_a_wrong_one_names_the_key_and_the_values() {
        let c = Config::parse(
            "[policy]\nsecrets = \"closed\"\nenv = \"allowlist\"\nenv_allow = [\"LC_*\"]\n",
            "x.toml",
            CLIS,
        )
        .unwrap();
        assert_eq!(c.policy.secrets, Secrets::Closed);
        assert_eq!(c.policy.env, EnvPolicy::Allowlist);
        assert_eq!(Config::default().policy.secrets.as_str(), "open");
        assert_eq!(Config::default().policy.env.as_str(), "inherit");
        for (text, words) in [
            (
                "[policy]\nsecrets = \"shut\"\n",
                ["policy.secrets", "\"open\"", "\"closed\""],
            ),
            (
                "[policy]\nenv = true\n",
                ["policy.env", "\"inherit\"", "\"allowlist\""],
            ),
        ] {
            let err = Config::parse(text, "x.toml", CLIS).unwrap_err().to_string();
            for word in words {
                assert!(err.contains(word), "{word} missing: {err}");
            }
        }
    }

    #[test]
    fn limits_parse_and_a_wrong_size_names_the_key_and_the_form() {
        let config = Config::parse(
            "[limits]\nprocesses = 64\nmemory = \"512M\"\ntmp = \"2G\"\n",
            "x.toml",
            CLIS,
        )
        .unwrap();
        assert_eq!(config.limits.processes, Some(64));
        assert_eq!(config.limits.memory, Some(crate::Size(512 << 20)));
        assert_eq!(config.limits.tmp, Some(crate::Size(2 << 30)));
        for (text, words) in [
            (
                "[limits]\nmemory = \"lots\"\n",
                &["limits", "\"lots\"", "\"512M\""][..],
            ),
            ("[limits]\ntmp = \"0\"\n", &["\"0\"", "not a size"]),
            (
                "[limits]\nprocesses = 0\n",
                &["limits.processes", "above 0"],
            ),
            ("[limits]\nmemroy = \"1G\"\n", &["memroy", "`memory`"]),
        ] {
            let message = Config::parse(text, "x.toml", CLIS).unwrap_err().to_string();
            for word in words {
                assert!(message.contains(word), "{word} missing: {message}");
            }
        }
    }

    #[test]
    fn a_relative_program_is_refused() {
        let err = Config::parse("[cli.codex]\nprogram = \"codex\"\n", "x.toml", CLIS).unwrap_err();
        assert!(err.to_string().contains("not absolute"), "{err}");
    }
}
