//! The end of a chat (`cli-sandbox end`, `launch::end_chat`) and the pruning of entries whose
//! runtime is gone, against real files: the person's files byte for byte what they were before
//! the chat's first launch (a property test over arbitrary content of the person's), only our
//! entries removed, never through a link into protected data, an unknown chat a no-op, and
//! `end` racing other chats' pre-trust losing nothing.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use launch::person_files::{Applied, RealPersonFiles};
use launch::{Context, Settings};
use proptest::prelude::*;
use sandbox_core::{LaunchRequest, Mode, Shape};
use serde_json::{Value, json};

/// A person's home with AgentWorks' data in it (the default layout's place under the home).
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    ctx: Context,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(dir.path()).unwrap();
        let state_root = home.join(".local/share/AgentWorks");
        fs::create_dir_all(&state_root).unwrap();
        let ctx = Context::load(&Settings {
            home: Some(home.clone()),
            state_root: Some(state_root),
            ..Default::default()
        })
        .unwrap();
        Home {
            _dir: dir,
            home,
            ctx,
        }
    }

    fn runtime(&self, chat: &str) -> PathBuf {
        self.ctx.layout.runtimes_dir().join(chat)
    }

    /// What `pre-trust` does for chat `chat` with every registered adapter: its runtime made,
    /// each adapter's entries written through the launcher's guard.
    fn pre_trust(&self, chat: &str) -> Vec<(PathBuf, Applied)> {
        let policy = self.ctx.policy(chat, &[]).unwrap();
        self.ctx.ensure_runtime(&policy).unwrap();
        let request = LaunchRequest {
            shape: Shape::Structured,
            mode: Mode::Full,
            workdir: policy.runtime().to_owned(),
            home: self.home.clone(),
            grants: Vec::new(),
            mcp_bridge: None,
            prompt: None,
            model: None,
            extra_args: Vec::new(),
            confined: true,
            nonce: String::new(),
        };
        let person = RealPersonFiles::for_policy(&policy);
        let mut done = Vec::new();
        for adapter in launch::registry::ADAPTERS {
            let pre_trust = adapter.pre_trust(&request, &person).unwrap();
            for edit in pre_trust.edits {
                let applied = person.guard().apply(&edit).unwrap();
                done.push((edit.file.clone(), applied));
            }
        }
        done
    }

    fn end(&self, chat: &str) -> launch::EndDone {
        launch::end_chat(&self.ctx, chat, true).unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.home.join(name)
    }
}

/// The person's files the adapters write pre-trust entries into.
const CLAUDE: &str = ".claude.json";
const CODEX: &str = ".codex/config.toml";
const GEMINI: &str = ".gemini/trustedFolders.json";
const AGY: &str = ".gemini/antigravity-cli/settings.json";

fn read(path: &Path) -> Option<Vec<u8>> {
    fs::read(path).ok()
}

#[test]
fn every_file_the_adapters_write_is_one_end_cleans() {
    let home = Home::new();
    let written: Vec<PathBuf> = home.pre_trust("c1").into_iter().map(|(f, _)| f).collect();
    for name in [CLAUDE, GEMINI, AGY] {
        assert!(
            written.contains(&home.path(name)),
            "{name} is written by pre-trust: {written:?}"
        );
    }
    // Codex is trusted per launch (`-c projects=...`): its file is only pruned, not made.
    assert!(!home.path(CODEX).exists());
    let done = home.end("c1");
    assert!(done.known && done.runtime_removed);
    for name in [CLAUDE, GEMINI, AGY] {
        let text = fs::read_to_string(home.path(name)).unwrap();
        assert!(!text.contains("c1"), "{name} after end: {text}");
    }
}

// ---------- byte for byte, whatever the person's files hold ----------

/// Arbitrary JSON of the person's: scalars, strings with escapes and non-ASCII, nested lists
/// and objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "[a-zA-Z0-9 é☃\"\\\\/\\n\\t]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"é]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// How the person's JSON is laid out: compact, two or four spaces, tabs.
fn layout(value: &Value, style: u8, newline: bool) -> String {
    let mut text = match style % 4 {
        0 => serde_json::to_string(value).unwrap(),
        n => {
            let indent: &[u8] = match n {
                1 => b"  ",
                2 => b"    ",
                _ => b"\t",
            };
            let mut out = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(indent);
            let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
            serde::Serialize::serialize(value, &mut ser).unwrap();
            String::from_utf8(out).unwrap()
        }
    };
    if newline {
        text.push('\n');
    }
    text
}

/// A person's JSON file: arbitrary members, and maybe `projects` (or the given list key) with
/// entries of the person's own (never empty: see `docs/ending-a-chat.md` for the empty one).
fn person_json(container: &'static str, list: bool) -> impl Strategy<Value = String> {
    (
        prop::collection::btree_map("[a-zA-Z_é]{1,8}", json_value(), 0..5),
        prop::option::of(prop::collection::vec("/home/me/[a-z]{1,6}", 1..3)),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(move |(members, own, style, newline)| {
            let mut doc: serde_json::Map<String, Value> = members
                .into_iter()
                .filter(|(k, _)| k != container)
                .collect();
            if let Some(own) = own {
                let value = if list {
                    Value::from(own)
                } else {
                    Value::Object(
                        own.into_iter()
                            .map(|p| (p, json!({"allowedTools": [], "x": 1})))
                            .collect(),
                    )
                };
                doc.insert(container.to_owned(), value);
            }
            layout(&Value::Object(doc), style, newline)
        })
}

/// A person's Codex config: keys, a table, maybe projects of the person's, comments and odd
/// spacing.
fn person_toml() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(("[a-z_]{1,8}", "[a-zA-Z0-9 ]{0,8}"), 0..4),
        prop::option::of(prop::collection::vec("/home/me/[a-z]{1,6}", 1..3)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(keys, own, comment, newline)| {
            let mut text = String::new();
            if comment {
                text.push_str("# the person's own words\n");
            }
            let mut seen = std::collections::BTreeSet::new();
            for (k, v) in keys {
                if k != "projects" && seen.insert(k.clone()) {
                    text.push_str(&format!("{k}   =  \"{v}\"\n"));
                }
            }
            text.push_str("\n[tui]\nnotifications = true # keep\n");
            for p in own
                .into_iter()
                .flatten()
                .collect::<std::collections::BTreeSet<_>>()
            {
                text.push_str(&format!(
                    "\n[projects.\"{p}\"]\ntrust_level = \"trusted\"\n"
                ));
            }
            if !newline {
                text.pop();
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// After `end`, every person's file is byte for byte what it was before the chat's first
    /// launch, with another chat's launch in between (its entries are kept).
    #[test]
    fn after_end_the_persons_files_are_byte_for_byte_as_before(
        claude in person_json("projects", false),
        gemini in person_json("/home/me/code", false),
        agy in person_json("trustedWorkspaces", true),
        codex in person_toml(),
        launches in 1usize..3,
    ) {
        let home = Home::new();
        let files = [(CLAUDE, claude), (GEMINI, gemini), (AGY, agy), (CODEX, codex)];
        for (name, text) in &files {
            let path = home.path(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
        }
        for _ in 0..launches {
            home.pre_trust("ends");
        }
        for (name, text) in &files {
            let now = fs::read_to_string(home.path(name)).unwrap();
            // Codex's file gets no entry (trust per launch); the others do.
            prop_assert_eq!(*name == CODEX, &now == text, "{} holds the chat's entry", name);
        }
        home.end("ends");
        for (name, text) in &files {
            let now = fs::read_to_string(home.path(name)).unwrap();
            prop_assert_eq!(&now, text, "{} after end", name);
        }
    }

    /// Two chats: the first ends, the second's entries stay; then the second ends, and the
    /// files are the person's again.
    #[test]
    fn ending_one_chat_keeps_the_others_entries(
        claude in person_json("projects", false),
        codex in person_toml(),
    ) {
        let home = Home::new();
        for (name, text) in [(CLAUDE, &claude), (CODEX, &codex)] {
            let path = home.path(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
        }
        home.pre_trust("a");
        home.pre_trust("b");
        home.end("a");
        // Claude: `b`'s own entry (Codex's file gets none).
        let runtime_b = home.runtime("b");
        let text = fs::read_to_string(home.path(CLAUDE)).unwrap();
        prop_assert!(text.contains(&format!("{}\"", runtime_b.display())), "{}", text);
        prop_assert!(!text.contains(home.runtime("a").to_str().unwrap()));
        home.end("b");
        prop_assert_eq!(fs::read_to_string(home.path(CLAUDE)).unwrap(), claude);
        prop_assert_eq!(fs::read_to_string(home.path(CODEX)).unwrap(), codex);
    }
}

// ---------- pruning ----------

#[test]
fn pruning_removes_only_our_entries_whose_runtime_is_gone() {
    let home = Home::new();
    let runtimes = home.ctx.layout.runtimes_dir();
    let gone = runtimes.join("crashed");
    let alive = runtimes.join("alive");
    let person = json!({
        "numStartups": 3,
        "projects": {
            "/home/me/code": {"hasTrustDialogAccepted": true},
            gone.to_str().unwrap(): {"hasTrustDialogAccepted": true},
            format!("{}/sub", gone.display()): {"x": 1},
            alive.to_str().unwrap(): {"hasTrustDialogAccepted": true},
            // Not below the runtimes folder: the person's, even if it looks like ours.
            format!("{}-x", runtimes.display()): {"y": 2},
        }
    });
    let claude = home.path(CLAUDE);
    fs::write(&claude, serde_json::to_string_pretty(&person).unwrap()).unwrap();
    fs::create_dir_all(&alive).unwrap();

    home.pre_trust("next");
    let after: Value = serde_json::from_str(&fs::read_to_string(&claude).unwrap()).unwrap();
    let projects = after["projects"].as_object().unwrap();
    let keys: Vec<&String> = projects.keys().collect();
    assert!(!projects.contains_key(gone.to_str().unwrap()), "{keys:?}");
    assert!(!projects.contains_key(&format!("{}/sub", gone.display())));
    for kept in [
        "/home/me/code".to_owned(),
        alive.display().to_string(),
        format!("{}-x", runtimes.display()),
        home.runtime("next").display().to_string(),
    ] {
        assert!(projects.contains_key(&kept), "{kept} kept: {keys:?}");
    }

    // Nothing stale and the entry there: the next pre-trust writes nothing.
    let ino = fs::metadata(&claude).unwrap();
    let again = home.pre_trust("next");
    assert!(
        again.iter().all(|(_, a)| *a == Applied::AlreadyThere),
        "{again:?}"
    );
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs::metadata(&claude).unwrap().ino(), ino.ino());
}

/// The one entry for the runtimes folder (Gemini's) is written by the first chat's
/// pre-trust only, stays while any runtime is there (an `end` that keeps its runtime, an `end`
/// of one chat of two), and goes with the last runtime, at `end --remove-runtime` or at the
/// pruning of the next file edit once the runtimes were removed by other means.
#[test]
fn the_entry_for_every_chat_goes_with_the_last_runtime() {
    let home = Home::new();
    let runtimes = home.ctx.layout.runtimes_dir();
    let key = format!("{}\"", runtimes.display());
    let shared = [GEMINI];
    let has = |name: &str| fs::read_to_string(home.path(name)).unwrap().contains(&key);

    home.pre_trust("one");
    let second = home.pre_trust("two");
    for name in shared {
        assert!(has(name), "{name}");
        // The second chat writes nothing in these files: the entry serves it.
        assert!(
            second
                .iter()
                .any(|(f, a)| *f == home.path(name) && *a == Applied::AlreadyThere),
            "{name}: {second:?}"
        );
    }
    // `end` without removing the runtime: the runtime is there, so is the entry.
    launch::end_chat(&home.ctx, "one", false).unwrap();
    assert!(shared.iter().all(|n| has(n)));
    home.end("one");
    assert!(shared.iter().all(|n| has(n)), "`two` still runs");
    home.end("two");
    for name in shared {
        assert!(
            !has(name),
            "{name} kept the entry after the last runtime went"
        );
    }

    // Runtimes removed by other means (a provider that removed its folders and crashed): the
    // next `end` of any chat prunes the entry.
    home.pre_trust("three");
    fs::remove_dir_all(home.runtime("three")).unwrap();
    assert!(shared.iter().all(|n| has(n)));
    let done = launch::end_chat(&home.ctx, "never-launched", true).unwrap();
    assert!(done.known, "entries were removed: {done:?}");
    for name in shared {
        assert!(!has(name), "{name}");
    }
}

// ---------- links, unknown chats, races ----------

/// A chat plants `~/.gemini/trustedFolders.json` and `~/.claude.json` as links into protected data (the
/// state root, where another chat's runtime lies): `end` refuses, reads and changes nothing
/// there. The control: the same files as plain files are cleaned.
#[test]
fn end_never_follows_a_link_into_protected_data() {
    let home = Home::new();
    home.pre_trust("victim");
    let protected = home.runtime("victim").join("secret.json");
    let secret = json!({"projects": {home.runtime("x").to_str().unwrap(): {"a": 1}}}).to_string();
    fs::write(&protected, &secret).unwrap();
    let protected_gemini = home.runtime("victim").join("secret-gemini.json");
    let secret_gemini = json!({home.runtime("x").to_str().unwrap(): "TRUST_FOLDER"}).to_string();
    fs::write(&protected_gemini, &secret_gemini).unwrap();

    // The control: the same `end` on plain files holding the same text cleans them.
    fs::write(home.path(CLAUDE), &secret).unwrap();
    fs::write(home.path(GEMINI), &secret_gemini).unwrap();
    let control = launch::end_chat(&home.ctx, "x", false).unwrap();
    for name in [CLAUDE, GEMINI] {
        assert!(
            control
                .files
                .iter()
                .any(|f| f.file == home.path(name) && f.removed),
            "{name}: {control:?}"
        );
    }

    fs::remove_file(home.path(CLAUDE)).unwrap();
    symlink(&protected, home.path(CLAUDE)).unwrap();
    fs::remove_file(home.path(GEMINI)).unwrap();
    symlink(&protected_gemini, home.path(GEMINI)).unwrap();
    let err = launch::end_chat(&home.ctx, "x", false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(".claude.json") && err.contains("trustedFolders.json"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&protected).unwrap(), secret);
    assert_eq!(
        fs::read_to_string(&protected_gemini).unwrap(),
        secret_gemini
    );
    for name in [CLAUDE, GEMINI] {
        assert!(fs::symlink_metadata(home.path(name)).unwrap().is_symlink());
    }
}

#[test]
fn end_of_an_unknown_chat_is_a_no_op_that_says_so() {
    let home = Home::new();
    home.pre_trust("known");
    let before: Vec<_> = [CLAUDE, CODEX, GEMINI, AGY]
        .iter()
        .map(|n| read(&home.path(n)))
        .collect();
    let done = launch::end_chat(&home.ctx, "never-launched", true).unwrap();
    assert!(!done.known && !done.runtime_removed, "{done:?}");
    assert!(done.files.iter().all(|f| !f.removed));
    let after: Vec<_> = [CLAUDE, CODEX, GEMINI, AGY]
        .iter()
        .map(|n| read(&home.path(n)))
        .collect();
    assert_eq!(before, after);
    // A bad id is bad input, as everywhere.
    assert!(launch::end_chat(&home.ctx, "../x", true).is_err());
}

#[test]
fn end_racing_other_chats_pre_trust_loses_nothing() {
    let home = Home::new();
    let ending: Vec<String> = (0..12).map(|i| format!("end-{i}")).collect();
    let starting: Vec<String> = (0..12).map(|i| format!("start-{i}")).collect();
    for chat in &ending {
        home.pre_trust(chat);
    }
    std::thread::scope(|s| {
        for (a, b) in ending.iter().zip(&starting) {
            let home = &home;
            s.spawn(move || home.end(a));
            s.spawn(move || home.pre_trust(b));
        }
    });
    // Gemini: the one entry for the runtimes folder (the last ended chat's `end` must not
    // remove it under a starting chat); Claude and Agy: an entry per chat.
    let runtimes = home.ctx.layout.runtimes_dir();
    let text = fs::read_to_string(home.path(GEMINI)).unwrap();
    assert!(
        text.contains(&format!("{}\"", runtimes.display())),
        "Gemini's file lost the entry for every chat: {text}"
    );
    for name in [CLAUDE, GEMINI, AGY] {
        let text = fs::read_to_string(home.path(name)).unwrap();
        for chat in &starting {
            let runtime = home.runtime(chat);
            assert!(
                ![CLAUDE, AGY].contains(&name) || text.contains(runtime.to_str().unwrap()),
                "{name} lost {chat}"
            );
        }
        for chat in &ending {
            let runtime = home.runtime(chat);
            assert!(
                !text.contains(&format!("{}\"", runtime.display())),
                "{name} kept {chat}"
            );
        }
    }
}

// ---------- the command line, as root and as an ordinary user ----------

/// `cli-sandbox pre-trust` then `cli-sandbox end --remove-runtime`, run by the binary as this
/// process's user (root on CI) and as an ordinary user in a home of its own: the person's files
/// byte for byte as before, the runtime and the plan files gone; `end` again says nothing was
/// found and exits 0.
#[test]
fn the_binary_ends_a_chat_as_root_and_as_an_ordinary_user() {
    use cli_sandbox_tests::users::{TestUser, command_as};
    let test = "the_binary_ends_a_chat_as_root_and_as_an_ordinary_user";
    let mut users = vec![None];
    // SAFETY: geteuid has no failure and touches no memory.
    if unsafe { libc::geteuid() } == 0
        && let Some(user) = TestUser::get(test)
    {
        users.push(Some(user));
    }
    for user in users {
        let dir = tempfile::tempdir().unwrap();
        let home = fs::canonicalize(dir.path()).unwrap();
        let state_root = home.join(".local/share/AgentWorks");
        fs::create_dir_all(&state_root).unwrap();
        let person = [
            (
                CODEX,
                "# mine\nmodel = \"o3\"\n\n[projects.\"/home/me/x\"]\ntrust_level = \"trusted\"\n",
            ),
            (
                CLAUDE,
                "{\"numStartups\":3,\"projects\":{\"/home/me/x\":{\"a\":[]}}}",
            ),
            (GEMINI, "{\n  \"/home/me/x\": \"TRUST_FOLDER\"\n}"),
        ];
        for (name, text) in person {
            let path = home.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
        }
        if let Some(user) = &user {
            user.own(&home);
        }
        let run = |args: &[&str]| {
            let out = command_as(user.as_ref(), cli_sandbox_tests::cli_sandbox())
                .env("HOME", &home)
                .env_remove("XDG_DATA_HOME")
                .env_remove("AGENTWORKS_STATE_ROOT")
                .env_remove("CODEX_HOME")
                .env_remove("CLAUDE_CONFIG_DIR")
                .arg("--state-root")
                .arg(&state_root)
                .args(args)
                .output()
                .unwrap();
            let said = format!(
                "{args:?} as {user:?}: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "{said}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        for cli in ["codex", "claude", "gemini"] {
            run(&[
                "pre-trust",
                "--cli",
                cli,
                "--chat",
                "c1",
                "--shape",
                "structured",
            ]);
        }
        let runtime = state_root.join("state/cli-runtimes/v1/c1");
        assert!(runtime.is_dir());
        // Codex is trusted per launch: its file is left as it was; Claude's and Gemini's hold
        // an entry (Gemini's the one for the runtimes folder).
        assert_eq!(fs::read_to_string(home.join(CODEX)).unwrap(), person[0].1);
        assert_ne!(fs::read_to_string(home.join(CLAUDE)).unwrap(), person[1].1);
        assert_ne!(fs::read_to_string(home.join(GEMINI)).unwrap(), person[2].1);
        let said = run(&["end", "--chat", "c1", "--remove-runtime"]);
        assert!(said.contains("removed:"), "{said}");
        for (name, text) in person {
            assert_eq!(
                fs::read_to_string(home.join(name)).unwrap(),
                text,
                "{name} as {user:?}"
            );
        }
        assert!(!runtime.exists(), "the runtime is removed");
        let again = run(&["end", "--chat", "c1", "--json"]);
        let again: Value = serde_json::from_str(&again).unwrap();
        assert_eq!(again["known"], json!(false), "{again}");
    }
}
