//! `truncate`: the invariants of "Truncation, precisely" (module docs of `src/protocol/result.rs`) for
//! [`Truncatable::truncate_to`] on a [`ToolResult`].
//!
//! Two ways in: an input starting with `cap ` is text, `cap N` and a line break then a
//! `tools/call` result as a server sends it (JSON, read as the client reads it; an input that
//! does not read is skipped), so a seed reads like one; any other input is the bytes
//! [`arbitrary`] builds an [`Input`] from (a cap of 0–65535 and blocks of every kind).

use arbitrary::{Arbitrary, Unstructured};
use kaged_mcp::protocol::content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, TextContent, TextResourceContents,
};
use kaged_mcp::protocol::result::truncation_marker;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp_layers::truncate::Truncatable;
use serde_json::{json, Value};

/// The `truncate` target: a result and a cap from `data` (see the [module docs](self)),
/// through [`check_truncate`].
pub fn truncate(data: &[u8]) {
    if let Some(text) = data.strip_prefix(b"cap ") {
        let Some(line) = text.iter().position(|b| *b == b'\n') else {
            return;
        };
        let Some(cap) = std::str::from_utf8(&text[..line])
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
        else {
            return;
        };
        if let Ok(result) = serde_json::from_slice::<ToolResult>(&text[line + 1..]) {
            check_truncate(&result, cap);
        }
        return;
    }
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut result = ToolResult::default();
    result.content = input.blocks.iter().map(Block::build).collect();
    result.structured_content = input.structured.as_ref().map(Json::value);
    result.is_error = input.is_error;
    result.meta = input.meta.map(|m| json!({ "m": m }));
    check_truncate(&result, usize::from(input.cap));
}

/// A result built with `arbitrary`.
#[derive(Debug, Arbitrary)]
pub struct Input {
    /// The cap; small, so cuts land inside blocks as often as between them.
    cap: u16,
    blocks: Vec<Block>,
    structured: Option<Json>,
    is_error: bool,
    meta: Option<String>,
}

/// A content block of each kind.
#[derive(Debug, Arbitrary)]
pub enum Block {
    Text {
        text: String,
        annotated: Option<String>,
    },
    Image {
        data: String,
        mime: String,
    },
    Audio {
        data: String,
        mime: String,
    },
    Link {
        uri: String,
        name: String,
        size: Option<u64>,
    },
    ResourceText {
        uri: String,
        text: String,
    },
    ResourceBlob {
        uri: String,
        blob: String,
    },
    Unknown {
        kind: String,
        payload: Json,
    },
}

/// A small JSON value; [`Json::value`] stops at depth 16 so the check is about truncation,
/// not about the recursion limits of `serde_json`.
#[derive(Debug, Arbitrary)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn value(&self) -> Value {
        self.value_at(0)
    }

    fn value_at(&self, depth: usize) -> Value {
        if depth > 16 {
            return Value::Null;
        }
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => json!(b),
            Json::Int(i) => json!(i),
            // NaN and infinities are not JSON: serde_json turns them into null.
            Json::Float(f) => json!(f),
            Json::Str(s) => json!(s),
            Json::Array(a) => Value::Array(a.iter().map(|v| v.value_at(depth + 1)).collect()),
            Json::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), v.value_at(depth + 1)))
                    .collect(),
            ),
        }
    }
}

impl Block {
    fn build(&self) -> ContentBlock {
        match self {
            Block::Text { text, annotated } => {
                let mut block = TextContent::new(text.clone());
                block.annotations = annotated.as_ref().map(|a| json!({ "audience": [a] }));
                ContentBlock::Text(block)
            }
            Block::Image { data, mime } => {
                ContentBlock::Image(ImageContent::new(data.clone(), mime.clone()))
            }
            Block::Audio { data, mime } => {
                ContentBlock::Audio(AudioContent::new(data.clone(), mime.clone()))
            }
            Block::Link { uri, name, size } => {
                let mut link = ResourceLink::new(uri.clone(), name.clone());
                link.size = *size;
                ContentBlock::ResourceLink(link)
            }
            Block::ResourceText { uri, text } => ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::Text(TextResourceContents::new(uri.clone(), text.clone())),
            )),
            Block::ResourceBlob { uri, blob } => ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::Blob(BlobResourceContents::new(uri.clone(), blob.clone())),
            )),
            Block::Unknown { kind, payload } => {
                let mut obj = serde_json::Map::new();
                obj.insert("type".into(), json!(kind));
                obj.insert("payload".into(), payload.value());
                ContentBlock::Unknown(Value::Object(obj))
            }
        }
    }
}

/// `truncate`: cuts a copy of `result` to `cap` and checks "Truncation, precisely" of the
/// design:
///
/// - a result whose size is at most `cap` is untouched and not marked;
/// - otherwise `truncated` is set, the marker ends the last block (a text block), the size
///   without the marker is at most `cap` (so with it at most `cap` + the marker's length);
/// - the kept blocks are, in order, the original blocks or a cut text block that is a prefix of
///   its original (cut at a char boundary, as a `String` it cannot be otherwise);
/// - `structuredContent` is kept whole or dropped, and kept whenever it fits the cap on its
///   own; `isError` and `_meta` are kept; `truncated_from` is the size before the cut;
/// - the bytes reported removed are the size before minus the size kept.
pub fn check_truncate(result: &ToolResult, cap: usize) {
    let before = result.size();
    let mut cut = result.clone();
    let removed = cut.truncate_to(cap);
    if before <= cap {
        assert_eq!(removed, 0, "a result within the cap lost bytes");
        assert_eq!(&cut, result, "a result within the cap was changed");
        assert!(
            !cut.truncated,
            "a result within the cap was marked truncated"
        );
        return;
    }
    assert!(cut.truncated, "a cut result is not marked truncated");
    assert!(removed > 0, "a cut result reports 0 bytes removed");
    let marker = truncation_marker(cap);
    assert!(
        cut.size() <= cap + marker.len(),
        "size {} after cutting to {cap} exceeds cap + marker ({})",
        cut.size(),
        marker.len()
    );
    assert_eq!(cut.is_error, result.is_error, "isError changed");
    assert_eq!(cut.meta, result.meta, "_meta changed");
    if cut.structured_content.is_some() {
        assert_eq!(
            cut.structured_content, result.structured_content,
            "structuredContent was changed rather than kept or dropped"
        );
    }
    if let Some(structured) = &result.structured_content {
        let len = serde_json::to_vec(structured).map_or(usize::MAX, |v| v.len());
        assert!(
            len > cap || cut.structured_content.is_some(),
            "structuredContent of {len} bytes dropped although it fits the cap {cap}"
        );
    }
    assert_eq!(
        cut.truncated_from,
        Some(before),
        "truncated_from is not the size before"
    );

    // Strip the marker from the last block, which must be a text block ending with it.
    let mut blocks = cut.content.clone();
    let Some(ContentBlock::Text(last)) = blocks.last_mut() else {
        panic!("a cut result does not end with a text block: {blocks:?}");
    };
    assert!(
        last.text.ends_with(&marker),
        "the last block does not end with the marker: {:?}",
        last.text
    );
    let keep = last.text.len() - marker.len();
    last.text.truncate(keep);
    let marker_alone = last.text.is_empty() && last.annotations.is_none() && last.meta.is_none();

    let mut stripped = cut.clone();
    stripped.content = blocks.clone();
    let kept = stripped.size();
    assert!(kept <= cap, "kept {kept} bytes, over the cap {cap}");
    assert_eq!(removed, before - kept, "removed bytes miscounted");

    // The marker pushed as a block of its own is empty once stripped.
    if !is_ordered_selection(&blocks, &result.content) && marker_alone {
        blocks.pop();
    }
    assert_ordered_selection(&blocks, &result.content);
}

/// Panics unless `kept` is an ordered selection of `original` (see [`is_ordered_selection`]).
pub fn assert_ordered_selection(kept: &[ContentBlock], original: &[ContentBlock]) {
    assert!(
        is_ordered_selection(kept, original),
        "kept blocks are not an ordered selection of the original:\nkept {kept:?}\noriginal {original:?}"
    );
}

/// Whether `kept` is, in order, a subsequence of `original`, each block equal to its original
/// or a text block cut from it (a prefix, with the same annotations and `_meta`).
fn is_ordered_selection(kept: &[ContentBlock], original: &[ContentBlock]) -> bool {
    let mut rest = original.iter();
    kept.iter().all(|k| {
        rest.any(|o| {
            k == o
                || matches!((k, o), (ContentBlock::Text(k), ContentBlock::Text(o))
                    if o.text.starts_with(k.text.as_str())
                        && o.text.is_char_boundary(k.text.len())
                        && k.annotations == o.annotations
                        && k.meta == o.meta)
        })
    })
}
