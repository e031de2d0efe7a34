//! What Claude Code needs of its person once
//! ([`CliAdapter::readiness`](sandbox_core::CliAdapter::readiness)).
//!
//! | need | read from | checked |
//! |---|---|---|
//! | past the first-run screens (the theme picker and the rest of the onboarding) | `"hasCompletedOnboarding": true` in `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`) | yes (2.1.197: without it a tmux pane stops at the theme picker; with it the next screen is the trust screen, which pre-trust answers) |
//! | logged in | `ANTHROPIC_API_KEY` or `ANTHROPIC_AUTH_TOKEN` set (an API key: the launch approves it for the pane), `CLAUDE_CODE_USE_BEDROCK` or `CLAUDE_CODE_USE_VERTEX` set, `~/.claude/.credentials.json` (or `$CLAUDE_CONFIG_DIR/.credentials.json`, where `/login` keeps its tokens on Linux), or an `oauthAccount` in `.claude.json` | REPORTED (no login was made here; the pinned binary names `.credentials.json` and `hasCompletedOnboarding`); on macOS the tokens are in the Keychain, and only `oauthAccount` is read |

use std::path::Path;

use sandbox_core::{FileFormat, PersonFiles, Readiness, adapter_kit};

const ONBOARDED: &str = "past the first-run screens";
const LOGGED_IN: &str = "logged in";

pub fn check(
    home: &Path,
    person: &dyn PersonFiles,
    is_set: &dyn Fn(&str) -> bool,
) -> Vec<Readiness> {
    let dir = adapter_kit::absolute_var(person, "CLAUDE_CONFIG_DIR")
        .ok()
        .flatten();
    let state = match &dir {
        Some(dir) => dir.join(".claude.json"),
        None => home.join(".claude.json"),
    };
    let credentials = dir
        .unwrap_or_else(|| home.join(".claude"))
        .join(".credentials.json");
    let settings =
        match adapter_kit::readiness_settings(person, &state, FileFormat::Json, ONBOARDED) {
            Ok(settings) => settings,
            Err(unreadable) => return vec![unreadable],
        };
    let key = |k: &str| settings.as_ref().and_then(|s| s.get(k));
    let first_run = "run `claude` once, unconfined, in a terminal: pick a theme and go through its \
                     first screens (then /exit)";
    let onboarded = if key("hasCompletedOnboarding").and_then(|v| v.as_bool()) == Some(true) {
        Readiness::yes(
            ONBOARDED,
            format!("`hasCompletedOnboarding: true` in `{}`", state.display()),
        )
    } else {
        Readiness::no(
            ONBOARDED,
            format!("no `hasCompletedOnboarding: true` in `{}`", state.display()),
            first_run,
        )
    };
    let variable = [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
    ]
    .into_iter()
    .find(|v| is_set(v));
    let login = if let Some(variable) = variable {
        Readiness::yes(LOGGED_IN, format!("{variable} is set"))
    } else if adapter_kit::has_content(person, &credentials) {
        Readiness::yes(LOGGED_IN, format!("`{}`", credentials.display()))
    } else if key("oauthAccount").is_some_and(|a| a.is_object()) {
        Readiness::yes(
            LOGGED_IN,
            format!("an `oauthAccount` in `{}`", state.display()),
        )
    } else {
        Readiness::no(
            LOGGED_IN,
            format!(
                "no ANTHROPIC_API_KEY, no `{}`, no `oauthAccount` in `{}`",
                credentials.display(),
                state.display()
            ),
            "run `claude` once, unconfined, in a terminal, and sign in (/login); or set \
             ANTHROPIC_API_KEY in the environment AgentWorks starts from",
        )
    };
    vec![onboarded, login]
}
