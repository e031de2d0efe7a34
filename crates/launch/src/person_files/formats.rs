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

/// The entries of chats to remove while the file is open: the container's keys and which of
/// its entries go.
pub(super) type Prune<'a> = Option<(&'a [String], &'a dyn Fn(&str) -> bool)>;

fn parse_toml(file: &Path, text: &str) -> Result<toml_edit::DocumentMut, PersonFileError> {
    text.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
        PersonFileError::Unparsable {
            file: file.to_owned(),
            format: "TOML",
            line,
            column,
            reason: e.message().to_owned(),
        }
    })
}

/// The edited text (after `prune`, in the same parse), or `None` when the entry is already
/// there and nothing was pruned.
pub(super) fn edit_toml(
    file: &Path,
    text: &str,
    edit: &FileEdit,
    prune: Prune<'_>,
) -> Result<Option<String>, PersonFileError> {
    let mut doc = parse_toml(file, text)?;
    let pruned = match prune {
        Some((container, ours)) => prune_toml_doc(&mut doc, container, ours),
        None => false,
    };
    let edited = edit_toml_doc(file, &mut doc, edit)?;
    Ok((pruned || edited).then(|| same_last_line_ending(text, doc.to_string())))
}

/// Makes `edit` in `doc`; `false` when the entry is already there.
fn edit_toml_doc(
    file: &Path,
    doc: &mut toml_edit::DocumentMut,
    edit: &FileEdit,
) -> Result<bool, PersonFileError> {
    if edit.action == EditAction::Prune {
        return Ok(false);
    }
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
        EditAction::Prune => return Ok(false),
        EditAction::Set => {
            if let Some(existing) = table.get_mut(last) {
                if let Some(old) = existing.as_value() {
                    if toml_to_json(old).as_ref() == Some(&edit.value) {
                        return Ok(false);
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
                return Ok(false);
            }
            list.push_formatted(value);
        }
    }
    Ok(true)
}

/// `out` with its last line ending as `text`'s does: `toml_edit` ends every line it prints,
/// even the person's last one that had no newline, which would stay behind after `end`.
fn same_last_line_ending(text: &str, mut out: String) -> String {
    if !text.is_empty() && !text.ends_with('\n') && out.ends_with('\n') {
        out.pop();
    }
    out
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
    if edit.action == EditAction::Prune {
        return Ok(None);
    }
    if !text.trim().is_empty() {
        check_json(file, text)?;
        if json_entry_there(text, edit) {
            return Ok(None);
        }
    }
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
        EditAction::Prune => return Ok(None),
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

    if text.trim().is_empty() {
        // A new file: the whole document, pretty.
        let mut out = pretty(&doc, "  ", 0).map_err(|why| PersonFileError::BadEdit {
            file: file.to_owned(),
            why,
        })?;
        out.push('\n');
        return Ok(Some(out));
    }
    // Every byte of the person's outside the entry is kept: the entry is spliced into the text
    // (so that removing it again, `end`, gives back the very bytes the person had).
    splice_json(text, edit)
        .map(Some)
        .map_err(|why| PersonFileError::BadEdit {
            file: file.to_owned(),
            why,
        })
}

/// Checks that `text` is JSON, without building its value (a `~/.claude.json` with thousands of
/// projects is checked at every launch).
fn check_json(file: &Path, text: &str) -> Result<(), PersonFileError> {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(drop)
        .map_err(|e| PersonFileError::Unparsable {
            file: file.to_owned(),
            format: "JSON",
            line: e.line(),
            column: e.column(),
            reason: e.to_string(),
        })
}

/// Whether the entry of `edit` is already in `text` (valid JSON): found by scanning the
/// objects on its way only, the value at the end parsed and compared. `false` on anything
/// unexpected (the full edit then decides). The last of duplicate keys counts, as in a parse.
fn json_entry_there(text: &str, edit: &FileEdit) -> bool {
    let b = text.as_bytes();
    let (last, parents) = match edit.keys.split_last() {
        Some(split) => split,
        None => return false,
    };
    let mut at = skip_ws(b, 0);
    for key in parents {
        let Ok(object) = scan_object(text, at) else {
            return false;
        };
        let Some(member) = object.members.iter().rev().find(|m| &m.key == key) else {
            return false;
        };
        at = member.value.0;
    }
    let Ok(object) = scan_object(text, at) else {
        return false;
    };
    let Some(member) = object.members.iter().rev().find(|m| &m.key == last) else {
        return false;
    };
    let (start, end) = member.value;
    match edit.action {
        EditAction::Prune => true,
        EditAction::Set => {
            serde_json::from_str::<Json>(&text[start..end]).is_ok_and(|found| found == edit.value)
        }
        EditAction::AddToList => scan_array(text, start).is_ok_and(|list| {
            list.items.iter().any(|&(s, e)| {
                serde_json::from_str::<Json>(&text[s..e]).is_ok_and(|item| item == edit.value)
            })
        }),
    }
}

/// `value` as JSON, pretty with `indent`, its lines after the first indented `depth` times more
/// (where it goes in the file); on one line when `indent` is `None` (a compact file).
fn pretty(value: &Json, indent: &str, depth: usize) -> Result<String, String> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut ser).map_err(|e| e.to_string())?;
    let out = String::from_utf8(out).expect("serde_json writes UTF-8");
    Ok(out.replace('\n', &format!("\n{}", indent.repeat(depth))))
}

/// `value` laid out as the text around it: pretty when `sep` (the layout between members there)
/// breaks lines, on one line otherwise.
fn laid_out(value: &Json, sep: &str, indent: &str, depth: usize) -> Result<String, String> {
    if sep.contains('\n') {
        pretty(value, indent, depth)
    } else {
        serde_json::to_string(value).map_err(|e| e.to_string())
    }
}

/// The edit made on the text itself (valid JSON, an object at the top, the shapes on the way
/// checked by the caller): a value replaced in place, or a member (or a list item) added after
/// the last one with the layout the others have.
fn splice_json(text: &str, edit: &FileEdit) -> Result<String, String> {
    let b = text.as_bytes();
    let indent = json_indent(text);
    let mut at = skip_ws(b, 0);
    for (depth, key) in edit.keys.iter().enumerate() {
        let object = scan_object(text, at)?;
        match object.members.iter().find(|m| &m.key == key) {
            Some(member) if depth + 1 < edit.keys.len() => at = member.value.0,
            Some(member) => {
                let (start, end) = member.value;
                let new = match edit.action {
                    EditAction::Prune => return Ok(text.to_owned()),
                    EditAction::Set => laid_out(&edit.value, object.sep(text), &indent, depth + 1)?,
                    EditAction::AddToList => {
                        let list = scan_array(text, start)?;
                        let item = laid_out(&edit.value, &list.sep(text), &indent, depth + 2)?;
                        return Ok(list.with_added(text, &item, &indent, depth + 1));
                    }
                };
                return Ok(format!("{}{new}{}", &text[..start], &text[end..]));
            }
            None => {
                // The keys still missing, nested around the value.
                let mut value = match edit.action {
                    EditAction::Prune => return Ok(text.to_owned()),
                    EditAction::Set => edit.value.clone(),
                    EditAction::AddToList => Json::Array(vec![edit.value.clone()]),
                };
                for inner in edit.keys[depth + 1..].iter().rev() {
                    let mut map = serde_json::Map::new();
                    map.insert(inner.clone(), value);
                    value = Json::Object(map);
                }
                return object.with_added(text, key, &value, &indent, depth);
            }
        }
    }
    unreachable!("the last key returns")
}

/// JSON's white space.
fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && matches!(b[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

/// Where the string that starts at `at` (its `"`) ends, past its closing `"`.
fn string_end(b: &[u8], mut at: usize) -> usize {
    at += 1;
    while at < b.len() {
        match b[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    at
}

/// Where the value that starts at `at` ends.
fn value_end(b: &[u8], at: usize) -> usize {
    match b.get(at) {
        Some(b'"') => string_end(b, at),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            i
        }
    }
}

/// One member of an object in the text: its key decoded, where its key starts and ends (past
/// the closing `"`), and its value's span.
pub(super) struct Member {
    pub(super) key: String,
    key_span: (usize, usize),
    pub(super) value: (usize, usize),
}

/// An object in the text: its braces and its members.
pub(super) struct ObjectSpan {
    open: usize,
    close: usize,
    pub(super) members: Vec<Member>,
}

/// The object that starts at `at` (its `{`), in text that is valid JSON.
pub(super) fn scan_object(text: &str, at: usize) -> Result<ObjectSpan, String> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'{') {
        return Err("not an object where one was expected".to_owned());
    }
    let mut members = Vec::new();
    let mut i = skip_ws(b, at + 1);
    while b.get(i) == Some(&b'"') {
        let key_end = string_end(b, i);
        let key: String = serde_json::from_str(&text[i..key_end]).map_err(|e| e.to_string())?;
        let colon = skip_ws(b, key_end);
        let value_start = skip_ws(b, colon + 1);
        let end = value_end(b, value_start);
        members.push(Member {
            key,
            key_span: (i, key_end),
            value: (value_start, end),
        });
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    if b.get(i) != Some(&b'}') {
        return Err("an object that does not end".to_owned());
    }
    Ok(ObjectSpan {
        open: at,
        close: i,
        members,
    })
}

impl ObjectSpan {
    /// The text with the member `key: value` added after the last member, laid out as the
    /// others are (the object is at `depth`).
    fn with_added(
        &self,
        text: &str,
        key: &str,
        value: &Json,
        indent: &str,
        depth: usize,
    ) -> Result<String, String> {
        let key_text = serde_json::to_string(key).map_err(|e| e.to_string())?;
        match self.members.last() {
            None => {
                // `{}` becomes `{ NL member NL }`; removing the member gives `{}` back.
                let value = pretty(value, indent, depth + 1)?;
                Ok(format!(
                    "{}{{\n{}{key_text}: {value}\n{}}}{}",
                    &text[..self.open],
                    indent.repeat(depth + 1),
                    indent.repeat(depth),
                    &text[self.close + 1..]
                ))
            }
            Some(last) => {
                let sep = self.sep(text);
                let colon = &text[last.key_span.1..last.value.0];
                let value = laid_out(value, sep, indent, depth + 1)?;
                let at = last.value.1;
                Ok(format!(
                    "{},{sep}{key_text}{colon}{value}{}",
                    &text[..at],
                    &text[at..]
                ))
            }
        }
    }

    /// The layout between two members (what follows a comma), or after the `{` when there is one.
    fn sep<'t>(&self, text: &'t str) -> &'t str {
        match self.members.as_slice() {
            [] => "",
            [only] => &text[self.open + 1..only.key_span.0],
            [.., before, last] => {
                let comma = text[before.value.1..last.key_span.0]
                    .find(',')
                    .map_or(before.value.1, |c| before.value.1 + c + 1);
                &text[comma..last.key_span.0]
            }
        }
    }

    /// The text without the members at `remove` (indices, ascending): each with the comma and
    /// layout that joined it to the one before (or, for the first, to the one after); an object
    /// left with none becomes `{}`.
    pub(super) fn without(&self, text: &str, remove: &[usize]) -> String {
        if remove.len() == self.members.len() {
            return format!("{}{{}}{}", &text[..self.open], &text[self.close + 1..]);
        }
        let first_kept = first_kept(remove, self.members.len());
        let mut cuts = Vec::with_capacity(remove.len());
        for &i in remove {
            let m = &self.members[i];
            // Joined to the member before it when one before it stays; else to the next one.
            if first_kept < i {
                cuts.push((self.members[i - 1].value.1, m.value.1));
            } else {
                cuts.push((m.key_span.0, self.members[i + 1].key_span.0));
            }
        }
        cut(text, &cuts)
    }
}

/// The first index of `0..len` not in `remove` (ascending), `len` when there is none.
fn first_kept(remove: &[usize], len: usize) -> usize {
    remove
        .iter()
        .enumerate()
        .find(|(at, i)| *at != **i)
        .map_or(remove.len(), |(at, _)| at)
        .min(len)
}

/// The text without the byte ranges `cuts` (which may touch, not overlap).
fn cut(text: &str, cuts: &[(usize, usize)]) -> String {
    let mut cuts = cuts.to_vec();
    cuts.sort();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in cuts {
        let start = start.max(at);
        out.push_str(&text[at..start]);
        at = end.max(at);
    }
    out.push_str(&text[at..]);
    out
}

/// A list in the text: its brackets and its items' spans.
pub(super) struct ArraySpan {
    open: usize,
    close: usize,
    pub(super) items: Vec<(usize, usize)>,
}

/// The list that starts at `at` (its `[`), in text that is valid JSON.
pub(super) fn scan_array(text: &str, at: usize) -> Result<ArraySpan, String> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'[') {
        return Err("not a list where one was expected".to_owned());
    }
    let mut items = Vec::new();
    let mut i = skip_ws(b, at + 1);
    while i < b.len() && b[i] != b']' {
        let end = value_end(b, i);
        items.push((i, end));
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    if b.get(i) != Some(&b']') {
        return Err("a list that does not end".to_owned());
    }
    Ok(ArraySpan {
        open: at,
        close: i,
        items,
    })
}

impl ArraySpan {
    fn sep(&self, text: &str) -> String {
        match self.items.as_slice() {
            [] => "\n".to_owned(),
            [only] => text[self.open + 1..only.0].to_owned(),
            [.., before, last] => {
                let gap = &text[before.1..last.0];
                gap.find(',').map_or(gap, |c| &gap[c + 1..]).to_owned()
            }
        }
    }

    fn with_added(&self, text: &str, item: &str, indent: &str, depth: usize) -> String {
        match self.items.last() {
            None => format!(
                "{}[\n{}{item}\n{}]{}",
                &text[..self.open],
                indent.repeat(depth + 1),
                indent.repeat(depth),
                &text[self.close + 1..]
            ),
            Some(last) => format!(
                "{},{}{item}{}",
                &text[..last.1],
                self.sep(text),
                &text[last.1..]
            ),
        }
    }

    /// The text without the items at `remove` (indices, ascending), as [`ObjectSpan::without`].
    pub(super) fn without(&self, text: &str, remove: &[usize]) -> String {
        if remove.len() == self.items.len() {
            return format!("{}[]{}", &text[..self.open], &text[self.close + 1..]);
        }
        let first_kept = first_kept(remove, self.items.len());
        let mut cuts = Vec::with_capacity(remove.len());
        for &i in remove {
            if first_kept < i {
                cuts.push((self.items[i - 1].1, self.items[i].1));
            } else {
                cuts.push((self.items[i].0, self.items[i + 1].0));
            }
        }
        cut(text, &cuts)
    }
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

// ---------- Removal ----------

/// The text without the entries `ours` picks in the container at `container` (the members of an
/// object, by key, or the string items of a list); a container left empty by it goes too (it
/// held nothing but ours; for TOML only where no header of the person's names it). `None` when
/// there is nothing to remove (nothing is written then).
pub(super) fn remove_json(
    file: &Path,
    text: &str,
    container: &[String],
    ours: &dyn Fn(&str) -> bool,
) -> Result<Option<String>, PersonFileError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    // Checked in full first: the scan below reads valid JSON only.
    check_json(file, text)?;
    let bad = |why: String| PersonFileError::BadEdit {
        file: file.to_owned(),
        why,
    };
    let b = text.as_bytes();
    if b.get(skip_ws(b, 0)) != Some(&b'{') {
        return Ok(None);
    }
    // The container's parent object and the container's index in it.
    let mut parent: Option<(ObjectSpan, usize)> = None;
    let mut at = skip_ws(b, 0);
    for key in container {
        let object = match b.get(at) {
            Some(b'{') => scan_object(text, at).map_err(bad)?,
            _ => return Ok(None),
        };
        let Some(index) = object.members.iter().position(|m| &m.key == key) else {
            return Ok(None);
        };
        at = object.members[index].value.0;
        parent = Some((object, index));
    }
    let (count, remove, rewritten) = match b.get(at) {
        Some(b'{') => {
            let object = scan_object(text, at).map_err(bad)?;
            let remove: Vec<usize> = (0..object.members.len())
                .filter(|&i| ours(&object.members[i].key))
                .collect();
            let rewritten = object.without(text, &remove);
            (object.members.len(), remove, rewritten)
        }
        Some(b'[') => {
            let list = scan_array(text, at).map_err(bad)?;
            let remove: Vec<usize> = (0..list.items.len())
                .filter(|&i| {
                    let (start, end) = list.items[i];
                    serde_json::from_str::<String>(&text[start..end]).is_ok_and(|s| ours(&s))
                })
                .collect();
            let rewritten = list.without(text, &remove);
            (list.items.len(), remove, rewritten)
        }
        _ => return Ok(None),
    };
    if remove.is_empty() {
        return Ok(None);
    }
    match parent {
        // Emptied: the container goes with its last entry.
        Some((parent, index)) if remove.len() == count => Ok(Some(parent.without(text, &[index]))),
        _ => Ok(Some(rewritten)),
    }
}

/// [`remove_json`] for TOML, through `toml_edit` (every other byte kept). A table emptied by it
/// is left: one the person wrote a header for stays as written, one only our keys named (an
/// implicit table) shows nothing.
pub(super) fn remove_toml(
    file: &Path,
    text: &str,
    container: &[String],
    ours: &dyn Fn(&str) -> bool,
) -> Result<Option<String>, PersonFileError> {
    let mut doc = parse_toml(file, text)?;
    let removed = prune_toml_doc(&mut doc, container, ours);
    Ok(removed.then(|| same_last_line_ending(text, doc.to_string())))
}

/// Removes the entries `ours` picks in the container at `container`; whether any went.
fn prune_toml_doc(
    doc: &mut toml_edit::DocumentMut,
    container: &[String],
    ours: &dyn Fn(&str) -> bool,
) -> bool {
    let mut item: &mut toml_edit::Item = doc.as_item_mut();
    for key in container {
        let Some(next) = item.as_table_like_mut().and_then(|t| t.get_mut(key)) else {
            return false;
        };
        item = next;
    }
    // `retain`, one pass: removing keys one by one shifts the table each time (quadratic in
    // the thousands of a long-lived file).
    if let Some(table) = item.as_table_mut() {
        let before = table.len();
        table.retain(|k, _| !ours(k));
        table.len() != before
    } else if let Some(table) = item.as_inline_table_mut() {
        let before = table.len();
        table.retain(|k, _| !ours(k));
        table.len() != before
    } else if let Some(list) = item.as_array_mut() {
        let before = list.len();
        list.retain(|v| !v.as_str().is_some_and(ours));
        list.len() != before
    } else {
        false
    }
}
