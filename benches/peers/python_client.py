#!/usr/bin/env python3
"""The bench_client scenarios driven by the official MCP Python SDK client
(``mcp`` 2.x: ``mcp.client.stdio.stdio_client`` + ``ClientSession``, asyncio).

    python3 benches/peers/python_client.py --server PATH [--quick] [--only cold,seq,...]
                                           [--era legacy|modern]

Prints ``@python <key> <value>`` lines with the keys of bench_client.
Iteration counts are lower than the Rust clients' (a Python call costs
~10x more); percentiles are still over hundreds of samples.

Scenarios: cold, seq, tput, start50, rss100, kill, http, http_tput
(Streamable HTTP, 1/8/64 calls in flight on one client), list10k
(``tools/list`` of 10 000 tools over stdio, and the peak RSS of a fresh
process that lists them once).

``--era modern``: the SDK's 2026-07-28 lifecycle (``Client(mode="auto")``:
``server/discover``, no ``initialize``, per-request ``_meta``; the calls go
through ``client.session``, the same ``ClientSession`` API as the legacy
path) against ``echo-server --dual-era --modern-results`` (the SDK rejects
2026-07-28 results that lack the fields that version requires), in every
scenario, printed as ``@python-modern``.
"""

import argparse
import asyncio
import contextlib
import os
import resource
import signal
import subprocess
import sys
import time

from mcp import ClientSession
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SIZES = [(128, "128"), (64 * 1024, "64k"), (1024 * 1024, "1m")]
IN_FLIGHT = [1, 8, 64]


WHO = "python"  # "python-modern" with --era modern
MODERN = "2026-07-28"
# The SDK validates 2026-07-28 results against that version's schema and
# rejects them without `resultType` (and `ttlMs`/`cacheScope` on tools/list),
# which `--dual-era` alone leaves out: see echo-server's `--modern-results`.
MODERN_SERVER_ARGS = ["--dual-era", "--modern-results"]
# Set from --era modern before anything connects: every connection then
# runs in the 2026-07-28 era against MODERN_SERVER_ARGS.
ERA_MODERN = False


def era_args(extra=()):
    """The echo server's arguments for this run's era, then `extra`."""
    return [*(MODERN_SERVER_ARGS if ERA_MODERN else []), *extra]


def report(key, value):
    print(f"@{WHO} {key} {value:.3f}", flush=True)


def pct(sorted_v, p):
    return sorted_v[min(len(sorted_v) * p // 100, len(sorted_v) - 1)]


def micros(v):
    v = sorted(v)
    return pct(v, 50) * 1e6, pct(v, 99) * 1e6


def proc_status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def children():
    out = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                out.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return out


@contextlib.asynccontextmanager
async def connect(server, args=(), list_tools=True):
    """Spawn (this run's era arguments, then `args`) -> initialize (modern:
    server/discover) -> tools/list."""
    params = StdioServerParameters(command=server, args=era_args(args))
    if ERA_MODERN:
        async with Client(params, mode="auto") as c:
            if c.protocol_version != MODERN:
                raise RuntimeError(f"negotiated {c.protocol_version}, not {MODERN}")
            if list_tools:
                await c.session.list_tools()
            yield c.session
        return
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                if list_tools:
                    await s.list_tools()
                yield s


@contextlib.asynccontextmanager
async def connect_http(url):
    """initialize (modern: server/discover) -> tools/list over Streamable HTTP."""
    if ERA_MODERN:
        async with Client(url, mode="auto") as c:
            if c.protocol_version != MODERN:
                raise RuntimeError(f"negotiated {c.protocol_version}, not {MODERN}")
            await c.session.list_tools()
            yield c.session
        return
    async with streamable_http_client(url) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            yield s


@contextlib.contextmanager
def http_server(server, extra=()):
    """`echo-server --http 127.0.0.1:0 [extra]`; yields its URL."""
    p = subprocess.Popen([server, "--http", "127.0.0.1:0", *extra], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        yield p.stdout.readline().strip().removeprefix("listening ")
    finally:
        p.kill()
        p.wait()


async def call(s, size):
    r = await s.call_tool("echo", {"size": size})
    if r.is_error:
        raise RuntimeError(r)
    return r


async def cold(server, n):
    v = []
    for _ in range(n):
        t = time.perf_counter()
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(connect(server))
        v.append(time.perf_counter() - t)
        await stack.aclose()
    return sorted(v)[len(v) // 2] * 1e3


async def seq(server, size, n):
    async with connect(server) as s:
        r = await call(s, size)
        assert len(r.content[0].text) == size
        for _ in range(n // 10 + 5):
            await call(s, size)
        v = []
        for _ in range(n):
            t = time.perf_counter()
            await call(s, size)
            v.append(time.perf_counter() - t)
        return v


async def calls_per_s(s, k, window):
    """128 B calls/s with `k` asyncio tasks calling on session `s`."""
    stop = False
    count = 0

    async def worker():
        nonlocal count
        while not stop:
            await call(s, 128)
            count += 1

    tasks = [asyncio.create_task(worker()) for _ in range(k)]
    await asyncio.sleep(0)
    t = time.perf_counter()
    c0 = count
    await asyncio.sleep(window)
    stop = True
    done = count - c0
    elapsed = time.perf_counter() - t
    await asyncio.gather(*tasks)
    return done / elapsed


async def tput(server, k, window):
    async with connect(server) as s:
        return await calls_per_s(s, k, window)


async def http_tput(url, k, window):
    async with connect_http(url) as s:
        return await calls_per_s(s, k, window)


async def list10k(server):
    """tools/list of 10 000 tools: p50 of 5 after one warm-up, in ms."""
    async with connect(server, ["--tools", "10000"], list_tools=False) as s:
        v = []
        for _ in range(6):
            t = time.perf_counter()
            r = await s.list_tools()
            v.append(time.perf_counter() - t)
            assert len(r.tools) == 10_000, len(r.tools)
        return sorted(v[1:])[2] * 1e3


async def child_list10k(server):
    """In a fresh process: connect, list the 10 000 tools once; peak RSS in MiB."""
    async with connect(server, ["--tools", "10000"], list_tools=False) as s:
        r = await s.list_tools()
        assert len(r.tools) == 10_000, len(r.tools)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def start50(server):
    # Each session is entered and left in its own task (anyio cancel scopes
    # must be exited by the task that entered them).
    ready = 0
    all_ready = asyncio.Event()
    release = asyncio.Event()
    end = 0.0

    async def one():
        nonlocal ready, end
        async with connect(server):
            ready += 1
            if ready == 50:
                end = time.perf_counter()
                all_ready.set()
            await release.wait()

    t = time.perf_counter()
    tasks = [asyncio.create_task(one()) for _ in range(50)]
    await all_ready.wait()
    release.set()
    await asyncio.gather(*tasks)
    return (end - t) * 1e3


async def rss100(server):
    threads_before = proc_status("Threads:")
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(100):
            s = await stack.enter_async_context(connect(server))
            await call(s, 128)
        hwm = proc_status("VmHWM:") / 1024
        threads = proc_status("Threads:")
    return hwm, threads, (threads - threads_before) / 100


async def kill_once(server):
    before = children()
    async with connect(server) as s:
        pid = next(iter(children() - before))
        task = asyncio.create_task(s.call_tool("echo", {"delay_ms": 10_000}))
        await asyncio.sleep(0.02)
        t = time.perf_counter()
        os.kill(pid, signal.SIGKILL)
        try:
            r = await asyncio.wait_for(task, 10)
            failed = r.is_error
        except Exception:
            failed = True
        d = time.perf_counter() - t
        assert failed, "the call must fail"
        return d


async def http(server, n):
    with http_server(server, era_args()) as url:
        async with connect_http(url) as s:
            for _ in range(n // 10 + 5):
                await call(s, 128)
            v = []
            for _ in range(n):
                t = time.perf_counter()
                await call(s, 128)
                v.append(time.perf_counter() - t)
            return v


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--era", choices=["legacy", "modern"], default="legacy")
    ap.add_argument("--child-list10k", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    global WHO, ERA_MODERN
    ERA_MODERN = a.era == "modern"
    if a.child_list10k:
        print(f"list10k {await child_list10k(a.server)}", flush=True)
        return
    if ERA_MODERN:
        WHO = "python-modern"
    only = a.only.split(",") if a.only else None
    wants = lambda k: only is None or k in only  # noqa: E731
    q = 5 if a.quick else 1
    iters = {128: 1000 // q, 64 * 1024: 300 // q, 1024 * 1024: 60 // q}
    window = 0.4 if a.quick else 1.5

    if wants("cold"):
        report("cold_ms", await cold(a.server, 5 if a.quick else 15))
    if wants("seq"):
        for size, tag in SIZES:
            p50, p99 = micros(await seq(a.server, size, iters[size]))
            report(f"seq_{tag}_p50_us", p50)
            report(f"seq_{tag}_p99_us", p99)
    if wants("tput"):
        for k in IN_FLIGHT:
            report(f"tput_{k}", await tput(a.server, k, window))
    if wants("start50"):
        report("start50_ms", await start50(a.server))
    if wants("rss100"):
        if only == ["rss100"]:
            hwm, threads, per = await rss100(a.server)
            report("rss100_mib", hwm)
            report("threads100", threads)
            report("threads_per_server", per)
        else:
            # In a fresh process, so earlier scenarios' peaks do not count.
            out = subprocess.run([sys.executable, __file__, "--server", a.server, "--only", "rss100",
                                  "--era", a.era],
                                 capture_output=True, text=True, check=True).stdout
            sys.stdout.write(out)
    if wants("kill"):
        v = [await kill_once(a.server) for _ in range(3 if a.quick else 10)]
        report("kill_ms", sorted(v)[len(v) // 2] * 1e3)
        report("kill_max_ms", max(v) * 1e3)
    if wants("http"):
        p50, p99 = micros(await http(a.server, 200 if a.quick else 1000))
        report("http_p50_us", p50)
        report("http_p99_us", p99)
    if wants("http_tput"):
        # One server for the three figures, a new client connection for each.
        with http_server(a.server, era_args()) as url:
            for k in IN_FLIGHT:
                report(f"http_tput_{k}", await http_tput(url, k, window))
    if wants("list10k"):
        report("list10k_ms", await list10k(a.server))
        # In a fresh process, so nothing before it counts in the peak.
        out = subprocess.run([sys.executable, __file__, "--server", a.server, "--child-list10k",
                              "--era", a.era],
                             capture_output=True, text=True, check=True).stdout
        line = next(l for l in out.splitlines() if l.startswith("list10k "))
        report("list10k_rss_mib", float(line.split()[1]))


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
