//! Cancellation: a token a caller can trip from any thread, and the shared
//! builders of the two cancellation messages MCP defines.
//!
//! A [`CancelToken`] is cheap to clone; every clone controls the same state.
//! Tripping it wakes every call waiting on it at once (no polling): the call
//! then tells the server (`notifications/cancelled`, or `tasks/cancel` for a
//! task) and returns [`McpError::Cancelled`](crate::McpError::Cancelled).

use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::jsonrpc::RequestId;

/// The reason sent to the server when a call times out.
pub const TIMEOUT_REASON: &str = "timeout";

/// The reason sent when a token is cancelled without one.
pub const DEFAULT_CANCEL_REASON: &str = "cancelled by the client";

#[derive(Default)]
struct State {
    reason: Option<String>,
    next_id: u64,
    listeners: Vec<(u64, Sender<()>)>,
}

/// A handle to cancel one or more in-flight calls from another thread.
///
/// ```
/// use skald_mcp::CancelToken;
/// let token = CancelToken::new();
/// let t2 = token.clone();
/// std::thread::spawn(move || t2.cancel_with("user pressed stop")).join().unwrap();
/// assert_eq!(token.reason().as_deref(), Some("user pressed stop"));
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("reason", &self.state.lock().reason)
            .finish()
    }
}

/// Keeps a listener registered on a token; unregisters it when dropped.
pub(crate) struct Subscription {
    token: CancelToken,
    id: u64,
    /// Receives one message when the token is cancelled.
    pub(crate) rx: Receiver<()>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.token
            .state
            .lock()
            .listeners
            .retain(|(id, _)| *id != self.id);
    }
}

impl CancelToken {
    /// A fresh, untripped token.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels with the default reason.
    pub fn cancel(&self) {
        self.cancel_with(DEFAULT_CANCEL_REASON)
    }

    /// Cancels with `reason`, which is sent to the server. Only the first
    /// cancellation counts; later calls do nothing.
    pub fn cancel_with(&self, reason: impl Into<String>) {
        let listeners = {
            let mut s = self.state.lock();
            if s.reason.is_some() {
                return;
            }
            s.reason = Some(reason.into());
            std::mem::take(&mut s.listeners)
        };
        for (_, tx) in listeners {
            let _ = tx.try_send(());
        }
    }

    /// Whether the token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.state.lock().reason.is_some()
    }

    /// The cancellation reason, once cancelled.
    pub fn reason(&self) -> Option<String> {
        self.state.lock().reason.clone()
    }

    /// Registers a listener that receives one message on cancellation
    /// (immediately, if the token is already cancelled).
    pub(crate) fn subscribe(&self) -> Subscription {
        let (tx, rx) = bounded(1);
        let mut s = self.state.lock();
        let id = s.next_id;
        s.next_id += 1;
        if s.reason.is_some() {
            let _ = tx.try_send(());
        } else {
            s.listeners.push((id, tx));
        }
        drop(s);
        Subscription {
            token: self.clone(),
            id,
            rx,
        }
    }
}

/// The params of `notifications/cancelled` for request `id`.
///
/// The one builder both transports use, so they cannot drift apart.
pub fn cancelled_notification(id: &RequestId, reason: &str) -> Value {
    json!({"requestId": id.to_value(), "reason": reason})
}

/// The params of `tasks/cancel` for task `task_id`.
pub fn tasks_cancel_request(task_id: &str) -> Value {
    json!({"taskId": task_id})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_listeners_once() {
        let t = CancelToken::new();
        let s1 = t.subscribe();
        let s2 = t.clone().subscribe();
        t.cancel_with("r1");
        t.cancel_with("r2");
        assert!(s1.rx.try_recv().is_ok() && s2.rx.try_recv().is_ok());
        assert_eq!(t.reason().unwrap(), "r1");
        // Subscribing after cancellation fires at once.
        assert!(t.subscribe().rx.try_recv().is_ok());
    }

    #[test]
    fn subscriptions_unregister() {
        let t = CancelToken::new();
        {
            let _s = t.subscribe();
            assert_eq!(t.state.lock().listeners.len(), 1);
        }
        assert!(t.state.lock().listeners.is_empty());
    }

    #[test]
    fn builders() {
        assert_eq!(
            cancelled_notification(&RequestId::Number(4), "timeout"),
            json!({"requestId": 4, "reason": "timeout"})
        );
        assert_eq!(tasks_cancel_request("t"), json!({"taskId": "t"}));
    }
}
