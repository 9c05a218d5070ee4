// Drives the gateway's MCP endpoint with the official
// @modelcontextprotocol/sdk client. Usage: node run.mjs <base URL>; prints
// one JSON object for the Go test (gateway/mcp) to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const base = process.argv[2];
const endpoint = new URL(`${base}/mcp`);
const auth = (token) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");

const out = { elicited: [], progress: [] };

const client = new Client({ name: "interop", version: "1" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.elicited.push(req.params.message);
  return { action: "accept", content: { response: "Ada" } };
});
const transport = new StreamableHTTPClientTransport(endpoint, auth("token-alice"));
await client.connect(transport);

out.tools = (await client.listTools()).tools.map((t) => t.name);
const hello = await client.callTool({ name: "HelperAgent", arguments: { message: "hi" } }, undefined, {
  onprogress: (p) => out.progress.push(p.message),
});
out.hello = text(hello);
out.ask = text(await client.callTool({ name: "HelperAgent", arguments: { message: "ask" } }));
out.failIsError = (await client.callTool({ name: "HelperAgent", arguments: { message: "fail" } })).isError === true;

// Bob sends a request on Alice's session.
const hijack = await fetch(endpoint, {
  method: "POST",
  headers: {
    Authorization: "Bearer token-bob", "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", "Mcp-Session-Id": transport.sessionId,
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
});
out.hijackStatus = hijack.status;
await client.close();

// No valid token: the connection is refused.
try {
  const c = new Client({ name: "interop", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(endpoint, auth("nobody")));
  out.noToken = "";
} catch (e) {
  out.noToken = String(e?.message ?? e);
}

console.log(JSON.stringify(out));
