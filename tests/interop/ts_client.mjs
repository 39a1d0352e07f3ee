// The official TypeScript MCP SDK's client against halomem (stdio or streamable HTTP): list the
// tools, call each, print what came back as one JSON document. The SDK's callTool validates every
// structuredContent against the tool's published outputSchema, and throws when it does not fit.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, token] = process.argv.slice(2);
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: target, args: ["mcp"], env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target + "/mcp"),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const client = new Client({ name: "ts-interop", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion(), tools: [], calls: {} };
const { tools } = await client.listTools();
out.tools = tools.map((t) => ({ name: t.name, title: t.title ?? null, outputSchema: Boolean(t.outputSchema),
                                readOnly: t.annotations?.readOnlyHint ?? null }));
const made = await client.callTool({ name: "remember", arguments: { content: "The TS client was here", source: "interop" } });
out.calls.remember = { isError: Boolean(made.isError), structured: made.structuredContent, text: made.content?.[0]?.text };
const id = made.structuredContent.id;
const script = [
  ["search", { query: "TS client", k: 3 }], ["get", { id }], ["recent", { limit: 2 }], ["history", { id }],
  ["whoami", {}], ["entities", {}], ["concepts", { query: "anything" }],
  ["remember_many", { memories: [{ content: "one from TS" }, { content: "two from TS", source: "interop" }] }],
  ["supersede", { id, content: "The TS client was here again" }],
];
for (const [name, args] of script) {
  const r = await client.callTool({ name, arguments: args });
  out.calls[name] = { isError: Boolean(r.isError), structured: r.structuredContent ?? null, text: r.content?.[0]?.text ?? "" };
}
const erased = await client.callTool({ name: "erase", arguments: { id: out.calls.supersede.structured.id } });
out.calls.erase = { isError: Boolean(erased.isError), structured: erased.structuredContent ?? null, text: erased.content?.[0]?.text ?? "" };
const bad = await client.callTool({ name: "search", arguments: { query: "x", k: true } });
out.refused = { isError: Boolean(bad.isError), text: bad.content?.[0]?.text ?? "" };
await client.close();
console.log(JSON.stringify(out));
