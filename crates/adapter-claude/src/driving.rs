//! How `cli-sandbox contract --agents` installs Claude Code, points it at the scripted model and
//! drives its tools ([`sandbox_core::driving`]).

use sandbox_core::Driving;
use sandbox_core::driving::{
    FileToolsRefuse, Install, PersonContent, PersonEdit, PersonMcp, PersonPlace, Plays,
    PointAtModel, ToolNames, file, var,
};
use serde_json::json;

/// The stand-in key a person would have in the environment (never a real key).
pub const STAND_IN_KEY: (&str, &str) = ("ANTHROPIC_API_KEY", "sk-ant-scripted-model-not-a-key");

/// What `cli-sandbox contract --agents` needs of this CLI.
pub const DRIVING: Driving = Driving {
    tools: ToolNames {
        shell: "Bash",
        read: Some("Read"),
        write: "Write",
        edit: "Edit",
    },
    // Its `Read` refuses a file it takes for binary by its extension ("cannot read binary
    // files"), and so its `Edit` of one, which needs a `Read` first.
    file_tools_refuse: FileToolsRefuse::Extensions(&["sqlite", "db"]),
    install: Some(Install {
        npm_package: "@anthropic-ai/claude-code",
        version: "2.1.197",
    }),
    stand_in_keys: &[STAND_IN_KEY],
    point_at_model,
    person_mcp,
    plays: Plays {
        own_tools: true,
        bridge_in_full_mode: true,
    },
};

/// A key in the environment the person was never asked about: the launch approves it for the TUI
/// (see the crate's screens).
fn point_at_model(base_url: &str) -> PointAtModel {
    PointAtModel {
        files: vec![file(
            ".claude.json",
            json!({ "hasCompletedOnboarding": true }).to_string(),
        )],
        vars: vec![
            var("ANTHROPIC_BASE_URL", base_url),
            var(STAND_IN_KEY.0, STAND_IN_KEY.1),
            var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            var("CLAUDE_CODE_MAX_RETRIES", "0"),
        ],
    }
}

/// A server of the person's in `~/.claude.json`, and a project `.mcp.json` in the working
/// folder, as a cloned repository has.
fn person_mcp(mcp: &PersonMcp<'_>) -> Vec<PersonEdit> {
    vec![
        PersonEdit {
            place: PersonPlace::Home,
            path: ".claude.json".to_owned(),
            content: PersonContent::JsonKey {
                key: "mcpServers".to_owned(),
                value: json!({ "mine": mcp.server }),
            },
        },
        PersonEdit {
            place: PersonPlace::Runtime,
            path: ".mcp.json".to_owned(),
            content: PersonContent::Whole(
                json!({ "mcpServers": { "proj": mcp.server } }).to_string(),
            ),
        },
    ]
}
