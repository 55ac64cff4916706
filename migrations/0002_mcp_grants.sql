-- skald-mcp store, schema version 2: lazy tool loading grants.
--
-- A group is an MCP server name or a reserved keyword such as 'config'.
-- Root agents persist their grants per session; sub-agents per stack frame,
-- and a frame's grants are deleted when it terminates.

CREATE TABLE session_mcp_grants (
    session_id TEXT NOT NULL,
    group_name TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (session_id, group_name)
) WITHOUT ROWID;

CREATE TABLE stack_mcp_grants (
    stack_id   TEXT NOT NULL,
    group_name TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (stack_id, group_name)
) WITHOUT ROWID;
