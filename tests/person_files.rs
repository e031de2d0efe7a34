//! The pre-trust writer against real files: preservation, refusal, idempotence, permissions,
//! a hundred writers at once (threads and separate processes), including writers killed with
//! SIGKILL in the middle of a write, and a stand-in for the person's CLI that rewrites the file
//! between our read and our rename (it takes no lock of ours).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use launch::person_files::{Applied, PersonFileError, PersonFilesGuard, RealPersonFiles};
use sandbox_core::{EditAction, FileEdit, FileFormat, PersonFiles};
use serde_json::{Value, json};

/// The guard of a person whose home holds every temporary folder these tests write in (the
/// system's temporary folder), with AgentWorks' data in a folder of that home kept for this
/// user's runs of these tests (the launcher's locks are written there). The attacks on the guard
/// are in `person_files_attacks.rs`.
fn guard() -> PersonFilesGuard {
    static GUARD: std::sync::OnceLock<PersonFilesGuard> = std::sync::OnceLock::new();
    GUARD
        .get_or_init(|| {
            let home = fs::canonicalize(std::env::temp_dir()).unwrap();
            // SAFETY: geteuid has no failure and touches no memory.
            let uid = unsafe { libc::geteuid() };
            let state_root = home.join(format!("cli-sandbox-person-files-tests-{uid}"));
            fs::create_dir_all(&state_root).unwrap();
            let ctx = launch::Context::load(&launch::Settings {
                state_root: Some(state_root),
                home: Some(home),
                ..Default::default()
            })
            .unwrap();
            PersonFilesGuard::for_policy(&ctx.policy("person-files-tests", &[]).unwrap())
        })
        .clone()
}

fn apply(edit: &FileEdit) -> Result<Applied, PersonFileError> {
    guard().apply(edit)
}

fn edit(file: &Path, format: FileFormat, keys: &[&str], value: Value) -> FileEdit {
    FileEdit {
        file: file.to_owned(),
        format,
        keys: keys.iter().map(|k| k.to_string()).collect(),
        value,
        create_mode: 0o600,
        action: EditAction::Set,
    }
}

fn codex_trust(file: &Path, project: &str) -> FileEdit {
    edit(
        file,
        FileFormat::Toml,
        &["projects", project, "trust_level"],
        json!("trusted"),
    )
}

fn claude_trust(file: &Path, project: &str) -> FileEdit {
    edit(
        file,
        FileFormat::Json,
        &["projects", project, "hasTrustDialogAccepted"],
        json!(true),
    )
}

const PERSON_TOML: &str = r#"# My Codex settings -- hand written, keep the comments!
model    =   "gpt-5"     # the one I like
approval_policy = 'on-request'

  [profiles.fast]   # indented header
  model = "mini"

[projects."/home/me/code"]
trust_level = "trusted"

[mcp_servers.mine]
command = "/usr/local/bin/my-server"
args = [ "--flag",
         "value" ,  # odd layout
]
env = { TOKEN = "abc", "odd key" = 1.50 }

[[some.array]]
x = 1
"#;

#[test]
fn toml_keeps_every_other_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    fs::write(&file, PERSON_TOML).unwrap();

    assert_eq!(
        apply(&codex_trust(&file, "/rt/chat 1")).unwrap(),
        Applied::Written
    );
    let after = fs::read_to_string(&file).unwrap();
    // The new table sits beside the person's other project; nothing else moves.
    let expected = PERSON_TOML.replace(
        "[projects.\"/home/me/code\"]\ntrust_level = \"trusted\"\n",
        "[projects.\"/home/me/code\"]\ntrust_level = \"trusted\"\n\n[projects.\"/rt/chat 1\"]\ntrust_level = \"trusted\"\n",
    );
    assert_eq!(after, expected);
}

#[test]
fn toml_created_from_nothing_and_from_a_file_without_projects() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new/.codex/config.toml");
    apply(&codex_trust(&file, "/rt/a")).unwrap();
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "[projects.\"/rt/a\"]\ntrust_level = \"trusted\"\n"
    );

    let other = dir.path().join("other.toml");
    fs::write(&other, "model = \"x\" # note\n").unwrap();
    apply(&codex_trust(&other, "/rt/a")).unwrap();
    assert_eq!(
        fs::read_to_string(&other).unwrap(),
        "model = \"x\" # note\n\n[projects.\"/rt/a\"]\ntrust_level = \"trusted\"\n"
    );
}

#[test]
fn toml_inline_and_changed_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    fs::write(
        &file,
        "projects = { \"/a\" = { trust_level = \"trusted\" } }\n",
    )
    .unwrap();
    apply(&codex_trust(&file, "/b")).unwrap();
    let doc: toml_edit::DocumentMut = fs::read_to_string(&file).unwrap().parse().unwrap();
    assert_eq!(
        doc["projects"]["/a"]["trust_level"].as_str(),
        Some("trusted")
    );
    assert_eq!(
        doc["projects"]["/b"]["trust_level"].as_str(),
        Some("trusted")
    );

    // A different value is replaced in place, its trailing comment kept.
    fs::write(
        &file,
        "[projects.\"/b\"]\ntrust_level = \"untrusted\"  # said no once\nother = 1\n",
    )
    .unwrap();
    assert_eq!(apply(&codex_trust(&file, "/b")).unwrap(), Applied::Written);
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "[projects.\"/b\"]\ntrust_level = \"trusted\"  # said no once\nother = 1\n"
    );
}

#[test]
fn json_keeps_every_key_and_value_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".claude.json");
    let person = r#"{
    "zeta": 1,
    "numStartups": 42,
    "oauthAccount": {"emailAddress": "me@example.com", "x": [1, 2.5, -3e-7, null, true]},
    "projects": {
        "/home/me/code": {"allowedTools": [], "hasTrustDialogAccepted": true, "history": [{"display": "héllo \u2603 \"q\""}]}
    },
    "alpha": {"nested": {"deep": "yes"}},
    "empty": {}
}
"#;
    fs::write(&file, person).unwrap();
    apply(&claude_trust(&file, "/rt/chat")).unwrap();
    let after_text = fs::read_to_string(&file).unwrap();
    let mut after: Value = serde_json::from_str(&after_text).unwrap();
    let before: Value = serde_json::from_str(person).unwrap();

    assert_eq!(
        after["projects"]["/rt/chat"]["hasTrustDialogAccepted"],
        json!(true)
    );
    after["projects"]
        .as_object_mut()
        .unwrap()
        .remove("/rt/chat");
    assert_eq!(after, before, "every other key and value is kept");
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&after), keys(&before), "top-level order is kept");
    assert!(
        after_text.starts_with("{\n    \"zeta\": 1,"),
        "the 4-space indentation is reused:\n{after_text}"
    );
    assert!(after_text.ends_with("}\n"));
}

#[test]
fn json_add_to_list_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    fs::write(
        &file,
        "{\"trustedWorkspaces\": [\"/p\"], \"theme\": \"dark\"}",
    )
    .unwrap();
    let add = FileEdit {
        action: EditAction::AddToList,
        ..edit(
            &file,
            FileFormat::Json,
            &["trustedWorkspaces"],
            json!("/rt/x"),
        )
    };
    assert_eq!(apply(&add).unwrap(), Applied::Written);
    assert_eq!(apply(&add).unwrap(), Applied::AlreadyThere);
    let after: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        after,
        json!({"trustedWorkspaces": ["/p", "/rt/x"], "theme": "dark"})
    );

    let toml = dir.path().join("l.toml");
    fs::write(&toml, "list = [\"a\"] # c\n").unwrap();
    let add = FileEdit {
        action: EditAction::AddToList,
        ..edit(&toml, FileFormat::Toml, &["list"], json!("b"))
    };
    assert_eq!(apply(&add).unwrap(), Applied::Written);
    assert_eq!(apply(&add).unwrap(), Applied::AlreadyThere);
    assert_eq!(
        fs::read_to_string(&toml).unwrap(),
        "list = [\"a\", \"b\"] # c\n"
    );
}

fn assert_untouched(file: &Path, before: &[u8], ino: u64) {
    assert_eq!(
        fs::read(file).unwrap(),
        before,
        "the file is byte for byte what it was"
    );
    assert_eq!(
        fs::metadata(file).unwrap().ino(),
        ino,
        "the file was not replaced"
    );
    let litter: Vec<_> = fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(litter.is_empty(), "no temporary file left: {litter:?}");
}

#[test]
fn unparsable_toml_is_untouched_and_the_error_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    let broken = b"model = \"o3\"\n[projects\ntrust_level = \"trusted\"\n";
    fs::write(&file, broken).unwrap();
    let ino = fs::metadata(&file).unwrap().ino();
    let err = apply(&codex_trust(&file, "/rt/a")).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, PersonFileError::Unparsable { line: 2, .. }),
        "{err:?}"
    );
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("line 2"), "{message}");
    assert_untouched(&file, broken, ino);
}

#[test]
fn unparsable_json_is_untouched_and_the_error_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".claude.json");
    let broken = b"{\n  \"a\": 1,\n  \"b\": ,\n}\n";
    fs::write(&file, broken).unwrap();
    let ino = fs::metadata(&file).unwrap().ino();
    let err = apply(&claude_trust(&file, "/rt/a")).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, PersonFileError::Unparsable { line: 3, .. }),
        "{err:?}"
    );
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("line 3"), "{message}");
    assert_untouched(&file, broken, ino);
}

#[test]
fn a_key_holding_something_else_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    let text = b"projects = \"not a table\"\n";
    fs::write(&file, text).unwrap();
    let ino = fs::metadata(&file).unwrap().ino();
    let err = apply(&codex_trust(&file, "/rt/a")).unwrap_err();
    assert!(
        err.to_string().contains("`projects` holds a string"),
        "{err}"
    );
    assert_untouched(&file, text, ino);

    let json = dir.path().join("c.json");
    let text = b"[1, 2]";
    fs::write(&json, text).unwrap();
    let ino = fs::metadata(&json).unwrap().ino();
    let err = apply(&claude_trust(&json, "/rt/a")).unwrap_err();
    assert!(err.to_string().contains("the whole document"), "{err}");
    assert_untouched(&json, text, ino);
}

#[test]
fn bad_edits_are_refused() {
    let rel = edit(Path::new("rel/c.toml"), FileFormat::Toml, &["a"], json!(1));
    assert!(
        apply(&rel)
            .unwrap_err()
            .to_string()
            .contains("not absolute")
    );
    let dir = tempfile::tempdir().unwrap();
    let none = edit(&dir.path().join("c.toml"), FileFormat::Toml, &[], json!(1));
    assert!(
        apply(&none)
            .unwrap_err()
            .to_string()
            .contains("names no key")
    );
    let null = edit(
        &dir.path().join("c.toml"),
        FileFormat::Toml,
        &["a"],
        Value::Null,
    );
    assert!(apply(&null).unwrap_err().to_string().contains("no null"));
}

#[test]
fn idempotent_no_write_when_the_entry_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    fs::write(&file, PERSON_TOML).unwrap();
    assert_eq!(
        apply(&codex_trust(&file, "/home/me/code")).unwrap(),
        Applied::AlreadyThere
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), PERSON_TOML);

    apply(&codex_trust(&file, "/rt/new")).unwrap();
    let meta = fs::metadata(&file).unwrap();
    assert_eq!(
        apply(&codex_trust(&file, "/rt/new")).unwrap(),
        Applied::AlreadyThere
    );
    let again = fs::metadata(&file).unwrap();
    assert_eq!(
        (meta.ino(), meta.mtime_nsec()),
        (again.ino(), again.mtime_nsec())
    );
}

#[test]
fn permissions_are_kept_never_widened_and_created_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [0o600, 0o640, 0o400, 0o644] {
        let file = dir.path().join(format!("c{mode:o}.json"));
        fs::write(&file, "{}").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
        // A person's file of mode 0644 edited with create_mode 0600 stays 0644: we keep, we do
        // not decide; a 0400 file stays read-only.
        apply(&claude_trust(&file, "/rt/a")).unwrap();
        assert_eq!(
            fs::metadata(&file).unwrap().mode() & 0o7777,
            mode,
            "{}",
            file.display()
        );
    }
    let created = dir.path().join("fresh/.codex/config.toml");
    apply(&codex_trust(&created, "/rt/a")).unwrap();
    assert_eq!(fs::metadata(&created).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        fs::metadata(created.parent().unwrap()).unwrap().mode() & 0o777,
        0o700
    );
    let wide = FileEdit {
        create_mode: 0o644,
        ..claude_trust(&dir.path().join("w/x.json"), "/rt/a")
    };
    apply(&wide).unwrap();
    assert_eq!(
        fs::metadata(dir.path().join("w/x.json")).unwrap().mode() & 0o777,
        0o644
    );
    assert_eq!(
        fs::metadata(dir.path().join("w")).unwrap().mode() & 0o777,
        0o755
    );
}

#[test]
fn a_symlinked_settings_file_is_edited_where_it_points() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles/claude.json");
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::write(&real, "{\"a\": 1}\n").unwrap();
    let link = dir.path().join(".claude.json");
    symlink(&real, &link).unwrap();
    apply(&claude_trust(&link, "/rt/a")).unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let after: Value = serde_json::from_str(&fs::read_to_string(&real).unwrap()).unwrap();
    assert_eq!(
        after["projects"]["/rt/a"]["hasTrustDialogAccepted"],
        json!(true)
    );
    assert_eq!(after["a"], json!(1));
}

#[test]
fn real_person_files_reads_and_reports_missing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x");
    let person = RealPersonFiles::with_guard(guard());
    assert_eq!(person.read(&file).unwrap(), None);
    fs::write(&file, "hi").unwrap();
    assert_eq!(person.read(&file).unwrap().as_deref(), Some("hi"));
    assert!(person.var("PATH").is_some());
}

// ---------- many writers ----------

const WRITERS: usize = 100;

fn check_all_entries(toml: &Path, json_file: &Path) {
    let toml_text = fs::read_to_string(toml).unwrap();
    let mut without_ours = toml_text.clone();
    for i in 0..WRITERS {
        without_ours = without_ours.replace(
            &format!("\n[projects.\"/rt/chat-{i}\"]\ntrust_level = \"trusted\"\n"),
            "",
        );
    }
    assert_eq!(
        without_ours, PERSON_TOML,
        "the person's TOML is intact, byte for byte"
    );
    let doc: toml_edit::DocumentMut = toml_text.parse().unwrap();
    let json: Value = serde_json::from_str(&fs::read_to_string(json_file).unwrap()).unwrap();
    assert_eq!(json["person"], json!({"keep": [1, 2, 3]}));
    for i in 0..WRITERS {
        let project = format!("/rt/chat-{i}");
        assert_eq!(
            doc["projects"][project.as_str()]["trust_level"].as_str(),
            Some("trusted"),
            "entry {i} lost"
        );
        assert_eq!(
            json["projects"][&project]["hasTrustDialogAccepted"],
            json!(true),
            "entry {i} lost"
        );
    }
    let count = doc["projects"].as_table_like().unwrap().len();
    assert_eq!(count, WRITERS + 1);
}

fn person_home() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join(".codex/config.toml");
    fs::create_dir_all(toml.parent().unwrap()).unwrap();
    fs::write(&toml, PERSON_TOML).unwrap();
    let json_file = dir.path().join(".claude.json");
    fs::write(&json_file, "{\"person\": {\"keep\": [1, 2, 3]}}\n").unwrap();
    (dir, toml, json_file)
}

#[test]
fn a_hundred_threads_lose_no_entry() {
    let (_dir, toml, json_file) = person_home();
    std::thread::scope(|s| {
        for i in 0..WRITERS {
            let (toml, json_file) = (&toml, &json_file);
            s.spawn(move || {
                let project = format!("/rt/chat-{i}");
                apply(&codex_trust(toml, &project)).unwrap();
                apply(&claude_trust(json_file, &project)).unwrap();
            });
        }
    });
    check_all_entries(&toml, &json_file);
}

/// Not a test on its own: the body of the child processes the tests below start by running this
/// test binary again. Without the variables it does nothing.
#[test]
fn child_writer() {
    let Ok(mode) = std::env::var("PERSON_FILES_CHILD") else {
        return;
    };
    let toml = PathBuf::from(std::env::var("PERSON_FILES_TOML").unwrap());
    let json_file = PathBuf::from(std::env::var("PERSON_FILES_JSON").unwrap());
    let id = std::env::var("PERSON_FILES_ID").unwrap();
    match mode.as_str() {
        "once" => {
            let project = format!("/rt/chat-{id}");
            apply(&codex_trust(&toml, &project)).unwrap();
            apply(&claude_trust(&json_file, &project)).unwrap();
        }
        "adapters" => {
            // One launch of chat `id` for every registered CLI, all on the same home.
            let home = PathBuf::from(std::env::var("PERSON_FILES_HOME").unwrap());
            for edit in every_adapters_edits(&home, &id) {
                apply(&edit).unwrap();
            }
        }
        "big" => {
            // One write of a large file, which the parent kills while it is under way.
            let flip = edit(&toml, FileFormat::Toml, &["flip", "n"], json!(id));
            apply(&flip).unwrap();
        }
        "forever" => {
            // Rewrites both files in a loop until killed, alternating a value so every apply
            // really writes.
            for n in 0u64.. {
                let flip = edit(&toml, FileFormat::Toml, &["flip", "n"], json!(n));
                apply(&flip).unwrap();
                let flip = edit(&json_file, FileFormat::Json, &["flip", "n"], json!(n));
                apply(&flip).unwrap();
            }
        }
        other => panic!("unknown PERSON_FILES_CHILD {other}"),
    }
}

fn child(mode: &str, toml: &Path, json_file: &Path, id: usize) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_writer", "--test-threads=1", "--quiet"])
        .env("PERSON_FILES_CHILD", mode)
        .env("PERSON_FILES_TOML", toml)
        .env("PERSON_FILES_JSON", json_file)
        .env("PERSON_FILES_ID", id.to_string())
        .stdout(std::process::Stdio::null());
    cmd
}

#[test]
fn a_hundred_processes_lose_no_entry() {
    let (_dir, toml, json_file) = person_home();
    let children: Vec<_> = (0..WRITERS)
        .map(|i| child("once", &toml, &json_file, i).spawn().unwrap())
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    check_all_entries(&toml, &json_file);
}

/// `text` without the `[flip]` table the "big" and "forever" writers add, or `None` when it has
/// none. `toml_edit` puts a new table after the last table of the person's own document order,
/// which in these big files is in the middle (after `[[some.array]]`, before the projects
/// appended to it), not at the end.
fn without_flip(text: &str) -> Option<String> {
    let start = text.find("\n[flip]\nn = ")?;
    let value = start + "\n[flip]\n".len();
    let end = value + text[value..].find('\n')? + 1;
    Some(format!("{}{}", &text[..start], &text[end..]))
}

#[test]
fn a_writer_killed_mid_write_leaves_the_old_or_the_new_file() {
    let (dir, toml, json_file) = person_home();
    // A big file makes each write long enough for the kill to land inside one.
    let mut big = String::from(PERSON_TOML);
    for i in 0..5_000 {
        big.push_str(&format!(
            "\n[projects.\"/person/project-{i}\"]\ntrust_level = \"trusted\"\n"
        ));
    }
    fs::write(&toml, &big).unwrap();

    let mut writes_seen = 0;
    for round in 0..10u64 {
        let mut c = child("forever", &toml, &json_file, 0).spawn().unwrap();
        // Wait for the writer's first write (a debug build parses a big file slowly), then let
        // it run a varying while so the kill lands at different points of a write.
        let started = Instant::now();
        while !fs::read_to_string(&json_file).unwrap().contains("flip") {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the writer never wrote"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(7 + round * 31));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();

        let text = fs::read_to_string(&toml).unwrap();
        // Every byte of the person's file is there; ours is the one `[flip]` table.
        let without_ours = without_flip(&text).unwrap_or_else(|| text.clone());
        assert_eq!(
            without_ours, big,
            "round {round}: the person's content is intact"
        );
        let doc: toml_edit::DocumentMut = text.parse().expect("never a torn TOML file");
        if doc.get("flip").is_some() {
            writes_seen += 1;
        }
        let json: Value = serde_json::from_str(&fs::read_to_string(&json_file).unwrap())
            .expect("never a torn JSON file");
        assert_eq!(json["person"], json!({"keep": [1, 2, 3]}));
        assert!(json["flip"]["n"].is_u64());
        fs::write(&json_file, "{\"person\": {\"keep\": [1, 2, 3]}}\n").unwrap();
    }
    assert!(
        writes_seen > 0,
        "the writer got to write the TOML file at least once"
    );
    // Killed writers may leave a temporary file beside; it never replaces the real one.
    let strays = fs::read_dir(dir.path().join(".codex"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".cli-sandbox.tmp")
        })
        .count();
    eprintln!("stray temporary files after 10 kills: {strays}");
}

// ---------- every adapter's pre-trust, a hundred launches at once ----------

/// What the registered adapters write before launching chat `id` on `home` (the CLIs' own
/// settings in the home, and the runtime's files), computed by the adapters themselves.
fn every_adapters_edits(home: &Path, id: &str) -> Vec<FileEdit> {
    use sandbox_core::{LaunchRequest, McpServer, Mode, Shape};
    let workdir = home.join(format!("runtimes/chat-{id}"));
    let request = LaunchRequest {
        shape: Shape::Structured,
        mode: Mode::Full,
        workdir,
        home: home.to_owned(),
        grants: Vec::new(),
        mcp_bridge: Some(McpServer {
            name: "agentworks".into(),
            command: "/opt/bridge".into(),
            args: Vec::new(),
            env: Default::default(),
        }),
        prompt: None,
        model: None,
        extra_args: Vec::new(),
        confined: true,
        nonce: String::new(),
    };
    let mut edits = Vec::new();
    let person = RealPersonFiles::with_guard(guard());
    for adapter in launch::registry::ADAPTERS {
        if let Ok(launch) = adapter.launch(&request, &person) {
            edits.extend(launch.pre_trust);
        }
    }
    edits
}

/// The person's own settings, before any launch: every CLI file the adapters touch in the home,
/// holding something of the person's.
fn seed_person_settings(home: &Path) -> Vec<(PathBuf, String)> {
    let files = [
        (".codex/config.toml", PERSON_TOML.to_owned()),
        (
            ".claude.json",
            "{\n  \"numStartups\": 7,\n  \"projects\": {\"/home/me/code\": {\"allowedTools\": []}}\n}\n".to_owned(),
        ),
        (
            ".gemini/trustedFolders.json",
            "{\n  \"/home/me/code\": \"TRUST_FOLDER\"\n}\n".to_owned(),
        ),
    ];
    files
        .into_iter()
        .map(|(name, text)| {
            let path = home.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, &text).unwrap();
            (path, text)
        })
        .collect()
}

#[test]
fn a_hundred_launches_of_every_adapter_on_one_home_lose_no_entry() {
    let dir = tempfile::tempdir().unwrap();
    let home = fs::canonicalize(dir.path()).unwrap();
    let seeded = seed_person_settings(&home);
    let touched: std::collections::BTreeSet<PathBuf> = every_adapters_edits(&home, "0")
        .into_iter()
        .map(|e| e.file)
        .filter(|f| f.starts_with(&home) && !f.starts_with(home.join("runtimes")))
        .collect();
    assert!(
        touched.len() >= 3,
        "the adapters edit few files in the home: {touched:?}"
    );
    let children: Vec<_> = (0..WRITERS)
        .map(|i| {
            let mut cmd = child("adapters", Path::new("-"), Path::new("-"), i);
            cmd.env("PERSON_FILES_HOME", &home);
            for var in contract::CLEARED_ENV {
                cmd.env_remove(var);
            }
            cmd.spawn().unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    // Every chat's entry of every adapter is there: writing it again changes nothing.
    for i in 0..WRITERS {
        for edit in every_adapters_edits(&home, &i.to_string()) {
            assert_eq!(
                apply(&edit).unwrap(),
                Applied::AlreadyThere,
                "chat {i}: the entry of {} at {:?} was lost",
                edit.file.display(),
                edit.keys
            );
        }
    }
    // The person's own content is all there: the TOML byte for byte outside our tables, the
    // JSON key for key.
    let toml = fs::read_to_string(&seeded[0].0).unwrap();
    let mut without_ours = toml.clone();
    for i in 0..WRITERS {
        let workdir = home.join(format!("runtimes/chat-{i}"));
        without_ours = without_ours.replace(
            &format!(
                "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                workdir.display()
            ),
            "",
        );
    }
    assert_eq!(
        without_ours, PERSON_TOML,
        "the person's TOML, byte for byte"
    );
    let claude: Value = serde_json::from_str(&fs::read_to_string(&seeded[1].0).unwrap()).unwrap();
    assert_eq!(claude["numStartups"], json!(7));
    assert_eq!(
        claude["projects"]["/home/me/code"],
        json!({"allowedTools": []})
    );
    let gemini: Value = serde_json::from_str(&fs::read_to_string(&seeded[2].0).unwrap()).unwrap();
    assert_eq!(gemini["/home/me/code"], json!("TRUST_FOLDER"));
    // Gemini: the one entry for the runtimes folder, which serves every chat (Codex is trusted
    // per launch: its file keeps the person's bytes and nothing else).
    assert_eq!(
        gemini[home.join("runtimes").to_str().unwrap()],
        json!("TRUST_FOLDER")
    );
    assert_eq!(gemini.as_object().unwrap().len(), 2);
}

/// Once flaky (its "write finished first" branch compared the start of the file while
/// the edit lands in its middle). The proof of the fix is 200 runs in a row, by hand:
///
/// ```sh
/// cargo test -p cli-sandbox --test person_files --no-run
/// for i in $(seq 200); do cargo test -q -p cli-sandbox --test person_files -- --exact \
///     a_writer_killed_while_its_temporary_file_exists_leaves_the_old_file || break; done
/// ```
#[test]
fn a_writer_killed_while_its_temporary_file_exists_leaves_the_old_file() {
    // Deterministic where the test above is random: the kill lands only once the writer's
    // temporary file exists (the write has begun) and is checked to be still there afterwards
    // (the rename had not happened). A large file keeps that window open for a while.
    let (dir, toml, json_file) = person_home();
    let folder = dir.path().join(".codex");
    let mut big = String::from(PERSON_TOML);
    for i in 0..40_000 {
        big.push_str(&format!(
            "\n[projects.\"/person/project-{i}\"]\ntrust_level = \"trusted\" # kept\n"
        ));
    }
    fs::write(&toml, &big).unwrap();
    let temporaries = || -> Vec<PathBuf> {
        fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".cli-sandbox.tmp"))
            .collect()
    };
    let mut mid_write = 0;
    // Until three kills have landed mid-write (how many rounds that takes depends on the load).
    // Round 0 lets the writer finish, so that the branch for a finished write runs every time,
    // not only when a kill happens to come after the rename.
    for round in 0..40 {
        if mid_write >= 3 {
            break;
        }
        let before = temporaries();
        let mut c = child("big", &toml, &json_file, round).spawn().unwrap();
        let started = Instant::now();
        let landed = round > 0
            && loop {
                if temporaries().len() > before.len() {
                    c.kill().unwrap(); // SIGKILL, with the temporary file there
                    break true;
                }
                if c.try_wait().unwrap().is_some() || started.elapsed() > Duration::from_secs(60) {
                    break false;
                }
            };
        c.wait().unwrap();
        let text = fs::read_to_string(&toml).unwrap();
        let doc: toml_edit::DocumentMut = text.parse().expect("never a torn TOML file");
        if landed && temporaries().len() > before.len() {
            // Killed before the rename: the old file, byte for byte.
            mid_write += 1;
            assert_eq!(text, big, "round {round}: not the old file");
        } else {
            // The write finished first: the new file, the person's bytes all there, ours
            // being the one `[flip]` table wherever `toml_edit` put it.
            assert!(
                doc.get("flip").is_some(),
                "round {round}: neither old nor new"
            );
            assert_eq!(
                without_flip(&text).as_deref(),
                Some(big.as_str()),
                "round {round}: the person's bytes changed"
            );
            fs::write(&toml, &big).unwrap();
        }
    }
    assert!(
        mid_write >= 3,
        "only {mid_write} of 40 kills landed while the write was under way"
    );
}

#[test]
fn a_launch_stops_on_a_settings_file_it_cannot_parse_naming_the_file_and_the_line() {
    // Through the binary, as a launch: `run` with a stand-in program (`/bin/true`, configured
    // as the CLI) so that nothing but the pre-trust step can stop it.
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let home = base.join("home");
    let broken: &[(&str, &str, &[u8], usize)] = &[
        (
            "claude",
            ".claude.json",
            b"{\n  \"a\": 1,\n  \"b\": ,\n}\n",
            3,
        ),
        (
            "gemini",
            ".gemini/trustedFolders.json",
            b"{\n  \"/p\": \"TRUST_FOLDER\",,\n}\n",
            2,
        ),
        (
            "codex",
            ".codex/config.toml",
            b"model = \"o3\"\n\n[projects\n",
            3,
        ),
    ];
    let config = base.join("cli-sandbox.toml");
    // The state root must exist: a missing one is refused before pre-trust.
    fs::create_dir_all(base.join("state")).unwrap();
    let mut text = String::new();
    for (cli, ..) in broken {
        text.push_str(&format!("[cli.{cli}]\nprogram = \"/bin/true\"\n"));
    }
    fs::write(&config, text).unwrap();
    for (cli, name, content, line) in broken {
        let file = home.join(name);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, content).unwrap();
        let ino = fs::metadata(&file).unwrap().ino();
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("cli-sandbox"));
        cmd.arg("--config")
            .arg(&config)
            .arg("--state-root")
            .arg(base.join("state"))
            .args(["run", "--cli", cli, "--chat", "c1", "--shape", "structured"])
            .env("HOME", &home)
            .stdin(std::process::Stdio::null());
        for var in contract::CLEARED_ENV {
            cmd.env_remove(var);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cli}: the launch went on: {stderr}");
        assert!(
            stderr.contains(&file.display().to_string()),
            "{cli}: {stderr}"
        );
        assert!(stderr.contains(&format!("line {line}")), "{cli}: {stderr}");
        assert!(stderr.contains("left untouched"), "{cli}: {stderr}");
        assert_untouched(&file, content, ino);
    }
}

// ---------- a CLI writing the same file, without our lock ----------

/// How the person's CLI stand-in writes its file: as the CLIs do (a new file renamed over it),
/// or in place, keeping the size and the modification time (the hardest to see).
#[derive(Debug, Clone, Copy)]
enum CliWrite {
    Renamed,
    InPlace,
}

/// The stand-in for the person's CLI: rewrites `file` with `text` the way `how` says, taking
/// no lock of ours.
fn cli_writes(file: &Path, text: &str, how: CliWrite) {
    match how {
        CliWrite::Renamed => {
            let tmp = file.with_extension("cli-tmp");
            fs::write(&tmp, text).unwrap();
            fs::rename(&tmp, file).unwrap();
        }
        CliWrite::InPlace => {
            use std::io::Write;
            let before = fs::metadata(file).unwrap();
            assert_eq!(before.len(), text.len() as u64, "in place keeps the size");
            let mut f = fs::OpenOptions::new().write(true).open(file).unwrap();
            f.write_all(text.as_bytes()).unwrap();
            f.set_modified(before.modified().unwrap()).unwrap();
        }
    }
}

/// The person's text with one byte changed where the CLI stand-in writes (same length).
fn cli_version(text: &str, format: FileFormat) -> String {
    match format {
        FileFormat::Toml => text.replacen("the one I like", "the one I LIKE", 1),
        FileFormat::Json => text.replacen("\"keep\"", "\"KEEP\"", 1),
    }
}

/// An edit of `format` whose read is followed, once, by the CLI stand-in's write: the edit is
/// made again on the CLI's version, so the file holds both (and the person's other bytes).
#[test]
fn a_cli_rewriting_the_file_between_our_read_and_rename_loses_nothing() {
    for how in [CliWrite::Renamed, CliWrite::InPlace] {
        for format in [FileFormat::Toml, FileFormat::Json] {
            let (_dir, toml, json_file) = person_home();
            let (file, our_edit) = match format {
                FileFormat::Toml => (toml.clone(), codex_trust(&toml, "/rt/chat-cas")),
                FileFormat::Json => (json_file.clone(), claude_trust(&json_file, "/rt/chat-cas")),
            };
            let theirs = cli_version(&fs::read_to_string(&file).unwrap(), format);
            let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let hook = {
                let (calls, theirs, file) = (calls.clone(), theirs.clone(), file.clone());
                move |at: &Path| {
                    assert_eq!(at, fs::canonicalize(&file).unwrap());
                    if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                        cli_writes(&file, &theirs, how);
                    }
                }
            };
            let applied = guard().before_swap(hook).apply(&our_edit).unwrap();
            assert_eq!(applied, Applied::Written);
            assert_eq!(
                calls.load(std::sync::atomic::Ordering::SeqCst),
                2,
                "{how:?} {format:?}: the edit was made again once"
            );
            let text = fs::read_to_string(&file).unwrap();
            assert!(
                text.contains("the one I LIKE") || text.contains("\"KEEP\""),
                "{how:?} {format:?}: the CLI's write was lost:\n{text}"
            );
            assert!(
                text.contains("/rt/chat-cas"),
                "{how:?} {format:?}: ours lost:\n{text}"
            );
            // Control: without the check, the same write of the CLI's would be lost; the
            // stand-in really wrote between our read and our rename.
            assert_ne!(theirs, fs::read_to_string(&file).unwrap());
        }
    }
}

/// The CLI stand-in creates the file between our read (nothing there) and our rename: our
/// rename never replaces it (`RENAME_NOREPLACE`); the edit is made on the CLI's file.
#[test]
fn a_cli_creating_the_file_between_our_read_and_rename_keeps_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trustedFolders.json");
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hook = {
        let (calls, file) = (calls.clone(), file.clone());
        move |_: &Path| {
            if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                cli_writes(
                    &file,
                    "{\n  \"/home/me/code\": \"TRUST_FOLDER\"\n}",
                    CliWrite::Renamed,
                );
            }
        }
    };
    let ours = edit(
        &file,
        FileFormat::Json,
        &["/rt/chat-cas"],
        json!("TRUST_FOLDER"),
    );
    assert_eq!(
        guard().before_swap(hook).apply(&ours).unwrap(),
        Applied::Written
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    let value: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        value,
        json!({"/home/me/code": "TRUST_FOLDER", "/rt/chat-cas": "TRUST_FOLDER"})
    );
}

/// A writer that rewrites the file after every read of ours (a chat can be one: the home is
/// open to it) does not fail the launch: after eight rounds the edit of the latest version read
/// replaces the file, keeping every write but the one made in the last instant; no temporary
/// file of ours is left.
#[test]
fn a_writer_rewriting_the_file_after_every_read_does_not_fail_the_edit() {
    let (dir, toml, _) = person_home();
    let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hook = {
        let (n, toml) = (n.clone(), toml.clone());
        move |_: &Path| {
            let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            cli_writes(
                &toml,
                &format!("{PERSON_TOML}\n[cli]\nn = {i}\n"),
                CliWrite::Renamed,
            );
        }
    };
    let applied = guard()
        .before_swap(hook)
        .apply(&codex_trust(&toml, "/rt/chat-cas"))
        .unwrap();
    assert_eq!(applied, Applied::Written);
    let rounds = n.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        rounds, 9,
        "eight rounds that saw the rewrite, then the one that replaced it"
    );
    let text = fs::read_to_string(&toml).unwrap();
    assert!(text.contains("/rt/chat-cas"), "{text}");
    // The version read in the last round (the writer's eighth write) is the one edited.
    assert!(text.contains("[cli]\nn = 7\n"), "{text}");
    let without_ours = text.replace(
        "[projects.\"/rt/chat-cas\"]\ntrust_level = \"trusted\"\n\n",
        "",
    );
    assert!(without_ours.starts_with(PERSON_TOML), "{text}");
    let left: Vec<_> = fs::read_dir(toml.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("config.toml")],
        "{left:?}"
    );
    drop(dir);
}

/// The launcher's own lock is what launches wait for: held (here by the test, standing in for
/// another launch), an edit waits for it, then stops naming the file and the lock, and writes
/// nothing; let go, the same edit is made and the lock file is removed with the lock.
#[test]
fn a_launch_waits_for_the_launchers_lock_and_for_nothing_else() {
    use rustix::fs::{FlockOperation, Mode, OFlags, flock, open};
    let (_dir, toml, _) = person_home();
    let before = fs::read(&toml).unwrap();
    let guard = guard().with_lock_wait(Duration::from_millis(200));
    let lock_file = guard.lock_file(&fs::canonicalize(&toml).unwrap());
    fs::create_dir_all(lock_file.parent().unwrap()).unwrap();
    let held = open(
        &lock_file,
        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .unwrap();
    flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
    let err = guard
        .apply(&codex_trust(&toml, "/rt/chat-lock"))
        .unwrap_err();
    assert!(matches!(err, PersonFileError::Locked { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&lock_file.display().to_string()),
        "{message}"
    );
    assert!(message.contains("config.toml"), "{message}");
    assert_eq!(fs::read(&toml).unwrap(), before, "written without the lock");
    // The control: let go, the same edit goes through, and the lock file goes with the lock.
    drop(held);
    assert_eq!(
        guard.apply(&codex_trust(&toml, "/rt/chat-lock")).unwrap(),
        Applied::Written
    );
    assert!(fs::read_to_string(&toml).unwrap().contains("/rt/chat-lock"));
    assert!(!lock_file.exists(), "{} was left", lock_file.display());
}
