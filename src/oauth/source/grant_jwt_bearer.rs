//! The source's JWT-bearer grant: workload identity federation (SEP-1933), whose assertion is
//! read from a file, and enterprise-managed authorization (SEP-990), whose assertion is an
//! ID-JAG the enterprise IdP issues in exchange for the ID token read from a file.
//!
//! An assertion goes only to an authorization server the operator named: the one `auth.issuer`
//! names (discovery refuses any other), or, without it, the one the assertion's own `aud`
//! names, whose metadata proves its issuer. Otherwise it is refused before it is sent: a
//! server's metadata cannot send a workload's identity to an authorization server of its own.

use kaged_mcp_layers::auth::{AuthHeader, TokenError};

use super::{now, OAuthSource, Origin, State};
use crate::config::{ClientAuthMethod, IdentityProvider};
use crate::escape::visible;
use crate::oauth::discovery::{same_issuer, AsMetadata};
use crate::oauth::grant::Client;
use crate::oauth::http::OAuthHttp;
use crate::oauth::workload::{self, Assertion};
use crate::transport::http::redacted;

const WHAT: &str = "jwt-bearer grant";

impl OAuthSource {
    /// The JWT-bearer grant with the assertion (or, with an IdP, the ID token) read now. An
    /// input the token endpoint or the IdP refused is never sent again while its file is
    /// unchanged, and a refusal is the caller's error: no other grant is tried.
    pub(super) async fn obtain_jwt_bearer(
        &self,
        st: &mut State,
        meta: &AsMetadata,
        scopes: Vec<String>,
        resource: Option<String>,
    ) -> Result<AuthHeader, TokenError> {
        let config = &self.settings.config;
        if config.issuer.is_none() && !meta.issuer_verified {
            return Err(self.failed(
                WHAT,
                format!(
                    "the 2025-03-26 metadata names the issuer `{}`, which is not the origin it came \
                     from, so no assertion's `aud` can be checked against it; nothing is sent",
                    visible(&meta.issuer)
                ),
            ));
        }
        let idp = config.identity_provider.as_ref();
        let path = idp
            .map(|i| i.id_token_file.as_path())
            .or(config.assertion_file.as_deref())
            .ok_or_else(|| self.failed(WHAT, "no `assertion_file` configured"))?;
        let input =
            workload::read_assertion(path, now()).map_err(|e| self.failed(WHAT, e.to_string()))?;
        if st.refused_assertion == Some(input.digest()) {
            return Err(self.failed(
                WHAT,
                format!(
                    "the {} already refused the {} in {}; it is not sent again until the file changes",
                    if idp.is_some() { "IdP or the token endpoint" } else { "token endpoint" },
                    if idp.is_some() { "ID token" } else { "assertion" },
                    path.display()
                ),
            ));
        }
        let assertion = match idp {
            Some(i) => match self
                .exchange(i, &input, meta, &scopes, resource.as_deref())
                .await
            {
                Ok(a) => a,
                Err((refused, e)) => {
                    if refused {
                        st.refused_assertion = Some(input.digest());
                    }
                    return Err(e);
                }
            },
            None => input,
        };
        self.check_audience(meta, &assertion, || match idp {
            Some(i) => format!("the ID-JAG the IdP {} issued", redacted(&i.token_endpoint)),
            None => format!("the assertion in {}", path.display()),
        })?;
        let client = match self.settings.config.client_id {
            Some(_) => self.configured_client(meta)?,
            None => no_client(),
        };
        let granted = workload::jwt_bearer(
            &self.http,
            &meta.token_endpoint,
            &meta.issuer,
            &client,
            &assertion,
            &scopes,
            resource.as_deref(),
        )
        .await;
        let g = match granted {
            Ok(g) => g,
            Err(e) => {
                if e.refused {
                    // With an IdP, the ID token it came from: the same one gives the same refusal.
                    let input = workload::read_assertion(path, now()).ok();
                    st.refused_assertion =
                        Some(input.map_or(assertion.digest(), |a: Assertion| a.digest()));
                }
                return Err(self.failed(WHAT, e.message));
            }
        };
        self.keep(st, &client, g, scopes, Origin::of(meta, resource))?;
        Self::current(st).ok_or_else(|| self.failed(WHAT, "the token expired at once"))
    }

    /// Refuses to send `assertion` (described by `what`) to `meta`'s token endpoint unless the
    /// operator named that authorization server: `auth.issuer` (which discovery held it to),
    /// else the assertion's `aud`.
    fn check_audience(
        &self,
        meta: &AsMetadata,
        assertion: &Assertion,
        what: impl FnOnce() -> String,
    ) -> Result<(), TokenError> {
        if self.settings.config.issuer.is_some() {
            return Ok(());
        }
        let aud = assertion.audience();
        if aud.iter().any(|a| same_issuer(a, &meta.issuer)) {
            return Ok(());
        }
        let whom = if aud.is_empty() {
            "has no `aud` naming".to_owned()
        } else {
            let list: Vec<String> = aud.iter().map(|a| format!("`{}`", visible(a))).collect();
            format!("is for {} (its `aud`), not for", list.join(", "))
        };
        Err(self.failed(
            WHAT,
            format!(
                "{} {whom} the authorization server `{}` the server's metadata names; \
                 it is not sent there. An assertion goes only to the authorization server it is \
                 for, or to the one `auth.issuer` names: set `auth.issuer` if you trust this one",
                what(),
                visible(&meta.issuer)
            ),
        ))
    }

    /// SEP-990's token exchange at the IdP: the ID-JAG for `meta`'s issuer and `resource`.
    /// `Err((refused, error))`: `refused` when the IdP answered an OAuth error.
    async fn exchange(
        &self,
        idp: &IdentityProvider,
        id_token: &Assertion,
        meta: &AsMetadata,
        scopes: &[String],
        resource: Option<&str>,
    ) -> Result<Assertion, (bool, TokenError)> {
        let client = idp.client_id.as_ref().map(|id| Client {
            id: id.clone(),
            secret: self.settings.idp_secret.clone(),
            method: if self.settings.idp_secret.is_some() {
                ClientAuthMethod::ClientSecretBasic
            } else {
                ClientAuthMethod::None
            },
            private_key: None,
            registered: false,
        });
        // No DPoP at the IdP: its answer is an assertion, not a token bound to this client.
        workload::exchange_for_id_jag(
            &OAuthHttp::new(),
            &idp.token_endpoint,
            client.as_ref(),
            id_token,
            &meta.issuer,
            resource,
            scopes,
        )
        .await
        .map_err(|e| {
            let why = format!(
                "the token exchange at the IdP {}: {}",
                redacted(&idp.token_endpoint),
                e.message
            );
            (e.refused, self.failed(WHAT, why))
        })
    }
}

/// No client authentication (a JWT-bearer grant without a configured `client_id`).
fn no_client() -> Client {
    Client {
        id: String::new(),
        secret: None,
        method: ClientAuthMethod::None,
        private_key: None,
        registered: false,
    }
}
