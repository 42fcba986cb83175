// The reference server's tasks (the io.modelcontextprotocol/tasks extension, SEP-2663, on 2026-07-28):
// a task-supporting tool called by a client that declared the extension answers with a flat
// CreateTaskResult and runs on; tasks/get shows its status with the result, error or pending
// inputRequests inlined; tasks/update delivers input; tasks/cancel stops it. Tasks live in this
// process's memory. Written from the conformance suite's tasks-* scenarios and SEP-2663's text.

import { randomUUID } from "node:crypto";

import { McpError } from "@modelcontextprotocol/sdk/types.js";

import { text } from "./fixtures.ts";

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
const TTL_MS = 300_000;
const POLL_MS = 200;

type Status = "working" | "input_required" | "completed" | "failed" | "cancelled";
type Task = {
  taskId: string;
  status: Status;
  createdAt: string;
  lastUpdatedAt: string;
  result?: object;
  error?: { code: number; message: string };
  inputRequests?: Record<string, object>;
  answers: Record<string, any>;
  timer?: ReturnType<typeof setTimeout>;
  // Called once every pending input has been answered.
  resume?: (answers: Record<string, any>) => void;
};
const tasks = new Map<string, Task>();

const schema = (properties: Record<string, object> = {}, required: string[] = []) => ({
  type: "object",
  properties,
  required,
});
export const TASK_TOOLS = [
  {
    name: "greet",
    description: "Greets someone (never a task)",
    inputSchema: schema({ name: { type: "string" } }, ["name"]),
    execution: { taskSupport: "forbidden" },
  },
  {
    name: "slow_compute",
    description: "Sleeps `seconds` seconds, then answers",
    inputSchema: schema({ seconds: { type: "number" }, label: { type: "string" } }),
    execution: { taskSupport: "optional" },
  },
  {
    name: "failing_job",
    description: "Always ends in a tool error (isError)",
    inputSchema: schema(),
    execution: { taskSupport: "required" },
  },
  {
    name: "protocol_error_job",
    description: "Always ends in a protocol error",
    inputSchema: schema(),
    execution: { taskSupport: "optional" },
  },
  {
    name: "confirm_delete",
    description: "Asks for a confirmation before it (pretends to) delete a file",
    inputSchema: schema({ filename: { type: "string" } }),
    execution: { taskSupport: "optional" },
  },
  {
    name: "multi_input",
    description: "Asks two questions at once",
    inputSchema: schema(),
    execution: { taskSupport: "optional" },
  },
  {
    name: "test_tool_with_task",
    description: "Asks the user's name (MRTR), then greets them from a task",
    inputSchema: schema(),
    execution: { taskSupport: "required" },
  },
];

const now = () => new Date().toISOString();
const confirmation = (message: string) => ({
  method: "elicitation/create",
  params: { message, requestedSchema: schema({ confirm: { type: "boolean" } }, ["confirm"]) },
});
const askName = (message: string) => ({
  method: "elicitation/create",
  params: { message, requestedSchema: schema({ name: { type: "string" } }, ["name"]) },
});
const accepted = (answer: any, field: string) => (answer?.action === "accept" ? answer?.content?.[field] : undefined);

function negotiated(capabilities: Record<string, any>): boolean {
  return Boolean(capabilities.extensions?.[TASKS_EXTENSION]);
}

function missingExtension(): McpError {
  return new McpError(-32021, "This needs the client's io.modelcontextprotocol/tasks extension", {
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });
}

function settle(task: Task, status: Status, outcome: { result?: object; error?: { code: number; message: string } }) {
  if (["completed", "failed", "cancelled"].includes(task.status)) return;
  task.status = status;
  task.lastUpdatedAt = now();
  task.inputRequests = undefined;
  Object.assign(task, outcome);
}

function park(task: Task, inputRequests: Record<string, object>, resume: (answers: Record<string, any>) => void) {
  task.status = "input_required";
  task.lastUpdatedAt = now();
  task.inputRequests = inputRequests;
  task.resume = resume;
}

/** Start ``name`` as a task: returns its CreateTaskResult once tasks/get can find it. */
function start(name: string, args: Record<string, any>, gathered: Record<string, any>): object {
  const created = now();
  const task: Task = { taskId: randomUUID(), status: "working", createdAt: created, lastUpdatedAt: created, answers: {} };
  tasks.set(task.taskId, task);
  const later = (ms: number, run: () => void) => {
    task.timer = setTimeout(run, ms);
  };
  const done = (message: string, isError = false) =>
    settle(task, "completed", { result: { content: [text(message)], ...(isError ? { isError: true } : {}) } });
  switch (name) {
    case "slow_compute":
      later(Math.max(0, Number(args.seconds ?? 0)) * 1000, () => done(`Computed ${args.label ?? "a result"}`));
      break;
    case "failing_job":
      later(500, () => done("The job failed: nothing to process", true));
      break;
    case "protocol_error_job":
      later(100, () => settle(task, "failed", { error: { code: -32603, message: "Internal error: the job crashed" } }));
      break;
    case "confirm_delete":
      park(task, { confirm: confirmation(`Delete ${args.filename ?? "the file"}?`) }, (answers) =>
        done(accepted(answers.confirm, "confirm") ? `Deleted ${args.filename}` : `Kept ${args.filename}`),
      );
      break;
    case "multi_input":
      park(
        task,
        { first: askName("First: what is your name?"), second: confirmation("Second: proceed?") },
        (answers) => done(`first=${accepted(answers.first, "name")}; second=${accepted(answers.second, "confirm")}`),
      );
      break;
    case "test_tool_with_task":
      later(50, () => done(`Hello from the task, ${gathered.user_name}!`));
      break;
  }
  const { taskId, status, createdAt, lastUpdatedAt } = task;
  return { resultType: "task", taskId, status, createdAt, lastUpdatedAt, ttlMs: TTL_MS, pollIntervalMs: POLL_MS };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The result of one of TASK_TOOLS for this call, or undefined for any other tool. Without the
 * extension an optional-task tool runs synchronously and a required-task one is refused (-32021). */
export async function taskToolCall(name: string, params: any, capabilities: Record<string, any>) {
  const tool = TASK_TOOLS.find((t) => t.name === name);
  if (!tool) return undefined;
  const args = params.arguments ?? {};
  if (name === "greet") return { resultType: "complete", content: [text(`Hello, ${args.name ?? "there"}!`)] };
  const withTasks = negotiated(capabilities);
  if (tool.execution.taskSupport === "required" && !withTasks) throw missingExtension();
  if (name === "test_tool_with_task") {
    // MRTR first (no task yet), then the task carries the gathered answer.
    const answer = params.inputResponses?.user_name;
    if (!answer) return { resultType: "input_required", inputRequests: { user_name: askName("What is your name?") } };
    return start(name, args, { user_name: accepted(answer, "name") });
  }
  if (withTasks) return start(name, args, {});
  switch (name) {
    case "slow_compute":
      await sleep(Math.min(Math.max(0, Number(args.seconds ?? 0)), 5) * 1000);
      return { resultType: "complete", content: [text(`Computed ${args.label ?? "a result"}`)] };
    case "protocol_error_job":
      throw new McpError(-32603, "Internal error: the job crashed");
    default:
      // confirm_delete and multi_input need input, which only the task surface can take from here.
      throw missingExtension();
  }
}

/** tasks/get, tasks/update and tasks/cancel; undefined for any other method. */
export function taskMethod(method: string, params: any, capabilities: Record<string, any>): object | undefined {
  if (!["tasks/get", "tasks/update", "tasks/cancel"].includes(method)) return undefined;
  if (!negotiated(capabilities)) throw missingExtension();
  const task = tasks.get(String(params.taskId));
  if (!task) throw new McpError(-32602, `Unknown taskId: ${params.taskId}`);
  if (method === "tasks/cancel") {
    if (task.timer) clearTimeout(task.timer);
    settle(task, "cancelled", {});
    return { resultType: "complete" };
  }
  if (method === "tasks/update") {
    const given = params.inputResponses;
    if (!given || typeof given !== "object" || Array.isArray(given)) {
      throw new McpError(-32602, "Invalid params: inputResponses must be an object");
    }
    if (task.status === "input_required" && task.inputRequests) {
      const pending = { ...task.inputRequests };
      for (const [key, value] of Object.entries(given)) {
        if (key in pending) {
          task.answers[key] = value;
          delete pending[key];
        }
      }
      task.inputRequests = pending;
      task.lastUpdatedAt = now();
      if (Object.keys(pending).length === 0) {
        task.status = "working";
        task.inputRequests = undefined;
        task.resume?.(task.answers);
      }
    }
    return { resultType: "complete" };
  }
  const { taskId, status, createdAt, lastUpdatedAt, result, error, inputRequests } = task;
  return {
    resultType: "complete",
    taskId,
    status,
    createdAt,
    lastUpdatedAt,
    ttlMs: TTL_MS,
    pollIntervalMs: POLL_MS,
    ...(status === "completed" ? { result } : {}),
    ...(status === "failed" ? { error } : {}),
    ...(status === "input_required" ? { inputRequests } : {}),
  };
}
