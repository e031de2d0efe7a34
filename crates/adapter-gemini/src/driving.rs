//! How `cli-sandbox contract --agents` installs Gemini CLI, points it at the scripted model and
//! drives its tools ([`sandbox_core::driving`]).

use sandbox_core::Driving;
use sandbox_core::driving::{
    FileToolsRefuse, Install, Plays, PointAtModel, ToolNames, file, no_person_mcp, var,
};
use serde_json::json;

/// The stand-in key a person would have in the environment (never a real key).
pub const STAND_IN_KEY: (&str, &str) = ("GEMINI_API_KEY", "scripted-model-not-a-key");

/// What `cli-sandbox contract --agents` needs of this CLI.
pub const DRIVING: Driving = Driving {
    tools: ToolNames {
        shell: "run_shell_command",
        read: Some("read_file"),
        write: "write_file",
        edit: "replace",
    },
    // Its file tools refuse any path outside its workspace (the working folder and the grants).
    file_tools_refuse: FileToolsRefuse::OutsideWorkspace,
    install: Some(Install {
        npm_package: "@google/gemini-cli",
        version: "0.61.0",
    }),
    stand_in_keys: &[STAND_IN_KEY],
    point_at_model,
    person_mcp: no_person_mcp,
    plays: Plays {
        own_tools: true,
        bridge_in_full_mode: false,
    },
};

fn point_at_model(base_url: &str) -> PointAtModel {
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        // A model of its own: "auto" first asks a routing model for a choice.
        "model": {"name": "gemini-2.5-flash"},
        // No retries: a failing model fails the launch at once, not after ten tries.
        "general": {"maxAttempts": 1, "retryFetchErrors": false},
    });
    PointAtModel {
        files: vec![file(".gemini/settings.json", settings.to_string())],
        vars: vec![
            var(STAND_IN_KEY.0, STAND_IN_KEY.1),
            var("GOOGLE_GEMINI_BASE_URL", base_url),
        ],
    }
}
