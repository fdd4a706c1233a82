//! `private_key_jwt` client authentication: a client assertion (RFC 7523 section 2.2, MCP
//! SEP-1046) signed ES256 with the client's P-256 key.
//!
//! The key comes as a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`), with any line breaks
//! and text around it; a SEC1 `EC PRIVATE KEY` or an encrypted key is refused with the
//! `openssl` command that converts it. The assertion lives five minutes and carries a random
//! `jti`. No [`JwtError`] carries key material.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::Serialize;

/// How long an assertion is valid, in seconds.
const LIFETIME_SECS: u64 = 300;

/// The JOSE header of every assertion.
const HEADER: &str = r#"{"alg":"ES256","typ":"JWT"}"#;

/// The claims of a client assertion (RFC 7523 section 3).
#[derive(Debug, Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

/// A client assertion for `client_id` at `audience` (the authorization server's issuer or
/// token endpoint), issued at `now_unix` and valid for 300 seconds: a compact JWS
/// `header.claims.signature`, ES256 over the P-256 key in `private_key_pem` (PKCS#8 PEM).
pub(crate) fn client_assertion(
    private_key_pem: &str,
    client_id: &str,
    audience: &str,
    now_unix: u64,
) -> Result<String, JwtError> {
    let der = pkcs8_der(private_key_pem)?;
    let rng = SystemRandom::new();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        .map_err(|e| JwtError::InvalidKey { reason: reason(e) })?;
    drop(der);

    let mut jti = [0u8; 16];
    rng.fill(&mut jti).map_err(|_| JwtError::Random)?;
    let claims = Claims {
        iss: client_id,
        sub: client_id,
        aud: audience,
        iat: now_unix,
        exp: now_unix.saturating_add(LIFETIME_SECS),
        jti: jti.iter().map(|b| format!("{b:02x}")).collect(),
    };
    // Strings and integers only: serializing into a Vec cannot fail.
    let claims = serde_json::to_vec(&claims).expect("claims serialize");

    let mut jws = URL_SAFE_NO_PAD.encode(HEADER);
    jws.push('.');
    URL_SAFE_NO_PAD.encode_string(claims, &mut jws);
    let signature = key
        .sign(&rng, jws.as_bytes())
        .map_err(|_| JwtError::Random)?;
    jws.push('.');
    URL_SAFE_NO_PAD.encode_string(signature, &mut jws);
    Ok(jws)
}

/// The DER body of the first `PRIVATE KEY` block of `pem`.
pub(crate) fn pkcs8_der(pem: &str) -> Result<Vec<u8>, JwtError> {
    let mut labels = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(end) = after.find("-----") else {
            break;
        };
        let label = after[..end].trim();
        // A label is one short line of capitals ("PRIVATE KEY"); anything else is a broken
        // BEGIN line whose "label" ran into the key body, which must never reach an error.
        let plausible = label.len() <= 40
            && label
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ');
        if !plausible {
            return Err(JwtError::NotPem);
        }
        let body_and_rest = &after[end + "-----".len()..];
        if label != "PRIVATE KEY" {
            labels.push(label.to_owned());
            rest = body_and_rest;
            continue;
        }
        let Some(body_end) = body_and_rest.find("-----END PRIVATE KEY-----") else {
            return Err(JwtError::UnterminatedPem);
        };
        let body: String = body_and_rest[..body_end]
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        return STANDARD.decode(&body).map_err(|_| JwtError::Base64 {
            backslash: body.contains('\\'),
        });
    }
    Err(if labels.iter().any(|l| l == "EC PRIVATE KEY") {
        JwtError::Sec1
    } else if labels.iter().any(|l| l == "ENCRYPTED PRIVATE KEY") {
        JwtError::Encrypted
    } else if labels.is_empty() {
        JwtError::NotPem
    } else {
        JwtError::NoPrivateKey { labels }
    })
}

/// Why ring refused the key, in words; ring's reasons are fixed strings, never key material.
fn reason(e: ring::error::KeyRejected) -> String {
    match e.to_string().as_str() {
        "WrongAlgorithm" | "InvalidComponent" => {
            "not a P-256 EC key (ES256 needs P-256)".to_owned()
        }
        "InvalidEncoding" | "UnexpectedError" => "not a valid PKCS#8 EC key".to_owned(),
        other => format!("refused ({other})"),
    }
}

/// Why no client assertion could be made. None carries key material.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JwtError {
    /// No `-----BEGIN` line.
    #[error("the private_key_jwt key is not a PEM document (no `-----BEGIN` line)")]
    NotPem,
    /// A SEC1 `EC PRIVATE KEY`, which ring does not read.
    #[error("the private_key_jwt key is a SEC1 `EC PRIVATE KEY`; ES256 needs PKCS#8 (`-----BEGIN PRIVATE KEY-----`): convert it with `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-pkcs8.pem`")]
    Sec1,
    /// An encrypted PKCS#8 key.
    #[error("the private_key_jwt key is encrypted (`ENCRYPTED PRIVATE KEY`); decrypt it with `openssl pkey -in key.pem -out key-pkcs8.pem`")]
    Encrypted,
    /// PEM blocks, none of them a private key.
    #[error("the private_key_jwt key holds no `PRIVATE KEY` block (found {})", labels.join(", "))]
    NoPrivateKey {
        /// The labels of the blocks found (`CERTIFICATE`, `PUBLIC KEY`...).
        labels: Vec<String>,
    },
    /// `-----BEGIN PRIVATE KEY-----` without its `-----END PRIVATE KEY-----`.
    #[error("the private_key_jwt key has no `-----END PRIVATE KEY-----` line")]
    UnterminatedPem,
    /// The body of the block is not base64.
    #[error("the private_key_jwt key's PEM body is not valid base64{}", if *backslash { " (it holds a backslash: were the line breaks written as `\\n`?)" } else { "" })]
    Base64 {
        /// The body holds a backslash, as from line breaks escaped once too often.
        backslash: bool,
    },
    /// The DER is not a P-256 PKCS#8 key.
    #[error("the private_key_jwt key is {reason}")]
    InvalidKey {
        /// What is wrong with it, in words.
        reason: String,
    },
    /// The system random number generator failed (for the `jti` or the signature nonce).
    #[error("cannot sign a client assertion: the system random number generator failed")]
    Random,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    /// A fresh P-256 key: its PKCS#8 PEM, the base64 body, and the public key.
    fn key(line_break: &str) -> (String, String, Vec<u8>) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let body = STANDARD.encode(pkcs8.as_ref());
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----{line_break}{}{line_break}-----END PRIVATE KEY-----{line_break}",
            lines.join(line_break)
        );
        (pem, body, pair.public_key().as_ref().to_vec())
    }

    fn decode_json(segment: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).unwrap()).unwrap()
    }

    #[test]
    fn signs_an_es256_assertion_that_verifies() {
        for line_break in ["\n", "\r\n"] {
            let (pem, _, public) = key(line_break);
            let jwt = client_assertion(&pem, "client-1", "https://auth.example.com", 1_700_000_000)
                .unwrap();
            let parts: Vec<&str> = jwt.split('.').collect();
            assert_eq!(parts.len(), 3);
            assert!(!jwt.contains('='));

            let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
            assert_eq!(signature.len(), 64);
            let signed = format!("{}.{}", parts[0], parts[1]);
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
                .verify(signed.as_bytes(), &signature)
                .unwrap();

            assert_eq!(
                decode_json(parts[0]),
                serde_json::json!({"alg": "ES256", "typ": "JWT"})
            );
            let claims = decode_json(parts[1]);
            assert_eq!(claims["iss"], "client-1");
            assert_eq!(claims["sub"], "client-1");
            assert_eq!(claims["aud"], "https://auth.example.com");
            assert_eq!(claims["iat"], 1_700_000_000);
            assert_eq!(claims["exp"], 1_700_000_300);
            let jti = claims["jti"].as_str().unwrap();
            assert_eq!(jti.len(), 32);
            assert!(jti.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn each_assertion_has_its_own_jti() {
        let (pem, _, _) = key("\n");
        let jti = |jwt: String| decode_json(jwt.split('.').nth(1).unwrap())["jti"].clone();
        let a = client_assertion(&pem, "c", "a", 0).unwrap();
        let b = client_assertion(&pem, "c", "a", 0).unwrap();
        assert_ne!(jti(a), jti(b));
    }

    #[test]
    fn finds_the_key_among_other_blocks_and_text() {
        let (pem, _, _) = key("\n");
        let pem = format!(
            "Bag Attributes\n-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n  {pem}"
        );
        client_assertion(&pem, "c", "a", 0).unwrap();
    }

    /// Asserts the error message and its `Debug` hold nothing of the key.
    fn assert_no_key_material(err: &JwtError, body: &str) {
        let msg = format!("{err} {err:?}");
        for chunk in body.as_bytes().chunks(12) {
            let chunk = std::str::from_utf8(chunk).unwrap();
            assert!(!msg.contains(chunk), "{msg}");
        }
    }

    #[test]
    fn sec1_key_is_refused_with_the_conversion_command() {
        let (pem, body, _) = key("\n");
        let sec1 = pem.replace("PRIVATE KEY", "EC PRIVATE KEY");
        let err = client_assertion(&sec1, "c", "a", 0).unwrap_err();
        assert!(matches!(err, JwtError::Sec1), "{err}");
        assert!(err.to_string().contains("openssl pkcs8 -topk8 -nocrypt"));
        assert_no_key_material(&err, &body);
    }

    #[test]
    fn bad_keys_give_errors_without_key_material() {
        let (pem, body, _) = key("\n");
        // A body that is base64 but not a key.
        let garbage = STANDARD.encode(b"not a key, but some bytes that decode fine enough");
        let cases = [
            ("no pem at all", "NotPem"),
            ("-----BEGIN PRIVATE KEY-----\nMIGH", "UnterminatedPem"),
            (&*pem.replace("\n", "\\n"), "Base64"),
            (&*pem.replace(&body[10..14], "!!!!"), "Base64"),
            (
                &*format!("-----BEGIN PRIVATE KEY-----\n{garbage}\n-----END PRIVATE KEY-----"),
                "InvalidKey",
            ),
            (
                &*pem.replace("PRIVATE KEY", "ENCRYPTED PRIVATE KEY"),
                "Encrypted",
            ),
            (&*pem.replace("PRIVATE KEY", "PUBLIC KEY"), "NoPrivateKey"),
            // A BEGIN line without its closing dashes: the "label" would be the key body.
            (
                &*pem.replacen("-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY", 1),
                "NotPem",
            ),
        ];
        for (input, variant) in cases {
            let err = client_assertion(input, "c", "a", 0).unwrap_err();
            assert!(
                format!("{err:?}").starts_with(variant),
                "{variant}: {err:?}"
            );
            assert_no_key_material(&err, &body);
            assert_no_key_material(&err, &garbage);
        }
        let err = client_assertion(&pem.replace("\n", "\\n"), "c", "a", 0).unwrap_err();
        assert!(err.to_string().contains("backslash"), "{err}");
    }

    #[test]
    fn key_on_another_curve_is_refused() {
        // An Ed25519 PKCS#8 key: valid PKCS#8, not P-256.
        let rng = SystemRandom::new();
        let ed = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let body = STANDARD.encode(ed.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
        let err = client_assertion(&pem, "c", "a", 0).unwrap_err();
        assert!(err.to_string().contains("P-256"), "{err}");
        assert_no_key_material(&err, &body);
    }
}
