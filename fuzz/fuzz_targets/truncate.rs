//! A `ToolResult` built from the input (text, image, audio, resource link, embedded resource and
//! unknown blocks, optional `structuredContent`) cut with `Truncatable::truncate_to(cap)`; the
//! result must keep the invariants of "Truncation, precisely" (module docs of `src/protocol/result.rs`) (see
//! `kaged_mcp_fuzz::truncate::check_truncate`).
#![no_main]

use arbitrary::Arbitrary;
use kaged_mcp::protocol::content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, TextContent, TextResourceContents,
};
use kaged_mcp::protocol::ToolResult;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

#[derive(Debug, Arbitrary)]
struct Input {
    /// The cap; small, so cuts land inside blocks as often as between them.
    cap: u16,
    blocks: Vec<Block>,
    structured: Option<Json>,
    is_error: bool,
    meta: Option<String>,
}

#[derive(Debug, Arbitrary)]
enum Block {
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
enum Json {
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
            Block::Text { text, annotated } => ContentBlock::Text(TextContent {
                text: text.clone(),
                annotations: annotated.as_ref().map(|a| json!({ "audience": [a] })),
                meta: None,
            }),
            Block::Image { data, mime } => ContentBlock::Image(ImageContent {
                data: data.clone(),
                mime_type: mime.clone(),
                ..ImageContent::default()
            }),
            Block::Audio { data, mime } => ContentBlock::Audio(AudioContent {
                data: data.clone(),
                mime_type: mime.clone(),
                ..AudioContent::default()
            }),
            Block::Link { uri, name, size } => ContentBlock::ResourceLink(ResourceLink {
                uri: uri.clone(),
                name: name.clone(),
                size: *size,
                ..ResourceLink::default()
            }),
            Block::ResourceText { uri, text } => ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::Text(TextResourceContents {
                    uri: uri.clone(),
                    text: text.clone(),
                    ..TextResourceContents::default()
                }),
                annotations: None,
                meta: None,
            }),
            Block::ResourceBlob { uri, blob } => ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::Blob(BlobResourceContents {
                    uri: uri.clone(),
                    blob: blob.clone(),
                    ..BlobResourceContents::default()
                }),
                annotations: None,
                meta: None,
            }),
            Block::Unknown { kind, payload } => {
                let mut obj = serde_json::Map::new();
                obj.insert("type".into(), json!(kind));
                obj.insert("payload".into(), payload.value());
                ContentBlock::Unknown(Value::Object(obj))
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let mut result = ToolResult::default();
    result.content = input.blocks.iter().map(Block::build).collect();
    result.structured_content = input.structured.as_ref().map(Json::value);
    result.is_error = input.is_error;
    result.meta = input.meta.map(|m| json!({ "m": m }));
    kaged_mcp_fuzz::truncate::check_truncate(&result, usize::from(input.cap));
});
