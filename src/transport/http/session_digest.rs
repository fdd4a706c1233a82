//! What telemetry shows of a Streamable HTTP session id: a digest that groups a session's spans
//! without giving the id (a credential for the session) back.

use std::sync::{Arc, OnceLock};

/// The digest `mcp.session.id` carries for session id `id`: the first 16 bytes of its
/// HMAC-SHA-256 under a key drawn at random once per process, in hex. The same session gives
/// the same digest in this process (a session lives in one), so an operator can group its
/// spans; the digest does not give the id back, even for a server whose ids are short or
/// guessable (the key is never shown).
pub fn session_digest(id: &[u8]) -> Arc<str> {
    use std::fmt::Write as _;
    static KEY: OnceLock<Option<ring::hmac::Key>> = OnceLock::new();
    let key = KEY.get_or_init(|| {
        ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &ring::rand::SystemRandom::new()).ok()
    });
    let Some(key) = key else {
        // No randomness from the system: no digest rather than a guessable one.
        return Arc::from("unavailable");
    };
    let digest = ring::hmac::sign(key, id);
    let mut hex = String::with_capacity(32);
    for b in &digest.as_ref()[..16] {
        let _ = write!(hex, "{b:02x}");
    }
    Arc::from(hex)
}
