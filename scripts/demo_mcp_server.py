#!/usr/bin/env python3
"""Dependency-free MCP demo server (stdio transport; MCP 2025-11-25 and/or 2026-07-28).

Usage: python3 scripts/demo_mcp_server.py [--era legacy|modern|dual]

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout; logs go to stderr.
Prints "demo server ready" to stderr at startup and exits with status 0 when
stdin reaches EOF.

Eras (--era, or DEMO_ERA; default legacy):
  legacy  the initialize handshake (2025-11-25 and older); server/discover is
          answered as DEMO_PROBE says
  modern  2026-07-28 only: no initialize (answered with -32022 naming the
          supported versions), every request must carry
          _meta["io.modelcontextprotocol/protocolVersion"] (else -32602, or
          -32022 for a version it does not speak); server/discover,
          subscriptions/listen, resultType, ttlMs/cacheScope on tools/list;
          notifications/message only at the request's _meta logLevel
  dual    both: initialize selects the legacy era, modern _meta the modern one

Environment:
  DEMO_ERA               the era, as --era
  DEMO_PROBE             how a legacy server answers server/discover: error
                         (-32601, the default), invalid (-32602), ignore (no
                         answer at all), garbage (a non-JSON line, then a
                         result that is no DiscoverResult)
  DEMO_TTL_MS            ttlMs of modern tools/list results (default 0)
  DEMO_PROTOCOL_VERSION  force the protocolVersion answered to initialize
                         (default: echo the client's version when it is one of
                         2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, else
                         answer 2025-11-25).

Every tools/call runs on its own thread, so a slow tool never blocks other
requests. tools/list is paginated (4 tools per page, opaque nextCursor).
See the TOOLS table below for the tools and their results.
"""

import base64
import json
import os
import struct
import sys
import threading
import time
import zlib

SERVER_NAME = "demo"
SERVER_VERSION = "1.0.0"
LATEST_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PAGE_SIZE = 4
MODERN_VERSIONS = ("2026-07-28",)
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
UNSUPPORTED_PROTOCOL_VERSION = -32022


def _era():
    era = os.environ.get("DEMO_ERA", "legacy")
    argv = sys.argv[1:]
    if "--era" in argv:
        i = argv.index("--era")
        if i + 1 < len(argv):
            era = argv[i + 1]
    if era not in ("legacy", "modern", "dual"):
        sys.stderr.write(f"demo: unknown era {era!r}\n")
        sys.exit(2)
    return era


ERA = _era()
PROBE = os.environ.get("DEMO_PROBE", "error")
TTL_MS = int(os.environ.get("DEMO_TTL_MS", "0") or "0")

# JSON-RPC error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


# --------------------------------------------------------------------------
# Binary fixtures (built with the stdlib so they are real, valid files)
# --------------------------------------------------------------------------

def _png_1x1_red():
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit, RGB
    raw = b"\x00" + b"\xff\x00\x00"  # filter byte 0 + one red pixel
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _tiny_wav():
    samples = struct.pack("<4h", 0, 1000, 0, -1000)  # 4 samples, 16-bit mono
    rate, channels, bits = 8000, 1, 16
    byte_rate = rate * channels * bits // 8
    block_align = channels * bits // 8
    header = (b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE"
              + b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, rate, byte_rate, block_align, bits)
              + b"data" + struct.pack("<I", len(samples)))
    assert len(header) == 44
    return header + samples


PNG_B64 = base64.b64encode(_png_1x1_red()).decode("ascii")
WAV_B64 = base64.b64encode(_tiny_wav()).decode("ascii")
BLOB_B64 = base64.b64encode(bytes(range(16))).decode("ascii")

LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


# --------------------------------------------------------------------------
# Transport helpers
# --------------------------------------------------------------------------

_out_lock = threading.Lock()
_stdout_ok = True


def log(msg):
    try:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def send(obj):
    """Write one JSON message as one line on stdout (thread-safe, flushed)."""
    global _stdout_ok
    data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    with _out_lock:
        if not _stdout_ok:
            return
        try:
            view = memoryview(data)
            while view:
                n = os.write(1, view)
                view = view[n:]
        except OSError as e:
            _stdout_ok = False
            log(f"demo: stdout write failed: {e}")


def send_result(req_id, result):
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def send_error(req_id, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": req_id, "error": err})


def send_notification(method, params=None):
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    send(msg)


def id_key(req_id):
    # 1 and "1" are different JSON-RPC ids
    return json.dumps(req_id)


def negotiate_version(requested):
    forced = os.environ.get("DEMO_PROTOCOL_VERSION")
    if forced:
        return forced
    if requested in SUPPORTED_VERSIONS:
        return requested
    return LATEST_VERSION


def text_result(text, is_error=False):
    res = {"content": [{"type": "text", "text": text}]}
    if is_error:
        res["isError"] = True
    return res


# --------------------------------------------------------------------------
# Server state
# --------------------------------------------------------------------------

_state_lock = threading.Lock()
_received = []            # every parsed JSON message, in arrival order
_inflight = {}            # id_key -> threading.Event (set when cancelled)
_min_log_level = None     # set by logging/setLevel
_listeners = {}           # id_key -> (request id, notifications filter): subscriptions/listen
_legacy_session = [False] # an initialize was answered


class ToolArgError(Exception):
    pass


def _num(args, name):
    v = args.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ToolArgError(f"argument '{name}' must be a number")
    return v


def _str(args, name, default=None):
    v = args.get(name, default)
    if not isinstance(v, str):
        raise ToolArgError(f"argument '{name}' must be a string")
    return v


def _int(args, name):
    v = args.get(name)
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise ToolArgError(f"argument '{name}' must be an integer")
    return v


# Each tool: fn(args, ctx) -> CallToolResult dict, or None for "send no response".
class CallCtx:
    def __init__(self, req_id, params, message, cancel_event):
        self.req_id = req_id
        self.params = params
        self.message = message
        self.cancelled = cancel_event
        meta = params.get("_meta")
        self.modern = isinstance(meta, dict) and META_VERSION in meta
        self.log_level = meta.get(META_LOG_LEVEL) if self.modern else None


def tool_echo(args, ctx):
    return text_result(_str(args, "text"))


def tool_add(args, ctx):
    s = {"sum": _num(args, "a") + _num(args, "b")}
    return {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s}


def tool_image(args, ctx):
    return {"content": [
        {"type": "text", "text": "a 1x1 red pixel"},
        {"type": "image", "mimeType": "image/png", "data": PNG_B64},
    ]}


def tool_audio(args, ctx):
    return {"content": [{"type": "audio", "mimeType": "audio/wav", "data": WAV_B64}]}


def tool_resource_link(args, ctx):
    return {"content": [{"type": "resource_link", "uri": "file:///demo/readme.txt",
                         "name": "readme.txt", "mimeType": "text/plain"}]}


def tool_embedded_resource(args, ctx):
    return {"content": [{"type": "resource", "resource": {
        "uri": "demo://blob/1", "mimeType": "application/octet-stream", "blob": BLOB_B64}}]}


def tool_fail(args, ctx):
    return text_result("something went wrong", is_error=True)


def tool_slow(args, ctx):
    seconds = _num(args, "seconds")
    if ctx.cancelled.wait(timeout=max(0.0, float(seconds))):
        log(f"demo: slow call {ctx.req_id!r} cancelled")
        return None
    return text_result(f"done after {seconds}s")


def tool_notify(args, ctx):
    method = _str(args, "method", "event/demo")
    params = args.get("params", {})
    if not isinstance(params, dict):
        raise ToolArgError("argument 'params' must be an object")
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    delay_ms = args.get("delay_ms")
    if isinstance(delay_ms, (int, float)) and not isinstance(delay_ms, bool) and delay_ms > 0:
        # After the answer, while no request is in flight.
        threading.Timer(delay_ms / 1000.0, send, args=(msg,)).start()
        return text_result("will notify")
    send(msg)
    return text_result("notified")


def tool_log(args, ctx):
    level = _str(args, "level")
    message = _str(args, "message")
    log(message)
    with _state_lock:
        threshold = _min_log_level
    if ctx.modern:
        # 2026-07-28: only at the level the request asked for, if any.
        threshold = ctx.log_level
        if threshold is None:
            return text_result("logged (no notification: no logLevel in _meta)")
    suppressed = (threshold is not None and level in LOG_LEVELS
                  and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold))
    if not suppressed:
        send_notification("notifications/message", {"level": level, "logger": "demo", "data": message})
    return text_result("logged")


def tool_stderr(args, ctx):
    text = _str(args, "text")
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except Exception:
        pass
    return text_result("ok")


def tool_progress(args, ctx):
    steps = _int(args, "steps")
    interval = args.get("interval", 0)
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval < 0:
        raise ToolArgError("argument 'interval' must be a non-negative number")
    meta = ctx.params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    for i in range(1, steps + 1):
        if interval and ctx.cancelled.wait(interval):
            return None  # cancelled: no response
        if token is not None:
            send_notification("notifications/progress", {
                "progressToken": token, "progress": i, "total": steps, "message": f"step {i}"})
    return text_result(f"progressed {steps}")


def tool_received(args, ctx):
    with _state_lock:
        msgs = [m for m in _received if m is not ctx.message]
    s = {"messages": msgs}
    return {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s}


def tool_pid(args, ctx):
    return text_result(str(os.getpid()))


def tool_bad_structured(args, ctx):
    s = {"sum": "five"}  # violates the declared outputSchema on purpose
    return {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s}


class RpcError(Exception):
    """Raised by a tool to answer its call with a JSON-RPC error."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def tool_modern_error(args, ctx):
    """Answer with the 2026-07-28 error `code` (-32020, -32021 or -32022)."""
    code = _int(args, "code")
    if code == -32021:
        raise RpcError(code, "this tool needs elicitation",
                       {"requiredCapabilities": {"elicitation": {}}})
    if code == -32022:
        raise RpcError(code, "Unsupported protocol version",
                       {"supported": ["2099-01-01"], "requested": "2026-07-28"})
    raise RpcError(code, "Header mismatch: Mcp-Name header value 'x' does not match body value 'y'")


def tool_confirm(args, ctx):
    """2026-07-28 multi round-trip: asks for a confirmation with an
    InputRequiredResult, then answers with what the client sent back."""
    if not ctx.modern:
        raise RpcError(INVALID_PARAMS, "confirm needs the 2026-07-28 era")
    responses = ctx.params.get("inputResponses")
    if not isinstance(responses, dict) or "c" not in responses:
        requests = {"c": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}
        if args.get("with_roots"):
            requests["r"] = {"method": "roots/list", "params": {}}
        return {"resultType": "input_required", "inputRequests": requests,
                "requestState": "state-1"}
    if ctx.params.get("requestState") != "state-1":
        raise RpcError(INVALID_PARAMS, "requestState was not echoed")
    answer = responses["c"]
    text = f"confirmed: {answer.get('action')} {json.dumps(answer.get('content'))}"
    if args.get("with_roots"):
        roots = (responses.get("r") or {}).get("roots") or []
        text += " roots: " + ",".join(r.get("uri", "?") for r in roots)
    return text_result(text)


def tool_mrtr(args, ctx):
    """2026-07-28 multi round-trip, statelessly: round k asks for the
    elicitation `q<k>`; the requestState of odd rounds is `s<k>:<tag>` (with
    characters a careless client would re-encode), even rounds send none and
    refuse a retry that carries one. `all`: round 1 asks for an elicitation,
    a sampling message and the roots at once. `forever`: never satisfied."""
    if not ctx.modern:
        raise RpcError(INVALID_PARAMS, "mrtr needs the 2026-07-28 era")
    rounds = _int(args, "rounds") if "rounds" in args else 1
    tag = _str(args, "tag", "")
    responses = ctx.params.get("inputResponses")
    responses = responses if isinstance(responses, dict) else {}
    # The round answered is the one whose key the retry carries (a retry
    # carries the answers of its own round only); earlier answers are kept
    # here, by tag.
    done = max((int(k[1:]) for k in responses if k[:1] == "q" and k[1:].isdigit()), default=0)
    with _state_lock:
        log_ = _mrtr_answers.setdefault(tag, {})
        if done:
            log_[done] = responses[f"q{done}"]
        elif not args.get("forever"):
            log_.clear()
        answers = dict(log_)
    if done:
        want = f"s{done}:{tag} \u00e9\\\"" if done % 2 else None
        got = ctx.params.get("requestState")
        if got != want:
            raise RpcError(INVALID_PARAMS, f"requestState of round {done}: expected {want!r}, got {got!r}")
    if args.get("forever") or done < rounds:
        k = done + 1
        requests = {f"q{k}": {"method": "elicitation/create", "params": {
            "mode": "form", "message": f"Round {k} ({tag})?",
            "requestedSchema": {"type": "object", "properties": {"v": {"type": "string"}}}}}}
        if args.get("all") and k == 1:
            requests["s"] = {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": f"Say hi to {tag}"}}],
                "maxTokens": 10}}
            requests["r"] = {"method": "roots/list", "params": {}}
        result = {"resultType": "input_required", "inputRequests": requests}
        if k % 2:
            result["requestState"] = f"s{k}:{tag} \u00e9\\\""
        return result
    parts = [f"mrtr {tag}: rounds={done}"]
    for k in range(1, done + 1):
        a = answers.get(k) or {}
        content = a.get("content")
        if args.get("quiet"):  # the answers' sizes only (secrets tests)
            content = {f: len(str(v)) for f, v in (content or {}).items()}
        parts.append(f"q{k}={a.get('action')}:{json.dumps(content, sort_keys=True)}")
    if args.get("all"):
        s = responses.get("s") or {}
        parts.append("sampled=" + str((s.get("content") or {}).get("text")))
        parts.append("roots=" + ",".join(r.get("uri", "?") for r in (responses.get("r") or {}).get("roots") or []))
    return text_result(" ".join(parts))


_mrtr_answers = {}  # tag -> {round: answer} (the mrtr tool)


TASKS_EXT = "io.modelcontextprotocol/tasks"
_tasks = {}  # taskId -> dict (the tasks extension's tasks)
_task_seq = [0]


def tool_task_job(args, ctx):
    """2026-07-28 tasks extension: answer with a task handle (resultType
    "task") when the request declares the extension, else -32021. The task
    completes on the `steps`-th tasks/get; `ask`: it first needs a name,
    asked with inputRequests and answered with tasks/update; `fail`: it
    fails with a JSON-RPC error; `forever`: it never ends (for cancel and
    deadlines); `ttl_ms`: its ttlMs."""
    if not ctx.modern:
        raise RpcError(INVALID_PARAMS, "task_job needs the 2026-07-28 era")
    caps = (ctx.params.get("_meta") or {}).get(META_CAPS) or {}
    if TASKS_EXT not in (caps.get("extensions") or {}):
        raise RpcError(-32021, "Missing required client capability",
                       {"requiredCapabilities": {"extensions": {TASKS_EXT: {}}}})
    with _state_lock:
        _task_seq[0] += 1
        tid = f"task-{_task_seq[0]}-{os.getpid()}"
        _tasks[tid] = {"status": "working", "polls": 0, "steps": _int(args, "steps") if "steps" in args else 1,
                       "ask": bool(args.get("ask")), "fail": bool(args.get("fail")),
                       "forever": bool(args.get("forever")), "name": None,
                       "ttl": args.get("ttl_ms"), "updates": 0, "quiet": bool(args.get("quiet"))}
        return dict(_task_view(tid, _tasks[tid]), resultType="task")


def _task_view(tid, t):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"taskId": tid, "status": t["status"], "createdAt": now, "lastUpdatedAt": now,
            "ttlMs": t["ttl"], "pollIntervalMs": 1}


def handle_task_request(req_id, method, params, meta):
    caps = meta.get(META_CAPS) or {}
    if TASKS_EXT not in (caps.get("extensions") or {}):
        send_error(req_id, -32021, "Missing required client capability",
                   {"requiredCapabilities": {"extensions": {TASKS_EXT: {}}}})
        return
    tid = params.get("taskId")
    with _state_lock:
        t = _tasks.get(tid) if isinstance(tid, str) else None
        if t is None:
            send_error(req_id, INVALID_PARAMS, "Failed to retrieve task: Task not found")
            return
        if method == "tasks/cancel":
            if t["status"] not in ("completed", "failed", "cancelled"):
                t["status"] = "cancelled"
            send_result(req_id, {"resultType": "complete"})
            return
        if method == "tasks/update":
            answer = (params.get("inputResponses") or {}).get("name")
            t["updates"] += 1
            if isinstance(answer, dict) and t["status"] == "input_required":
                content = answer.get("content") or {}
                t["name"] = content.get("name") if answer.get("action") == "accept" else f"({answer.get('action')})"
                t["status"] = "working"
            send_result(req_id, {"resultType": "complete"})
            return
        # tasks/get
        t["polls"] += 1
        view = _task_view(tid, t)
        if t["status"] == "working" and not t["forever"] and t["polls"] >= t["steps"]:
            if t["ask"] and t["name"] is None:
                t["status"] = "input_required"
            elif t["fail"]:
                t["status"] = "failed"
                t["error"] = {"code": -32603, "message": "API rate limit exceeded"}
            else:
                t["status"] = "completed"
                who = f", {t['name']}" if t["name"] else ""
                if t["quiet"] and t["name"]:
                    who = f", {len(str(t['name']))} chars"
                t["result"] = text_result(f"job done{who} after {t['polls']} polls and {t['updates']} updates")
        view["status"] = t["status"]
        if t["status"] == "input_required":
            view["inputRequests"] = {"name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Who is asking?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                    "required": ["name"]}}}}
        elif t["status"] == "completed":
            view["result"] = t["result"]
        elif t["status"] == "failed":
            view["error"] = t["error"]
            view["statusMessage"] = "Tool execution failed: API rate limit exceeded"
    send_result(req_id, dict(view, resultType="complete"))


def tool_register_tool(args, ctx):
    """Add a tool named `name` (an echo) and send notifications/tools/list_changed."""
    name = _str(args, "name")
    with _state_lock:
        if name not in TOOL_FNS:
            d = {"name": name, "description": "A tool added at run time (echo).",
                 "inputSchema": _schema({"text": {"type": "string"}})}
            TOOL_DEFS.append(d)
            TOOL_FNS[name] = tool_echo
    notify_list_changed("tools")
    return text_result(f"registered {name}")


def notify_list_changed(kind):
    """notifications/<kind>/list_changed: plainly to a legacy session, and on every
    subscriptions/listen stream that asked for it, tagged with its id."""
    method = f"notifications/{kind}/list_changed"
    with _state_lock:
        listeners = list(_listeners.values())
        legacy = _legacy_session[0]
    if legacy or ERA == "legacy":
        send_notification(method, {})
    flag = f"{kind}ListChanged"
    for rid, wanted in listeners:
        if wanted.get(flag):
            send_notification(method, {"_meta": {META_SUBSCRIPTION: rid}})


_client_waits = {}  # request id -> [threading.Event, response or None]
_client_seq = [0]


def tool_ping_client(args, ctx):
    """Send a server->client `ping` and report the client's answer."""
    with _state_lock:
        _client_seq[0] += 1
        rid = f"ping-{_client_seq[0]}"
        slot = [threading.Event(), None]
        _client_waits[rid] = slot
    send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    if not slot[0].wait(5):
        return text_result("no answer")
    resp = slot[1]
    if "error" in resp:
        return text_result("error: " + json.dumps(resp["error"]))
    return text_result("pong: " + json.dumps(resp.get("result")))


def _schema(props=None, required=None):
    s = {"type": "object", "properties": props or {}}
    if required:
        s["required"] = required
    return s


TOOLS = [
    ({"name": "echo", "description": "Echo the given text back.",
      "inputSchema": _schema({"text": {"type": "string"}}, ["text"])}, tool_echo),
    ({"name": "add", "description": "Add two numbers.",
      "inputSchema": _schema({"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
      "outputSchema": _schema({"sum": {"type": "number"}}, ["sum"])}, tool_add),
    ({"name": "image", "description": "Return a 1x1 red PNG.", "inputSchema": _schema()}, tool_image),
    ({"name": "audio", "description": "Return a tiny WAV file.", "inputSchema": _schema()}, tool_audio),
    ({"name": "resource_link", "description": "Return a resource link.", "inputSchema": _schema()},
     tool_resource_link),
    ({"name": "embedded_resource", "description": "Return an embedded binary resource.",
      "inputSchema": _schema()}, tool_embedded_resource),
    ({"name": "fail", "description": "Always returns isError=true.", "inputSchema": _schema()}, tool_fail),
    ({"name": "slow", "description": "Sleep for the given number of seconds (cancellable).",
      "inputSchema": _schema({"seconds": {"type": "number"}}, ["seconds"])}, tool_slow),
    ({"name": "notify", "description": "Send an arbitrary notification, then return (or, with "
                                        "delay_ms, return and send it that much later).",
      "inputSchema": _schema({"method": {"type": "string"}, "params": {"type": "object"},
                              "delay_ms": {"type": "number", "minimum": 0}})}, tool_notify),
    ({"name": "log", "description": "Send a notifications/message log entry.",
      "inputSchema": _schema({"level": {"type": "string", "enum": LOG_LEVELS},
                              "message": {"type": "string"}}, ["level", "message"])}, tool_log),
    ({"name": "stderr", "description": "Write text to stderr.",
      "inputSchema": _schema({"text": {"type": "string"}}, ["text"])}, tool_stderr),
    ({"name": "progress", "description": "Send progress notifications, `interval` seconds apart.",
      "inputSchema": _schema({"steps": {"type": "integer"}, "interval": {"type": "number"}},
                             ["steps"])}, tool_progress),
    ({"name": "received", "description": "Return every message received so far.",
      "inputSchema": _schema()}, tool_received),
    ({"name": "pid", "description": "Return the server's process id.", "inputSchema": _schema()}, tool_pid),
    ({"name": "ping_client", "description": "Ping the client and report its answer.",
      "inputSchema": _schema()}, tool_ping_client),
    ({"name": "bad_structured", "description": "Return structuredContent that violates its outputSchema.",
      "inputSchema": _schema(), "outputSchema": _schema({"sum": {"type": "number"}}, ["sum"])},
     tool_bad_structured),
    ({"name": "register_tool", "description": "Add an echo tool at run time and send list_changed.",
      "inputSchema": _schema({"name": {"type": "string"}}, ["name"])}, tool_register_tool),
    ({"name": "modern_error", "description": "Answer with a 2026-07-28 JSON-RPC error (code).",
      "inputSchema": _schema({"code": {"type": "integer"}}, ["code"])}, tool_modern_error),
    ({"name": "confirm", "description": "2026-07-28 only: ask for a confirmation (multi round-trip); "
                                         "with_roots: ask for the roots in the same round.",
      "inputSchema": _schema({"with_roots": {"type": "boolean"}})}, tool_confirm),
    ({"name": "mrtr", "description": "2026-07-28 only: `rounds` multi round-trips (all: elicitation, "
                                      "sampling and roots at once; forever: never satisfied; quiet: answer sizes only).",
      "inputSchema": _schema({"rounds": {"type": "integer"}, "tag": {"type": "string"},
                              "quiet": {"type": "boolean"},
                              "all": {"type": "boolean"}, "forever": {"type": "boolean"}})}, tool_mrtr),
    ({"name": "task_job", "description": "2026-07-28 only: run as a task of the tasks extension "
                                          "(steps, ask, fail, forever, ttl_ms, quiet).",
      "inputSchema": _schema({"steps": {"type": "integer"}, "ask": {"type": "boolean"},
                              "quiet": {"type": "boolean"},
                              "fail": {"type": "boolean"}, "forever": {"type": "boolean"},
                              "ttl_ms": {"type": "integer"}})}, tool_task_job),
]
TOOL_FNS = {t["name"]: fn for t, fn in TOOLS}
TOOL_DEFS = [t for t, _ in TOOLS]


def encode_cursor(offset):
    return base64.urlsafe_b64encode(f"demo-offset:{offset}".encode()).decode()


def decode_cursor(cursor):
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        prefix, _, num = text.partition(":")
        if prefix != "demo-offset":
            raise ValueError
        offset = int(num)
        if offset < 0 or offset > len(TOOL_DEFS):
            raise ValueError
        return offset
    except Exception:
        raise ValueError("invalid cursor")


# --------------------------------------------------------------------------
# Request handling
# --------------------------------------------------------------------------

def run_tool_call(req_id, params, message, cancel_event):
    key = id_key(req_id)
    try:
        name = params.get("name")
        args = params.get("arguments") or {}
        fn = TOOL_FNS.get(name)
        if fn is None:
            result, error = None, (INVALID_PARAMS, f"unknown tool: {name}")
        elif not isinstance(args, dict):
            result, error = None, (INVALID_PARAMS, "arguments must be an object")
        else:
            try:
                result, error = fn(args, CallCtx(req_id, params, message, cancel_event)), None
            except RpcError as e:
                result, error = None, (e.code, e.message, e.data)
            except ToolArgError as e:
                result, error = text_result(f"invalid arguments: {e}", is_error=True), None
            except Exception as e:  # tool crashed: report as tool error
                log(f"demo: tool {name} raised {e!r}")
                result, error = text_result(f"internal error: {e}", is_error=True), None
            if result is None and error is None:
                return  # cancelled: no response at all
        if cancel_event.is_set():
            log(f"demo: request {req_id!r} was cancelled; not responding")
            return
        if error is not None:
            send_error(req_id, *error)
        else:
            meta = params.get("_meta")
            if isinstance(meta, dict) and META_VERSION in meta and "resultType" not in result:
                result = dict(result, resultType="complete")
            send_result(req_id, result)
    finally:
        with _state_lock:
            if _inflight.get(key) is cancel_event:
                del _inflight[key]


def handle_request(msg):
    global _min_log_level
    req_id = msg["id"]
    method = msg["method"]
    params = msg.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        send_error(req_id, INVALID_PARAMS, "params must be an object")
        return

    meta = params.get("_meta")
    modern_request = isinstance(meta, dict) and META_VERSION in meta
    if ERA == "legacy" and method == "server/discover":
        answer_probe_as_legacy(req_id)
        return
    if ERA != "legacy" and (modern_request or method == "server/discover"):
        handle_modern(msg, req_id, method, params, meta if isinstance(meta, dict) else {})
        return
    if ERA == "modern":
        if method == "initialize":
            send_error(req_id, UNSUPPORTED_PROTOCOL_VERSION,
                       "this server speaks only MCP 2026-07-28 (no initialize)",
                       {"supported": list(MODERN_VERSIONS), "requested": params.get("protocolVersion")})
        else:
            send_error(req_id, INVALID_PARAMS,
                       f"{method}: missing _meta[{META_VERSION!r}] (this server speaks only 2026-07-28)")
        return

    if method == "initialize":
        with _state_lock:
            _legacy_session[0] = True
        send_result(req_id, {
            "protocolVersion": negotiate_version(params.get("protocolVersion")),
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        })
    elif method == "ping":
        send_result(req_id, {})
    elif method == "tools/list":
        try:
            result = list_tools_page(params)
        except ValueError:
            send_error(req_id, INVALID_PARAMS, "invalid cursor")
            return
        send_result(req_id, result)
    elif method == "logging/setLevel":
        level = params.get("level")
        if level not in LOG_LEVELS:
            send_error(req_id, INVALID_PARAMS, f"invalid log level: {level}")
            return
        with _state_lock:
            _min_log_level = level
        send_result(req_id, {})
    elif method == "tools/call":
        start_tool_call(msg, req_id, params)
    else:
        send_error(req_id, METHOD_NOT_FOUND, f"method not found: {method}")


def answer_probe_as_legacy(req_id):
    """A legacy server's answer to server/discover, as DEMO_PROBE says."""
    if PROBE == "ignore":
        return
    if PROBE == "garbage":
        with _out_lock:
            try:
                os.write(1, b"this is not JSON\n")
            except OSError:
                pass
        send_result(req_id, "garbage")
    elif PROBE == "invalid":
        send_error(req_id, INVALID_PARAMS, "invalid params: not initialized")
    else:
        send_error(req_id, METHOD_NOT_FOUND, "method not found: server/discover")


def start_tool_call(msg, req_id, params):
    """tools/call, in either era: on a thread of its own, cancellable."""
    if not isinstance(params.get("name"), str):
        send_error(req_id, INVALID_PARAMS, "missing tool name")
        return
    ev = threading.Event()
    with _state_lock:
        _inflight[id_key(req_id)] = ev
    threading.Thread(target=run_tool_call, args=(req_id, params, msg, ev), daemon=True).start()


def list_tools_page(params):
    """One page of tools/list, or raises ValueError for a bad cursor."""
    cursor = params.get("cursor")
    offset = 0
    if cursor is not None:
        if not isinstance(cursor, str):
            raise ValueError("invalid cursor")
        offset = decode_cursor(cursor)
    page = TOOL_DEFS[offset:offset + PAGE_SIZE]
    result = {"tools": page}
    if offset + PAGE_SIZE < len(TOOL_DEFS):
        result["nextCursor"] = encode_cursor(offset + PAGE_SIZE)
    return result


def handle_modern(msg, req_id, method, params, meta):
    """A 2026-07-28 request: version and capabilities in _meta, no session."""
    version = meta.get(META_VERSION)
    supported = list(MODERN_VERSIONS) + (list(SUPPORTED_VERSIONS) if ERA == "dual" else [])
    if version not in MODERN_VERSIONS:
        send_error(req_id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                   {"supported": supported, "requested": version})
        return
    if not isinstance(meta.get(META_CAPS), dict):
        send_error(req_id, INVALID_PARAMS, f"missing _meta[{META_CAPS!r}]")
        return
    info = {"io.modelcontextprotocol/serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION}}
    if method == "server/discover":
        send_result(req_id, {
            "resultType": "complete",
            "supportedVersions": supported,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "instructions": "A demo server.",
            "_meta": info,
            "ttlMs": 0,
            "cacheScope": "public",
        })
    elif method == "tools/list":
        try:
            result = list_tools_page(params)
        except ValueError:
            send_error(req_id, INVALID_PARAMS, "invalid cursor")
            return
        result.update({"resultType": "complete", "ttlMs": TTL_MS, "cacheScope": "public", "_meta": info})
        send_result(req_id, result)
    elif method == "tools/call":
        start_tool_call(msg, req_id, params)
    elif method in ("tasks/get", "tasks/update", "tasks/cancel"):
        handle_task_request(req_id, method, params, meta)
    elif method == "subscriptions/listen":
        wanted = params.get("notifications")
        if not isinstance(wanted, dict):
            wanted = {}
        honoured = {"toolsListChanged": True} if wanted.get("toolsListChanged") else {}
        with _state_lock:
            _listeners[id_key(req_id)] = (req_id, honoured)
        send_notification("notifications/subscriptions/acknowledged",
                          {"_meta": {META_SUBSCRIPTION: req_id}, "notifications": honoured})
    else:
        send_error(req_id, METHOD_NOT_FOUND, f"method not found: {method}")


def handle_notification(msg):
    method = msg["method"]
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if method == "notifications/cancelled":
        rid = params.get("requestId")
        with _state_lock:
            ev = _inflight.get(id_key(rid))
        if ev is not None:
            ev.set()
        with _state_lock:
            _listeners.pop(id_key(rid), None)
    # notifications/initialized and anything unknown: ignore


def handle_line(line):
    try:
        msg = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        log(f"demo: parse error: {e}")
        send_error(None, PARSE_ERROR, "parse error")
        return
    if not isinstance(msg, dict):
        send_error(None, INVALID_REQUEST, "invalid request: expected a JSON object")
        return
    with _state_lock:
        _received.append(msg)
    method = msg.get("method")
    has_id = "id" in msg
    if isinstance(method, str):
        if has_id:
            if not (isinstance(msg["id"], (str, int)) and not isinstance(msg["id"], bool)):
                send_error(None, INVALID_REQUEST, "invalid request id")
                return
            try:
                handle_request(msg)
            except Exception as e:
                log(f"demo: internal error handling {method}: {e!r}")
                send_error(msg["id"], INTERNAL_ERROR, f"internal error: {e}")
        else:
            handle_notification(msg)
    elif has_id and ("result" in msg or "error" in msg):
        with _state_lock:
            slot = _client_waits.pop(msg["id"], None) if isinstance(msg["id"], str) else None
        if slot is not None:
            slot[1] = msg
            slot[0].set()
        else:
            log("demo: ignoring unexpected response from client")
    else:
        send_error(msg.get("id"), INVALID_REQUEST, "invalid request")


def main():
    log("demo server ready")
    stdin = sys.stdin.buffer
    while True:
        try:
            line = stdin.readline()
        except (OSError, ValueError):
            break
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        handle_line(line)
    log("demo: stdin closed, exiting")
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
