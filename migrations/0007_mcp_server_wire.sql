-- skald-mcp store, schema version 7: which HTTP transport a server
-- configured as `http` was found to speak: 'http' (Streamable HTTP) or
-- 'sse' (the deprecated HTTP+SSE transport of MCP 2024-11-05, reached by the
-- spec's fallback when Streamable HTTP was refused). Kept with the server's
-- row, like its era, so that the next start goes to the right transport at
-- once instead of paying a refused POST first; tried again the other way
-- when the assumption turns out wrong. NULL: never connected over HTTP.

ALTER TABLE mcp_servers ADD COLUMN wire TEXT
    CHECK (wire IS NULL OR wire IN ('http', 'sse'));
