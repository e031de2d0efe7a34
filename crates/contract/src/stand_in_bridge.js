// cli-sandbox contract: a stand-in for the AgentWorks MCP bridge (a stdio MCP server, one JSON
// message per line). Its one tool, `mark`, appends its `text` to the file named by
// CLI_SANDBOX_BRIDGE_MARKER, so that the runner reads from the disk that a call reached the
// bridge. With CLI_SANDBOX_STARTED_MARKER set it stands in for a person's own server and writes
// that file as soon as it starts. It does nothing else.
"use strict";
const fs = require("node:fs");
const marker = process.env.CLI_SANDBOX_BRIDGE_MARKER;
// Set for a server standing in for the person's own: it proves it was started.
if (process.env.CLI_SANDBOX_STARTED_MARKER) {
  fs.writeFileSync(process.env.CLI_SANDBOX_STARTED_MARKER, String(process.pid));
}
let buffer = "";
const reply = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let newline;
  while ((newline = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, newline);
    buffer = buffer.slice(newline + 1);
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      continue;
    }
    if (message.id === undefined) continue;
    if (message.method === "initialize") {
      reply(message.id, {
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "stand-in-bridge", version: "1" },
      });
    } else if (message.method === "tools/list") {
      reply(message.id, {
        tools: [
          {
            name: "mark",
            description: "Append the text to the bridge's marker file.",
            inputSchema: {
              type: "object",
              properties: { text: { type: "string" } },
              required: ["text"],
            },
          },
        ],
      });
    } else if (message.method === "tools/call" && message.params.name === "mark") {
      const text = String((message.params.arguments || {}).text || "");
      try {
        fs.appendFileSync(marker, text + "\n");
        reply(message.id, { content: [{ type: "text", text: `marked ${text}` }] });
      } catch (e) {
        reply(message.id, { content: [{ type: "text", text: String(e) }], isError: true });
      }
    } else {
      process.stdout.write(
        JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "not found" } }) + "\n",
      );
    }
  }
});
