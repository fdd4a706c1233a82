//! Resources, resource templates and reads (`resources/list`, `resources/templates/list`,
//! `resources/read`, `resources/subscribe`), and how a read is capped to the daemon's result
//! cap.
//!
//! # Capping a read
//! A read is capped like a tool result, by its own rule (see [`ReadResourceResult::cap`]).
//! The size of a read is what the agent would receive, counted as for a tool result: the UTF-8
//! bytes of the texts and the base64 length of the blobs (URIs, MIME types and `_meta` are not
//! counted, as a text block's are not). Blobs are never cut (a part of a file is not that
//! file), so the blobs must fit the cap together, or the read is refused with [`ReadTooLarge`]
//! naming their size and the cap.
//! The text contents share what the blobs leave, visited in order: a text that fits is kept,
//! the one that crosses the budget is cut at a character boundary, the ones after it are
//! dropped, and the marker `\n[... truncated at N bytes]` is appended to the last text kept
//! (`truncated` set). A read at or under the cap is untouched.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::ResourceContents;
use super::modern::RequestMeta;
use super::result::truncation_marker;

pub use super::content::Resource;

/// A family of resources a server lists (`resources/templates/list`): an RFC 6570 URI
/// template whose variables the client fills (and may complete: `completion/complete` with a
/// [`CompletionRef::ResourceTemplate`](super::prompts::CompletionRef::ResourceTemplate)).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template, e.g. `demo://resource/dynamic/text/{resourceId}`.
    pub uri_template: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every resource it names, when they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// As sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// One `resources/list` page.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourcesPage {
    /// The resources of this page.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// The cursor of the next page, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One `resources/templates/list` page.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListTemplatesPage {
    /// The resource templates of this page.
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplate>,
    /// The cursor of the next page, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// The answer to `resources/read`: the resource's contents (one or more: a directory may read
/// as its entries), text or base64 blob each.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// The contents, as sent (text cut by [`cap`](Self::cap) when over the cap).
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
    /// Set by the client when a text was cut to the result cap; never read from a server.
    #[serde(default, skip_deserializing)]
    pub truncated: bool,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// A read whose blobs do not fit the result cap: it is refused whole, never cut.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadTooLarge {
    /// The URI of the first blob.
    pub uri: String,
    /// The size of its blobs as the agent would receive them (base64), in bytes.
    pub size: u64,
    /// The bytes they decode to.
    pub decoded: u64,
    /// The cap, in bytes.
    pub cap: usize,
}

impl std::fmt::Display for ReadTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the binary contents of {} are {} bytes as base64 ({} decoded), over the result cap \
             of {} bytes; a blob is never cut",
            super::uri::redact_uri(&self.uri),
            self.size,
            self.decoded,
            self.cap
        )
    }
}

impl std::error::Error for ReadTooLarge {}

/// The number of bytes `b64` decodes to (padding and whitespace not counted).
pub fn decoded_len(b64: &str) -> u64 {
    let chars = b64
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count() as u64;
    chars * 3 / 4
}

impl ReadResourceResult {
    /// The text of every text content, joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .contents
            .iter()
            .filter_map(|c| match c {
                ResourceContents::Text(t) => Some(t.text.as_str()),
                ResourceContents::Blob(_) => None,
            })
            .collect();
        texts.join("\n")
    }

    /// Caps the read at `max_bytes` as the [module docs](self) say; returns the number of text
    /// bytes removed.
    ///
    /// # Errors
    /// [`ReadTooLarge`] when the blobs (as base64) are over `max_bytes` (the read is left as it
    /// was).
    pub fn cap(&mut self, max_bytes: usize) -> Result<usize, ReadTooLarge> {
        let mut blobs = 0u64;
        let mut decoded = 0u64;
        let mut first_blob = None;
        let mut texts = 0usize;
        for c in &self.contents {
            match c {
                ResourceContents::Blob(b) => {
                    blobs += b.blob.len() as u64;
                    decoded += decoded_len(&b.blob);
                    first_blob.get_or_insert(&b.uri);
                }
                ResourceContents::Text(t) => texts += t.text.len(),
            }
        }
        if blobs > max_bytes as u64 {
            return Err(ReadTooLarge {
                uri: first_blob.cloned().unwrap_or_default(),
                size: blobs,
                decoded,
                cap: max_bytes,
            });
        }
        let mut budget = max_bytes - blobs as usize;
        if texts <= budget {
            return Ok(0);
        }
        let mut removed = 0;
        let mut cut_done = false;
        let mut last_text = None;
        self.contents.retain_mut(|c| {
            let ResourceContents::Text(t) = c else {
                return true;
            };
            if cut_done {
                removed += t.text.len();
                return false;
            }
            if t.text.len() <= budget {
                budget -= t.text.len();
                return true;
            }
            let mut cut = budget;
            while !t.text.is_char_boundary(cut) {
                cut -= 1;
            }
            removed += t.text.len() - cut;
            t.text.truncate(cut);
            cut_done = true;
            true
        });
        for (i, c) in self.contents.iter().enumerate() {
            if matches!(c, ResourceContents::Text(_)) {
                last_text = Some(i);
            }
        }
        if let Some(ResourceContents::Text(t)) = last_text.and_then(|i| self.contents.get_mut(i)) {
            t.text.push_str(&truncation_marker(max_bytes));
        }
        self.truncated = true;
        Ok(removed)
    }
}

/// `resources/list`, `resources/templates/list` and `prompts/list` parameters: the cursor, and
/// `_meta` in a modern session.
#[derive(Debug, Serialize)]
pub(crate) struct PageParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<&'a str>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
}

/// `resources/read`, `resources/subscribe` and `resources/unsubscribe` parameters.
#[derive(Debug, Serialize)]
pub(crate) struct UriParams<'a> {
    pub(crate) uri: &'a str,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
    /// A multi round-trip retry's answers to the server's input requests (2026-07-28).
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    pub(crate) input_responses: Option<&'a serde_json::Map<String, Value>>,
    /// A multi round-trip retry's echoed state.
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<&'a str>,
}

/// The parameters of `notifications/resources/updated`.
#[derive(Debug, Deserialize)]
pub(crate) struct ResourceUpdatedParams {
    pub(crate) uri: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::content::{BlobResourceContents, TextResourceContents};
    use serde_json::json;

    fn text(uri: &str, text: &str) -> ResourceContents {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            text: text.into(),
            ..Default::default()
        })
    }

    fn blob(uri: &str, bytes: usize) -> ResourceContents {
        // 3 bytes per 4 base64 characters.
        ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            blob: "AAAA".repeat(bytes / 3),
            ..Default::default()
        })
    }

    #[test]
    fn reads_text_and_blob_contents_and_never_reads_truncated() {
        let r: ReadResourceResult = serde_json::from_value(json!({
            "contents": [
                {"uri": "a://t", "mimeType": "text/plain", "text": "hi"},
                {"uri": "a://b", "blob": "AAEC"}
            ],
            "truncated": true
        }))
        .unwrap();
        assert!(!r.truncated);
        assert_eq!(r.contents.len(), 2);
        assert!(matches!(&r.contents[1], ResourceContents::Blob(b) if b.blob == "AAEC"));
        assert_eq!(r.joined_text(), "hi");
    }

    #[test]
    fn the_decoded_length_ignores_padding() {
        assert_eq!(decoded_len("AAEC"), 3);
        assert_eq!(decoded_len("AAE="), 2);
        assert_eq!(decoded_len("AA=="), 1);
        assert_eq!(decoded_len(""), 0);
    }

    #[test]
    fn a_read_at_the_cap_is_untouched() {
        let mut r = ReadResourceResult {
            contents: vec![text("a://t", "abcd")],
            ..Default::default()
        };
        let before = r.clone();
        assert_eq!(r.cap(4), Ok(0));
        assert_eq!(r, before);
    }

    #[test]
    fn text_over_the_cap_is_cut_at_a_char_boundary_and_marked() {
        let mut r = ReadResourceResult {
            contents: vec![
                text("a://1", "abc"),
                text("a://2", "dé€f"),
                text("a://3", "xyz"),
            ],
            ..Default::default()
        };
        // "abc" fits; 3 bytes are left for "dé€f": "dé" is kept, "€f" (4 bytes) and "xyz"
        // go.
        assert_eq!(r.cap(6), Ok(4 + 3));
        assert!(r.truncated);
        assert_eq!(r.contents.len(), 2, "texts after the cut are dropped");
        assert_eq!(r.joined_text(), "abc\ndé\n[... truncated at 6 bytes]");
    }

    /// A cap that falls inside a character (here inside each of "é", "€" and "😀" in turn) cuts
    /// before that character, never through it (`String::truncate` would panic there).
    #[test]
    fn a_cap_inside_a_multibyte_character_cuts_before_it() {
        let whole = "aé€😀z";
        for cap in 0..whole.len() {
            let mut r = ReadResourceResult {
                contents: vec![text("a://t", whole)],
                ..Default::default()
            };
            let kept = (0..=cap)
                .rev()
                .find(|&i| whole.is_char_boundary(i))
                .unwrap();
            assert_eq!(r.cap(cap), Ok(whole.len() - kept), "cap {cap}");
            assert_eq!(
                r.joined_text(),
                format!("{}\n[... truncated at {cap} bytes]", &whole[..kept]),
                "cap {cap}"
            );
        }
    }

    #[test]
    fn a_blob_over_the_cap_is_refused_whole_never_cut() {
        let mut r = ReadResourceResult {
            contents: vec![blob("a://big.bin", 300)],
            ..Default::default()
        };
        let before = r.clone();
        let err = r.cap(100).unwrap_err();
        assert_eq!(err.size, 400, "the base64 the agent would receive");
        assert_eq!(err.decoded, 300);
        assert_eq!(err.cap, 100);
        assert_eq!(err.uri, "a://big.bin");
        assert!(
            err.to_string()
                .contains("400 bytes as base64 (300 decoded), over the result cap of 100 bytes"),
            "{err}"
        );
        assert_eq!(r, before);
    }

    #[test]
    fn texts_share_what_the_blobs_leave() {
        // 6 bytes are 8 base64 characters: 4 are left for the text.
        let mut r = ReadResourceResult {
            contents: vec![text("a://t", "0123456789"), blob("a://b", 6)],
            ..Default::default()
        };
        assert_eq!(r.cap(12), Ok(6));
        assert!(
            matches!(&r.contents[1], ResourceContents::Blob(_)),
            "the blob is kept whole"
        );
        assert_eq!(r.joined_text(), "0123\n[... truncated at 12 bytes]");
    }
}
