// foldgate's own reference server for the MCP conformance suite's server scenarios, written from the
// scenarios' descriptions and checks in the installed suite packages and from the MCP specification
// (the suite repository's own "everything" server is not published, and fetched code is never
// committed here). tests/e2e/test_conformance.py runs each suite version against it directly and
// through foldgate in front of it.
//
// Run by Node >= 22 with type stripping (only erasable TypeScript): `node reference_server.ts`, port
// from $PORT (loopback only). It prints "running on <url>" once it listens. It uses the pinned
// TypeScript SDK's low-level Server (JSON Schemas written out, no schema library) behind node:http.
//
// Two protocol generations on one /mcp:
// - 2025 (initialize): one MCP session per initialize (the SSE scenarios need a session id to resume
//   a stream); each session has its own Server and StreamableHTTPServerTransport with an in-memory
//   event store, so a POST stream carries a priming event and a retry field and can be resumed with
//   Last-Event-ID. Input is asked for with server-to-client requests.
// - 2026-07-28 (stateless, stateless.ts): a request without a session that names the version in its
//   header or _meta is answered by our own dispatcher (the SDK predates that revision), with input
//   asked for in InputRequiredResults (mrtr.ts) and long calls run as tasks (tasks.ts).
// Fixtures (tools, resources, prompts and their expected results) are shared: fixtures.ts.

import { randomUUID } from "node:crypto";
import http from "node:http";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

import {
  INTERACTIVE,
  LOG_LINES,
  PROGRESS_STEPS,
  RESOURCES,
  RESOURCE_TEMPLATES,
  complete,
  plainToolResult,
  readResource,
  sleep,
  text,
} from "./fixtures.ts";
import { ALL_PROMPTS, ALL_TOOLS, answer, draftPrompt, draftToolCall, isStateless } from "./stateless.ts";

// Extra the SDK passes to a request handler (typed loosely: this file is not type-checked).
type Extra = {
  sendNotification: (n: unknown) => Promise<void>;
  sendRequest: (r: unknown, schema: unknown) => Promise<any>;
  closeSSEStream?: () => void;
  _meta?: { progressToken?: string | number };
};

function newServer(): Server {
  const server = new Server(
    { name: "foldgate-conformance-reference", version: "1.0.0" },
    {
      capabilities: {
        tools: {},
        prompts: {},
        resources: { subscribe: true },
        logging: {},
        completions: {},
      },
    },
  );
  const subscriptions = new Set<string>();

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: ALL_TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra: any) =>
    callTool(server, request.params, extra as Extra),
  );

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: RESOURCE_TEMPLATES }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => readResource(request.params.uri));
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: ALL_PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) =>
    draftPrompt(request.params, server.getClientCapabilities() ?? {}),
  );

  server.setRequestHandler(CompleteRequestSchema, async (request) => complete(String(request.params.argument.value ?? "")));
  return server;
}

async function callTool(server: Server, params: any, extra: Extra) {
  const name: string = params.name;
  const args: Record<string, unknown> = params.arguments ?? {};
  const plain = plainToolResult(name, args);
  if (plain) return plain;
  const interactive = INTERACTIVE[name];
  if (interactive) {
    needClientCapability(server, interactive.capability);
    const ask = interactive.ask(args);
    const schema = ask.method === "sampling/createMessage" ? CreateMessageResultSchema : ElicitResultSchema;
    return interactive.finish(await extra.sendRequest(ask, schema));
  }
  switch (name) {
    case "test_tool_with_logging": {
      const log = (data: string) =>
        extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
      for (const [i, line] of LOG_LINES.entries()) {
        if (i > 0) await sleep(50);
        await log(line);
      }
      return { content: [text("Tool with logging executed successfully")] };
    }
    case "test_tool_with_progress": {
      const token = extra._meta?.progressToken;
      for (const progress of PROGRESS_STEPS) {
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
        }
        if (progress < 100) await sleep(50);
      }
      return { content: [text("Tool with progress executed successfully")] };
    }
    case "test_reconnection": {
      // Close this request's SSE stream (the priming event already gave the client an event id and a
      // retry interval), then answer: the result is stored and replayed when the client resumes.
      await sleep(50);
      extra.closeSSEStream?.();
      await sleep(200);
      return { content: [text("Reconnection test completed successfully")] };
    }
    default:
      // The 2026-07-28 tools answer a session too, with the session client's capabilities.
      return draftToolCall(name, params, server.getClientCapabilities() ?? {});
  }
}

function needClientCapability(server: Server, capability: "sampling" | "elicitation") {
  if (!server.getClientCapabilities()?.[capability]) {
    throw new McpError(ErrorCode.InvalidRequest, `the client does not support ${capability}`);
  }
}


// DNS rebinding: a loopback server answers only requests whose Host (and Origin, when sent) name a
// loopback host, whatever the port.
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);
function loopbackHost(value: string | undefined): boolean {
  if (!value) return false;
  const host = value.startsWith("[") ? value.slice(0, value.indexOf("]") + 1) : value.split(":")[0];
  return LOOPBACK.has(host.toLowerCase());
}
function loopbackOrigin(origin: string | undefined): boolean {
  if (origin === undefined) return true;
  try {
    return loopbackHost(new URL(origin).host);
  } catch {
    return false;
  }
}

function fail(res: http.ServerResponse, status: number, code: number, message: string) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const sessions = new Map<string, StreamableHTTPServerTransport>();

async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (url.pathname !== "/mcp") return fail(res, 404, -32601, "Not found");
  if (!loopbackHost(req.headers.host) || !loopbackOrigin(req.headers.origin as string | undefined)) {
    return fail(res, 403, -32000, "Forbidden: Host and Origin must name a loopback host");
  }
  const sessionId = req.headers["mcp-session-id"] as string | undefined;
  let body: unknown = undefined;
  if (req.method === "POST") {
    try {
      body = await readJson(req);
    } catch {
      return fail(res, 400, -32700, "Parse error");
    }
  }
  if (req.method === "POST" && isStateless(req.headers, body)) return serveStateless(req, res, body);
  let transport = sessionId ? sessions.get(sessionId) : undefined;
  if (!transport) {
    if (sessionId) return fail(res, 404, -32001, "Session not found");
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return fail(res, 400, -32000, "Bad Request: no session id, and not an initialize request");
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new InMemoryEventStore(),
      retryInterval: 500,
      onsessioninitialized: (id) => {
        sessions.set(id, created);
      },
    });
    created.onclose = () => {
      if (created.sessionId) sessions.delete(created.sessionId);
    };
    await newServer().connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
}

// A 2026-07-28 request: one JSON answer, or for subscriptions/listen an SSE stream held open until the
// client goes.
async function serveStateless(req: http.IncomingMessage, res: http.ServerResponse, body: unknown) {
  const reply = await answer(req.headers, body);
  if ("stream" in reply) {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    const send = (frame: object) => res.write(`event: message\ndata: ${JSON.stringify(frame)}\n\n`);
    send(await reply.stream(send));
    res.end();
    return;
  }
  if ("listen" in reply) {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    reply.listen(
      (frame) => res.write(`event: message\ndata: ${JSON.stringify(frame)}\n\n`),
      (cleanup) => res.on("close", cleanup),
    );
    return;
  }
  if (reply.body === undefined) {
    res.writeHead(reply.status).end();
    return;
  }
  res.writeHead(reply.status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(reply.body));
}

const port = Number(process.env.PORT ?? 3000);
const httpServer = http.createServer((req, res) => {
  handle(req, res).catch((error) => {
    if (!res.headersSent) fail(res, 500, -32603, `Internal error: ${error}`);
    else res.end();
  });
});
httpServer.listen(port, "127.0.0.1", () => {
  console.log(`foldgate conformance reference server running on http://127.0.0.1:${port}/mcp`);
});
