#!/usr/bin/env python3
"""Dependency-free MCP server protected by OAuth 2.1, with its own
authorization server, for the client's authorization tests.

Usage: python3 scripts/oauth_mcp_server.py [--port N] [--mode MODE]

Prints "READY <port>" on stdout once listening on 127.0.0.1.

Endpoints (one process plays both roles):
  POST /mcp                                   MCP (JSON responses); needs a valid Bearer token,
                                              else 401 with WWW-Authenticate (resource_metadata,
                                              scope="mcp:read")
  GET  /.well-known/oauth-protected-resource/mcp   PRM (or elsewhere, see modes)
  GET  /.well-known/oauth-authorization-server     AS metadata (S256, DCR, basic/post/none)
  POST /register                              RFC 7591: returns a client_id (+ secret unless the
                                              requested method is "none")
  GET  /authorize                             checks the PKCE params and redirects (302) to the
                                              redirect_uri with code and state
  POST /token                                 authorization_code (checks the verifier against the
                                              challenge, the resource and the client), refresh_token,
                                              client_credentials, and the JWT bearer grant
                                              (urn:ietf:params:oauth:grant-type:jwt-bearer) of an
                                              ID-JAG the IdP below issued for this AS and resource
  POST /idp/token                             an enterprise identity provider (SEP-990): RFC 8693
                                              token exchange of the ID token "id-token-alice"
                                              (subject_token_type id_token) for an ID-JAG
                                              (requested_token_type id-jag, audience = this AS,
                                              resource = this server's /mcp)
  GET  /_workload_token?aud=A[&exp=S]          plays a workload platform (SEP-1933): a JWT (HS256, a key
                                              only this process knows) for subject "workload-1" with
                                              audience A, expiring in S seconds (default 300; negative:
                                              already expired); POST /token takes it as a JWT bearer
                                              grant when its signature, aud (this AS) and exp hold,
                                              with or without client authentication
  GET  /_received                             JSON list of every request seen (method, path,
                                              headers, query, form) for the tests
  POST /_migrate                              (mode "migration") the resource moves to the second
                                              authorization server, issuer <base>/as2 (metadata at
                                              /.well-known/oauth-authorization-server/as2, endpoints
                                              under /as2/): the PRM names it from now on and tokens
                                              of the first are answered 401

The authorization server advertises authorization_response_iss_parameter_supported and puts
its issuer in the authorization response's `iss` (RFC 9207), unless a mode says otherwise.
Clients, codes and tokens belong to the issuer that made them: one authorization server does not
accept another's.

Tools: whoami -> text "<client_id> <scope>"; admin -> needs scope "mcp:admin", else 403 with
WWW-Authenticate error="insufficient_scope", scope="mcp:read mcp:admin".

Modes:
  default       as above
  short_tokens  access tokens expire after 1 s (expires_in: 1) and a refresh token is issued
  bad_state     /authorize returns a wrong state
  always_401    /mcp answers 401 even with a valid token
  never_admin   tokens never get mcp:admin, so step-up never succeeds
  no_pkce       AS metadata omits code_challenge_methods_supported
  idp_refuses   /idp/token answers 400 invalid_grant
  idp_wrong_type  /idp/token issues an access_token type instead of an ID-JAG
  mixup         the AS metadata declares issuer https://attacker.example (RFC 8414 3.3 mix-up)
  wrong_iss     the authorization response's iss is https://evil.example (RFC 9207)
  wrong_iss_error  as wrong_iss, and the response is an error whose description must not be shown
  unadvertised_wrong_iss  iss support is not advertised, but a wrong iss is sent anyway
  missing_iss   iss support is advertised, but the response has no iss
  normalized_iss  the response's iss is the issuer with a trailing slash
  no_iss        iss support is not advertised and no iss is sent (a pre-RFC 9207 server)
  insecure_endpoints  the AS metadata names a plain-http, non-loopback token endpoint
  migration     see POST /_migrate
  dpop          DPoP (RFC 9449): the AS advertises ES256, requires a valid proof at /token and
                issues token_type DPoP bound to the proof's key (cnf.jkt); /mcp then requires
                "Authorization: DPoP", a proof with the request's htm/htu, ath, that key and a
                jti never seen before (a Bearer presentation or a replayed proof is a 401)
  dpop_nonce    as dpop, and both sides demand their nonce (RFC 9449 sections 8 and 9): /token
                answers 400 use_dpop_nonce with DPoP-Nonce "as-nonce-1", /mcp 401 with
                WWW-Authenticate DPoP error="use_dpop_nonce" and DPoP-Nonce "rs-nonce-1"; every
                successful /mcp answer rotates the resource's nonce (DPoP-Nonce "rs-nonce-<n+1>"),
                which the next proof must carry
  legacy_subpath  a 2025-03-26 server: no protected resource metadata (404, and no
                resource_metadata in the challenge); the AS metadata at the origin declares issuer
                <base>/oauth, a path of the same origin
  legacy_mixup  as legacy_subpath, but the metadata declares issuer https://attacker.example
  GET  /_dpop   (dpop modes) {"jtis": accepted proof ids at /mcp, "as_nonce_challenges": n,
                "rs_nonce_challenges": n}
"""

import argparse
import base64
import hashlib
import hmac
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"mode": "default", "received": [], "clients": {}, "codes": {}, "tokens": {}, "refresh": {},
         "jags": {}, "migrated": False, "jtis": [], "as_nonce_challenges": 0, "rs_nonce_challenges": 0}
AS_NONCE = "as-nonce-1"
RS_NONCE = "rs-nonce-1"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
LOCK = threading.Lock()
WORKLOAD_KEY = secrets.token_bytes(32)


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def workload_jwt(aud, exp_in):
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    now = int(time.time())
    body = b64url(json.dumps({"iss": "https://platform.example", "sub": "workload-1", "aud": aud,
                              "iat": now, "exp": now + exp_in}).encode())
    sig = hmac.new(WORKLOAD_KEY, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(sig)}"


# ---- ES256 verification (P-256 ECDSA), dependency-free, for DPoP proofs ----------
P256_P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff
P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551
P256_A = P256_P - 3
P256_B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b
P256_G = (0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296,
          0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5)


def ec_add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0] and (a[1] + b[1]) % P256_P == 0:
        return None
    if a == b:
        lam = (3 * a[0] * a[0] + P256_A) * pow(2 * a[1], -1, P256_P) % P256_P
    else:
        lam = (b[1] - a[1]) * pow(b[0] - a[0], -1, P256_P) % P256_P
    x = (lam * lam - a[0] - b[0]) % P256_P
    return x, (lam * (a[0] - x) - a[1]) % P256_P


def ec_mul(k, pt):
    out = None
    while k:
        if k & 1:
            out = ec_add(out, pt)
        pt = ec_add(pt, pt)
        k >>= 1
    return out


def es256_verify(jwk, message, sig):
    """True when sig (r || s, 64 bytes) is a valid ES256 signature of message by jwk."""
    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256" or len(sig) != 64:
        return False
    q = (int.from_bytes(b64url_decode(jwk["x"]), "big"), int.from_bytes(b64url_decode(jwk["y"]), "big"))
    if (q[1] * q[1] - q[0] ** 3 - P256_A * q[0] - P256_B) % P256_P != 0:
        return False
    r, s_ = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")
    if not (0 < r < P256_N and 0 < s_ < P256_N):
        return False
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    w = pow(s_, -1, P256_N)
    x = ec_add(ec_mul(e * w % P256_N, P256_G), ec_mul(r * w % P256_N, q))
    return x is not None and x[0] % P256_N == r


def jwk_thumbprint(jwk):
    """RFC 7638: SHA-256 of the required members, sorted, no whitespace."""
    canon = json.dumps({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]},
                       separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canon.encode()).digest())


def check_proof(proof, htm, htu, nonce=None, token=None, jkt=None):
    """(claims, thumbprint) of a valid DPoP proof, else an error string."""
    if not proof or "," in proof:
        return "missing or multiple DPoP proofs"
    try:
        head_b, body_b, sig_b = proof.split(".")
        head = json.loads(b64url_decode(head_b))
        claims = json.loads(b64url_decode(body_b))
        sig = b64url_decode(sig_b)
    except (ValueError, TypeError):
        return "malformed proof"
    jwk = head.get("jwk") or {}
    if head.get("typ") != "dpop+jwt" or head.get("alg") != "ES256" or "d" in jwk:
        return "bad proof header"
    try:
        ok = es256_verify(jwk, f"{head_b}.{body_b}".encode(), sig)
    except (KeyError, ValueError, TypeError):
        ok = False
    if not ok:
        return "bad proof signature"
    if claims.get("htm") != htm or claims.get("htu") != htu:
        return "htm/htu mismatch"
    if not isinstance(claims.get("iat"), int) or abs(time.time() - claims["iat"]) > 300:
        return "iat out of range"
    if not isinstance(claims.get("jti"), str):
        return "no jti"
    if nonce is not None and claims.get("nonce") != nonce:
        return "use_dpop_nonce"
    if token is not None and claims.get("ath") != b64url(hashlib.sha256(token.encode()).digest()):
        return "ath mismatch"
    thumb = jwk_thumbprint(jwk)
    if jkt is not None and thumb != jkt:
        return "proof key is not the token's"
    return claims, thumb


def verify_workload_jwt(jwt, aud):
    """The claims of a valid workload JWT for audience aud, else an error string."""
    try:
        head, body, sig = jwt.split(".")
        want = hmac.new(WORKLOAD_KEY, f"{head}.{body}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(want, b64url_decode(sig)):
            return "bad signature"
        claims = json.loads(b64url_decode(body))
    except (ValueError, TypeError):
        return "malformed assertion"
    if claims.get("aud") != aud:
        return "wrong audience"
    if claims.get("exp", 0) < time.time():
        return "expired"
    return claims


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def as_prefix(self, path):
        """("/as2", rest) for the second authorization server's endpoints, else ("", path)."""
        if path.startswith("/as2/"):
            return "/as2", path[4:]
        return "", path

    def issuer(self, prefix=""):
        return self.base() + prefix

    def as_metadata(self, prefix):
        iss = self.issuer(prefix)
        mode = STATE["mode"]
        meta = {
            "issuer": "https://attacker.example" if mode in ("mixup", "legacy_mixup")
            else iss + "/oauth" if mode == "legacy_subpath" else iss,
            "authorization_endpoint": iss + "/authorize",
            "token_endpoint": "http://auth.example.invalid/token" if mode == "insecure_endpoints"
            else iss + "/token",
            "registration_endpoint": iss + "/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials",
                                      JWT_BEARER],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported":
                mode not in ("unadvertised_wrong_iss", "no_iss"),
        }
        if mode.startswith("dpop"):
            meta["dpop_signing_alg_values_supported"] = ["ES256"]
        if mode == "no_pkce":
            del meta["code_challenge_methods_supported"]
        return meta

    def send_json(self, status, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def record(self, form=None, body=None):
        u = urllib.parse.urlsplit(self.path)
        with LOCK:
            STATE["received"].append({
                "method": self.command, "path": u.path,
                "query": dict(urllib.parse.parse_qsl(u.query)),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "form": form, "body": body,
            })

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    # ---- GET -------------------------------------------------------------
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        self.record()
        if u.path == "/_received":
            with LOCK:
                return self.send_json(200, STATE["received"])
        if u.path == "/_dpop":
            with LOCK:
                return self.send_json(200, {k: STATE[k] for k in
                                            ("jtis", "as_nonce_challenges", "rs_nonce_challenges")})
        if u.path == "/_workload_token":
            q = dict(urllib.parse.parse_qsl(u.query))
            return self.send_json(200, {"token": workload_jwt(q.get("aud", ""), int(q.get("exp", "300")))})
        if u.path == "/.well-known/oauth-protected-resource/mcp" and STATE["mode"].startswith("legacy"):
            return self.send_json(404, {"error": "not found"})
        if u.path == "/.well-known/oauth-protected-resource/mcp":
            return self.send_json(200, {
                "resource": self.base() + "/mcp",
                "authorization_servers": [self.issuer("/as2" if STATE["migrated"] else "")],
                "scopes_supported": ["mcp:read", "mcp:admin"],
            })
        if u.path == "/.well-known/oauth-authorization-server":
            return self.send_json(200, self.as_metadata(""))
        if u.path == "/.well-known/oauth-authorization-server/as2" and STATE["mode"] == "migration":
            return self.send_json(200, self.as_metadata("/as2"))
        prefix, path = self.as_prefix(u.path)
        if path == "/authorize":
            q = dict(urllib.parse.parse_qsl(u.query))
            if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
                return self.send_json(400, {"error": "invalid_request", "error_description": "PKCE S256 required"})
            with LOCK:
                known = STATE["clients"].get(q.get("client_id"))
            if known is not None and known["issuer"] != self.issuer(prefix):
                return self.send_json(400, {"error": "invalid_client",
                                            "error_description": "client of another authorization server"})
            code = secrets.token_urlsafe(12)
            with LOCK:
                STATE["codes"][code] = dict(q, issuer=self.issuer(prefix))
            state = "wrong-state" if STATE["mode"] == "bad_state" else q.get("state", "")
            params = {"code": code, "state": state}
            mode = STATE["mode"]
            if mode == "wrong_iss_error":
                params = {"error": "access_denied", "error_description": "ATTACKER-CHOSEN TEXT", "state": state}
            if mode in ("wrong_iss", "wrong_iss_error", "unadvertised_wrong_iss"):
                params["iss"] = "https://evil.example"
            elif mode == "normalized_iss":
                params["iss"] = self.issuer(prefix) + "/"
            elif mode == "legacy_subpath":
                params["iss"] = self.issuer(prefix) + "/oauth"
            elif mode not in ("missing_iss", "no_iss"):
                params["iss"] = self.issuer(prefix)
            loc = q["redirect_uri"] + "?" + urllib.parse.urlencode(params)
            self.send_response(302)
            self.send_header("Location", loc)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_json(404, {"error": "not found"})

    # ---- POST ------------------------------------------------------------
    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        raw = self.read_body()
        prefix, path = self.as_prefix(u.path)
        if path == "/token" or u.path == "/idp/token":
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            self.record(form=form)
            return self.token(form, prefix) if path == "/token" else self.idp_token(form)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        self.record(body=body)
        if u.path == "/_migrate":
            with LOCK:
                STATE["migrated"] = True
            return self.send_json(200, {"migrated": True})
        if path == "/register":
            method = (body or {}).get("token_endpoint_auth_method", "client_secret_basic")
            cid = "dyn-" + secrets.token_hex(4)
            if prefix:
                cid = "as2-" + cid
            resp = {"client_id": cid, "token_endpoint_auth_method": method,
                    "redirect_uris": (body or {}).get("redirect_uris", [])}
            if method != "none":
                resp["client_secret"] = "sec-" + secrets.token_hex(8)
            with LOCK:
                STATE["clients"][cid] = dict(resp, issuer=self.issuer(prefix))
            return self.send_json(201, resp)
        if u.path == "/mcp":
            return self.mcp(body)
        self.send_json(404, {"error": "not found"})

    def client_auth(self, form, prefix=""):
        """Returns the authenticated client id, or None (also for a client of another AS)."""
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            cid, _, sec = base64.b64decode(auth[6:]).decode().partition(":")
            cid, sec = urllib.parse.unquote(cid), urllib.parse.unquote(sec)
        else:
            cid, sec = form.get("client_id"), form.get("client_secret")
        with LOCK:
            c = STATE["clients"].get(cid)
        if c is None:
            return cid if cid and cid.startswith("pre-") and sec == "pre-secret" else None
        if c["issuer"] != self.issuer(prefix):
            return None
        if c.get("client_secret") and c["client_secret"] != sec:
            return None
        return cid

    def issue(self, cid, scope, prefix="", jkt=None):
        tok = "at-" + secrets.token_hex(8)
        ref = "rt-" + secrets.token_hex(8)
        short = STATE["mode"] == "short_tokens"
        with LOCK:
            STATE["tokens"][tok] = {"client": cid, "scope": scope, "issuer": self.issuer(prefix),
                                    "exp": time.time() + (1 if short else 3600), "jkt": jkt}
            STATE["refresh"][ref] = {"client": cid, "scope": scope, "issuer": self.issuer(prefix)}
        resp = {"access_token": tok, "token_type": "DPoP" if jkt else "Bearer",
                "expires_in": 1 if short else 3600, "refresh_token": ref}
        if scope:
            resp["scope"] = scope
        return resp

    def idp_token(self, form):
        """The identity provider: ID token -> ID-JAG (RFC 8693 token exchange)."""
        if STATE["mode"] == "idp_refuses":
            return self.send_json(400, {"error": "invalid_grant", "error_description": "user not entitled"})
        want = {"grant_type": TOKEN_EXCHANGE, "subject_token": "id-token-alice",
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "requested_token_type": ID_JAG, "audience": self.base(), "resource": self.base() + "/mcp"}
        bad = [k for k, v in want.items() if form.get(k) != v]
        if bad:
            return self.send_json(400, {"error": "invalid_request", "error_description": "bad " + ",".join(bad)})
        jag = "jag-" + secrets.token_hex(8)
        with LOCK:
            STATE["jags"][jag] = {"sub": "alice", "aud": form["audience"], "resource": form["resource"],
                                  "scope": form.get("scope", "")}
        issued = "urn:ietf:params:oauth:token-type:access_token" if STATE["mode"] == "idp_wrong_type" else ID_JAG
        return self.send_json(200, {"access_token": jag, "issued_token_type": issued, "token_type": "N_A"})

    def token(self, form, prefix=""):
        if STATE["mode"].startswith("dpop"):
            return self.dpop_token(form, prefix)
        return self.plain_token(form, prefix)

    def dpop_token(self, form, prefix):
        """The token endpoint of the DPoP modes: a valid proof first (with the nonce in dpop_nonce)."""
        nonce = AS_NONCE if STATE["mode"] == "dpop_nonce" else None
        got = check_proof(self.headers.get("DPoP"), "POST", self.issuer(prefix) + "/token", nonce)
        if got == "use_dpop_nonce":
            with LOCK:
                STATE["as_nonce_challenges"] += 1
            return self.send_json(400, {"error": "use_dpop_nonce", "error_description": "nonce required"},
                                  {"DPoP-Nonce": AS_NONCE})
        if isinstance(got, str):
            return self.send_json(400, {"error": "invalid_dpop_proof", "error_description": got})
        return self.plain_token(form, prefix, got[1])

    def plain_token(self, form, prefix="", jkt=None):
        gt = form.get("grant_type")
        if gt == JWT_BEARER and form.get("assertion", "").count(".") == 2:
            # A workload identity grant: the assertion authenticates the workload.
            claims = verify_workload_jwt(form["assertion"], self.issuer(prefix))
            if isinstance(claims, str):
                return self.send_json(400, {"error": "invalid_grant", "error_description": claims})
            who = form.get("client_id") or "workload:" + claims["sub"]
            return self.send_json(200, self.issue(who, form.get("scope", ""), prefix, jkt))
        cid = self.client_auth(form, prefix)
        if cid is None:
            return self.send_json(401, {"error": "invalid_client"})
        gt = form.get("grant_type")
        if gt == "authorization_code":
            with LOCK:
                q = STATE["codes"].pop(form.get("code", ""), None)
            if q is None or q["issuer"] != self.issuer(prefix):
                return self.send_json(400, {"error": "invalid_grant"})
            if b64url(hashlib.sha256(form.get("code_verifier", "").encode()).digest()) != q["code_challenge"]:
                return self.send_json(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
            if form.get("resource") != self.base() + "/mcp" or q.get("resource") != self.base() + "/mcp":
                return self.send_json(400, {"error": "invalid_target"})
            if form.get("redirect_uri") != q.get("redirect_uri") or q.get("client_id") != cid:
                return self.send_json(400, {"error": "invalid_grant"})
            if q.get("dpop_jkt") and q["dpop_jkt"] != jkt:
                # RFC 9449 section 10: the code belongs to the key named at /authorize.
                return self.send_json(400, {"error": "invalid_grant", "error_description": "dpop_jkt mismatch"})
            scope = q.get("scope", "")
            if STATE["mode"] == "never_admin":
                scope = " ".join(s for s in scope.split() if s != "mcp:admin")
            return self.send_json(200, self.issue(cid, scope, prefix, jkt))
        if gt == "refresh_token":
            with LOCK:
                r = STATE["refresh"].get(form.get("refresh_token", ""))
            if r is None or r["client"] != cid or r["issuer"] != self.issuer(prefix):
                return self.send_json(400, {"error": "invalid_grant"})
            return self.send_json(200, self.issue(cid, r["scope"], prefix, jkt))
        if gt == "client_credentials":
            return self.send_json(200, self.issue(cid, form.get("scope", ""), prefix, jkt))
        if gt == JWT_BEARER:
            with LOCK:
                j = STATE["jags"].pop(form.get("assertion", ""), None)
            if j is None or j["aud"] != self.base() or j["resource"] != self.base() + "/mcp":
                return self.send_json(400, {"error": "invalid_grant"})
            return self.send_json(200, self.issue(cid, form.get("scope", j["scope"]), prefix, jkt))
        return self.send_json(400, {"error": "unsupported_grant_type"})

    def dpop_refusal(self, scheme, tok, t):
        """None when a DPoP-bound token comes with the DPoP scheme and a fresh proof of its key."""
        prm = self.base() + "/.well-known/oauth-protected-resource/mcp"
        nonce = STATE.get("rs_nonce", RS_NONCE) if STATE["mode"] == "dpop_nonce" else None
        if scheme != "DPoP":
            got = "bound token presented as Bearer"
        else:
            got = check_proof(self.headers.get("DPoP"), "POST", self.base() + "/mcp", nonce, tok, t["jkt"])
        if got == "use_dpop_nonce":
            with LOCK:
                STATE["rs_nonce_challenges"] += 1
            return self.send_json(401, {"error": "use_dpop_nonce"}, {
                "WWW-Authenticate": f'DPoP error="use_dpop_nonce", resource_metadata="{prm}"',
                "DPoP-Nonce": nonce})
        if not isinstance(got, str):
            with LOCK:
                if got[0]["jti"] in STATE["jtis"]:
                    got = "replayed proof"
                else:
                    STATE["jtis"].append(got[0]["jti"])
                    return None
        return self.send_json(401, {"error": "invalid_token", "error_description": got}, {
            "WWW-Authenticate": f'DPoP error="invalid_token", error_description="{got}", '
                                f'resource_metadata="{prm}"'})

    def mcp(self, msg):
        auth = self.headers.get("Authorization", "")
        scheme, _, tok = auth.partition(" ")
        with LOCK:
            t = STATE["tokens"].get(tok) if scheme in ("Bearer", "DPoP") else None
        if t is not None and t.get("jkt"):
            refusal = self.dpop_refusal(scheme, tok, t)
            if refusal is not None:
                return refusal
        prm = self.base() + "/.well-known/oauth-protected-resource/mcp"
        current = self.issuer("/as2" if STATE["migrated"] else "")
        if t is not None and t["issuer"] != current:
            t = None
        if t is None or t["exp"] < time.time() or STATE["mode"] == "always_401":
            challenge = 'Bearer scope="mcp:read"' if STATE["mode"].startswith("legacy") \
                else f'Bearer resource_metadata="{prm}", scope="mcp:read"'
            return self.send_json(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
        if not isinstance(msg, dict):
            return self.send_json(400, {"error": "bad request"})
        mid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
        if mid is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        def ok(result):
            headers = None
            if STATE["mode"] == "dpop_nonce":
                # RFC 9449 section 9: a new nonce on a success, for the next proof.
                with LOCK:
                    STATE["rs_rotations"] = STATE.get("rs_rotations", 0) + 1
                    STATE["rs_nonce"] = f"rs-nonce-{STATE['rs_rotations'] + 1}"
                    headers = {"DPoP-Nonce": STATE["rs_nonce"]}
            return self.send_json(200, {"jsonrpc": "2.0", "id": mid, "result": result}, headers)
        if method == "initialize":
            return ok({"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                       "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-demo", "version": "1.0.0"}})
        if method == "tools/list":
            return ok({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}},
                                 {"name": "admin", "inputSchema": {"type": "object"}}]})
        if method == "tools/call":
            name = params.get("name")
            if name == "admin" and "mcp:admin" not in t["scope"].split():
                return self.send_json(403, {"error": "insufficient_scope"}, {
                    "WWW-Authenticate": f'Bearer error="insufficient_scope", scope="mcp:read mcp:admin", resource_metadata="{prm}"'})
            text = f'{t["client"]} {t["scope"]}' if name == "whoami" else "admin ok"
            return ok({"content": [{"type": "text", "text": text}]})
        if method == "ping":
            return ok({})
        return self.send_json(200, {"jsonrpc": "2.0", "id": mid,
                                    "error": {"code": -32601, "message": f"method not found: {method}"}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="default")
    a = ap.parse_args()
    STATE["mode"] = a.mode
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print(f"READY {srv.server_address[1]}", flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), srv.shutdown()), daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
