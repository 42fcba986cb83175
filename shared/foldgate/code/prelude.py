"""The JavaScript the sandbox installs before an agent's program: ``call_tool``, ``console``, stacks.

Kept apart from the worker loop (:mod:`foldgate.code.worker`) because it is a program of its own: the
only code in the sandbox that the agent did not write, and the only bridge out of it.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PRELUDE"]

# The prelude, evaluated once per run, returns a factory; the factory (given the run's caps) returns
# the control function the worker drives. Neither is ever reachable from globalThis, so the program
# cannot replace what the worker calls. Everything the prelude needs from the JS standard library is
# captured before the program runs, so later tampering (JSON.stringify, Promise.prototype.then,
# Object.prototype setters, Array.prototype...) cannot reach the bridge: internal state lives in
# null-prototype objects and strings built with `+` (no user code runs on either).
#
# The source is collapsed to ONE line (so no `//` comments in it): every frame of the prelude is then
# at line 1 of "<input>", while the program, compiled by the AsyncFunction constructor, starts at line 3
# (the constructor adds a two-line header). Frames at lines 1-2 are the sandbox's and are dropped.
_PRELUDE_SOURCE: Final = r"""
(function (maxCalls, maxArgs, maxConsole, maxResult) {
  "use strict";
  const G = globalThis;
  const stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply;
  const sliceFn = String.prototype.slice, codeAt = String.prototype.charCodeAt, toStr = String;
  const limitErrors = new WeakSet(), markFn = WeakSet.prototype.add, isMarkedFn = WeakSet.prototype.has;
  const defineProperty = Object.defineProperty, freeze = Object.freeze, create = Object.create;
  const PromiseCtor = Promise, thenFn = Promise.prototype.then;
  const ErrorCtor = Error, TypeErrorCtor = TypeError, RangeErrorCtor = RangeError;
  const capture = Error.captureStackTrace;
  const AsyncFunction = (async function () {}).constructor;
  const RESOLVED = PromiseCtor.resolve(undefined);

  /* Stacks name the agent's code "code" with its own line numbers: the program starts at line 3 of
     "<input>" (the AsyncFunction header), the prelude is all line 1. Sandbox frames are dropped, and
     native frames are kept only between two frames of the program. The program may replace this. */
  function prepareStackTrace(err, sites) {
    let out = "", natives = "";
    for (let i = 0; i < sites.length; i++) {
      try {
        const site = sites[i], name = site.getFunctionName();
        if (site.isNative()) { natives += "\n    at " + (name || "<anonymous>") + " (native)"; continue; }
        const line = site.getLineNumber() - 2;
        if (site.getFileName() !== "<input>" || line < 1) { natives = ""; continue; }
        const where = "code:" + line + ":" + site.getColumnNumber();
        out += (out === "" ? "" : natives) + "\n    at " + (name ? name + " (" + where + ")" : where);
        natives = "";
      } catch (x) {}
    }
    return apply(sliceFn, out, [1]);
  }
  ErrorCtor.prepareStackTrace = prepareStackTrace;

  /* Concatenated (rope) strings cannot cross into Python ("Unknown quickjs tag: -6"): slice flattens. */
  function flat(s) { return apply(sliceFn, s, [0]); }
  function cut(s, n) { return s.length > n ? apply(sliceFn, s, [0, n]) + "..." : s; }
  /* Every size is bytes of UTF-8, as the host counts them: a surrogate pair is 4, a lone surrogate 3.
     A JS string has at most 3 bytes per code unit, so short strings skip the loop. */
  function bytes(s) {
    let n = s.length;
    if (n === 0) return 0;
    for (let i = 0; i < s.length; i++) {
      const u = apply(codeAt, s, [i]);
      if (u < 0x80) continue;
      if (u < 0x800) { n += 1; continue; }
      if (u >= 0xD800 && u <= 0xDBFF && i + 1 < s.length) {
        const v = apply(codeAt, s, [i + 1]);
        if (v >= 0xDC00 && v <= 0xDFFF) { n += 2; i++; continue; }
      }
      n += 2;
    }
    return n;
  }
  /* The longest prefix of s within n bytes, never splitting a surrogate pair. */
  function fit(s, n) {
    let used = 0, i = 0;
    while (i < s.length) {
      const u = apply(codeAt, s, [i]);
      let size = u < 0x80 ? 1 : u < 0x800 ? 2 : 3, step = 1;
      if (u >= 0xD800 && u <= 0xDBFF && i + 1 < s.length) {
        const v = apply(codeAt, s, [i + 1]);
        if (v >= 0xDC00 && v <= 0xDFFF) { size = 4; step = 2; }
      }
      if (used + size > n) break;
      used += size; i += step;
    }
    return apply(sliceFn, s, [0, i]);
  }

  let nextId = 0, calls = 0, limitHit = false, queue = "", queued = 0;
  const pending = create(null);
  let consoleBuf = "", consoleBytes = 0, consoleFull = false;
  let main = null, state = 0, outcome, resultText = "";

  function makeError(Ctor, message) {
    const e = new Ctor(message);
    capture(e, call_tool);
    return e;
  }
  function rejected(e) { return new PromiseCtor(function (_, reject) { reject(e); }); }
  function describe(e) {
    try { const m = e !== null && typeof e === "object" ? e.message : e; return cut(toStr(m), 300); }
    catch (x) { return "unknown error"; }
  }

  function call_tool(server, tool, args) {
    if (typeof server !== "string" || typeof tool !== "string" || server === "" || tool === "") {
      return rejected(makeError(TypeErrorCtor,
        "call_tool(server, tool, args): server and tool must be non-empty strings"));
    }
    const where = "call_tool(" + stringify(cut(server, 100)) + ", " + stringify(cut(tool, 100)) + ")";
    let text;
    try { text = stringify(args === undefined ? {} : args); }
    catch (e) {
      return rejected(makeError(TypeErrorCtor,
        where + ": the arguments are not JSON-serializable (" + describe(e) + ")"));
    }
    if (typeof text !== "string" || text[0] !== "{") {
      return rejected(makeError(TypeErrorCtor, where + ": the arguments must be an object"));
    }
    const size = text.length > maxArgs ? -1 : bytes(text);
    if (size < 0 || size > maxArgs) {
      /* A size limit, like max_calls: uncaught, the run ends with a "limit" error (see errorJson). */
      const e = makeError(RangeErrorCtor, where + ": the arguments are " +
        (size < 0 ? "at least " + text.length : size) + " bytes of JSON (UTF-8); the limit is " + maxArgs);
      apply(markFn, limitErrors, [e]);
      return rejected(e);
    }
    calls += 1;
    if (calls > maxCalls) {
      limitHit = true;
      return new PromiseCtor(function () {});
    }
    const id = ++nextId;
    const entry = "{\"id\":" + id + ",\"server\":" + stringify(server) + ",\"tool\":" +
      stringify(tool) + ",\"args\":" + stringify(text) + "}";
    queue = queued === 0 ? entry : queue + "," + entry;
    queued += 1;
    const failure = makeError(ErrorCtor, "");
    return new PromiseCtor(function (resolve, reject) {
      pending[id] = [resolve, reject, failure, where];
    });
  }

  function show(v) {
    if (typeof v === "string") return v;
    try {
      if (v instanceof ErrorCtor) return toStr(v.name) + ": " + toStr(v.message);
      const t = stringify(v);
      if (typeof t === "string") return t;
    } catch (x) {}
    try { return toStr(v); } catch (x) { return "[unprintable]"; }
  }
  function emit(prefix, args) {
    if (consoleFull) return;
    let line = prefix;
    for (let i = 0; i < args.length; i++) {
      line += (i > 0 ? " " : "") + show(args[i]);
      if (consoleBytes + line.length >= maxConsole) break;
    }
    /* Each line costs its bytes plus one, so a flood of empty lines is capped too. Past the cap, what
       fits of the line is kept (less room for the marker) and the console closes. */
    const size = line.length >= maxConsole ? line.length : bytes(line);
    if (consoleBytes + size + 1 > maxConsole) {
      consoleFull = true;
      const room = maxConsole - consoleBytes - 100;
      if (room > 0) push(fit(line, room) + "...");
      line = "[console truncated: the limit is " + maxConsole + " bytes]";
    }
    push(line);
  }
  function push(line) {
    consoleBytes += bytes(line) + 1;
    consoleBuf = consoleBuf === "" ? stringify(line) : consoleBuf + "," + stringify(line);
  }
  const console = freeze(create(null, {
    log: { value: function log(...a) { emit("", a); } },
    info: { value: function info(...a) { emit("", a); } },
    debug: { value: function debug(...a) { emit("", a); } },
    warn: { value: function warn(...a) { emit("[warn] ", a); } },
    error: { value: function error(...a) { emit("[error] ", a); } }
  }));
  freeze(call_tool);
  defineProperty(G, "call_tool", { value: call_tool, writable: false, configurable: false });
  defineProperty(G, "console", { value: console, writable: false, configurable: false });

  function field(e, key) {
    try { const v = e[key]; return v === undefined || v === null ? "" : toStr(v); } catch (x) { return ""; }
  }
  function errorJson(e) {
    let name = "", message = "", stack = "";
    if (e !== null && (typeof e === "object" || typeof e === "function")) {
      name = field(e, "name"); message = field(e, "message"); stack = field(e, "stack");
      if (name === "" && message === "") message = show(e);
    } else {
      message = show(e);
    }
    let marked = false;
    try { marked = apply(isMarkedFn, limitErrors, [e]); } catch (x) {}
    return "{\"name\":" + stringify(cut(name, 100)) + ",\"message\":" + stringify(cut(message, 2000)) +
      ",\"stack\":" + stringify(cut(stack, 4000)) + (marked ? ",\"limit\":true}" : "}");
  }

  function compile(code) {
    try { main = new AsyncFunction(code); return ""; }
    catch (e) { return errorJson(e); }
  }
  /* The program starts as a promise job (the worker then runs every job alike); the outcome is taken
     with the captured `then`, so a program replacing Promise.prototype.then cannot hide it. */
  function fulfilled(v) { if (state === 0) { state = 1; outcome = v; } }
  function failed(e) { if (state === 0) { state = 2; outcome = e; } }
  function runMain() {
    try { apply(thenFn, apply(main, undefined, []), [fulfilled, failed]); }
    catch (e) { failed(e); }
  }
  function start() { apply(thenFn, RESOLVED, [runMain]); }
  function own(target, key, value) {
    const d = create(null);
    d.value = value; d.writable = true; d.configurable = true;
    defineProperty(target, key, d);
  }
  function drain() {
    const out = "{\"calls\":[" + queue + "],\"console\":[" + consoleBuf + "],\"state\":" + state +
      ",\"limit\":" + (limitHit ? "true" : "false") + "}";
    queue = ""; queued = 0; consoleBuf = "";
    return flat(out);
  }
  function settle(id, ok, text, message) {
    const entry = pending[id];
    if (entry === undefined) return "unknown call id";
    delete pending[id];
    let value = null;
    try { value = parse(text); } catch (e) { ok = false; message = "the tool result could not be decoded"; }
    if (ok) { entry[0](value); return ""; }
    const failure = entry[2];
    try {
      own(failure, "name", "ToolError");
      own(failure, "message", entry[3] + " failed: " + message);
      own(failure, "error", value);
    } catch (x) {}
    entry[1](failure);
    return "";
  }
  function finish() {
    if (state === 2) return "{\"ok\":false,\"error\":" + errorJson(outcome) + "}";
    let text;
    try { text = stringify(outcome === undefined ? null : outcome); }
    catch (e) {
      return "{\"ok\":false,\"error\":{\"name\":\"TypeError\",\"message\":" +
        stringify("the return value is not JSON-serializable (" + describe(e) + ")") + ",\"stack\":\"\"}}";
    }
    if (typeof text !== "string") text = "null";
    const size = text.length > maxResult ? text.length : bytes(text);
    if (size > maxResult) return "{\"ok\":false,\"size\":" + size + "}";
    resultText = text;
    return "{\"ok\":true}";
  }

  return function control(op, a, b, c, d) {
    if (op === "drain") return drain();
    if (op === "settle") return settle(a, b, c, d);
    if (op === "compile") return compile(a);
    if (op === "start") { start(); return ""; }
    if (op === "finish") return flat(finish());
    if (op === "value") return flat(resultText);
    throw new TypeErrorCtor("unknown op");
  };
})
"""


def _one_line(source: str) -> str:
    return " ".join(line.strip() for line in source.splitlines() if line.strip())


PRELUDE: Final = _one_line(_PRELUDE_SOURCE)
