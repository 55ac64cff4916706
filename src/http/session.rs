//! The legacy (2025-11-25) session: the `Mcp-Session-Id` and negotiated
//! version taken from the answer to `initialize`, the transparent
//! re-initialization after a `404`, and the `DELETE` that ends it. The
//! modern era has no session; none of this runs there.

use super::*;

/// Captures the session id and protocol version from the answer to one
/// `initialize` request.
pub(super) struct InitObserver {
    pub(super) id: i64,
    pub(super) session_id: Option<String>,
}

impl Shared {
    /// Performs the handshake again after the session `generation` expired
    /// (unless another thread already did).
    pub(super) fn recover_session(&self, peer: &Arc<Peer>, generation: u64) -> Result<()> {
        let _serial = self.recovery.lock();
        if self.session.lock().generation != generation {
            return Ok(());
        }
        peer.lifecycle("the session expired (HTTP 404); re-initializing");
        peer.reset_initialization();
        let info = peer.initialize()?;
        peer.lifecycle(format!(
            "re-initialized (protocol {}, {})",
            info.protocol_version,
            match &self.session.lock().id {
                Some(_) => "new session",
                None => "no session id",
            }
        ));
        Ok(())
    }

    /// Records the session id and negotiated version once the response to
    /// `initialize` is seen (before it is routed, so the caller's next
    /// message already carries both).
    pub(super) fn observe_initialize(&self, bytes: &[u8], o: &InitObserver) {
        let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
            return;
        };
        let items: Vec<&Value> = match &v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        for m in items {
            if !id_matches(m, o.id) {
                continue;
            }
            if let Some(pv) = m.pointer("/result/protocolVersion").and_then(Value::as_str) {
                {
                    let mut s = self.session.lock();
                    s.id = o.session_id.as_deref().map(Arc::from);
                    s.protocol_version = Some(Arc::from(pv));
                    s.generation += 1;
                }
                let _ = self.session_changed.0.try_send(());
            }
        }
    }

    /// Ends the session with `DELETE`. Returns whether the server ended it
    /// (and with it its streams), and a description; `None` without a
    /// session.
    pub(super) fn delete_session(&self) -> Option<(bool, String)> {
        let session = self.snapshot();
        session.id.as_ref()?;
        let rb = self.with_headers(self.agent.delete(&self.url), &session, false, None);
        let outcome = rb
            .config()
            .timeout_global(Some(HTTP_CLOSE_TIMEOUT))
            .build()
            .call();
        Some(match outcome {
            Ok(r) if r.status().is_success() => (true, "session ended".into()),
            Ok(r) if r.status().as_u16() == 405 => (
                false,
                "the server does not let clients end sessions (HTTP 405)".into(),
            ),
            Ok(r) => (
                false,
                format!(
                    "ending the session got {}",
                    status_text(r.status().as_u16())
                ),
            ),
            Err(e) => (false, format!("ending the session failed: {e}")),
        })
    }
}
