#!/usr/bin/env python3
"""Dependency-free MCP server exercising 2025-11-25 task-augmented tools/call.

Usage: python3 scripts/task_demo_mcp.py

Stdio transport (newline-delimited JSON-RPC 2.0); logs go to stderr; exits 0 on stdin EOF.
serverInfo {"name": "task-demo", "version": "1.0.0"}
capabilities {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}

Tools (all with "execution": {"taskSupport": "required"} except `plain` and `received`):
  long_job {polls?: integer = 3}  status "working"; the `polls`-th tasks/get (and every later
                                  one) reports "completed"; result text "job done"
  failing_job                     the 1st tasks/get reports "failed", statusMessage "disk on fire"
  input_job                       the 1st tasks/get reports "input_required"
  forever_job                     stays "working" forever
  plain                           text "plain" (never creates a task, even if params.task is set)
  received                        structuredContent {"messages": [...every message received so
                                  far except this call...]} + text mirror

tools/call of a task tool WITH params.task -> CreateTaskResult {"task": Task} (status "working",
statusMessage "working", ttl 60000, pollInterval 100). WITHOUT params.task -> plain CallToolResult
text "ran without task".
tasks/get {taskId} -> Task fields at the top level of the result (counts as one poll).
tasks/result {taskId} -> blocks until the task is terminal, then:
    completed -> {"content":[{"type":"text","text":"job done"}],
                  "_meta":{"io.modelcontextprotocol/related-task":{"taskId":...}}}
    failed    -> {"content":[{"type":"text","text":"disk on fire"}], "isError": true, "_meta": ...}
    cancelled -> JSON-RPC error -32602 "task <id> was cancelled"
tasks/list -> {"tasks": [all tasks, creation order]} (no pagination)
tasks/cancel {taskId} -> status "cancelled", statusMessage "cancelled by client", returns the
    Task fields at top level; error -32602 if the task is already terminal.
Unknown taskId -> JSON-RPC error -32602 "unknown task: <id>".
DEMO_PROTOCOL_VERSION (env) forces the protocolVersion answered to initialize.
"""

import datetime
import json
import os
import sys
import threading
import uuid

LATEST_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
TERMINAL = ("completed", "failed", "cancelled")
RELATED = "io.modelcontextprotocol/related-task"

_out_lock = threading.Lock()
_cond = threading.Condition()   # protects everything below; notified on task status changes
_received = []
_tasks = {}                     # taskId -> dict


def log(msg):
    try:
        sys.stderr.write(f"task-demo: {msg}\n")
        sys.stderr.flush()
    except Exception:
        pass


def send(obj):
    data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    with _out_lock:
        try:
            view = memoryview(data)
            while view:
                n = os.write(1, view)
                view = view[n:]
        except OSError as e:
            log(f"stdout write failed: {e}")


def send_result(req_id, result):
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def send_error(req_id, code, message):
    send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def negotiate_version(requested):
    forced = os.environ.get("DEMO_PROTOCOL_VERSION")
    if forced:
        return forced
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


def text_result(t):
    return {"content": [{"type": "text", "text": t}]}


TASK_EXEC = {"taskSupport": "required"}
EMPTY = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "long_job", "description": "Completes after `polls` tasks/get calls.",
     "inputSchema": {"type": "object", "properties": {"polls": {"type": "integer", "default": 3}}},
     "execution": TASK_EXEC},
    {"name": "failing_job", "description": "Fails after one poll.", "inputSchema": EMPTY,
     "execution": TASK_EXEC},
    {"name": "input_job", "description": "Goes to input_required after one poll.",
     "inputSchema": EMPTY, "execution": TASK_EXEC},
    {"name": "forever_job", "description": "Never finishes.", "inputSchema": EMPTY,
     "execution": TASK_EXEC},
    {"name": "plain", "description": "Plain tool without task support.", "inputSchema": EMPTY},
    {"name": "received", "description": "Every message received so far.", "inputSchema": EMPTY},
]
TOOL_NAMES = {t["name"] for t in TOOLS}
TASK_TOOLS = {"long_job", "failing_job", "input_job", "forever_job"}


def public(task):
    return {k: task[k] for k in ("taskId", "status", "statusMessage", "createdAt",
                                 "lastUpdatedAt", "ttl", "pollInterval")}


def set_status(task, status, message):
    # caller holds _cond
    task["status"] = status
    task["statusMessage"] = message
    task["lastUpdatedAt"] = now_iso()
    _cond.notify_all()


def create_task(tool, args):
    polls = args.get("polls", 3)
    if isinstance(polls, bool) or not isinstance(polls, (int, float)):
        polls = 3
    ts = now_iso()
    task = {"taskId": str(uuid.uuid4()), "status": "working", "statusMessage": "working",
            "createdAt": ts, "lastUpdatedAt": ts, "ttl": 60000, "pollInterval": 100,
            "tool": tool, "polls_needed": int(polls), "polls": 0}
    with _cond:
        _tasks[task["taskId"]] = task
        return public(task)


def on_poll(task):
    # caller holds _cond
    if task["status"] in TERMINAL:
        return
    task["polls"] += 1
    tool = task["tool"]
    if tool == "long_job" and task["polls"] >= task["polls_needed"]:
        set_status(task, "completed", "job done")
    elif tool == "failing_job" and task["polls"] >= 1:
        set_status(task, "failed", "disk on fire")
    elif tool == "input_job" and task["polls"] >= 1 and task["status"] != "input_required":
        set_status(task, "input_required", "input required")


def get_task(params):
    tid = params.get("taskId")
    task = _tasks.get(tid) if isinstance(tid, str) else None
    if task is None:
        raise LookupError(f"unknown task: {tid}")
    return task


def tasks_result_worker(req_id, tid):
    with _cond:
        task = _tasks[tid]
        while task["status"] not in TERMINAL:
            _cond.wait()
        status = task["status"]
    meta = {RELATED: {"taskId": tid}}
    if status == "completed":
        send_result(req_id, {"content": [{"type": "text", "text": "job done"}], "_meta": meta})
    elif status == "failed":
        send_result(req_id, {"content": [{"type": "text", "text": "disk on fire"}],
                             "isError": True, "_meta": meta})
    else:
        send_error(req_id, -32602, f"task {tid} was cancelled")


def handle_request(msg):
    req_id = msg["id"]
    method = msg["method"]
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if method == "initialize":
        send_result(req_id, {
            "protocolVersion": negotiate_version(params.get("protocolVersion")),
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                                                    "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "task-demo", "version": "1.0.0"}})
    elif method == "ping":
        send_result(req_id, {})
    elif method == "tools/list":
        send_result(req_id, {"tools": TOOLS})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        if name not in TOOL_NAMES:
            send_error(req_id, -32602, f"unknown tool: {name}")
        elif name == "plain":
            send_result(req_id, text_result("plain"))
        elif name == "received":
            with _cond:
                msgs = [m for m in _received if m is not msg]
            s = {"messages": msgs}
            send_result(req_id, {"content": [{"type": "text", "text": json.dumps(s)}],
                                 "structuredContent": s})
        elif isinstance(params.get("task"), dict):
            send_result(req_id, {"task": create_task(name, args)})
        else:
            send_result(req_id, text_result("ran without task"))
    elif method in ("tasks/get", "tasks/cancel", "tasks/result"):
        with _cond:
            try:
                task = get_task(params)
            except LookupError as e:
                send_error(req_id, -32602, str(e))
                return
            if method == "tasks/get":
                on_poll(task)
                send_result(req_id, public(task))
                return
            if method == "tasks/cancel":
                if task["status"] in TERMINAL:
                    send_error(req_id, -32602,
                               f"cannot cancel task {task['taskId']}: already {task['status']}")
                    return
                set_status(task, "cancelled", "cancelled by client")
                send_result(req_id, public(task))
                return
        threading.Thread(target=tasks_result_worker, args=(req_id, task["taskId"]), daemon=True).start()
    elif method == "tasks/list":
        with _cond:
            send_result(req_id, {"tasks": [public(t) for t in _tasks.values()]})
    else:
        send_error(req_id, -32601, f"method not found: {method}")


def main():
    log("ready")
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
        try:
            msg = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            send_error(None, -32700, "parse error")
            continue
        if not isinstance(msg, dict):
            send_error(None, -32600, "invalid request")
            continue
        with _cond:
            _received.append(msg)
        if isinstance(msg.get("method"), str) and "id" in msg:
            try:
                handle_request(msg)
            except Exception as e:
                log(f"internal error: {e!r}")
                send_error(msg["id"], -32603, f"internal error: {e}")
        # notifications (incl. notifications/cancelled) and responses: ignored
    log("stdin EOF, exiting")
    os._exit(0)


if __name__ == "__main__":
    main()
