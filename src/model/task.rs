//! Task handles (`CreateTaskResult`, the shape `tasks/get` answers too) and
//! task states: wire types, apart from the polling that drives them
//! ([`crate::task`]).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::lenient::lenient;

/// The state of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskStatus {
    /// Still running.
    Working,
    /// Waiting for input from the requestor.
    InputRequired,
    /// Finished; the result can be fetched.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
    /// A status this client does not know, kept verbatim.
    Other(String),
}

impl TaskStatus {
    /// Parses the wire value.
    pub fn parse(s: &str) -> TaskStatus {
        match s {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            other => TaskStatus::Other(other.to_owned()),
        }
    }

    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(s) => s,
        }
    }

    /// Whether the task can no longer change.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task handle, as returned by a task-augmented request or `tasks/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTaskResult {
    /// The durable task id.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// The server's human-readable status message.
    pub status_message: Option<String>,
    /// The polling interval the server suggests.
    pub poll_interval: Option<Duration>,
    /// How long the server keeps the task; `None` for unlimited or unknown.
    pub ttl: Option<Duration>,
}

impl CreateTaskResult {
    /// Recognises a task handle nested under `task` (the 2025-11-25 shape) or
    /// at the top level (the `tasks/get` shape). A normal `CallToolResult`
    /// (which has `content`) is never mistaken for one.
    pub fn parse(v: &Value) -> Option<CreateTaskResult> {
        if let Some(t) = v.get("task").filter(|t| t.is_object()) {
            return Self::parse_task(t);
        }
        if v.get("content").is_none() {
            return Self::parse_task(v);
        }
        None
    }

    fn parse_task(t: &Value) -> Option<CreateTaskResult> {
        let w = Task::deserialize(t).ok()?;
        Some(w.handle())
    }
}

/// A `Task` as sent: the 2025-11-25 names (`ttl`, `pollInterval`) and the
/// tasks extension's (`ttlMs`, `pollIntervalMs`) are both read.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Task {
    task_id: String,
    status: String,
    #[serde(default, deserialize_with = "lenient")]
    status_message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    poll_interval: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    poll_interval_ms: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    ttl: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    ttl_ms: Option<u64>,
}

impl Task {
    fn handle(self) -> CreateTaskResult {
        let ms = |a: Option<u64>, b: Option<u64>| a.or(b).map(Duration::from_millis);
        CreateTaskResult {
            task_id: self.task_id,
            status: TaskStatus::parse(&self.status),
            status_message: self.status_message,
            poll_interval: ms(self.poll_interval_ms, self.poll_interval),
            ttl: ms(self.ttl_ms, self.ttl),
        }
    }
}

/// A `DetailedTask` (tasks extension): what `tasks/get` and
/// `notifications/tasks` carry — the task and, by status, the input it
/// waits for, its result or its error.
#[derive(Debug, Clone)]
pub(crate) struct DetailedTask {
    /// The task's state.
    pub(crate) task: CreateTaskResult,
    /// `input_required`: the outstanding requests, by key.
    pub(crate) input_requests: Option<Map<String, Value>>,
    /// `completed`: the result of the original request.
    pub(crate) result: Option<Value>,
    /// `failed`: the JSON-RPC error of the original request.
    pub(crate) error: Option<TaskError>,
}

/// The JSON-RPC error a failed task carries.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct TaskError {
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) code: Option<i64>,
    #[serde(default, deserialize_with = "lenient")]
    pub(crate) message: Option<String>,
}

impl DetailedTask {
    /// Reads a `tasks/get` result (the task at its top level); `None` when
    /// it is no task.
    pub(crate) fn parse(v: Value) -> Option<DetailedTask> {
        let Value::Object(mut m) = v else { return None };
        let input_requests = match m.remove("inputRequests") {
            Some(Value::Object(r)) => Some(r),
            _ => None,
        };
        let result = m.remove("result").filter(Value::is_object);
        let error = m
            .remove("error")
            .and_then(|e| TaskError::deserialize(e).ok());
        let task = Task::deserialize(Value::Object(m)).ok()?.handle();
        Some(DetailedTask {
            task,
            input_requests,
            result,
            error,
        })
    }
}
