//! The store thread: owns the SQLite connection and the log files, batches
//! events and log lines, executes commands.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{select, Receiver};
use rusqlite::{Connection, TransactionBehavior};

use crate::error::{McpError, Result};
use crate::limits::STORE_SHUTDOWN_DRAIN_PASSES;
use crate::log::McpLogLine;
use crate::notification::McpNotification;

use super::commands::{Command, Reply};
use super::db::{self, sql_err, PendingEvent};
use super::logfile::{log_dir, LogFiles};
use super::migrate;
use super::retention::Retention;
use super::{EventId, StoreConfig, StoreStats};

/// Counters the store thread updates and any handle reads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    transactions: AtomicU64,
    events_written: AtomicU64,
    events_failed: AtomicU64,
    log_lines_written: AtomicU64,
    log_lines_failed: AtomicU64,
    log_rotations: AtomicU64,
    largest_event_batch: AtomicU64,
    events_refused: AtomicU64,
    events_pruned: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> StoreStats {
        let g = |a: &AtomicU64| a.load(Ordering::Acquire);
        StoreStats {
            transactions: g(&self.transactions),
            events_written: g(&self.events_written),
            events_failed: g(&self.events_failed),
            log_lines_written: g(&self.log_lines_written),
            log_lines_failed: g(&self.log_lines_failed),
            log_rotations: g(&self.log_rotations),
            largest_event_batch: g(&self.largest_event_batch),
            events_refused: g(&self.events_refused),
            events_pruned: g(&self.events_pruned),
        }
    }

    fn add(a: &AtomicU64, n: u64) {
        a.fetch_add(n, Ordering::AcqRel);
    }
}

/// The receiving ends the store thread reads.
pub(crate) struct Inbox {
    pub cmd: Receiver<Command>,
    pub events: Receiver<McpNotification>,
    pub logs: Receiver<McpLogLine>,
}

enum Item {
    Cmd(Command),
    Event(McpNotification),
    Log(McpLogLine),
}

enum Input {
    Item(Item),
    /// The oldest item of the batch has waited the flush interval.
    Timeout,
    /// Every handle is gone: shut down.
    Disconnected,
}

/// What has been received but not yet committed.
#[derive(Default)]
struct Batch {
    events: Vec<PendingEvent>,
    /// Parallel to `events`: who waits for the id, if anyone.
    replies: Vec<Option<Reply<EventId>>>,
    waiters: usize,
    logs: Vec<McpLogLine>,
    /// When the oldest uncommitted item arrived.
    started: Option<Instant>,
}

impl Batch {
    fn len(&self) -> usize {
        self.events.len() + self.logs.len()
    }

    fn touch(&mut self) {
        if self.started.is_none() {
            self.started = Some(Instant::now());
        }
    }

    fn push_event(
        &mut self,
        event: McpNotification,
        at: SystemTime,
        reply: Option<Reply<EventId>>,
    ) {
        self.touch();
        if reply.is_some() {
            self.waiters += 1;
        }
        self.events.push(PendingEvent {
            event,
            received_at: at,
        });
        self.replies.push(reply);
    }

    fn push_log(&mut self, line: McpLogLine) {
        self.touch();
        self.logs.push(line);
    }
}

/// Creates the database file 0600 when it does not exist yet; warns when an
/// existing one (or its directory) can be read by others.
fn private_file(path: &Path, hint: &str) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(McpError::Io {
                context: format!("creating the database {}{hint}", path.display()),
                source,
            })
        }
    }
    let loose = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o077 != 0)
            .unwrap_or(false)
    };
    if loose(path) {
        ::log::warn!(
            "store: {} can be read by other users (it holds api keys and tokens); chmod 600 it",
            path.display()
        );
    }
    Ok(())
}

/// The error a blocking [`insert_event`](super::StoreHandle::insert_event)
/// gets for an event refused at a pending cap: a bound was hit, as for a
/// full write queue.
fn refused(event: &McpNotification) -> McpError {
    McpError::Backpressure {
        server: event.server.clone(),
        method: event.method.clone(),
        message: "the store's cap on pending events is reached; the event is refused \
                  (mark pending events processed, or raise StoreConfig::event_retention)"
            .into(),
    }
}

fn store_err(context: &str, e: &McpError) -> McpError {
    McpError::Store {
        context: context.into(),
        message: e.to_string(),
        source: None,
    }
}

fn keep_first(acc: &mut Result<()>, r: Result<()>) {
    if acc.is_ok() {
        *acc = r;
    }
}

pub(crate) struct Worker {
    conn: Connection,
    logs: LogFiles,
    inbox: Inbox,
    counters: Arc<Counters>,
    batch_max: usize,
    flush_interval: Duration,
    batch: Batch,
    retention: Retention,
}

impl Worker {
    /// Opens (creating if needed) and migrates the database and the log
    /// directory. Runs on the store thread: no other thread opens the database.
    pub(crate) fn open(
        config: &StoreConfig,
        inbox: Inbox,
        counters: Arc<Counters>,
    ) -> Result<Worker> {
        let path: &Path = &config.db_path;
        let ctx_open = format!("opening database {}", path.display());
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // The database holds api keys, env values, OAuth tokens and client
        // secrets: a directory this creates is the user's alone (0700), and
        // so is a new database file (0600; SQLite gives its -wal and -shm
        // files the database's mode). An existing one that others can read
        // is reported, not changed.
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|source| McpError::Io {
                    context: format!("creating the database directory {}", parent.display()),
                    source,
                })?;
        }
        // SQLite reports a read-only directory as "unable to open database
        // file"; say what is wrong.
        let hint = if dir_is_writable(parent) {
            String::new()
        } else {
            format!(
                " (the directory {} is read-only: SQLite creates the database and its -wal and -shm files there)",
                parent.display()
            )
        };
        private_file(path, &hint)?;
        let store_err = |e: rusqlite::Error| McpError::Store {
            context: ctx_open.clone(),
            message: format!("{e}{hint}"),
            source: Some(Box::new(e)),
        };
        let mut conn = Connection::open(path).map_err(store_err)?;
        // SQLite silently opens a write-protected file read-only; every
        // write would then fail one by one. Refuse it here, by name.
        if conn
            .is_readonly(rusqlite::DatabaseName::Main)
            .map_err(store_err)?
        {
            return Err(McpError::Store {
                context: ctx_open.clone(),
                message: "the database file is read-only (check its permissions)".into(),
                source: None,
            });
        }
        conn.busy_timeout(config.busy_timeout).map_err(store_err)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(store_err)?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            ::log::warn!(
                "store: {} is in journal mode {mode}, not WAL",
                path.display()
            );
        }
        conn.pragma_update(None, "synchronous", config.synchronous.pragma_value())
            .map_err(store_err)?;
        migrate::migrate(&mut conn)?;
        let logs = LogFiles::new(log_dir(&config.log_root), config.log_max_bytes.max(1))?;
        // What the database holds now (one scan), and the processed events
        // past the caps (a database from before caps, or caps lowered since)
        // retired at once.
        let mut retention = Retention::new(config.event_retention);
        let ctx = "applying event retention";
        retention.reload(&conn).map_err(sql_err(ctx))?;
        let pruned = Self::write_on(&mut conn, &counters, ctx, |c| {
            retention.prune(c).map_err(sql_err(ctx))
        })?;
        if pruned > 0 {
            Counters::add(&counters.events_pruned, pruned);
            ::log::info!("store: {pruned} processed events past the retention caps deleted");
        }
        Ok(Worker {
            conn,
            logs,
            inbox,
            counters,
            batch_max: config.batch_max.max(1),
            flush_interval: config.flush_interval,
            batch: Batch::default(),
            retention,
        })
    }

    /// The thread's main loop; returns after shutdown (or when every handle
    /// is gone), having drained, committed and closed everything.
    pub(crate) fn run(mut self) {
        let mut stop: Vec<Reply<()>> = Vec::new();
        loop {
            match self.wait() {
                Input::Timeout => {
                    let _ = self.commit();
                    continue;
                }
                Input::Disconnected => break,
                Input::Item(item) => self.accept(item, &mut stop),
            }
            // Keep taking whatever is already queued, so that a burst lands
            // in few transactions.
            while stop.is_empty() && self.batch.len() < self.batch_max && !self.deadline_passed() {
                match self.try_next() {
                    Some(item) => self.accept(item, &mut stop),
                    None => break,
                }
            }
            if !stop.is_empty() {
                break;
            }
            // Someone waits for an id: commit now rather than linger.
            if self.batch.waiters > 0
                || self.batch.len() >= self.batch_max
                || self.deadline_passed()
            {
                let _ = self.commit();
            }
        }
        self.finish(stop);
    }

    fn deadline_passed(&self) -> bool {
        self.batch
            .started
            .is_some_and(|t| t.elapsed() >= self.flush_interval)
    }

    fn wait(&self) -> Input {
        let inbox = &self.inbox;
        let timeout = self
            .batch
            .started
            .map(|t| (t + self.flush_interval).saturating_duration_since(Instant::now()));
        let received = match timeout {
            None => select! {
                recv(inbox.cmd) -> m => m.map(Item::Cmd).ok(),
                recv(inbox.events) -> m => m.map(Item::Event).ok(),
                recv(inbox.logs) -> m => m.map(Item::Log).ok(),
            },
            Some(t) => select! {
                recv(inbox.cmd) -> m => m.map(Item::Cmd).ok(),
                recv(inbox.events) -> m => m.map(Item::Event).ok(),
                recv(inbox.logs) -> m => m.map(Item::Log).ok(),
                default(t) => return Input::Timeout,
            },
        };
        // The event and log senders live in the handles' shared state, so
        // any of the channels disconnecting means every handle is gone.
        received.map_or(Input::Disconnected, Input::Item)
    }

    fn try_next(&self) -> Option<Item> {
        if let Ok(c) = self.inbox.cmd.try_recv() {
            return Some(Item::Cmd(c));
        }
        if let Ok(e) = self.inbox.events.try_recv() {
            return Some(Item::Event(e));
        }
        self.inbox.logs.try_recv().ok().map(Item::Log)
    }

    fn accept(&mut self, item: Item, stop: &mut Vec<Reply<()>>) {
        match item {
            Item::Event(e) => self.batch.push_event(e, SystemTime::now(), None),
            Item::Log(l) => self.batch.push_log(l),
            Item::Cmd(Command::InsertEvent {
                event,
                received_at,
                reply,
            }) => {
                // Events already waiting in the channel were sent before
                // this command: they go first, so a sender mixing the two
                // paths keeps its order.
                let _ = self.take_queued_events(); // failures are logged and counted
                self.batch.push_event(event, received_at, Some(reply));
            }
            Item::Cmd(Command::Shutdown { reply }) => stop.push(reply),
            Item::Cmd(cmd) => {
                let flushed = self.barrier();
                self.execute(cmd, flushed);
            }
        }
        if self.batch.len() >= self.batch_max {
            let _ = self.commit();
        }
    }

    /// Commits everything received so far plus every event and log line that
    /// was already queued when the command arrived, so a command sees the
    /// effect of every send that completed before it was sent.
    fn barrier(&mut self) -> Result<()> {
        let mut result = self.take_queued_events();
        let n = self.inbox.logs.len();
        for _ in 0..n {
            let Ok(l) = self.inbox.logs.try_recv() else {
                break;
            };
            self.batch.push_log(l);
            if self.batch.len() >= self.batch_max {
                keep_first(&mut result, self.commit());
            }
        }
        keep_first(&mut result, self.commit());
        result
    }

    /// Moves the events queued in the event channel right now into the
    /// batch, committing whenever it is full; returns the first commit error.
    fn take_queued_events(&mut self) -> Result<()> {
        let mut result = Ok(());
        for _ in 0..self.inbox.events.len() {
            let Ok(e) = self.inbox.events.try_recv() else {
                break;
            };
            self.batch.push_event(e, SystemTime::now(), None);
            if self.batch.len() >= self.batch_max {
                keep_first(&mut result, self.commit());
            }
        }
        result
    }

    /// Runs one write transaction, counting it when it commits.
    fn write<T>(
        &mut self,
        ctx: &'static str,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        Self::write_on(&mut self.conn, &self.counters, ctx, f)
    }

    /// [`Worker::write`] on borrowed parts, for closures that need another
    /// field of the worker (the retention view) at the same time.
    fn write_on<T>(
        conn: &mut Connection,
        counters: &Counters,
        ctx: &'static str,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err(ctx))?;
        let value = f(&tx)?; // dropping `tx` on error rolls back
        tx.commit().map_err(sql_err(ctx))?;
        Counters::add(&counters.transactions, 1);
        Ok(value)
    }

    /// Marks events processed and retires the oldest processed ones past
    /// the caps, in one transaction.
    fn mark_processed(&mut self, ids: &[EventId], now: SystemTime) -> Result<usize> {
        let ctx = "marking events processed";
        let retention = &mut self.retention;
        let r = Self::write_on(&mut self.conn, &self.counters, ctx, |c| {
            let n = db::mark_processed(c, ids, now, |server, bytes| {
                retention.processed(server, bytes)
            })
            .map_err(sql_err(ctx))?;
            let pruned = retention.prune(c).map_err(sql_err(ctx))?;
            Ok((n, pruned))
        });
        match r {
            Ok((n, pruned)) => {
                Counters::add(&self.counters.events_pruned, pruned);
                Ok(n)
            }
            Err(e) => {
                // Rolled back: the in-memory view may have counted changes
                // that did not happen.
                self.resync();
                Err(e)
            }
        }
    }

    /// Reloads the retention view from the database after a failed
    /// transaction.
    fn resync(&mut self) {
        if let Err(e) = self.retention.reload(&self.conn) {
            ::log::error!(
                "store: reloading event usage failed (caps may be off until the next success): {e}"
            );
        }
    }

    fn execute(&mut self, cmd: Command, flushed: Result<()>) {
        let now = SystemTime::now();
        match cmd {
            Command::Flush { reply } => {
                let _ = reply.send(flushed);
            }
            Command::UpsertServer { config, reply } => {
                let r = self.write("saving a server", |c| db::upsert_server(c, &config, now));
                let _ = reply.send(r);
            }
            Command::GetServer { name, reply } => {
                let _ = reply.send(db::get_server(&self.conn, &name));
            }
            Command::ListServers { reply } => {
                let _ = reply.send(db::list_servers(&self.conn));
            }
            Command::DeleteServer { name, reply } => {
                let ctx = "deleting a server";
                let r = self.write(ctx, |c| db::delete_server(c, &name).map_err(sql_err(ctx)));
                let _ = reply.send(r);
            }
            Command::SetServerEra {
                name,
                era,
                protocol_version,
                reply,
            } => {
                let ctx = "recording a server's protocol era";
                let r = self.write(ctx, |c| {
                    db::set_server_era(c, &name, era.as_str(), &protocol_version)
                        .map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            Command::GetServerEra { name, reply } => {
                let ctx = "reading a server's protocol era";
                let r = db::server_era(&self.conn, &name)
                    .map(|row| row.and_then(|(e, v)| crate::era::Era::parse(&e).map(|e| (e, v))))
                    .map_err(sql_err(ctx));
                let _ = reply.send(r);
            }
            Command::SetServerWire { name, wire, reply } => {
                let ctx = "recording a server's HTTP transport";
                let r = self.write(ctx, |c| {
                    db::set_server_wire(c, &name, wire.as_str()).map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            Command::GetServerWire { name, reply } => {
                let ctx = "reading a server's HTTP transport";
                let r = db::server_wire(&self.conn, &name)
                    .map(|w| w.and_then(|w| crate::config::McpTransport::parse(&w)))
                    .map_err(sql_err(ctx));
                let _ = reply.send(r);
            }
            Command::SetEnabled {
                name,
                enabled,
                reply,
            } => {
                let ctx = "enabling or disabling a server";
                let r = self.write(ctx, |c| {
                    db::set_enabled(c, &name, enabled, now).map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            Command::PendingEvents { limit, reply } => {
                let _ = reply.send(db::pending_events(&self.conn, limit));
            }
            Command::OAuthLoad { server, reply } => {
                let _ = reply.send(db::oauth_load(&self.conn, &server));
            }
            Command::OAuthSave {
                server,
                auth,
                reply,
            } => {
                let ctx = "saving OAuth tokens";
                let now = std::time::SystemTime::now();
                let r = self.write(ctx, |c| {
                    db::oauth_save(c, &server, &auth, now).map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            Command::OAuthClear { server, reply } => {
                let ctx = "clearing OAuth tokens";
                let r = self.write(ctx, |c| db::oauth_clear(c, &server).map_err(sql_err(ctx)));
                let _ = reply.send(r);
            }
            Command::RecentEvents { limit, reply } => {
                let _ = reply.send(db::recent_events(&self.conn, limit));
            }
            Command::GetEvent { id, reply } => {
                let _ = reply.send(db::get_event(&self.conn, id));
            }
            Command::MarkProcessed { ids, reply } => {
                let _ = reply.send(self.mark_processed(&ids, now));
            }
            Command::Grant {
                scope,
                owner,
                group,
                reply,
            } => {
                let ctx = "granting a tool group";
                let r = self.write(ctx, |c| {
                    db::grant(c, scope, &owner, &group, now).map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            Command::Revoke {
                scope,
                owner,
                group,
                reply,
            } => {
                let ctx = "revoking a tool group";
                let r = self.write(ctx, |c| {
                    db::revoke(c, scope, &owner, &group).map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            Command::Grants {
                scope,
                owner,
                reply,
            } => {
                let r = db::grants(&self.conn, scope, &owner).map_err(sql_err("reading grants"));
                let _ = reply.send(r);
            }
            Command::ClearGrants {
                scope,
                owner,
                reply,
            } => {
                let ctx = "deleting grants";
                let r = self.write(ctx, |c| {
                    db::clear_grants(c, scope, &owner).map_err(sql_err(ctx))
                });
                let _ = reply.send(r);
            }
            #[cfg(test)]
            Command::Exec { sql, reply } => {
                let r = self.conn.execute_batch(&sql).map_err(sql_err("test exec"));
                let _ = reply.send(r);
            }
            // Handled by `accept`; kept here so the match stays exhaustive.
            Command::InsertEvent {
                event,
                received_at,
                reply,
            } => self.batch.push_event(event, received_at, Some(reply)),
            Command::Shutdown { reply } => {
                let _ = reply.send(Err(McpError::Store {
                    context: "shutting down".into(),
                    message: "internal error: shutdown routed as a command".into(),
                    source: None,
                }));
            }
        }
    }

    /// Commits the current batch: events in one transaction (then, and only
    /// then, their ids go to the callers waiting for them), log lines
    /// appended and the files flushed.
    ///
    /// On failure nothing is dropped silently: the error is logged with the
    /// number of events concerned, counted in `events_failed`, and sent to
    /// every waiting caller.
    fn commit(&mut self) -> Result<()> {
        self.batch.started = None;
        let mut result = Ok(());
        if !self.batch.events.is_empty() {
            let mut events = std::mem::take(&mut self.batch.events);
            let mut replies = std::mem::take(&mut self.batch.replies);
            let waiters = std::mem::take(&mut self.batch.waiters);
            let n = events.len() as u64;
            // Lifecycle lines about refusals, written with this batch's logs.
            let mut notices = Vec::new();
            let retention = &mut self.retention;
            let inserted = (|| {
                let tx = self
                    .conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)?;
                let ids = db::insert_events(&tx, events.iter(), |e, bytes| {
                    retention.admit(&e.server, &e.method, bytes, &mut notices)
                })?;
                tx.commit()?;
                Ok::<_, rusqlite::Error>(ids)
            })();
            self.batch.logs.append(&mut notices);
            match inserted {
                Ok(ids) => {
                    let written = ids.iter().filter(|id| id.is_some()).count() as u64;
                    Counters::add(&self.counters.transactions, 1);
                    Counters::add(&self.counters.events_written, written);
                    Counters::add(&self.counters.events_refused, n - written);
                    self.counters
                        .largest_event_batch
                        .fetch_max(written, Ordering::AcqRel);
                    for ((reply, id), e) in replies.drain(..).zip(ids).zip(&events) {
                        let Some(reply) = reply else { continue };
                        let _ = reply.send(id.ok_or_else(|| refused(&e.event)));
                    }
                }
                Err(e) => {
                    let err = McpError::Store {
                        context: "persisting events".into(),
                        message: e.to_string(),
                        source: None,
                    };
                    ::log::error!(
                        "store: {n} events NOT persisted ({waiters} of them with a waiting caller, \
                         who gets the error): {err}"
                    );
                    Counters::add(&self.counters.events_failed, n);
                    for reply in replies.drain(..).flatten() {
                        let _ = reply.send(Err(store_err("persisting events", &err)));
                    }
                    result = Err(err);
                    self.resync();
                }
            }
            // Keep the allocations for the next batch.
            events.clear();
            replies.clear();
            self.batch.events = events;
            self.batch.replies = replies;
        }
        if !self.batch.logs.is_empty() {
            let mut lines = std::mem::take(&mut self.batch.logs);
            let mut failed = 0u64;
            let mut first: Option<McpError> = None;
            for line in &lines {
                match self.logs.write(line) {
                    Ok(w) => {
                        Counters::add(&self.counters.log_lines_written, 1);
                        if w.rotated {
                            Counters::add(&self.counters.log_rotations, 1);
                        }
                    }
                    Err(e) => {
                        failed += 1;
                        first.get_or_insert(e);
                    }
                }
            }
            if let Err(e) = self.logs.flush() {
                ::log::error!("store: flushing log files failed: {e}");
                keep_first(&mut result, Err(e));
            }
            if let Some(e) = first {
                ::log::error!("store: {failed} log lines NOT written: {e}");
                Counters::add(&self.counters.log_lines_failed, failed);
                keep_first(&mut result, Err(e));
            }
            lines.clear();
            self.batch.logs = lines;
        }
        result
    }

    /// Drains what was queued at shutdown, commits, closes the files and the
    /// database, then answers every shutdown request.
    fn finish(mut self, mut stop: Vec<Reply<()>>) {
        for _ in 0..STORE_SHUTDOWN_DRAIN_PASSES {
            let (nc, ne, nl) = (
                self.inbox.cmd.len(),
                self.inbox.events.len(),
                self.inbox.logs.len(),
            );
            if nc + ne + nl == 0 {
                break;
            }
            for _ in 0..nc {
                match self.inbox.cmd.try_recv() {
                    Ok(c) => self.accept(Item::Cmd(c), &mut stop),
                    Err(_) => break,
                }
            }
            for _ in 0..ne {
                match self.inbox.events.try_recv() {
                    Ok(e) => self.accept(Item::Event(e), &mut stop),
                    Err(_) => break,
                }
            }
            for _ in 0..nl {
                match self.inbox.logs.try_recv() {
                    Ok(l) => self.accept(Item::Log(l), &mut stop),
                    Err(_) => break,
                }
            }
        }
        let mut result = self.commit();
        // Refusals still going on are reported with their count.
        let episodes = self.retention.open_episodes();
        if !episodes.is_empty() {
            self.batch.logs.extend(episodes);
            keep_first(&mut result, self.commit());
        }
        keep_first(&mut result, self.logs.close());
        if let Err((_, e)) = self.conn.close() {
            keep_first(&mut result, Err(sql_err("closing the database")(e)));
        }
        if let Err(e) = &result {
            ::log::error!("store: shutdown: {e}");
        }
        for reply in stop {
            let r = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(store_err("shutting down", e)),
            };
            let _ = reply.send(r);
        }
    }
}

/// Whether this process may create files in `dir` (`faccessat(2)` with
/// `W_OK` for the effective user, so root passes).
fn dir_is_writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: a plain syscall on a NUL-terminated path we own.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}
