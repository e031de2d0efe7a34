//! The four wire dialects: which tools a request offers, which tool results it carries, and how
//! a tool call or a text answer is streamed back, each as its client expects.
//!
//! Call ids carry the step's number (`…cs<N>`), so that a result is matched to its step even if
//! a CLI reorders its history; a result without such an id counts by its position.

use serde_json::{Value, json};

use crate::{Step, ToolKind, ToolResult};

/// The API a request speaks, told by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Responses (`/v1/responses`): Codex.
    Responses,
    /// Anthropic Messages (`/v1/messages`): Claude Code.
    Messages,
    /// Gemini `…:streamGenerateContent` / `…:generateContent`: Gemini CLI.
    Gemini,
    /// OpenAI Chat Completions (`/v1/chat/completions`): Pi.
    ChatCompletions,
}

impl Dialect {
    pub fn for_path(path: &str) -> Option<Dialect> {
        if path.ends_with("/responses") {
            Some(Dialect::Responses)
        } else if path.ends_with("/messages") {
            Some(Dialect::Messages)
        } else if path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent") {
            Some(Dialect::Gemini)
        } else if path.ends_with("/chat/completions") {
            Some(Dialect::ChatCompletions)
        } else {
            None
        }
    }

    /// Whether this dialect's CLI has a tool for `kind` (Codex has no file-reading tool; its
    /// writes and edits go through `apply_patch`).
    pub fn supports(self, kind: ToolKind) -> bool {
        !(self == Dialect::Responses && kind == ToolKind::Read)
    }

    /// Whether the client asked for a stream: Gemini by its path (`generateContent` is the
    /// non-streaming twin), the others by `"stream"` in the body.
    pub(crate) fn streams(self, path: &str, body: &Value) -> bool {
        match self {
            Dialect::Gemini => !path.ends_with(":generateContent"),
            _ => body.get("stream").and_then(Value::as_bool).unwrap_or(true),
        }
    }

    /// The JSON schema a side request wants its answer to follow (Gemini's
    /// `generationConfig.responseJsonSchema`), if any.
    pub(crate) fn wanted_schema(self, body: &Value) -> Option<&Value> {
        match self {
            Dialect::Gemini => {
                let config = body.get("generationConfig")?;
                config
                    .get("responseJsonSchema")
                    .or_else(|| config.get("responseSchema"))
            }
            _ => None,
        }
    }

    /// The names of the tools the request offers.
    pub(crate) fn offered_tools(self, body: &Value) -> Vec<String> {
        let tools = body.get("tools").and_then(Value::as_array);
        let Some(tools) = tools else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for tool in tools {
            match self {
                Dialect::Responses | Dialect::Messages => {
                    if let Some(name) = tool.get("name").and_then(Value::as_str) {
                        names.push(name.to_owned());
                    }
                }
                Dialect::ChatCompletions => {
                    if let Some(name) = tool.pointer("/function/name").and_then(Value::as_str) {
                        names.push(name.to_owned());
                    }
                }
                Dialect::Gemini => {
                    for decl in tool
                        .get("functionDeclarations")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(name) = decl.get("name").and_then(Value::as_str) {
                            names.push(name.to_owned());
                        }
                    }
                }
            }
        }
        names
    }

    /// The tool results in the request's history, in order.
    pub(crate) fn tool_results(self, body: &Value) -> Vec<ToolResult> {
        let mut found: Vec<(Option<usize>, String, Option<bool>)> = Vec::new();
        let items = |key: &str| {
            body.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        match self {
            Dialect::Responses => {
                for item in items("input") {
                    let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
                    if kind == "function_call_output" || kind == "custom_tool_call_output" {
                        found.push((
                            step_of(item.get("call_id")),
                            text_of(item.get("output")),
                            None,
                        ));
                    }
                }
            }
            Dialect::Messages => {
                for message in items("messages") {
                    for block in message
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                            found.push((
                                step_of(block.get("tool_use_id")),
                                text_of(block.get("content")),
                                Some(
                                    block
                                        .get("is_error")
                                        .and_then(Value::as_bool)
                                        .unwrap_or(false),
                                ),
                            ));
                        }
                    }
                }
            }
            Dialect::Gemini => {
                for content in items("contents") {
                    for part in content
                        .get("parts")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(response) = part.get("functionResponse") {
                            let inner = response.get("response");
                            let error = inner.and_then(|r| r.get("error"));
                            let text = match error {
                                Some(e) => text_of(Some(e)),
                                None => text_of(inner.and_then(|r| r.get("output")).or(inner)),
                            };
                            found.push((step_of(response.get("id")), text, Some(error.is_some())));
                        }
                    }
                }
            }
            Dialect::ChatCompletions => {
                for message in items("messages") {
                    if message.get("role").and_then(Value::as_str) == Some("tool") {
                        found.push((
                            step_of(message.get("tool_call_id")),
                            text_of(message.get("content")),
                            None,
                        ));
                    }
                }
            }
        }
        found
            .into_iter()
            .enumerate()
            .map(|(position, (step, text, is_error))| ToolResult {
                step: step.unwrap_or(position),
                text,
                is_error,
            })
            .collect()
    }

    /// The answer that asks the CLI to run `step` (number `n`), or why it cannot be played.
    pub(crate) fn call(self, step: &Step, n: usize, offered: &[String]) -> Result<String, String> {
        let has = |name: &str| offered.iter().any(|o| o == name);
        let need = |name: &str| -> Result<String, String> {
            if has(name) {
                Ok(name.to_owned())
            } else {
                Err(format!(
                    "the request does not offer `{name}` (offered: {})",
                    offered.join(", ")
                ))
            }
        };
        let mcp = |tool: &str| -> Result<String, String> {
            offered
                .iter()
                .find(|o| {
                    *o == tool
                        || o.ends_with(&format!("__{tool}"))
                        || o.ends_with(&format!("_{tool}"))
                })
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "no offered tool is the MCP tool `{tool}` (offered: {})",
                        offered.join(", ")
                    )
                })
        };
        let path = |p: &std::path::Path| p.display().to_string();
        match self {
            Dialect::Responses => {
                let (name, custom, args) = match step {
                    Step::Shell { command } => {
                        (need("exec_command")?, None, json!({ "cmd": command }))
                    }
                    Step::Write { path: p, content } => (
                        need("apply_patch")?,
                        Some(patch_add(&path(p), content)),
                        Value::Null,
                    ),
                    Step::Edit { path: p, old, new } => (
                        need("apply_patch")?,
                        Some(patch_update(&path(p), old, new)),
                        Value::Null,
                    ),
                    Step::Read { .. } => {
                        return Err("Codex has no file-reading tool".into());
                    }
                    Step::Mcp { tool, arguments } => (mcp(tool)?, None, arguments.clone()),
                };
                Ok(responses_call(&name, custom, &args, n))
            }
            Dialect::Messages => {
                let (name, input) = match step {
                    Step::Shell { command } => (need("Bash")?, json!({ "command": command })),
                    Step::Read { path: p } => (need("Read")?, json!({ "file_path": path(p) })),
                    Step::Write { path: p, content } => (
                        need("Write")?,
                        json!({ "file_path": path(p), "content": content }),
                    ),
                    Step::Edit { path: p, old, new } => (
                        need("Edit")?,
                        json!({ "file_path": path(p), "old_string": old, "new_string": new }),
                    ),
                    Step::Mcp { tool, arguments } => (mcp(tool)?, arguments.clone()),
                };
                Ok(messages_call(&name, &input, n))
            }
            Dialect::Gemini => {
                let (name, args) = match step {
                    Step::Shell { command } => {
                        (need("run_shell_command")?, json!({ "command": command }))
                    }
                    Step::Read { path: p } => (need("read_file")?, json!({ "file_path": path(p) })),
                    Step::Write { path: p, content } => (
                        need("write_file")?,
                        json!({ "file_path": path(p), "content": content }),
                    ),
                    Step::Edit { path: p, old, new } => (
                        need("replace")?,
                        json!({
                            "file_path": path(p),
                            "instruction": "Apply the scripted edit.",
                            "old_string": old,
                            "new_string": new,
                        }),
                    ),
                    Step::Mcp { tool, arguments } => (mcp(tool)?, arguments.clone()),
                };
                Ok(gemini_call(&name, &args, n))
            }
            Dialect::ChatCompletions => {
                let (name, args) = match step {
                    Step::Shell { command } => (need("bash")?, json!({ "command": command })),
                    Step::Read { path: p } => (need("read")?, json!({ "path": path(p) })),
                    Step::Write { path: p, content } => (
                        need("write")?,
                        json!({ "path": path(p), "content": content }),
                    ),
                    Step::Edit { path: p, old, new } => (
                        need("edit")?,
                        json!({ "path": path(p), "edits": [{ "oldText": old, "newText": new }] }),
                    ),
                    Step::Mcp { tool, arguments } => (mcp(tool)?, arguments.clone()),
                };
                Ok(chat_call(&name, &args, n))
            }
        }
    }

    /// A text answer that ends the turn.
    pub(crate) fn text(self, text: &str, streamed: bool) -> String {
        match self {
            Dialect::Responses => {
                let item = json!({
                    "type": "message", "role": "assistant", "id": "msg_cs",
                    "content": [{ "type": "output_text", "text": text, "annotations": [] }],
                });
                if streamed {
                    sse(&[
                        (
                            "response.created",
                            json!({"type": "response.created", "response": {"id": "resp_cs"}}),
                        ),
                        (
                            "response.output_item.done",
                            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
                        ),
                        ("response.completed", responses_completed()),
                    ])
                } else {
                    json!({"id": "resp_cs", "object": "response", "status": "completed", "output": [item]})
                        .to_string()
                }
            }
            Dialect::Messages => {
                if streamed {
                    sse(&[
                        ("message_start", messages_start()),
                        (
                            "content_block_start",
                            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                        ),
                        (
                            "content_block_delta",
                            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
                        ),
                        (
                            "content_block_stop",
                            json!({"type": "content_block_stop", "index": 0}),
                        ),
                        ("message_delta", messages_delta("end_turn")),
                        ("message_stop", json!({"type": "message_stop"})),
                    ])
                } else {
                    json!({
                        "id": "msg_cs", "type": "message", "role": "assistant", "model": "scripted",
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn", "stop_sequence": null,
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    })
                    .to_string()
                }
            }
            Dialect::Gemini => {
                let chunk = gemini_chunk(json!({ "text": text }));
                if streamed {
                    format!("data: {chunk}\n\n")
                } else {
                    chunk.to_string()
                }
            }
            Dialect::ChatCompletions => {
                if streamed {
                    let mut out = chat_chunk(json!({"role": "assistant", "content": text}), None);
                    out.push_str(&chat_chunk(json!({}), Some("stop")));
                    out.push_str("data: [DONE]\n\n");
                    out
                } else {
                    json!({
                        "id": "chatcmpl-cs", "object": "chat.completion", "created": 0, "model": "scripted",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    })
                    .to_string()
                }
            }
        }
    }
}

/// The step number in a call id `…cs<N>`.
fn step_of(id: Option<&Value>) -> Option<usize> {
    let id = id?.as_str()?;
    let at = id.rfind("cs")?;
    id[at + 2..].parse().ok()
}

/// A tool output as text: a string as it is, a list of text parts joined, anything else as JSON.
fn text_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("text").and_then(Value::as_str) {
                Some(t) => t.to_owned(),
                None => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => match other.get("content").or_else(|| other.get("output")) {
            Some(inner) => text_of(Some(inner)),
            None => other.to_string(),
        },
    }
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn patch_add(path: &str, content: &str) -> String {
    let mut patch = format!("*** Begin Patch\n*** Add File: {path}\n");
    for line in content.lines() {
        patch.push('+');
        patch.push_str(line);
        patch.push('\n');
    }
    patch.push_str("*** End Patch");
    patch
}

fn patch_update(path: &str, old: &str, new: &str) -> String {
    let mut patch = format!("*** Begin Patch\n*** Update File: {path}\n@@\n");
    for line in old.lines() {
        patch.push('-');
        patch.push_str(line);
        patch.push('\n');
    }
    for line in new.lines() {
        patch.push('+');
        patch.push_str(line);
        patch.push('\n');
    }
    patch.push_str("*** End Patch");
    patch
}

fn responses_completed() -> Value {
    json!({
        "type": "response.completed",
        "response": {
            "id": "resp_cs",
            "usage": {
                "input_tokens": 1, "input_tokens_details": null,
                "output_tokens": 1, "output_tokens_details": null, "total_tokens": 2,
            },
        },
    })
}

fn responses_call(name: &str, custom: Option<String>, args: &Value, n: usize) -> String {
    let call_id = format!("call_cs{n}");
    let item = match custom {
        Some(input) => json!({
            "type": "custom_tool_call", "id": format!("ctc_cs{n}"), "status": "completed",
            "call_id": call_id, "name": name, "input": input,
        }),
        None => json!({
            "type": "function_call", "id": format!("fc_cs{n}"), "status": "completed",
            "call_id": call_id, "name": name, "arguments": args.to_string(),
        }),
    };
    sse(&[
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": format!("resp_cs{n}")}}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        ("response.completed", responses_completed()),
    ])
}

fn messages_start() -> Value {
    json!({
        "type": "message_start",
        "message": {
            "id": "msg_cs", "type": "message", "role": "assistant", "model": "scripted",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    })
}

fn messages_delta(stop_reason: &str) -> Value {
    json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 1},
    })
}

fn messages_call(name: &str, input: &Value, n: usize) -> String {
    sse(&[
        ("message_start", messages_start()),
        (
            "content_block_start",
            json!({
                "type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": format!("toolu_cs{n}"), "name": name, "input": {}},
            }),
        ),
        (
            "content_block_delta",
            json!({
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()},
            }),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ("message_delta", messages_delta("tool_use")),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

fn gemini_chunk(part: Value) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [part]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "scripted",
    })
}

fn gemini_call(name: &str, args: &Value, n: usize) -> String {
    let chunk = gemini_chunk(json!({
        "functionCall": {"name": name, "args": args, "id": format!("call_cs{n}")},
    }));
    format!("data: {chunk}\n\n")
}

fn chat_chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-cs", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

fn chat_call(name: &str, args: &Value, n: usize) -> String {
    let mut out = chat_chunk(
        json!({
            "role": "assistant",
            "tool_calls": [{
                "index": 0, "id": format!("call_cs{n}"), "type": "function",
                "function": {"name": name, "arguments": args.to_string()},
            }],
        }),
        None,
    );
    out.push_str(&chat_chunk(json!({}), Some("tool_calls")));
    out.push_str("data: [DONE]\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_carry_the_step_and_results_are_matched_by_them() {
        let body = json!({"input": [
            {"type": "function_call_output", "call_id": "call_cs3", "output": "Process exited with code 0"},
            {"type": "custom_tool_call_output", "call_id": "unknown", "output": {"content": "ok"}},
        ]});
        let results = Dialect::Responses.tool_results(&body);
        assert_eq!(results[0].step, 3);
        assert_eq!(results[1].step, 1, "no id: its position");
        assert_eq!(results[1].text, "ok");
    }

    #[test]
    fn a_missing_tool_is_a_reason_not_a_call() {
        let step = Step::Read { path: "/x".into() };
        assert!(
            Dialect::Messages
                .call(&step, 0, &["Bash".to_owned()])
                .unwrap_err()
                .contains("`Read`")
        );
        assert!(Dialect::Responses.call(&step, 0, &[]).is_err());
    }

    #[test]
    fn mcp_tools_are_found_by_suffix() {
        let step = Step::Mcp {
            tool: "mark".into(),
            arguments: json!({}),
        };
        let reply = Dialect::Messages
            .call(&step, 2, &["Bash".into(), "mcp__bridge__mark".into()])
            .unwrap();
        assert!(reply.contains("mcp__bridge__mark") && reply.contains("toolu_cs2"));
    }
}
