//! Every protocol constant, default timeout and resource bound, in one place.
//!
//! The values here are the *defaults*. Everything a user may reasonably want
//! to change is also a field of [`ClientOptions`](crate::ClientOptions), which
//! starts from these values.

use std::time::Duration;

/// The legacy MCP revision this client speaks and advertises in
/// `initialize` (the handshake era, 2025-11-25 and older).
///
/// Both transports use this one constant, so they can never drift apart.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Legacy protocol revisions a server may negotiate down to without a
/// warning being escalated to an error. A server answering with any other
/// version is still accepted (with a `warn!`), because refusing to talk is
/// worse than talking to a server that is slightly off-spec.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The modern MCP revision this client prefers: stateless, with the
/// version, capabilities and identity in every request's `_meta`, and
/// `server/discover` instead of `initialize`.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// Modern revisions this client speaks, most preferred first.
pub const MODERN_PROTOCOL_VERSIONS: &[&str] = &["2026-07-28"];

/// How long the `server/discover` probe of a stdio server may go
/// unanswered before the server is taken for a legacy one and `initialize`
/// is sent. A late answer to the probe still counts (whichever answer comes
/// first decides), so a slow modern server is not mistaken for a legacy one;
/// only a legacy server that ignores the probe costs this long.
pub const DISCOVER_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Most rounds of one modern request that the server answers with an
/// `InputRequiredResult` (multi round-trip requests): each round runs the
/// handlers and sends the request again; past this the call fails.
pub const MAX_INPUT_ROUNDS: usize = 16;

/// Most questions an [`ElicitationInbox`](crate::ElicitationInbox) holds
/// unanswered at once; one more is answered `cancel` at once instead of
/// queued, so a server that asks in a loop cannot grow the host's memory.
pub const MAX_PENDING_ELICITATIONS: usize = 64;

/// Most entries the result cache of one connection holds (`ttlMs` hints on
/// lists, reads and `server/discover`); the stalest go first.
pub const RESULT_CACHE_MAX_ENTRIES: usize = 256;

/// The largest result kept in the result cache, in bytes of JSON; larger
/// results are served fresh every time.
pub const RESULT_CACHE_MAX_BYTES: usize = 1024 * 1024;

/// How long a modern `subscriptions/listen` request may stay open before it
/// is reopened (the stream is long-lived by design; this only bounds one
/// request).
pub const LISTEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// How long connecting waits for the server to acknowledge the first
/// `subscriptions/listen` stream (notifications sent before it is open are
/// lost, so the first call must not race it); after that the stream keeps
/// being opened in the background.
pub const LISTEN_READY_WAIT: Duration = Duration::from_secs(2);

/// How often a `subscriptions/listen` stream is reopened, in a row, after
/// failing before the client gives up on it (until the next subscription
/// change).
pub const LISTEN_MAX_FAILURES: u32 = 5;

/// The longest server name accepted.
pub const MAX_SERVER_NAME_LEN: usize = 64;

/// The longest tool name given to a model (`mcp__<server>__<tool>`): what
/// model APIs accept. Longer (or otherwise invalid) names are left out of
/// the manager's tool definitions, with a warning.
pub const MAX_MODEL_TOOL_NAME_LEN: usize = 64;

/// The name this client reports as `clientInfo.name`.
pub const CLIENT_NAME: &str = "skald-mcp";

/// The version this client reports as `clientInfo.version`.
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The host environment variables a stdio server starts with (when set),
/// besides its configured `env`: what a shell, Python and node need to run
/// a program, pick a locale and a temporary directory, and nothing that
/// usually carries a secret. The official TypeScript SDK passes the first
/// six; `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ` and `TMPDIR` are added so that
/// servers keep the host's text encoding, time zone and temp directory.
/// Proxy variables are left out on purpose (they may embed credentials):
/// pass them through `env` (`"HTTPS_PROXY": "${HTTPS_PROXY}"`). The default
/// of [`ClientOptions::env_allowlist`](crate::ClientOptions::env_allowlist);
/// [`McpServerConfig::inherit_env`](crate::McpServerConfig::inherit_env)
/// passes everything instead.
pub const STDIO_ENV_ALLOWLIST: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR",
];

/// How long a server has to answer `initialize` after it was spawned.
pub const SERVER_START_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a `tools/call` (or any other request) may wait for its response.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a client-initiated `ping` may wait for its response.
pub const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// How many `tools/list` pages are followed before the client gives up on a
/// server that never clears `nextCursor`.
pub const MAX_TOOL_PAGES: usize = 50;

/// Most tools kept of one server's `tools/list` (all pages together);
/// the rest are dropped with a warning and a lifecycle line. No model API
/// takes more than a few hundred tools in a request, and each kept tool
/// costs memory for as long as the connection lives, so a server listing
/// 100 000 cannot make the host hold them all.
/// [`ClientOptions::max_tools`](crate::ClientOptions::max_tools) changes it.
pub const MAX_TOOLS: usize = 10_000;

/// Most JSON text (about, in bytes) the kept tools of one server's list may
/// amount to, all pages together; past it the list is cut as at
/// [`MAX_TOOLS`]. A kept definition is held as its text (a few times its
/// size with the parsed name, description and annotations beside it), so
/// this bounds what a list of few but huge definitions holds.
/// [`ClientOptions::max_tool_list_bytes`](crate::ClientOptions::max_tool_list_bytes)
/// changes it.
pub const MAX_TOOL_LIST_BYTES: usize = 8 * 1024 * 1024;

/// The largest JSON-RPC message accepted from a server, in bytes.
///
/// Large enough for real image and audio results (base64 inflates by 4/3);
/// a line longer than this is refused without being buffered whole.
pub const MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

/// How many outgoing messages may wait for a stdio child to read its stdin.
///
/// When the queue is full a caller waits (backpressure) up to its own call
/// timeout and then gets [`McpError::Backpressure`](crate::McpError::Backpressure);
/// nothing is dropped silently. The queue's slots are allocated (and
/// touched) when the connection is made, so the capacity is resident memory
/// of every server: 1024 cost 30 KiB each (3 MiB of a 100-server client's
/// 17 MiB); 128 leaves room for twice the calls a caller pool usually keeps
/// in flight, with no measurable change in throughput at 64 in flight.
pub const WRITE_QUEUE_CAPACITY: usize = 128;

/// The most requests that may be in flight on one connection at once.
pub const MAX_PENDING_REQUESTS: usize = 4096;

/// How long the user has to answer an elicitation before the server is told
/// `cancel`.
pub const ELICITATION_DEADLINE: Duration = Duration::from_secs(5 * 60);

/// How long a sampling handler has to produce a completion before the
/// server is answered with an error.
pub const SAMPLING_DEADLINE: Duration = Duration::from_secs(5 * 60);

/// The most server-initiated requests (elicitation, later sampling) handled
/// at once per connection; more are answered with an error instead of
/// spawning unbounded threads.
pub const MAX_CONCURRENT_HANDLERS: usize = 8;

/// How long `close()` waits for a stdio child to exit after its stdin is
/// closed, and again after `SIGTERM`, before it sends `SIGKILL`.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// Shortest interval between two `tasks/get` polls, whatever the server asks.
pub const TASK_POLL_MIN: Duration = Duration::from_millis(500);

/// Longest interval between two `tasks/get` polls, whatever the server asks.
pub const TASK_POLL_MAX: Duration = Duration::from_secs(30);

/// How long a task is polled when the server gives it no `ttl`.
pub const TASK_POLL_DEADLINE: Duration = Duration::from_secs(60 * 60);

/// Stack size of the library's small helper threads that run no code of
/// the user's and parse nothing (the one-off `skald-mcp-fds`, which grows
/// the file table: [`FD_TABLE_RESERVE`]).
pub const IO_THREAD_STACK: usize = 128 * 1024;

/// Stack size of the threads that run code the library does not control or
/// bound: the user's elicitation, sampling and roots handlers, the store
/// thread (SQLite), and the manager's start and restart threads (which
/// run OAuth and the handshake). The standard library's default.
pub const DEFAULT_THREAD_STACK: usize = 2 * 1024 * 1024;

/// Stack size of a stdio server's I/O thread (`mcp-<name>-io`), which parses
/// JSON.
/// `serde_json` limits nesting depth to 128, so this is ample.
pub const READER_THREAD_STACK: usize = 512 * 1024;

/// How long a caller whose request is the only one in flight on a stdio
/// connection reads the reply itself before leaving it to the reader thread
/// (default of [`ClientOptions::caller_read_window`](crate::ClientOptions)).
/// Replies that come within it skip a thread hand-off.
pub const CALLER_READ_WINDOW: Duration = Duration::from_millis(5);

/// How long such a caller yields the CPU between non-blocking reads before
/// it sleeps in `poll` (default of
/// [`ClientOptions::caller_spin`](crate::ClientOptions)). Replies within it
/// skip the wake-up of a sleeping thread; it costs at most this much CPU
/// time per call, given up to any other runnable thread.
pub const CALLER_SPIN: Duration = Duration::from_micros(50);

/// How long a stdio I/O thread that waits for the replies to two or more
/// requests in flight polls stdout without sleeping, yielding between
/// polls, before it sleeps in `poll` (default of
/// [`ClientOptions::io_spin`](crate::ClientOptions)). With callers waiting
/// on a busy connection, a vCPU that halts between replies makes every
/// next wake-up slow: throughput at 8 and 64 in flight medians 76k → 91k
/// and 120k → 130-140k calls/s on two cores (BENCHMARKS.md, stop 35).
pub const IO_SPIN: Duration = Duration::from_micros(30);

/// How long the stdio reader thread stays away after finding that a caller
/// read the input that woke it, unless a caller hands reading back sooner.
/// It bounds how late a message that arrives between calls is routed.
pub const READER_BACKOFF: Duration = Duration::from_millis(1);

/// Longest stderr line, and longest `notifications/message` record,
/// forwarded as one log line; the rest of a longer one is cut (with a
/// marker) so a server cannot grow a log line without bound.
pub const MAX_STDERR_LINE: usize = 16 * 1024;

/// Subschema checks an output-schema validation may always make, whatever
/// the size of the value (of the output-schema validation).
/// A schema whose `$ref`s branch exponentially fails with "too complex"
/// once the budget is spent, instead of spinning the caller's thread.
pub const SCHEMA_MIN_STEPS: usize = 100_000;

/// Further subschema checks allowed per JSON value of the validated result,
/// so a large but legitimate result is never refused for its size.
pub const SCHEMA_STEPS_PER_NODE: usize = 64;

// ---- Streamable HTTP ---------------------------------------------------------

/// How long an HTTP connection (TCP and TLS) may take to be established.
pub const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most HTTP requests (POSTs that wait for a response) in flight on one
/// connection at once; each holds a thread reading its response stream. A
/// caller beyond this waits up to its timeout and then gets
/// [`McpError::Backpressure`](crate::McpError::Backpressure).
pub const HTTP_MAX_CONCURRENT_POSTS: usize = 64;

/// How long a POST thread of a Streamable HTTP connection waits for the
/// next request before it ends (requests reuse idle threads instead of
/// starting one each).
pub const HTTP_POST_THREAD_IDLE: Duration = Duration::from_secs(30);

/// How long the GET listening stream may stay silent (no byte at all, not
/// even a keep-alive comment) before it is reopened.
pub const HTTP_LISTEN_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the `initialize` handshake waits, once the session exists, for
/// the server to answer the GET that opens the listening stream: servers
/// drop messages for that stream (an elicitation a tool sends) while it is
/// not open, so calls should not start before it is. Past this the
/// handshake completes and the stream keeps being opened in the background.
pub const HTTP_LISTEN_READY_WAIT: Duration = Duration::from_secs(2);

/// How long a fire-and-forget POST (a `notifications/cancelled` sent while a
/// call is abandoned) may take.
pub const HTTP_NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `close()` waits for the server to answer the `DELETE` that ends
/// the session, and for the listening thread to finish.
pub const HTTP_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How many bytes of an error response are read to quote in the error.
pub const HTTP_ERROR_BODY_LIMIT: usize = 4 * 1024;

/// How much longer than a request's time left a plain-HTTP socket timeout
/// may stay set (at most; 1/64 of the timeout for short ones). Setting it
/// again for every request was a system call per read and per write; a
/// blocked read may now end this much after the deadline.
pub const HTTP_SOCKET_TIMEOUT_SLACK: Duration = Duration::from_millis(50);

/// The read buffer of a plain-HTTP POST socket (`http::h1`): an answer's
/// head and small bodies are read into it in one `recv`; a larger body is
/// read straight into the caller's buffer.
pub const HTTP_READ_BUFFER: usize = 16 * 1024;

/// Most `307`/`308` redirects a plain-HTTP request follows (to the same
/// origin only; see `http::h1`).
pub const HTTP_MAX_REDIRECTS: u32 = 5;

/// Stack size of the HTTP threads (POST workers, the GET listener). They
/// parse JSON and may run a TLS handshake.
pub const HTTP_THREAD_STACK: usize = 1024 * 1024;

/// Most process-wide threads that started stdio servers
/// (`skald-mcp-spawner`). No longer used: each server's child is started
/// by its own I/O thread, which lives as long as the connection (so the
/// kernel's parent-death signal stays armed) and needs no pool.
#[deprecated(note = "stdio children are started by their own I/O thread; there is no spawner pool")]
pub const SPAWNER_THREADS: usize = 32;

/// Shortest string value (bytes, without escapes) that a received frame has
/// taken out before it is parsed and put back after (see
/// `large_strings`): such strings are checked with vector instructions
/// rather than eight bytes at a time (1 MiB of tool text: 145 → 90 µs).
/// Frames shorter than this are parsed directly.
pub const LARGE_STRING_MIN: usize = 64 * 1024;

/// Descriptor slots the process's file table is grown to, once, by a
/// short-lived thread (`skald-mcp-fds`) that the first stdio start begins
/// once its child runs (Linux; capped by `RLIMIT_NOFILE`).
/// A process whose threads share one file table waits for an RCU grace
/// period each time the kernel doubles it (64 → 128 → 256 → …), and every
/// thread that needs a descriptor past the old size waits with it: fifty
/// servers started at once (six to eight descriptors each) crossed three
/// doublings, each a stall of 10-20 ms on a busy two-core machine. One
/// growth, on a thread of its own, pays one grace period instead, off
/// every server's path. The table takes 8 bytes a slot.
pub const FD_TABLE_RESERVE: usize = 1024;

/// The capacity asked for a stdio server's stdout pipe (Linux's default is
/// 64 KiB): a 1 MiB reply then needs a few reads of the reader thread, not
/// one wake-up per 64 KiB. The kernel counts it against the user's pipe
/// quota (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default), so it
/// stays well below the 1 MiB maximum: 100 servers take 25 MiB of it.
pub const STDIO_PIPE_CAPACITY: usize = 256 * 1024;

/// The initial read buffer of a stdio server's stdout. Lines are cut out
/// of it in place, and it grows while a line does not fit (a read then asks
/// for all the room there is, so a large reply takes a few reads of what
/// the pipe holds); it is given back to this size once the lines after a
/// large one use less than a quarter of it. Pages of it are resident only
/// once read into.
pub const STDOUT_READ_BUFFER: usize = 64 * 1024;

/// How long an HTTP agent keeps the addresses a host name resolved to
/// (IP literals are not looked up at all): ureq resolves before every
/// request, pooled connection or not, and its resolver starts a thread per
/// lookup.
pub const HTTP_RESOLVE_CACHE_TTL: Duration = Duration::from_secs(30);

/// How many host names one HTTP agent keeps resolved (an agent serves one
/// server, so one is the usual count; redirects and OAuth endpoints add a
/// few). Past it the cache starts over.
pub const HTTP_RESOLVE_CACHE_ENTRIES: usize = 16;

/// How long an HTTP+SSE server (2024-11-05) may take to name its endpoint
/// (the first event of its stream) before the connection fails.
pub const SSE_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a request that is safe to repeat (`initialize`, `ping`,
/// and the list, read and get methods; never `tools/call`) is sent again
/// after a `429 Too Many Requests` or `503 Service Unavailable`. Each wait
/// honours the server's `Retry-After` and must end before the call's
/// deadline; otherwise the call fails with the status at once.
pub const HTTP_MAX_RETRIES: u32 = 3;

/// The wait before retrying after a `429`/`503` without `Retry-After`
/// (doubled for each further retry).
pub const HTTP_RETRY_DEFAULT: Duration = Duration::from_millis(500);

/// The longest `Retry-After` that is waited for; a longer one fails the call
/// with the status (and the delay) instead.
pub const HTTP_RETRY_MAX_WAIT: Duration = Duration::from_secs(30);

/// Delay before an event stream is resumed when the server did not set one
/// with the SSE `retry` field.
pub const SSE_DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// Shortest delay between two attempts to resume an event stream, whatever
/// the server's `retry` field says (so a `retry: 0` cannot spin).
pub const SSE_MIN_RETRY: Duration = Duration::from_millis(50);

/// Longest delay between two attempts to resume an event stream, whatever
/// the server's `retry` field says and however often attempts failed (the
/// delay doubles with each consecutive failure up to this bound).
pub const SSE_MAX_RETRY: Duration = Duration::from_secs(30);

/// How many consecutive attempts to resume an event stream may fail before
/// the client gives up: the waiting call fails, or the GET listener stops
/// until the next session.
pub const SSE_MAX_RECONNECTS: u32 = 5;

/// The name of the store thread (visible in `top -H`, debuggers and panics).
pub const STORE_THREAD_NAME: &str = "skald-mcp-store";

/// The most events and log lines the store writes in one transaction (one
/// batch). A burst is split into batches of this size; the default of
/// [`StoreConfig::batch_max`](crate::StoreConfig::batch_max).
pub const STORE_BATCH_MAX: usize = 4096;

/// The longest a fire-and-forget event or log line waits in the store thread
/// before its batch is committed (log files flushed) when events only
/// trickle in. Events inserted with a blocking call are committed as soon as
/// the queues are momentarily empty, without this wait. The default of
/// [`StoreConfig::flush_interval`](crate::StoreConfig::flush_interval).
pub const STORE_FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// Capacity of the store's event channel (the one
/// [`StoreHandle::events_sender`](crate::StoreHandle::events_sender) returns).
/// When it is full a sender blocks until the store catches up
/// (backpressure); nothing is dropped.
pub const STORE_EVENT_QUEUE_CAPACITY: usize = 16 * 1024;

/// Capacity of the store's log-line channel (the one
/// [`StoreHandle::log_sender`](crate::StoreHandle::log_sender) returns).
/// When it is full a sender blocks (backpressure); nothing is dropped.
pub const STORE_LOG_QUEUE_CAPACITY: usize = 16 * 1024;

/// How long an SQLite statement waits for a lock held by another connection
/// (e.g. an `sqlite3` shell on the same file) before it fails.
pub const STORE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many passes the store makes over its queues at shutdown to drain what
/// was queued; each pass takes at most what was queued when it began, so a
/// producer that never stops cannot keep the store from closing.
pub const STORE_SHUTDOWN_DRAIN_PASSES: usize = 16;

/// The most *pending* events (not yet marked processed) the store keeps for
/// one server. Past it, that server's newest events are refused (never an
/// older one dropped): counted in
/// [`StoreStats::events_refused`](crate::StoreStats::events_refused), with a
/// lifecycle line in the server's log and a `log::warn!`. Pending events are
/// the host's unfinished work, so they are never deleted. Default of
/// [`EventRetention::pending_per_server`](crate::store::EventRetention).
pub const STORE_MAX_PENDING_EVENTS_PER_SERVER: u64 = 10_000;

/// The most bytes (method plus `params` JSON) of pending events kept for one
/// server; past it as [`STORE_MAX_PENDING_EVENTS_PER_SERVER`]. A single event
/// larger than this is always refused.
pub const STORE_MAX_PENDING_EVENT_BYTES_PER_SERVER: u64 = 16 * 1024 * 1024;

/// The most pending events kept for all servers together, so that many
/// servers each under their own cap still cannot fill the disk.
pub const STORE_MAX_PENDING_EVENTS: u64 = 100_000;

/// The most bytes of pending events kept for all servers together.
pub const STORE_MAX_PENDING_EVENT_BYTES: u64 = 64 * 1024 * 1024;

/// The most *processed* events kept for one server (history: they are
/// never read again by the store itself). Past it, the oldest processed
/// events of that server are deleted, in the transaction that marked the
/// newer ones processed.
pub const STORE_MAX_PROCESSED_EVENTS_PER_SERVER: u64 = 10_000;

/// The most bytes of processed events kept for one server.
pub const STORE_MAX_PROCESSED_EVENT_BYTES_PER_SERVER: u64 = 16 * 1024 * 1024;

/// The most processed events kept for all servers together.
pub const STORE_MAX_PROCESSED_EVENTS: u64 = 100_000;

/// The most bytes of processed events kept for all servers together.
pub const STORE_MAX_PROCESSED_EVENT_BYTES: u64 = 64 * 1024 * 1024;

/// Pruning processed events goes below the cap it enforces by this fraction
/// of the cap (1/16), so that a host marking events one at a time at the cap
/// pays for a prune (a scan of the oldest processed rows) once every
/// cap/16 events instead of on every mark.
pub const STORE_PRUNE_HEADROOM_DIVISOR: u64 = 16;

/// Size at which a per-server log file is rotated: a line that would make
/// `<name>.log` pass this many bytes first moves it to `<name>.log.1` (the
/// one backup kept). The default of
/// [`StoreConfig::log_max_bytes`](crate::StoreConfig::log_max_bytes).
pub const LOG_ROTATE_BYTES: u64 = 5 * 1024 * 1024;

/// Width of the padded tag column of a log file line: the longest tags,
/// `[emergency]` and `[lifecycle]`, plus one space, so that the text column
/// aligns (`2026-07-03T12:34:56.789Z [stderr]     INFO: server ready`).
pub const LOG_TAG_WIDTH: usize = "[emergency]".len() + 1;

/// The longest sanitized server name used as a log file stem. A longer name
/// is cut and suffixed with a hash of the full name, so that two long names
/// sharing a prefix still get different files.
pub const MAX_LOG_NAME_LEN: usize = 128;

/// The most per-server log files the store keeps open at once; when a new
/// one is needed beyond this, all are flushed and closed.
pub const MAX_OPEN_LOG_FILES: usize = 64;

// ---- Manager -------------------------------------------------------------------

/// The wait before the first restart of a crashed stdio server (doubled
/// after each failed attempt). Restarting is off unless enabled.
pub const RESTART_INITIAL_BACKOFF: Duration = Duration::from_millis(500);

/// The longest wait between two restart attempts.
pub const RESTART_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Restart attempts before the manager gives up on a crashed server.
pub const RESTART_MAX_ATTEMPTS: u32 = 10;

// ---- OAuth -------------------------------------------------------------------

/// The overall timeout of one OAuth HTTP request (discovery, registration,
/// token endpoint).
pub const AUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest OAuth metadata or token response accepted, in bytes.
pub const AUTH_MAX_BODY: usize = 1024 * 1024;

/// How many `403 insufficient_scope` step-ups one connection attempts
/// before the request fails.
pub const AUTH_MAX_STEP_UPS: u32 = 2;

/// An access token this close to expiry is refreshed before use.
pub const AUTH_TOKEN_EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// How many times one request is retried after an authorization
/// challenge (a `401` that keeps coming back stops here).
pub const AUTH_MAX_ATTEMPTS: u32 = 3;

/// How long the loopback authorizer waits for the browser's redirect.
pub const AUTH_LOOPBACK_TIMEOUT: Duration = Duration::from_secs(5 * 60);
