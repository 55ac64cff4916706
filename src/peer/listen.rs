//! The modern era's `subscriptions/listen` stream: what replaces the legacy
//! GET stream and `resources/subscribe`.
//!
//! One stream per connection, opened on a thread of its own
//! (`mcp-<name>-listen`) once the modern era was agreed and the server's
//! capabilities say it sends change notifications, or once a resource is
//! subscribed. Its notifications are routed like any other (list-changed
//! refreshes, the notification channel), each tagged by the server with
//! the stream's subscription id. Changing the filter (a subscription added
//! or dropped) ends the stream (`notifications/cancelled` on stdio; over
//! HTTP the response stream is simply no longer read) and opens a new one;
//! a stream that ends is reopened with a bounded backoff.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};

use super::Peer;
use crate::cancel::CancelToken;
use crate::client::CallOptions;
use crate::error::{McpError, Result};
use crate::limits::{
    LISTEN_MAX_FAILURES, LISTEN_READY_WAIT, LISTEN_REQUEST_TIMEOUT, READER_THREAD_STACK,
};
use crate::model::{Acknowledged, ListenFilter};

/// The least time between two openings of the stream after it failed or
/// ended; doubled per failure up to [`LISTEN_MAX_BACKOFF`].
const LISTEN_MIN_BACKOFF: Duration = Duration::from_millis(200);
const LISTEN_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// A stream that ends sooner than this after opening counts as a failure.
const LISTEN_SHORT_LIVED: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Inner {
    /// Whether the listening thread runs.
    running: bool,
    /// Whether the connection is closing.
    stopped: bool,
    /// The subscribed resource URIs.
    resources: BTreeSet<String>,
    /// Bumped whenever the filter changes.
    generation: u64,
    /// The generation the open stream was opened with, and its token.
    open: Option<(u64, CancelToken)>,
    /// The last acknowledgment, with the generation of its stream.
    acked: Option<(u64, ListenFilter)>,
    /// How many streams have ended (a server that ends the stream without
    /// acknowledging it must not hold up the connect).
    ended: u64,
}

/// The state of the `subscriptions/listen` stream of one connection.
#[derive(Default)]
pub(crate) struct ListenState {
    inner: Mutex<Inner>,
    /// Signalled on every change of `inner`.
    changed: Condvar,
}

impl Peer {
    /// The filter of the stream: the list changes the server's capabilities
    /// offer, and the subscribed resources.
    fn listen_filter(&self, resources: &BTreeSet<String>) -> ListenFilter {
        let caps = self
            .init
            .read()
            .as_ref()
            .map(|n| n.info.capabilities.clone())
            .unwrap_or_default();
        ListenFilter {
            tools_list_changed: caps.list_changed("tools"),
            prompts_list_changed: caps.list_changed("prompts"),
            resources_list_changed: caps.list_changed("resources"),
            resource_subscriptions: resources.iter().cloned().collect(),
        }
    }

    /// Opens the listen stream once the modern era was agreed, when the
    /// server's capabilities say it sends change notifications.
    ///
    /// Waits (up to [`LISTEN_READY_WAIT`]) for the server to acknowledge the
    /// stream: a server sends change notifications only to streams that are
    /// open, so the first call must not race it (as the legacy GET stream).
    pub(super) fn listen_after_discover(&self) {
        let wanted = !self.listen_filter(&BTreeSet::new()).is_empty();
        if !wanted {
            return;
        }
        self.ensure_listening();
        let deadline = Instant::now() + LISTEN_READY_WAIT;
        let mut g = self.listen.inner.lock();
        while g.running && g.acked.is_none() && g.ended == 0 && !g.stopped {
            if self.listen.changed.wait_until(&mut g, deadline).timed_out() {
                ::log::debug!(target: "mcp_client", "[{}] subscriptions/listen not acknowledged within {} ms; going on", self.name, LISTEN_READY_WAIT.as_millis());
                break;
            }
        }
    }

    fn ensure_listening(&self) {
        let mut g = self.listen.inner.lock();
        if g.running || g.stopped {
            return;
        }
        let me = self.me.clone();
        let spawned = crate::threads::spawn(
            format!("mcp-{}-listen", self.name),
            READER_THREAD_STACK,
            move || listen_loop(me),
        );
        match spawned {
            Ok(_) => g.running = true,
            Err(e) => {
                ::log::warn!(target: "mcp_client", "[{}] cannot start the listen thread: {e}", self.name)
            }
        }
    }

    /// Ends the stream for good (the connection is closing).
    pub(crate) fn stop_listening(&self) {
        let mut g = self.listen.inner.lock();
        g.stopped = true;
        if let Some((_, t)) = g.open.take() {
            t.cancel();
        }
        self.listen.changed.notify_all();
    }

    /// `notifications/subscriptions/acknowledged`.
    pub(super) fn listen_acknowledged(&self, params: &Value) {
        let ack = Acknowledged::parse(params);
        let mut g = self.listen.inner.lock();
        if let Some((generation, _)) = &g.open {
            let generation = *generation;
            ::log::debug!(target: "mcp_client", "[{}] subscription {:?} acknowledged: {:?}", self.name, ack.subscription, ack.filter);
            g.acked = Some((generation, ack.filter));
            self.listen.changed.notify_all();
        }
    }

    /// Adds or removes a resource subscription; a new subscription returns
    /// once the server acknowledged a stream that carries it.
    pub(super) fn listen_resource(&self, uri: &str, subscribe: bool) -> Result<()> {
        let generation = {
            let mut g = self.listen.inner.lock();
            let changed = if subscribe {
                g.resources.insert(uri.to_owned())
            } else {
                g.resources.remove(uri)
            };
            if !changed {
                return Ok(());
            }
            g.generation += 1;
            if let Some((_, t)) = g.open.take() {
                t.cancel();
            }
            self.listen.changed.notify_all();
            g.generation
        };
        self.ensure_listening();
        if !subscribe {
            return Ok(());
        }
        let deadline = Instant::now() + self.opts.call_timeout;
        let mut g = self.listen.inner.lock();
        loop {
            if let Some((acked_gen, filter)) = &g.acked {
                if *acked_gen >= generation {
                    if filter.resource_subscriptions.iter().any(|u| u == uri) {
                        return Ok(());
                    }
                    if *acked_gen == g.generation {
                        return Err(McpError::Protocol {
                            server: self.name.clone(),
                            method: Some("subscriptions/listen".into()),
                            message: format!("the server did not accept a subscription to {uri}"),
                        });
                    }
                }
            }
            if g.stopped || !self.is_alive() {
                return Err(self.disconnected("subscriptions/listen"));
            }
            if self.listen.changed.wait_until(&mut g, deadline).timed_out() {
                return Err(McpError::CallTimeout {
                    server: self.name.clone(),
                    method: "subscriptions/listen".into(),
                    timeout: self.opts.call_timeout,
                });
            }
        }
    }
}

/// The listening thread: opens the stream, and reopens it when it ends or
/// its filter changes, until the connection closes.
fn listen_loop(me: std::sync::Weak<Peer>) {
    let mut failures = 0u32;
    loop {
        let Some(peer) = me.upgrade() else { return };
        let (generation, token, filter) = {
            let mut g = peer.listen.inner.lock();
            if g.stopped || !peer.is_alive() {
                g.running = false;
                peer.listen.changed.notify_all();
                return;
            }
            let filter = peer.listen_filter(&g.resources);
            if filter.is_empty() || failures >= LISTEN_MAX_FAILURES {
                // Nothing to listen for (or given up): wait for a change.
                let seen = g.generation;
                while g.generation == seen && !g.stopped && peer.is_alive() {
                    peer.listen.changed.wait_for(&mut g, Duration::from_secs(1));
                }
                failures = 0;
                continue;
            }
            let token = CancelToken::new();
            g.open = Some((g.generation, token.clone()));
            (g.generation, token, filter)
        };
        let opened = Instant::now();
        let opts = CallOptions::new()
            .timeout(LISTEN_REQUEST_TIMEOUT)
            .cancel_token(token);
        let params = json!({"notifications": filter});
        let outcome = peer.request("subscriptions/listen", Some(params), &opts);
        {
            let mut g = peer.listen.inner.lock();
            if g.open.as_ref().is_some_and(|(gen, _)| *gen == generation) {
                g.open = None;
            }
            g.ended += 1;
            peer.listen.changed.notify_all();
        }
        let ended = match outcome {
            Err(McpError::Cancelled { .. }) => continue,
            Err(McpError::Disconnected { .. }) => {
                peer.listen.inner.lock().running = false;
                peer.listen.changed.notify_all();
                return;
            }
            Ok(_) => "the server ended it".to_owned(),
            Err(e) => e.to_string(),
        };
        if opened.elapsed() < LISTEN_SHORT_LIVED {
            failures += 1;
        } else {
            failures = 0;
        }
        if failures >= LISTEN_MAX_FAILURES {
            peer.lifecycle(format!(
                "subscriptions/listen: {ended}; given up after {failures} attempts (until the subscriptions change)"
            ));
        } else {
            ::log::debug!(target: "mcp_client", "[{}] subscriptions/listen: {ended}; reopening", peer.name);
        }
        let delay = LISTEN_MIN_BACKOFF
            .saturating_mul(1 << failures.min(6))
            .min(LISTEN_MAX_BACKOFF);
        let mut g = peer.listen.inner.lock();
        if !g.stopped {
            let _ = peer.listen.changed.wait_for(&mut g, delay);
        }
    }
}
