#!/usr/bin/env python3
"""Dependency-free, deliberately misbehaving MCP server for client robustness tests.

Usage: python3 scripts/hostile_mcp_server.py MODE

MODE is one of:
  normal          minimal correct server (initialize, ping, tools/list with `echo`, tools/call echo)
  crash_mid_call  normal until a tools/call arrives, then exits with code 3 without answering
  exit_during_init  exits with code 4 as soon as initialize arrives
  no_init         reads stdin forever, never answers anything (exits 0 on stdin EOF)
  garbage         before every real response writes: "this is not json", invalid UTF-8 bytes,
                  "[1,2,3]", a response for unknown id 999999; then the real response; then a
                  duplicate of the real response
  wrong_types     tools/call is answered with {"jsonrpc":"2.0","id":<id>,"result":"not an object"}
  wrapper_exit    on tools/call starts `sleep 1000` (same process group, holding stdin, stdout
                  and stderr: the real server behind an npx-style wrapper) and exits with 3
                  without answering; the stderr line before the exit ends with
                  "at monotonic <seconds>" (CLOCK_MONOTONIC, for latency measurements)
  setsid_exit     like wrapper_exit, but the grandchild calls setsid (leaves the process group
                  and session, as a daemon does) before it sleeps holding the pipes; its pid is
                  on stderr ("setsid grandchild <pid>")
  setsid_grandchild  at start spawns `sleep` in a new session (setsid: outside the process
                  group, the client cannot kill it with the group) holding stdin, stdout and
                  stderr; adds tool `pids` -> text '{"self": <pid>, "grandchild": <pid>}';
                  serves normally and exits on stdin EOF
  markdown_inject adds tool `media` -> content: an image whose mimeType breaks out of a
                  markdown line ("image/png) ![x](https://evil/beacon.png" and a newline), and
                  resource_links to "javascript:alert(1)" and "https://ok/](javascript:alert(1))";
                  also lists a tool named LONG_TOOL_NAME (60 characters), wider than a table column
  slow_start      adds tool `slow` {file}: writes its pid to the file `file` (the call has
                  started), then answers after 600 s (HOSTILE_LIFETIME_SECS bounds it); ignores
                  SIGTERM and SIGINT, so only SIGKILL ends it during the call: for tests that
                  interrupt a call in flight
  string_id       tools/call is answered with the id as a string ("3" for request 3), which
                  is another id; a correct answer follows after 300 ms
  close_stdout    answers initialize and tools/list, then closes stdout (fd 1) and keeps running
                  (reading stdin, then sleeping after EOF) until killed
  bad_large_strings
                  on tools/call answers with a text of 200 KB that holds a raw
                  control character (arguments {"kind": "ctrl"}), invalid UTF-8
                  ({"kind": "utf8"}) or neither (anything else): the first two
                  are malformed JSON that a client must refuse
  huge_line       on tools/call writes one line of HUGE_LINE_BYTES bytes (env, default 100000000,
                  newline not counted) in chunks, then a newline, then keeps serving. The line is a
                  valid JSON-RPC response to the call whose text is padded with "x" characters.
  ignore_sigterm  ignores SIGTERM and SIGINT, serves normally, and does NOT exit on stdin EOF
                  (keeps sleeping): only SIGKILL ends it
  grandchild      spawns `sleep 1000` (same process group, inherits stdin/stdout/stderr), ignores
                  SIGTERM and SIGINT, adds tool `pids` -> text '{"self": <pid>, "grandchild": <pid>}',
                  and does not exit on stdin EOF
  no_read         answers initialize, then never reads stdin again (sleeps forever)
  flood_stderr    after initialize, a thread writes stderr lines at full speed forever;
                  requests are still answered
  slow_one        each tools/call runs on its own thread; one whose arguments contain
                  "slow": true is answered after 600 s (text "slow done"), others at once
  notify_flood    adds tool `burst` {n, pad}: sends n notifications "event/burst" {"i": 1..n}
                  (with "pad": a string of `pad` "x" characters when pad > 0), then
                  answers text "burst <n>"
  env             adds tool `env` -> text: its environment as a JSON object (what a stdio
                  server inherits from the client)
  one_write       adds tool `pack` {progress, after}: writes with ONE write(2) `progress`
                  notifications/progress for the request's progressToken (when it has one),
                  the answer (text "pack"), then `after` notifications "event/after" {"i": 1..}

  many_tools      tools/list lists MANY_TOOLS tools (env, default 100000; `echo` first, then
                  "t<i>" with a description and a one-property inputSchema) in MANY_TOOLS_PAGES
                  pages (env, default 1; cursor "p<n>")
All modes: serverInfo {"name": "hostile", "version": "1.0.0"}, capabilities {"tools": {}}.
Safety net: every mode exits by itself (os._exit(0)) after HOSTILE_LIFETIME_SECS seconds
(env, default 900) so a broken test never leaks processes forever.
DEMO_PROTOCOL_VERSION (env) forces the protocolVersion answered to initialize.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

LATEST_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MODES = ("normal", "crash_mid_call", "exit_during_init", "no_init", "garbage", "wrong_types",
         "close_stdout", "huge_line", "ignore_sigterm", "grandchild", "no_read", "flood_stderr",
         "slow_one", "notify_flood", "one_write", "string_id", "wrapper_exit",
         "many_tools", "env", "setsid_exit", "setsid_grandchild", "slow_start", "markdown_inject",
         "bad_large_strings")

LONG_TOOL_NAME = "a_tool_whose_name_is_much_wider_than_any_table_column_allows"

_out_lock = threading.Lock()
_stdout_closed = False
MODE = "normal"
GRANDCHILD_PID = None
_inflight = {}
_state_lock = threading.Lock()


def log(msg):
    try:
        os.write(2, (f"hostile[{MODE}]: {msg}\n").encode("utf-8", "replace"))
    except OSError:
        pass


def write_raw(data):
    """Write raw bytes to fd 1 (caller holds _out_lock)."""
    if _stdout_closed:
        return
    view = memoryview(data)
    try:
        while view:
            n = os.write(1, view)
            view = view[n:]
    except OSError as e:
        log(f"stdout write failed: {e}")


def encode(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")


def send(obj):
    with _out_lock:
        write_raw(encode(obj))


def send_response(obj):
    """Send a response (result or error), adding garbage around it in garbage mode."""
    data = encode(obj)
    with _out_lock:
        if MODE == "garbage":
            write_raw(b"this is not json\n")
            write_raw(b"\xff\xfe\xfa\n")
            write_raw(b"[1,2,3]\n")
            write_raw(encode({"jsonrpc": "2.0", "id": 999999, "result": {}}))
            write_raw(data)
            write_raw(data)
        else:
            write_raw(data)


def result(req_id, res):
    send_response({"jsonrpc": "2.0", "id": req_id, "result": res})


def error(req_id, code, message):
    send_response({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})


def text(t):
    return {"content": [{"type": "text", "text": t}]}


def negotiate_version(requested):
    forced = os.environ.get("DEMO_PROTOCOL_VERSION")
    if forced:
        return forced
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


def tool_defs():
    tools = [{"name": "echo", "description": "Echo text back.",
              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                              "required": ["text"]}}]
    if MODE in ("grandchild", "setsid_grandchild"):
        tools.append({"name": "pids", "description": "Return own and grandchild pid.",
                      "inputSchema": {"type": "object", "properties": {}}})
    if MODE == "notify_flood":
        tools.append({"name": "burst", "description": "Send n notifications, then answer.",
                      "inputSchema": {"type": "object",
                                      "properties": {"n": {"type": "integer"},
                                                     "pad": {"type": "integer"}},
                                      "required": ["n"]}})
    if MODE == "markdown_inject":
        tools.append({"name": "media", "description": "Media whose metadata attacks markdown.",
                      "inputSchema": {"type": "object", "properties": {}}})
        tools.append({"name": LONG_TOOL_NAME, "description": "A name wider than a table column.",
                      "inputSchema": {"type": "object", "properties": {}}})
    if MODE == "slow_start":
        tools.append({"name": "slow", "description": "Touch `file`, then answer in 600 s.",
                      "inputSchema": {"type": "object", "properties": {"file": {"type": "string"}},
                                      "required": ["file"]}})
    if MODE == "env":
        tools.append({"name": "env", "description": "Return this process's environment.",
                      "inputSchema": {"type": "object", "properties": {}}})
    if MODE == "one_write":
        count = {"type": "integer", "minimum": 0}
        tools.append({"name": "pack", "description": "Progress, answer and notifications in one write.",
                      "inputSchema": {"type": "object",
                                      "properties": {"progress": count, "after": count}}})
    return tools


def pack_answer(req_id, params):
    """The one_write mode's `pack`: everything in a single write(2)."""
    args = params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    n_progress = int(args.get("progress", 0))
    n_after = int(args.get("after", 0))
    out = b""
    if token is not None:
        for i in range(1, n_progress + 1):
            out += encode({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": i, "total": n_progress}})
    out += encode({"jsonrpc": "2.0", "id": req_id, "result": text("pack")})
    for i in range(1, n_after + 1):
        out += encode({"jsonrpc": "2.0", "method": "event/after", "params": {"i": i}})
    with _out_lock:
        write_raw(out)


def grandchild_secs():
    """How long a grandchild sleeps: no longer than this server may live."""
    return str(int(float(os.environ.get("HOSTILE_LIFETIME_SECS", "900"))))


def sleep_forever():
    while True:
        time.sleep(3600)


def huge_line_writer(req_id):
    total = int(os.environ.get("HUGE_LINE_BYTES", "100000000"))
    prefix = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
              % json.dumps(req_id)).encode()
    suffix = b'"}]}}'
    pad = max(0, total - len(prefix) - len(suffix))
    chunk = b"x" * (1 << 20)
    log(f"writing a {len(prefix) + pad + len(suffix)}-byte line")
    with _out_lock:
        write_raw(prefix)
        while pad > 0:
            n = min(pad, len(chunk))
            write_raw(chunk[:n])
            pad -= n
        write_raw(suffix)
        write_raw(b"\n")
    log("huge line written")


def run_call(req_id, params, cancel_ev):
    name = params.get("name")
    args = params.get("arguments") or {}
    if not isinstance(args, dict):
        args = {}
    try:
        if MODE == "slow_one" and args.get("slow") is True:
            if cancel_ev.wait(600):
                log(f"call {req_id!r} cancelled")
                return
            result(req_id, text("slow done"))
            return
        if name == "echo":
            t = args.get("text")
            result(req_id, text(t if isinstance(t, str) else json.dumps(t)))
        elif name == "media" and MODE == "markdown_inject":
            result(req_id, {"content": [
                {"type": "text", "text": "media follows"},
                # A 1x1 GIF, labelled with a type that ends the line's link.
                {"type": "image", "data": "R0lGODlhAQABAAAAACw=",
                 "mimeType": "image/png) ![x](https://evil/beacon.png\n"},
                {"type": "resource_link", "uri": "javascript:alert(1)", "name": "a",
                 "mimeType": "text/html"},
                {"type": "resource_link", "uri": "https://ok/](javascript:alert(1))",
                 "name": "b", "mimeType": "text/html"},
            ]})
        elif name == "slow" and MODE == "slow_start":
            # Written whole, then renamed: the file never exists half written.
            path = str(args.get("file"))
            with open(path + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(path + ".tmp", path)
            log("slow call started")
            time.sleep(600)
            result(req_id, text("slow done"))
        elif name == "pids" and MODE in ("grandchild", "setsid_grandchild"):
            result(req_id, text(json.dumps({"self": os.getpid(), "grandchild": GRANDCHILD_PID})))
        elif name == "env" and MODE == "env":
            result(req_id, text(json.dumps(dict(os.environ))))
        elif name == "pack" and MODE == "one_write":
            pack_answer(req_id, params)
        elif name == "burst" and MODE == "notify_flood":
            n = args.get("n", 0)
            n = int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else 0
            pad = args.get("pad", 0)
            pad = int(pad) if isinstance(pad, (int, float)) and not isinstance(pad, bool) else 0
            for i in range(1, n + 1):
                p = {"i": i, "pad": "x" * pad} if pad > 0 else {"i": i}
                send({"jsonrpc": "2.0", "method": "event/burst", "params": p})
            result(req_id, text(f"burst {n}"))
        else:
            error(req_id, -32602, f"unknown tool: {name}")
    finally:
        with _state_lock:
            _inflight.pop(json.dumps(req_id), None)


def handle(msg):
    global _stdout_closed
    method = msg.get("method")
    if not isinstance(method, str):
        return  # responses / junk from the client: ignore
    if "id" not in msg:
        if method == "notifications/cancelled":
            p = msg.get("params") or {}
            with _state_lock:
                ev = _inflight.get(json.dumps(p.get("requestId")))
            if ev:
                ev.set()
        return
    req_id = msg["id"]
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}

    if MODE == "no_init":
        return

    if method == "initialize":
        if MODE == "exit_during_init":
            log("initialize received: exiting with 4")
            os._exit(4)
        result(req_id, {"protocolVersion": negotiate_version(params.get("protocolVersion")),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "1.0.0"}})
        if MODE == "no_read":
            log("initialize answered; never reading stdin again")
            sleep_forever()
        if MODE == "flood_stderr":
            threading.Thread(target=flood_stderr, daemon=True).start()
    elif method == "ping":
        result(req_id, {})
    elif method == "tools/list" and MODE == "many_tools":
        total = int(os.environ.get("MANY_TOOLS", "100000"))
        pages = max(1, int(os.environ.get("MANY_TOOLS_PAGES", "1")))
        cursor = (params or {}).get("cursor") if isinstance(params, dict) else None
        page = int(cursor[1:]) if isinstance(cursor, str) and cursor[1:].isdigit() else 0
        per = -(-total // pages)
        lo, hi = page * per, min(total, (page + 1) * per)
        tools = tool_defs() if page == 0 else []
        tools += [{"name": f"t{i}", "description": f"tool number {i}",
                   "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
                  for i in range(lo, hi)]
        r = {"tools": tools}
        if page + 1 < pages:
            r["nextCursor"] = f"p{page + 1}"
        result(req_id, r)
    elif method == "tools/list":
        result(req_id, {"tools": tool_defs()})
        if MODE == "close_stdout":
            with _out_lock:
                _stdout_closed = True
                os.close(1)
            log("closed stdout")
    elif method == "tools/call":
        if MODE == "crash_mid_call":
            log("tools/call received: exiting with 3")
            os._exit(3)
        if MODE in ("wrapper_exit", "setsid_exit"):
            setsid = MODE == "setsid_exit"
            g = subprocess.Popen(["sleep", grandchild_secs()], start_new_session=setsid)
            if setsid:
                log(f"setsid grandchild {g.pid}")
            log("tools/call received: left a grandchild holding the pipes; exiting with 3"
                f" at monotonic {time.monotonic():.6f}")
            os._exit(3)
        if MODE == "wrong_types":
            send_response({"jsonrpc": "2.0", "id": req_id, "result": "not an object"})
            return
        if MODE == "string_id" and isinstance(req_id, int):
            wrong = {"content": [{"type": "text", "text": "answer to the wrong id"}]}
            send_response({"jsonrpc": "2.0", "id": str(req_id), "result": wrong})
            right = {"content": [{"type": "text", "text": "answer to the right id"}]}
            threading.Timer(0.3, send_response,
                            args=({"jsonrpc": "2.0", "id": req_id, "result": right},)).start()
            return
        if MODE == "huge_line":
            threading.Thread(target=huge_line_writer, args=(req_id,), daemon=True).start()
            return
        if MODE == "bad_large_strings":
            kind = ((params or {}).get("arguments") or {}).get("kind")
            bad = {"ctrl": b"\x01", "utf8": b"\xff\xfe"}.get(kind, b"")
            head = ('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
                    % json.dumps(req_id)).encode()
            with _out_lock:
                write_raw(head + b"a" * 200000 + bad + b"a" * 1000 + b'"}]}}\n')
            return
        if MODE == "slow_one":
            ev = threading.Event()
            with _state_lock:
                _inflight[json.dumps(req_id)] = ev
            threading.Thread(target=run_call, args=(req_id, params, ev), daemon=True).start()
            return
        run_call(req_id, params, threading.Event())
    else:
        error(req_id, -32601, f"method not found: {method}")


def flood_stderr():
    i = 0
    while True:
        i += 1
        try:
            os.write(2, b"flood line %d: lorem ipsum dolor sit amet consectetur adipiscing elit\n" % i)
        except OSError:
            return


def watchdog(seconds):
    time.sleep(seconds)
    log(f"lifetime of {seconds}s reached, exiting")
    os._exit(0)


def main():
    global MODE, GRANDCHILD_PID
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.stderr.write(__doc__)
        sys.stderr.write(f"\nunknown or missing mode; expected one of: {', '.join(MODES)}\n")
        sys.exit(2)
    MODE = sys.argv[1]
    lifetime = float(os.environ.get("HOSTILE_LIFETIME_SECS", "900"))
    threading.Thread(target=watchdog, args=(lifetime,), daemon=True).start()

    if MODE in ("ignore_sigterm", "grandchild", "slow_start"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if MODE == "grandchild":
        # Note: same process group, inherits our stdin/stdout/stderr.
        GRANDCHILD_PID = subprocess.Popen(["sleep", "1000"]).pid
        log(f"spawned grandchild {GRANDCHILD_PID}")
    if MODE == "setsid_grandchild":
        # A new session: outside our process group, holding our pipes.
        GRANDCHILD_PID = subprocess.Popen(["sleep", grandchild_secs()],
                                          start_new_session=True).pid
        log(f"setsid grandchild {GRANDCHILD_PID}")
    log(f"ready (pid {os.getpid()})")

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
            if MODE != "no_init":
                error(None, -32700, "parse error")
            continue
        if isinstance(msg, dict):
            handle(msg)

    log("stdin EOF")
    if MODE in ("ignore_sigterm", "grandchild", "close_stdout"):
        log("not exiting on EOF; waiting for SIGKILL")
        sleep_forever()
    os._exit(0)


if __name__ == "__main__":
    main()
