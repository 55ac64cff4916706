#!/usr/bin/env python3
"""A deliberately difficult Streamable HTTP MCP server, for the HTTP transport tests of skald-mcp.

Dependency-free (http.server). It records every request it receives (verb, path, headers, JSON
body) and serves them as JSON on `GET /_received`, so tests can assert what the client sent.

Usage:
  python3 scripts/hostile_http_server.py [--port N] [--get stream|405|400|404] [--drop-get-after N]
                                         [--no-session]

  --port N            port on 127.0.0.1 (default 0: a free port is picked)
  --get stream        (default) GET /mcp opens a listening SSE stream (priming event id `g-0`,
                      `retry: 100`); messages queued by the `notify_get` tool are sent on it;
                      it ends when its session expires or is deleted
  --get 405           GET /mcp answers 405 Method Not Allowed
  --get 400, --get 404  GET /mcp answers 400 Bad Request or 404 Not Found, as servers that
                      only route POST do (instead of the spec's 405)
  --drop-get-after N  drop the listening stream (without ending it) after N message events; the
                      client must reopen it with Last-Event-ID
  --no-session        never assign an Mcp-Session-Id
  --modern            also speak MCP 2026-07-28: server/discover is answered, and a request
                      carrying _meta["io.modelcontextprotocol/protocolVersion"] needs no
                      session (without this flag server/discover gets the 400 of a request
                      without a session, as from a legacy server)
  --modern tasks      (with --modern) task_tool answers a modern request that declares the tasks
                      extension with a task handle (resultType "task", taskId m-1); tasks/get
                      answers "working", then "completed" with the result inline
  --drop-first-list   (with --modern) the first tools/list is answered with an SSE stream that
                      is dropped before its response; later ones are answered normally

Once it listens it prints exactly one line `READY <port>` to stdout.

Endpoint /mcp (a POST to /moved gets a 307 redirect to /mcp). `initialize` answers with a JSON body and a new session id. Any other request
without the session id gets 400; with an unknown, expired or deleted one 404. Notifications and
responses get 202. Tools (tools/call), each a different behaviour:

  echo {text}            JSON body with the text
  sse_echo {text}        SSE answer split into small chunks that cut lines and events (CRLF, a
                         comment, an info log notification first), then the response
  expire                 expires the current session (the next request with it gets 404)
  expire_forever         from now on every request (not notification) that carries a session id
                         gets 404
  drop_resumable         SSE: priming event (id, retry 100 ms), a progress notification, then the
                         connection is dropped mid-stream; GET with Last-Event-ID of the last event
                         replays a second progress notification and the response
  drop_unresumable       SSE without event ids: a progress notification, then a drop
  garbage                SSE full of garbage (invalid JSON, binary, unknown fields and event types,
                         lines without a colon, a bad retry), then a valid response
  garbage_only           the same garbage, then the stream ends without a response
  slow {seconds}         sleeps, then answers "slept"
  html                   200 with Content-Type text/html
  error500               500 with a text body
  bad_json               200 application/json with a body that is not JSON
  huge {bytes}           a JSON body of about that many bytes
  huge_sse {bytes}       one SSE event of about that many bytes
  accepted               202 Accepted for the request (no answer at all)
  task_tool              declared with taskSupport "optional": a task-augmented call answers with a
                         task handle; tasks/get reports "working" once, then "completed";
                         tasks/result gives the text "task done"
  auth_echo              401 whose body quotes the Authorization and X-Api-Key headers back (as
                         some gateways do), for the tests that check a secret never reaches a log
  auth_echo_at {pad}     the same, the header quoted after `pad` spaces (so that it can straddle
                         the client's cut of a quoted body)
  set_busy {method, count, status, retry_after}
                         the next `count` POSTs of JSON-RPC `method` (any method, `initialize`
                         included, from any client) are answered `status` (429 or 503) with
                         `Retry-After: retry_after` (omitted when null); answers "busy set"
  busy {status, retry_after}
                         this call itself is answered `status` with `Retry-After`
  reset_json             a JSON body cut short: Content-Length promises more, then the
                         connection is reset (RST)
  endless_sse            an SSE stream that never answers: a keep-alive comment every 50 ms
                         until the client goes away
  endless_closed         how many endless_sse streams the client went away from
  huge_header {bytes}    a JSON answer with one response header of that many bytes
  notify_get {n}         queues, for the GET stream: notifications/custom {n}, a log notification,
                         and a `ping` request with id "srv-<n>"; answers "queued"
"""

import argparse
import json
import queue
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
RECEIVED = []
SESSIONS = {}  # id -> "live" | "expired" | "deleted"
STATE = {"always_404": False, "stream_counter": 0, "get_events": 0}
RESUMABLE = {}  # last event id -> list of (event id, message) still to send
GET_QUEUE = queue.Queue()
ARGS = None

GARBAGE = (
    b": garbage follows\r\n"
    b"data: {not json at all\r\n\r\n"
    b"data: \xff\xfe\x00\x01 binary\n\n"
    b"event: weird\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/weird\"}\n\n"
    b"this line has no colon\n\n"
    b"retry: soon\nfoo: bar\n\n"
    b"data: []\n\n"
    b"data: {\"jsonrpc\":\"1.0\",\"id\":\"x\"}\n\n"
    b"data: 42\r\r"
)


def tool_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


def event(message=None, event_id=None, retry=None):
    out = b""
    if event_id is not None:
        out += b"id: " + event_id.encode() + b"\r\n"
    if retry is not None:
        out += b"retry: %d\r\n" % retry
    data = b"" if message is None else json.dumps(message).encode()
    out += b"data: " + data + b"\r\n\r\n"
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hostile-http/1.0"

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    # ---- plumbing ----------------------------------------------------------------------------

    def record(self, body):
        entry = {
            "verb": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        }
        with LOCK:
            RECEIVED.append(entry)

    def send_plain(self, status, body=b"", ctype="application/json", headers=None):
        self.send_response(status)
        if body or status != 202:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def send_json(self, obj, status=200, headers=None):
        self.send_plain(status, json.dumps(obj).encode(), headers=headers)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            self.wfile.flush()

    def end_sse(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self):
        """Closes the connection in the middle of the chunked body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def session_problem(self, is_request=True):
        """None when the request may proceed, else (status, message). `expire_forever` applies
        to requests only (so the re-initialization itself succeeds and the retry fails)."""
        sid = self.headers.get("Mcp-Session-Id")
        if ARGS.no_session:
            return None
        if sid is None:
            return (400, "Bad Request: missing session id")
        with LOCK:
            state = SESSIONS.get(sid)
            always = STATE["always_404"]
        if state != "live" or (always and is_request):
            return (404, "Not Found: session expired")
        return None

    def send_busy(self, status, retry_after):
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        self.send_plain(status, b"slow down", ctype="text/plain", headers=headers)

    def refuse(self, status, message):
        self.send_json({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}},
                       status=status)

    # ---- verbs -------------------------------------------------------------------------------

    def do_GET(self):
        if self.path == "/_received":
            with LOCK:
                body = json.dumps(RECEIVED).encode()
            self.send_plain(200, body)
            return
        self.record(None)
        if ARGS.get == "405":
            self.send_plain(405, b'{"error":"no GET stream here"}', headers={"Allow": "POST, DELETE"})
            return
        if ARGS.get in ("400", "404"):
            self.send_plain(int(ARGS.get), b"Cannot GET /mcp")
            return
        problem = self.session_problem()
        if problem:
            self.refuse(*problem)
            return
        last = self.headers.get("Last-Event-ID")
        with LOCK:
            pending = RESUMABLE.pop(last, None) if last else None
        if pending is not None:
            self.start_sse()
            for event_id, message in pending:
                self.chunk(event(message, event_id))
            self.end_sse()
            return
        self.listen(self.headers.get("Mcp-Session-Id"))

    def listen(self, sid):
        self.start_sse()
        self.chunk(event(None, "g-0", retry=100))
        sent = 0
        last_write = time.monotonic()
        try:
            while True:
                with LOCK:
                    ended = sid is not None and SESSIONS.get(sid) != "live"
                if ended:  # an expired or deleted session's stream ends
                    self.end_sse()
                    return
                try:
                    message = GET_QUEUE.get(timeout=0.2)
                except queue.Empty:
                    if time.monotonic() - last_write > 1.0:
                        self.chunk(b": keep-alive\r\n\r\n")
                        last_write = time.monotonic()
                    continue
                with LOCK:
                    STATE["get_events"] += 1
                    n = STATE["get_events"]
                self.chunk(event(message, f"g-{n}"))
                last_write = time.monotonic()
                sent += 1
                if ARGS.drop_get_after and sent >= ARGS.drop_get_after:
                    self.drop()
                    return
        except OSError:
            return

    def do_DELETE(self):
        self.record(None)
        sid = self.headers.get("Mcp-Session-Id")
        with LOCK:
            known = sid in SESSIONS
            if known:
                SESSIONS[sid] = "deleted"
        self.send_plain(200 if known else 404, b"")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            msg = json.loads(raw)
        except ValueError:
            self.record(raw.decode("utf-8", "replace"))
            self.refuse(400, "Parse error")
            return
        self.record(msg)
        if self.path == "/moved":
            # The endpoint has moved: every POST is redirected, method and
            # body kept (307).
            self.send_plain(307, b"", ctype="text/plain", headers={"Location": "/mcp"})
            return
        method = msg.get("method") if isinstance(msg, dict) else None
        with LOCK:
            busy = STATE.get("busy")
            if busy and busy["method"] == method and busy["count"] > 0:
                busy["count"] -= 1
                STATE.setdefault("busy_answered", 0)
                STATE["busy_answered"] += 1
            else:
                busy = None
        if busy:
            self.send_busy(busy["status"], busy.get("retry_after"))
            return
        params = msg.get("params") if isinstance(msg, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = ARGS.modern and isinstance(meta, dict) and \
            "io.modelcontextprotocol/protocolVersion" in meta
        if modern and method == "server/discover":
            self.send_json({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile-http", "version": "1.0"}},
                "ttlMs": 0, "cacheScope": "public"}})
            return
        if modern and method == "tools/list" and ARGS.drop_first_list:
            with LOCK:
                n = STATE.get("lists", 0)
                STATE["lists"] = n + 1
            if n == 0:
                self.start_sse()
                self.chunk(b": the response comes never\n\n")
                self.drop()
                return
        if method == "initialize":
            sid = None if ARGS.no_session else uuid.uuid4().hex
            if sid:
                with LOCK:
                    SESSIONS[sid] = "live"
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-http", "version": "1.0"},
            }
            self.send_json({"jsonrpc": "2.0", "id": msg["id"], "result": result},
                           headers={"Mcp-Session-Id": sid} if sid else None)
            return
        problem = None if modern else self.session_problem(is_request="id" in msg and method is not None)
        if problem:
            self.refuse(*problem)
            return
        if "id" not in msg or method is None:
            self.send_plain(202)  # a notification or a response
            return
        rid = msg["id"]
        if method == "ping":
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            names = ["echo", "sse_echo", "expire", "expire_forever", "drop_resumable", "drop_unresumable",
                     "garbage", "garbage_only", "slow", "html", "error500", "bad_json", "huge", "huge_sse",
                     "accepted", "notify_get", "auth_echo", "auth_echo_at", "set_busy", "busy", "reset_json",
                     "endless_sse", "endless_closed",
                     "huge_header"]
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in names]
            tools.append({"name": "task_tool", "inputSchema": {"type": "object"},
                          "execution": {"taskSupport": "optional"}})
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        elif method == "tools/call":
            params = msg.get("params") or {}
            caps = (meta or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
            if params.get("name") == "task_tool" and modern and \
                    "io.modelcontextprotocol/tasks" in (caps.get("extensions") or {}):
                # The tasks extension (2026-07-28): the server decides.
                with LOCK:
                    STATE["task_polls"] = 0
                self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                    "resultType": "task", "taskId": "m-1", "status": "working",
                    "createdAt": "2026-12-03T10:00:00Z", "lastUpdatedAt": "2026-12-03T10:00:00Z",
                    "ttlMs": 60000, "pollIntervalMs": 100}})
            elif params.get("name") == "task_tool" and "task" in params:
                with LOCK:
                    STATE["task_polls"] = 0
                task = {"taskId": "t-1", "status": "working", "pollInterval": 100, "ttl": 60000}
                self.send_json({"jsonrpc": "2.0", "id": rid, "result": {"task": task}})
            else:
                self.call(rid, params.get("name"), params.get("arguments") or {}, params)
        elif method == "tasks/get" and modern:
            with LOCK:
                STATE["task_polls"] = STATE.get("task_polls", 0) + 1
                done = STATE["task_polls"] >= 2
            task = {"resultType": "complete", "taskId": "m-1", "status": "completed" if done else "working",
                    "createdAt": "2026-12-03T10:00:00Z", "lastUpdatedAt": "2026-12-03T10:00:01Z",
                    "ttlMs": 60000, "pollIntervalMs": 100}
            if done:
                task["result"] = tool_result("modern task done")
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": task})
        elif method == "tasks/get":
            with LOCK:
                STATE["task_polls"] = STATE.get("task_polls", 0) + 1
                done = STATE["task_polls"] >= 2
            task = {"taskId": "t-1", "status": "completed" if done else "working", "pollInterval": 100,
                    "statusMessage": "done" if done else "working on it"}
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": task})
        elif method == "tasks/result":
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": tool_result("task done")})
        else:
            self.send_json({"jsonrpc": "2.0", "id": rid,
                            "error": {"code": -32601, "message": f"method not found: {method}"}})

    def call(self, rid, name, args, params):
        def reply(text):
            return {"jsonrpc": "2.0", "id": rid, "result": tool_result(text)}

        token = (params.get("_meta") or {}).get("progressToken", rid)

        def progress(n, message):
            return {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": n, "total": 2, "message": message}}

        if name == "echo":
            self.send_json(reply(args.get("text", "")))
        elif name == "sse_echo":
            body = event({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "sse_echo says hi"}})
            body += b": a comment\r\n"
            body += event(reply(args.get("text", "")))
            self.start_sse()
            for i in range(0, len(body), 7):
                self.chunk(body[i:i + 7])
                time.sleep(0.002)
            self.end_sse()
        elif name == "expire":
            with LOCK:
                SESSIONS[self.headers.get("Mcp-Session-Id")] = "expired"
            self.send_json(reply("expired"))
        elif name == "expire_forever":
            with LOCK:
                STATE["always_404"] = True
            self.send_json(reply("every session is now expired"))
        elif name == "drop_resumable":
            with LOCK:
                STATE["stream_counter"] += 1
                n = STATE["stream_counter"]
                RESUMABLE[f"s{n}-1"] = [(f"s{n}-2", progress(2, "after the drop")),
                                        (f"s{n}-3", reply("resumed"))]
            self.start_sse()
            self.chunk(event(None, f"s{n}-0", retry=100))
            self.chunk(event(progress(1, "before the drop"), f"s{n}-1"))
            self.drop()
        elif name == "drop_unresumable":
            self.start_sse()
            self.chunk(event(progress(1, "before the drop")))
            self.drop()
        elif name in ("garbage", "garbage_only"):
            self.start_sse()
            for i in range(0, len(GARBAGE), 5):
                self.chunk(GARBAGE[i:i + 5])
            if name == "garbage":
                self.chunk(event(reply("survived the garbage")))
            self.end_sse()
        elif name == "slow":
            time.sleep(float(args.get("seconds", 1)))
            self.send_json(reply("slept"))
        elif name == "html":
            self.send_plain(200, b"<html><body><h1>Gateway says hi</h1></body></html>", ctype="text/html")
        elif name == "error500":
            self.send_plain(500, b"upstream exploded\nstack trace follows", ctype="text/plain")
        elif name == "bad_json":
            self.send_plain(200, b"{this is not json")
        elif name == "huge":
            size = int(args.get("bytes", 1 << 20))
            self.send_json(reply("x" * size))
        elif name == "huge_sse":
            size = int(args.get("bytes", 1 << 20))
            self.start_sse()
            data = event(reply("y" * size))
            for i in range(0, len(data), 65536):
                self.chunk(data[i:i + 65536])
            self.end_sse()
        elif name == "accepted":
            self.send_plain(202)
        elif name == "set_busy":
            with LOCK:
                STATE["busy"] = {"method": args["method"], "count": int(args.get("count", 1)),
                                 "status": int(args.get("status", 503)),
                                 "retry_after": args.get("retry_after")}
            self.send_json(reply("busy set"))
        elif name == "busy":
            self.send_busy(int(args.get("status", 429)), args.get("retry_after"))
        elif name == "reset_json":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":{"cont')
            self.wfile.flush()
            self.close_connection = True
            # SO_LINGER 0: close() sends RST instead of FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
        elif name == "stray_progress":
            # `count` progress notifications for the request's id, asked for
            # or not, in one SSE response before the result.
            n = int(args.get("count", 200))
            body = b"".join(event({"jsonrpc": "2.0", "method": "notifications/progress",
                                   "params": {"progressToken": rid, "progress": i + 1, "total": n}})
                            for i in range(n))
            self.start_sse()
            self.chunk(body + event(reply(f"after {n}")))
            self.end_sse()
        elif name == "endless_sse":
            self.start_sse()
            try:
                while True:
                    self.chunk(b": still thinking\r\n")
                    time.sleep(0.05)
            except OSError:
                with LOCK:
                    STATE["endless_closed"] = STATE.get("endless_closed", 0) + 1
                self.close_connection = True
        elif name == "endless_closed":
            with LOCK:
                self.send_json(reply(str(STATE.get("endless_closed", 0))))
        elif name == "huge_header":
            size = int(args.get("bytes", 1 << 20))
            self.send_json(reply("with a huge header"), headers={"X-Huge": "h" * size})
        elif name == "auth_echo":
            body = (f"invalid credentials: {self.headers.get('Authorization')}"
                    f" key={self.headers.get('X-Api-Key')}").encode()
            self.send_plain(401, body, ctype="text/plain")
        elif name == "auth_echo_at":
            pad = " " * int(args.get("pad", 0))
            body = f"{pad}{self.headers.get('Authorization')} invalid".encode()
            self.send_plain(401, body, ctype="text/plain")
        elif name == "notify_get":
            n = args.get("n", 1)
            GET_QUEUE.put({"jsonrpc": "2.0", "method": "notifications/custom", "params": {"n": n}})
            GET_QUEUE.put({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "warning", "logger": "get", "data": f"from the GET stream {n}"}})
            GET_QUEUE.put({"jsonrpc": "2.0", "id": f"srv-{n}", "method": "ping"})
            self.send_json(reply("queued"))
        else:
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}})


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--get", choices=["stream", "405", "400", "404"], default="stream")
    ap.add_argument("--drop-get-after", type=int, default=0)
    ap.add_argument("--no-session", action="store_true")
    ap.add_argument("--modern", action="store_true")
    ap.add_argument("--drop-first-list", action="store_true")
    ARGS = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    print(f"READY {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
