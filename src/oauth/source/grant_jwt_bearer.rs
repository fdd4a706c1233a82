//! The source's JWT-bearer grant (workload identity federation, SEP-1933).

use kaged_mcp_layers::auth::{AuthHeader, TokenError};

use super::{now, OAuthSource, Origin, State};
use crate::config::ClientAuthMethod;
use crate::oauth::discovery::AsMetadata;
use crate::oauth::grant::Client;
use crate::oauth::workload;
use crate::transport::http::redacted;

impl OAuthSource {
    /// The JWT-bearer grant (workload identity, SEP-1933) with the assertion file read now. An
    /// assertion the token endpoint refused is never sent again, and a refusal is the caller's
    /// error: no other grant is tried.
    pub(super) async fn obtain_jwt_bearer(
        &self,
        st: &mut State,
        meta: &AsMetadata,
        scopes: Vec<String>,
        resource: Option<String>,
    ) -> Result<AuthHeader, TokenError> {
        const WHAT: &str = "jwt-bearer grant";
        let path = self
            .settings
            .config
            .assertion_file
            .as_deref()
            .ok_or_else(|| self.failed(WHAT, "no `assertion_file` configured".into()))?;
        let assertion =
            workload::read_assertion(path, now()).map_err(|e| self.failed(WHAT, e.to_string()))?;
        if st.refused_assertion == Some(assertion.digest()) {
            return Err(self.failed(
                WHAT,
                format!(
                    "the token endpoint {} already refused the assertion in {}; it is not sent again until the file changes",
                    redacted(&meta.token_endpoint),
                    path.display()
                ),
            ));
        }
        let client = match self.settings.config.client_id {
            Some(_) => self.configured_client(meta)?,
            None => Client {
                id: String::new(),
                secret: None,
                method: ClientAuthMethod::None,
                private_key: None,
                registered: false,
            },
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
                    st.refused_assertion = Some(assertion.digest());
                }
                return Err(self.failed(WHAT, e.message));
            }
        };
        self.keep(st, &client, g, scopes, Origin::of(meta, resource))?;
        Self::current(st).ok_or_else(|| self.failed(WHAT, "the token expired at once".into()))
    }
}
