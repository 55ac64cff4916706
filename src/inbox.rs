//! An elicitation inbox: the [`ElicitationHandler`] for hosts whose user
//! answers somewhere else (a web page, a chat, another process).
//!
//! A server's question (a legacy `elicitation/create` request, a modern
//! `InputRequiredResult` round or an `input_required` task, all the same to
//! the inbox) is queued under an id; any thread lists what is pending and
//! resolves one by id. The thread that asked waits (bounded by the
//! request's deadline, after which the client answers `cancel`) and the
//! call goes on. The inbox holds at most [`MAX_PENDING_ELICITATIONS`]
//! questions: beyond that a question is answered `cancel` at once rather
//! than queued without bound.
//!
//! Values never pass through a log line: the inbox logs ids and servers
//! only, a [`PendingElicitation`] holds no answer, and the answer is handed
//! to the waiting call and dropped.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::{Map, Value};

use crate::elicitation::{
    ElicitationForm, ElicitationHandler, ElicitationMode, ElicitationRequest, ElicitationResponse,
};
use crate::limits::MAX_PENDING_ELICITATIONS;

/// A question waiting in an [`ElicitationInbox`]: what to show the user.
/// Render every field whose [`secret`](crate::FormField::secret) is set as
/// a masked input.
#[derive(Debug, Clone)]
pub struct PendingElicitation {
    /// The inbox's id for it, to [`resolve`](ElicitationInbox::resolve) it.
    pub id: u64,
    /// The server asking.
    pub server: String,
    /// The message to show.
    pub message: String,
    /// Form or URL mode.
    pub mode: ElicitationMode,
    /// The form to fill in (its fields say which to mask).
    pub form: ElicitationForm,
    /// When the client answers `cancel` if nobody has answered.
    pub deadline: Instant,
}

impl PendingElicitation {
    /// Time left before the client answers `cancel` on the user's behalf.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// Why [`ElicitationInbox::resolve`] did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveError {
    /// No question with this id is pending: it was answered already, its
    /// deadline passed, or the id was never issued.
    NotPending(u64),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::NotPending(id) => write!(
                f,
                "elicitation {id} is not pending (answered, expired or unknown)"
            ),
        }
    }
}

impl std::error::Error for ResolveError {}

struct Entry {
    pending: PendingElicitation,
    answer: Option<ElicitationResponse>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    entries: BTreeMap<u64, Entry>,
}

struct Shared {
    state: Mutex<State>,
    /// Woken when an answer arrives (for the asking threads) and when a
    /// question arrives (for [`ElicitationInbox::wait_pending`]).
    changed: Condvar,
}

/// A queue of servers' questions that any thread can list and answer.
/// Cloning gives another handle on the same inbox; install one clone as the
/// connection's handler ([`ClientOptions::elicitation_handler`](crate::ClientOptions::elicitation_handler),
/// or [`ManagerConfig::with_elicitation_inbox`](crate::manager::ManagerConfig::with_elicitation_inbox))
/// and keep another to answer with.
///
/// ```
/// use skald_mcp::{ElicitationInbox, ElicitationResponse};
/// let inbox = ElicitationInbox::new();
/// let options = skald_mcp::ClientOptions::default().elicitation_handler(inbox.clone());
/// // ... on the host's UI thread:
/// for q in inbox.pending() {
///     println!("{} asks: {}", q.server, q.message);
///     let _ = inbox.resolve(q.id, ElicitationResponse::Decline);
/// }
/// # drop(options);
/// ```
#[derive(Clone)]
pub struct ElicitationInbox {
    shared: Arc<Shared>,
}

impl Default for ElicitationInbox {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ElicitationInbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.state.lock();
        f.debug_struct("ElicitationInbox")
            .field("pending", &st.entries.len())
            .finish()
    }
}

impl ElicitationInbox {
    /// An empty inbox.
    pub fn new() -> ElicitationInbox {
        ElicitationInbox {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            }),
        }
    }

    /// The questions waiting for an answer, oldest first.
    pub fn pending(&self) -> Vec<PendingElicitation> {
        let st = self.shared.state.lock();
        st.entries
            .values()
            .filter(|e| e.answer.is_none())
            .map(|e| e.pending.clone())
            .collect()
    }

    /// [`pending`](Self::pending), waiting up to `timeout` for a question
    /// when there is none (empty when none came).
    pub fn wait_pending(&self, timeout: Duration) -> Vec<PendingElicitation> {
        let until = Instant::now() + timeout;
        let mut st = self.shared.state.lock();
        loop {
            let open: Vec<_> = st
                .entries
                .values()
                .filter(|e| e.answer.is_none())
                .map(|e| e.pending.clone())
                .collect();
            if !open.is_empty() || self.shared.changed.wait_until(&mut st, until).timed_out() {
                return open;
            }
        }
    }

    /// Answers question `id`; the call that waits on it goes on.
    pub fn resolve(&self, id: u64, answer: ElicitationResponse) -> Result<(), ResolveError> {
        let mut st = self.shared.state.lock();
        match st.entries.get_mut(&id) {
            Some(e) if e.answer.is_none() => {
                e.answer = Some(answer);
                drop(st);
                self.shared.changed.notify_all();
                ::log::debug!(target: "mcp_client", "elicitation {id} resolved");
                Ok(())
            }
            _ => Err(ResolveError::NotPending(id)),
        }
    }

    /// Accepts question `id` with these field values.
    pub fn accept(&self, id: u64, values: Map<String, Value>) -> Result<(), ResolveError> {
        self.resolve(id, ElicitationResponse::Accept(values))
    }

    /// Declines question `id` (the user said no).
    pub fn decline(&self, id: u64) -> Result<(), ResolveError> {
        self.resolve(id, ElicitationResponse::Decline)
    }

    /// Cancels question `id` (the user dismissed it).
    pub fn cancel(&self, id: u64) -> Result<(), ResolveError> {
        self.resolve(id, ElicitationResponse::Cancel)
    }
}

impl ElicitationHandler for ElicitationInbox {
    fn elicit(&self, request: &ElicitationRequest) -> ElicitationResponse {
        let mut st = self.shared.state.lock();
        if st.entries.len() >= MAX_PENDING_ELICITATIONS {
            ::log::warn!(target: "mcp_client",
                "[{}] elicitation inbox full ({MAX_PENDING_ELICITATIONS} pending); answered cancel",
                request.server);
            return ElicitationResponse::Cancel;
        }
        st.next_id += 1;
        let id = st.next_id;
        st.entries.insert(
            id,
            Entry {
                pending: PendingElicitation {
                    id,
                    server: request.server.clone(),
                    message: request.message.clone(),
                    mode: request.mode.clone(),
                    form: request.form.clone(),
                    deadline: request.deadline,
                },
                answer: None,
            },
        );
        self.shared.changed.notify_all();
        ::log::debug!(target: "mcp_client", "[{}] elicitation {id} queued", request.server);
        loop {
            if let Some(answer) = st.entries.get_mut(&id).and_then(|e| e.answer.take()) {
                st.entries.remove(&id);
                return answer;
            }
            if self
                .shared
                .changed
                .wait_until(&mut st, request.deadline)
                .timed_out()
            {
                // Answered at the very deadline still counts.
                let late = st.entries.remove(&id).and_then(|e| e.answer);
                if late.is_none() {
                    ::log::debug!(target: "mcp_client", "[{}] elicitation {id} expired", request.server);
                }
                return late.unwrap_or(ElicitationResponse::Cancel);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(deadline: Duration) -> ElicitationRequest {
        let schema = json!({"type":"object","properties":{"password":{"type":"string"}},"required":["password"]});
        ElicitationRequest {
            server: "s".into(),
            message: "sudo password?".into(),
            mode: ElicitationMode::Form,
            form: ElicitationForm::parse(&schema).unwrap(),
            schema,
            deadline: Instant::now() + deadline,
        }
    }

    #[test]
    fn a_question_waits_for_its_answer_from_another_thread() {
        let inbox = ElicitationInbox::new();
        let asking = {
            let inbox = inbox.clone();
            std::thread::spawn(move || inbox.elicit(&request(Duration::from_secs(10))))
        };
        let q = inbox.wait_pending(Duration::from_secs(10));
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].message, "sudo password?");
        assert!(q[0].form.fields()[0].secret, "the password field is masked");
        let mut m = Map::new();
        m.insert("password".into(), json!("hunter2"));
        inbox.accept(q[0].id, m.clone()).unwrap();
        assert_eq!(asking.join().unwrap(), ElicitationResponse::Accept(m));
        assert!(inbox.pending().is_empty());
        assert_eq!(
            inbox.decline(q[0].id),
            Err(ResolveError::NotPending(q[0].id)),
            "an answered question cannot be answered again"
        );
        assert!(!format!("{inbox:?}").contains("hunter2"));
    }

    #[test]
    fn an_unanswered_question_is_cancelled_at_its_deadline() {
        let inbox = ElicitationInbox::new();
        let got = inbox.elicit(&request(Duration::from_millis(50)));
        assert_eq!(got, ElicitationResponse::Cancel);
        assert!(inbox.pending().is_empty(), "the expired question is gone");
        assert!(inbox.wait_pending(Duration::from_millis(10)).is_empty());
    }

    #[test]
    fn a_full_inbox_cancels_at_once() {
        let inbox = ElicitationInbox::new();
        let (tx, rx) = crossbeam_channel::unbounded();
        let threads: Vec<_> = (0..MAX_PENDING_ELICITATIONS)
            .map(|_| {
                let inbox = inbox.clone();
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let _ = tx.send(inbox.elicit(&request(Duration::from_secs(30))));
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while inbox.pending().len() < MAX_PENDING_ELICITATIONS && Instant::now() < deadline {
            inbox.wait_pending(Duration::from_millis(50));
        }
        assert_eq!(inbox.pending().len(), MAX_PENDING_ELICITATIONS);
        assert_eq!(
            inbox.elicit(&request(Duration::from_secs(30))),
            ElicitationResponse::Cancel
        );
        for q in inbox.pending() {
            inbox.cancel(q.id).unwrap();
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(rx.try_iter().count(), MAX_PENDING_ELICITATIONS);
    }
}
