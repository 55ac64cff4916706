#!/usr/bin/env node
// The bench_client scenarios driven by the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk 1.x: `Client` + `StdioClientTransport`, and
// `StreamableHTTPClientTransport` for HTTP), on Node's event loop.
//
//     npm ci --prefix benches/peers/ts
//     node benches/peers/ts/ts_client.mjs --server PATH [--quick] [--only cold,seq,...]
//
// Prints `@ts <key> <value>` lines with the keys of examples/bench_client.rs.
// Iteration counts are those of benches/peers/python_client.py (lower than
// the Rust clients'); percentiles are still over hundreds of samples.
// "In flight" means concurrent promises on one connection: Node has one
// JavaScript thread, so there are no caller threads to start.
//
// Scenarios: cold, seq, tput, start50, rss100, kill, http, http_tput
// (Streamable HTTP, 1/8/64 calls in flight on one client), list10k
// (`tools/list` of 10 000 tools over stdio, and the peak RSS of a fresh node
// process that lists them once).
//
// `--era modern` measures nothing (a note on stderr, exit 0): SDK 1.32.2 has
// no 2026-07-28 client (its `Client` always sends `initialize`, knows
// protocol versions up to 2025-11-25 and never sends `server/discover`); see
// BENCHMARKS.md. `--era legacy` is the default.

import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// Every POST of StreamableHTTPClientTransport passes the transport's one
// AbortSignal to fetch; undici (Node 20) adds an abort listener to it per
// request and drops it only when the request is garbage-collected, and warns
// (MaxListenersExceededWarning, one stderr line per request) past 1500 live
// ones, which a throughput window of HTTP calls reaches. The listeners are
// the SDK's real cost and stay; the warnings are counted, not printed, so
// that no stderr writes fall in the measured window.
let listenerWarnings = 0;
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name === 'MaxListenersExceededWarning') listenerWarnings++;
  else console.error(w);
});
process.on('exit', () => {
  if (listenerWarnings > 0) {
    console.error(`ts_client: ${listenerWarnings} MaxListenersExceededWarning(s) (abort listeners on the HTTP transport's signal) not printed`);
  }
});

const SIZES = [[128, '128'], [64 * 1024, '64k'], [1024 * 1024, '1m']];
const IN_FLIGHT = [1, 8, 64];

const now = () => performance.now(); // milliseconds, sub-µs resolution
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function report(key, value) {
  process.stdout.write(`@ts ${key} ${value.toFixed(3)}\n`);
}

function pct(sorted, p) {
  return sorted[Math.min(Math.floor((sorted.length * p) / 100), sorted.length - 1)];
}

/** Durations in ms → [p50, p99] in µs. */
function micros(v) {
  const s = [...v].sort((a, b) => a - b);
  return [pct(s, 50) * 1e3, pct(s, 99) * 1e3];
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function procStatus(field) {
  for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
    if (line.startsWith(field)) return Number(line.split(/\s+/)[1]);
  }
  return 0;
}

/** Spawn → initialize (inside `connect`) → tools/list (unless `list` is false). */
async function connect(server, args = [], list = true) {
  const transport = new StdioClientTransport({ command: server, args, stderr: 'ignore' });
  const client = new Client({ name: 'ts-bench', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);
  if (list) await client.listTools();
  return { client, transport };
}

/** `echo-server --http 127.0.0.1:0`; resolves to the server and its URL. */
async function startHttpServer(server) {
  const p = spawn(server, ['--http', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: p.stdout });
  try {
    const [first] = await Promise.race([
      new Promise((resolve) => lines.once('line', (l) => resolve([l]))),
      new Promise((_, reject) => p.once('exit', () => reject(new Error('HTTP echo server exited')))),
    ]);
    return { p, url: first.trim().replace(/^listening /, '') };
  } catch (e) {
    p.kill('SIGKILL');
    throw e;
  } finally {
    lines.close();
  }
}

/** initialize → tools/list over Streamable HTTP. */
async function connectHttp(url) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'ts-bench', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools();
  return { client, transport };
}

async function call(client, size) {
  const r = await client.callTool({ name: 'echo', arguments: { size } });
  if (r.isError) throw new Error(`tool error: ${JSON.stringify(r)}`);
  return r;
}

async function cold(server, n) {
  const v = [];
  for (let i = 0; i < n; i++) {
    const t = now();
    const { client } = await connect(server);
    v.push(now() - t);
    await client.close();
  }
  return median(v);
}

async function seq(server, size, n) {
  const { client } = await connect(server);
  try {
    const r = await call(client, size);
    if (r.content[0].text.length !== size) throw new Error(`expected ${size} bytes of text`);
    for (let i = 0; i < Math.floor(n / 10) + 5; i++) await call(client, size);
    const v = [];
    for (let i = 0; i < n; i++) {
      const t = now();
      await call(client, size);
      v.push(now() - t);
    }
    return v;
  } finally {
    await client.close();
  }
}

/** Calls per second on `client` with `k` calls kept in flight by `k` promise loops. */
async function callsPerS(client, k, windowMs) {
  let stop = false;
  let count = 0;
  const worker = async () => {
    while (!stop) {
      await call(client, 128);
      count++;
    }
  };
  const workers = Array.from({ length: k }, worker);
  const t = now();
  const c0 = count;
  await sleep(windowMs);
  stop = true;
  const done = count - c0;
  const elapsed = now() - t;
  await Promise.all(workers);
  return done / (elapsed / 1e3);
}

async function tput(server, k, windowMs) {
  const { client } = await connect(server);
  try {
    return await callsPerS(client, k, windowMs);
  } finally {
    await client.close();
  }
}

/** The same over Streamable HTTP: `k` promise loops on one client. */
async function httpTput(url, k, windowMs) {
  const { client, transport } = await connectHttp(url);
  try {
    return await callsPerS(client, k, windowMs);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

/** tools/list of 10 000 tools over stdio: p50 of 5 after one warm-up, in ms. */
async function list10k(server) {
  const { client } = await connect(server, ['--tools', '10000'], false);
  try {
    const v = [];
    for (let i = 0; i < 6; i++) {
      const t = now();
      const r = await client.listTools();
      v.push(now() - t);
      if (r.tools.length !== 10_000) throw new Error(`listed ${r.tools.length} tools`);
    }
    return median(v.slice(1));
  } finally {
    await client.close();
  }
}

/** In a fresh process: connect, list the 10 000 tools once; peak RSS in MiB. */
async function childList10k(server) {
  const { client } = await connect(server, ['--tools', '10000'], false);
  const r = await client.listTools();
  if (r.tools.length !== 10_000) throw new Error(`listed ${r.tools.length} tools`);
  const mib = process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
  await client.close();
  return mib;
}

async function start50(server) {
  const t = now();
  const conns = await Promise.all(Array.from({ length: 50 }, () => connect(server)));
  const d = now() - t;
  await Promise.all(conns.map(({ client }) => client.close()));
  return d;
}

/** Runs in a fresh process: 100 connected servers, one call each. */
async function rss100(server) {
  const threadsBefore = procStatus('Threads:');
  const conns = [];
  for (let i = 0; i < 100; i++) {
    const c = await connect(server);
    await call(c.client, 128);
    conns.push(c);
  }
  const hwm = procStatus('VmHWM:') / 1024;
  const threads = procStatus('Threads:');
  await Promise.all(conns.map(({ client }) => client.close()));
  return [hwm, threads, (threads - threadsBefore) / 100];
}

/** SIGKILL of the server → the pending call's promise rejected (or isError). */
async function killOnce(server) {
  const { client, transport } = await connect(server);
  const pid = transport.pid;
  let at = 0;
  let failed = false;
  const pending = client.callTool({ name: 'echo', arguments: { delay_ms: 10_000 } }).then(
    (r) => { at = now(); failed = !!r.isError; },
    () => { at = now(); failed = true; },
  );
  await sleep(20);
  const t = now();
  process.kill(pid, 'SIGKILL');
  await pending;
  if (!failed) throw new Error('the call must fail');
  await client.close();
  return at - t;
}

async function http(server, n) {
  const { p, url } = await startHttpServer(server);
  try {
    const { client, transport } = await connectHttp(url);
    for (let i = 0; i < Math.floor(n / 10) + 5; i++) await call(client, 128);
    const v = [];
    for (let i = 0; i < n; i++) {
      const t = now();
      await call(client, 128);
      v.push(now() - t);
    }
    await transport.terminateSession().catch(() => {});
    await client.close();
    return v;
  } finally {
    p.kill('SIGKILL');
  }
}

function parseArgs(argv) {
  const a = { server: '', quick: false, only: null, childList10k: false, era: 'legacy' };
  for (let i = 0; i < argv.length; i++) {
    switch (argv[i]) {
      case '--server': a.server = argv[++i]; break;
      case '--quick': a.quick = true; break;
      case '--only': a.only = argv[++i].split(','); break;
      case '--child-list10k': a.childList10k = true; break;
      case '--era':
        a.era = argv[++i];
        if (a.era !== 'legacy' && a.era !== 'modern') throw new Error(`--era legacy|modern, not ${JSON.stringify(a.era)}`);
        break;
      default: throw new Error(`unknown argument ${JSON.stringify(argv[i])}`);
    }
  }
  if (!a.server) throw new Error('--server PATH is required');
  return a;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (a.era === 'modern') {
    console.error('ts_client: --era modern: @modelcontextprotocol/sdk 1.32.2 has no 2026-07-28 client; nothing measured');
    return;
  }
  if (a.childList10k) {
    process.stdout.write(`list10k ${await childList10k(a.server)}\n`);
    return;
  }
  const wants = (k) => a.only === null || a.only.includes(k);
  const q = a.quick ? 5 : 1;
  const iters = { 128: Math.floor(1000 / q), [64 * 1024]: Math.floor(300 / q), [1024 * 1024]: Math.floor(60 / q) };
  const windowMs = a.quick ? 400 : 1500;

  if (wants('cold')) report('cold_ms', await cold(a.server, a.quick ? 5 : 15));
  if (wants('seq')) {
    for (const [size, tag] of SIZES) {
      const [p50, p99] = micros(await seq(a.server, size, iters[size]));
      report(`seq_${tag}_p50_us`, p50);
      report(`seq_${tag}_p99_us`, p99);
    }
  }
  if (wants('tput')) {
    for (const k of IN_FLIGHT) report(`tput_${k}`, await tput(a.server, k, windowMs));
  }
  if (wants('start50')) report('start50_ms', await start50(a.server));
  if (wants('rss100')) {
    if (a.only !== null && a.only.length === 1 && a.only[0] === 'rss100') {
      const [hwm, threads, per] = await rss100(a.server);
      report('rss100_mib', hwm);
      report('threads100', threads);
      report('threads_per_server', per);
    } else {
      // In a fresh process, so earlier scenarios' peaks do not count.
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--server', a.server, '--only', 'rss100'],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      process.stdout.write(out);
    }
  }
  if (wants('kill')) {
    const v = [];
    for (let i = 0; i < (a.quick ? 3 : 10); i++) v.push(await killOnce(a.server));
    report('kill_ms', median(v));
    report('kill_max_ms', Math.max(...v));
  }
  if (wants('http')) {
    const [p50, p99] = micros(await http(a.server, a.quick ? 200 : 1000));
    report('http_p50_us', p50);
    report('http_p99_us', p99);
  }
  if (wants('http_tput')) {
    // One server for the three figures, a new client connection for each.
    const { p, url } = await startHttpServer(a.server);
    try {
      for (const k of IN_FLIGHT) report(`http_tput_${k}`, await httpTput(url, k, windowMs));
    } finally {
      p.kill('SIGKILL');
    }
  }
  if (wants('list10k')) {
    report('list10k_ms', await list10k(a.server));
    // In a fresh process, so nothing before it counts in the peak.
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--server', a.server, '--child-list10k'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const line = out.split('\n').find((l) => l.startsWith('list10k '));
    if (!line) throw new Error(`list10k child printed: ${out}`);
    report('list10k_rss_mib', Number(line.split(' ')[1]));
  }
}

main().then(
  // Exit at once: no keep-alive socket or timer left over may hold the process.
  () => process.exit(0),
  (e) => { console.error(e); process.exit(1); },
);
