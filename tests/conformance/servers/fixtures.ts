// The reference server's fixtures: the tools, resources and prompts the conformance scenarios name,
// with the results their checks expect (tests/conformance/servers/reference_server.ts serves them on
// both protocol generations). Written from the scenarios' descriptions and checks and the MCP spec.

import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

// A 1x1 red PNG, and a 10 ms silent 8 kHz mono 8-bit WAV built here (RIFF header + 80 samples).
export const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
export const WAV = (() => {
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

export const NO_ARGS = { type: "object", properties: {} };
export const text = (t: string) => ({ type: "text", text: t });
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const TOOLS = [
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
    // The 2020-12 keywords a gateway must keep (SEP-1613), with composition, conditional and $anchor
    // keywords too (SEP-2106, checked from 2026-07-28 on).
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false,
    },
  },
  {
    name: "test_reconnection",
    description: "Closes its SSE stream mid-call; the result comes after the client resumes",
    inputSchema: NO_ARGS,
  },
];

export const ELICIT_DEFAULTS = {
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

export const ELICIT_ENUMS = {
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

export const RESOURCES = [
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
export const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

export const PROMPTS = [
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

export const COMPLETIONS = ["paris", "park", "party", "test", "testing"];


export function getPrompt(name: string, args: Record<string, string>) {
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
      throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`, { name });
  }
}

export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: "test://template/{id}/data",
    name: "template-data",
    description: "Data for one id",
    mimeType: "application/json",
  },
];

/** The contents of ``uri``; an unknown URI is the spec's invalid-params error with the URI in its data
 * (SEP-2164: never an empty contents array). */
export function readResource(uri: string) {
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
  throw new McpError(ErrorCode.InvalidParams, "Resource not found", { uri });
}

/** Completion values for an argument: the known words starting with what was typed. */
export function complete(prefix: string) {
  const values = COMPLETIONS.filter((v) => v.startsWith(prefix));
  return { completion: { values, total: values.length, hasMore: false } };
}

/** The result of a tool that needs nothing from the client (no session, no notifications), or
 * undefined for any other tool. */
export function plainToolResult(name: string, args: Record<string, unknown>) {
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
    case "test_error_handling":
      return { isError: true, content: [text("This tool intentionally returns an error for testing")] };
    case "json_schema_2020_12_tool":
      return { content: [text(`Received: ${JSON.stringify(args)}`)] };
    default:
      return undefined;
  }
}

type Ask = { method: string; params: object };
type Interactive = {
  capability: "sampling" | "elicitation";
  ask: (args: Record<string, unknown>) => Ask;
  finish: (response: any) => object;
};
const elicitForm = (message: string, requestedSchema: object): Ask => ({
  method: "elicitation/create",
  params: { message, requestedSchema },
});
const formResult = (prefix: string) => (response: any) => ({
  content: [text(`${prefix} action=${response?.action}, content=${JSON.stringify(response?.content ?? {})}`)],
});

/** The tools that need the client's input: what each asks, and its result from the answer. A 2025
 * session asks with a server-to-client request; a 2026-07-28 request gets an InputRequiredResult. */
export const INTERACTIVE: Record<string, Interactive> = {
  test_sampling: {
    capability: "sampling",
    ask: (args) => ({
      method: "sampling/createMessage",
      params: { messages: [{ role: "user", content: text(String(args.prompt ?? "")) }], maxTokens: 100 },
    }),
    finish: (response) => {
      const content = response?.content;
      return { content: [text(`LLM response: ${content?.type === "text" ? content.text : JSON.stringify(content)}`)] };
    },
  },
  test_elicitation: {
    capability: "elicitation",
    ask: (args) =>
      elicitForm(String(args.message ?? ""), {
        type: "object",
        properties: {
          username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" },
        },
        required: ["username", "email"],
      }),
    finish: formResult("User response:"),
  },
  test_elicitation_sep1034_defaults: {
    capability: "elicitation",
    ask: () => elicitForm("Please review and submit the form", ELICIT_DEFAULTS),
    finish: formResult("Elicitation completed:"),
  },
  test_elicitation_sep1330_enums: {
    capability: "elicitation",
    ask: () => elicitForm("Please review and submit the form", ELICIT_ENUMS),
    finish: formResult("Elicitation completed:"),
  },
};

export const LOG_LINES = ["Tool execution started", "Tool processing data", "Tool execution completed"];
export const PROGRESS_STEPS = [0, 50, 100];
