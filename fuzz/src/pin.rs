//! `lock_file`: `mcp.lock` texts parsed as a session loads them ([`Lock::parse`]), and what a
//! parsed lock is used for: rendering, comparing with itself, judging tools against it.

use std::collections::BTreeMap;
use std::path::Path;

use kaged_mcp::pin::{digest, Lock, LockReport};

/// Parsing never panics; an error names the file and says something; a parsed lock renders
/// to text that parses back to the same lock and renders to the same bytes (determinism),
/// every digest matches its definition, and comparing the lock with itself finds nothing.
pub fn lock_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let file = Path::new("fuzz/mcp.lock");
    let lock = match Lock::parse(&text, file) {
        Ok(lock) => lock,
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.contains("fuzz/mcp.lock"), "{shown}");
            assert!(!e.message.is_empty());
            return;
        }
    };
    // A key repeated in an object is refused, wherever the accepted text had it: the same
    // text with its `version` given twice at the top is never a lock.
    if let Some(open) = text.find('{') {
        let doubled = format!("{}{{\"version\": 1,{}", &text[..open], &text[open + 1..]);
        assert!(
            Lock::parse(&doubled, file).is_err(),
            "a repeated `version` key was accepted"
        );
    }
    let rendered = lock.render();
    let back = Lock::parse(&rendered, file).expect("a rendered lock parses");
    assert_eq!(back, lock);
    assert_eq!(back.render(), rendered, "rendering is deterministic");
    for server in lock.servers.values() {
        for tool in server.tools.values() {
            assert_eq!(digest(&tool.definition), tool.sha256);
        }
    }
    let observed: BTreeMap<String, Result<_, String>> = lock
        .servers
        .iter()
        .map(|(k, s)| (k.clone(), Ok(s.clone())))
        .collect();
    let declared: Vec<String> = lock.servers.keys().cloned().collect();
    let report = LockReport::compare(&lock, &observed, &declared, true);
    assert!(!report.differs(), "{report}");
}
