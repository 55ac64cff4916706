//! Requests from the server to the client — elicitation, sampling, roots —
//! in both eras: legacy servers send them as JSON-RPC requests (answered on
//! threads of their own, within the handler cap), modern ones ask for them
//! in an `InputRequiredResult` (answered by [`mrtr`](super::mrtr)). Both go
//! through [`InputKind`] and [`Peer::answer_input`]: adding a kind of
//! server request is one variant and its arms here.

use super::*;

/// Releases a handler slot and the elicitation count when dropped.
pub(super) struct HandlerSlot {
    peer: Arc<Peer>,
    elicitation: bool,
}

impl Drop for HandlerSlot {
    fn drop(&mut self) {
        self.peer.handlers.fetch_sub(1, Ordering::AcqRel);
        if self.elicitation {
            self.peer.elicitations.fetch_sub(1, Ordering::AcqRel);
            self.peer.rearm_all();
        }
    }
}

/// A kind of request a server makes of the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputKind {
    /// `elicitation/create`: ask the user.
    Elicitation,
    /// `sampling/createMessage`: ask the host's model.
    Sampling,
    /// `roots/list`: the client's roots.
    Roots,
}

impl InputKind {
    /// Every kind, for declaring capabilities.
    pub(crate) const ALL: [InputKind; 3] = [
        InputKind::Elicitation,
        InputKind::Sampling,
        InputKind::Roots,
    ];

    /// The kind a request method asks for.
    pub(crate) fn of(method: &str) -> Option<InputKind> {
        match method {
            "elicitation/create" => Some(InputKind::Elicitation),
            "sampling/createMessage" => Some(InputKind::Sampling),
            "roots/list" => Some(InputKind::Roots),
            _ => None,
        }
    }

    /// The method that asks for it.
    pub(crate) fn method(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation/create",
            InputKind::Sampling => "sampling/createMessage",
            InputKind::Roots => "roots/list",
        }
    }

    /// The tag of the threads that answer it (`mcp-<name>-<tag>`).
    fn tag(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicit",
            InputKind::Sampling => "sample",
            InputKind::Roots => "roots",
        }
    }

    /// Whether the client's own calls stop timing out while it is being
    /// answered (a person or a model is working on it; the server waits).
    fn suspends_timeouts(self) -> bool {
        !matches!(self, InputKind::Roots)
    }

    /// The capability a client with `opts` declares for it (name and value),
    /// `None` when no handler is installed. `modern`: the 2026-07-28 shape.
    pub(crate) fn capability(
        self,
        opts: &ClientOptions,
        modern: bool,
    ) -> Option<(&'static str, Value)> {
        match self {
            InputKind::Elicitation => opts.elicitation.as_ref().map(|h| {
                let v = match (h.supports_url(), modern) {
                    (true, _) => json!({"form": {}, "url": {}}),
                    (false, true) => json!({"form": {}}),
                    (false, false) => json!({}),
                };
                ("elicitation", v)
            }),
            InputKind::Sampling => opts.sampling.as_ref().map(|_| ("sampling", json!({}))),
            InputKind::Roots => opts.roots.as_ref().map(|_| {
                // Modern clients send roots per request: no list_changed.
                (
                    "roots",
                    if modern {
                        json!({})
                    } else {
                        json!({"listChanged": true})
                    },
                )
            }),
        }
    }
}

impl Peer {
    /// Whether a handler for `kind` is installed.
    pub(crate) fn handles(&self, kind: InputKind) -> bool {
        match kind {
            InputKind::Elicitation => self.opts.elicitation.is_some(),
            InputKind::Sampling => self.opts.sampling.is_some(),
            InputKind::Roots => self.opts.roots.is_some(),
        }
    }

    /// Runs the handler for `kind` on `params` (the request's params) and
    /// returns the result to send back, or the JSON-RPC error. The same in
    /// both eras.
    pub(crate) fn answer_input(
        &self,
        kind: InputKind,
        params: &Value,
    ) -> std::result::Result<Value, (i64, String)> {
        match kind {
            InputKind::Elicitation => self.run_elicitation(params),
            InputKind::Sampling => self.run_sampling(params),
            InputKind::Roots => {
                let provider = self
                    .opts
                    .roots
                    .clone()
                    .ok_or((codes::METHOD_NOT_FOUND, "no roots".to_string()))?;
                let deadline =
                    Instant::now() + self.opts.elicitation_deadline.min(REPLY_SEND_TIMEOUT);
                match self.run_with_deadline("roots-h", deadline, move || provider.roots()) {
                    Ok(roots) => Ok(crate::roots::list_result(&roots)),
                    Err(why) => Err((codes::INTERNAL_ERROR, format!("roots provider {why}"))),
                }
            }
        }
    }

    pub(super) fn reply(&self, id: &RequestId, outcome: std::result::Result<Value, (i64, String)>) {
        let msg = match outcome {
            Ok(v) => jsonrpc::result_value(id, v),
            Err((code, m)) => jsonrpc::error_value(id, code, &m),
        };
        if let Err(e) = self.out.send(&msg, Instant::now() + REPLY_SEND_TIMEOUT) {
            ::log::warn!(target: "mcp_client", "[{}] could not reply to server request {id}: {e:?}", self.name);
        }
    }

    /// A request from a legacy server: `ping` at once, the kinds with a
    /// handler on a thread of their own, anything else `method not found`.
    pub(super) fn handle_server_request(
        self: &Arc<Self>,
        id: RequestId,
        method: String,
        params: Value,
    ) {
        if method == "ping" {
            return self.reply(&id, Ok(json!({})));
        }
        match InputKind::of(&method).filter(|k| self.handles(*k)) {
            Some(kind) => self.spawn_server_request(
                id,
                kind.tag(),
                kind.suspends_timeouts(),
                params,
                move |peer, params| peer.answer_input(kind, params),
            ),
            None => self.reply(
                &id,
                Err((
                    codes::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                )),
            ),
        }
    }

    /// Handles a server request on a thread of its own, within the
    /// connection's handler cap. `suspends_timeouts`: while it runs, the
    /// client's own calls do not time out (the server is waiting on us).
    pub(super) fn spawn_server_request<F>(
        self: &Arc<Self>,
        id: RequestId,
        kind: &str,
        suspends_timeouts: bool,
        params: Value,
        run: F,
    ) where
        F: FnOnce(&Peer, &Value) -> std::result::Result<Value, (i64, String)> + Send + 'static,
    {
        if self.handlers.fetch_add(1, Ordering::AcqRel) >= self.opts.max_concurrent_handlers {
            self.handlers.fetch_sub(1, Ordering::AcqRel);
            self.reply(
                &id,
                Err((
                    codes::INTERNAL_ERROR,
                    "too many server requests in flight".into(),
                )),
            );
            return;
        }
        if suspends_timeouts {
            self.elicitations.fetch_add(1, Ordering::AcqRel);
            self.rearm_all();
        }
        self.server_requests.lock().insert(id.clone());
        let id_for_error = id.clone();
        let slot = HandlerSlot {
            peer: Arc::clone(self),
            elicitation: suspends_timeouts,
        };
        let spawned = crate::threads::spawn(
            format!("mcp-{}-{kind}", self.name),
            crate::limits::DEFAULT_THREAD_STACK,
            move || {
                let peer = Arc::clone(&slot.peer);
                let outcome = run(&peer, &params);
                if peer.server_requests.lock().remove(&id) {
                    peer.reply(&id, outcome);
                }
                drop(slot);
            },
        );
        if let Err(e) = spawned {
            // The closure (and the slot in it) was dropped: counters are restored.
            self.server_requests.lock().remove(&id_for_error);
            ::log::error!(target: "mcp_client", "[{}] cannot spawn a {kind} thread: {e}", self.name);
            self.reply(
                &id_for_error,
                Err((codes::INTERNAL_ERROR, format!("cannot spawn a thread: {e}"))),
            );
        }
    }

    /// Runs a user handler on a thread of its own and waits for it until
    /// `deadline`. Err says why there is no answer (deadline or panic); a
    /// handler still running at the deadline is left to finish on its own.
    pub(super) fn run_with_deadline<T: Send + 'static>(
        &self,
        kind: &str,
        deadline: Instant,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::result::Result<T, &'static str> {
        let (tx, rx) = bounded(1);
        let spawned = crate::threads::spawn(
            format!("mcp-{}-{kind}", self.name),
            crate::limits::DEFAULT_THREAD_STACK,
            move || {
                let _ = tx.send(f());
            },
        );
        if spawned.is_err() {
            return Err("could not be started");
        }
        match rx.recv_deadline(deadline) {
            Ok(v) => Ok(v),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err("missed its deadline"),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err("panicked"),
        }
    }

    pub(super) fn run_elicitation(
        &self,
        params: &Value,
    ) -> std::result::Result<Value, (i64, String)> {
        let deadline = Instant::now() + self.opts.elicitation_deadline;
        let request = elicitation::parse_request(&self.name, params, deadline)
            .map_err(|m| (codes::INVALID_PARAMS, m))?;
        let handler = self
            .opts
            .elicitation
            .clone()
            .ok_or((codes::METHOD_NOT_FOUND, "no handler".to_string()))?;
        let req = request.clone();
        match self.run_with_deadline("elicit-h", deadline, move || handler.elicit(&req)) {
            Ok(answer) => {
                let mut result = answer.to_result(&request.form);
                if matches!(request.mode, elicitation::ElicitationMode::Url { .. }) {
                    // Out-of-band answers carry no content (2025-11-25).
                    if let Some(o) = result.as_object_mut() {
                        o.remove("content");
                    }
                }
                Ok(result)
            }
            Err(why) => {
                // Never the values: only that there was no answer.
                self.lifecycle(format!("elicitation handler {why}; answered cancel"));
                Ok(json!({"action": "cancel"}))
            }
        }
    }

    pub(super) fn run_sampling(&self, params: &Value) -> std::result::Result<Value, (i64, String)> {
        let deadline = Instant::now() + self.opts.sampling_deadline;
        let request = crate::sampling::parse_request(&self.name, params, deadline)
            .map_err(|m| (codes::INVALID_PARAMS, m))?;
        let handler = self
            .opts
            .sampling
            .clone()
            .ok_or((codes::METHOD_NOT_FOUND, "no handler".to_string()))?;
        match self.run_with_deadline("sample-h", deadline, move || {
            handler.create_message(&request)
        }) {
            Ok(Ok(answer)) => Ok(answer.to_result()),
            Ok(Err(message)) => Err((SAMPLING_REJECTED, message)),
            Err(why) => {
                self.lifecycle(format!("sampling handler {why}"));
                Err((codes::INTERNAL_ERROR, format!("sampling handler {why}")))
            }
        }
    }
}
