//! What the Gemini CLI needs of its person once
//! ([`CliAdapter::readiness`](sandbox_core::CliAdapter::readiness)).
//!
//! | need | read from | checked |
//! |---|---|---|
//! | past the first-run screens (the auth picker) | `security.auth.selectedType` in `~/.gemini/settings.json` (`$GEMINI_CLI_HOME/.gemini/…`) | yes (0.61.0: without it headless exits 41, "Invalid auth method selected", and a pane stops at the picker) |
//! | logged in | by the type chosen: `gemini-api-key`: `GEMINI_API_KEY` set (checked, the model-driven layer runs so); `oauth-personal`: `~/.gemini/oauth_creds.json` (REPORTED; the pinned bundle names the file); `vertex-ai`: `GOOGLE_API_KEY`, or `GOOGLE_CLOUD_PROJECT` with `GOOGLE_CLOUD_LOCATION` (REPORTED); any other: unknown | see each |

use std::path::Path;

use sandbox_core::{FileFormat, PersonFiles, Readiness, adapter_kit};

const PICKED: &str = "past the first-run screens";
const LOGGED_IN: &str = "logged in";

pub fn check(
    home: &Path,
    person: &dyn PersonFiles,
    is_set: &dyn Fn(&str) -> bool,
) -> Vec<Readiness> {
    let dir = adapter_kit::absolute_var(person, "GEMINI_CLI_HOME")
        .ok()
        .flatten()
        .unwrap_or_else(|| home.to_owned())
        .join(".gemini");
    let file = dir.join("settings.json");
    let settings = match adapter_kit::readiness_settings(person, &file, FileFormat::Json, PICKED) {
        Ok(settings) => settings,
        Err(unreadable) => return vec![unreadable],
    };
    let chosen = settings
        .as_ref()
        .and_then(|s| s.pointer("/security/auth/selectedType"))
        .and_then(|t| t.as_str())
        .map(str::to_owned);
    let pick = "run `gemini` once, unconfined, in a terminal, and choose how to sign in";
    let Some(chosen) = chosen else {
        let found = format!("no `security.auth.selectedType` in `{}`", file.display());
        return vec![
            Readiness::no(PICKED, found.clone(), pick),
            Readiness::no(LOGGED_IN, found, pick),
        ];
    };
    let picked = Readiness::yes(
        PICKED,
        format!(
            "`security.auth.selectedType = \"{chosen}\"` in `{}`",
            file.display()
        ),
    );
    let login = match chosen.as_str() {
        "gemini-api-key" if is_set("GEMINI_API_KEY") => {
            Readiness::yes(LOGGED_IN, "GEMINI_API_KEY is set")
        }
        "gemini-api-key" => Readiness::no(
            LOGGED_IN,
            "the type chosen is an API key, and GEMINI_API_KEY is not set",
            "set GEMINI_API_KEY in the environment AgentWorks starts from",
        ),
        "oauth-personal" => {
            let creds = dir.join("oauth_creds.json");
            if adapter_kit::has_content(person, &creds) {
                Readiness::yes(LOGGED_IN, format!("`{}`", creds.display()))
            } else {
                Readiness::no(
                    LOGGED_IN,
                    format!("no `{}`", creds.display()),
                    "run `gemini` once, unconfined, in a terminal, and sign in with Google",
                )
            }
        }
        "vertex-ai"
            if is_set("GOOGLE_API_KEY")
                || (is_set("GOOGLE_CLOUD_PROJECT") && is_set("GOOGLE_CLOUD_LOCATION")) =>
        {
            Readiness::yes(
                LOGGED_IN,
                "GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION, are set",
            )
        }
        "vertex-ai" => Readiness::no(
            LOGGED_IN,
            "Vertex AI chosen, and neither GOOGLE_API_KEY nor GOOGLE_CLOUD_PROJECT with \
             GOOGLE_CLOUD_LOCATION is set",
            "set them in the environment AgentWorks starts from",
        ),
        other => Readiness::unknown(
            LOGGED_IN,
            format!("the type chosen, `{other}`, is not one this check knows"),
            "run `gemini` once, unconfined, in a terminal, and see that it starts working",
        ),
    };
    vec![picked, login]
}
