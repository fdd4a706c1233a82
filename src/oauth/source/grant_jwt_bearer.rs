//! The source's JWT-bearer grant: workload identity federation (SEP-1933), whose assertion is
//! read from a file, and enterprise-managed authorization (SEP-990), whose assertion is an
//! ID-JAG the enterprise IdP issues in exchange for the ID token read from a file.

use kaged_mcp_layers::auth::{AuthHeader, TokenError};

use super::{now, OAuthSource, Origin, State};
use crate::config::{ClientAuthMethod, IdentityProvider};
use crate::oauth::discovery::AsMetadata;
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
