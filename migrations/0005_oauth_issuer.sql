-- skald-mcp store, schema version 5: the authorization server (its RFC 8414
-- `issuer`) that issued a server's OAuth tokens and client registration.
--
-- The refresh token and the client credentials are only sent back to that
-- issuer (MCP 2026-07-28, "Authorization Server Binding"). Rows saved before
-- this version get NULL, "unknown": their access token is still presented to
-- the resource, but their refresh token and client are never sent to any
-- authorization server again, so the next authorization starts afresh
-- rather than guessing which server they belong to.

ALTER TABLE mcp_oauth ADD COLUMN issuer TEXT;
