//! `cli-sandbox explain`: one verdict of the policy and the rule that decided.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use launch::disk::RealDisk;
use launch::{Error, Settings};
use sandbox_core::{Op, Verdict, canonicalize_lenient};
use serde::Serialize;

use crate::{ChatArgs, OpArg};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    chat: ChatArgs,
    /// The operation.
    #[arg(long, value_enum)]
    op: OpArg,
    /// The path (absolute; resolved through symlinks as the kernel would).
    path: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Answer {
    op: Op,
    path: PathBuf,
    #[serde(flatten)]
    verdict: Verdict,
}

pub fn run(settings: &Settings, args: &ExplainArgs) -> Result<ExitCode, Error> {
    let ctx = crate::load(settings)?;
    let policy = args.chat.policy(&ctx)?;
    let path = canonicalize_lenient("path", &args.path, &RealDisk)?;
    let op = Op::from(args.op);
    let answer = Answer {
        op,
        verdict: policy.decide(op, &path),
        path,
    };
    if args.json {
        crate::print_json(&answer)?;
    } else {
        let rule = serde_json::to_value(&answer.verdict.rule).unwrap_or_default();
        outln!(
            "{} {} {}: {} by rule `{}`{}",
            if answer.verdict.allowed {
                "allowed"
            } else {
                "refused"
            },
            op.as_str(),
            answer.path.display(),
            if answer.verdict.allowed {
                "allowed"
            } else {
                "refused"
            },
            answer.verdict.rule.name(),
            match rule.as_object() {
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
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
