//! `cli-sandbox explain`: the verdicts of the policy for a path and the rules that decided.
//!
//! Inside a chat (a launch sets `CLI_SANDBOX_CHAT` and the rest of `launch::chat_env` in its
//! environment) `--chat` and `--grant` may be left out: the chat's own are taken from there, with
//! the configuration and layout the launch used, and the answer says so. It runs as the chat's
//! own program, under its sandbox: it reads only the configuration file (when the chat can), and
//! the paths it resolves are resolved in the chat's view, so it tells the chat nothing it could
//! not see: not another chat's name, not a protected root's listing.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use launch::chat_env;
use launch::{Error, GrantRequest, Settings};
use sandbox_core::{Op, Rule, Verdict, canonicalize_lenient};
use sandbox_linux::disk::RealDisk;
use serde::Serialize;

use crate::OpArg;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The chat's id; inside a chat, its own (`CLI_SANDBOX_CHAT`) when left out.
    #[arg(long, value_name = "ID")]
    chat: Option<String>,
    /// A folder this chat may use inside a protected root: PATH, PATH:ro or PATH:rw (read-write
    /// when no access is given); repeat it for more. A folder whose name holds `:` is given
    /// with its access written out (`DIR/wf:1:rw`). Never split at commas: a path may hold one.
    /// Inside a chat, with --chat left out, its own grants (`CLI_SANDBOX_GRANTS`).
    #[arg(long = "grant", value_name = "PATH[:ro|:rw]", value_parser = crate::utf8_grant())]
    grants: Vec<String>,
    /// One operation; without it, every operation and the layer the path is in (open,
    /// closed, granted, refused, blocked).
    #[arg(long, value_enum)]
    op: Option<OpArg>,
    /// The path (absolute; resolved through symlinks as the kernel would).
    path: PathBuf,
    /// Print JSON (docs/json.md).
    #[arg(long)]
    json: bool,
}

/// The answer for one operation (`--op`).
#[derive(Debug, Serialize)]
struct Answer {
    op: Op,
    path: PathBuf,
    #[serde(flatten)]
    verdict: Verdict,
}

/// The answer for every operation.
#[derive(Debug, Serialize)]
struct Layered {
    path: PathBuf,
    /// open, closed, granted, refused or blocked (`layer_of`).
    layer: &'static str,
    /// Where the chat and its grants came from: `flags` or `environment` (inside a chat).
    chat_from: &'static str,
    ops: Vec<OpAnswer>,
}

#[derive(Debug, Serialize)]
struct OpAnswer {
    op: Op,
    #[serde(flatten)]
    verdict: Verdict,
}

const OPS: [Op; 5] = [Op::Read, Op::List, Op::Write, Op::Exec, Op::Move];

/// The chat, its grants and the settings to load with: from the flags, or inside a chat from
/// the variables its launch set.
fn chat_and_settings(
    settings: &Settings,
    args: &ExplainArgs,
) -> Result<(String, Vec<String>, Settings, &'static str), Error> {
    if let Some(chat) = &args.chat {
        return Ok((chat.clone(), args.grants.clone(), settings.clone(), "flags"));
    }
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let Some(chat) = var(chat_env::CHAT) else {
        return Err(Error::BadInput(format!(
            "explain needs the chat: give --chat ID (and its --grant flags), or run it inside a \
             chat, whose launch sets {}",
            chat_env::CHAT
        )));
    };
    if !args.grants.is_empty() {
        return Err(Error::BadInput(format!(
            "--grant without --chat: inside a chat its own grants are taken from {}; give \
             --chat too to ask about other grants",
            chat_env::GRANTS
        )));
    }
    let grants = match var(chat_env::GRANTS) {
        None => Vec::new(),
        Some(text) => chat_env::grants_from(&text).ok_or_else(|| {
            Error::BadInput(format!(
                "{} is not a JSON array of grants (`[\"PATH:rw\"]`): the launch sets it; give \
                 --chat and --grant instead",
                chat_env::GRANTS
            ))
        })?,
    };
    let mut settings = settings.clone();
    let path = |name: &str| var(name).map(PathBuf::from);
    settings.config = settings.config.or_else(|| path(chat_env::CONFIG));
    settings.state_root = settings.state_root.or_else(|| path(chat_env::STATE_ROOT));
    settings.workspace_docs = settings
        .workspace_docs
        .or_else(|| path(chat_env::WORKSPACE_DOCS));
    Ok((chat, grants, settings, "environment"))
}

/// The layer a path is in, from the rules that decide its operations: blocked or refused when
/// any operation is refused by such a rule, closed when one is closed, granted when the chat's
/// grant or runtime decides, open otherwise (read-only places of the open layer, such as the
/// CLIs' settings or git's files in a grant, are open to reading).
fn layer_of(verdicts: &[OpAnswer]) -> &'static str {
    let any = |f: fn(&Rule) -> bool| verdicts.iter().any(|v| f(&v.verdict.rule));
    if any(|r| matches!(r, Rule::Blocked { .. })) {
        "blocked"
    } else if any(|r| matches!(r, Rule::Refused { .. })) {
        "refused"
    } else if any(|r| matches!(r, Rule::Closed { .. })) {
        "closed"
    } else if any(|r| matches!(r, Rule::Granted { .. } | Rule::Runtime { .. })) {
        "granted"
    } else {
        "open"
    }
}

/// A rule in words: its name and its fields (`rule (root: /x)`).
fn rule_text(rule: &Rule) -> String {
    let value = serde_json::to_value(rule).unwrap_or_default();
    let fields = match value.as_object() {
        Some(o) if o.len() > 1 => format!(
            " ({})",
            o.iter()
                .filter(|(k, _)| *k != "rule")
                .map(|(k, v)| format!(
                    "{k}: {}",
                    v.as_str().map(str::to_owned).unwrap_or(v.to_string())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => String::new(),
    };
    format!("`{}`{fields}", rule.name())
}

/// The path resolved as the kernel would. Inside a chat a covered folder cannot be looked into
/// (a refused folder's stand-in has mode 0: `Permission denied`): then the deepest ancestor that
/// can be resolved is, and the rest is taken as written, which is what the policy decides on
/// (everything beneath a refused or closed entry is refused or closed with it).
fn resolve(path: &std::path::Path) -> Result<PathBuf, Error> {
    let first = match canonicalize_lenient("path", path, &RealDisk) {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    let mut rest = Vec::new();
    let mut at = path;
    while let (Some(parent), Some(name)) = (at.parent(), at.file_name()) {
        rest.push(name);
        if let Ok(mut p) = canonicalize_lenient("path", parent, &RealDisk) {
            p.extend(rest.iter().rev());
            return Ok(p);
        }
        at = parent;
    }
    Err(first.into())
}

pub fn run(settings: &Settings, args: &ExplainArgs) -> Result<ExitCode, Error> {
    let (chat, grants, settings, chat_from) = chat_and_settings(settings, args)?;
    let ctx = crate::load(&settings)?;
    let grants = grants
        .iter()
        .map(|g| GrantRequest::parse(g).map_err(Error::from))
        .collect::<Result<Vec<_>, _>>()?;
    let policy = ctx.policy(&chat, &grants)?;
    let path = resolve(&args.path)?;
    let Some(op) = args.op.map(Op::from) else {
        let ops: Vec<OpAnswer> = OPS
            .iter()
            .map(|&op| OpAnswer {
                op,
                verdict: policy.decide(op, &path),
            })
            .collect();
        let answer = Layered {
            layer: layer_of(&ops),
            path,
            chat_from,
            ops,
        };
        if args.json {
            crate::print_json(&answer)?;
        } else {
            outln!(
                "{}: {} for chat {chat}{}",
                answer.path.display(),
                answer.layer,
                if chat_from == "environment" {
                    " (this chat, from its environment)"
                } else {
                    ""
                }
            );
            for a in &answer.ops {
                outln!(
                    "  {:<5} {} by rule {}",
                    a.op.as_str(),
                    if a.verdict.allowed {
                        "allowed"
                    } else {
                        "refused"
                    },
                    rule_text(&a.verdict.rule)
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    let answer = Answer {
        op,
        verdict: policy.decide(op, &path),
        path,
    };
    if args.json {
        crate::print_json(&answer)?;
    } else {
        let word = if answer.verdict.allowed {
            "allowed"
        } else {
            "refused"
        };
        outln!(
            "{word} {} {}: {word} by rule {}",
            op.as_str(),
            answer.path.display(),
            rule_text(&answer.verdict.rule)
        );
    }
    Ok(ExitCode::SUCCESS)
}
