// The reference server's 2026-07-28 side: stateless requests (no initialize, no session), each one
// carrying the protocol version and the client's capabilities in params._meta (SEP-2575), answered
// as plain JSON with resultType and caching hints (SEP-2322, SEP-2549), checked against the
// Mcp-Method / Mcp-Name / Mcp-Param-* headers (SEP-2243). Written from the conformance suite's
// scenario descriptions and checks (0.2.0-alpha.12) and the draft specification.

import { McpError } from "@modelcontextprotocol/sdk/types.js";

import {
  INTERACTIVE,
  LOG_LINES,
  PROGRESS_STEPS,
  PROMPTS,
  RESOURCES,
  RESOURCE_TEMPLATES,
  TOOLS,
  complete,
  getPrompt,
  plainToolResult,
  readResource,
  sleep,
  text,
} from "./fixtures.ts";
import { INPUT_PROMPTS, INPUT_TOOLS, inputPrompt, inputTool } from "./mrtr.ts";
import { TASKS_EXTENSION, TASK_TOOLS, taskMethod, taskToolCall } from "./tasks.ts";

export const STATELESS_VERSION = "2026-07-28";
const META = "io.modelcontextprotocol/";
const SERVER_INFO = { name: "foldgate-conformance-reference", version: "1.0.0" };
// Lists and reads may be cached for a minute by anyone: nothing here depends on who asks.
const CACHE = { ttlMs: 60_000, cacheScope: "public" };

// A tool whose `region` argument is mirrored in the Mcp-Param-Region header (SEP-2243 x-mcp-header).
const HEADER_TOOL = {
  name: "test_header_param",
  description: "Echoes its region argument, which clients also send in the Mcp-Param-Region header",
  inputSchema: {
    type: "object",
    properties: { region: { type: "string", description: "A region name", "x-mcp-header": "Region" } },
    required: ["region"],
  },
};

// Diagnostic tools the stateless scenario calls (server-stateless).
const DIAGNOSTIC_TOOLS = [
  { name: "test_missing_capability", description: "Needs the client's sampling capability", inputSchema: { type: "object", properties: {} } },
  { name: "test_streaming_elicitation", description: "Asks for input through an InputRequiredResult", inputSchema: { type: "object", properties: {} } },
  { name: "test_logging_tool", description: "Logs only when the request sets a log level", inputSchema: { type: "object", properties: {} } },
  { name: "test_trigger_tool_change", description: "Announces a tools/list change to listeners", inputSchema: { type: "object", properties: {} } },
  { name: "test_trigger_prompt_change", description: "Announces a prompts/list change to listeners", inputSchema: { type: "object", properties: {} } },
];

// Every tool and prompt, listed on both generations: a 2025 session (foldgate's upstream client) sees
// the 2026-07-28 tools too and gets their draft results, as it would from a server in transition.
export const ALL_TOOLS = [...TOOLS, ...INPUT_TOOLS, HEADER_TOOL, ...DIAGNOSTIC_TOOLS, ...TASK_TOOLS];
export const ALL_PROMPTS = [...PROMPTS, ...INPUT_PROMPTS];

export const CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: {},
  completions: {},
  extensions: { [TASKS_EXTENSION]: {} },
};

// Every method served here; any other (the 2025 handshake's initialize, ping, logging/setLevel,
// resources/(un)subscribe, the tasks v1 tasks/result and tasks/list) is not found, before any check.
const METHODS = new Set([
  "server/discover",
  "subscriptions/listen",
  "tools/list",
  "tools/call",
  "prompts/list",
  "prompts/get",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "completion/complete",
  "tasks/get",
  "tasks/update",
  "tasks/cancel",
]);

/** A JSON-RPC error with the HTTP status the 2026-07-28 transport gives it. */
class Reply extends Error {
  status: number;
  code: number;
  data: unknown;
  constructor(status: number, code: number, message: string, data?: unknown) {
    super(message);
    this.status = status;
    this.code = code;
    this.data = data;
  }
}

/** One open subscriptions/listen stream and the notifications it asked for. */
export type Listener = { id: string; notifications: Record<string, unknown>; send: (frame: object) => void };
const listeners = new Set<Listener>();

type Send = (frame: object) => void;
export type Answer =
  | { status: number; body?: object }
  // An SSE response: notifications sent while the request runs, then its answer.
  | { stream: (send: Send) => Promise<object> }
  | { listen: (send: (frame: object) => void, onClose: (cleanup: () => void) => void) => void };

/** Whether a request belongs to this side: no session, and a 2026-07-28-style version header or
 * _meta (an initialize without either is the 2025 handshake, served by the SDK). */
export function isStateless(headers: Record<string, string | string[] | undefined>, body: any): boolean {
  if (headers["mcp-session-id"]) return false;
  const version = headers["mcp-protocol-version"];
  if (typeof version === "string") return !["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"].includes(version.trim());
  return Boolean(body?.params?._meta?.[`${META}protocolVersion`]);
}

/** Answer one stateless JSON-RPC message. */
export async function answer(headers: Record<string, string | string[] | undefined>, body: any): Promise<Answer> {
  if (!body || typeof body !== "object" || Array.isArray(body) || typeof body.method !== "string") {
    return { status: 400, body: error(null, -32600, "Invalid Request") };
  }
  if (body.id === undefined) return { status: 202 };
  try {
    const params = body.params ?? {};
    if (!METHODS.has(body.method)) throw new Reply(404, -32601, `Method not found: ${body.method}`);
    checkHeaders(headers, body.method, params);
    const meta = checkMeta(headers, params);
    if (body.method === "subscriptions/listen") return listen(body.id, params);
    if (body.method === "tools/call" && NOTIFYING.has(params.name)) {
      return { stream: (send) => respond(body.id, () => draftToolCall(String(params.name), params, meta.capabilities, meta.logLevel, send)) };
    }
    const result = await dispatch(body.method, params, meta);
    return { status: 200, body: { jsonrpc: "2.0", id: body.id, result } };
  } catch (thrown) {
    return failure(body.id, thrown);
  }
}

function failure(id: unknown, thrown: unknown): { status: number; body: object } {
  if (thrown instanceof Reply) return { status: thrown.status, body: error(id, thrown.code, thrown.message, thrown.data) };
  if (thrown instanceof McpError) {
    // The transport's own errors keep their HTTP status (a missing capability is 400).
    const status = thrown.code === -32021 ? 400 : 200;
    return { status, body: error(id, thrown.code, thrown.message, thrown.data) };
  }
  return { status: 500, body: error(id, -32603, `Internal error: ${thrown}`) };
}

/** The JSON-RPC response to request ``id`` once ``run`` settles (for a streamed answer). */
async function respond(id: unknown, run: () => Promise<object>): Promise<object> {
  try {
    return { jsonrpc: "2.0", id, result: await run() };
  } catch (thrown) {
    return failure(id, thrown).body;
  }
}

function error(id: unknown, code: number, message: string, data?: unknown) {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return typeof value === "string" ? value.trim() : undefined;
}

// SEP-2243: Mcp-Method mirrors the body's method on every request, Mcp-Name its name-shaped field, and
// each Mcp-Param-<H> header the tool argument declared with x-mcp-header H. Values compare exactly
// (case-sensitive) after trimming surrounding whitespace; a missing or different one is -32020.
function checkHeaders(headers: Record<string, string | string[] | undefined>, method: string, params: any) {
  const mismatch = (what: string) => new Reply(400, -32020, `Header mismatch: ${what}`);
  if (header(headers, "mcp-method") !== method) throw mismatch("Mcp-Method must equal the body's method");
  const named =
    method === "tools/call" || method === "prompts/get"
      ? params.name
      : method === "resources/read"
        ? params.uri
        : method.startsWith("tasks/")
          ? params.taskId
          : undefined;
  if (named !== undefined && header(headers, "mcp-name") !== String(named)) {
    throw mismatch("Mcp-Name must equal the body's name, uri or taskId");
  }
  if (method !== "tools/call") return;
  const tool = ALL_TOOLS.find((t) => t.name === params.name);
  const properties: Record<string, any> = (tool?.inputSchema as any)?.properties ?? {};
  for (const [argument, schema] of Object.entries(properties)) {
    const suffix = schema["x-mcp-header"];
    if (suffix === undefined) continue;
    const sent = header(headers, `mcp-param-${String(suffix).toLowerCase()}`);
    const value = params.arguments?.[argument];
    if (sent === undefined) {
      if (value !== undefined) throw mismatch(`Mcp-Param-${suffix} is required when ${argument} is sent`);
      continue;
    }
    if (decodeParam(sent) !== (value === undefined ? undefined : String(value))) {
      throw mismatch(`Mcp-Param-${suffix} must equal the ${argument} argument`);
    }
  }
}

// A header value is literal unless wrapped as =?base64?<strict base64>?=; a wrapped value that is not
// valid padded base64 is an error (null never equals an argument).
function decodeParam(value: string): string | null {
  const wrapped = /^=\?base64\?(.*)\?=$/.exec(value);
  if (!wrapped) return value;
  const encoded = wrapped[1];
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return null;
  return Buffer.from(encoded, "base64").toString("utf8");
}

type Meta = { version: string; capabilities: Record<string, any>; logLevel?: string };

// SEP-2575: every request names its protocol version and the client's capabilities in _meta; the
// version must equal the MCP-Protocol-Version header and be one this server speaks.
function checkMeta(headers: Record<string, string | string[] | undefined>, params: any): Meta {
  const meta = params._meta;
  const version = meta?.[`${META}protocolVersion`];
  const capabilities = meta?.[`${META}clientCapabilities`];
  if (!meta || typeof meta !== "object") throw new Reply(400, -32602, "Invalid params: _meta is required");
  if (typeof version !== "string") throw new Reply(400, -32602, `Invalid params: _meta needs ${META}protocolVersion`);
  if (!capabilities || typeof capabilities !== "object") {
    throw new Reply(400, -32602, `Invalid params: _meta needs ${META}clientCapabilities`);
  }
  if (header(headers, "mcp-protocol-version") !== version) {
    throw new Reply(400, -32020, "Header mismatch: MCP-Protocol-Version must equal the _meta protocol version");
  }
  if (version !== STATELESS_VERSION) {
    throw new Reply(400, -32022, `Unsupported protocol version: ${version}`, { supported: [STATELESS_VERSION], requested: version });
  }
  return { version, capabilities, logLevel: meta[`${META}logLevel`] };
}

// The tools whose 2026-07-28 answer is an SSE stream (notifications before the result).
const NOTIFYING = new Set(["test_tool_with_progress", "test_tool_with_logging"]);
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

const complete_ = (result: object) => ({ resultType: "complete", ...result });
const cached = (result: object) => ({ resultType: "complete", ...CACHE, ...result });

async function dispatch(method: string, params: any, meta: Meta): Promise<object> {
  switch (method) {
    case "server/discover":
      return cached({
        supportedVersions: [STATELESS_VERSION],
        capabilities: CAPABILITIES,
        _meta: { [`${META}serverInfo`]: SERVER_INFO },
      });
    case "tools/list":
      return cached({ tools: ALL_TOOLS });
    case "prompts/list":
      return cached({ prompts: ALL_PROMPTS });
    case "resources/list":
      return cached({ resources: RESOURCES });
    case "resources/templates/list":
      return cached({ resourceTemplates: RESOURCE_TEMPLATES });
    case "resources/read":
      return cached(readResource(String(params.uri ?? "")));
    case "completion/complete":
      return complete_(complete(String(params.argument?.value ?? "")));
    case "prompts/get":
      return complete_(draftPrompt(params, meta.capabilities));
    case "tools/call":
      return draftToolCall(String(params.name), params, meta.capabilities, meta.logLevel);
    case "tasks/get":
    case "tasks/update":
    case "tasks/cancel":
      return taskMethod(method, params, meta.capabilities) as object;
    default:
      // initialize, ping, logging/setLevel and resources/(un)subscribe are gone in 2026-07-28.
      throw new Reply(404, -32601, `Method not found: ${method}`);
  }
}

function needCapability(capabilities: Record<string, unknown>, capability: string) {
  if (!capabilities[capability]) {
    throw new McpError(-32021, `This tool needs the client's ${capability} capability`, {
      requiredCapabilities: { [capability]: {} },
    });
  }
}

// HALF_UPGRADED=1: at 2026-07-28 the interactive tools cannot ask for input (a half-upgraded server);
// a 2025 session still asks with server-to-client requests (tests/e2e/test_conformance.py).
const HALF_UPGRADED = process.env.HALF_UPGRADED === "1";

/** prompts/get of the 2026-07-28 generation: an input-required prompt, or a fixture prompt. */
export function draftPrompt(params: any, capabilities: Record<string, unknown>): object {
  return inputPrompt(params, capabilities) ?? getPrompt(String(params.name), params.arguments ?? {});
}

/** tools/call of the 2026-07-28 generation (resultType on every result, input asked for in the
 * result, tasks for a client with the extension); ``capabilities`` are the client's. */
export async function draftToolCall(
  name: string,
  params: any,
  capabilities: Record<string, any>,
  logLevel?: string,
  send?: Send,
): Promise<object> {
  const args = params.arguments ?? {};
  const plain = plainToolResult(name, args);
  if (plain) return complete_(plain);
  const interactive = INTERACTIVE[name];
  if (interactive) {
    if (HALF_UPGRADED) {
      // As an SDK 1.x server that offers 2026-07-28 but asks for input only by server-to-client
      // requests, which a stateless request has no session for.
      throw new McpError(-32601, `${interactive.capability} not supported: Method not found`);
    }
    // Input is asked for in the result; the retry carries the answer under our key.
    needCapability(capabilities, interactive.capability);
    const answer = params.inputResponses?.input;
    if (!answer || typeof answer !== "object") {
      return { resultType: "input_required", inputRequests: { input: interactive.ask(args) } };
    }
    return complete_(interactive.finish(answer));
  }
  const input = inputTool(name, params, capabilities);
  if (input) return input;
  const task = await taskToolCall(name, params, capabilities);
  if (task) return task;
  switch (name) {
    case "test_tool_with_progress": {
      const token = params._meta?.progressToken;
      for (const progress of PROGRESS_STEPS) {
        if (token !== undefined) {
          send?.({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
        }
        if (progress < 100) await sleep(50);
      }
      return complete_({ content: [text("Tool with progress executed successfully")] });
    }
    case "test_tool_with_logging": {
      // Logs only at or above the level the request set in _meta; none when it set none (SEP-2575).
      const wanted = logLevel === undefined ? -1 : LEVELS.indexOf(logLevel);
      for (const [i, line] of LOG_LINES.entries()) {
        if (i > 0) await sleep(50);
        if (wanted >= 0 && wanted <= LEVELS.indexOf("info")) {
          send?.({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: line } });
        }
      }
      return complete_({ content: [text("Tool with logging executed successfully")] });
    }
    case "test_reconnection":
      // A stateless response stream is never resumed: the result comes on the one stream.
      return complete_({ content: [text("Reconnection test completed successfully")] });
    case "test_header_param":
      return complete_({ content: [text(`Region: ${args.region}`)] });
    case "test_missing_capability":
      needCapability(capabilities, "sampling");
      return complete_({ content: [text("The client declared sampling")] });
    case "test_streaming_elicitation":
      // Input is asked for in the result (MRTR), never as a request on the response stream.
      needCapability(capabilities, "elicitation");
      if (params.inputResponses?.answer) return complete_({ content: [text("Thanks for answering")] });
      return {
        resultType: "input_required",
        inputRequests: {
          answer: {
            method: "elicitation/create",
            params: {
              message: "Anything to add?",
              requestedSchema: { type: "object", properties: { note: { type: "string" } } },
            },
          },
        },
      };
    case "test_logging_tool":
      // Without _meta logLevel the client asked for no logs, so none are sent (SEP-2575).
      return complete_({ content: [text(`Logged at ${logLevel ?? "no level (nothing sent)"}`)] });
    case "test_trigger_tool_change":
      notify("toolsListChanged", "notifications/tools/list_changed");
      return complete_({ content: [text("tools/list change announced")] });
    case "test_trigger_prompt_change":
      notify("promptsListChanged", "notifications/prompts/list_changed");
      return complete_({ content: [text("prompts/list change announced")] });
    default:
      throw new McpError(-32602, `Unknown tool: ${name}`, { name });
  }
}

// subscriptions/listen: an SSE stream that first acknowledges, then carries each notification the
// client asked for, tagged with the subscription's id.
function listen(id: unknown, params: any): Answer {
  const notifications = params.notifications && typeof params.notifications === "object" ? params.notifications : {};
  return {
    listen: (send, onClose) => {
      const listener: Listener = { id: String(id), notifications, send };
      listeners.add(listener);
      onClose(() => listeners.delete(listener));
      send({
        jsonrpc: "2.0",
        method: "notifications/subscriptions/acknowledged",
        params: { notifications, _meta: { [`${META}subscriptionId`]: listener.id } },
      });
    },
  };
}

function notify(kind: string, method: string) {
  for (const listener of listeners) {
    if (listener.notifications[kind] === true) {
      listener.send({ jsonrpc: "2.0", method, params: { _meta: { [`${META}subscriptionId`]: listener.id } } });
    }
  }
}
