//! Layouts at scale for the benchmarks: the demo layout of `launch::demo` plus thousands of
//! workflows in workspace-docs and thousands of chat runtimes, and the grants a chat gets.
//!
//! Shared by `compile.rs` (criterion) and `launch.rs` (the table). Not a test fixture: nothing
//! here checks a verdict.

#![allow(dead_code)] // each bench uses its own part

use std::io;
use std::path::{Path, PathBuf};

use launch::demo::Demo;
use launch::{Context, Settings};
use sandbox_core::{GrantRequest, Os, Policy};

/// One point of the size matrix the issue asks for.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub name: &'static str,
    pub workflows: usize,
    pub chats: usize,
    pub grants: usize,
}

/// The sizes, one axis at a time from the base, then everything at its largest.
pub const SIZES: [Size; 8] = [
    Size {
        name: "base",
        workflows: 10,
        chats: 100,
        grants: 1,
    },
    Size {
        name: "1,000 workflows",
        workflows: 1_000,
        chats: 100,
        grants: 1,
    },
    Size {
        name: "10,000 workflows",
        workflows: 10_000,
        chats: 100,
        grants: 1,
    },
    Size {
        name: "10,000 chats",
        workflows: 10,
        chats: 10_000,
        grants: 1,
    },
    Size {
        name: "10,000 workflows and chats",
        workflows: 10_000,
        chats: 10_000,
        grants: 1,
    },
    Size {
        name: "100 grants",
        workflows: 1_000,
        chats: 100,
        grants: 100,
    },
    Size {
        name: "1,000 grants",
        workflows: 1_000,
        chats: 100,
        grants: 1_000,
    },
    Size {
        name: "largest",
        workflows: 10_000,
        chats: 10_000,
        grants: 1_000,
    },
];

/// A demo layout grown to `workflows` workflows and `chats` chat runtimes. Every extra workflow
/// looks like the granted one (a document, `planning/plan.json`, a raw database), so that a
/// grant of it costs what a real one costs (two refused entries to cover).
#[derive(Debug)]
pub struct ScaledLayout {
    pub demo: Demo,
    /// Every workflow, this chat's own first.
    pub workflows: Vec<PathBuf>,
}

impl ScaledLayout {
    pub fn create(root: &Path, workflows: usize, chats: usize) -> io::Result<ScaledLayout> {
        let demo = Demo::create(root)?;
        let mut all = vec![demo.granted.clone(), demo.other_workflow.clone()];
        let workflows_dir = demo.workspace_docs.join("workflows");
        for i in all.len()..workflows {
            let wf = workflows_dir.join(format!("wf-{i:05}"));
            std::fs::create_dir_all(wf.join("planning"))?;
            std::fs::write(wf.join("doc.md"), "a document\n")?;
            std::fs::write(wf.join("planning/plan.json"), "{}\n")?;
            std::fs::write(wf.join("workflow.sqlite"), "raw\n")?;
            all.push(wf);
        }
        let runtimes = demo
            .runtime
            .parent()
            .expect("a runtime has a parent")
            .to_owned();
        for i in 2..chats {
            let runtime = runtimes.join(format!("chat-{i:05}"));
            std::fs::create_dir_all(&runtime)?;
            std::fs::write(runtime.join("notes.txt"), "a chat's notes\n")?;
        }
        Ok(ScaledLayout {
            demo,
            workflows: all,
        })
    }

    /// `--grant` values for `n` grants: this chat's workflow read-write, then other workflows
    /// read-only (attached workflows).
    pub fn grant_args(&self, n: usize) -> Vec<String> {
        assert!(
            n <= self.workflows.len(),
            "{n} grants need as many workflows; the layout has {}",
            self.workflows.len()
        );
        self.workflows
            .iter()
            .take(n)
            .enumerate()
            .map(|(i, wf)| {
                let access = if i == 0 { "rw" } else { "ro" };
                format!("{}:{access}", wf.display())
            })
            .collect()
    }

    pub fn grant_requests(&self, n: usize) -> Vec<GrantRequest> {
        self.grant_args(n)
            .iter()
            .map(|g| GrantRequest::parse(g).unwrap())
            .collect()
    }

    pub fn settings(&self) -> Settings {
        self.demo.settings()
    }

    /// The context as the launcher loads it, for the OS a policy is built for.
    pub fn context(&self, os: Os) -> Context {
        Context::load_for(&self.settings(), os).expect("the bench layout loads")
    }

    pub fn policy(&self, os: Os, grants: usize) -> Policy {
        self.context(os)
            .policy(&self.demo.chat, &self.grant_requests(grants))
            .expect("the bench policy builds")
    }
}

/// The layouts the sizes need, built once each: `(workflows, chats)` to layout.
#[derive(Debug)]
pub struct Layouts {
    dir: tempfile::TempDir,
    built: Vec<((usize, usize), ScaledLayout)>,
}

impl Layouts {
    /// Builds one layout per distinct `(workflows, chats)` of `sizes`, under `parent`.
    pub fn create(parent: &Path, sizes: &[Size]) -> io::Result<Layouts> {
        std::fs::create_dir_all(parent)?;
        let dir = tempfile::Builder::new()
            .prefix("cli-sandbox-bench-")
            .tempdir_in(parent)?;
        let mut built: Vec<((usize, usize), ScaledLayout)> = Vec::new();
        for size in sizes {
            let key = (size.workflows, size.chats);
            if built.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let root = dir
                .path()
                .join(format!("w{}-c{}", size.workflows, size.chats));
            built.push((
                key,
                ScaledLayout::create(&root, size.workflows, size.chats)?,
            ));
        }
        Ok(Layouts { dir, built })
    }

    pub fn for_size(&self, size: &Size) -> &ScaledLayout {
        let key = (size.workflows, size.chats);
        self.built
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, l)| l)
            .expect("a layout was built for every size")
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Leaves the layouts on disk when dropped (to profile a launch by hand afterwards).
    pub fn keep(&mut self) {
        self.dir.disable_cleanup(true);
    }
}

/// Where the benches build their layouts: the target's scratch folder (not `/tmp`, where some
/// CLIs refuse to keep their state), or `CLI_SANDBOX_BENCH_DIR`.
pub fn scratch_dir() -> PathBuf {
    std::env::var_os("CLI_SANDBOX_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
}
