//! What a chat may know of itself, in its environment: its id, its grants and where the launch
//! read its configuration and layout, so that `cli-sandbox explain PATH` run inside the chat (by
//! the CLI's shell tool, say) answers for this chat without being told. Each value is something
//! the chat can already see: its id is its working folder's name, its grants are folders it
//! uses, the layout's places are the covers in its `/proc/self/mountinfo`, and the
//! configuration file is the person's (explain inside the chat reads it only if the chat can).
//! Nothing here names another chat or lists a protected root.
//!
//! A chat can change these variables for its own processes; that changes only what `explain`
//! answers to that chat (it never weakens the sandbox, which was applied before the program
//! started, from the plan).

use std::collections::BTreeMap;

use sandbox_core::Policy;

use crate::Context;

/// The chat's id ([`sandbox_core::ChatId`]).
pub const CHAT: &str = "CLI_SANDBOX_CHAT";
/// The chat's grants, a JSON array of `PATH:ro` / `PATH:rw` (canonical paths; a path may hold
/// any character a grant may, so no separator would do).
pub const GRANTS: &str = "CLI_SANDBOX_GRANTS";
/// The configuration file the launch read (absent: the launch read none).
pub const CONFIG: &str = "CLI_SANDBOX_CONFIG";
/// The state root the launch used (canonical).
pub const STATE_ROOT: &str = "CLI_SANDBOX_STATE_ROOT";
/// The workspace-docs folder the launch used (canonical).
pub const WORKSPACE_DOCS: &str = "CLI_SANDBOX_WORKSPACE_DOCS";

/// The variables a launch sets for the chat's program (every launch path: `run`, the library's
/// [`crate::PreparedLaunch`], `step`). A path that is not UTF-8 is left out (the variables are
/// text); `explain` then needs the flag it would have given.
pub fn variables(ctx: &Context, policy: &Policy) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert(CHAT.to_owned(), policy.chat().as_str().to_owned());
    let grants: Vec<String> = policy
        .grants()
        .iter()
        .filter_map(|g| {
            g.path
                .to_str()
                .map(|p| format!("{p}:{}", g.access.as_str()))
        })
        .collect();
    out.insert(
        GRANTS.to_owned(),
        serde_json::to_string(&grants).unwrap_or_else(|_| "[]".to_owned()),
    );
    for (name, path) in [
        (CONFIG, ctx.config_file.as_deref()),
        (STATE_ROOT, Some(ctx.layout.state_root.as_path())),
        (WORKSPACE_DOCS, Some(ctx.layout.workspace_docs.as_path())),
    ] {
        if let Some(text) = path.and_then(|p| p.to_str()) {
            out.insert(name.to_owned(), text.to_owned());
        }
    }
    out
}

/// The grants [`GRANTS`] holds, read back (`None`: not set or not a JSON array of text).
pub fn grants_from(value: &str) -> Option<Vec<String>> {
    serde_json::from_str(value).ok()
}
