#!/usr/bin/env python3
"""Dependency-free MCP server on the HTTP+SSE transport of MCP 2024-11-05, for the client's tests.

Usage: python3 scripts/sse_mcp_server.py [--port N] [--mode MODE]

GET /sse opens the event stream: its first event is `endpoint` with data `/messages?session=<id>`,
then every response, notification and server request of that session is a `message` event.
POST /messages?session=<id> takes one JSON-RPC message and answers 202 Accepted. Anything else: 404.
(POST /mcp and POST /sse answer 405, as a server without Streamable HTTP does.) Once it accepts connections it
prints exactly one line `READY <port>` to stdout; it runs until killed.

Modes:
  normal            as above
  foreign_endpoint  the endpoint event names http://evil.example/messages (another origin)
  no_endpoint       the stream sends comments only, never an endpoint
  not_sse           GET /sse answers 200 application/json

Tools (initialize answers protocolVersion 2024-11-05):
  echo {text}       the text
  log {message}     a notifications/message (info) on the stream, then "logged"
  ask               sends elicitation/create on the stream, waits for the client's POSTed answer:
                    "answer <action> <json content>"
  slow {seconds}    answers after `seconds` unless cancelled (notifications/cancelled)
  drop              ends the event stream without answering
  cancels           JSON list of the request ids the client cancelled
  progress {steps}  `steps` notifications/progress for the request's progressToken, then "progressed"
  notify {n}        `n` notifications "event/sse" {"i": 1..n}, then "notified"
  big {bytes}       a text of `bytes` "x" characters
  headers           JSON {"get": {...}, "post": {...}}: the X-* headers (names lower-cased) of the
                    session's GET and of the POST that carried this call
GET /_state: {"streams_open": n, "streams_closed": n, "posts": n, "refused_posts": n (POSTs to any
other path, e.g. a Streamable HTTP attempt at /sse)}
"""

import argparse
import json
import queue
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
SESSIONS = {}  # id -> queue.Queue of (bytes or None to end)
WAITS = {}  # server request id -> [Event, message]
STATE = {"streams_open": 0, "streams_closed": 0, "posts": 0, "refused_posts": 0, "cancels": []}
CANCELLED = {}  # (session, request id) -> Event
GET_HEADERS = {}  # session -> X-* headers of its GET
POST_HEADERS = {}  # request id -> X-* headers of the POST that carried it
MODE = "normal"


def event(kind, data):
    return f"event: {kind}\ndata: {data}\n\n".encode()


def push(session, msg):
    q = SESSIONS.get(session)
    if q is not None:
        q.put(event("message", json.dumps(msg)))


def x_headers(headers):
    return {k.lower(): v for k, v in headers.items() if k.lower().startswith("x-")}


def text_result(text):
    return {"content": [{"type": "text", "text": text}]}


def handle(session, msg):
    method, mid = msg.get("method"), msg.get("id")
    params = msg.get("params") or {}
    if method is None and mid is not None:  # a response to our request
        with LOCK:
            w = WAITS.pop(mid, None)
        if w:
            w[1] = msg
            w[0].set()
        return
    if method == "notifications/cancelled":
        with LOCK:
            STATE["cancels"].append(params.get("requestId"))
            ev = CANCELLED.get((session, json.dumps(params.get("requestId"))))
        if ev:
            ev.set()
        return
    if mid is None:
        return
    reply = lambda result: push(session, {"jsonrpc": "2.0", "id": mid, "result": result})
    if method == "initialize":
        reply({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}, "logging": {}},
               "serverInfo": {"name": "sse-demo", "version": "1.0.0"}})
    elif method == "ping":
        reply({})
    elif method == "tools/list":
        reply({"tools": [{"name": n, "inputSchema": {"type": "object"}}
                         for n in ("echo", "log", "ask", "slow", "drop", "cancels", "progress",
                                   "notify", "big", "headers")]})
    elif method == "tools/call":
        threading.Thread(target=call, args=(session, mid, params), daemon=True).start()
    else:
        push(session, {"jsonrpc": "2.0", "id": mid,
                       "error": {"code": -32601, "message": f"method not found: {method}"}})


def call(session, mid, params):
    name, args = params.get("name"), params.get("arguments") or {}
    reply = lambda text: push(session, {"jsonrpc": "2.0", "id": mid, "result": text_result(text)})
    if name == "echo":
        reply(str(args.get("text", "")))
    elif name == "log":
        push(session, {"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "logger": "sse-demo", "data": args.get("message")}})
        reply("logged")
    elif name == "ask":
        rid = f"ask-{uuid.uuid4().hex[:8]}"
        w = [threading.Event(), None]
        with LOCK:
            WAITS[rid] = w
        push(session, {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": {
            "message": "Your name?", "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}})
        if not w[0].wait(30):
            return reply("no answer")
        res = (w[1] or {}).get("result") or {}
        reply(f"answer {res.get('action')} {json.dumps(res.get('content'), sort_keys=True)}")
    elif name == "slow":
        ev = threading.Event()
        with LOCK:
            CANCELLED[(session, json.dumps(mid))] = ev
        if not ev.wait(float(args.get("seconds", 30))):
            reply("slow done")
    elif name == "drop":
        q = SESSIONS.get(session)
        if q is not None:
            q.put(None)
    elif name == "cancels":
        with LOCK:
            reply(json.dumps(STATE["cancels"]))
    elif name == "progress":
        token = (params.get("_meta") or {}).get("progressToken")
        steps = int(args.get("steps", 3))
        for i in range(1, steps + 1):
            if token is not None:
                push(session, {"jsonrpc": "2.0", "method": "notifications/progress",
                               "params": {"progressToken": token, "progress": i, "total": steps,
                                          "message": f"step {i}"}})
        reply("progressed")
    elif name == "notify":
        for i in range(1, int(args.get("n", 1)) + 1):
            push(session, {"jsonrpc": "2.0", "method": "event/sse", "params": {"i": i}})
        reply("notified")
    elif name == "big":
        reply("x" * int(args.get("bytes", 0)))
    elif name == "headers":
        with LOCK:
            seen = {"get": GET_HEADERS.get(session, {}), "post": POST_HEADERS.get(mid, {})}
        reply(json.dumps(seen, sort_keys=True))
    else:
        push(session, {"jsonrpc": "2.0", "id": mid,
                       "error": {"code": -32602, "message": f"unknown tool: {name}"}})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_plain(self, status, body=b"", ctype="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urlsplit(self.path)
        if u.path == "/_state":
            with LOCK:
                body = json.dumps({k: v for k, v in STATE.items() if k != "cancels"}).encode()
            return self.send_plain(200, body, "application/json")
        if u.path != "/sse":
            return self.send_plain(404, b"not found")
        if MODE == "not_sse":
            return self.send_plain(200, b'{"hello": "world"}', "application/json")
        session = uuid.uuid4().hex
        q = queue.Queue()
        with LOCK:
            SESSIONS[session] = q
            GET_HEADERS[session] = x_headers(self.headers)
            STATE["streams_open"] += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            if MODE == "foreign_endpoint":
                self.wfile.write(event("endpoint", f"http://evil.example/messages?session={session}"))
            elif MODE == "no_endpoint":
                pass
            else:
                self.wfile.write(event("endpoint", f"/messages?session={session}"))
            self.wfile.flush()
            while True:
                try:
                    item = q.get(timeout=0.5)
                except queue.Empty:
                    item = b": keep-alive\n\n"
                if item is None:
                    break
                self.wfile.write(item)
                self.wfile.flush()
        except OSError:
            pass
        finally:
            with LOCK:
                SESSIONS.pop(session, None)
                STATE["streams_open"] -= 1
                STATE["streams_closed"] += 1
            self.close_connection = True

    def do_POST(self):
        u = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if u.path != "/messages":
            with LOCK:
                STATE["refused_posts"] += 1
            if u.path in ("/mcp", "/sse"):
                return self.send_plain(405, b"method not allowed")
            return self.send_plain(404, b"not found")
        session = (parse_qs(u.query).get("session") or [""])[0]
        if session not in SESSIONS:
            return self.send_plain(404, b"unknown session")
        try:
            msg = json.loads(body)
        except ValueError:
            return self.send_plain(400, b"invalid JSON")
        with LOCK:
            STATE["posts"] += 1
            if isinstance(msg, dict) and msg.get("id") is not None:
                POST_HEADERS[msg.get("id")] = x_headers(self.headers)
        self.send_plain(202, b"Accepted")
        handle(session, msg)


def main():
    global MODE
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="normal",
                    choices=["normal", "foreign_endpoint", "no_endpoint", "not_sse"])
    a = ap.parse_args()
    MODE = a.mode
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print(f"READY {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
