//! The edits themselves, on text: TOML through `toml_edit` (every other byte kept), JSON through
//! `serde_json` with `preserve_order` (every other key and value kept, the indentation re-used).
//! No I/O here: the caller reads and writes the file.

use std::path::Path;

use sandbox_core::{EditAction, FileEdit};
use serde_json::Value as Json;

use super::PersonFileError;

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

/// The error for the key at `depth` of `edit` holding `found` where `expected` was wanted.
fn wrong_shape<'a>(
    file: &'a Path,
    edit: &'a FileEdit,
) -> impl Fn(usize, &'static str, &'static str) -> PersonFileError + 'a {
    move |depth, found, expected| PersonFileError::WrongShape {
        file: file.to_owned(),
        key: key_path(&edit.keys[..=depth]),
        found,
        expected,
    }
}

// ---------- TOML ----------

/// The edited text, or `None` when the entry is already there.
pub(super) fn edit_toml(
    file: &Path,
    text: &str,
    edit: &FileEdit,
) -> Result<Option<String>, PersonFileError> {
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
    let wrong = wrong_shape(file, edit);

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
pub(super) fn edit_json(
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
    let wrong = wrong_shape(file, edit);
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
