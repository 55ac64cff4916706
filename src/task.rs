//! Tasks (MCP 2025-11-25): a server may defer an expensive `tools/call` and
//! answer with a task handle instead of the result. The client then polls
//! `tasks/get` until the task ends and fetches the result with
//! `tasks/result` — block-and-poll, on the caller's thread. A task that
//! reports `input_required` is waited on through `tasks/result` at once: the
//! server sends the requests it waits on (elicitation, sampling) while that
//! request is open, and the connection's handlers answer them.

use std::time::{Duration, Instant};

use crossbeam_channel::{after, never, select};
use serde_json::{json, Value};

use crate::cancel::{tasks_cancel_request, CancelToken};
use crate::client::{CallOptions, Progress};
use crate::error::{McpError, Result};
use crate::limits::{TASK_POLL_DEADLINE, TASK_POLL_MAX, TASK_POLL_MIN};
use crate::result::{extract_call_result, McpCallResult};

pub use crate::model::{CreateTaskResult, TaskStatus};

/// The wait before the next poll: the server's `pollInterval`, clamped to
/// [[`TASK_POLL_MIN`], [`TASK_POLL_MAX`]] (the minimum when absent).
pub fn clamp_poll_interval(requested: Option<Duration>) -> Duration {
    requested
        .unwrap_or(TASK_POLL_MIN)
        .clamp(TASK_POLL_MIN, TASK_POLL_MAX)
}

/// How long a task may be polled: its `ttl`, else [`TASK_POLL_DEADLINE`].
pub fn poll_deadline(ttl: Option<Duration>) -> Duration {
    ttl.unwrap_or(TASK_POLL_DEADLINE)
}

/// How long the `tasks/cancel` sent by an abandoned poll may take.
const TASK_CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// A request function: method, params, options → result.
pub(crate) type RequestFn<'a> = dyn Fn(&str, Value, &CallOptions) -> Result<Value> + 'a;

/// Sends `tasks/cancel` when dropped while armed.
struct TaskCancelGuard<'a> {
    request: &'a RequestFn<'a>,
    task_id: String,
    armed: bool,
}

impl Drop for TaskCancelGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let opts = CallOptions::default().timeout(TASK_CANCEL_TIMEOUT);
            if let Err(e) =
                (self.request)("tasks/cancel", tasks_cancel_request(&self.task_id), &opts)
            {
                ::log::debug!(target: "mcp_client", "tasks/cancel for {} failed: {e}", self.task_id);
            }
        }
    }
}

/// Waits `d` unless `cancel` trips first; returns true when cancelled.
fn wait_or_cancel(d: Duration, cancel: Option<&CancelToken>) -> bool {
    let sub = cancel.map(|c| c.subscribe());
    let cancel_rx = sub.as_ref().map(|s| s.rx.clone()).unwrap_or_else(never);
    select! {
        recv(cancel_rx) -> _ => true,
        recv(after(d)) -> _ => false,
    }
}

/// Polls `task` to its end and returns the real result.
///
/// `can_provide_input`: whether the connection has a handler (elicitation or
/// sampling) that could answer what an `input_required` task asks for; if
/// not, such a task is cancelled at once with a typed error instead of
/// waiting for input that cannot come.
pub(crate) fn drive_task(
    request: &RequestFn<'_>,
    server: &str,
    tool: &str,
    task: CreateTaskResult,
    opts: &CallOptions,
    can_provide_input: bool,
) -> Result<McpCallResult> {
    let started = Instant::now();
    let deadline = started + poll_deadline(task.ttl);
    let mut guard = TaskCancelGuard {
        request,
        task_id: task.task_id.clone(),
        armed: true,
    };
    let task_err = |status: &str, message: Option<String>| McpError::Task {
        server: server.to_owned(),
        task_id: task.task_id.clone(),
        status: status.to_owned(),
        message,
    };
    let cancelled = |opts: &CallOptions| McpError::Cancelled {
        server: server.to_owned(),
        method: "tools/call".into(),
        reason: opts
            .cancel
            .as_ref()
            .and_then(CancelToken::reason)
            .unwrap_or_default(),
    };
    let mut current = task.clone();
    let mut polls: u64 = 0;
    loop {
        match &current.status {
            TaskStatus::InputRequired if !can_provide_input => {
                drop(guard); // cancels the task
                return Err(task_err(
                    "input_required",
                    Some(
                        current
                            .status_message
                            .clone()
                            .unwrap_or_else(|| "the task needs input, and no elicitation or sampling handler is installed".into()),
                    ),
                ));
            }
            TaskStatus::Completed | TaskStatus::InputRequired => {
                // On `input_required` the server delivers the requests it
                // waits on (elicitation, sampling) while it answers
                // `tasks/result`, which blocks until the task is terminal —
                // the spec's advice, and what the official SDKs do. The
                // connection's handlers answer those requests meanwhile.
                // Should that wait fail (timeout, cancellation), the
                // unfinished task is cancelled.
                if current.status == TaskStatus::Completed {
                    guard.armed = false;
                }
                let result = request("tasks/result", json!({"taskId": task.task_id}), opts)?;
                guard.armed = false;
                return match extract_call_result(server, tool, &result)? {
                    McpCallResult::Task(_) => Err(McpError::Protocol {
                        server: server.to_owned(),
                        method: Some("tasks/result".into()),
                        message: format!("task {} returned another task handle", task.task_id),
                    }),
                    other => Ok(other),
                };
            }
            TaskStatus::Failed | TaskStatus::Cancelled => {
                guard.armed = false;
                return Err(task_err(
                    current.status.as_str(),
                    current.status_message.clone(),
                ));
            }
            TaskStatus::Working | TaskStatus::Other(_) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            drop(guard);
            return Err(task_err(
                "deadline",
                Some(format!(
                    "still {} after {:?}",
                    current.status,
                    now - started
                )),
            ));
        }
        let wait = clamp_poll_interval(current.poll_interval).min(deadline - now);
        if wait_or_cancel(wait, opts.cancel.as_ref()) {
            drop(guard);
            return Err(cancelled(opts));
        }
        // On error the guard cancels the task.
        let got = request("tasks/get", json!({"taskId": task.task_id}), opts)?;
        polls += 1;
        current = CreateTaskResult::parse(&got).ok_or_else(|| McpError::Protocol {
            server: server.to_owned(),
            method: Some("tasks/get".into()),
            message: format!("not a task: {}", crate::json::excerpt(&got)),
        })?;
        if let Some(cb) = &opts.on_progress {
            cb(&Progress {
                progress: polls as f64,
                total: None,
                message: current.status_message.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn parse_shapes() {
        let nested = json!({"task":{"taskId":"a","status":"working","pollInterval":100,"ttl":60000,"createdAt":"","lastUpdatedAt":""}});
        let t = CreateTaskResult::parse(&nested).unwrap();
        assert_eq!(t.task_id, "a");
        assert_eq!(t.poll_interval, Some(Duration::from_millis(100)));
        assert_eq!(t.ttl, Some(Duration::from_secs(60)));
        let top = json!({"taskId":"b","status":"completed","ttl":null});
        assert_eq!(
            CreateTaskResult::parse(&top).unwrap().status,
            TaskStatus::Completed
        );
        assert!(
            CreateTaskResult::parse(&json!({"content":[],"taskId":"x","status":"working"}))
                .is_none()
        );
        assert!(CreateTaskResult::parse(&json!({"task":{"status":"working"}})).is_none());
        assert!(CreateTaskResult::parse(&json!({"taskId":5,"status":"working"})).is_none());
        assert!(CreateTaskResult::parse(&json!([1])).is_none());
    }

    #[test]
    fn clamps() {
        assert_eq!(clamp_poll_interval(None), TASK_POLL_MIN);
        assert_eq!(
            clamp_poll_interval(Some(Duration::from_millis(1))),
            TASK_POLL_MIN
        );
        assert_eq!(
            clamp_poll_interval(Some(Duration::from_secs(3600))),
            TASK_POLL_MAX
        );
        assert_eq!(
            clamp_poll_interval(Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(poll_deadline(None), TASK_POLL_DEADLINE);
        assert_eq!(
            poll_deadline(Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
    }

    fn task(status: &str) -> CreateTaskResult {
        CreateTaskResult::parse(&json!({"taskId":"t","status":status,"pollInterval":1})).unwrap()
    }

    #[test]
    fn failed_task_is_typed_and_not_cancelled() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            Ok(json!({"taskId":"t","status":"failed","statusMessage":"disk on fire"}))
        };
        let e = drive_task(
            &req,
            "s",
            "tool",
            task("working"),
            &CallOptions::default(),
            true,
        )
        .unwrap_err();
        assert!(
            matches!(&e, McpError::Task { status, message: Some(m), .. } if status == "failed" && m == "disk on fire"),
            "{e}"
        );
        assert_eq!(*calls.borrow(), ["tasks/get"]);
    }

    #[test]
    fn cancel_sends_tasks_cancel() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            Ok(json!({}))
        };
        let token = CancelToken::new();
        token.cancel();
        let opts = CallOptions::default().cancel_token(token);
        let e = drive_task(&req, "s", "tool", task("working"), &opts, true).unwrap_err();
        assert!(matches!(e, McpError::Cancelled { .. }));
        assert_eq!(*calls.borrow(), ["tasks/cancel"]);
    }

    #[test]
    fn input_required_waits_on_tasks_result() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            match m {
                "tasks/get" => Ok(json!({"taskId":"t","status":"input_required"})),
                _ => Ok(json!({"content":[{"type":"text","text":"clarified"}]})),
            }
        };
        let r = drive_task(
            &req,
            "s",
            "tool",
            task("working"),
            &CallOptions::default(),
            true,
        )
        .unwrap();
        assert_eq!(r, McpCallResult::Text("clarified".into()));
        assert_eq!(*calls.borrow(), ["tasks/get", "tasks/result"]);
    }

    #[test]
    fn input_required_wait_that_fails_cancels_the_task() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            match m {
                "tasks/result" => Err(McpError::CallTimeout {
                    server: "s".into(),
                    method: "tasks/result".into(),
                    timeout: Duration::from_secs(1),
                }),
                _ => Ok(json!({})),
            }
        };
        let e = drive_task(
            &req,
            "s",
            "tool",
            task("input_required"),
            &CallOptions::default(),
            true,
        )
        .unwrap_err();
        assert!(matches!(e, McpError::CallTimeout { .. }), "{e}");
        assert_eq!(*calls.borrow(), ["tasks/result", "tasks/cancel"]);
    }

    #[test]
    fn input_required_without_a_handler_is_cancelled_at_once() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            Ok(json!({}))
        };
        let e = drive_task(
            &req,
            "s",
            "tool",
            task("input_required"),
            &CallOptions::default(),
            false,
        )
        .unwrap_err();
        assert!(
            matches!(&e, McpError::Task { status, .. } if status == "input_required"),
            "{e}"
        );
        assert_eq!(*calls.borrow(), ["tasks/cancel"]);
    }

    #[test]
    fn completed_fetches_result() {
        let req = |m: &str, _p: Value, _o: &CallOptions| match m {
            "tasks/result" => Ok(json!({"content":[{"type":"text","text":"job done"}]})),
            _ => Ok(json!({"taskId":"t","status":"completed"})),
        };
        let r = drive_task(
            &req,
            "s",
            "tool",
            task("completed"),
            &CallOptions::default(),
            true,
        )
        .unwrap();
        assert_eq!(r, McpCallResult::Text("job done".into()));
    }
}
