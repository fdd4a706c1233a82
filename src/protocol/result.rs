//! [`ToolResult`], the answer to `tools/call`, and how it is cut to the daemon's result cap.
//!
//! # Truncation, precisely
//! The size of a result is the bytes the agent would receive: the UTF-8 bytes of text blocks,
//! the length of the base64 `data` of image and audio blocks, and the serialized JSON length of
//! every other block (embedded resources, resource links, unknown kinds) and of
//! `structuredContent`. A result whose size is at most the cap is left untouched.
//!
//! Over the cap, `structuredContent` comes first: kept whole when it fits the cap on its own,
//! dropped otherwise (it is JSON: a part of it would not parse). The `resource_link` blocks
//! come next: when they fit together in what is left, they are all kept whole, wherever they
//! are (a link is how the agent reads back what the cut removed: see
//! [`Session::read_resource_as`](crate::Session::read_resource_as)); a link is never cut. What
//! is left of the cap is the budget of the other blocks of `content`, visited in order: a block that fits is kept; the text
//! block that crosses the budget is cut at a character boundary (and kept if anything is left
//! of it); a non-text block that does not fit is dropped whole (later, smaller blocks may still
//! fit). A server that sends its structured result twice, as JSON text and as
//! `structuredContent` (the spec asks it to), so keeps the structured one whole and the text is
//! cut. Then the marker `\n[... truncated at N bytes]` (N the cap)
//! is appended to the last kept block if it is a text block, or pushed as a new text block
//! otherwise, and `truncated` is set. The marker itself is not counted against the cap.
//!
//! # Example
//! ```
//! use kaged_mcp::protocol::{ContentBlock, ToolResult};
//! use kaged_mcp_layers::truncate::Truncatable;
//!
//! let mut result = ToolResult::text("héllo wörld");
//! let removed = result.truncate_to(2); // "h" + the first byte of "é": cut before "é"
//! assert_eq!(removed, 12);
//! assert_eq!(result.content[0].as_text(), Some("h\n[... truncated at 2 bytes]"));
//! assert!(result.truncated);
//! ```

use std::io;

use kaged_mcp_layers::truncate::Truncatable;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::{ContentBlock, Text, TextContent};

/// The result of a `tools/call`.
///
/// A result with [`is_error`](Self::is_error) set is still a result (`Ok`), not a transport or
/// protocol error: the tool ran and reported a failure the model may act on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResult {
    /// The unstructured content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured content: any JSON value the tool returned (an object in the spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported a failure.
    #[serde(default, deserialize_with = "null_as_false")]
    pub is_error: bool,
    /// Set by the client when the result was cut to the result cap; never read from a server.
    #[serde(default, skip_deserializing)]
    pub truncated: bool,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// When [`truncated`](Self::truncated), the result's [`size`](Self::size) before the cut
    /// (what an operator compares with the cap); never on the wire.
    #[serde(skip)]
    pub truncated_from: Option<usize>,
}

fn null_as_false<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(deserializer)?.unwrap_or(false))
}

impl ToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<Text>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            ..Self::default()
        }
    }

    /// The text of every text block, joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        texts.join("\n")
    }

    /// The size the agent would receive, as defined in the [module docs](self).
    pub fn size(&self) -> usize {
        let blocks: usize = self.content.iter().map(block_size).sum();
        blocks + self.structured_content.as_ref().map_or(0, json_len)
    }
}

/// The marker appended to a truncated result.
pub fn truncation_marker(max_bytes: usize) -> String {
    format!("\n[... truncated at {max_bytes} bytes]")
}

/// The size of one block, as defined in the [module docs](self).
pub fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(t) => t.text.len(),
        ContentBlock::Image(i) => i.data.len(),
        ContentBlock::Audio(a) => a.data.len(),
        other => json_len(other),
    }
}

/// The length of `value` serialized as compact JSON, counted without allocating it.
fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serializing a `Value` or a content block into a counter cannot fail: no I/O error, no
    // non-string map keys. Should it ever, the length counted so far is a lower bound.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The largest `i <= at` that is a character boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl kaged_mcp_layers::stats::Outcome for ToolResult {
    fn is_error(&self) -> bool {
        self.is_error
    }
}

impl Truncatable for ToolResult {
    fn truncate_to(&mut self, max_bytes: usize) -> usize {
        let total = self.size();
        if total <= max_bytes {
            return 0;
        }
        let mut remaining = max_bytes;
        if let Some(structured) = self.structured_content.take() {
            let size = json_len(&structured);
            if size <= remaining {
                remaining -= size;
                self.structured_content = Some(structured);
            }
        }
        // The links, kept whole ahead of the rest when they fit together.
        let links: usize = self
            .content
            .iter()
            .filter(|b| matches!(b, ContentBlock::ResourceLink(_)))
            .map(block_size)
            .sum();
        let links_kept = links <= remaining;
        if links_kept {
            remaining -= links;
        }
        let mut kept = Vec::with_capacity(self.content.len() + 1);
        for block in self.content.drain(..) {
            if links_kept && matches!(block, ContentBlock::ResourceLink(_)) {
                kept.push(block);
                continue;
            }
            let size = block_size(&block);
            if size <= remaining {
                remaining -= size;
                kept.push(block);
                continue;
            }
            if let ContentBlock::Text(mut text) = block {
                let cut = floor_char_boundary(&text.text, remaining);
                if cut > 0 {
                    text.text.truncate(cut);
                    remaining -= cut;
                    kept.push(ContentBlock::Text(text));
                }
            }
            // A non-text block that does not fit is dropped whole.
        }
        let kept_size = max_bytes - remaining;
        let marker = truncation_marker(max_bytes);
        match kept.last_mut() {
            Some(ContentBlock::Text(last)) => last.text.push_str(&marker),
            _ => kept.push(ContentBlock::Text(TextContent::new(marker))),
        }
        self.content = kept;
        self.truncated = true;
        self.truncated_from = Some(total);
        total - kept_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::content::{
        EmbeddedResource, ImageContent, ResourceContents, TextResourceContents,
    };
    use proptest::prelude::*;
    use serde_json::json;

    fn image(len: usize) -> ContentBlock {
        ContentBlock::Image(ImageContent {
            data: "A".repeat(len),
            mime_type: "image/png".into(),
            ..ImageContent::default()
        })
    }

    #[test]
    fn reads_a_result_with_is_error_and_structured_content() {
        let r: ToolResult = serde_json::from_str(
            r#"{"structuredContent":{"result":"x"},"content":[{"type":"text","text":"x"}],"isError":true,"truncated":true}"#,
        )
        .unwrap();
        assert!(r.is_error);
        assert!(
            !r.truncated,
            "truncated is the client's own flag, never read"
        );
        assert_eq!(r.structured_content, Some(json!({"result":"x"})));
        let r: ToolResult = serde_json::from_str(r#"{"content":[],"isError":null}"#).unwrap();
        assert!(!r.is_error);
        let r: ToolResult = serde_json::from_str(r#"{}"#).unwrap();
        assert!(r.content.is_empty());
    }

    #[test]
    fn serializes_with_the_wire_names_and_truncated() {
        let mut r = ToolResult::text("a");
        r.structured_content = Some(json!({"k":1}));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"content":[{"type":"text","text":"a"}],"structuredContent":{"k":1},"isError":false,"truncated":false})
        );
    }

    #[test]
    fn a_result_exactly_at_the_cap_is_untouched() {
        let mut r = ToolResult::text("abcd");
        let before = r.clone();
        assert_eq!(r.truncate_to(4), 0);
        assert_eq!(r, before);
        assert!(!r.truncated);
    }

    #[test]
    fn one_byte_over_cuts_and_marks() {
        let mut r = ToolResult::text("abcde");
        assert_eq!(r.truncate_to(4), 1);
        assert_eq!(
            r.content,
            vec![ContentBlock::text("abcd\n[... truncated at 4 bytes]")]
        );
        assert!(r.truncated);
    }

    #[test]
    fn cuts_text_at_a_char_boundary() {
        let mut r = ToolResult::text("aé€x"); // 1 + 2 + 3 + 1 bytes
        assert_eq!(r.truncate_to(5), 4); // "aé" (3 bytes) kept, "€" would cross
        assert_eq!(
            r.content[0].as_text(),
            Some("aé\n[... truncated at 5 bytes]")
        );
    }

    #[test]
    fn drops_a_non_text_block_that_does_not_fit_and_keeps_later_ones_that_do() {
        let mut r = ToolResult {
            content: vec![
                ContentBlock::text("12345"),
                image(100),
                ContentBlock::text("abc"),
            ],
            ..ToolResult::default()
        };
        assert_eq!(r.truncate_to(10), 100);
        assert_eq!(
            r.content,
            vec![
                ContentBlock::text("12345"),
                ContentBlock::text("abc\n[... truncated at 10 bytes]")
            ]
        );
    }

    fn link(uri: &str) -> ContentBlock {
        ContentBlock::ResourceLink(crate::protocol::ResourceLink {
            uri: uri.into(),
            name: "r".into(),
            ..Default::default()
        })
    }

    #[test]
    fn resource_links_are_kept_whole_ahead_of_the_text_that_crosses_the_cap() {
        // The text comes first and alone would use the whole cap: the link after it, the way
        // back to what the cut removes, is kept all the same.
        let big = "x".repeat(1000);
        let mut r = ToolResult {
            content: vec![
                ContentBlock::text(big),
                link("demo://resource/dynamic/text/1"),
            ],
            ..ToolResult::default()
        };
        let link_size = block_size(&r.content[1]);
        r.truncate_to(100);
        assert!(r.truncated);
        assert_eq!(r.content.len(), 3, "{:?}", r.content);
        assert_eq!(
            r.content[0].as_text().map(|t| t.len()),
            Some(100 - link_size),
            "the text gets what the link leaves"
        );
        assert_eq!(r.content[1], link("demo://resource/dynamic/text/1"));
        assert_eq!(
            r.content[2].as_text(),
            Some("\n[... truncated at 100 bytes]")
        );
    }

    #[test]
    fn links_that_do_not_fit_together_are_dropped_whole_never_cut() {
        let mut r = ToolResult {
            content: vec![link("a://1"), link("a://2"), ContentBlock::text("t")],
            ..ToolResult::default()
        };
        let one = block_size(&r.content[0]);
        r.truncate_to(one + 1);
        assert_eq!(
            r.content[0],
            link("a://1"),
            "the first fits and is kept whole"
        );
        assert!(
            !r.content.contains(&link("a://2")),
            "the second does not fit and is dropped, not cut"
        );
    }

    #[test]
    fn the_marker_is_a_new_text_block_when_the_last_kept_block_is_not_text() {
        let mut r = ToolResult {
            content: vec![image(4), image(100)],
            ..ToolResult::default()
        };
        assert_eq!(r.truncate_to(10), 100);
        assert_eq!(r.content.len(), 2);
        assert_eq!(r.content[0], image(4));
        assert_eq!(
            r.content[1].as_text(),
            Some("\n[... truncated at 10 bytes]")
        );
    }

    #[test]
    fn an_empty_cap_keeps_only_the_marker() {
        let mut r = ToolResult::text("abc");
        assert_eq!(r.truncate_to(0), 3);
        assert_eq!(
            r.content,
            vec![ContentBlock::text("\n[... truncated at 0 bytes]")]
        );
    }

    #[test]
    fn structured_content_counts_its_serialized_length_and_is_kept_whole_or_dropped_whole() {
        // It fits the cap: kept whole, and the text gets what it leaves (20 - 17 = 3 bytes).
        let mut r = ToolResult::text("xxxx");
        r.structured_content = Some(json!({"result":"xxxx"})); // 17 bytes serialized
        assert_eq!(r.size(), 4 + 17);
        assert_eq!(r.truncate_to(20), 1);
        assert_eq!(r.truncated_from, Some(21));
        assert_eq!(r.structured_content, Some(json!({"result":"xxxx"})));
        assert_eq!(
            r.content[0].as_text(),
            Some("xxx\n[... truncated at 20 bytes]")
        );
        // It does not fit the cap on its own: dropped whole, the text keeps the cap.
        let mut r = ToolResult::text("xxxx");
        r.structured_content = Some(json!({"result":"xxxx"}));
        assert_eq!(r.truncate_to(16), 17);
        assert_eq!(r.structured_content, None);
        assert_eq!(
            r.content[0].as_text(),
            Some("xxxx\n[... truncated at 16 bytes]")
        );
        let mut r2 = ToolResult::text("xxxx");
        r2.structured_content = Some(json!({"result":"xxxx"}));
        assert_eq!(r2.truncate_to(21), 0);
    }

    #[test]
    fn a_result_sent_twice_keeps_its_structured_copy_when_the_text_is_cut() {
        // The memory server's search_nodes: the same JSON as text and as structuredContent.
        let value = json!({"entities": [{"name": "a".repeat(40)}, {"name": "b".repeat(40)}]});
        let mut r = ToolResult::text(value.to_string());
        r.structured_content = Some(value.clone());
        let cap = r.size() - 10;
        assert!(r.truncate_to(cap) > 0);
        assert!(r.truncated);
        assert_eq!(r.structured_content, Some(value));
    }

    #[test]
    fn a_resource_block_counts_its_serialized_length() {
        let block = ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Text(TextResourceContents {
                uri: "u".into(),
                mime_type: None,
                text: "t".into(),
                meta: None,
            }),
            annotations: None,
            meta: None,
        });
        let expected = serde_json::to_vec(&block).unwrap().len();
        assert_eq!(block_size(&block), expected);
        assert_eq!(
            expected,
            r#"{"type":"resource","resource":{"uri":"u","text":"t"}}"#.len()
        );
    }

    // --- properties ------------------------------------------------------------------------

    fn block_strategy() -> impl Strategy<Value = ContentBlock> {
        prop_oneof![
            4 => "\\PC{0,40}".prop_map(ContentBlock::text),
            1 => (0usize..60).prop_map(image),
            1 => "[a-z]{0,20}".prop_map(|uri| ContentBlock::ResourceLink(crate::protocol::ResourceLink {
                uri, name: "n".into(), ..Default::default()
            })),
            1 => "\\PC{0,20}".prop_map(|text| ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::Text(TextResourceContents { uri: "r".into(), mime_type: None, text, meta: None }),
                annotations: None, meta: None,
            })),
        ]
    }

    fn result_strategy() -> impl Strategy<Value = ToolResult> {
        (
            prop::collection::vec(block_strategy(), 0..6),
            prop::option::of("[a-z]{0,30}".prop_map(|s| json!({ "s": s }))),
            any::<bool>(),
        )
            .prop_map(|(content, structured_content, is_error)| ToolResult {
                content,
                structured_content,
                is_error,
                ..ToolResult::default()
            })
    }

    /// Removes the marker from a truncated result; `false` if it is not where it belongs.
    fn strip_marker(r: &mut ToolResult, cap: usize) -> bool {
        let marker = truncation_marker(cap);
        let Some(ContentBlock::Text(last)) = r.content.last_mut() else {
            return false;
        };
        if !last.text.ends_with(&marker) {
            return false;
        }
        let keep = last.text.len() - marker.len();
        last.text.truncate(keep);
        true
    }

    /// Whether `kept` is, in order, a subsequence of `original` where each block is equal to
    /// its original or is a text block cut from it (a prefix ending at a char boundary).
    fn is_ordered_selection(kept: &[ContentBlock], original: &[ContentBlock]) -> bool {
        let mut j = 0;
        for k in kept {
            loop {
                let Some(o) = original.get(j) else {
                    return false;
                };
                j += 1;
                let same = k == o;
                let cut = match (k, o) {
                    (ContentBlock::Text(k), ContentBlock::Text(o)) => {
                        o.text.starts_with(k.text.as_str())
                    }
                    _ => false,
                };
                if same || cut {
                    break;
                }
            }
        }
        true
    }

    proptest! {
        #[test]
        fn a_result_within_the_cap_is_never_changed(r in result_strategy(), slack in 0usize..10) {
            let cap = r.size() + slack;
            let mut t = r.clone();
            prop_assert_eq!(t.truncate_to(cap), 0);
            prop_assert_eq!(t, r);
        }

        #[test]
        fn a_truncated_result_fits_the_cap_and_keeps_an_ordered_selection(
            r in result_strategy(), cut in 1usize..200
        ) {
            let total = r.size();
            prop_assume!(total > 0);
            let cap = total.saturating_sub(cut);
            let mut t = r.clone();
            let removed = t.truncate_to(cap);
            prop_assert!(t.truncated);
            prop_assert!(strip_marker(&mut t, cap), "marker at the end of the last text block");
            let kept = t.size();
            prop_assert!(kept <= cap, "kept {} > cap {}", kept, cap);
            prop_assert_eq!(removed, total - kept);
            prop_assert!(removed > 0);
            // A marker block pushed on its own is empty once stripped.
            let mut blocks = t.content.clone();
            if !is_ordered_selection(&blocks, &r.content)
                && matches!(blocks.last(), Some(ContentBlock::Text(x)) if x.text.is_empty())
            {
                blocks.pop();
            }
            prop_assert!(is_ordered_selection(&blocks, &r.content));
            if t.structured_content.is_some() {
                prop_assert_eq!(&t.structured_content, &r.structured_content);
            }
            prop_assert_eq!(t.is_error, r.is_error);
        }

        #[test]
        fn a_cut_text_block_loses_at_most_one_char_beyond_the_budget(
            text in "\\PC{1,200}", cap in 0usize..200
        ) {
            let mut t = ToolResult::text(text.clone());
            let removed = t.truncate_to(cap);
            if text.len() <= cap {
                prop_assert_eq!(removed, 0);
            } else {
                prop_assert!(strip_marker(&mut t, cap));
                let kept = t.content[0].as_text().unwrap().to_owned();
                prop_assert!(text.starts_with(&kept));
                prop_assert!(kept.len() <= cap && cap - kept.len() < 4, "kept {} of cap {}", kept.len(), cap);
                prop_assert!(text.is_char_boundary(kept.len()));
            }
        }
    }
}
