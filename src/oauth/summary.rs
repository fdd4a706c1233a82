//! What the CLI shows of a server's OAuth state: what a login obtained and what its token file
//! holds, never a token.

/// What a login obtained (no token).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoginSummary {
    /// The granted scopes.
    pub scopes: Vec<String>,
    /// When the access token expires (Unix seconds), if the server said.
    pub expires_at: Option<u64>,
    /// Whether a refresh token came with it.
    pub refreshable: bool,
}

/// What the token file of a server holds (no token).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoredSummary {
    /// The client the tokens were issued to.
    pub client_id: String,
    /// The granted scopes.
    pub scopes: Vec<String>,
    /// When the access token expires (Unix seconds), if known.
    pub expires_at: Option<u64>,
    /// Whether a refresh token is stored.
    pub refreshable: bool,
    /// The token file.
    pub path: std::path::PathBuf,
    /// Whether the access token is DPoP-bound (`token_type` `DPoP`).
    pub dpop_bound: bool,
}
