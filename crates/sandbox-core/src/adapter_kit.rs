//! Small pieces several adapters need, written once: where a CLI's settings folder is when an
//! environment variable moves it, a path as UTF-8 for a settings file that keys by path, a
//! person's settings file read and parsed (with the line of a parse error), a flag for each
//! grant, the end of a command line, and the MCP allow-list entry that matches no server.
//!
//! What it is not: a second adapter form. Nothing here decides a policy or knows a CLI; each
//! function is what two or more adapters did the same way, with the same words in its errors
//! (the adapters' golden tests hold those words).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{AdapterError, ArgvParts, FileFormat, LaunchRequest, PersonFiles};

/// The MCP server name an allow-list holds when there is no bridge: a name no server has, since
/// an empty list allows them all (Gemini's and Agy's `--allowed-mcp-server-names`).
pub const NO_SERVER: &str = "cli-sandbox-no-mcp-server";

/// The one MCP server name a chat may use: the bridge's, else [`NO_SERVER`] followed by the
/// launch's random word ([`LaunchRequest::nonce`]), so that no server a chat names in advance
/// (in any source the CLI reads) is the one allowed.
pub fn allowed_server_name(req: &LaunchRequest) -> String {
    match (&req.mcp_bridge, req.nonce.is_empty()) {
        (Some(bridge), _) => bridge.name.clone(),
        (None, true) => NO_SERVER.to_owned(),
        (None, false) => format!("{NO_SERVER}-{}", req.nonce),
    }
}

/// The folder (or file) an environment variable of the person's names, read through
/// [`PersonFiles::var`]: `None` when it is unset or empty, an error naming the variable when it
/// is not absolute (a relative one would depend on where the launcher runs).
pub fn absolute_var(person: &dyn PersonFiles, name: &str) -> Result<Option<PathBuf>, AdapterError> {
    match person.var(name).filter(|v| !v.is_empty()) {
        Some(v) if Path::new(&v).is_absolute() => Ok(Some(PathBuf::from(v))),
        Some(v) => Err(AdapterError::Setting {
            file: PathBuf::from(v),
            problem: format!("{name} is not an absolute path"),
            fix: format!("set {name} to an absolute path or unset it"),
        }),
        None => Ok(None),
    }
}

/// The working folder as UTF-8, for a settings file that keys by path; `what` ends the sentence
/// "the path is not valid UTF-8, so it ...", saying what the path was for.
pub fn utf8_workdir<'a>(path: &'a Path, what: &str) -> Result<&'a str, AdapterError> {
    path.to_str().ok_or_else(|| AdapterError::Setting {
        file: path.to_owned(),
        problem: format!("the path is not valid UTF-8, so it {what}"),
        fix: "use a working folder whose path is UTF-8".to_owned(),
    })
}

/// The folder one trust entry names for every chat, for a CLI whose trust of a folder covers
/// the folders below it (Codex, Claude Code, Gemini CLI; checked against the pinned CLIs in
/// `tests/real_clis.rs`): the runtimes folder, the working folder's parent (the launcher's
/// working folder is always `<runtimes folder>/<chat>`). No chat can write in that folder
/// itself, only in its own runtime below it, so the entry trusts the chats' runtimes and nothing
/// else; it is written once and serves every chat, so the person's file does not grow by an
/// entry per chat (`docs/ending-a-chat.md`). As UTF-8, like [`utf8_workdir`].
pub fn utf8_runtimes<'a>(workdir: &'a Path, what: &str) -> Result<&'a str, AdapterError> {
    utf8_workdir(workdir.parent().unwrap_or(workdir), what)
}

/// A grant's folder as UTF-8, like [`utf8_workdir`].
pub fn utf8_grant<'a>(path: &'a Path, what: &str) -> Result<&'a str, AdapterError> {
    path.to_str().ok_or_else(|| AdapterError::Setting {
        file: path.to_owned(),
        problem: format!("the grant's path is not valid UTF-8, so it {what}"),
        fix: "grant a folder whose path is UTF-8".to_owned(),
    })
}

/// The person's file `file`, read through [`PersonFiles::read`]: `None` when it does not exist,
/// an error naming the file when it cannot be read.
/// Bytes that are not UTF-8 ([`std::io::ErrorKind::InvalidData`]) are a file that cannot be parsed,
/// said as such, with its remedy.
pub fn read(person: &dyn PersonFiles, file: &Path) -> Result<Option<String>, AdapterError> {
    person.read(file).map_err(|source| match source.kind() {
        std::io::ErrorKind::InvalidData => AdapterError::Unparsable {
            file: file.to_owned(),
            reason: "it is not UTF-8 text, as a JSON or TOML settings file must be".to_owned(),
        },
        _ => AdapterError::Read {
            file: file.to_owned(),
            source,
        },
    })
}

/// A person's settings file as JSON values (TOML read into the same model): `None` when it is
/// missing or blank (the launcher also takes a blank file for an empty one), an error naming the
/// file and the line when it cannot be parsed.
pub fn read_settings(
    person: &dyn PersonFiles,
    file: &Path,
    format: FileFormat,
) -> Result<Option<Value>, AdapterError> {
    let Some(text) = read(person, file)?.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let unparsable = |reason: String| AdapterError::Unparsable {
        file: file.to_owned(),
        reason,
    };
    match format {
        FileFormat::Json => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| unparsable(format!("line {}: {e}", e.line()))),
        FileFormat::Toml => toml::from_str(&text).map(Some).map_err(|e| {
            let line = line_of(&text, e.span().map_or(0, |s| s.start));
            unparsable(format!("line {line}: {}", e.message()))
        }),
    }
}

/// The line (1-based) that byte `offset` of `text` is on; an offset past the end is on the last.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Appends `<flag><grant>` for each of the chat's grants (`--add-dir=`), in their order.
pub fn push_each_grant(args: &mut Vec<String>, req: &LaunchRequest, flag: &str) {
    for grant in &req.grants {
        args.push(format!("{flag}{}", grant.path.to_string_lossy()));
    }
}

/// Appends the launcher's parts in the order most CLIs take them: their own sandbox off, the
/// pre-trust arguments, the MCP isolation.
pub fn push_parts(args: &mut Vec<String>, parts: ArgvParts) {
    args.extend(parts.own_sandbox_off);
    args.extend(parts.pre_trust);
    args.extend(parts.mcp);
}

/// Appends the end of a command line: the caller's extra arguments, then the prompt after `--`
/// (so that a prompt starting with `-` is not read as a flag).
pub fn push_extra_and_prompt(args: &mut Vec<String>, req: &LaunchRequest) {
    args.extend(req.extra_args.iter().cloned());
    if let Some(prompt) = &req.prompt {
        args.push("--".to_owned());
        args.push(prompt.clone());
    }
}

/// A person's settings file for [`CliAdapter::readiness`](crate::CliAdapter::readiness): its
/// value (`None` when missing or blank), or the need `what` said unmet because the file cannot
/// be read, with the error's own remedy.
pub fn readiness_settings(
    person: &dyn PersonFiles,
    file: &Path,
    format: FileFormat,
    what: &str,
) -> Result<Option<Value>, crate::Readiness> {
    read_settings(person, file, format)
        .map_err(|e| crate::Readiness::no(what, e.to_string(), "fix or move the file"))
}

/// Whether the person's file `file` exists and holds something (read through
/// [`PersonFiles::read`]; its text is not kept).
pub fn has_content(person: &dyn PersonFiles, file: &Path) -> bool {
    person
        .read(file)
        .is_ok_and(|text| text.is_some_and(|t| !t.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        let text = "a = 1\nb = \nc";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 5), 1);
        assert_eq!(line_of(text, 6), 2);
        assert_eq!(line_of(text, text.len()), 3);
        assert_eq!(line_of(text, 999), 3);
        // An offset inside a multi-byte character does not panic.
        assert_eq!(line_of("é\nx", 1), 1);
    }

    struct Vars(&'static str, &'static str);
    impl PersonFiles for Vars {
        fn read(&self, _: &Path) -> std::io::Result<Option<String>> {
            Ok(None)
        }
        fn var(&self, name: &str) -> Option<String> {
            (name == self.0).then(|| self.1.to_owned())
        }
    }

    #[test]
    fn absolute_var_takes_an_absolute_value_refuses_a_relative_one_and_skips_an_empty_one() {
        assert_eq!(
            absolute_var(&Vars("X_HOME", "/srv/x"), "X_HOME").unwrap(),
            Some(PathBuf::from("/srv/x"))
        );
        assert_eq!(absolute_var(&Vars("X_HOME", ""), "X_HOME").unwrap(), None);
        assert_eq!(absolute_var(&Vars("Y", "/y"), "X_HOME").unwrap(), None);
        let err = absolute_var(&Vars("X_HOME", "x"), "X_HOME").unwrap_err();
        assert!(
            err.to_string().contains("X_HOME is not an absolute path"),
            "{err}"
        );
    }
}
