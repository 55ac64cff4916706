//! Resuming a legacy response stream that ended before its response: `GET`
//! with `Last-Event-ID` after the server's `retry`, with a bounded backoff.
//! Modern (2026-07-28) streams are not resumable: a broken one fails its
//! call with [`McpError::StreamEnded`] instead (see `modern_stream_end`).

use super::*;

/// Where a request's stream was when it ended: what resuming starts from.
pub(super) struct StreamPosition {
    pub(super) last_id: Option<String>,
    pub(super) retry: Option<Duration>,
}

impl Shared {
    pub(super) fn open_get(
        &self,
        session: &Session,
        last_event_id: Option<&str>,
        read_timeout: Duration,
    ) -> std::result::Result<Response<Body>, ureq::Error> {
        let mut rb = self
            .agent
            .get(&self.url)
            .header("Accept", "text/event-stream");
        if let Some(id) = last_event_id {
            rb = rb.header("Last-Event-ID", id);
        }
        self.with_headers(rb, session, false, None)
            .config()
            .timeout_recv_response(Some(read_timeout))
            .timeout_per_read(Some(read_timeout))
            .build()
            .call()
    }

    /// After a request's stream ended without its response: resumes it with
    /// `GET` + `Last-Event-ID` (bounded), or fails the call.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resume_request(
        &self,
        peer: &Arc<Peer>,
        job: &Job,
        session: &Session,
        status: u16,
        mut end: PumpEnd,
        position: StreamPosition,
        observer: Option<&InitObserver>,
    ) -> std::result::Result<(), Failure> {
        let StreamPosition {
            mut last_id,
            mut retry,
        } = position;
        let method = Some(job.method.as_ref());
        let read_timeout = self.stream_timeout(job.timeout);
        let mut failures = 0u32;
        loop {
            let reason = match end {
                PumpEnd::Stopped | PumpEnd::Closing => return Ok(()),
                PumpEnd::TooLarge(_) => {
                    return Err(self.too_large(
                        &job.method,
                        status,
                        "an event of the response stream",
                    ))
                }
                PumpEnd::Ended(why) => why.unwrap_or_else(|| "the server closed it".into()),
            };
            if self.closing() || !peer.is_pending(job.id) {
                return Ok(());
            }
            let Some(event_id) = last_id.clone() else {
                return Err(Failure::Error(self.http_err(
                    method,
                    Some(status),
                    format!("the event stream ended before the response ({reason}), and the server gave no event id to resume it from"),
                )));
            };
            if failures >= SSE_MAX_RECONNECTS {
                return Err(Failure::Error(self.http_err(
                    method,
                    Some(status),
                    format!("the event stream ended before the response and could not be resumed in {failures} attempts ({reason})"),
                )));
            }
            let delay = backoff(retry, failures);
            peer.lifecycle(format!(
                "the stream of {} (request {}) ended before its response ({reason}); resuming after event {event_id:?} in {}",
                job.method,
                job.id,
                fmt_delay(delay)
            ));
            if let Err(RecvTimeoutError::Disconnected) = self.shutdown_rx.recv_timeout(delay) {
                return Ok(());
            }
            if !peer.is_pending(job.id) {
                return Ok(());
            }
            let resp = match self.open_get(session, Some(&event_id), read_timeout) {
                Ok(r) => r,
                Err(e) => {
                    failures += 1;
                    end = PumpEnd::Ended(Some(format!("resuming failed: {e}")));
                    continue;
                }
            };
            let s = resp.status().as_u16();
            if (200..300).contains(&s) && media_type(&resp) == "text/event-stream" {
                let mut reader =
                    SseReader::new(resp.into_body().into_reader(), self.max_message_size);
                let mut events = 0;
                end = self.pump_request(peer, job, &mut reader, observer, &mut events);
                if let Some(id) = reader.last_event_id() {
                    last_id = Some(id.to_owned());
                }
                retry = reader.retry().or(retry);
                if events > 0 {
                    failures = 0;
                } else {
                    failures += 1;
                }
                continue;
            }
            if matches!(s, 400..=499) && s != 408 && s != 429 {
                let e = self.status_err(method, resp);
                return Err(Failure::Error(self.http_err(
                    method,
                    Some(s),
                    format!("the event stream ended before the response and resuming it was refused: {e}"),
                )));
            }
            failures += 1;
            end = PumpEnd::Ended(Some(format!(
                "resuming got {}: {}",
                status_text(s),
                self.quote_body(resp.into_body())
            )));
        }
    }
}
