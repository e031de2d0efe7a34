//! Serves a script by hand, to drive a real CLI while looking at what it sends:
//! `cargo run -p scripted-model --example serve -- SECONDS STEP...` where a step is
//! `shell:CMD`, `read:PATH`, `write:PATH=TEXT`, `edit:PATH=OLD=>NEW` or `mcp:TOOL`. Prints the
//! port, serves for SECONDS, then prints every request and tool result.

use scripted_model::{Script, ScriptedModel, Step};

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    let steps = args
        .map(|a| {
            let (kind, rest) = a.split_once(':').expect("KIND:ARG");
            match kind {
                "shell" => Step::Shell {
                    command: rest.into(),
                },
                "read" => Step::Read { path: rest.into() },
                "write" => {
                    let (p, t) = rest.split_once('=').expect("PATH=TEXT");
                    Step::Write {
                        path: p.into(),
                        content: t.into(),
                    }
                }
                "edit" => {
                    let (p, t) = rest.split_once('=').expect("PATH=OLD=>NEW");
                    let (old, new) = t.split_once("=>").expect("OLD=>NEW");
                    Step::Edit {
                        path: p.into(),
                        old: old.into(),
                        new: new.into(),
                    }
                }
                "mcp" => Step::Mcp {
                    tool: rest.into(),
                    arguments: serde_json::json!({}),
                },
                _ => panic!("unknown step kind {kind}"),
            }
        })
        .collect();
    let model = ScriptedModel::start(Script {
        steps,
        closing: "done".into(),
        fail_with: None,
    })
    .expect("start");
    println!("{}", model.base_url());
    std::thread::sleep(std::time::Duration::from_secs(seconds));
    let log = model.log();
    for r in &log.requests {
        println!(
            "{} {} {:?} offered={:?} played={:?}",
            r.method, r.uri, r.dialect, r.offered, r.played
        );
    }
    for r in &log.results {
        println!("result {}: {:?} {:?}", r.step, r.is_error, r.text);
    }
    for u in &log.unplayable {
        println!("unplayable {}: {}", u.step, u.reason);
    }
    println!("finished: {}", log.finished);
    if let Ok(path) = std::env::var("DUMP") {
        let bodies: Vec<_> = log.requests.iter().map(|r| r.body.clone()).collect();
        std::fs::write(path, serde_json::to_string_pretty(&bodies).unwrap()).unwrap();
    }
}
