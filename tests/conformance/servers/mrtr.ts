// The reference server's multi-round-trip requests (SEP-2322, 2026-07-28): a tool or prompt that needs
// the client's input answers with an InputRequiredResult (resultType "input_required", inputRequests
// keyed by ids of ours, an HMAC-signed requestState), and the client retries the same request with
// inputResponses under those keys and the state echoed. Written from the conformance suite's
// input-required-result scenarios and the draft specification.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

import { McpError } from "@modelcontextprotocol/sdk/types.js";

import { text } from "./fixtures.ts";

const NO_ARGS = { type: "object", properties: {} };
const tool = (name: string, description: string) => ({ name, description, inputSchema: NO_ARGS });

export const INPUT_TOOLS = [
  tool("test_input_required_result_elicitation", "Asks the user's name (elicitation), then greets them"),
  tool("test_input_required_result_sampling", "Asks the client's LLM a question (sampling), then answers"),
  tool("test_input_required_result_list_roots", "Asks for the client's roots, then lists them"),
  tool("test_input_required_result_request_state", "Asks for a confirmation with a signed requestState"),
  tool("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots at once"),
  tool("test_input_required_result_multi_round", "Asks for a name, then a colour, in two rounds"),
  tool("test_input_required_result_tampered_state", "Refuses a requestState it did not sign"),
  tool("test_input_required_result_capabilities", "Asks only for what the client's capabilities allow"),
];
export const INPUT_PROMPTS = [
  { name: "test_input_required_result_prompt", description: "A prompt that asks the user for its context first" },
];

// A per-process key: a requestState is only ever read back by the process that signed it.
const KEY = randomBytes(32);

function sign(state: object): string {
  const payload = Buffer.from(JSON.stringify(state)).toString("base64url");
  return `${payload}.${createHmac("sha256", KEY).update(payload).digest("base64url")}`;
}

/** The state signed for ``tool``, or an invalid-params error when it was altered or is another tool's. */
function verify(requestState: unknown, tool: string): any {
  const [payload, mac] = typeof requestState === "string" ? requestState.split(".") : [];
  const expected = payload ? createHmac("sha256", KEY).update(payload).digest() : Buffer.alloc(0);
  const given = Buffer.from(mac ?? "", "base64url");
  if (!payload || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new McpError(-32602, "Invalid requestState: integrity check failed");
  }
  const state = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  if (state.tool !== tool) throw new McpError(-32602, "Invalid requestState: issued for another request");
  return state;
}

const elicitation = (message: string, properties: Record<string, object>, required: string[]) => ({
  method: "elicitation/create",
  params: { message, requestedSchema: { type: "object", properties, required } },
});
const sampling = (prompt: string, maxTokens: number) => ({
  method: "sampling/createMessage",
  params: { messages: [{ role: "user", content: text(prompt) }], maxTokens },
});
const ROOTS = { method: "roots/list", params: {} };
const ASK_NAME = elicitation("What is your name?", { name: { type: "string" } }, ["name"]);

function inputRequired(inputRequests: Record<string, object>, state?: object) {
  return { resultType: "input_required", inputRequests, ...(state ? { requestState: sign(state) } : {}) };
}
const done = (message: string) => ({ resultType: "complete", content: [text(message)] });

/** The inputResponses of a retry (an empty map on a first call); a value that is not a map of
 * objects is invalid params, as is a response under one of our keys that is not an object. */
function responses(params: any): Record<string, any> {
  const given = params.inputResponses;
  if (given === undefined) return {};
  if (!given || typeof given !== "object" || Array.isArray(given)) {
    throw new McpError(-32602, "Invalid params: inputResponses must be an object keyed by input request id");
  }
  for (const [key, value] of Object.entries(given)) {
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      throw new McpError(-32602, `Invalid params: inputResponses.${key} must be an object`);
    }
  }
  return given;
}

// What each kind of response carries, read defensively (the client is not trusted).
const elicited = (response: any, field: string) =>
  response?.action === "accept" ? String(response?.content?.[field] ?? "") : `(${response?.action ?? "no answer"})`;
const sampled = (response: any) => String(response?.content?.text ?? "");
const roots = (response: any) =>
  Array.isArray(response?.roots) ? response.roots.map((r: any) => String(r?.uri)).join(", ") : "";

/** The result of one of INPUT_TOOLS for this call (input_required or complete), or undefined for any
 * other tool. */
export function inputTool(name: string, params: any, capabilities: Record<string, unknown>): object | undefined {
  if (!INPUT_TOOLS.some((t) => t.name === name)) return undefined;
  const got = responses(params);
  // A retry that lacks some of what was asked for is asked again for what is missing (not an error).
  const missing = (asked: Record<string, object>) =>
    Object.fromEntries(Object.entries(asked).filter(([key]) => !(key in got)));
  switch (name) {
    case "test_input_required_result_elicitation": {
      if (!got.user_name) return inputRequired({ user_name: ASK_NAME });
      return done(`Hello, ${elicited(got.user_name, "name")}!`);
    }
    case "test_input_required_result_sampling": {
      if (!got.capital_question) return inputRequired({ capital_question: sampling("What is the capital of France?", 100) });
      return done(`The model answered: ${sampled(got.capital_question)}`);
    }
    case "test_input_required_result_list_roots": {
      if (!got.client_roots) return inputRequired({ client_roots: ROOTS });
      return done(`The client's roots: ${roots(got.client_roots)}`);
    }
    case "test_input_required_result_request_state":
    case "test_input_required_result_tampered_state": {
      const asked = {
        confirm: elicitation("Please confirm", { ok: { type: "boolean" } }, ["ok"]),
      };
      if (params.requestState === undefined) return inputRequired(asked, { tool: name, round: 1 });
      verify(params.requestState, name);
      if (!got.confirm) return inputRequired(asked, { tool: name, round: 1 });
      return done(`state-ok: confirmed=${elicited(got.confirm, "ok")}`);
    }
    case "test_input_required_result_multiple_inputs": {
      const asked = {
        user_name: ASK_NAME,
        greeting: sampling("Generate a greeting", 50),
        client_roots: ROOTS,
      };
      if (params.requestState !== undefined) verify(params.requestState, name);
      const left = missing(asked);
      if (Object.keys(left).length > 0) return inputRequired(left, { tool: name, round: 1 });
      return done(
        `name=${elicited(got.user_name, "name")}; greeting=${sampled(got.greeting)}; roots=${roots(got.client_roots)}`,
      );
    }
    case "test_input_required_result_multi_round": {
      const step1 = { step1: elicitation("Step 1: What is your name?", { name: { type: "string" } }, ["name"]) };
      const step2 = {
        step2: elicitation("Step 2: What is your favorite color?", { color: { type: "string" } }, ["color"]),
      };
      if (params.requestState === undefined) return inputRequired(step1, { tool: name, round: 1 });
      const state = verify(params.requestState, name);
      if (state.round === 1) {
        if (!got.step1) return inputRequired(step1, state);
        return inputRequired(step2, { tool: name, round: 2, name: elicited(got.step1, "name") });
      }
      if (!got.step2) return inputRequired(step2, state);
      return done(`${state.name}'s favorite color is ${elicited(got.step2, "color")}`);
    }
    case "test_input_required_result_capabilities": {
      // Only ask for what the client declared it can answer (SEP-2322).
      const asked: Record<string, object> = {};
      if (capabilities.elicitation) asked.user_name = ASK_NAME;
      if (capabilities.sampling) asked.greeting = sampling("Generate a greeting", 50);
      if (capabilities.roots) asked.client_roots = ROOTS;
      const left = missing(asked);
      if (Object.keys(left).length > 0) return inputRequired(left);
      return done(`Answered: ${Object.keys(asked).join(", ") || "nothing was asked"}`);
    }
  }
  return undefined;
}

/** The result of one of INPUT_PROMPTS (input_required or the prompt), or undefined for any other. */
export function inputPrompt(params: any, _capabilities: Record<string, unknown>): object | undefined {
  if (params.name !== "test_input_required_result_prompt") return undefined;
  const got = responses(params);
  if (!got.user_context) {
    return inputRequired({
      user_context: elicitation("What context should the prompt use?", { context: { type: "string" } }, ["context"]),
    });
  }
  return {
    description: "A prompt built from the user's context",
    messages: [{ role: "user", content: text(`Context: ${elicited(got.user_context, "context")}`) }],
  };
}
