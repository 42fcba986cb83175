// The TypeScript SDK client (the one inside most agent apps and IDEs) against an MCP URL, for tests.
//
//   node ts_client.mjs URL < calls.json      calls.json: [{"name": "...", "arguments": {...}}, ...]
//                                            (a call with "progress": true also prints its progress)
//
// Connects over Streamable HTTP, lists every tool (all pages: the SDK caches each tool's outputSchema
// from the listing and validates later results against it, which is the behaviour under test), then
// makes each call in order. Prints one JSON line {"tools": [...]}, then one line per call:
// {"tool", "ok": true, "result"} or {"tool", "ok": false, "error": {"code", "message"}} when the SDK
// throws. Exits non-zero only when it cannot connect or list.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8").trim();
  return text ? JSON.parse(text) : [];
}

function describeError(err) {
  return { code: typeof err?.code === "number" ? err.code : null, message: String(err?.message ?? err) };
}

async function main() {
  const url = process.argv[2];
  if (!url) throw new Error("usage: node ts_client.mjs URL < calls.json");
  const calls = await readStdin();
  const client = new Client({ name: "foldgate-ts-client-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor);
    console.log(JSON.stringify({ tools: names }));
    for (const call of calls) {
      // "progress": true asks for progress notifications (onprogress sends a progressToken) and
      // prints them, in the order received, with the call's line.
      const progress = [];
      const options = call.progress ? { onprogress: (p) => progress.push(p) } : undefined;
      try {
        const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, options);
        console.log(JSON.stringify({ tool: call.name, ok: true, result, ...(call.progress ? { progress } : {}) }));
      } catch (err) {
        console.log(JSON.stringify({ tool: call.name, ok: false, error: describeError(err) }));
      }
    }
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err?.stack ?? String(err));
  process.exit(1);
});
