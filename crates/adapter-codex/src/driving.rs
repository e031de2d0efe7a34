//! How `cli-sandbox contract --agents` installs Codex, points it at the scripted model and drives
//! its tools ([`sandbox_core::driving`]).

use sandbox_core::Driving;
use sandbox_core::driving::{
    FileToolsRefuse, Install, Plays, PointAtModel, ToolNames, file, no_person_mcp,
};

/// What `cli-sandbox contract --agents` needs of this CLI.
pub const DRIVING: Driving = Driving {
    tools: ToolNames {
        shell: "exec_command",
        read: None,
        write: "apply_patch",
        edit: "apply_patch",
    },
    file_tools_refuse: FileToolsRefuse::Nothing,
    install: Some(Install {
        npm_package: "@openai/codex",
        version: "0.171.0",
    }),
    stand_in_keys: &[],
    point_at_model,
    person_mcp: no_person_mcp,
    plays: Plays {
        own_tools: true,
        bridge_in_full_mode: false,
    },
};

/// A model Codex has metadata for (with an unknown one its tools lack `apply_patch`); it has an
/// announced successor the person has not seen, which the launch marks as seen for the TUI
/// (`MODEL_MIGRATIONS`).
fn point_at_model(base_url: &str) -> PointAtModel {
    PointAtModel {
        files: vec![file(
            ".codex/config.toml",
            format!(
                "# The demo person's own settings: a local provider (the scripted model).\n\
                 model_provider = \"scripted\"\nmodel = \"gpt-5.5\"\n\n\
                 [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base_url}/v1\"\n\
                 wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n\
                 [analytics]\nenabled = false\n\n[otel]\nmetrics_exporter = \"none\"\n\n\
                 [features]\nplugins = false\n"
            ),
        )],
        vars: Vec::new(),
    }
}
