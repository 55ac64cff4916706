//! Tasks: a server may defer an expensive `tools/call` and answer with a
//! task handle instead of the result. The client polls the task to its end
//! on the caller's thread (block-and-poll) and hands the caller the final
//! result, never the handle. One driver serves both flavours:
//!
//! - **2025-11-25** (legacy era, `tasks` in the core): `tasks/get` until the
//!   task ends, then `tasks/result` for the result. A task that reports
//!   `input_required` is waited on through `tasks/result` at once: the
//!   server sends the requests it waits on (elicitation, sampling) while
//!   that request is open, and the connection's handlers answer them.
//! - **the tasks extension** (`io.modelcontextprotocol/tasks`, 2026-07-28):
//!   `tasks/get` until the task ends; the terminal task carries the result
//!   (or the JSON-RPC error) itself. A task in `input_required` lists its
//!   `inputRequests`; the same handlers answer them and the answers go back
//!   with `tasks/update` (each key once, however often a poll repeats it).
//!
//! Either way the poll interval is clamped to [[`TASK_POLL_MIN`],
//! [`TASK_POLL_MAX`]], the task is abandoned at its `ttl` (else
//! [`TASK_POLL_DEADLINE`]), and an abandoned task (the caller cancelled, a
//! request failed, the deadline passed) gets a `tasks/cancel`.

use std::time::{Duration, Instant};

use crossbeam_channel::{after, never, select};
use serde_json::{json, Map, Value};

use crate::cancel::{tasks_cancel_request, CancelToken};
use crate::client::{CallOptions, Progress};
use crate::error::{McpError, Result};
use crate::limits::{TASK_POLL_DEADLINE, TASK_POLL_MAX, TASK_POLL_MIN};
use crate::result::{extract_call_result, McpCallResult};

use crate::model::DetailedTask;
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

/// Answers input requests (by key) with the connection's handlers.
pub(crate) type InputFn<'a> = dyn Fn(&Map<String, Value>) -> Result<Map<String, Value>> + 'a;

/// Which kind of task a handle belongs to.
pub(crate) enum Flavour<'a> {
    /// A 2025-11-25 task: the result comes from `tasks/result`.
    /// `can_provide_input`: whether the connection has a handler
    /// (elicitation or sampling) that could answer what an `input_required`
    /// task asks for; if not, such a task is cancelled at once with a typed
    /// error instead of waiting for input that cannot come.
    Legacy { can_provide_input: bool },
    /// A task of the tasks extension: the result comes with the terminal
    /// task, input goes back with `tasks/update`, answered by `answer`.
    Extension { answer: &'a InputFn<'a> },
}

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

/// Between two polls of `task`: past the deadline (`window` is when the
/// polling started and when it must end) the task is given up, else the
/// server's poll interval (clamped; none when `now`) is waited unless the
/// caller cancels first. An error abandons the task: the caller's
/// [`TaskCancelGuard`] then sends `tasks/cancel`.
fn await_next_poll(
    server: &str,
    task: &CreateTaskResult,
    window: (Instant, Instant),
    now: bool,
    opts: &CallOptions,
) -> Result<()> {
    let (started, deadline) = window;
    let at = Instant::now();
    if at >= deadline {
        return Err(McpError::Task {
            server: server.to_owned(),
            task_id: task.task_id.clone(),
            status: "deadline".into(),
            message: Some(format!("still {} after {:?}", task.status, at - started)),
        });
    }
    if now {
        return Ok(());
    }
    let wait = clamp_poll_interval(task.poll_interval).min(deadline - at);
    if wait_or_cancel(wait, opts.cancel.as_ref()) {
        return Err(McpError::Cancelled {
            server: server.to_owned(),
            method: "tools/call".into(),
            reason: opts
                .cancel
                .as_ref()
                .and_then(CancelToken::reason)
                .unwrap_or_default(),
        });
    }
    Ok(())
}

/// Each poll is reported as progress (the count, the status message).
fn report_poll(opts: &CallOptions, polls: u64, task: &CreateTaskResult) {
    if let Some(cb) = &opts.on_progress {
        cb(&Progress {
            progress: polls as f64,
            total: None,
            message: task.status_message.clone(),
        });
    }
}

/// Polls `task` to its end and returns the real result.
pub(crate) fn drive_task(
    request: &RequestFn<'_>,
    server: &str,
    tool: &str,
    task: CreateTaskResult,
    opts: &CallOptions,
    flavour: Flavour<'_>,
) -> Result<McpCallResult> {
    let can_provide_input = match flavour {
        Flavour::Legacy { can_provide_input } => can_provide_input,
        Flavour::Extension { answer } => {
            return drive_extension_task(request, answer, server, tool, task, opts)
        }
    };
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
        // On error the guard cancels the task.
        await_next_poll(server, &current, (started, deadline), false, opts)?;
        let got = request("tasks/get", json!({"taskId": task.task_id}), opts)?;
        polls += 1;
        current = CreateTaskResult::parse(&got).ok_or_else(|| McpError::Protocol {
            server: server.to_owned(),
            method: Some("tasks/get".into()),
            message: format!("not a task: {}", crate::json::excerpt(&got)),
        })?;
        report_poll(opts, polls, &current);
    }
}

/// [`drive_task`] for a task of the tasks extension.
fn drive_extension_task(
    request: &RequestFn<'_>,
    answer: &InputFn<'_>,
    server: &str,
    tool: &str,
    task: CreateTaskResult,
    opts: &CallOptions,
) -> Result<McpCallResult> {
    let started = Instant::now();
    let deadline = started + poll_deadline(task.ttl);
    let task_id = task.task_id.clone();
    let mut guard = TaskCancelGuard {
        request,
        task_id: task_id.clone(),
        armed: true,
    };
    let task_err = |status: &str, message: Option<String>| McpError::Task {
        server: server.to_owned(),
        task_id: task_id.clone(),
        status: status.to_owned(),
        message,
    };
    let protocol = |method: &str, message: String| McpError::Protocol {
        server: server.to_owned(),
        method: Some(method.to_owned()),
        message,
    };
    let mut current = DetailedTask {
        task,
        input_requests: None,
        result: None,
        error: None,
    };
    // The keys answered already: a poll repeats an outstanding request
    // until the server has taken the answer, and nobody is asked twice.
    let mut answered = std::collections::HashSet::new();
    let mut polls: u64 = 0;
    loop {
        // A handle that says `input_required` carries no requests: fetch
        // them at once instead of waiting a poll interval.
        let mut poll_now = false;
        match &current.task.status {
            TaskStatus::Completed => {
                guard.armed = false;
                let result = current.result.take().ok_or_else(|| {
                    protocol(
                        "tasks/get",
                        format!("task {task_id} completed without a result"),
                    )
                })?;
                return match extract_call_result(server, tool, &result)? {
                    McpCallResult::Task(_) => Err(protocol(
                        "tasks/get",
                        format!("task {task_id} completed with another task handle"),
                    )),
                    other => Ok(other),
                };
            }
            TaskStatus::Failed => {
                guard.armed = false;
                let e = current.error.take().unwrap_or_default();
                let message = match (e.message, e.code) {
                    (Some(m), Some(c)) => Some(format!("{m} (JSON-RPC error {c})")),
                    (Some(m), None) => Some(m),
                    (None, _) => current.task.status_message.clone(),
                };
                return Err(task_err("failed", message));
            }
            TaskStatus::Cancelled => {
                guard.armed = false;
                return Err(task_err("cancelled", current.task.status_message.clone()));
            }
            TaskStatus::InputRequired => match current.input_requests.take() {
                Some(requests) => {
                    let fresh: Map<String, Value> = requests
                        .into_iter()
                        .filter(|(k, _)| !answered.contains(k))
                        .collect();
                    if !fresh.is_empty() {
                        // On an error (no handler for a kind, a refused
                        // sampling) the guard cancels the task.
                        let responses = answer(&fresh)?;
                        answered.extend(fresh.keys().cloned());
                        request(
                            "tasks/update",
                            json!({"taskId": task_id, "inputResponses": responses}),
                            opts,
                        )?;
                    }
                }
                None => poll_now = polls == 0,
            },
            TaskStatus::Working | TaskStatus::Other(_) => {}
        }
        // On error the guard cancels the task.
        await_next_poll(server, &current.task, (started, deadline), poll_now, opts)?;
        let got = request("tasks/get", json!({"taskId": task_id}), opts)?;
        polls += 1;
        let excerpt = crate::json::excerpt(&got);
        current = DetailedTask::parse(got)
            .filter(|t| t.task.task_id == task_id)
            .ok_or_else(|| protocol("tasks/get", format!("not task {task_id}: {excerpt}")))?;
        report_poll(opts, polls, &current.task);
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
            Flavour::Legacy {
                can_provide_input: true,
            },
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
        let e = drive_task(
            &req,
            "s",
            "tool",
            task("working"),
            &opts,
            Flavour::Legacy {
                can_provide_input: true,
            },
        )
        .unwrap_err();
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
            Flavour::Legacy {
                can_provide_input: true,
            },
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
            Flavour::Legacy {
                can_provide_input: true,
            },
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
            Flavour::Legacy {
                can_provide_input: false,
            },
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
            Flavour::Legacy {
                can_provide_input: true,
            },
        )
        .unwrap();
        assert_eq!(r, McpCallResult::Text("job done".into()));
    }

    fn ext_task(status: &str) -> CreateTaskResult {
        CreateTaskResult::parse(
            &json!({"resultType":"task","taskId":"t","status":status,"pollIntervalMs":1,"ttlMs":null}),
        )
        .unwrap()
    }

    #[test]
    fn extension_shape_is_read() {
        let t = ext_task("working");
        assert_eq!(t.poll_interval, Some(Duration::from_millis(1)));
        assert_eq!(t.ttl, None, "ttlMs null is unlimited");
    }

    #[test]
    fn extension_task_answers_input_once_and_takes_the_inline_result() {
        let calls = RefCell::new(Vec::<(String, Value)>::new());
        let gets = std::cell::Cell::new(0);
        let req = |m: &str, p: Value, _o: &CallOptions| {
            calls.borrow_mut().push((m.to_owned(), p));
            match m {
                "tasks/get" => {
                    gets.set(gets.get() + 1);
                    Ok(match gets.get() {
                        // The same outstanding request twice, then done.
                        1 | 2 => {
                            json!({"resultType":"complete","taskId":"t","status":"input_required",
                            "pollIntervalMs":1,"inputRequests":{"name":{"method":"elicitation/create","params":{}}}})
                        }
                        _ => json!({"resultType":"complete","taskId":"t","status":"completed",
                            "result":{"content":[{"type":"text","text":"Hello, Luca!"}],"isError":false}}),
                    })
                }
                _ => Ok(json!({"resultType":"complete"})),
            }
        };
        let asked = RefCell::new(0);
        let answer = |r: &Map<String, Value>| {
            *asked.borrow_mut() += 1;
            assert!(r.contains_key("name"));
            let mut m = Map::new();
            m.insert(
                "name".into(),
                json!({"action":"accept","content":{"input":"Luca"}}),
            );
            Ok(m)
        };
        let r = drive_task(
            &req,
            "s",
            "tool",
            ext_task("working"),
            &CallOptions::default(),
            Flavour::Extension { answer: &answer },
        )
        .unwrap();
        assert_eq!(r, McpCallResult::Text("Hello, Luca!".into()));
        assert_eq!(*asked.borrow(), 1, "a repeated key is answered once");
        let methods: Vec<_> = calls.borrow().iter().map(|(m, _)| m.clone()).collect();
        assert_eq!(
            methods,
            ["tasks/get", "tasks/update", "tasks/get", "tasks/get"]
        );
        assert_eq!(
            calls.borrow()[1].1,
            json!({"taskId":"t","inputResponses":{"name":{"action":"accept","content":{"input":"Luca"}}}})
        );
    }

    #[test]
    fn extension_task_failure_carries_the_rpc_error_and_is_not_cancelled() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            Ok(
                json!({"taskId":"t","status":"failed","statusMessage":"Tool execution failed",
                "error":{"code":-32603,"message":"API rate limit exceeded"}}),
            )
        };
        let answer = |_: &Map<String, Value>| Ok(Map::new());
        let e = drive_task(
            &req,
            "s",
            "tool",
            ext_task("working"),
            &CallOptions::default(),
            Flavour::Extension { answer: &answer },
        )
        .unwrap_err();
        assert!(
            matches!(&e, McpError::Task { status, message: Some(m), .. }
                if status == "failed" && m.contains("API rate limit exceeded") && m.contains("-32603")),
            "{e}"
        );
        assert_eq!(*calls.borrow(), ["tasks/get"]);
    }

    #[test]
    fn extension_task_without_an_answer_is_cancelled() {
        let calls = RefCell::new(Vec::new());
        let req = |m: &str, _p: Value, _o: &CallOptions| {
            calls.borrow_mut().push(m.to_owned());
            Ok(json!({"taskId":"t","status":"input_required",
                "inputRequests":{"k":{"method":"sampling/createMessage","params":{}}}}))
        };
        let answer = |_: &Map<String, Value>| {
            Err(McpError::InputRequired {
                server: "s".into(),
                method: "tools/call".into(),
                requests: vec!["sampling/createMessage".into()],
            })
        };
        let e = drive_task(
            &req,
            "s",
            "tool",
            ext_task("input_required"),
            &CallOptions::default(),
            Flavour::Extension { answer: &answer },
        )
        .unwrap_err();
        assert!(matches!(e, McpError::InputRequired { .. }), "{e}");
        // An input_required handle is polled at once (no interval), then
        // the task that cannot get its input is cancelled.
        assert_eq!(*calls.borrow(), ["tasks/get", "tasks/cancel"]);
    }

    #[test]
    fn extension_task_of_another_id_is_refused() {
        let req = |m: &str, _p: Value, _o: &CallOptions| match m {
            "tasks/get" => {
                Ok(json!({"taskId":"other","status":"completed","result":{"content":[]}}))
            }
            _ => Ok(json!({})),
        };
        let answer = |_: &Map<String, Value>| Ok(Map::new());
        let e = drive_task(
            &req,
            "s",
            "tool",
            ext_task("working"),
            &CallOptions::default(),
            Flavour::Extension { answer: &answer },
        )
        .unwrap_err();
        assert!(matches!(e, McpError::Protocol { .. }), "{e}");
    }
}
