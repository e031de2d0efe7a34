// cli-sandbox: the MCP bridge for Pi, written by the launch into the chat's runtime and loaded
// with `-e`. Pi has no MCP client of its own; this extension is one: it starts the bridge
// server named in BRIDGE (a stdio MCP server), lists its tools, and registers each as a Pi
// tool whose call is forwarded to the server. Nothing else: no other server, no other tool.
"use strict";
const { spawn } = require("node:child_process");

const BRIDGE = /*BRIDGE*/ null;

module.exports = async function cliSandboxMcpBridge(pi) {
  if (!BRIDGE) return;
  const child = spawn(BRIDGE.command, BRIDGE.args || [], {
    env: { ...process.env, ...(BRIDGE.env || {}) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const pending = new Map();
  let nextId = 1;
  let buffer = "";
  let failed = null;
  const failAll = (error) => {
    failed = error;
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
  };
  child.on("error", failAll);
  child.on("exit", (code) => failAll(new Error(`the MCP bridge exited (${code})`)));
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (!line) continue;
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      const waiting = pending.get(message.id);
      if (!waiting) continue;
      pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error.message || "MCP error"));
      else waiting.resolve(message.result);
    }
  });
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      if (failed) return reject(failed);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  const notify = (method, params) =>
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method, params }) + "\n");

  await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "cli-sandbox-pi-bridge", version: "1" },
  });
  notify("notifications/initialized", {});
  const listed = await request("tools/list", {});
  for (const tool of listed.tools || []) {
    pi.registerTool({
      name: tool.name,
      label: tool.title || tool.name,
      description: tool.description || tool.name,
      parameters: tool.inputSchema || { type: "object", properties: {} },
      async execute(_id, params) {
        const result = await request("tools/call", { name: tool.name, arguments: params || {} });
        const content = (result.content || []).map((c) =>
          c.type === "text" ? c : { type: "text", text: JSON.stringify(c) },
        );
        if (result.isError) throw new Error(content.map((c) => c.text).join("\n") || "MCP tool error");
        return { content, details: {} };
      },
    });
  }
  pi.on("session_shutdown", () => child.kill());
  process.on("exit", () => child.kill());
};
