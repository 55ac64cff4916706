//! The legacy (2025-11-25) `GET` stream: one listening thread per
//! connection holds it open for messages the server sends outside any
//! request, and reopens it (with `Last-Event-ID`) when it drops. The modern
//! era has no `GET` stream: `subscriptions/listen` (in the connection)
//! replaces it.

use super::*;

/// Where the GET stream is: what a reopened stream resumes from.
#[derive(Default)]
pub(super) struct ListenCursor {
    pub(super) last_id: Option<String>,
    pub(super) retry: Option<Duration>,
    /// The session generation `last_id` belongs to.
    pub(super) generation: Option<u64>,
}

/// How one GET stream ended.
pub(super) enum Listened {
    /// Closing, or the connection is gone, or the server offers no stream.
    Stop,
    /// A new session exists: open a stream for it at once.
    NewSession,
    /// The stream could not be opened.
    Failed(String),
    /// The stream ended after `events` events.
    Ended { reason: String, events: usize },
    /// The stream was silent for the whole read timeout.
    Idle,
}

impl Shared {
    /// Starts the listening thread unless it runs. Returns, when it was
    /// started, a channel that disconnects once its first GET was answered
    /// (the stream is open, or the server refused it) or failed.
    pub(super) fn ensure_listener(self: &Arc<Self>) -> Option<Receiver<()>> {
        if self.closing() {
            return None;
        }
        let mut l = self.listener.lock();
        if l.running {
            return None;
        }
        let (done_tx, done_rx) = bounded::<()>(0);
        let (ready_tx, ready_rx) = bounded::<()>(0);
        let shared = Arc::clone(self);
        let spawned = crate::threads::spawn(
            format!("mcp-{}-listen", self.name),
            HTTP_THREAD_STACK,
            move || {
                shared.listen(ready_tx);
                shared.listening.store(false, Ordering::Release);
                shared.listener.lock().running = false;
                drop(done_tx);
            },
        );
        match spawned {
            Ok(h) => {
                l.running = true;
                l.handle = Some(h);
                l.done = Some(done_rx);
                Some(ready_rx)
            }
            Err(e) => {
                ::log::warn!(target: "mcp_client", "[{}] cannot start the GET listener: {e}", self.name);
                None
            }
        }
    }

    /// Waits until a session newer than `generation` exists; false on close.
    pub(super) fn wait_new_session(&self, generation: u64) -> bool {
        loop {
            if self.closing() {
                return false;
            }
            if self.session.lock().generation != generation {
                return true;
            }
            crossbeam_channel::select! {
                recv(self.session_changed.1) -> _ => {}
                recv(self.shutdown_rx) -> _ => return false,
            }
        }
    }

    /// The listening thread: holds the GET stream open and reopens it.
    /// `ready` is dropped once the first GET was answered or failed.
    pub(super) fn listen(&self, ready: Sender<()>) {
        let mut ready = Some(ready);
        let mut cursor = ListenCursor::default();
        let mut failures = 0u32;
        let mut announced = false;
        loop {
            if self.closing() {
                return;
            }
            let session = self.snapshot();
            if cursor.generation != Some(session.generation) {
                // Event ids belong to a session.
                cursor.last_id = None;
                cursor.generation = Some(session.generation);
            }
            let outcome = self.listen_once(&session, &mut cursor, &mut announced, &mut ready);
            drop(ready.take());
            let reason = match outcome {
                Listened::Stop => return,
                Listened::NewSession => continue,
                Listened::Failed(reason) => {
                    failures += 1;
                    reason
                }
                Listened::Ended { reason, events } => {
                    if events > 0 {
                        failures = 0;
                    } else {
                        failures += 1;
                    }
                    reason
                }
                Listened::Idle => {
                    ::log::debug!(target: "mcp_client", "[{}] the GET stream was silent for {}; reopening it", self.name, fmt_delay(HTTP_LISTEN_IDLE_TIMEOUT));
                    continue;
                }
            };
            if self.closing() {
                return;
            }
            if failures >= SSE_MAX_RECONNECTS {
                self.lifecycle(format!(
                    "the GET stream {reason}; given up after {failures} failed attempts (it is retried after the next initialize)"
                ));
                return;
            }
            let delay = backoff(cursor.retry, failures);
            self.lifecycle(format!(
                "the GET stream {reason}; reopening in {}",
                fmt_delay(delay)
            ));
            if let Err(RecvTimeoutError::Disconnected) = self.shutdown_rx.recv_timeout(delay) {
                return;
            }
        }
    }

    /// Opens the GET stream once and reads it until it ends.
    pub(super) fn listen_once(
        &self,
        session: &Session,
        cursor: &mut ListenCursor,
        announced: &mut bool,
        ready: &mut Option<Sender<()>>,
    ) -> Listened {
        let resp = match self.open_get(session, cursor.last_id.as_deref(), HTTP_LISTEN_IDLE_TIMEOUT)
        {
            Ok(r) => r,
            Err(e) if self.closing() => {
                ::log::debug!(target: "mcp_client", "[{}] GET ended by close: {e}", self.name);
                return Listened::Stop;
            }
            Err(e) => return Listened::Failed(format!("could not be opened: {e}")),
        };
        let status = resp.status().as_u16();
        if status == 405 {
            self.lifecycle("the server offers no GET stream (HTTP 405); server messages arrive only with responses");
            return Listened::Stop;
        }
        if status == 404 && session.id.is_some() {
            self.lifecycle(
                "the GET stream found the session expired (HTTP 404); waiting for a new session",
            );
            drop(ready.take());
            return if self.wait_new_session(session.generation) {
                Listened::NewSession
            } else {
                Listened::Stop
            };
        }
        if refuses_get_stream(status) {
            // The spec says 405, but servers answer 400 (a handler that only
            // parses POST bodies) or 404 (a stateless server that routes only
            // POST): asking again gets the same answer.
            self.lifecycle(format!(
                "the server offers no GET stream ({}: {}); server messages arrive only with responses",
                status_text(status),
                self.quote_body(resp.into_body())
            ));
            return Listened::Stop;
        }
        let ctype = media_type(&resp);
        if !(200..300).contains(&status) || ctype != "text/event-stream" {
            let what = if (200..300).contains(&status) {
                format!("was answered with Content-Type {ctype:?}")
            } else {
                format!("was answered {}", status_text(status))
            };
            return Listened::Failed(format!("{what}: {}", self.quote_body(resp.into_body())));
        }
        self.listening.store(true, Ordering::Release);
        drop(ready.take());
        if !*announced || cursor.last_id.is_some() {
            self.lifecycle(match &cursor.last_id {
                Some(id) => format!("GET stream reopened (Last-Event-ID {id:?})"),
                None => "listening for server messages on the GET stream".into(),
            });
            *announced = true;
        }
        let mut reader = SseReader::new(resp.into_body().into_reader(), self.max_message_size);
        let mut events = 0;
        let mut superseded = false;
        let end = self.pump(&mut reader, false, &mut events, &|| true, &mut |data| {
            let Some(p) = self.peer() else {
                return false;
            };
            p.dispatch_bytes(data);
            // After a re-initialization this stream belongs to the old session.
            superseded = self.session.lock().generation != session.generation;
            !superseded
        });
        self.listening.store(false, Ordering::Release);
        if let Some(id) = reader.last_event_id() {
            cursor.last_id = Some(id.to_owned());
        }
        cursor.retry = reader.retry().or(cursor.retry);
        match end {
            PumpEnd::Stopped if superseded && !self.closing() => Listened::NewSession,
            PumpEnd::Stopped | PumpEnd::Closing => Listened::Stop,
            PumpEnd::Ended(Some(why)) if why == READ_TIMED_OUT => Listened::Idle,
            PumpEnd::Ended(why) => Listened::Ended {
                reason: format!(
                    "ended ({})",
                    why.unwrap_or_else(|| "the server closed it".into())
                ),
                events,
            },
            // Not produced here: oversized events are skipped.
            PumpEnd::TooLarge(limit) => Listened::Ended {
                reason: format!("ended (an event exceeds {limit} bytes)"),
                events,
            },
        }
    }
}
