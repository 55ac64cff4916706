-- skald-mcp store, schema version 8: extra HTTP request headers of an
-- `http` or `sse` server (`McpServerConfig::headers`), as a JSON object of
-- strings; values may contain `${VAR}`, resolved when the server starts,
-- and are stored as given, like `api_key` and `env` (the database file is
-- 0600). Hosted servers that take a key in a header of their own
-- (`X-API-Key: …`) need them; the mcpServers files of other hosts carry
-- them.

ALTER TABLE mcp_servers ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
