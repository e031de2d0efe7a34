//! A reader and evaluator for the subset of SBPL (Seatbelt's profile language) that our profiles
//! are written in, so that a generated profile can be checked where `sandbox-exec` does not run.
//!
//! It reads `(version 1)` and `(allow|deny OPERATION... FILTER... (with message "..."))` rules,
//! with the filters `literal`, `subpath`, `prefix`, `regex`, `require-all`, `require-any`,
//! `require-not`, `global-name`, `global-name-regex`, `(remote unix-socket [(path-literal E)])`
//! and `(target same-sandbox)`, and the expressions `"string"`, `#"regex"`, `(param "X")`,
//! `(string-append ...)` and `(regex-quote E)`. Anything else is an error: a profile that leaves
//! this subset is not one we know how to check.
//!
//! It is not Seatbelt: it states the semantics we rely on, from what has been measured and
//! published (DESIGN section 6), and the tests of this module pin them:
//!
//! - operations form a tree (`file-read-data` under `file-read*` under `file*` under `default`;
//!   `file-test-existence` and `file-map-executable` under `file*`, not under `file-read*`);
//! - among rules with a filter the last match wins; a rule with no filter is only the fallback
//!   for its operation;
//! - `(param "X")` with no value is false, and a filter on false is an error here;
//! - several filters in one rule match when any does.
//!
//! How a rule on an operation weighs against a rule on its parent is not documented, and two
//! readings have been reported, so both are implemented ([`Model`]): our profiles must not depend
//! on which one macOS follows.

use std::collections::BTreeMap;

use regex::bytes::{Regex, RegexBuilder};

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sexp {
    List(Vec<Sexp>),
    Symbol(String),
    Str(String),
    /// `#"..."`, a regex literal: no escapes.
    RegexLit(String),
    Int(i64),
}

/// Reads a profile's text into its top-level expressions.
pub fn parse(text: &str) -> Result<Vec<Sexp>, String> {
    let mut reader = Reader {
        chars: text.char_indices().peekable(),
        text,
    };
    let mut out = Vec::new();
    loop {
        reader.skip_blank()?;
        if reader.chars.peek().is_none() {
            return Ok(out);
        }
        out.push(reader.expr()?);
    }
}

struct Reader<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    text: &'a str,
}

impl Reader<'_> {
    fn skip_blank(&mut self) -> Result<(), String> {
        while let Some(&(at, c)) = self.chars.peek() {
            if c.is_whitespace() {
                self.chars.next();
            } else if c == ';' {
                while let Some(&(_, c)) = self.chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.chars.next();
                }
            } else if self.text[at..].starts_with("#|") {
                return Err(format!("block comment at byte {at}: not in our subset"));
            } else {
                break;
            }
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Sexp, String> {
        self.skip_blank()?;
        let Some((at, c)) = self.chars.next() else {
            return Err("unexpected end of the profile".into());
        };
        match c {
            '(' => {
                let mut items = Vec::new();
                loop {
                    self.skip_blank()?;
                    match self.chars.peek() {
                        None => return Err(format!("list opened at byte {at} is never closed")),
                        Some(&(_, ')')) => {
                            self.chars.next();
                            return Ok(Sexp::List(items));
                        }
                        Some(_) => items.push(self.expr()?),
                    }
                }
            }
            ')' => Err(format!("unexpected `)` at byte {at}")),
            '"' => self.string(at).map(Sexp::Str),
            '#' => match self.chars.next() {
                Some((_, '"')) => {
                    let mut out = String::new();
                    for (_, c) in self.chars.by_ref() {
                        if c == '"' {
                            return Ok(Sexp::RegexLit(out));
                        }
                        out.push(c);
                    }
                    Err(format!("regex literal at byte {at} is never closed"))
                }
                Some((_, 't' | 'f')) => Err(format!("boolean at byte {at}: not in our subset")),
                _ => Err(format!("`#` at byte {at}: not in our subset")),
            },
            '\'' | '`' | ',' => Err(format!("quotation at byte {at}: not in our subset")),
            c => {
                let mut out = String::from(c);
                while let Some(&(_, c)) = self.chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | '"' | ';') {
                        break;
                    }
                    out.push(c);
                    self.chars.next();
                }
                if out.bytes().all(|b| b.is_ascii_digit()) {
                    out.parse()
                        .map(Sexp::Int)
                        .map_err(|e| format!("number at byte {at}: {e}"))
                } else {
                    Ok(Sexp::Symbol(out))
                }
            }
        }
    }

    fn string(&mut self, at: usize) -> Result<String, String> {
        let mut out = String::new();
        while let Some((_, c)) = self.chars.next() {
            match c {
                '"' => return Ok(out),
                '\\' => match self.chars.next() {
                    Some((_, c @ ('"' | '\\'))) => out.push(c),
                    Some((_, 'n')) => out.push('\n'),
                    other => {
                        return Err(format!(
                            "escape {other:?} in the string at byte {at}: not in our subset"
                        ));
                    }
                },
                c => out.push(c),
            }
        }
        Err(format!("string at byte {at} is never closed"))
    }
}

/// The operations our profiles and probes name, each with its parent: a rule on the parent
/// covers the child.
const OPERATIONS: &[(&str, &str)] = &[
    ("file*", "default"),
    ("file-read*", "file*"),
    ("file-read-data", "file-read*"),
    ("file-read-metadata", "file-read*"),
    ("file-read-xattr", "file-read*"),
    ("file-write*", "file*"),
    ("file-write-data", "file-write*"),
    ("file-write-create", "file-write*"),
    ("file-write-unlink", "file-write*"),
    ("file-write-mode", "file-write*"),
    ("file-write-owner", "file-write*"),
    ("file-write-flags", "file-write*"),
    ("file-write-times", "file-write*"),
    ("file-write-xattr", "file-write*"),
    ("file-write-setugid", "file-write*"),
    ("file-test-existence", "file*"),
    ("file-map-executable", "file*"),
    ("file-link", "file*"),
    ("file-ioctl", "file*"),
    ("file-clone", "file*"),
    ("file-mount", "file*"),
    ("file-unmount", "file*"),
    ("file-revoke", "file*"),
    ("process*", "default"),
    ("process-exec*", "process*"),
    ("process-exec", "process-exec*"),
    ("process-fork", "process*"),
    ("network*", "default"),
    ("network-outbound", "network*"),
    ("network-inbound", "network*"),
    ("network-bind", "network*"),
    ("mach*", "default"),
    ("mach-lookup", "mach*"),
    ("mach-register", "mach*"),
    ("mach-priv-task-port", "mach*"),
    ("signal", "default"),
    ("appleevent-send", "default"),
    ("lsopen", "default"),
];

fn known_operation(name: &str) -> Option<&'static str> {
    if name == "default" {
        return Some("default");
    }
    OPERATIONS
        .iter()
        .find(|(op, _)| *op == name)
        .map(|(op, _)| *op)
}

/// `op`, its parent, ..., `default`.
fn chain(op: &str) -> Result<Vec<&'static str>, String> {
    let mut out = vec![known_operation(op).ok_or_else(|| format!("unknown operation `{op}`"))?];
    while let Some(&(_, parent)) = OPERATIONS.iter().find(|(o, _)| Some(o) == out.last()) {
        out.push(parent);
    }
    Ok(out)
}

/// Whether one of two operations covers the other.
fn overlap(a: &str, b: &str) -> bool {
    chain(a).is_ok_and(|c| c.contains(&b)) || chain(b).is_ok_and(|c| c.contains(&a))
}

/// What a request is about.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// A file operation on a path, as the kernel names it (absolute, canonical).
    Path(&'a [u8]),
    /// A Mach service looked up by name.
    Global(&'a str),
    /// A connect to a unix socket at a path.
    UnixSocket(&'a [u8]),
    /// A signal or task port: whether the target is in this same sandbox.
    Process { same_sandbox: bool },
    /// An operation with nothing to filter on (`appleevent-send`, `lsopen`).
    Nothing,
}

impl std::fmt::Debug for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            Subject::Path(p) => write!(f, "path {:?}", text(p)),
            Subject::Global(g) => write!(f, "service {g:?}"),
            Subject::UnixSocket(p) => write!(f, "unix socket {:?}", text(p)),
            Subject::Process { same_sandbox } => {
                write!(f, "process (same sandbox: {same_sandbox})")
            }
            Subject::Nothing => write!(f, "nothing"),
        }
    }
}

/// One question to a profile.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub op: &'a str,
    pub subject: Subject<'a>,
}

/// How a rule on an operation weighs against rules on its parents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Every rule that covers the operation counts, by position: the last filtered match wins,
    /// else the most specific unfiltered rule.
    Positional,
    /// The operation's own rules first (last filtered match, else its unfiltered rule), then its
    /// parent's, and so on up to `default`.
    SpecificFirst,
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    /// The rule that decided, counted from 0 among the profile's rules.
    pub rule: usize,
    /// Its `(with message ...)`.
    pub message: Option<String>,
}

#[derive(Debug)]
struct Rule {
    allow: bool,
    ops: Vec<&'static str>,
    /// Any of them matches; none means the rule is a fallback.
    filters: Vec<Filter>,
    message: Option<String>,
}

#[derive(Debug)]
enum Filter {
    Path(PathMatch),
    Any(Vec<Filter>),
    All(Vec<Filter>),
    Not(Box<Filter>),
    GlobalName(String),
    GlobalNameRegex(Regex),
    /// `(remote unix-socket)`, with or without a path.
    RemoteUnix(Option<PathMatch>),
    SameSandbox,
}

#[derive(Debug)]
enum PathMatch {
    Literal(Vec<u8>),
    Subpath(Vec<u8>),
    Prefix(Vec<u8>),
    Regex(Regex),
}

impl PathMatch {
    fn matches(&self, path: &[u8]) -> bool {
        match self {
            PathMatch::Literal(p) => path == p.as_slice(),
            PathMatch::Subpath(p) => {
                path.starts_with(p)
                    && (path.len() == p.len() || p.ends_with(b"/") || path[p.len()] == b'/')
            }
            PathMatch::Prefix(p) => path.starts_with(p),
            PathMatch::Regex(re) => re.is_match(path),
        }
    }
}

impl Filter {
    fn matches(&self, subject: Subject<'_>) -> Result<bool, String> {
        let wrong = |what: &str| Err(format!("a {what} filter asked about {subject:?}"));
        Ok(match self {
            Filter::Path(m) => match subject {
                Subject::Path(p) => m.matches(p),
                _ => return wrong("path"),
            },
            Filter::Any(all) => {
                for f in all {
                    if f.matches(subject)? {
                        return Ok(true);
                    }
                }
                false
            }
            Filter::All(all) => {
                for f in all {
                    if !f.matches(subject)? {
                        return Ok(false);
                    }
                }
                true
            }
            Filter::Not(f) => !f.matches(subject)?,
            Filter::GlobalName(n) => match subject {
                Subject::Global(g) => g == n,
                _ => return wrong("global-name"),
            },
            Filter::GlobalNameRegex(re) => match subject {
                Subject::Global(g) => re.is_match(g.as_bytes()),
                _ => return wrong("global-name-regex"),
            },
            Filter::RemoteUnix(m) => match subject {
                Subject::UnixSocket(p) => m.as_ref().is_none_or(|m| m.matches(p)),
                _ => return wrong("remote unix-socket"),
            },
            Filter::SameSandbox => match subject {
                Subject::Process { same_sandbox } => same_sandbox,
                _ => return wrong("target"),
            },
        })
    }
}

/// A profile read with its parameters, ready to answer requests.
#[derive(Debug)]
pub struct Profile {
    rules: Vec<Rule>,
    /// The parameters the text names, to find those given but never used.
    used_params: Vec<String>,
}

/// An evaluated expression.
enum Value {
    Str(String),
    False,
}

impl Profile {
    /// Reads `text` with `params` (the `-D` values). Fails on anything outside our subset, on an
    /// unknown operation and on a regex we cannot vouch for.
    pub fn compile(text: &str, params: &BTreeMap<String, String>) -> Result<Profile, String> {
        let forms = parse(text)?;
        let mut forms = forms.into_iter();
        match forms.next() {
            Some(Sexp::List(v)) if v == [Sexp::Symbol("version".into()), Sexp::Int(1)] => {}
            other => {
                return Err(format!(
                    "the profile must start with (version 1), not {other:?}"
                ));
            }
        }
        let mut profile = Profile {
            rules: Vec::new(),
            used_params: Vec::new(),
        };
        for form in forms {
            let rule = profile.rule(&form, params)?;
            profile.rules.push(rule);
        }
        Ok(profile)
    }

    /// Parameters given but never named by the text: a sign that a rule went missing.
    pub fn unused_params<'a>(&self, params: &'a BTreeMap<String, String>) -> Vec<&'a str> {
        params
            .keys()
            .filter(|k| !self.used_params.contains(k))
            .map(String::as_str)
            .collect()
    }

    fn rule(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Rule, String> {
        let Sexp::List(items) = form else {
            return Err(format!("a top-level form must be a rule, not {form:?}"));
        };
        let allow = match items.first() {
            Some(Sexp::Symbol(s)) if s == "allow" => true,
            Some(Sexp::Symbol(s)) if s == "deny" => false,
            _ => {
                return Err(format!(
                    "only allow and deny rules are in our subset: {form:?}"
                ));
            }
        };
        let mut rule = Rule {
            allow,
            ops: Vec::new(),
            filters: Vec::new(),
            message: None,
        };
        for item in &items[1..] {
            match item {
                Sexp::Symbol(op) => rule
                    .ops
                    .push(known_operation(op).ok_or_else(|| format!("unknown operation `{op}`"))?),
                Sexp::List(v) if v.first() == Some(&Sexp::Symbol("with".into())) => match &v[..] {
                    [_, Sexp::Symbol(m), Sexp::Str(text)] if m == "message" => {
                        if rule.message.replace(text.clone()).is_some() {
                            return Err(format!("two messages in one rule: {form:?}"));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "only (with message \"...\") is in our subset: {v:?}"
                        ));
                    }
                },
                Sexp::List(_) => rule.filters.push(self.filter(item, params)?),
                other => return Err(format!("neither an operation nor a filter: {other:?}")),
            }
        }
        if rule.ops.is_empty() {
            return Err(format!("a rule without an operation: {form:?}"));
        }
        Ok(rule)
    }

    fn filter(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Filter, String> {
        let Sexp::List(items) = form else {
            return Err(format!("a filter must be a list, not {form:?}"));
        };
        let (Some(Sexp::Symbol(head)), args) = (items.first(), &items[1..]) else {
            return Err(format!("a filter must start with its name: {form:?}"));
        };
        let one = |what: &str| -> Result<&Sexp, String> {
            match args {
                [one] => Ok(one),
                _ => Err(format!("({what} ...) takes one argument: {form:?}")),
            }
        };
        Ok(match head.as_str() {
            "literal" => Filter::Path(PathMatch::Literal(self.path(one(head)?, params)?)),
            "subpath" => Filter::Path(PathMatch::Subpath(self.path(one(head)?, params)?)),
            "prefix" => Filter::Path(PathMatch::Prefix(self.path(one(head)?, params)?)),
            "regex" => Filter::Path(PathMatch::Regex(self.regex(one(head)?, params)?)),
            "require-any" => Filter::Any(self.filters(args, params)?),
            "require-all" => Filter::All(self.filters(args, params)?),
            "require-not" => Filter::Not(Box::new(self.filter(one(head)?, params)?)),
            "global-name" => match one(head)? {
                Sexp::Str(name) => Filter::GlobalName(name.clone()),
                other => return Err(format!("global-name takes a string, not {other:?}")),
            },
            "global-name-regex" => Filter::GlobalNameRegex(self.regex(one(head)?, params)?),
            "remote" => match args {
                [Sexp::Symbol(kind)] if kind == "unix-socket" => Filter::RemoteUnix(None),
                [Sexp::Symbol(kind), Sexp::List(path)] if kind == "unix-socket" => {
                    let m = match &path[..] {
                        [Sexp::Symbol(h), arg] if h == "path-literal" => {
                            PathMatch::Literal(self.path(arg, params)?)
                        }
                        [Sexp::Symbol(h), arg] if h == "path-regex" => {
                            PathMatch::Regex(self.regex(arg, params)?)
                        }
                        _ => return Err(format!("unknown unix-socket filter: {path:?}")),
                    };
                    Filter::RemoteUnix(Some(m))
                }
                _ => {
                    return Err(format!(
                        "only (remote unix-socket ...) is in our subset: {form:?}"
                    ));
                }
            },
            "target" => match one(head)? {
                Sexp::Symbol(t) if t == "same-sandbox" => Filter::SameSandbox,
                other => {
                    return Err(format!(
                        "only (target same-sandbox) is in our subset: {other:?}"
                    ));
                }
            },
            other => return Err(format!("unknown filter `{other}`")),
        })
    }

    fn filters(
        &mut self,
        forms: &[Sexp],
        params: &BTreeMap<String, String>,
    ) -> Result<Vec<Filter>, String> {
        forms.iter().map(|f| self.filter(f, params)).collect()
    }

    fn path(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Vec<u8>, String> {
        match self.value(form, params)? {
            Value::Str(s) if s.starts_with('/') => Ok(s.into_bytes()),
            Value::Str(s) => Err(format!("a path filter on `{s}`, which is not absolute")),
            Value::False => Err(format!(
                "a path filter on {form:?}, which is false (a parameter without a value)"
            )),
        }
    }

    fn regex(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Regex, String> {
        let source = match form {
            Sexp::RegexLit(s) => s.clone(),
            other => match self.value(other, params)? {
                Value::Str(s) => s,
                Value::False => return Err(format!("a regex filter on {form:?}, which is false")),
            },
        };
        check_regex(&source)?;
        RegexBuilder::new(&source)
            .unicode(false)
            .build()
            .map_err(|e| format!("regex `{source}`: {e}"))
    }

    fn value(&mut self, form: &Sexp, params: &BTreeMap<String, String>) -> Result<Value, String> {
        match form {
            Sexp::Str(s) => Ok(Value::Str(s.clone())),
            Sexp::List(items) => match &items[..] {
                [Sexp::Symbol(h), Sexp::Str(name)] if h == "param" => {
                    self.used_params.push(name.clone());
                    Ok(params
                        .get(name)
                        .map_or(Value::False, |v| Value::Str(v.clone())))
                }
                [Sexp::Symbol(h), parts @ ..] if h == "string-append" => {
                    let mut out = String::new();
                    for part in parts {
                        match self.value(part, params)? {
                            Value::Str(s) => out.push_str(&s),
                            Value::False => {
                                return Err(format!("string-append of false in {form:?}"));
                            }
                        }
                    }
                    Ok(Value::Str(out))
                }
                [Sexp::Symbol(h), arg] if h == "regex-quote" => match self.value(arg, params)? {
                    Value::Str(s) => Ok(Value::Str(regex_quote(&s))),
                    Value::False => Err(format!("regex-quote of false in {form:?}")),
                },
                _ => Err(format!("an expression outside our subset: {form:?}")),
            },
            other => Err(format!("an expression outside our subset: {other:?}")),
        }
    }

    /// What the profile says about `request`, read the way `model` says.
    pub fn decide(&self, model: Model, request: Request<'_>) -> Result<Verdict, String> {
        let chain = chain(request.op)?;
        let verdict = |rule: usize| Verdict {
            allowed: self.rules[rule].allow,
            rule,
            message: self.rules[rule].message.clone(),
        };
        let matching = |levels: &[&str]| -> Result<Option<usize>, String> {
            let mut last = None;
            for (index, rule) in self.rules.iter().enumerate() {
                if rule.filters.is_empty() || !rule.ops.iter().any(|op| levels.contains(op)) {
                    continue;
                }
                let mut hit = false;
                for filter in &rule.filters {
                    if filter.matches(request.subject)? {
                        hit = true;
                        break;
                    }
                }
                if hit {
                    last = Some(index);
                }
            }
            Ok(last)
        };
        let fallback = |level: &str| {
            self.rules
                .iter()
                .rposition(|r| r.filters.is_empty() && r.ops.contains(&level))
        };
        match model {
            Model::Positional => {
                if let Some(rule) = matching(&chain)? {
                    return Ok(verdict(rule));
                }
                for level in &chain {
                    if let Some(rule) = fallback(level) {
                        return Ok(verdict(rule));
                    }
                }
            }
            Model::SpecificFirst => {
                for level in &chain {
                    if let Some(rule) = matching(&[level])? {
                        return Ok(verdict(rule));
                    }
                    if let Some(rule) = fallback(level) {
                        return Ok(verdict(rule));
                    }
                }
            }
        }
        Err(format!(
            "no rule decides {request:?}: the profile has no (allow default) or (deny default)"
        ))
    }

    /// The same request under both models; an error when they disagree.
    pub fn decide_both(&self, request: Request<'_>) -> Result<Verdict, String> {
        let positional = self.decide(Model::Positional, request)?;
        let specific = self.decide(Model::SpecificFirst, request)?;
        if (positional.allowed, &positional.message) != (specific.allowed, &specific.message) {
            return Err(format!(
                "the two readings of the profile disagree on {request:?}: by position {positional:?}, \
                 specific operation first {specific:?}"
            ));
        }
        Ok(positional)
    }

    /// What the brief forbids though Seatbelt would accept it: a rule without a filter after a
    /// filtered rule on the same operation (it would read as an override and is only a
    /// fallback), and two fallbacks for one operation.
    pub fn lint(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if !rule.filters.is_empty() {
                continue;
            }
            for (j, earlier) in self.rules[..i].iter().enumerate() {
                let shared = rule
                    .ops
                    .iter()
                    .any(|a| earlier.ops.iter().any(|b| overlap(a, b)));
                let same = rule.ops.iter().any(|a| earlier.ops.contains(a));
                if !earlier.filters.is_empty() && shared {
                    out.push(format!(
                        "rule {i} ({:?}) has no filter but follows filtered rule {j} ({:?})",
                        rule.ops, earlier.ops
                    ));
                } else if earlier.filters.is_empty() && same {
                    out.push(format!(
                        "rules {j} and {i} are both the fallback for {:?}",
                        rule.ops
                    ));
                }
            }
        }
        out
    }
}

/// SBPL's `regex-quote`: a backslash before each of `^.[$()|*+?{\`.
pub fn regex_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "^.[$()|*+?{\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The regex syntax we vouch for (what Apple's own profiles use): anchored at the start with
/// `^`; literals; `\` before punctuation only; `.`; bracket expressions without escapes or
/// POSIX classes; `*`, `+`, `?`; groups and `|`; `$`. No `(?...)`, no `{n,m}`, no `\d`.
pub fn check_regex(source: &str) -> Result<(), String> {
    let fail = |why: &str| Err(format!("regex `{source}`: {why}"));
    if !source.starts_with('^') {
        return fail("not anchored with `^`");
    }
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => {}
                _ => return fail("a backslash must escape punctuation"),
            },
            '(' if chars.peek() == Some(&'?') => return fail("`(?` syntax"),
            '{' => return fail("an interval `{...}`"),
            '[' => {
                if matches!(chars.peek(), Some(':' | '=' | '.')) {
                    return fail("a POSIX class in brackets");
                }
                let mut first = true;
                loop {
                    match chars.next() {
                        None => return fail("an unclosed bracket"),
                        Some('\\') => return fail("a backslash in brackets"),
                        Some(']') if !first => break,
                        Some('[') => return fail("a `[` in brackets"),
                        Some('^') if first => continue,
                        Some(_) => {}
                    }
                    first = false;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
