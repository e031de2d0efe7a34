//! How `cli-sandbox contract --agents` installs Pi, points it at the scripted model and drives it
//! ([`sandbox_core::driving`]): Pi's confined launches are bridge-only, so the layer plays the
//! bridge, with an extension of the person's own that must not load.

use sandbox_core::Driving;
use sandbox_core::driving::{
    FileToolsRefuse, Install, PersonContent, PersonEdit, PersonMcp, PersonPlace, Plays,
    PointAtModel, ToolNames, file,
};
use serde_json::json;

/// What `cli-sandbox contract --agents` needs of this CLI.
pub const DRIVING: Driving = Driving {
    tools: ToolNames {
        shell: "bash",
        read: Some("read"),
        write: "write",
        edit: "edit",
    },
    file_tools_refuse: FileToolsRefuse::Nothing,
    install: Some(Install {
        npm_package: "@mariozechner/pi-coding-agent",
        version: "0.73.1",
    }),
    stand_in_keys: &[],
    point_at_model,
    person_mcp,
    plays: Plays {
        own_tools: false,
        bridge_in_full_mode: false,
    },
};

fn point_at_model(base_url: &str) -> PointAtModel {
    let models = json!({"providers": {"scripted": {
        "baseUrl": format!("{base_url}/v1"),
        "api": "openai-completions",
        "apiKey": "scripted-model-not-a-key",
        "models": [{"id": "scripted"}],
    }}});
    let settings = json!({
        "defaultProvider": "scripted",
        "defaultModel": "scripted",
        // No retries: a failing model fails the launch at once.
        "retry": {"enabled": false, "provider": {"maxRetries": 0}},
    });
    PointAtModel {
        files: vec![
            file(".pi/agent/models.json", models.to_string()),
            file(".pi/agent/settings.json", settings.to_string()),
        ],
        vars: Vec::new(),
    }
}

/// An extension of the person's own, which a bridge-only launch must not load.
fn person_mcp(mcp: &PersonMcp<'_>) -> Vec<PersonEdit> {
    vec![PersonEdit {
        place: PersonPlace::Home,
        path: ".pi/agent/extensions/mine.js".to_owned(),
        content: PersonContent::Whole(format!(
            "require(\"node:fs\").writeFileSync({:?}, \"loaded\");\nmodule.exports = function () {{}};\n",
            mcp.started_marker
        )),
    }]
}
