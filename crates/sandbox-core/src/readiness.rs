//! What a CLI needs of its person once, before any launch of it can get to work: a login, and
//! the first-run screens (a theme picker, an auth picker) answered. A launch cannot answer them
//! for the person (a login is theirs to give, and a tmux pane stops on such a screen), so
//! `cli-sandbox doctor --cli NAME` reads them from the person's files and environment, through
//! [`CliAdapter::readiness`](crate::CliAdapter::readiness), and says what to run once,
//! unconfined, to get there.

use serde::Serialize;

/// Whether one need is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ready {
    /// Met: the evidence is in `found`.
    Yes,
    /// Not met: `remedy` says what to run once.
    No,
    /// Cannot be read from the person's files (a CLI not tried here, or a login kept in a
    /// keychain).
    Unknown,
}

impl Ready {
    /// `yes`, `no`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ready::Yes => "yes",
            Ready::No => "no",
            Ready::Unknown => "unknown",
        }
    }
}

/// One need of a CLI's, checked for this person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// What is needed, in a few words (`logged in`, `past the first-run screens`).
    pub what: String,
    /// Whether it is met.
    pub ready: Ready,
    /// What was found (or looked for and not found): the file and key, or the variable.
    pub found: String,
    /// What to run once, unconfined, to meet it; empty when it is met.
    pub remedy: String,
}

impl Readiness {
    /// A need that is met, with the evidence.
    pub fn yes(what: &str, found: impl Into<String>) -> Readiness {
        Readiness {
            what: what.to_owned(),
            ready: Ready::Yes,
            found: found.into(),
            remedy: String::new(),
        }
    }

    /// A need that is not met: what was looked for, and what to run once.
    pub fn no(what: &str, found: impl Into<String>, remedy: impl Into<String>) -> Readiness {
        Readiness {
            what: what.to_owned(),
            ready: Ready::No,
            found: found.into(),
            remedy: remedy.into(),
        }
    }

    /// A need that cannot be read: why, and what to run once to be sure.
    pub fn unknown(what: &str, found: impl Into<String>, remedy: impl Into<String>) -> Readiness {
        Readiness {
            what: what.to_owned(),
            ready: Ready::Unknown,
            found: found.into(),
            remedy: remedy.into(),
        }
    }
}
