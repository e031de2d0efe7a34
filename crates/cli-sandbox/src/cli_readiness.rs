//! `cli-sandbox doctor --cli NAME`: whether that CLI is installed, logged in and past its
//! first-run screens for this person, and what to run once, unconfined, to get there. The
//! knowledge of each CLI is its adapter's ([`sandbox_core::CliAdapter::readiness`]); this file
//! only asks it, with the person's files and environment as they are.

use std::path::Path;

use clap::Args;
use launch::{Context, Error, registry};
use sandbox_core::{PersonFiles, Readiness, Ready};
use serde::Serialize;

/// `doctor`'s flags.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON (docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Also say whether this CLI is installed, logged in and past its first-run screens for
    /// this person, and what to run once to get there; repeat it for more.
    #[arg(long = "cli", value_name = "NAME")]
    pub clis: Vec<String>,
}

/// One CLI, for this person.
#[derive(Debug, Serialize)]
pub struct CliReadiness {
    /// Its name for `--cli`.
    pub name: &'static str,
    /// The program: the configured path, the one found on PATH, or its bare name.
    pub program: String,
    /// Whether it exists.
    pub installed: bool,
    /// What it needs of the person once, each checked.
    pub needs: Vec<Readiness>,
}

/// The person's own files, read as they are: `doctor` runs as the person, unconfined, and reads
/// only (nothing here is written, and nothing read is printed but the names of the files).
struct AsTheyAre;

impl PersonFiles for AsTheyAre {
    fn read(&self, path: &Path) -> std::io::Result<Option<String>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// Each CLI named, checked for the person whose home `ctx` has.
pub fn check(ctx: &Context, names: &[String]) -> Result<Vec<CliReadiness>, Error> {
    let is_set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    names
        .iter()
        .map(|name| {
            let adapter = registry::find(name).ok_or_else(|| Error::UnknownCli {
                name: name.clone(),
                known: registry::names().join(", "),
            })?;
            let (program, installed) = launch::wrap::find_program(ctx, adapter);
            let mut needs = Vec::new();
            if !installed {
                needs.push(Readiness::no(
                    "installed",
                    format!("`{}` is not on PATH", program.display()),
                    format!(
                        "install it, or name its program in the configuration ([cli.{}] program = \"/path\")",
                        adapter.name()
                    ),
                ));
            }
            needs.extend(adapter.readiness(&ctx.layout.home, &AsTheyAre, &is_set));
            Ok(CliReadiness {
                name: adapter.name(),
                program: program.display().to_string(),
                installed,
                needs,
            })
        })
        .collect()
}

/// The text form, after the machine's report.
pub fn print_text(clis: &[CliReadiness]) -> Result<(), crate::Error> {
    for cli in clis {
        outln!("{}:", cli.name);
        outln!(
            "  installed: {}",
            if cli.installed {
                format!("yes, {}", cli.program)
            } else {
                "NO".to_owned()
            }
        );
        for need in &cli.needs {
            if need.what == "installed" {
                outln!("      {}", need.found);
            } else {
                outln!("  {}: {} ({})", need.what, need.ready.as_str(), need.found);
            }
            if need.ready != Ready::Yes {
                outln!("      to do once: {}", need.remedy);
            }
        }
    }
    Ok(())
}
