//! `cli-sandbox adapters`: the registered CLIs, their program and modes.

use std::process::ExitCode;

use launch::{Error, Settings, registry};
use serde::Serialize;

#[derive(Debug, Serialize)]
struct Row {
    name: &'static str,
    program: String,
    found: bool,
    modes: Vec<&'static str>,
}

pub fn run(settings: &Settings, json: bool) -> Result<ExitCode, Error> {
    let ctx = crate::load(settings)?;
    let rows: Vec<Row> = registry::ADAPTERS
        .iter()
        .map(|a| {
            let (program, found) = launch::wrap::find_program(&ctx, *a);
            Row {
                name: a.name(),
                program: program.display().to_string(),
                found,
                modes: a.modes().iter().map(|m| m.as_str()).collect(),
            }
        })
        .collect();
    if json {
        #[derive(Serialize)]
        struct Answer<'a> {
            adapters: &'a [Row],
        }
        crate::print_json(&Answer { adapters: &rows })?;
    } else {
        for r in &rows {
            outln!(
                "{:<8} {:<40} {}",
                r.name,
                if r.found {
                    r.program.clone()
                } else {
                    format!("{} (not found)", r.program)
                },
                r.modes.join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
