//! A scripted model: an HTTP server on 127.0.0.1 that answers a real coding CLI's model
//! requests with the tool calls of a fixed script, and records every request and every tool
//! result the CLI sends back.
//!
//! It is a test double for the contract's model-driven layer and the real-CLI tests, not a
//! library the provider needs: nothing in a normal launch starts it.
//!
//! What it speaks (each as its client streams it; see [`Dialect`]):
//!
//! | CLI | endpoint | dialect |
//! |---|---|---|
//! | Codex | `POST /v1/responses` | OpenAI Responses, SSE |
//! | Claude Code | `POST /v1/messages` | Anthropic Messages, SSE |
//! | Gemini CLI | `POST /v1beta/models/M:streamGenerateContent?alt=sse` | Gemini, SSE |
//! | Pi | `POST /v1/chat/completions` | OpenAI Chat Completions, SSE |
//!
//! How a step is chosen: the number of tool results already in the request. The server keeps
//! no turn state, so a CLI that retries a request gets the same step again, and one that sends
//! two requests for one turn gets the same answer twice. A request that offers no tools (a
//! title, a summary, a check) gets plain text. When every step has been played the answer is
//! the script's closing text, which ends the CLI's turn. Any other endpoint gets a plausible
//! empty answer (`HEAD /`, `GET` of anything: 200).
//!
//! What it is not: a model. It never reads the prompt, and what it says is never evidence of
//! anything; the verdicts of the tests that use it come from the disk and from the tool results
//! recorded here.

// A test double: nothing here needs `unsafe`.
#![forbid(unsafe_code)]

mod dialect;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::Value;

pub use dialect::Dialect;

/// One scripted step: what the model asks the CLI to do next, in the CLI's own tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run a command in the CLI's shell tool.
    Shell { command: String },
    /// Read a file with the CLI's file-reading tool.
    Read { path: PathBuf },
    /// Write (create or replace) a file with the CLI's file-writing tool.
    Write { path: PathBuf, content: String },
    /// Replace `old` by `new` in a file with the CLI's editing tool.
    Edit {
        path: PathBuf,
        old: String,
        new: String,
    },
    /// Call the offered tool whose name is `tool` or ends with `__tool` / `_tool` (an MCP tool,
    /// as each CLI prefixes it), with these arguments.
    Mcp { tool: String, arguments: Value },
}

/// Which of the CLI's tools a step uses, for a caller that builds a script per CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolKind {
    Shell,
    Read,
    Write,
    Edit,
    Mcp,
}

impl Step {
    pub fn kind(&self) -> ToolKind {
        match self {
            Step::Shell { .. } => ToolKind::Shell,
            Step::Read { .. } => ToolKind::Read,
            Step::Write { .. } => ToolKind::Write,
            Step::Edit { .. } => ToolKind::Edit,
            Step::Mcp { .. } => ToolKind::Mcp,
        }
    }
}

/// The script: the steps, then the text that ends the turn.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub steps: Vec<Step>,
    /// Said once every step has been played (and to requests that offer no tools).
    pub closing: String,
    /// Answer every model request with this HTTP status instead (a failing server: the test
    /// that a CLI with retries off gives up in seconds).
    pub fail_with: Option<u16>,
}

/// A request the CLI sent, as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// The dialect it was answered in, `None` for any other endpoint.
    pub dialect: Option<Dialect>,
    /// The body, when it was JSON.
    pub body: Option<Value>,
    /// The names of the tools the request offers the model.
    pub offered: Vec<String>,
    /// What was answered: the step played, or `None` for text.
    pub played: Option<usize>,
}

/// A tool result the CLI sent back, read from a later request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The step whose call this answers.
    pub step: usize,
    /// The tool's output as the CLI reported it to the model (text parts joined).
    pub text: String,
    /// The CLI's own error flag, where its dialect has one (Claude's `is_error`, Gemini's
    /// `error`); Codex and Pi report failures only in the text.
    pub is_error: Option<bool>,
}

/// A step the server could not play: the tool it needs was not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplayable {
    pub step: usize,
    pub reason: String,
}

/// Everything recorded so far.
#[derive(Debug, Clone, Default)]
pub struct Log {
    pub requests: Vec<Request>,
    /// One per step, the first report of it (a retry repeats the history).
    pub results: Vec<ToolResult>,
    pub unplayable: Vec<Unplayable>,
    /// Set when the closing text was sent after every step had been played.
    pub finished: bool,
}

impl Log {
    pub fn result(&self, step: usize) -> Option<&ToolResult> {
        self.results.iter().find(|r| r.step == step)
    }
}

#[derive(Debug)]
struct Shared {
    script: Script,
    log: Mutex<Log>,
}

/// A running scripted model. Stops when dropped.
#[derive(Debug)]
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedModel {
    /// Binds 127.0.0.1 on a free port and serves `script` from a thread of its own.
    pub fn start(script: Script) -> std::io::Result<ScriptedModel> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script,
            log: Mutex::new(Log::default()),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scripted-model".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let app = axum::Router::new().fallback(
                        move |method: Method, uri: Uri, body: Bytes| {
                            let state = state.clone();
                            async move { answer(&state, method, uri, body) }
                        },
                    );
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
            })?;
        Ok(ScriptedModel {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A copy of what has been recorded so far.
    pub fn log(&self) -> Log {
        self.shared.log.lock().expect("the log lock").clone()
    }

    /// Waits until the closing text has been sent (every step played) or `limit` has passed;
    /// `true` when finished.
    pub fn wait_finished(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.log().finished {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer(shared: &Shared, method: Method, uri: Uri, body: Bytes) -> Response {
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    let dialect = (method == Method::POST)
        .then(|| Dialect::for_path(uri.path()))
        .flatten();
    let mut log = shared.log.lock().expect("the log lock");
    let mut request = Request {
        method: method.to_string(),
        uri: uri.to_string(),
        dialect,
        body: json.clone(),
        offered: Vec::new(),
        played: None,
    };
    let (Some(dialect), Some(json)) = (dialect, json) else {
        log.requests.push(request);
        return other_endpoint(&method);
    };
    if let Some(status) = shared.script.fail_with {
        log.requests.push(request);
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                r#"{"error": {"type": "api_error", "message": "the scripted model fails on purpose"}}"#,
            ))
            .expect("a valid response");
    }
    request.offered = dialect.offered_tools(&json);
    let results = dialect.tool_results(&json);
    let done = results.len();
    for result in results {
        if log.result(result.step).is_none() {
            log.results.push(result);
        }
    }
    let streamed = dialect.streams(uri.path(), &json);
    let reply = if request.offered.is_empty() {
        // A side request (a title, a summary, Gemini's loop check) that asks for JSON of a
        // schema gets the plainest value of that schema: a check that finds nothing.
        let text = dialect
            .wanted_schema(&json)
            .map(|schema| plainest(schema).to_string())
            .unwrap_or_else(|| shared.script.closing.clone());
        dialect.text(&text, streamed)
    } else if let Some(step) = shared.script.steps.get(done) {
        match dialect.call(step, done, &request.offered) {
            Ok(reply) => {
                request.played = Some(done);
                reply
            }
            Err(reason) => {
                if !log.unplayable.iter().any(|u| u.step == done) {
                    log.unplayable.push(Unplayable { step: done, reason });
                }
                dialect.text(&shared.script.closing, streamed)
            }
        }
    } else {
        log.finished = true;
        dialect.text(&shared.script.closing, streamed)
    };
    log.requests.push(request);
    drop(log);
    let content_type = if streamed {
        "text/event-stream"
    } else {
        "application/json"
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from(reply))
        .expect("a valid response")
}

/// The plainest value a JSON schema allows: every property present, strings empty, numbers 0,
/// booleans false, lists empty.
fn plainest(schema: &Value) -> Value {
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.first().and_then(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match kind {
        "object" => Value::Object(
            schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(name, sub)| (name.clone(), plainest(sub)))
                .collect(),
        ),
        "string" => schema
            .get("enum")
            .and_then(|e| e.get(0))
            .cloned()
            .unwrap_or_else(|| Value::String(String::new())),
        "number" | "integer" => Value::from(0),
        "boolean" => Value::Bool(false),
        "array" => Value::Array(Vec::new()),
        _ => Value::Null,
    }
}

/// Any endpoint the script does not speak: a plausible, empty success (Claude's `HEAD /`,
/// metadata and telemetry endpoints), so that no client retries or gives up.
fn other_endpoint(method: &Method) -> Response {
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from("{}")
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .expect("a valid response")
}
