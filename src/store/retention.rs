//! Event retention: how many pending and processed events (rows and bytes)
//! the store keeps, per server and in all, and the bookkeeping that enforces
//! it without a query per event.
//!
//! The store thread keeps the usage of every server in memory (loaded once
//! at open with one `GROUP BY`), so that admitting an event is a hash lookup
//! and a few comparisons: the batching path stays as fast as without caps.
//! The database stays the truth: after a failed transaction the usage is
//! reloaded from it.
//!
//! * Pending events are the host's unfinished work and are never deleted:
//!   at a pending cap the *newest* event is refused, counted, and reported
//!   once per episode with a lifecycle line in that server's log.
//! * Processed events are history: past a processed cap the *oldest*
//!   processed events are deleted, in the same transaction that marked the
//!   newer ones processed, down to [`STORE_PRUNE_HEADROOM_DIVISOR`]ths below
//!   the cap. No index beyond `(status, id)` is needed: the oldest processed
//!   rows are the first of that index.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use crate::limits::{
    STORE_MAX_PENDING_EVENTS, STORE_MAX_PENDING_EVENTS_PER_SERVER, STORE_MAX_PENDING_EVENT_BYTES,
    STORE_MAX_PENDING_EVENT_BYTES_PER_SERVER, STORE_MAX_PROCESSED_EVENTS,
    STORE_MAX_PROCESSED_EVENTS_PER_SERVER, STORE_MAX_PROCESSED_EVENT_BYTES,
    STORE_MAX_PROCESSED_EVENT_BYTES_PER_SERVER, STORE_PRUNE_HEADROOM_DIVISOR,
};
use crate::log::{LogTag, McpLogLine};

/// A bound on a set of stored events: at most `rows` events and `bytes`
/// bytes of payload (the method name plus the `params` JSON, as stored;
/// SQLite adds some 60 bytes of its own per row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCap {
    /// The most events.
    pub rows: u64,
    /// The most payload bytes.
    pub bytes: u64,
}

impl EventCap {
    /// No bound at all (what the store did before caps existed).
    pub const UNLIMITED: EventCap = EventCap {
        rows: u64::MAX,
        bytes: u64::MAX,
    };

    /// A cap of `rows` events and `bytes` payload bytes.
    pub const fn new(rows: u64, bytes: u64) -> EventCap {
        EventCap { rows, bytes }
    }

    fn exceeded_by(&self, u: Usage) -> bool {
        u.rows > self.rows || u.bytes > self.bytes
    }

    /// The usage pruning goes down to: the cap less 1/16th of it, so that
    /// pruning runs once per many marks rather than on each.
    fn low_water(&self) -> Usage {
        let below = |c: u64| c.saturating_sub(c / STORE_PRUNE_HEADROOM_DIVISOR);
        Usage {
            rows: below(self.rows),
            bytes: below(self.bytes),
        }
    }
}

/// How many events the store keeps; part of
/// [`StoreConfig::event_retention`](super::StoreConfig::event_retention).
///
/// Defaults (from [`crate::limits`]): 10 000 events / 16 MiB pending and as
/// many processed per server, 100 000 events / 64 MiB pending and as many
/// processed in all, so a flooding server costs the disk some tens of
/// megabytes, not gigabytes. Start from [`EventRetention::default`] and
/// change the fields you need, or [`EventRetention::unlimited`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventRetention {
    /// Pending events of one server; past it its newest events are refused.
    pub pending_per_server: EventCap,
    /// Pending events of all servers; past it every server's newest events
    /// are refused.
    pub pending_total: EventCap,
    /// Processed events of one server; past it its oldest processed events
    /// are deleted.
    pub processed_per_server: EventCap,
    /// Processed events of all servers; past it the oldest processed events
    /// (of any server) are deleted.
    pub processed_total: EventCap,
}

impl Default for EventRetention {
    fn default() -> EventRetention {
        EventRetention {
            pending_per_server: EventCap::new(
                STORE_MAX_PENDING_EVENTS_PER_SERVER,
                STORE_MAX_PENDING_EVENT_BYTES_PER_SERVER,
            ),
            pending_total: EventCap::new(STORE_MAX_PENDING_EVENTS, STORE_MAX_PENDING_EVENT_BYTES),
            processed_per_server: EventCap::new(
                STORE_MAX_PROCESSED_EVENTS_PER_SERVER,
                STORE_MAX_PROCESSED_EVENT_BYTES_PER_SERVER,
            ),
            processed_total: EventCap::new(
                STORE_MAX_PROCESSED_EVENTS,
                STORE_MAX_PROCESSED_EVENT_BYTES,
            ),
        }
    }
}

impl EventRetention {
    /// No cap of any kind: every event is kept forever. For hosts that
    /// retire events themselves; a flooding server can then fill the disk.
    pub fn unlimited() -> EventRetention {
        EventRetention {
            pending_per_server: EventCap::UNLIMITED,
            pending_total: EventCap::UNLIMITED,
            processed_per_server: EventCap::UNLIMITED,
            processed_total: EventCap::UNLIMITED,
        }
    }
}

/// Rows and payload bytes of a set of events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub rows: u64,
    pub bytes: u64,
}

impl Usage {
    fn plus(self, bytes: u64) -> Usage {
        Usage {
            rows: self.rows.saturating_add(1),
            bytes: self.bytes.saturating_add(bytes),
        }
    }

    fn add(&mut self, bytes: u64) {
        *self = self.plus(bytes);
    }

    fn sub(&mut self, bytes: u64) {
        self.rows = self.rows.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    fn above(self, target: Usage) -> bool {
        self.rows > target.rows || self.bytes > target.bytes
    }
}

#[derive(Debug, Default)]
struct ServerUsage {
    pending: Usage,
    processed: Usage,
    /// Events refused since this server last had one accepted (the current
    /// episode at the cap), if any.
    refused: Option<u64>,
}

/// Which cap refused an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Server,
    Total,
}

/// The store thread's view of how many events it holds.
pub(crate) struct Retention {
    caps: EventRetention,
    servers: HashMap<String, ServerUsage>,
    pending: Usage,
    processed: Usage,
}

/// Payload bytes of a stored row, as SQL (matching what [`Retention`]
/// counts at insert: the UTF-8 lengths of method and params).
const ROW_BYTES: &str = "octet_length(method) + octet_length(params)";

impl Retention {
    pub(crate) fn new(caps: EventRetention) -> Retention {
        Retention {
            caps,
            servers: HashMap::new(),
            pending: Usage::default(),
            processed: Usage::default(),
        }
    }

    /// Loads the usage of every server from the database (at open, and
    /// after a failed transaction left the in-memory view unsure). The
    /// refusal episodes in progress are kept.
    pub(crate) fn reload(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let mut st = conn.prepare_cached(&format!(
            "SELECT server, status, count(*), coalesce(sum({ROW_BYTES}), 0) \
             FROM mcp_events GROUP BY server, status"
        ))?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        for s in self.servers.values_mut() {
            s.pending = Usage::default();
            s.processed = Usage::default();
        }
        self.pending = Usage::default();
        self.processed = Usage::default();
        for row in rows {
            let (server, status, n, bytes) = row?;
            let u = Usage {
                rows: n.max(0) as u64,
                bytes: bytes.max(0) as u64,
            };
            let s = self.servers.entry(server).or_default();
            if status == "pending" {
                s.pending = u;
                self.pending.rows += u.rows;
                self.pending.bytes += u.bytes;
            } else {
                s.processed = u;
                self.processed.rows += u.rows;
                self.processed.bytes += u.bytes;
            }
        }
        self.servers
            .retain(|_, s| s.pending.rows + s.processed.rows > 0 || s.refused.is_some());
        Ok(())
    }

    /// Decides whether a new pending event of `bytes` payload bytes from
    /// `server` is kept, and counts it if so. Pushes a lifecycle line for
    /// the server onto `notices` when a refusal episode starts or ends.
    pub(crate) fn admit(
        &mut self,
        server: &str,
        method: &str,
        bytes: u64,
        notices: &mut Vec<McpLogLine>,
    ) -> bool {
        if !self.servers.contains_key(server) {
            self.servers
                .insert(server.to_owned(), ServerUsage::default());
        }
        let Some(s) = self.servers.get_mut(server) else {
            return false; // just inserted: unreachable
        };
        let bound = if self
            .caps
            .pending_per_server
            .exceeded_by(s.pending.plus(bytes))
        {
            Some(Bound::Server)
        } else if self
            .caps
            .pending_total
            .exceeded_by(self.pending.plus(bytes))
        {
            Some(Bound::Total)
        } else {
            None
        };
        match bound {
            Some(bound) => {
                match &mut s.refused {
                    Some(n) => *n += 1,
                    None => {
                        s.refused = Some(1);
                        let (what, usage, cap) = match bound {
                            Bound::Server => (
                                format!("server {server:?} has"),
                                s.pending,
                                self.caps.pending_per_server,
                            ),
                            Bound::Total => (
                                "all servers together have".to_owned(),
                                self.pending,
                                self.caps.pending_total,
                            ),
                        };
                        let text = format!(
                            "event retention: refusing new events ({method}, {bytes} bytes, is the \
                             first): {what} {} pending events of {} bytes, the cap is {} events / {} \
                             bytes; newer events are refused (StoreStats::events_refused) until \
                             pending ones are marked processed",
                            usage.rows, usage.bytes, cap.rows, cap.bytes
                        );
                        ::log::warn!("store: [{server}] {text}");
                        notices.push(McpLogLine::now(server, LogTag::Lifecycle, text));
                    }
                }
                false
            }
            None => {
                s.pending.add(bytes);
                self.pending.add(bytes);
                if let Some(n) = s.refused.take() {
                    let text = format!(
                        "event retention: accepting new events again; {n} were refused while at the cap"
                    );
                    ::log::info!("store: [{server}] {text}");
                    notices.push(McpLogLine::now(server, LogTag::Lifecycle, text));
                }
                true
            }
        }
    }

    /// Lines for the refusal episodes still in progress (written at
    /// shutdown, so that the count of refused events reaches the log even
    /// if the host never catches up).
    pub(crate) fn open_episodes(&self) -> Vec<McpLogLine> {
        self.servers
            .iter()
            .filter_map(|(server, s)| {
                s.refused.map(|n| {
                    McpLogLine::now(
                        server.as_str(),
                        LogTag::Lifecycle,
                        format!(
                            "event retention: {n} events were refused at the cap \
                             (still at the cap when the store closed)"
                        ),
                    )
                })
            })
            .collect()
    }

    /// Records that a pending event of `server` was marked processed.
    pub(crate) fn processed(&mut self, server: &str, bytes: u64) {
        if let Some(s) = self.servers.get_mut(server) {
            s.pending.sub(bytes);
            s.processed.add(bytes);
        }
        self.pending.sub(bytes);
        self.processed.add(bytes);
    }

    /// Deletes the oldest processed events of every server past its cap,
    /// then the oldest of all past the total cap; returns how many were
    /// deleted. Call inside the write transaction that marked events
    /// processed.
    pub(crate) fn prune(&mut self, conn: &Connection) -> rusqlite::Result<u64> {
        let mut deleted = 0;
        let cap = self.caps.processed_per_server;
        let over: Vec<String> = self
            .servers
            .iter()
            .filter(|(_, s)| cap.exceeded_by(s.processed))
            .map(|(k, _)| k.clone())
            .collect();
        for server in over {
            let target = cap.low_water();
            while let Some(u) = self
                .servers
                .get(&server)
                .map(|s| s.processed)
                .filter(|u| u.above(target))
            {
                let n = self.delete_oldest(conn, Some(&server), chunk(u, target))?;
                deleted += n;
                if n == 0 {
                    // The view said there were more; the database has none.
                    self.reload(conn)?;
                    break;
                }
            }
        }
        let cap = self.caps.processed_total;
        if cap.exceeded_by(self.processed) {
            let target = cap.low_water();
            while self.processed.above(target) {
                let n = self.delete_oldest(conn, None, chunk(self.processed, target))?;
                deleted += n;
                if n == 0 {
                    self.reload(conn)?;
                    break;
                }
            }
        }
        self.servers
            .retain(|_, s| s.pending.rows + s.processed.rows > 0 || s.refused.is_some());
        Ok(deleted)
    }

    /// Deletes up to `limit` of the oldest processed events (of `server`, or
    /// of any), updating the usage; returns how many went.
    fn delete_oldest(
        &mut self,
        conn: &Connection,
        server: Option<&str>,
        limit: u64,
    ) -> rusqlite::Result<u64> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // `(status, id)` is indexed: the oldest processed rows come first.
        let sql = format!(
            "DELETE FROM mcp_events WHERE id IN (SELECT id FROM mcp_events \
             WHERE status = 'processed' AND (?1 IS NULL OR server = ?1) ORDER BY id LIMIT ?2) \
             RETURNING server, {ROW_BYTES}"
        );
        let mut st = conn.prepare_cached(&sql)?;
        let mut rows = st.query(params![server, limit])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            let s: String = r.get(0)?;
            let bytes = r.get::<_, i64>(1)?.max(0) as u64;
            if let Some(u) = self.servers.get_mut(&s) {
                u.processed.sub(bytes);
            }
            self.processed.sub(bytes);
            n += 1;
        }
        Ok(n)
    }
}

/// How many rows to delete next to bring `u` to `target`: the row excess,
/// or a slice when only the bytes are over (their sizes are unknown ahead).
fn chunk(u: Usage, target: Usage) -> u64 {
    const BYTES_CHUNK: u64 = 256;
    u.rows
        .saturating_sub(target.rows)
        .max(if u.bytes > target.bytes {
            BYTES_CHUNK
        } else {
            1
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(pending: u64, processed: u64) -> EventRetention {
        EventRetention {
            pending_per_server: EventCap::new(pending, u64::MAX),
            pending_total: EventCap::new(pending * 2, u64::MAX),
            processed_per_server: EventCap::new(processed, u64::MAX),
            processed_total: EventCap::UNLIMITED,
        }
    }

    #[test]
    fn admits_up_to_the_per_server_cap_then_refuses_once_loudly() {
        let mut r = Retention::new(caps(3, 10));
        let mut notes = Vec::new();
        for _ in 0..3 {
            assert!(r.admit("a", "event/x", 10, &mut notes));
        }
        assert!(notes.is_empty());
        assert!(!r.admit("a", "event/x", 10, &mut notes));
        assert!(!r.admit("a", "event/x", 10, &mut notes));
        assert_eq!(notes.len(), 1, "one line per episode, not per event");
        assert_eq!(notes[0].server, "a");
        assert_eq!(notes[0].tag, LogTag::Lifecycle);
        assert!(
            notes[0].text.contains("refusing new events"),
            "{}",
            notes[0].text
        );
        // Another server is not affected by a's cap.
        assert!(r.admit("b", "event/x", 10, &mut notes));
        assert_eq!(r.open_episodes().len(), 1);
        // Once one is processed, a's next event is accepted and the episode
        // is closed with its count.
        r.processed("a", 10);
        assert!(r.admit("a", "event/x", 10, &mut notes));
        assert_eq!(notes.len(), 2);
        assert!(
            notes[1].text.contains("2 were refused"),
            "{}",
            notes[1].text
        );
        assert!(r.open_episodes().is_empty());
    }

    #[test]
    fn the_total_cap_binds_across_servers() {
        let mut r = Retention::new(caps(3, 10)); // total 6
        let mut notes = Vec::new();
        for s in ["a", "b"] {
            for _ in 0..3 {
                assert!(r.admit(s, "m", 1, &mut notes));
            }
        }
        assert!(!r.admit("c", "m", 1, &mut notes));
        assert!(
            notes[0].text.contains("all servers together"),
            "{}",
            notes[0].text
        );
    }

    #[test]
    fn bytes_bound_pending_events_and_an_oversized_event_is_refused() {
        let mut r = Retention::new(EventRetention {
            pending_per_server: EventCap::new(100, 1000),
            ..EventRetention::unlimited()
        });
        let mut notes = Vec::new();
        assert!(!r.admit("a", "m", 1001, &mut notes));
        assert!(r.admit("a", "m", 600, &mut notes));
        assert!(!r.admit("a", "m", 401, &mut notes));
        assert!(r.admit("a", "m", 400, &mut notes));
    }

    #[test]
    fn pruning_goes_below_the_cap_by_the_headroom() {
        let cap = EventCap::new(1600, 16_000);
        assert_eq!(
            cap.low_water(),
            Usage {
                rows: 1500,
                bytes: 15_000
            }
        );
        assert_eq!(EventCap::new(0, 0).low_water(), Usage::default());
        assert_eq!(
            chunk(
                Usage {
                    rows: 1601,
                    bytes: 1
                },
                cap.low_water()
            ),
            101
        );
        assert_eq!(
            chunk(
                Usage {
                    rows: 10,
                    bytes: 20_000
                },
                cap.low_water()
            ),
            256
        );
    }
}
