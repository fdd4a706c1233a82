//! How the source answers the auth layer: the header of each request, the DPoP proof of each
//! sending, and what to do about a refusal (a nonce asked for, a refresh, a new grant, a
//! step-up).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use kaged_mcp_layers::auth::{
    AuthHeader, BearerChallenge, Refusal, TokenError, TokenFuture, TokenSource,
};

use super::{OAuthSource, MAX_AUTHORIZATIONS};
use crate::config::OAuthGrant;
use crate::oauth::dpop::Audience;

impl OAuthSource {
    /// A 401 `use_dpop_nonce` of the MCP server (RFC 9449 section 9): the request is sent once
    /// more, with the same token and a proof carrying the nonce; a second demand for the same
    /// request goes to the caller. `None`: not such a refusal.
    fn nonce_refusal(&self, refusal: &Refusal) -> Option<Option<AuthHeader>> {
        let dpop = self.dpop.as_ref()?;
        let asks = refusal.status() == http::StatusCode::UNAUTHORIZED
            && refusal
                .challenge()
                .is_some_and(|c| c.error.as_deref() == Some("use_dpop_nonce"));
        let (true, Some(nonce), Some(sent)) = (asks, refusal.nonce(), refusal.sent()) else {
            return None;
        };
        if refusal.repeats() > 0 {
            tracing::warn!(server = %self.settings.server, "the MCP server asked for a DPoP nonce again after a retry with one; giving up");
            return Some(None);
        }
        dpop.set_nonce(Audience::Resource, nonce.to_owned());
        tracing::debug!(server = %self.settings.server, "the MCP server asked for a DPoP nonce; sending again with it");
        Some(Some(sent.clone()))
    }
}

/// The metadata URL and scope of a challenge.
pub(super) fn split(challenge: Option<BearerChallenge>) -> (Option<String>, Option<String>) {
    challenge.map_or((None, None), |c| (c.resource_metadata, c.scope))
}

impl TokenSource for OAuthSource {
    fn header(&self) -> TokenFuture<'_, Option<AuthHeader>> {
        Box::pin(async move {
            let mut st = self.state.lock().await;
            self.load(&mut st)?;
            if let Some(h) = Self::current(&st) {
                return Ok(Some(h));
            }
            if st.tokens.is_some() {
                if let Some(h) = self.refresh(&mut st).await? {
                    return Ok(Some(h));
                }
            }
            // No usable token: send without one when a 401 can lead to a token here.
            if matches!(
                self.settings.config.grant,
                OAuthGrant::ClientCredentials | OAuthGrant::JwtBearer
            ) || self.authorizer.is_some()
            {
                return Ok(None);
            }
            // A login made meanwhile (`kaged-mcp auth login`) stored one: read the file again.
            st.loaded = false;
            self.load(&mut st)?;
            if let Some(h) = Self::current(&st) {
                self.needs_login.store(false, Ordering::Relaxed);
                return Ok(Some(h));
            }
            Err(self.login_required("has no usable OAuth token"))
        })
    }

    fn proof(
        &self,
        method: &http::Method,
        uri: &http::Uri,
        sent: Option<&AuthHeader>,
    ) -> Result<Option<AuthHeader>, TokenError> {
        let (Some(dpop), Some(sent)) = (&self.dpop, sent) else {
            return Ok(None);
        };
        // Only a DPoP-bound token is sent with a proof; a Bearer one the server chose is not.
        let Some(ath) = dpop.ath_of(sent) else {
            return Ok(None);
        };
        let proof = dpop
            .proof(
                Audience::Resource,
                method.as_str(),
                &uri.to_string(),
                Some(&ath),
            )
            .map_err(|e| self.failed("DPoP proof", e.to_string()))?;
        AuthHeader::header("DPoP", &proof)
            .map(Some)
            .map_err(|e| self.failed("DPoP proof", e.to_string()))
    }

    fn refused<'a>(&'a self, refusal: &'a Refusal) -> TokenFuture<'a, Option<AuthHeader>> {
        Box::pin(async move {
            if let Some(answer) = self.nonce_refusal(refusal) {
                return Ok(answer);
            }
            let mut st = self.state.lock().await;
            self.load(&mut st)?;
            let current = Self::current(&st);
            // Another request renewed the token meanwhile: use it.
            if current.is_some() && current.as_ref() != refusal.sent() {
                return Ok(current);
            }
            let (metadata_url, scope) = split(refusal.challenge().cloned());
            if refusal.status() == http::StatusCode::FORBIDDEN {
                // A step-up: the scopes held and those asked for.
                let held = st.held();
                let needed = scope.as_deref().unwrap_or_default().split_whitespace();
                let union: BTreeSet<String> = held
                    .iter()
                    .cloned()
                    .chain(needed.map(str::to_owned))
                    .collect();
                let exhausted = st.stepped_up.len() + 1 >= MAX_AUTHORIZATIONS as usize;
                if union == held && !held.is_empty() || st.stepped_up.contains(&union) || exhausted
                {
                    // Nothing more to ask for: the 403 goes to the caller.
                    return Ok(None);
                }
                self.discover(&mut st, metadata_url, false).await?;
                st.stepped_up.push(union.clone());
                return self
                    .obtain(&mut st, union.into_iter().collect())
                    .await
                    .map(Some);
            }
            // 401. A token renewed for this very request was refused: another from the same
            // authorization server will not do. The resource may have moved to another one
            // (SEP-2352): credentials are bound to the server that issued them, so a new
            // issuer means a new registration and a new login there.
            if refusal.renewal() > 0 {
                if self.discover(&mut st, metadata_url, true).await? {
                    tracing::info!(server = %self.settings.server, "the resource names another authorization server; registering and logging in there");
                    self.forget(&mut st);
                    let scopes = self.scopes(&st, scope);
                    return self.obtain(&mut st, scopes).await.map(Some);
                }
                return Ok(None);
            }
            if refusal.sent().is_some() {
                if let Some(h) = self.refresh(&mut st).await? {
                    return Ok(Some(h));
                }
            }
            // No token, or one that cannot be refreshed: a new one, with the scopes the old
            // one held (stepped up to) as well as those asked for now.
            self.discover(&mut st, metadata_url, false).await?;
            let mut scopes: BTreeSet<String> = self.scopes(&st, scope).into_iter().collect();
            if self.settings.config.scopes.is_none() {
                scopes.extend(st.held());
            }
            let scopes = scopes.into_iter().collect();
            self.obtain(&mut st, scopes).await.map(Some)
        })
    }
}
