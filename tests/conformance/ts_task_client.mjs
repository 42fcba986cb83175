// The TypeScript SDK client making one task-augmented tool call (2025-11-25 tasks), for tests.
//
//   node ts_task_client.mjs URL NAME ARGUMENTS_JSON
//
// Connects over Streamable HTTP, lists the tools, then calls NAME through the SDK's task API
// (client.experimental.tasks.callToolStream with a task TTL: a tools/call carrying params.task, then
// the SDK's own tasks/get polling and tasks/result). Prints one JSON line per message the stream
// yields: {"type": "taskCreated" | "taskStatus", "task"}, {"type": "result", "result"} or
// {"type": "error", "error": {"code", "message"}}. Exits non-zero only when it cannot connect.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

async function main() {
  const [url, name, args] = process.argv.slice(2);
  if (!url || !name) throw new Error("usage: node ts_task_client.mjs URL NAME ARGUMENTS_JSON");
  const client = new Client({ name: "foldgate-ts-task-client-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await client.listTools();
    const stream = client.experimental.tasks.callToolStream(
      { name, arguments: JSON.parse(args ?? "{}") },
      undefined,
      { task: { ttl: 60000 } },
    );
    for await (const message of stream) {
      if (message.type === "error") {
        const err = message.error;
        console.log(JSON.stringify({ type: "error", error: { code: err?.code ?? null, message: String(err?.message ?? err) } }));
      } else {
        console.log(JSON.stringify(message));
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
