#!/usr/bin/env python3
"""Dependency-free MCP server that exercises server->client `elicitation/create` (form mode).

Usage: python3 scripts/elicitation_demo_mcp.py

Stdio transport (newline-delimited JSON-RPC 2.0), MCP revision 2025-11-25; logs go to stderr;
exits 0 on stdin EOF. serverInfo {"name": "elicitation-demo", "version": "1.0.0"},
capabilities {"tools": {}}.

Tools (each tools/call runs on its own thread; stdin keeps being read while a tool waits):
  sudo                    sends elicitation/create {mode:"form", message:"Enter sudo password",
                          requestedSchema:{type:object, properties:{password:{type:string,
                          format:"password"}}, required:["password"]}} and returns text
                          "accepted: <len> chars" | "declined" | "cancelled" | "error: <message>"
  confirm                 sends elicitation/create {mode:"form", message:"Proceed?",
                          requestedSchema:{type:object, properties:{}}} and returns text
                          "confirmed" | "declined" | "cancelled" | "error: <message>"
  open_url                URL-mode elicitation {mode:"url", message:"Authorize access",
                          url:"https://auth.example.test/authorize?x=1", elicitationId:"url-e<n>"};
                          returns text "url <action>" | "error: <message>"
  last_elicitation_reply  text = json.dumps of the `result` object of the last elicitation
                          response received ("null" if none yet; {"error": <error object>} if
                          the last response was a JSON-RPC error)
  received                like the demo server: structuredContent {"messages": [...]} of every
                          message received so far except this call, plus a text mirror

Elicitation request ids are strings "e1", "e2", ... . The request is sent even if the client
did not declare the elicitation capability (so client-side refusal can be tested).
A notifications/cancelled for the waiting tools/call aborts it without any response.
DEMO_PROTOCOL_VERSION (env) forces the protocolVersion answered to initialize.
"""

import json
import os
import sys
import threading

LATEST_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

_out_lock = threading.Lock()
_state_lock = threading.Lock()
_received = []
_inflight = {}            # id_key(tools/call id) -> Event (cancelled)
_pending = {}             # elicitation id -> [Event, response message]
_elicit_counter = 0
_last_reply = None


def log(msg):
    try:
        sys.stderr.write(f"elicitation-demo: {msg}\n")
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


def id_key(v):
    return json.dumps(v)


def text_result(t, is_error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if is_error:
        r["isError"] = True
    return r


def negotiate_version(requested):
    forced = os.environ.get("DEMO_PROTOCOL_VERSION")
    if forced:
        return forced
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


class Cancelled(Exception):
    pass


def elicit(message, requested_schema, cancel_ev, url=None):
    """Send elicitation/create and block until the client answers. Returns the response message.
    With `url`, a URL-mode elicitation (MCP 2025-11-25) is sent instead of a form."""
    global _elicit_counter
    with _state_lock:
        _elicit_counter += 1
        eid = f"e{_elicit_counter}"
        slot = [threading.Event(), None]
        _pending[eid] = slot
    if url is None:
        params = {"mode": "form", "message": message, "requestedSchema": requested_schema}
    else:
        params = {"mode": "url", "message": message, "url": url, "elicitationId": f"url-{eid}"}
    send({"jsonrpc": "2.0", "id": eid, "method": "elicitation/create", "params": params})
    try:
        while not slot[0].wait(0.05):
            if cancel_ev.is_set():
                raise Cancelled()
        return slot[1]
    finally:
        with _state_lock:
            _pending.pop(eid, None)


def tool_sudo(args, ctx_msg, cancel_ev):
    resp = elicit("Enter sudo password", {
        "type": "object",
        "properties": {"password": {"type": "string", "format": "password"}},
        "required": ["password"],
    }, cancel_ev)
    if "error" in resp:
        err = resp["error"] if isinstance(resp["error"], dict) else {}
        return text_result(f"error: {err.get('message', '')}")
    res = resp.get("result") if isinstance(resp.get("result"), dict) else {}
    action = res.get("action")
    if action == "accept":
        content = res.get("content") if isinstance(res.get("content"), dict) else {}
        pw = content.get("password", "")
        if not isinstance(pw, str):
            pw = json.dumps(pw)
        return text_result(f"accepted: {len(pw)} chars")
    if action == "decline":
        return text_result("declined")
    if action == "cancel":
        return text_result("cancelled")
    return text_result(f"error: unknown action {action!r}")


def tool_confirm(args, ctx_msg, cancel_ev):
    resp = elicit("Proceed?", {"type": "object", "properties": {}}, cancel_ev)
    if "error" in resp:
        err = resp["error"] if isinstance(resp["error"], dict) else {}
        return text_result(f"error: {err.get('message', '')}")
    res = resp.get("result") if isinstance(resp.get("result"), dict) else {}
    action = res.get("action")
    return text_result({"accept": "confirmed", "decline": "declined", "cancel": "cancelled"}
                       .get(action, f"error: unknown action {action!r}"))


def tool_open_url(args, ctx_msg, cancel_ev):
    resp = elicit("Authorize access", None, cancel_ev, url="https://auth.example.test/authorize?x=1")
    if "error" in resp:
        err = resp["error"] if isinstance(resp["error"], dict) else {}
        return text_result(f"error: {err.get('message', '')}")
    res = resp.get("result") if isinstance(resp.get("result"), dict) else {}
    return text_result(f"url {res.get('action')}")


def tool_last_reply(args, ctx_msg, cancel_ev):
    with _state_lock:
        last = _last_reply
    return text_result(json.dumps(last))


def tool_received(args, ctx_msg, cancel_ev):
    with _state_lock:
        msgs = [m for m in _received if m is not ctx_msg]
    s = {"messages": msgs}
    return {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s}


EMPTY = {"type": "object", "properties": {}}
TOOLS = {
    "sudo": ({"name": "sudo", "description": "Ask the user for a sudo password via elicitation.",
              "inputSchema": EMPTY}, tool_sudo),
    "confirm": ({"name": "confirm", "description": "Ask the user to confirm via elicitation.",
                 "inputSchema": EMPTY}, tool_confirm),
    "open_url": ({"name": "open_url", "description": "Ask the user to open a URL (URL-mode elicitation).",
                  "inputSchema": EMPTY}, tool_open_url),
    "last_elicitation_reply": ({"name": "last_elicitation_reply",
                                "description": "Raw JSON of the last elicitation reply.",
                                "inputSchema": EMPTY}, tool_last_reply),
    "received": ({"name": "received", "description": "Every message received so far.",
                  "inputSchema": EMPTY}, tool_received),
}


def run_call(req_id, params, msg, cancel_ev):
    try:
        name = params.get("name")
        entry = TOOLS.get(name)
        if entry is None:
            send_error(req_id, -32602, f"unknown tool: {name}")
            return
        try:
            res = entry[1](params.get("arguments") or {}, msg, cancel_ev)
        except Cancelled:
            log(f"call {req_id!r} cancelled while waiting for elicitation reply")
            return
        except Exception as e:
            log(f"tool {name} raised {e!r}")
            res = text_result(f"internal error: {e}", is_error=True)
        if cancel_ev.is_set():
            return
        send_result(req_id, res)
    finally:
        with _state_lock:
            _inflight.pop(id_key(req_id), None)


def handle(msg):
    global _last_reply
    method = msg.get("method")
    if not isinstance(method, str):
        if "id" in msg and ("result" in msg or "error" in msg):
            with _state_lock:
                _last_reply = msg["result"] if "result" in msg else {"error": msg["error"]}
                slot = _pending.get(msg["id"]) if isinstance(msg["id"], str) else None
            if slot is None:
                log(f"response for unknown id {msg['id']!r} ignored")
                return
            slot[1] = msg
            slot[0].set()
        return
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    if "id" not in msg:
        if method == "notifications/cancelled":
            with _state_lock:
                ev = _inflight.get(id_key(params.get("requestId")))
            if ev:
                ev.set()
        return
    req_id = msg["id"]
    if method == "initialize":
        send_result(req_id, {"protocolVersion": negotiate_version(params.get("protocolVersion")),
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "elicitation-demo", "version": "1.0.0"}})
    elif method == "ping":
        send_result(req_id, {})
    elif method == "tools/list":
        send_result(req_id, {"tools": [t for t, _ in TOOLS.values()]})
    elif method == "tools/call":
        ev = threading.Event()
        with _state_lock:
            _inflight[id_key(req_id)] = ev
        threading.Thread(target=run_call, args=(req_id, params, msg, ev), daemon=True).start()
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
        with _state_lock:
            _received.append(msg)
        try:
            handle(msg)
        except Exception as e:
            log(f"internal error: {e!r}")
            if "id" in msg and isinstance(msg.get("method"), str):
                send_error(msg["id"], -32603, f"internal error: {e}")
    log("stdin EOF, exiting")
    os._exit(0)


if __name__ == "__main__":
    main()
