//! How the text commands show content blocks (a tool result's in `call` and the shell, a
//! prompt message's in `prompt`): text as it is, everything else as one bracketed line that
//! says what it is. Images and audio: `[image image/png, 1234 bytes]` (the decoded size);
//! resource links: `[resource link URI: name, MIME]`; embedded resources: `[resource URI,
//! MIME]` followed by their text, or `[resource URI: blob MIME, N bytes]`. The server's
//! strings inside the brackets are one line with control characters shown escaped; a text
//! keeps its line breaks, every other control, escape sequence and invisible or
//! direction-changing code point shown escaped ([`crate::escape::visible_lines`]), so a
//! result cannot drive the terminal.

use base64::Engine as _;

use crate::protocol::{ContentBlock, ResourceContents};
use crate::transport::text::clean;

/// The longest server string shown inside a placeholder.
const MAX_FIELD: usize = 1024;

/// A server's string fit for a placeholder: one line, no control characters.
fn field(text: &str) -> String {
    clean(text, MAX_FIELD)
}

/// `N bytes` for base64 `data`, or what is wrong with it.
fn size(data: &str) -> String {
    // Whitespace inside the base64 (line-wrapped encoders) is not data.
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    match base64::engine::general_purpose::STANDARD.decode(compact.as_bytes()) {
        Ok(bytes) if bytes.len() == 1 => "1 byte".to_owned(),
        Ok(bytes) => format!("{} bytes", bytes.len()),
        Err(_) => format!("{} characters that are not valid base64", compact.len()),
    }
}

/// `MIME` when given, `unknown type` otherwise.
fn mime(mime: Option<&str>) -> String {
    match mime.filter(|m| !m.is_empty()) {
        Some(m) => field(m),
        None => "unknown type".to_owned(),
    }
}

/// A server's text, its lines kept, each line escaped.
fn text(text: &str) -> String {
    if !crate::escape::has_hidden(text) {
        return text.to_owned();
    }
    crate::escape::visible_lines(text).join("\n")
}

/// The text form of one content block: its text, or a placeholder line (an embedded text
/// resource: the placeholder, then its text on the lines after).
pub(super) fn block(b: &ContentBlock) -> String {
    match b {
        ContentBlock::Text(t) => text(&t.text),
        ContentBlock::Image(i) => {
            format!("[image {}, {}]", mime(Some(&i.mime_type)), size(&i.data))
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}, {}]", mime(Some(&a.mime_type)), size(&a.data))
        }
        ContentBlock::ResourceLink(l) => {
            let mut line = format!("[resource link {}", field(&l.uri));
            let name = l
                .title
                .as_deref()
                .filter(|t| !t.is_empty())
                .unwrap_or(&l.name);
            if !name.is_empty() {
                line.push_str(&format!(": {}", field(name)));
            }
            if let Some(m) = l.mime_type.as_deref().filter(|m| !m.is_empty()) {
                line.push_str(&format!(", {}", field(m)));
            }
            line.push(']');
            line
        }
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::Text(t) => format!(
                "[resource {}, {}]\n{}",
                field(&t.uri),
                mime(t.mime_type.as_deref()),
                text(&t.text)
            ),
            ResourceContents::Blob(b) => format!(
                "[resource {}: blob {}, {}]",
                field(&b.uri),
                mime(b.mime_type.as_deref()),
                size(&b.blob)
            ),
        },
        other => format!("[{} content]", field(other.kind())),
    }
}

/// Every block of `content`, one after the other, a line break between them.
pub(super) fn blocks(content: &[ContentBlock]) -> String {
    content.iter().map(block).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> ContentBlock {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn every_kind_of_block_is_shown() {
        let image = parse(json!({"type": "image", "data": "AAECAw==", "mimeType": "image/png"}));
        assert_eq!(block(&image), "[image image/png, 4 bytes]");
        let audio = parse(json!({"type": "audio", "data": "AA\n==", "mimeType": "audio/wav"}));
        assert_eq!(block(&audio), "[audio audio/wav, 1 byte]");
        let link = parse(
            json!({"type": "resource_link", "uri": "demo://r/1", "name": "One",
                                "mimeType": "text/plain"}),
        );
        assert_eq!(block(&link), "[resource link demo://r/1: One, text/plain]");
        let text = parse(json!({"type": "resource", "resource":
                                {"uri": "demo://r/2", "text": "hello", "mimeType": "text/plain"}}));
        assert_eq!(block(&text), "[resource demo://r/2, text/plain]\nhello");
        let blob =
            parse(json!({"type": "resource", "resource": {"uri": "demo://r/3", "blob": "AAAA"}}));
        assert_eq!(
            block(&blob),
            "[resource demo://r/3: blob unknown type, 3 bytes]"
        );
        let other = parse(json!({"type": "hologram", "x": 1}));
        assert_eq!(block(&other), "[hologram content]");
    }

    #[test]
    fn a_server_string_cannot_break_the_line_or_send_escapes() {
        let link =
            parse(json!({"type": "resource_link", "uri": "demo://x\n\u{1b}[2J", "name": "n"}));
        let shown = block(&link);
        assert!(
            !shown.contains('\n') && !shown.contains('\u{1b}'),
            "{shown:?}"
        );
        let t = parse(json!({"type": "text", "text": "line one\r\n\u{1b}[1Aover\u{202e}\nthree"}));
        assert_eq!(block(&t), "line one\n\\u{1b}[1Aover\\u{202e}\nthree");
        let bad = parse(json!({"type": "image", "data": "not base64!", "mimeType": "image/png"}));
        assert_eq!(
            block(&bad),
            "[image image/png, 10 characters that are not valid base64]"
        );
    }
}
