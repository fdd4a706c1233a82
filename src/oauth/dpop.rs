//! DPoP (RFC 9449, MCP SEP-1932): tokens bound to a per-server P-256 key, proven on each
//! request.
//!
//! `Dpop` is a server's key and the nonces its servers asked for. The key is made on first
//! use and kept beside the server's token file (`<server>-<hash>.dpop-key`, a PKCS#8 PEM,
//! `0600`, written atomically by the token store); `kaged-mcp auth logout` removes it with the
//! tokens. A proof is a compact JWS, ES256, with the header `{"typ":"dpop+jwt","alg":"ES256",
//! "jwk":<the public key>}` and the claims `jti` (random), `htm`, `htu` (the request URI without
//! its query and fragment), `iat`, `nonce` once the server gave one, and on a resource request
//! `ath`, the base64url SHA-256 of the access token. The token endpoint gets a proof from the
//! OAuth HTTP client (`OAuthHttp`), the MCP server one from the auth
//! layer (through [`TokenSource::proof`](kaged_mcp_layers::auth::TokenSource::proof)), since
//! only there the request's method and URL are known.
//!
//! The private key never reaches a log, a `Debug` or an error: `Debug` shows the key's JWK
//! thumbprint (RFC 7638), which is public.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

use super::jwt;
use super::store::{StoreKey, TokenStore};

/// The `typ` of a DPoP proof.
const TYP: &str = "dpop+jwt";

/// A P-256 key that signs proofs. `Debug` prints its thumbprint only.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    /// The public JWK's members `x` and `y` (base64url).
    x: String,
    y: String,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

/// Why no DPoP key or proof could be had. None carries key material.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DpopError {
    /// The key file is not a P-256 PKCS#8 key.
    #[error("the DPoP key file {path} is unusable ({why}); remove it to make a new key (tokens bound to the old one are then refused, and obtained again)")]
    BadKey {
        /// The key file.
        path: String,
        /// What is wrong, in words.
        why: String,
    },
    /// The key file could not be read or written.
    #[error("the DPoP key file: {0}")]
    Store(String),
    /// The system random number generator failed.
    #[error("cannot sign a DPoP proof: the system random number generator failed")]
    Random,
}

impl DpopKey {
    /// A new key and its PKCS#8 DER.
    pub(crate) fn generate() -> Result<(Self, Vec<u8>), DpopError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| DpopError::Random)?;
        let der = pkcs8.as_ref().to_vec();
        let key = Self::from_pkcs8(&der).map_err(|_| DpopError::Random)?;
        Ok((key, der))
    }

    /// The key of a PKCS#8 DER document; `Err` with a reason in words.
    pub(crate) fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|_| "not a P-256 PKCS#8 key".to_owned())?;
        // Uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
        let public = pair.public_key().as_ref();
        if public.len() != 65 || public[0] != 4 {
            return Err("not an uncompressed P-256 public key".to_owned());
        }
        let x = URL_SAFE_NO_PAD.encode(&public[1..33]);
        let y = URL_SAFE_NO_PAD.encode(&public[33..65]);
        // RFC 7638: the required members in lexicographic order, no whitespace.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint =
            URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, canonical.as_bytes()));
        Ok(Self {
            pair,
            x,
            y,
            thumbprint,
        })
    }

    /// The key's JWK SHA-256 thumbprint (RFC 7638), base64url: what a DPoP-bound token's
    /// `cnf.jkt` names.
    pub(crate) fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for `htm` at `htu` (already without query and fragment), issued at `iat`.
    pub(crate) fn proof(
        &self,
        htm: &str,
        htu: &str,
        iat: u64,
        nonce: Option<&str>,
        ath: Option<&str>,
    ) -> Result<String, DpopError> {
        let rng = SystemRandom::new();
        let mut jti = [0u8; 16];
        rng.fill(&mut jti).map_err(|_| DpopError::Random)?;
        let header = serde_json::json!({
            "typ": TYP, "alg": "ES256",
            "jwk": {"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y},
        });
        let mut claims = serde_json::json!({
            "jti": URL_SAFE_NO_PAD.encode(jti), "htm": htm, "htu": htu, "iat": iat,
        });
        if let Some(n) = nonce {
            claims["nonce"] = n.into();
        }
        if let Some(a) = ath {
            claims["ath"] = a.into();
        }
        let mut jws = URL_SAFE_NO_PAD.encode(header.to_string());
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(claims.to_string(), &mut jws);
        let signature = self
            .pair
            .sign(&rng, jws.as_bytes())
            .map_err(|_| DpopError::Random)?;
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut jws);
        Ok(jws)
    }
}

/// The `htu` of a request URI: without its query and fragment (RFC 9449 section 4.2).
pub fn htu(uri: &str) -> String {
    match url::Url::parse(uri) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => uri.split(['?', '#']).next().unwrap_or_default().to_owned(),
    }
}

/// `ath`: the base64url SHA-256 of an access token (RFC 9449 section 4.2).
pub(crate) fn ath(access_token: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, access_token.as_bytes()))
}

/// A `DPoP-Nonce` header value, if it is one: RFC 9449 section 8.1 `1*NQCHAR` (printable ASCII
/// but `"` and `\`), at most 1 KiB. Anything else is ignored rather than echoed.
pub fn nonce_of(value: &[u8]) -> Option<String> {
    let ok = !value.is_empty()
        && value.len() <= 1024
        && value
            .iter()
            .all(|&b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
    ok.then(|| String::from_utf8_lossy(value).into_owned())
}

/// A proof by a new key for `htm` at `uri` (its `htu` taken as requests' are), for the fuzz
/// checks only; `None` when no key could be made.
#[doc(hidden)]
pub fn proof_with_new_key(
    htm: &str,
    uri: &str,
    nonce: Option<&str>,
    ath: Option<&str>,
) -> Option<String> {
    let (key, _) = DpopKey::generate().ok()?;
    key.proof(htm, &htu(uri), 0, nonce, ath).ok()
}

/// A server's DPoP key (made on first use, kept with its tokens) and the nonces its
/// authorization server and its MCP server last asked for.
pub(crate) struct Dpop {
    store: TokenStore,
    id: StoreKey,
    key: Mutex<Option<Arc<DpopKey>>>,
    as_nonce: Mutex<Option<String>>,
    rs_nonce: Mutex<Option<String>>,
    /// The `Authorization` header of the current DPoP-bound token and its `ath`.
    bound: Mutex<Option<(kaged_mcp_layers::auth::AuthHeader, String)>>,
}

impl fmt::Debug for Dpop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dpop")
            .field(
                "key",
                &*self.key.lock().unwrap_or_else(PoisonError::into_inner),
            )
            .finish_non_exhaustive()
    }
}

/// Which server a proof is for: the nonce it last gave is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audience {
    /// The authorization server's token endpoint.
    Token,
    /// The MCP server.
    Resource,
}

impl Dpop {
    /// The DPoP state of the server whose tokens `store` keeps under `id`.
    pub(crate) fn new(store: TokenStore, id: StoreKey) -> Self {
        Self {
            store,
            id,
            key: Mutex::new(None),
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
            bound: Mutex::new(None),
        }
    }

    /// The key: loaded from its file, or made and saved there on first use.
    pub(crate) fn key(&self) -> Result<Arc<DpopKey>, DpopError> {
        let mut slot = self.key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(k) = slot.as_ref() {
            return Ok(Arc::clone(k));
        }
        let key = match self.stored_key()? {
            Some(k) => k,
            None => {
                let (key, der) = DpopKey::generate()?;
                let pem = pem(&der);
                self.store
                    .save_key(&self.id, pem.as_bytes())
                    .map_err(|e| DpopError::Store(e.to_string()))?;
                key
            }
        };
        let key = Arc::new(key);
        *slot = Some(Arc::clone(&key));
        Ok(key)
    }

    /// The key in the key file, without making one.
    pub(crate) fn stored_key(&self) -> Result<Option<DpopKey>, DpopError> {
        let Some(bytes) = self
            .store
            .load_key(&self.id)
            .map_err(|e| DpopError::Store(e.to_string()))?
        else {
            return Ok(None);
        };
        let bad = |why: String| DpopError::BadKey {
            path: self.store.key_path(&self.id).display().to_string(),
            why,
        };
        let text = String::from_utf8(bytes).map_err(|_| bad("not text".into()))?;
        let der = jwt::pkcs8_der(&text).map_err(|e| bad(e.to_string()))?;
        DpopKey::from_pkcs8(&der).map(Some).map_err(bad)
    }

    /// Removes the key file.
    pub(crate) fn forget_key(&self) -> Result<bool, DpopError> {
        *self.key.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.store
            .remove_key(&self.id)
            .map_err(|e| DpopError::Store(e.to_string()))
    }

    fn nonce_slot(&self, audience: Audience) -> &Mutex<Option<String>> {
        match audience {
            Audience::Token => &self.as_nonce,
            Audience::Resource => &self.rs_nonce,
        }
    }

    /// The nonce `audience` last gave.
    pub(crate) fn nonce(&self, audience: Audience) -> Option<String> {
        self.nonce_slot(audience)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Keeps the nonce `audience` gave; `true` when it differs from the one kept before.
    pub(crate) fn set_nonce(&self, audience: Audience, nonce: String) -> bool {
        let mut slot = self
            .nonce_slot(audience)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let changed = slot.as_deref() != Some(nonce.as_str());
        *slot = Some(nonce);
        changed
    }

    /// A proof for `method` at `uri` to `audience`, with its last nonce and `ath` when given.
    pub(crate) fn proof(
        &self,
        audience: Audience,
        method: &str,
        uri: &str,
        ath: Option<&str>,
    ) -> Result<String, DpopError> {
        let key = self.key()?;
        let nonce = self.nonce(audience);
        key.proof(
            method,
            &htu(uri),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            nonce.as_deref(),
            ath,
        )
    }

    /// Records `header` as the `Authorization` of the DPoP-bound `access_token` (or forgets
    /// the one recorded, with `None`).
    pub(crate) fn bind(&self, bound: Option<(kaged_mcp_layers::auth::AuthHeader, &str)>) {
        *self.bound.lock().unwrap_or_else(PoisonError::into_inner) =
            bound.map(|(h, token)| (h, ath(token)));
    }

    /// The `ath` of `header` if it is the current DPoP-bound token's.
    pub(crate) fn ath_of(&self, header: &kaged_mcp_layers::auth::AuthHeader) -> Option<String> {
        let bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        bound
            .as_ref()
            .filter(|(h, _)| h == header)
            .map(|(_, a)| a.clone())
    }
}

/// A PKCS#8 DER key as PEM.
fn pem(der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut out = String::from("-----BEGIN PRIVATE KEY-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END PRIVATE KEY-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    fn part(jws: &str, i: usize) -> serde_json::Value {
        let seg = jws.split('.').nth(i).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(seg).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_carries_the_public_jwk_and_claims_and_verifies() {
        let (key, _) = DpopKey::generate().unwrap();
        let p = key
            .proof(
                "POST",
                "https://rs.test/mcp",
                1_700_000_000,
                Some("n"),
                Some("A"),
            )
            .unwrap();
        let h = part(&p, 0);
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(h["alg"], "ES256");
        assert_eq!(h["jwk"]["kty"], "EC");
        assert!(h["jwk"].get("d").is_none(), "no private member");
        let c = part(&p, 1);
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "https://rs.test/mcp");
        assert_eq!(c["iat"], 1_700_000_000);
        assert_eq!(c["nonce"], "n");
        assert_eq!(c["ath"], "A");
        assert!(c["jti"].as_str().unwrap().len() >= 16);
        let (x, y) = (
            URL_SAFE_NO_PAD
                .decode(h["jwk"]["x"].as_str().unwrap())
                .unwrap(),
            URL_SAFE_NO_PAD
                .decode(h["jwk"]["y"].as_str().unwrap())
                .unwrap(),
        );
        let public = [&[4u8][..], &x, &y].concat();
        let (signed, sig) = p.rsplit_once('.').unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .unwrap();
        let again = key
            .proof("POST", "https://rs.test/mcp", 0, None, None)
            .unwrap();
        assert_ne!(part(&again, 1)["jti"], c["jti"], "a fresh jti each time");
        assert!(part(&again, 1).get("ath").is_none());
        assert!(!format!("{key:?}").contains(h["jwk"]["x"].as_str().unwrap()));
    }

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // RFC 7638 section 3.1 gives an RSA example; the EC member order is crv, kty, x, y.
        let (key, _) = DpopKey::generate().unwrap();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            key.x, key.y
        );
        let want = URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, canonical.as_bytes()));
        assert_eq!(key.thumbprint(), want);
        assert_eq!(key.thumbprint().len(), 43);
    }

    #[test]
    fn htu_drops_the_query_and_fragment() {
        assert_eq!(htu("https://rs.test/mcp?x=1#f"), "https://rs.test/mcp");
        assert_eq!(htu("http://127.0.0.1:8/a/b"), "http://127.0.0.1:8/a/b");
        assert_eq!(htu("/relative?q"), "/relative");
    }

    #[test]
    fn ath_is_the_base64url_sha256_of_the_token() {
        // echo -n "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU" | sha256 | base64url (RFC 9449 §7.1)
        assert_eq!(
            ath("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn only_a_well_formed_nonce_is_kept() {
        assert_eq!(
            nonce_of(b"eyJ7S_zG.eyJH0-Z.HX4w-7v").as_deref(),
            Some("eyJ7S_zG.eyJH0-Z.HX4w-7v")
        );
        for bad in [&b""[..], b"a b", b"a\"b", b"a\\b", b"\xff", &[b'a'; 1025]] {
            assert_eq!(nonce_of(bad), None);
        }
    }

    #[test]
    fn the_key_is_made_once_kept_0600_beside_the_tokens_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("tokens"));
        let id = StoreKey::new("s", "https://rs.test/mcp", "c");
        let dpop = Dpop::new(store.clone(), id.clone());
        let a = dpop.key().unwrap().thumbprint().to_owned();
        let path = store.key_path(&id);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = Dpop::new(store.clone(), id.clone());
        assert_eq!(again.key().unwrap().thumbprint(), a);
        assert!(!format!("{again:?}").contains("PRIVATE"));
        std::fs::write(&path, "junk").unwrap();
        let err = Dpop::new(store, id).key().unwrap_err().to_string();
        assert!(err.contains("unusable") && !err.contains("junk"), "{err}");
    }
}
