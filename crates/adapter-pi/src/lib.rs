//! How cli-sandbox launches the Pi coding agent (`pi`): one [`CliAdapter`], [`Pi`].
//!
//! What it is not: it starts nothing and writes nothing. It says which arguments and
//! environment a launch needs; the launcher applies them.
//!
//! Pi runs bridge-only, everywhere ([`Mode::BridgeOnly`] is its one mode), still wrapped by our
//! sandbox where there is one. Flags CHECKED against the real `@mariozechner/pi-coding-agent`
//! 0.73.1 (npm, Linux x86_64, a scratch `HOME`; `tests/real_clis.rs` checks them again):
//!
//! | what | how | checked |
//! |---|---|---|
//! | own sandbox off | nothing: Pi has no sandbox, no approval prompt, no trust screen | yes |
//! | built-in tools off | `--no-builtin-tools` | parses |
//! | MCP isolation | `--no-extensions`: Pi has no MCP of its own, only extensions may add it | parses |
//! | no start-up downloads | `--offline` and `PI_OFFLINE=1` | parses |
//! | headless | `-p --mode json`, stdin `/dev/null` (`-p` merges a piped stdin and waits for EOF) | parses |
//!
//! Decisions where the facts were silent, and what is out of reach:
//!
//! - **The bridge is not given.** Pi reaches an MCP server only through an extension file passed
//!   with `-e <file>`; a [`sandbox_core::McpServer`] is a command line, not such a file, and an
//!   adapter writes no file. So a Pi launch has no tool at all until the launcher ships a bridge
//!   extension and passes `-e` in `extra_args` (explicit `-e` paths still load under
//!   `--no-extensions`).
//! - Grants are not passed: Pi has no `--add-dir`, and with no tools it reads nothing itself.
//! - Pi's parser has no `--`: a message starting with `-` is taken for an option and one
//!   starting with `@` for a file to attach (checked). Such a prompt gets one leading space, which
//!   Pi keeps as text (checked).

use sandbox_core::{
    AdapterError, ArgvParts, CliAdapter, EnvChanges, LaunchRequest, Mode, PersonFiles, PreTrust,
    Shape,
};

/// The Pi coding agent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pi;

impl CliAdapter for Pi {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn program(&self) -> &'static str {
        "pi"
    }

    fn modes(&self) -> &'static [Mode] {
        &[Mode::BridgeOnly]
    }

    fn own_sandbox_off(&self, _req: &LaunchRequest) -> Vec<String> {
        Vec::new()
    }

    fn pre_trust(
        &self,
        _req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<PreTrust, AdapterError> {
        Ok(PreTrust::default())
    }

    fn mcp_isolation(
        &self,
        _req: &LaunchRequest,
        _person: &dyn PersonFiles,
    ) -> Result<Vec<String>, AdapterError> {
        Ok(vec!["--no-extensions".to_owned()])
    }

    fn env(&self, _req: &LaunchRequest) -> EnvChanges {
        let mut env = EnvChanges::default();
        env.set.insert("PI_OFFLINE".to_owned(), "1".to_owned());
        env
    }

    fn argv(&self, req: &LaunchRequest, parts: ArgvParts) -> Vec<String> {
        let mut args = Vec::new();
        if req.shape == Shape::Structured {
            args.extend(["-p", "--mode", "json"].map(str::to_owned));
        }
        args.push("--no-builtin-tools".to_owned());
        args.extend(parts.own_sandbox_off);
        args.extend(parts.pre_trust);
        args.extend(parts.mcp);
        args.push("--offline".to_owned());
        if let Some(model) = &req.model {
            args.push("--model".to_owned());
            args.push(model.clone());
        }
        args.extend(req.extra_args.iter().cloned());
        if let Some(prompt) = &req.prompt {
            args.push(if prompt.starts_with(['-', '@']) {
                format!(" {prompt}")
            } else {
                prompt.clone()
            });
        }
        args
    }
}
