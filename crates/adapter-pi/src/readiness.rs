//! What Pi needs of its person once ([`CliAdapter::readiness`](sandbox_core::CliAdapter::readiness)).
//!
//! | need | read from | checked |
//! |---|---|---|
//! | logged in | a provider's credentials in `~/.pi/agent/auth.json` (`$PI_CODING_AGENT_DIR/auth.json`), which `/login` writes; a provider of the person's own in `models.json` there; or a provider's API key in the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, ...) | yes for the empty case (0.73.1 in a scratch home writes `auth.json` as `{}` and exits 1, "No API key found for the selected model. Use /login") and for `models.json` (the model-driven layer runs so); the variables from its `docs/providers.md` (REPORTED) |
//! | past the first-run screens | none: 0.73.1 shows no trust, approval or key screen | yes |

use std::path::Path;

use sandbox_core::{FileFormat, PersonFiles, Readiness, adapter_kit};

const LOGGED_IN: &str = "logged in";

/// The providers' API key variables Pi's `docs/providers.md` (0.73.1) lists.
const KEY_VARIABLES: [&str; 9] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "CEREBRAS_API_KEY",
    "CLOUDFLARE_API_KEY",
];

pub fn check(
    home: &Path,
    person: &dyn PersonFiles,
    is_set: &dyn Fn(&str) -> bool,
) -> Vec<Readiness> {
    let dir = adapter_kit::absolute_var(person, "PI_CODING_AGENT_DIR")
        .ok()
        .flatten()
        .unwrap_or_else(|| home.join(".pi/agent"));
    let (auth, models) = (dir.join("auth.json"), dir.join("models.json"));
    let non_empty = |file: &Path, key: Option<&str>| -> Result<bool, Readiness> {
        let value = adapter_kit::readiness_settings(person, file, FileFormat::Json, LOGGED_IN)?;
        let value = match (value, key) {
            (Some(v), Some(key)) => v.get(key).cloned(),
            (v, None) => v,
            (None, _) => None,
        };
        Ok(value.is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty())))
    };
    let login = match (
        non_empty(&auth, None),
        non_empty(&models, Some("providers")),
    ) {
        (Err(unreadable), _) | (_, Err(unreadable)) => unreadable,
        (Ok(true), _) => Readiness::yes(LOGGED_IN, format!("credentials in `{}`", auth.display())),
        (_, Ok(true)) => Readiness::yes(
            LOGGED_IN,
            format!("a provider of your own in `{}`", models.display()),
        ),
        _ => match KEY_VARIABLES.into_iter().find(|v| is_set(v)) {
            Some(variable) => Readiness::yes(LOGGED_IN, format!("{variable} is set")),
            None => Readiness::no(
                LOGGED_IN,
                format!(
                    "no credentials in `{}`, no provider in `{}`, no provider's API key set",
                    auth.display(),
                    models.display()
                ),
                "run `pi` once, unconfined, in a terminal, and /login; or set a provider's API \
                 key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) in the environment AgentWorks \
                 starts from",
            ),
        },
    };
    vec![
        login,
        Readiness::yes(
            "past the first-run screens",
            "nothing to answer: Pi shows no trust, approval or key screen",
        ),
    ]
}
