//! Tools: listing (every page, the cached list, the background refresh
//! after `notifications/tools/list_changed`) and calling (task mode, the
//! output-schema check, the modern HeaderMismatch retry).

use std::sync::OnceLock;

use super::*;

/// Lists shorter than this are searched from the start; longer ones get
/// an index by name the first time a call looks a tool up.
const TOOL_INDEX_FROM: usize = 32;

/// The longest tool name whose `tools/call` params are kept for the
/// thread's next call ([`CALL_PARAMS`]): the spec's limit for tool names,
/// so a hostile name cannot make the kept string large.
const KEPT_NAME_MAX: usize = 128;

thread_local! {
    /// The params object of this thread's last `tools/call`, kept for the
    /// next one: building `{"name":…,"arguments":…}` anew made a map, its
    /// hash table and two member names, and hashed both names (about 1.1k
    /// of the 13.7k instructions of a 128-byte call over stdio); refilled,
    /// it costs none of that. Taken while a call uses it, so a call made
    /// from within another (a progress callback) builds its own.
    static CALL_PARAMS: std::cell::Cell<Option<Value>> = const { std::cell::Cell::new(None) };
}

/// The name and the arguments of a params object [`call_params`] made,
/// when it still has just those two members.
fn name_and_arguments(params: &mut Value) -> Option<(&mut String, &mut Value)> {
    // The members in the order they were inserted (`preserve_order`):
    // reached without looking their names up.
    let mut members = params.as_object_mut()?.values_mut();
    match (members.next(), members.next(), members.next()) {
        (Some(Value::String(n)), Some(a), None) => Some((n, a)),
        _ => None,
    }
}

/// `{"name": name, "arguments": arguments}`, in the object kept by
/// [`CALL_PARAMS`] when there is one.
fn call_params(name: &str, arguments: Value) -> Value {
    if let Some(mut params) = CALL_PARAMS.with(std::cell::Cell::take) {
        if let Some((n, a)) = name_and_arguments(&mut params) {
            n.clear();
            n.push_str(name);
            *a = arguments;
            return params;
        }
    }
    Value::Object(serde_json::Map::from_iter([
        ("name".to_owned(), Value::String(name.to_owned())),
        ("arguments".to_owned(), arguments),
    ]))
}

/// Keeps `params` (made by [`call_params`]) for the thread's next call,
/// its arguments dropped, when it still has just its two members and a
/// short name.
fn keep_call_params(mut params: Value) {
    if let Some((n, a)) = name_and_arguments(&mut params) {
        if n.capacity() <= KEPT_NAME_MAX {
            *a = Value::Null;
            CALL_PARAMS.with(|c| c.set(Some(params)));
        }
    }
}

/// The last complete tool list, with what calls look up in it. One value
/// behind one lock, so a lookup never mixes two lists.
pub(crate) struct ToolCache {
    pub(crate) list: Arc<Vec<McpTool>>,
    /// Positions in `list` ordered by name, built by the first lookup in a
    /// long list (4 bytes a tool; a call on a list of 10 000 tools compared
    /// its name with each of them before). Not built for a list that is
    /// only listed, so listing costs no more than it did.
    by_name: OnceLock<Vec<u32>>,
    /// The input schemas of the tools that declare `x-mcp-header`
    /// parameters, parsed once while listing (only over HTTP in the modern
    /// era, the one place they are mirrored); empty for most servers.
    header_schemas: HashMap<String, Arc<Value>>,
}

impl ToolCache {
    /// The listed tool called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&McpTool> {
        if self.list.len() < TOOL_INDEX_FROM {
            return self.list.iter().find(|t| t.name == name);
        }
        let order = self.by_name.get_or_init(|| {
            let mut order: Vec<u32> = (0..self.list.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| {
                self.list[a as usize].name.cmp(&self.list[b as usize].name)
            });
            order
        });
        let at = order
            .binary_search_by(|&i| self.list[i as usize].name.as_str().cmp(name))
            .ok()?;
        Some(&self.list[order[at] as usize])
    }
}

impl Peer {
    pub(crate) fn list_tools(&self) -> Result<Vec<McpTool>> {
        self.refresh_tools().map(|t| t.as_ref().clone())
    }

    /// Lists every page of the tools and keeps the list as the cached one;
    /// the list is shared with the cache, not copied.
    ///
    /// What a list may cost is bounded: the decoder skips definitions past
    /// the caps unparsed (`jsonrpc_cap`), each page's definitions are moved
    /// into the tools they become (never copied whole), and at most
    /// `ClientOptions::max_tools` tools of at most `max_tool_list_bytes` of
    /// JSON text are kept, the rest dropped with a warning and a lifecycle
    /// line, and no further page asked for.
    pub(crate) fn refresh_tools(&self) -> Result<Arc<Vec<McpTool>>> {
        let mut tools: Vec<McpTool> = Vec::new();
        // Names seen, by hash, with the index of the tool that has it: a set
        // of the names themselves would hold a copy of each (a tenth of
        // what a small tool costs).
        let mut names: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
        let name_hash = std::collections::hash_map::RandomState::new();
        let mut header_schemas = HashMap::new();
        let mut seen_cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut complete = false;
        let mut cut = false;
        let max_tools = self.opts.max_tools;
        let max_bytes = self.opts.max_tool_list_bytes;
        let mut bytes = 0usize;
        let mirrors = self.out.mirrors_headers() && self.initialize()?.era == Era::Modern;
        for _ in 0..self.opts.max_tool_pages.max(1) {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let mut r =
                self.request_compact("tools/list", params.as_ref(), &CallOptions::default())?;
            let next = r
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
            // The decoder cut this page already (`jsonrpc_cap`), and kept
            // its definitions as text.
            cut |= r
                .as_object_mut()
                .and_then(|o| o.remove(crate::jsonrpc_cap::TOOLS_CUT))
                .is_some();
            let joined = r
                .as_object_mut()
                .and_then(|o| o.remove(crate::jsonrpc_cap::TOOLS_RAW))
                .is_some();
            let sep = crate::jsonrpc_cap::TOOLS_SEPARATOR;
            let page = match r.get_mut("tools").map(Value::take) {
                Some(Value::String(text)) if joined => text,
                // Parsed (not through the decoder): joined here.
                Some(Value::Array(a)) => {
                    let mut text = String::new();
                    for (i, t) in a.iter().enumerate() {
                        if i > 0 {
                            text.push(sep);
                        }
                        text.push_str(&t.to_string());
                    }
                    text
                }
                _ => {
                    crate::jsonrpc_cap::restore(&mut r);
                    return Err(McpError::Protocol {
                        server: self.name.clone(),
                        method: Some("tools/list".into()),
                        message: format!("result has no tools array: {}", excerpt(&r)),
                    });
                }
            };
            drop(r);
            // The page's tools share its text (`McpTool::from_text`).
            let page = Arc::new(page);
            let mut start = 0usize;
            for def in page.split(sep) {
                let range = start..start + def.len();
                start = range.end + sep.len_utf8();
                if def.is_empty() {
                    continue;
                }
                bytes = bytes.saturating_add(def.len());
                if tools.len() >= max_tools || bytes > max_bytes {
                    cut = true;
                    break;
                }
                match McpTool::from_text(&page, range) {
                    Ok(tool) => {
                        let mut header_schema = None;
                        if mirrors {
                            let schema = tool.input_schema_json();
                            let checked = if crate::model::declares_headers(schema) {
                                serde_json::from_str::<Value>(schema)
                                    .map_err(|e| e.to_string())
                                    .and_then(|s| crate::model::validate_tool(&s).map(|()| Some(s)))
                            } else {
                                Ok(None)
                            };
                            match checked {
                                Ok(s) => header_schema = s,
                                Err(why) => {
                                    // 2026-07-28 over HTTP: a tool whose header
                                    // declarations are invalid is left out.
                                    ::log::warn!(target: "mcp_client", "[{}] tool '{}' left out: {why}", self.name, tool.name);
                                    self.lifecycle(format!("tool '{}' left out: {why}", tool.name));
                                    continue;
                                }
                            }
                        }
                        use std::hash::BuildHasher as _;
                        let h = name_hash.hash_one(&tool.name);
                        let duplicate = match names.get(&h) {
                            None => false,
                            Some(&i) if tools[i as usize].name == tool.name => true,
                            // Two names with one hash: look the long way.
                            Some(_) => tools.iter().any(|t| t.name == tool.name),
                        };
                        if !duplicate {
                            names.entry(h).or_insert(tools.len() as u32);
                            if let Some(schema) = header_schema {
                                header_schemas.insert(tool.name.clone(), Arc::new(schema));
                            }
                            tools.push(tool);
                        } else {
                            ::log::warn!(target: "mcp_client", "[{}] duplicate tool '{}' ignored", self.name, tool.name);
                        }
                    }
                    Err(m) => {
                        let shown: String = def.chars().take(200).collect();
                        ::log::warn!(target: "mcp_client", "[{}] skipping tool: {m}: {shown}", self.name)
                    }
                }
            }
            if cut {
                // The decoder skips what lies past the caps unparsed: how
                // many tools there were is not known, only that there were
                // more.
                let n = tools.len();
                ::log::warn!(target: "mcp_client", "[{}] tools/list: kept the first {n} tools (caps: {max_tools} tools, {max_bytes} bytes); the server lists more", self.name);
                self.lifecycle(format!(
                    "tools/list: kept the first {n} tools (ClientOptions::max_tools {max_tools}, max_tool_list_bytes {max_bytes}); the server lists more"
                ));
                complete = true;
                break;
            }
            drop(page);
            match next {
                Some(c) => {
                    if !seen_cursors.insert(c.clone()) {
                        ::log::warn!(target: "mcp_client", "[{}] tools/list repeated cursor {c:?}; stopping", self.name);
                        complete = true;
                        break;
                    }
                    cursor = Some(c);
                }
                None => {
                    complete = true;
                    break;
                }
            }
        }
        if !complete {
            ::log::warn!(
                target: "mcp_client",
                "[{}] tools/list still had a cursor after {} pages; the list may be truncated",
                self.name,
                self.opts.max_tool_pages
            );
        }
        tools.shrink_to_fit();
        let tools = Arc::new(tools);
        *self.tools.write() = Some(Arc::new(ToolCache {
            list: Arc::clone(&tools),
            by_name: OnceLock::new(),
            header_schemas,
        }));
        Ok(tools)
    }

    /// The last complete tool list, if tools were listed.
    pub(crate) fn cached_tools(&self) -> Option<Arc<Vec<McpTool>>> {
        self.tools.read().as_ref().map(|c| Arc::clone(&c.list))
    }

    /// The last complete tool list with its lookups, if tools were listed.
    pub(crate) fn tool_cache(&self) -> Option<Arc<ToolCache>> {
        self.tools.read().clone()
    }

    /// The input schema of listed tool `name` if it declares parameters
    /// to mirror in headers (`x-mcp-header`); `None` for every other tool.
    pub(crate) fn header_schema(&self, name: &str) -> Option<Arc<Value>> {
        // An empty map (most servers) answers without hashing the name.
        self.tools
            .read()
            .as_ref()?
            .header_schemas
            .get(name)
            .cloned()
    }

    /// Re-lists the tools on a thread of its own (after
    /// `notifications/tools/list_changed`); one refresh at a time, and a
    /// notification that arrives during a refresh triggers one more.
    pub(super) fn refresh_tools_in_background(self: &Arc<Self>) {
        if self.refreshing_tools.swap(true, Ordering::AcqRel) {
            self.tools_stale.store(true, Ordering::Release);
            return;
        }
        let peer = Arc::clone(self);
        let spawned = crate::threads::spawn(
            format!("mcp-{}-refresh", self.name),
            crate::limits::READER_THREAD_STACK,
            move || loop {
                peer.tools_stale.store(false, Ordering::Release);
                match peer.refresh_tools() {
                    Ok(t) => {
                        ::log::debug!(target: "mcp_client", "[{}] tool list refreshed: {} tools", peer.name, t.len())
                    }
                    Err(e) => {
                        ::log::warn!(target: "mcp_client", "[{}] tool list refresh failed: {e}", peer.name)
                    }
                }
                peer.refreshing_tools.store(false, Ordering::Release);
                if !peer.tools_stale.load(Ordering::Acquire)
                    || peer.refreshing_tools.swap(true, Ordering::AcqRel)
                {
                    return;
                }
            },
        );
        if spawned.is_err() {
            self.refreshing_tools.store(false, Ordering::Release);
        }
    }

    pub(super) fn check_output_schema(
        &self,
        tool: Option<&McpTool>,
        name: &str,
        result: &McpCallResult,
    ) -> Result<()> {
        let Some(schema) = tool.and_then(|t| t.output_schema.as_ref()) else {
            return Ok(());
        };
        let policy = self.opts.output_schema_validation;
        if policy == OutputSchemaPolicy::Off {
            return Ok(());
        }
        let structured = match result {
            McpCallResult::Json { value, .. } => Some(value),
            McpCallResult::Media { structured, .. } => structured.as_ref(),
            _ => None,
        };
        let verdict = match structured {
            Some(v) => crate::schema::validate(schema, v),
            None => {
                Err("the tool declares an outputSchema but returned no structuredContent".into())
            }
        };
        match verdict {
            Ok(()) => Ok(()),
            Err(message) if policy == OutputSchemaPolicy::Error => Err(McpError::SchemaMismatch {
                server: self.name.clone(),
                tool: name.to_owned(),
                message,
            }),
            Err(message) => {
                ::log::warn!(target: "mcp_client", "[{}] tool '{name}': result does not match its outputSchema: {message}", self.name);
                Ok(())
            }
        }
    }

    pub(crate) fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<McpCallResult> {
        let arguments = match arguments {
            Value::Null => json!({}),
            v @ Value::Object(_) => v,
            other => {
                return Err(McpError::InvalidInput {
                    server: self.name.clone(),
                    message: format!(
                        "arguments of tool '{name}' must be a JSON object, got {}",
                        excerpt(&other)
                    ),
                })
            }
        };
        // The cached list is shared, not copied: the tool is looked up in it.
        let tools = self.tool_cache();
        let tool = tools.as_deref().and_then(|t| t.find(name));
        let support = tool.map(|t| t.task_support).unwrap_or_default();
        // Built by hand: `json!` would copy the arguments (it serializes
        // every value it is given).
        let mut params = call_params(name, arguments);
        // The 2025-11-25 opt-in; under the tasks extension the server alone
        // decides, and the request carries no preference.
        if support.wants_task() && self.era() != Some(Era::Modern) {
            params["task"] = match opts.task_ttl {
                Some(ttl) => json!({"ttl": ttl.as_millis() as u64}),
                None => json!({}),
            };
        }
        // (A header mismatch over HTTP is retried once after listing the
        // tools again, in `Peer::request_modern`.)
        // Compact: the usual single text block is taken as its text.
        let result = self.request_compact("tools/call", Some(&params), opts);
        keep_call_params(params);
        let result = result?;
        let result = match extract_call_result_owned(&self.name, name, result)? {
            McpCallResult::Task(task) => {
                let req = |m: &str, p: Value, o: &CallOptions| self.request(m, Some(p), o);
                let answer = |requests: &serde_json::Map<String, Value>| {
                    self.answer_input_requests("tools/call", requests)
                };
                let flavour = if self.era() == Some(crate::era::Era::Modern) {
                    Flavour::Extension { answer: &answer }
                } else {
                    Flavour::Legacy {
                        can_provide_input: self.opts.elicitation.is_some()
                            || self.opts.sampling.is_some(),
                    }
                };
                drive_task(&req, &self.name, name, task, opts, flavour)?
            }
            other => other,
        };
        self.check_output_schema(tool, name, &result)?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_of(names: &[String]) -> ToolCache {
        let text = Arc::new(
            names
                .iter()
                .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}).to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        );
        let mut list = Vec::new();
        let mut start = 0;
        for def in text.split('\n') {
            list.push(McpTool::from_text(&text, start..start + def.len()).unwrap());
            start += def.len() + 1;
        }
        ToolCache {
            list: Arc::new(list),
            by_name: OnceLock::new(),
            header_schemas: HashMap::new(),
        }
    }

    /// A lookup finds every listed tool and nothing else, in a short list
    /// (searched) and in a long one (indexed by name on first use).
    #[test]
    fn tools_are_found_by_name_in_short_and_long_lists() {
        for n in [3, TOOL_INDEX_FROM, 1000] {
            // Not in name order, with names that share prefixes.
            let names: Vec<String> = (0..n).rev().map(|i| format!("t{}", i * 7 % n)).collect();
            let cache = cache_of(&names);
            for name in &names {
                assert_eq!(
                    cache.find(name).map(|t| t.name.as_str()),
                    Some(name.as_str())
                );
            }
            for missing in ["", "t", &format!("t{n}"), "t0 ", "zzz"] {
                assert!(cache.find(missing).is_none(), "{missing:?} in {n}");
            }
            assert_eq!(cache.by_name.get().is_some(), n >= TOOL_INDEX_FROM);
        }
    }

    /// The kept params object is refilled with each call's name and
    /// arguments and nothing else, and is not kept when a call added a
    /// member (`task`) or used a long name.
    #[test]
    fn call_params_are_refilled_and_kept_only_in_their_shape() {
        let kept = || {
            CALL_PARAMS.with(|c| {
                let v = c.take();
                let some = v.is_some();
                c.set(v);
                some
            })
        };
        CALL_PARAMS.with(|c| c.set(None));
        let p = call_params("first", json!({"a": 1, "b": [2]}));
        assert_eq!(
            p.to_string(),
            r#"{"name":"first","arguments":{"a":1,"b":[2]}}"#
        );
        keep_call_params(p);
        assert!(kept());
        // Refilled: a shorter name, other arguments, the old ones gone.
        let p = call_params("2nd", json!({}));
        assert!(!kept(), "taken while a call uses it");
        // A call made from within that one builds its own.
        let nested = call_params("nested", json!({"n": true}));
        assert_eq!(
            nested.to_string(),
            r#"{"name":"nested","arguments":{"n":true}}"#
        );
        assert_eq!(p.to_string(), r#"{"name":"2nd","arguments":{}}"#);
        keep_call_params(nested);
        keep_call_params(p);
        let p = call_params("third", json!({"x": "y"}));
        assert_eq!(p.to_string(), r#"{"name":"third","arguments":{"x":"y"}}"#);
        // A task opt-in added a member: not kept.
        let mut with_task = p;
        with_task["task"] = json!({});
        keep_call_params(with_task);
        assert!(!kept());
        // A name past the spec's limit: not kept (its string would stay).
        let long = "n".repeat(KEPT_NAME_MAX + 1);
        let p = call_params(&long, json!({}));
        assert_eq!(p["name"], json!(long));
        keep_call_params(p);
        assert!(!kept());
        let p = call_params("short", json!({}));
        keep_call_params(p);
        assert!(kept());
        let p = call_params(&long, json!({}));
        keep_call_params(p);
        assert!(!kept(), "grown past the limit by a long name");
    }
}
