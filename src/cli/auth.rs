//! `kaged-mcp auth login|status|logout`: the operator's side of OAuth. Tokens go to the token
//! directory (never the project); status prints whether each OAuth server is logged in, its
//! expiry, its scopes, the grant it uses and, with DPoP, its key's JWK thumbprint (RFC 7638),
//! never a token or a key.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::start::runtime;
use super::{load_config, ProjectArgs, EXIT_CONFIG, EXIT_FAILED, EXIT_OK};
use crate::config::{Config, OAuthGrant};
use crate::oauth::{Authorizer, BrowserAuthorizer, OAuthSource};

/// The source of the OAuth server `server`, or the exit code after saying why not.
fn source(
    config: &Config,
    server: &str,
    authorizer: Option<Arc<dyn Authorizer>>,
) -> Result<OAuthSource, u8> {
    let Some(sc) = config.project.server(server) else {
        eprintln!("error: unknown MCP server `{server}`");
        return Err(EXIT_CONFIG);
    };
    match OAuthSource::for_server(config, sc, None, authorizer) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => {
            eprintln!("error: server `{server}` does not use `auth: {{type: oauth}}`");
            Err(EXIT_CONFIG)
        }
        Err(e) => {
            eprintln!("error: {}", super::hints::line(&e.to_string()));
            Err(EXIT_CONFIG)
        }
    }
}

/// `kaged-mcp auth …`.
pub(super) fn run(command: super::AuthCommand) -> u8 {
    use super::AuthCommand;
    match command {
        AuthCommand::Login { server, project } => login(&project, &server),
        AuthCommand::Status { project, json } => status(&project, json),
        AuthCommand::Logout { server, project } => logout(&project, &server),
    }
}

fn login(args: &ProjectArgs, server: &str) -> u8 {
    let config = match load_config(args) {
        Ok(c) => c,
        Err(f) => return f.exit(false, false),
    };
    let browser = config
        .project
        .server(server)
        .and_then(|s| s.auth.as_ref())
        .and_then(|a| a.oauth.as_ref())
        .is_some_and(|o| o.grant == OAuthGrant::AuthorizationCode);
    let authorizer: Option<Arc<dyn Authorizer>> = browser.then(|| Arc::new(BrowserAuthorizer) as _);
    let source = match source(&config, server, authorizer) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match runtime().block_on(source.login()) {
        Ok(summary) => {
            println!(
                "logged in to `{server}`: scopes [{}], {}{}",
                summary.scopes.join(" "),
                expiry(summary.expires_at),
                if summary.refreshable {
                    ", refreshable"
                } else {
                    ""
                }
            );
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {}", super::hints::line(&e.to_string()));
            EXIT_FAILED
        }
    }
}

fn status(args: &ProjectArgs, json_out: bool) -> u8 {
    let config = match load_config(args) {
        Ok(c) => c,
        Err(f) => return f.exit(json_out, false),
    };
    let mut rows = Vec::new();
    let mut code = EXIT_OK;
    for sc in &config.project.servers {
        let Ok(Some(source)) = OAuthSource::for_server(&config, sc, None, None) else {
            continue;
        };
        let mut row = match source.stored() {
            Ok(Some(s)) => json!({
                "server": sc.key, "logged_in": true, "client_id": s.client_id,
                "scopes": s.scopes, "expires_at": s.expires_at, "refreshable": s.refreshable,
                "token_file": s.path.display().to_string(), "dpop_bound": s.dpop_bound,
            }),
            Ok(None) => json!({"server": sc.key, "logged_in": false}),
            Err(e) => {
                code = EXIT_FAILED;
                json!({"server": sc.key, "logged_in": false, "error": e.to_string()})
            }
        };
        row["grant"] = source.grant().into();
        match source.dpop_thumbprint() {
            Ok(Some(t)) => row["dpop_jkt"] = t.into(),
            Ok(None) => {}
            Err(e) => {
                code = EXIT_FAILED;
                row["error"] = e.to_string().into();
            }
        }
        rows.push(row);
    }
    if json_out {
        println!("{}", Value::Array(rows));
        return code;
    }
    if rows.is_empty() {
        println!("no server uses OAuth");
    }
    for r in rows {
        let server = r["server"].as_str().unwrap_or_default();
        if let Some(e) = r["error"].as_str() {
            println!("{server}: error: {}", super::hints::line(e));
        } else if r["logged_in"] == true {
            let scopes: Vec<&str> = r["scopes"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            println!(
                "{server}: logged in ({}), scopes [{}], {}{}, grant {}{}",
                match r["client_id"].as_str().unwrap_or_default() {
                    "" => "no client id".to_owned(),
                    id => format!("client {id}"),
                },
                scopes.join(" "),
                expiry(r["expires_at"].as_u64()),
                if r["refreshable"] == true {
                    ", refreshable"
                } else {
                    ""
                },
                r["grant"].as_str().unwrap_or_default(),
                dpop_note(&r),
            );
        } else {
            let line = format!(
                "{server}: not logged in (run `kaged-mcp auth login {server}`), grant {}{}",
                r["grant"].as_str().unwrap_or_default(),
                dpop_note(&r)
            );
            println!("{}", super::hints::line(&line));
        }
    }
    code
}

/// `, DPoP key <thumbprint>` when the row has one (the RFC 7638 thumbprint: public).
fn dpop_note(row: &Value) -> String {
    row["dpop_jkt"]
        .as_str()
        .map(|t| format!(", DPoP key {t}"))
        .unwrap_or_default()
}

fn logout(args: &ProjectArgs, server: &str) -> u8 {
    let config = match load_config(args) {
        Ok(c) => c,
        Err(f) => return f.exit(false, false),
    };
    let source = match source(&config, server, None) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match source.logout() {
        Ok(true) => {
            println!("forgot the tokens of `{server}` (revoke them at the authorization server if they may have leaked)");
            EXIT_OK
        }
        Ok(false) => {
            println!("`{server}` was not logged in");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {}", super::hints::line(&e.to_string()));
            EXIT_FAILED
        }
    }
}

/// "expires in 59 min" / "expired 3 min ago" / "no expiry given".
fn expiry(at: Option<u64>) -> String {
    let Some(at) = at else {
        return "no expiry given".to_owned();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if at > now {
        format!("expires in {} min", (at - now).div_ceil(60))
    } else {
        format!(
            "expired {} min ago (refreshed on next use when refreshable)",
            (now - at) / 60
        )
    }
}
