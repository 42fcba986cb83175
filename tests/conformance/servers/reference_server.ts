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
// One MCP session per initialize (the SSE scenarios need a session id to resume a stream); each
// session has its own Server and StreamableHTTPServerTransport with an in-memory event store, so a
// POST stream carries a priming event and a retry field and can be resumed with Last-Event-ID.

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

// A 1x1 red PNG, and a 10 ms silent 8 kHz mono 8-bit WAV built here (RIFF header + 80 samples).
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = (() => {
  const samples = Buffer.alloc(80, 0x80);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + samples.length, 4);
  header.write("WAVEfmt ", 8);
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24); // sample rate
  header.writeUInt32LE(8000, 28); // byte rate
  header.writeUInt16LE(1, 32); // block align
  header.writeUInt16LE(8, 34); // bits per sample
  header.write("data", 36);
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]).toString("base64");
})();

const NO_ARGS = { type: "object", properties: {} };
const text = (t: string) => ({ type: "text", text: t });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const TOOLS = [
  { name: "test_simple_text", description: "Returns one text block", inputSchema: NO_ARGS },
  { name: "test_image_content", description: "Returns one PNG image block", inputSchema: NO_ARGS },
  { name: "test_audio_content", description: "Returns one WAV audio block", inputSchema: NO_ARGS },
  { name: "test_embedded_resource", description: "Returns an embedded text resource", inputSchema: NO_ARGS },
  {
    name: "test_multiple_content_types",
    description: "Returns text, image and embedded resource blocks",
    inputSchema: NO_ARGS,
  },
  { name: "test_tool_with_logging", description: "Sends three info log messages while it runs", inputSchema: NO_ARGS },
  { name: "test_tool_with_progress", description: "Reports progress 0, 50 and 100 of 100", inputSchema: NO_ARGS },
  { name: "test_error_handling", description: "Always fails with isError", inputSchema: NO_ARGS },
  {
    name: "test_sampling",
    description: "Asks the client's LLM (sampling/createMessage) and returns its answer",
    inputSchema: {
      type: "object",
      properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"],
    },
  },
  {
    name: "test_elicitation",
    description: "Asks the user (elicitation/create) for a username and email",
    inputSchema: {
      type: "object",
      properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"],
    },
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Elicits a form whose fields all carry defaults (SEP-1034)",
    inputSchema: NO_ARGS,
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Elicits a form with the five enum variants (SEP-1330)",
    inputSchema: NO_ARGS,
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
  },
  {
    name: "test_reconnection",
    description: "Closes its SSE stream mid-call; the result comes after the client resumes",
    inputSchema: NO_ARGS,
  },
];

const ELICIT_DEFAULTS = {
  type: "object",
  properties: {
    name: { type: "string", description: "User name", default: "John Doe" },
    age: { type: "integer", description: "User age", default: 30 },
    score: { type: "number", description: "User score", default: 95.5 },
    status: {
      type: "string",
      description: "User status",
      enum: ["active", "inactive", "pending"],
      default: "active",
    },
    verified: { type: "boolean", description: "Verification status", default: true },
  },
};

const ELICIT_ENUMS = {
  type: "object",
  properties: {
    untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
    titledSingle: {
      type: "string",
      oneOf: [
        { const: "value1", title: "First Option" },
        { const: "value2", title: "Second Option" },
        { const: "value3", title: "Third Option" },
      ],
    },
    legacyEnum: {
      type: "string",
      enum: ["opt1", "opt2", "opt3"],
      enumNames: ["Option One", "Option Two", "Option Three"],
    },
    untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
    titledMulti: {
      type: "array",
      items: {
        anyOf: [
          { const: "value1", title: "First Choice" },
          { const: "value2", title: "Second Choice" },
          { const: "value3", title: "Third Choice" },
        ],
      },
    },
  },
};

const RESOURCES = [
  {
    uri: "test://static-text",
    name: "static-text",
    description: "A static text resource",
    mimeType: "text/plain",
  },
  {
    uri: "test://static-binary",
    name: "static-binary",
    description: "A static binary resource (a PNG)",
    mimeType: "image/png",
  },
  {
    uri: "test://watched-resource",
    name: "watched-resource",
    description: "A resource clients may subscribe to",
    mimeType: "text/plain",
  },
];
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const PROMPTS = [
  { name: "test_simple_prompt", description: "A prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with two required arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt that embeds a resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
];

const COMPLETIONS = ["paris", "park", "party", "test", "testing"];

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

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra: any) =>
    callTool(server, request.params.name, request.params.arguments ?? {}, extra as Extra),
  );

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: "test://template/{id}/data",
        name: "template-data",
        description: "Data for one id",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (uri === "test://static-text") {
      return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
    }
    if (uri === "test://static-binary") {
      return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
    }
    if (uri === "test://watched-resource") {
      return { contents: [{ uri, mimeType: "text/plain", text: "Watched resource content." }] };
    }
    const match = TEMPLATE.exec(uri);
    if (match) {
      const id = match[1];
      const body = JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` });
      return { contents: [{ uri, mimeType: "application/json", text: body }] };
    }
    // The spec's error for an unknown resource (SEP-2164 names it): -32002 with the uri.
    throw new McpError(-32002, "Resource not found", { uri });
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => getPrompt(request.params.name, request.params.arguments ?? {}));

  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const prefix = String(request.params.argument.value ?? "");
    const values = COMPLETIONS.filter((v) => v.startsWith(prefix));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

async function callTool(server: Server, name: string, args: Record<string, unknown>, extra: Extra) {
  switch (name) {
    case "test_simple_text":
      return { content: [text("This is a simple text response for testing.")] };
    case "test_image_content":
      return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
    case "test_audio_content":
      return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
    case "test_embedded_resource":
      return {
        content: [
          {
            type: "resource",
            resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." },
          },
        ],
      };
    case "test_multiple_content_types":
      return {
        content: [
          text("Multiple content types test:"),
          { type: "image", data: PNG, mimeType: "image/png" },
          {
            type: "resource",
            resource: {
              uri: "test://mixed-content-resource",
              mimeType: "application/json",
              text: JSON.stringify({ test: "data", value: 123 }),
            },
          },
        ],
      };
    case "test_tool_with_logging": {
      const log = (data: string) =>
        extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
      await log("Tool execution started");
      await sleep(50);
      await log("Tool processing data");
      await sleep(50);
      await log("Tool execution completed");
      return { content: [text("Tool with logging executed successfully")] };
    }
    case "test_tool_with_progress": {
      const token = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
        }
        if (progress < 100) await sleep(50);
      }
      return { content: [text("Tool with progress executed successfully")] };
    }
    case "test_error_handling":
      return { isError: true, content: [text("This tool intentionally returns an error for testing")] };
    case "test_sampling": {
      needClientCapability(server, "sampling");
      const result = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: {
            messages: [{ role: "user", content: text(String(args.prompt ?? "")) }],
            maxTokens: 100,
          },
        },
        CreateMessageResultSchema,
      );
      const answer = result.content?.type === "text" ? result.content.text : JSON.stringify(result.content);
      return { content: [text(`LLM response: ${answer}`)] };
    }
    case "test_elicitation": {
      needClientCapability(server, "elicitation");
      const result = await elicit(extra, String(args.message ?? ""), {
        type: "object",
        properties: {
          username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" },
        },
        required: ["username", "email"],
      });
      return { content: [text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`)] };
    }
    case "test_elicitation_sep1034_defaults":
    case "test_elicitation_sep1330_enums": {
      needClientCapability(server, "elicitation");
      const schema = name === "test_elicitation_sep1034_defaults" ? ELICIT_DEFAULTS : ELICIT_ENUMS;
      const result = await elicit(extra, "Please review and submit the form", schema);
      return {
        content: [text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`)],
      };
    }
    case "json_schema_2020_12_tool":
      return { content: [text(`Received: ${JSON.stringify(args)}`)] };
    case "test_reconnection": {
      // Close this request's SSE stream (the priming event already gave the client an event id and a
      // retry interval), then answer: the result is stored and replayed when the client resumes.
      await sleep(50);
      extra.closeSSEStream?.();
      await sleep(200);
      return { content: [text("Reconnection test completed successfully")] };
    }
    default:
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  }
}

function needClientCapability(server: Server, capability: "sampling" | "elicitation") {
  if (!server.getClientCapabilities()?.[capability]) {
    throw new McpError(ErrorCode.InvalidRequest, `the client does not support ${capability}`);
  }
}

function elicit(extra: Extra, message: string, requestedSchema: object) {
  return extra.sendRequest({ method: "elicitation/create", params: { message, requestedSchema } }, ElicitResultSchema);
}

function getPrompt(name: string, args: Record<string, string>) {
  switch (name) {
    case "test_simple_prompt":
      return { messages: [{ role: "user", content: text("This is a simple prompt for testing.") }] };
    case "test_prompt_with_arguments":
      return {
        messages: [{ role: "user", content: text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`) }],
      };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          {
            role: "user",
            content: {
              type: "resource",
              resource: { uri: args.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." },
            },
          },
          { role: "user", content: text("Please process the embedded resource above.") },
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
          { role: "user", content: text("Please analyze the image above.") },
        ],
      };
    default:
      throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
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
