//! Criterion benchmarks of pre-trust: what every launch pays per settings file it reads or
//! edits, through the guard (`openat2` and the walk) and, as the baseline, the same steps done
//! on path strings as before the guard (`symlink_metadata`, create the folder, open and lock it,
//! `read_to_string`, `metadata`).
//!
//! Run: `cargo bench -p launch --bench person_files` (about half a minute on 2 cores).
//!
//! Linux only, as criterion is a dev-dependency on Linux only: it compiles C for its target (a
//! stack-shifting helper), which `cargo check --target aarch64-apple-darwin` cannot do without a
//! Mac's C compiler, and the workspace type-checks for macOS in CI.

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the criterion benchmarks run on Linux only");
}

#[cfg(target_os = "linux")]
criterion::criterion_main!(linux::benches);

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;
    use std::hint::black_box;
    use std::path::Path;
    use std::time::Duration;

    use criterion::{Criterion, criterion_group};
    use launch::person_files::{Applied, PersonFilesGuard, Resolution};
    use sandbox_core::{EditAction, FileEdit, FileFormat};

    fn claude_trust(file: &Path, value: bool) -> FileEdit {
        FileEdit {
            file: file.to_owned(),
            format: FileFormat::Json,
            keys: ["projects", "/rt/chat-1", "hasTrustDialogAccepted"]
                .map(str::to_owned)
                .to_vec(),
            value: value.into(),
            create_mode: 0o600,
            action: EditAction::Set,
        }
    }

    /// The steps the launcher took before the guard, for an entry already there.
    fn on_path_strings(file: &Path) -> bool {
        use std::os::unix::fs::DirBuilderExt;
        let _ = fs::symlink_metadata(file).unwrap();
        let folder = file.parent().unwrap();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .unwrap();
        let handle = fs::File::open(folder).unwrap();
        handle.lock().unwrap();
        let text = fs::read_to_string(file).unwrap();
        let _ = fs::metadata(file).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        doc["projects"]["/rt/chat-1"]["hasTrustDialogAccepted"] == true
    }

    fn pre_trust(c: &mut Criterion) {
        let dir = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(dir.path()).unwrap().join("home");
        fs::create_dir_all(&home).unwrap();
        let ctx = launch::Context::load(&launch::Settings {
            home: Some(home.clone()),
            state_root: Some(home.join(".local/share/AgentWorks")),
            ..Default::default()
        })
        .unwrap();
        let policy = ctx.policy("chat-1", &[]).unwrap();
        let file = home.join(".claude.json");
        fs::write(&file, "{\"numStartups\": 7, \"projects\": {}}\n").unwrap();
        let config = home.join(".codex/config.toml");
        fs::create_dir_all(config.parent().unwrap()).unwrap();
        fs::write(
            &config,
            "model = \"o3\"\n[mcp_servers.mine]\ncommand = \"x\"\n",
        )
        .unwrap();

        let mut group = c.benchmark_group("pre_trust");
        for (name, resolution) in [
            ("openat2", Resolution::Fastest),
            ("walk", Resolution::WalkOnly),
        ] {
            let guard = PersonFilesGuard::for_policy(&policy).resolving_by(resolution);
            guard.apply(&claude_trust(&file, true)).unwrap();
            group.bench_function(format!("apply_already_there/{name}"), |b| {
                b.iter(|| {
                    let applied = guard.apply(black_box(&claude_trust(&file, true))).unwrap();
                    assert_eq!(applied, Applied::AlreadyThere);
                })
            });
            group.bench_function(format!("read/{name}"), |b| {
                b.iter(|| guard.read(black_box(&config)).unwrap().unwrap())
            });
        }
        group.bench_function("apply_already_there/path_strings_baseline", |b| {
            b.iter(|| assert!(on_path_strings(black_box(&file))))
        });
        group.bench_function("read/path_strings_baseline", |b| {
            b.iter(|| fs::read_to_string(black_box(&config)).unwrap())
        });
        // A real write: temporary file, fsync, rename, fsync of the folder (the disk decides).
        let guard = PersonFilesGuard::for_policy(&policy);
        let mut flip = false;
        group.bench_function("apply_written/openat2", |b| {
            b.iter(|| {
                flip = !flip;
                guard.apply(&claude_trust(&file, flip)).unwrap()
            })
        });
        group.finish();
    }

    criterion_group! {
        name = benches;
        config = Criterion::default()
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .sample_size(50);
        targets = pre_trust
    }
}
