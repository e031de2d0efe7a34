//! What Codex needs of its person once ([`CliAdapter::readiness`](sandbox_core::CliAdapter::readiness)).
//!
//! | need | read from | checked |
//! |---|---|---|
//! | logged in | `$CODEX_HOME/auth.json` (default `~/.codex/auth.json`), which `codex login` writes (an API key or a ChatGPT sign-in); or a `model_provider` of the person's own in `config.toml` (a local model: the TUI then shows no sign-in screen) | yes (0.171.0: `codex login status` says "Not logged in" without the file and "API key configured" with it; the local provider is how the contract's model-driven layer runs) |
//! | past the first-run screens | nothing to do: the trust screen and the model-upgrade notice are answered by every launch (pre-trust), the sign-in screen is the need above | yes (`tests/screens.rs`) |

use std::path::Path;

use sandbox_core::{FileFormat, PersonFiles, Readiness, adapter_kit};

const LOGGED_IN: &str = "logged in";

pub fn check(home: &Path, person: &dyn PersonFiles) -> Vec<Readiness> {
    let codex_home = adapter_kit::absolute_var(person, "CODEX_HOME")
        .ok()
        .flatten()
        .unwrap_or_else(|| home.join(".codex"));
    let auth = codex_home.join("auth.json");
    let config = codex_home.join("config.toml");
    let login = if adapter_kit::has_content(person, &auth) {
        Readiness::yes(LOGGED_IN, format!("`{}`", auth.display()))
    } else {
        match adapter_kit::readiness_settings(person, &config, FileFormat::Toml, LOGGED_IN) {
            Err(unreadable) => unreadable,
            Ok(settings) => match settings
                .as_ref()
                .and_then(|s| s.get("model_provider"))
                .and_then(|p| p.as_str())
                .filter(|p| *p != "openai")
            {
                Some(provider) => Readiness::yes(
                    LOGGED_IN,
                    format!(
                        "a model provider of your own: `model_provider = \"{provider}\"` in `{}`",
                        config.display()
                    ),
                ),
                None => Readiness::no(
                    LOGGED_IN,
                    format!(
                        "no `{}`, and no model provider of your own in `{}`",
                        auth.display(),
                        config.display()
                    ),
                    "run `codex login` once, unconfined (or `codex` in a terminal, and sign in); \
                     with an API key: `printenv OPENAI_API_KEY | codex login --with-api-key`",
                ),
            },
        }
    };
    vec![
        login,
        Readiness::yes(
            "past the first-run screens",
            "nothing to answer: each launch answers the trust screen and the model-upgrade \
             notice (pre-trust); the sign-in screen is the need above",
        ),
    ]
}
