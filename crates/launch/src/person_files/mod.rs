//! Reading a person's own CLI settings and writing pre-trust entries into them.
//!
//! An adapter says *what* to write (a [`FileEdit`]); this module writes it without losing a byte
//! of what the person had, even with a hundred launches at once:
//!
//! - **Lock.** An exclusive `flock` on the folder that holds the file (opened read-only), held
//!   from the read to the rename. The folder's inode stays put while files in it are replaced, so
//!   every launcher waits on the same lock; a lock on the file itself would be lost at the first
//!   rename, and a separate lock file would litter the person's folder. The CLIs themselves do
//!   not take this lock: a CLI that rewrites its own file at the same instant can still lose our
//!   entry or theirs (we write once, before the CLI starts).
//! - **Preserve.** TOML goes through `toml_edit`, which keeps every other byte (comments, order,
//!   odd spacing). JSON goes through `serde_json` with `preserve_order`: every key and value is
//!   kept in its order, the indentation is re-used, the layout around them is rewritten. (JSON
//!   numbers beyond what an `f64`/`i64`/`u64` holds, and duplicate keys, are the known limits.)
//! - **Atomic.** The new text goes to a temporary file in the same folder, is fsynced, renamed
//!   over the old one, and the folder is fsynced. A process killed at any point leaves the old or
//!   the new file, never a torn one (at worst a stray `.<name>.*.cli-sandbox.tmp` beside it).
//! - **Permissions.** The replacement gets the old file's mode and owner, so it is never wider
//!   than the file it replaces; a new file gets the edit's `create_mode`, and a missing folder
//!   the same mode with `x` added wherever `r` is (0600 gives 0700), whatever the umask.
//! - **Symlinks.** A settings file that is a symlink (a dotfiles checkout) is edited where it
//!   points, so the link survives.
//! - **Refusal.** A file that cannot be parsed, or whose keys hold something else than a table,
//!   is left untouched and the error names the file (and the line, for a parse error).
//! - **Idempotent.** Nothing is written when the entry is already there.
//!
//! What it is not: it knows nothing about any CLI (the adapters do) and never deletes a key.

use std::fs::{self, DirBuilder, File};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sandbox_core::{EditAction, FileEdit, FileFormat, PersonFiles};
use serde_json::Value as Json;

/// The person's files as they are on this machine, and the launcher's own environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealPersonFiles;

impl PersonFiles for RealPersonFiles {
    fn read(&self, path: &Path) -> io::Result<Option<String>> {
        match fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The file was written (or created).
    Written,
    /// The entry was already there; the file was not touched.
    AlreadyThere,
}

/// Why an edit was not applied. The person's file is untouched in every case.
#[derive(Debug, thiserror::Error)]
pub enum PersonFileError {
    #[error(
        "`{}` line {line}, column {column}: not valid {format} ({reason}); it was left untouched: fix or move it and launch again",
        file.display()
    )]
    Unparsable {
        file: PathBuf,
        format: &'static str,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error(
        "`{}`: `{key}` holds {found}, where a {expected} was expected; it was left untouched: fix or remove that entry and launch again",
        file.display()
    )]
    WrongShape {
        file: PathBuf,
        key: String,
        found: &'static str,
        expected: &'static str,
    },
    #[error("the edit of `{}` is not valid: {why}", file.display())]
    BadEdit { file: PathBuf, why: String },
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PersonFileError {
    let path = path.to_owned();
    move |source| PersonFileError::Io {
        action,
        path,
        source,
    }
}

/// Writes `edit` into its file under the folder lock, atomically; see the module docs.
pub fn apply(edit: &FileEdit) -> Result<Applied, PersonFileError> {
    let bad = |why: &str| PersonFileError::BadEdit {
        file: edit.file.clone(),
        why: why.to_owned(),
    };
    if !edit.file.is_absolute() {
        return Err(bad("the path is not absolute"));
    }
    if edit.keys.is_empty() {
        return Err(bad("it names no key"));
    }
    if edit.create_mode & !0o777 != 0 {
        return Err(bad("create_mode has bits beyond 0o777"));
    }
    let file = follow_symlink(&edit.file)?;
    let folder = file
        .parent()
        .ok_or_else(|| bad("the path has no parent folder"))?;
    let name = file
        .file_name()
        .ok_or_else(|| bad("the path has no file name"))?
        .to_string_lossy()
        .into_owned();

    DirBuilder::new()
        .recursive(true)
        .mode(folder_mode(edit.create_mode))
        .create(folder)
        .map_err(io_err("create the folder", folder))?;
    let folder_handle = File::open(folder).map_err(io_err("open the folder", folder))?;
    folder_handle
        .lock()
        .map_err(io_err("lock the folder", folder))?;
    // The lock is released when `folder_handle` is dropped, on every path out of here.

    let (old_text, old_meta) = match fs::read_to_string(&file) {
        Ok(text) => {
            let meta = fs::metadata(&file).map_err(io_err("read the permissions of", &file))?;
            (Some(text), Some(meta))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => (None, None),
        Err(e) => return Err(io_err("read", &file)(e)),
    };
    let new_text = match edit.format {
        FileFormat::Toml => edit_toml(&file, old_text.as_deref().unwrap_or(""), edit)?,
        FileFormat::Json => edit_json(&file, old_text.as_deref(), edit)?,
    };
    let Some(new_text) = new_text else {
        return Ok(Applied::AlreadyThere);
    };

    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".cli-sandbox.tmp")
        .tempfile_in(folder)
        .map_err(io_err("create a temporary file in", folder))?;
    let mode = old_meta
        .as_ref()
        .map_or(edit.create_mode, |m| m.mode() & 0o7777);
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io_err("set the permissions of", tmp.path()))?;
    if let Some(meta) = &old_meta {
        let ours = fs::metadata(tmp.path()).map_err(io_err("inspect", tmp.path()))?;
        if (ours.uid(), ours.gid()) != (meta.uid(), meta.gid()) {
            std::os::unix::fs::fchown(tmp.as_file(), Some(meta.uid()), Some(meta.gid()))
                .map_err(io_err("give the owner of the old file to", tmp.path()))?;
        }
    }
    tmp.write_all(new_text.as_bytes())
        .map_err(io_err("write", tmp.path()))?;
    tmp.as_file()
        .sync_all()
        .map_err(io_err("flush", tmp.path()))?;
    tmp.persist(&file)
        .map_err(|e| io_err("replace", &file)(e.error))?;
    folder_handle
        .sync_all()
        .map_err(io_err("flush the folder", folder))?;
    Ok(Applied::Written)
}

/// The file a symlink finally points at (so the link survives), or the path itself.
fn follow_symlink(path: &Path) -> Result<PathBuf, PersonFileError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).map_err(io_err("follow the symlink", path))
        }
        _ => Ok(path.to_owned()),
    }
}

/// A folder made for a file of `mode` can be entered by whoever may read the file.
fn folder_mode(mode: u32) -> u32 {
    let read_bits = mode & 0o444;
    mode | (read_bits >> 2)
}

/// Line and column (1-based) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, column)
}

fn key_path(keys: &[String]) -> String {
    keys.join(" > ")
}

// ---------- TOML ----------

/// The edited text, or `None` when the entry is already there.
fn edit_toml(file: &Path, text: &str, edit: &FileEdit) -> Result<Option<String>, PersonFileError> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
        PersonFileError::Unparsable {
            file: file.to_owned(),
            format: "TOML",
            line,
            column,
            reason: e.message().to_owned(),
        }
    })?;
    let value = json_to_toml(&edit.value).map_err(|why| PersonFileError::BadEdit {
        file: file.to_owned(),
        why,
    })?;
    let wrong =
        |depth: usize, found: &'static str, expected: &'static str| PersonFileError::WrongShape {
            file: file.to_owned(),
            key: key_path(&edit.keys[..=depth]),
            found,
            expected,
        };

    let (last, parents) = edit.keys.split_last().expect("keys checked non-empty");
    let mut item: &mut toml_edit::Item = doc.as_item_mut();
    for (depth, key) in parents.iter().enumerate() {
        // A key added inside an inline table must itself be inline; elsewhere it becomes a
        // `[header]` table, implicit so that only the innermost one shows a header.
        let inline = item.is_inline_table();
        let found = toml_kind(item);
        let table = item
            .as_table_like_mut()
            .ok_or_else(|| wrong(depth.saturating_sub(1), found, "table"))?;
        if table.get(key).is_none() {
            let fresh = if inline {
                toml_edit::Item::Value(toml_edit::InlineTable::new().into())
            } else {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            };
            table.insert(key, fresh);
        }
        item = table.get_mut(key).expect("inserted above");
    }
    let found = toml_kind(item);
    let table = item
        .as_table_like_mut()
        .ok_or_else(|| wrong(parents.len().saturating_sub(1), found, "table"))?;

    let depth = edit.keys.len() - 1;
    match edit.action {
        EditAction::Set => {
            if let Some(existing) = table.get_mut(last) {
                if let Some(old) = existing.as_value() {
                    if toml_to_json(old).as_ref() == Some(&edit.value) {
                        return Ok(None);
                    }
                    let decor = old.decor().clone();
                    let mut new = value;
                    *new.decor_mut() = decor;
                    *existing = toml_edit::Item::Value(new);
                } else {
                    return Err(wrong(depth, toml_kind(existing), "value"));
                }
            } else {
                table.insert(last, toml_edit::Item::Value(value));
            }
        }
        EditAction::AddToList => {
            if table.get(last).is_none() {
                table.insert(last, toml_edit::Item::Value(toml_edit::Array::new().into()));
            }
            let item = table.get_mut(last).expect("inserted above");
            let found = toml_kind(item);
            let list = item
                .as_array_mut()
                .ok_or_else(|| wrong(depth, found, "list"))?;
            if list
                .iter()
                .any(|v| toml_to_json(v).as_ref() == Some(&edit.value))
            {
                return Ok(None);
            }
            list.push_formatted(value);
        }
    }
    Ok(Some(doc.to_string()))
}

fn toml_kind(item: &toml_edit::Item) -> &'static str {
    match item {
        toml_edit::Item::None => "nothing",
        toml_edit::Item::Table(_) => "a table",
        toml_edit::Item::ArrayOfTables(_) => "an array of tables",
        toml_edit::Item::Value(v) => match v {
            toml_edit::Value::String(_) => "a string",
            toml_edit::Value::Integer(_) => "an integer",
            toml_edit::Value::Float(_) => "a float",
            toml_edit::Value::Boolean(_) => "a boolean",
            toml_edit::Value::Datetime(_) => "a date",
            toml_edit::Value::Array(_) => "a list",
            toml_edit::Value::InlineTable(_) => "an inline table",
        },
    }
}

fn json_to_toml(value: &Json) -> Result<toml_edit::Value, String> {
    Ok(match value {
        Json::Null => return Err("TOML has no null".to_owned()),
        Json::Bool(b) => (*b).into(),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(f)) => f.into(),
            _ => return Err(format!("the number {n} does not fit TOML")),
        },
        Json::String(s) => s.as_str().into(),
        Json::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(json_to_toml(item)?);
            }
            array.into()
        }
        Json::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, v) in map {
                table.insert(k, json_to_toml(v)?);
            }
            table.into()
        }
    })
}

fn toml_to_json(value: &toml_edit::Value) -> Option<Json> {
    Some(match value {
        toml_edit::Value::String(s) => Json::String(s.value().clone()),
        toml_edit::Value::Integer(i) => Json::from(*i.value()),
        toml_edit::Value::Float(f) => serde_json::Number::from_f64(*f.value())?.into(),
        toml_edit::Value::Boolean(b) => Json::Bool(*b.value()),
        toml_edit::Value::Datetime(_) => return None,
        toml_edit::Value::Array(a) => {
            Json::Array(a.iter().map(toml_to_json).collect::<Option<_>>()?)
        }
        toml_edit::Value::InlineTable(t) => Json::Object(
            t.iter()
                .map(|(k, v)| Some((k.to_owned(), toml_to_json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

// ---------- JSON ----------

/// The edited text, or `None` when the entry is already there.
fn edit_json(
    file: &Path,
    text: Option<&str>,
    edit: &FileEdit,
) -> Result<Option<String>, PersonFileError> {
    let text = text.unwrap_or("");
    let mut doc: Json = if text.trim().is_empty() {
        Json::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(text).map_err(|e| PersonFileError::Unparsable {
            file: file.to_owned(),
            format: "JSON",
            line: e.line(),
            column: e.column(),
            reason: e.to_string(),
        })?
    };
    let wrong =
        |depth: usize, found: &'static str, expected: &'static str| PersonFileError::WrongShape {
            file: file.to_owned(),
            key: key_path(&edit.keys[..=depth]),
            found,
            expected,
        };
    if !doc.is_object() {
        return Err(PersonFileError::WrongShape {
            file: file.to_owned(),
            key: "the whole document".to_owned(),
            found: json_kind(&doc),
            expected: "object",
        });
    }

    let (last, parents) = edit.keys.split_last().expect("keys checked non-empty");
    let mut object = doc.as_object_mut().expect("checked above");
    for (depth, key) in parents.iter().enumerate() {
        let item = object
            .entry(key.clone())
            .or_insert_with(|| Json::Object(serde_json::Map::new()));
        let found = json_kind(item);
        object = item
            .as_object_mut()
            .ok_or_else(|| wrong(depth, found, "object"))?;
    }
    let depth = edit.keys.len() - 1;
    match edit.action {
        EditAction::Set => {
            if object.get(last) == Some(&edit.value) {
                return Ok(None);
            }
            object.insert(last.clone(), edit.value.clone());
        }
        EditAction::AddToList => {
            let item = object
                .entry(last.clone())
                .or_insert_with(|| Json::Array(Vec::new()));
            let found = json_kind(item);
            let list = item
                .as_array_mut()
                .ok_or_else(|| wrong(depth, found, "list"))?;
            if list.contains(&edit.value) {
                return Ok(None);
            }
            list.push(edit.value.clone());
        }
    }

    let indent = json_indent(text);
    let mut out = Vec::with_capacity(text.len() + 128);
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(&doc, &mut ser).map_err(|e| PersonFileError::BadEdit {
        file: file.to_owned(),
        why: e.to_string(),
    })?;
    let mut out = String::from_utf8(out).expect("serde_json writes UTF-8");
    if text.is_empty() || text.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// The indentation the person's file uses (two spaces when it has none to copy).
fn json_indent(text: &str) -> String {
    text.lines()
        .skip(1)
        .find_map(|line| {
            let indent: String = line
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            (!indent.is_empty()).then_some(indent)
        })
        .unwrap_or_else(|| "  ".to_owned())
}

fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}
