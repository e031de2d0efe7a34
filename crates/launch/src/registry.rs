//! Every CLI cli-sandbox can launch, by name. Adding a CLI is one adapter crate and one line here.

use sandbox_core::CliAdapter;

/// The registered adapters, in the order `cli-sandbox adapters` lists them. The first six are
/// AgentWorks' CLIs; Gemini CLI is the seventh, added as one crate and this one line.
pub static ADAPTERS: &[&dyn CliAdapter] = &[
    &adapter_claude::Claude,
    &adapter_codex::Codex,
    &adapter_cursor::Cursor,
    &adapter_muse::Muse,
    &adapter_agy::Agy,
    &adapter_pi::Pi,
    &adapter_gemini::Gemini,
];

/// The six CLIs of AgentWorks (the contract's default set).
pub const AGENTWORKS_CLIS: [&str; 6] = ["claude", "codex", "cursor", "muse", "agy", "pi"];

/// The adapter registered under `name`.
pub fn find(name: &str) -> Option<&'static dyn CliAdapter> {
    ADAPTERS.iter().copied().find(|a| a.name() == name)
}

/// The registered names, for error messages.
pub fn names() -> Vec<&'static str> {
    ADAPTERS.iter().map(|a| a.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_cover_the_six() {
        let mut names = names();
        for cli in AGENTWORKS_CLIS {
            assert!(find(cli).is_some(), "{cli} is not registered");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ADAPTERS.len());
    }
}
