//! The grants: the authorization-code flow with PKCE, client
//! credentials, cross-app access (an ID token exchanged for an ID-JAG),
//! the token request itself and refreshing.

use super::*;

impl OAuthClient {
    pub(super) fn authorize(
        &self,
        challenge: &BearerChallenge,
        previous_scope: Option<String>,
    ) -> Result<()> {
        let resource_meta = self.discover_resource(challenge)?;
        let resource = match &resource_meta {
            Some(rm) => {
                let mine = url::canonical_resource(&self.server_url);
                if let Some(r) = &rm.resource {
                    let theirs = url::canonical_resource(r);
                    if !(mine == theirs || mine.starts_with(&format!("{theirs}/"))) {
                        return Err(self.err(format!(
                            "the protected resource metadata names resource {r}, which is not this server ({mine})"
                        )));
                    }
                }
                rm.resource.clone().unwrap_or(mine)
            }
            None => url::canonical_resource(&self.server_url),
        };
        let meta = match &resource_meta {
            Some(rm) => {
                let mut found = None;
                for issuer in &rm.authorization_servers {
                    if let Some(m) = self.discover_auth_server(issuer)? {
                        found = Some(m);
                        break;
                    }
                }
                found.ok_or_else(|| self.err("no authorization server metadata found"))?
            }
            None => self.legacy_auth_server()?,
        };
        let mut scope = self
            .opts
            .scope
            .clone()
            .or_else(|| challenge.scope.clone())
            .or_else(|| {
                resource_meta
                    .as_ref()
                    .filter(|r| !r.scopes_supported.is_empty())
                    .map(|r| r.scopes_supported.join(" "))
            });
        if previous_scope.is_some() {
            scope = union_scopes(previous_scope.as_deref(), scope.as_deref());
        }
        if self.opts.grant == Grant::AuthorizationCode
            && meta.scopes_supported.iter().any(|s| s == "offline_access")
            && (meta.grant_types_supported.is_empty()
                || meta
                    .grant_types_supported
                    .iter()
                    .any(|g| g == "refresh_token"))
        {
            scope = union_scopes(scope.as_deref(), Some("offline_access"));
        }
        let client = self.client_identity(&meta)?;
        let (tokens, bound) = match self.opts.grant {
            Grant::CrossAppAccess => {
                let jag = self.exchange_identity(&meta, &resource, scope.as_deref())?;
                let mut form: Vec<(&str, &str)> =
                    vec![("grant_type", JWT_BEARER_GRANT), ("assertion", &jag)];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                self.token_request(&meta, &client, form)?
            }
            Grant::WorkloadIdentity => {
                let jwt = self.opts.workload_assertion.as_deref().ok_or_else(|| {
                    self.err("the workload identity grant needs OAuthOptions::workload_assertion")
                })?;
                let mut form: Vec<(&str, &str)> = vec![
                    ("grant_type", JWT_BEARER_GRANT),
                    ("assertion", jwt),
                    ("resource", &resource),
                ];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                self.token_request(&meta, &client, form)?
            }
            Grant::ClientCredentials => {
                let mut form: Vec<(&str, &str)> = vec![
                    ("grant_type", "client_credentials"),
                    ("resource", &resource),
                ];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                self.token_request(&meta, &client, form)?
            }
            Grant::AuthorizationCode => {
                if !meta.defaults {
                    match &meta.code_challenge_methods_supported {
                        Some(m) if m.iter().any(|x| x == "S256") => {}
                        Some(_) => {
                            return Err(
                                self.err("the authorization server does not support PKCE S256")
                            )
                        }
                        None => {
                            return Err(self.err(
                                "the authorization server metadata does not declare PKCE support",
                            ))
                        }
                    }
                }
                validate::check_redirect_uri(&self.opts.redirect_uri)
                    .map_err(|r| self.refused(r))?;
                let verifier =
                    pkce::verifier().map_err(|e| self.err(format!("no randomness: {e}")))?;
                let state =
                    pkce::random_token(16).map_err(|e| self.err(format!("no randomness: {e}")))?;
                let challenge = pkce::challenge(&verifier);
                let mut q: Vec<(&str, &str)> = vec![
                    ("response_type", "code"),
                    ("client_id", &client.client_id),
                    ("redirect_uri", &self.opts.redirect_uri),
                    ("code_challenge", &challenge),
                    ("code_challenge_method", "S256"),
                    ("state", &state),
                    ("resource", &resource),
                ];
                if let Some(s) = &scope {
                    q.push(("scope", s));
                }
                // RFC 9449 §10: binds the code to the key, so a code
                // intercepted on its way back cannot be redeemed elsewhere.
                let jkt = self.dpop_key()?.map(dpop::DpopKey::thumbprint);
                if let Some(j) = &jkt {
                    q.push(("dpop_jkt", j));
                }
                let auth_url = url::with_query(&meta.authorization_endpoint, &q);
                let redirected = self
                    .opts
                    .authorizer
                    .authorize(&auth_url, &self.opts.redirect_uri)
                    .map_err(|m| self.err(format!("authorization failed: {m}")))?;
                let params = url::query_params(&redirected);
                let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                // RFC 9207 first: on a mismatch not even the `error` of the
                // response is acted on or shown (MCP 2026-07-28), since it
                // may come from the attacker's server.
                if let Some(recorded) = &meta.issuer {
                    validate::check_response_issuer(
                        recorded,
                        meta.authorization_response_iss_parameter_supported,
                        get("iss").as_deref(),
                    )
                    .map_err(|r| self.refused(r))?;
                }
                if let Some(e) = get("error") {
                    return Err(self.err(format!("the authorization server refused: {e}")));
                }
                if get("state").as_deref() != Some(state.as_str()) {
                    return Err(self
                        .err("the redirect's state does not match the request's (possible CSRF)"));
                }
                let code = get("code").ok_or_else(|| self.err("the redirect carries no code"))?;
                let form: Vec<(&str, &str)> = vec![
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", &self.opts.redirect_uri),
                    ("code_verifier", &verifier),
                    ("resource", &resource),
                ];
                self.token_request(&meta, &client, form)?
            }
        };
        let stored = StoredAuth {
            tokens: OAuthTokens {
                scope: tokens.scope.clone().or(scope),
                ..tokens
            },
            client: Some(client),
            issuer: meta.issuer.clone(),
        };
        self.opts.token_store.save(&self.server, &stored);
        {
            let mut st = self.state.lock();
            st.stored = Some(stored);
            st.bound = bound;
        }
        ::log::info!(target: "mcp_client", "[{}] authorized with OAuth{}", self.server, if bound { " (DPoP-bound token)" } else { "" });
        Ok(())
    }

    /// Exchanges the user's ID token at the identity provider for an
    /// identity assertion grant (ID-JAG) meant for `meta`'s authorization
    /// server and `resource` (RFC 8693; SEP-990).
    pub(super) fn exchange_identity(
        &self,
        meta: &AuthServerMetadata,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<String> {
        let id = self
            .opts
            .identity
            .as_ref()
            .ok_or_else(|| self.err("cross-app access needs OAuthOptions::identity"))?;
        let audience = meta.issuer.clone().ok_or_else(|| {
            self.err("cross-app access needs the authorization server's issuer (from its metadata)")
        })?;
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TOKEN_TYPE),
            ("subject_token", &id.id_token),
            ("subject_token_type", ID_TOKEN_TYPE),
            ("audience", &audience),
            ("resource", resource),
        ];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        validate::check_secure("identity provider token endpoint", &id.idp_token_endpoint)
            .map_err(|r| self.refused(r))?;
        let mut rb = self
            .agent
            .post(&id.idp_token_endpoint)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json");
        match (&id.idp_client_id, &id.idp_client_secret) {
            (Some(cid), Some(secret)) => rb = rb.header("Authorization", basic_auth(cid, secret)),
            (Some(cid), None) => form.push(("client_id", cid)),
            _ => {}
        }
        let v = self.json_answer(
            rb.send(url::form(&form).as_bytes()),
            "the identity provider's token exchange",
            "the identity provider's token exchange",
            "the identity provider answered the token exchange with",
        )?;
        if let Some(t) = v.get("issued_token_type").and_then(Value::as_str) {
            if t != ID_JAG_TOKEN_TYPE {
                return Err(self.err(format!(
                    "the identity provider issued a {t}, not an identity assertion grant"
                )));
            }
        }
        v.get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| self.err("the token exchange response has no access_token"))
    }

    /// One token request (any grant) with the client's authentication,
    /// and, with DPoP, a proof for the token endpoint (sent again once with
    /// the server's nonce when it answers `use_dpop_nonce`, RFC 9449 §8).
    /// Returns the tokens and whether they are DPoP-bound.
    pub(super) fn token_request<'a>(
        &self,
        meta: &AuthServerMetadata,
        client: &'a ClientRegistration,
        form: Vec<(&'a str, &'a str)>,
    ) -> Result<(OAuthTokens, bool)> {
        // Declared before the rebinding below, so it outlives the borrow.
        let assertion: String;
        let mut form: Vec<(&str, &str)> = form;
        let mut basic = None;
        if client.auth_method == TokenEndpointAuth::PrivateKeyJwt {
            let pem = self
                .opts
                .client_assertion_key
                .as_deref()
                .ok_or_else(|| self.err("private_key_jwt needs client_assertion_key"))?;
            let audience = meta.issuer.clone().unwrap_or_else(|| {
                url::split(&meta.token_endpoint)
                    .map(|(o, _)| o)
                    .unwrap_or_default()
            });
            assertion =
                client_assertion(pem, &client.client_id, &audience).map_err(|m| self.err(m))?;
            form.push(("client_id", &client.client_id));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            form.push(("client_assertion", &assertion));
        }
        match (client.auth_method, &client.client_secret) {
            (TokenEndpointAuth::PrivateKeyJwt, _) => {}
            (TokenEndpointAuth::ClientSecretBasic, Some(secret)) => {
                basic = Some(basic_auth(&client.client_id, secret));
            }
            (TokenEndpointAuth::ClientSecretPost, Some(secret)) => {
                form.push(("client_id", &client.client_id));
                form.push(("client_secret", secret));
            }
            _ if client.client_id.is_empty() => {}
            _ => form.push(("client_id", &client.client_id)),
        }
        let key = self.dpop_key()?;
        if let (Some(_), Some(algs)) = (key, &meta.dpop_signing_alg_values_supported) {
            if !algs.iter().any(|a| a == "ES256") {
                return Err(self.err(format!(
                    "the authorization server takes DPoP proofs signed with {} only; this client signs ES256",
                    algs.join(", ")
                )));
            }
        }
        let body = url::form(&form);
        let mut sent = None;
        for attempt in 0..2 {
            let mut rb = self
                .agent
                .post(&meta.token_endpoint)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .header("Accept", "application/json");
            if let Some(b) = &basic {
                rb = rb.header("Authorization", b);
            }
            if let Some(k) = key {
                let nonce = self.state.lock().as_nonce.clone();
                let proof = k
                    .proof("POST", &meta.token_endpoint, nonce.as_deref(), None)
                    .map_err(|e| self.err(e))?;
                rb = rb.header(dpop::HEADER, proof);
            }
            let resp = rb.send(body.as_bytes());
            if let (Some(_), Ok(r)) = (key, &resp) {
                // Any answer may carry the nonce to use next (RFC 9449 §8).
                let nonce = r
                    .headers()
                    .get(dpop::NONCE_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned);
                let got_nonce = nonce.is_some();
                if let Some(n) = nonce {
                    self.state.lock().as_nonce = Some(n);
                }
                if attempt == 0 && got_nonce && r.status().as_u16() == 400 {
                    // Only use_dpop_nonce is answered by a retry; another
                    // 400 is reported as it came.
                    let v = match resp {
                        Ok(r) => read_json(r.into_body()).unwrap_or(Value::Null),
                        Err(_) => Value::Null,
                    };
                    if v.get("error").and_then(Value::as_str) == Some(dpop::USE_NONCE) {
                        continue;
                    }
                    return Err(self.err(format!(
                        "the token endpoint answered HTTP 400: {}",
                        error_of(&v)
                    )));
                }
            }
            sent = Some(resp);
            break;
        }
        let Some(sent) = sent else {
            return Err(self.err("the token endpoint asked for a DPoP nonce twice"));
        };
        let v = self.json_answer(
            sent,
            "token request",
            "token response",
            "the token endpoint answered",
        )?;
        let access_token = v
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("the token response has no access_token"))?
            .to_owned();
        let bound = match v.get("token_type").and_then(Value::as_str) {
            None => false,
            Some(t) if t.eq_ignore_ascii_case("bearer") => false,
            Some(t) if t.eq_ignore_ascii_case("dpop") && key.is_some() => true,
            Some(t) => return Err(self.err(format!("unsupported token_type {t:?}"))),
        };
        Ok((
            OAuthTokens {
                access_token,
                refresh_token: crate::json::opt_str(&v, "refresh_token"),
                expires_at: v
                    .get("expires_in")
                    .and_then(Value::as_u64)
                    .map(|s| SystemTime::now() + Duration::from_secs(s)),
                scope: crate::json::opt_str(&v, "scope"),
            },
            bound,
        ))
    }

    pub(super) fn refresh(&self, stored: &StoredAuth) -> Result<OAuthTokens> {
        let refresh = stored
            .tokens
            .refresh_token
            .as_deref()
            .ok_or_else(|| self.err("no refresh token"))?;
        let client = stored
            .client
            .clone()
            .ok_or_else(|| self.err("no client for the refresh"))?;
        // The refresh token and the client go back to the server that
        // issued them, and only while the resource still names it: when its
        // authorization server changed, the caller authorizes afresh with
        // the new one (and registers there) instead.
        let issuer = stored.issuer.as_deref().ok_or_else(|| {
            self.err("the stored tokens do not record their authorization server; not refreshing")
        })?;
        let resource_meta = self.discover_resource(&BearerChallenge::default())?;
        let meta = match &resource_meta {
            Some(rm) => {
                if !rm.authorization_servers.iter().any(|s| s == issuer) {
                    return Err(self.err(format!(
                        "the resource's authorization server changed from {issuer} to {}; not refreshing there",
                        rm.authorization_servers.join(", ")
                    )));
                }
                self.discover_auth_server(issuer)?
                    .ok_or_else(|| self.err("no authorization server metadata found"))?
            }
            None => self.legacy_auth_server()?,
        };
        if meta.issuer.as_deref() != Some(issuer) {
            return Err(self.err(format!(
                "the resource's authorization server changed from {issuer}; not refreshing there"
            )));
        }
        let resource = url::canonical_resource(&self.server_url);
        let form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("resource", resource.as_str()),
        ];
        let (mut tokens, bound) = self.token_request(&meta, &client, form)?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = stored.tokens.refresh_token.clone();
        }
        if tokens.scope.is_none() {
            tokens.scope = stored.tokens.scope.clone();
        }
        let new = StoredAuth {
            tokens: tokens.clone(),
            client: Some(client),
            issuer: Some(issuer.to_owned()),
        };
        self.opts.token_store.save(&self.server, &new);
        {
            let mut st = self.state.lock();
            st.stored = Some(new);
            st.bound = bound;
        }
        ::log::info!(target: "mcp_client", "[{}] OAuth token refreshed", self.server);
        Ok(tokens)
    }
}
