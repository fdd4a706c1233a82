//! The content blocks of a tool result: text, image, audio, resource link, embedded resource,
//! and a fallback that keeps any other kind as sent.
//!
//! Decoding is one pass and needs no buffering in the common case where `"type"` is the first
//! key (every SDK we know writes it first): the kind is read, then the rest of the object goes
//! straight into the struct of that kind. When `"type"` comes later, the block is read into a
//! JSON map first and converted after. A block of an unknown kind is kept as
//! [`ContentBlock::Unknown`] with its raw value, so a newer server never breaks the client.

use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::jsonrpc::CowStr;

#[path = "content/long.rs"]
mod long;
#[path = "content/text.rs"]
mod text;
use self::long::*;
pub(crate) use self::long::{json_bytes_path, sharing_from};
pub use self::text::Text;

/// One block of a tool result's `content`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `{"type":"text","text":…}`
    Text(TextContent),
    /// `{"type":"image","data":<base64>,"mimeType":…}`
    Image(ImageContent),
    /// `{"type":"audio","data":<base64>,"mimeType":…}`
    Audio(AudioContent),
    /// `{"type":"resource_link","uri":…,"name":…}`
    ResourceLink(ResourceLink),
    /// `{"type":"resource","resource":{"uri":…,"text"|"blob":…}}`
    Resource(EmbeddedResource),
    /// Any other kind, kept as the server sent it (including its `"type"`).
    Unknown(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<Text>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// The `"type"` of this block.
    pub fn kind(&self) -> &str {
        match self {
            Self::Text(_) => "text",
            Self::Image(_) => "image",
            Self::Audio(_) => "audio",
            Self::ResourceLink(_) => "resource_link",
            Self::Resource(_) => "resource",
            Self::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(t.text.as_str()),
            _ => None,
        }
    }
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextContent {
    /// The text: a `String`, or for a long text received over Streamable HTTP, a slice of the
    /// answer's body (see [`Text`]).
    #[serde(deserialize_with = "long_text")]
    pub text: Text,
    /// Audience, priority and such, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl TextContent {
    /// A text block without annotations.
    pub fn new(text: impl Into<Text>) -> Self {
        Self {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

impl ImageContent {
    /// An image block of base64 `data` of type `mime_type`, without annotations.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

impl AudioContent {
    /// An audio block of base64 `data` of type `mime_type`, without annotations.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

impl Resource {
    /// The resource at `uri` called `name`; the other fields unset.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            ..Self::default()
        }
    }
}

impl EmbeddedResource {
    /// `resource`, embedded without annotations.
    pub fn new(resource: ResourceContents) -> Self {
        Self {
            resource,
            annotations: None,
            meta: None,
        }
    }
}

impl TextResourceContents {
    /// The `text` of the resource at `uri`, its MIME type unknown.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        }
    }
}

impl BlobResourceContents {
    /// The base64 `blob` of the resource at `uri`, its MIME type unknown.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
        }
    }
}

/// An image block: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    /// Base64-encoded image data.
    #[serde(deserialize_with = "long_string")]
    pub data: String,
    /// For instance `image/png`.
    #[serde(default)]
    pub mime_type: String,
    /// As sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// An audio block: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AudioContent {
    /// Base64-encoded audio data.
    #[serde(deserialize_with = "long_string")]
    pub data: String,
    /// For instance `audio/wav`.
    #[serde(default)]
    pub mime_type: String,
    /// As sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// A link to a resource the client may fetch (a `resource_link` block): the same fields as a
/// listed [`Resource`], so the same type.
pub type ResourceLink = Resource;

/// A resource a server lists (`resources/list`), or a tool result links to (a
/// `resource_link` block: [`ResourceLink`]). Built with [`Resource::new`], then the fields a
/// caller sets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// As sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// A resource embedded in the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The resource, with its text or its base64 blob.
    pub resource: ResourceContents,
    /// As sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// The contents of an embedded resource: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// A text resource.
    Text(TextResourceContents),
    /// A binary resource.
    Blob(BlobResourceContents),
}

/// A text resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text.
    pub text: String,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// A binary resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded data.
    pub blob: String,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// Every field either kind of resource contents may carry, read in one pass.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyResourceContents {
    #[serde(default)]
    uri: String,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    blob: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Option<Value>,
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let any = AnyResourceContents::deserialize(deserializer)?;
        match (any.text, any.blob) {
            (Some(text), _) => Ok(Self::Text(TextResourceContents {
                uri: any.uri,
                mime_type: any.mime_type,
                text,
                meta: any.meta,
            })),
            (None, Some(blob)) => Ok(Self::Blob(BlobResourceContents {
                uri: any.uri,
                mime_type: any.mime_type,
                blob,
                meta: any.meta,
            })),
            (None, None) => Err(de::Error::custom(
                "embedded resource has neither `text` nor `blob`",
            )),
        }
    }
}

// --- ContentBlock (de)serialization ------------------------------------------------------

/// Serializes `{"type": kind, ...fields of inner}`.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(c) => Tagged {
                kind: "text",
                inner: c,
            }
            .serialize(serializer),
            Self::Image(c) => Tagged {
                kind: "image",
                inner: c,
            }
            .serialize(serializer),
            Self::Audio(c) => Tagged {
                kind: "audio",
                inner: c,
            }
            .serialize(serializer),
            Self::ResourceLink(c) => Tagged {
                kind: "resource_link",
                inner: c,
            }
            .serialize(serializer),
            Self::Resource(c) => Tagged {
                kind: "resource",
                inner: c,
            }
            .serialize(serializer),
            Self::Unknown(Value::Object(map)) => {
                let mut m = serializer.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            Self::Unknown(other) => other.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        let Some(first) = map.next_key::<CowStr<'de>>()? else {
            return Ok(ContentBlock::Unknown(Value::Object(Map::new())));
        };
        if first.0 == "type" {
            // The fast path: the kind first, the rest straight into its struct. A `type` that
            // is not a string makes an unknown block, as it does when it comes later.
            let kind = match map.next_value::<Kind<'de>>()? {
                Kind::Name(k) => CowStr(k),
                Kind::Other(other) => {
                    let mut obj =
                        Map::<String, Value>::deserialize(MapAccessDeserializer::new(map))?;
                    obj.insert("type".to_owned(), other);
                    return Ok(ContentBlock::Unknown(Value::Object(obj)));
                }
            };
            let rest = MapAccessDeserializer::new(map);
            return Ok(match &*kind.0 {
                "text" => ContentBlock::Text(TextContent::deserialize(rest)?),
                "image" => ContentBlock::Image(ImageContent::deserialize(rest)?),
                "audio" => ContentBlock::Audio(AudioContent::deserialize(rest)?),
                "resource_link" => ContentBlock::ResourceLink(ResourceLink::deserialize(rest)?),
                "resource" => ContentBlock::Resource(EmbeddedResource::deserialize(rest)?),
                other => {
                    let mut obj = Map::<String, Value>::deserialize(rest)?;
                    obj.insert("type".to_owned(), Value::String(other.to_owned()));
                    ContentBlock::Unknown(Value::Object(obj))
                }
            });
        }
        // `type` is not first (a server that sorts its keys: `text` < `type`, as serde_json's
        // `json!` does). The fields of a text block are read into their own slots and the
        // block is built from them once the kind is known: no map, no second pass. Anything
        // else is read into a map and converted after (`from_object`). The long fields take the
        // bytes path here too (`LongValue`): read as a `Value`, a 64 KiB text cost twice the
        // rest of the call (a word-at-a-time scan for control characters and a copy;
        // benches/README.md, issue 41); a string `text` is kept as a [`Text`], so that a long
        // one shares the frame's buffer as on the fast path.
        let mut late = Late::default();
        let mut key = Some(first);
        while let Some(CowStr(k)) = match key.take() {
            Some(k) => Some(k),
            None => map.next_key::<CowStr<'de>>()?,
        } {
            match &*k {
                "text" => late.text = Some(map.next_value_seed(LongValue)?),
                "type" => late.kind = Some(map.next_value::<Kind<'de>>()?),
                "annotations" => late.annotations = Some(map.next_value::<Value>()?),
                "_meta" => late.meta = Some(map.next_value::<Value>()?),
                other if LONG_FIELDS.contains(&other) => {
                    let value = map.next_value_seed(LongValue)?.into_value();
                    late.rest.insert(k.into_owned(), value);
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    late.rest.insert(k.into_owned(), value);
                }
            }
        }
        late.into_block().map_err(de::Error::custom)
    }
}

/// The fields of a block whose `type` came after some of them, as read.
#[derive(Default)]
struct Late<'de> {
    kind: Option<Kind<'de>>,
    text: Option<Long>,
    annotations: Option<Value>,
    meta: Option<Value>,
    /// Every other field.
    rest: Map<String, Value>,
}

impl Late<'_> {
    fn into_block(self) -> Result<ContentBlock, serde_json::Error> {
        let Self {
            kind,
            text,
            annotations,
            meta,
            mut rest,
        } = self;
        let is_text = matches!(&kind, Some(Kind::Name(k)) if k == "text");
        match text {
            Some(Long::Text(text)) if is_text => {
                // A text block: built from its slots. The other fields are ignored, as the
                // derived `Deserialize` of `TextContent` ignores them; `null` is absent.
                let present = |v: Option<Value>| v.filter(|v| !v.is_null());
                return Ok(ContentBlock::Text(TextContent {
                    text,
                    annotations: present(annotations),
                    meta: present(meta),
                }));
            }
            // Anything else: the whole object, converted as one whose type came first would be.
            Some(text) => {
                rest.insert("text".to_owned(), text.into_value());
            }
            None => {}
        }
        if let Some(a) = annotations {
            rest.insert("annotations".to_owned(), a);
        }
        if let Some(m) = meta {
            rest.insert("_meta".to_owned(), m);
        }
        match kind {
            Some(Kind::Name(k)) => rest.insert("type".to_owned(), Value::String(k.into_owned())),
            Some(Kind::Other(v)) => rest.insert("type".to_owned(), v),
            None => None,
        };
        ContentBlock::from_object(rest)
    }
}

/// The value of a block's `"type"`: a name, borrowed from the input when it has no escapes
/// (no allocation on the common path), or any other JSON value as sent. Hand-written rather
/// than `#[serde(untagged)]`: the untagged derive buffers every value first, which cost 2–4 %
/// of the client's CPU per call at 16 in flight (benches/stdio.rs, measured both ways).
enum Kind<'de> {
    Name(std::borrow::Cow<'de, str>),
    Other(Value),
}

impl<'de> Deserialize<'de> for Kind<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block type")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Kind<'de>, E> {
        Ok(Kind::Name(std::borrow::Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Kind<'de>, E> {
        Ok(Kind::Name(std::borrow::Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Kind<'de>, E> {
        Ok(Kind::Name(std::borrow::Cow::Owned(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Kind<'de>, E> {
        Ok(Kind::Other(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Kind<'de>, E> {
        Ok(Kind::Other(Value::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Kind<'de>, E> {
        Ok(Kind::Other(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Kind<'de>, E> {
        Ok(Kind::Other(Value::from(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Kind<'de>, E> {
        Ok(Kind::Other(Value::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<Kind<'de>, E> {
        Ok(Kind::Other(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind<'de>, D::Error> {
        Ok(Kind::Other(Value::deserialize(d)?))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Kind<'de>, A::Error> {
        let items = Vec::<Value>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Kind::Other(Value::Array(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Kind<'de>, A::Error> {
        // Through `Value`'s own visitor, which knows serde_json's private encodings (an
        // `arbitrary_precision` number arrives as a map).
        Ok(Kind::Other(Value::deserialize(
            MapAccessDeserializer::new(map),
        )?))
    }
}

impl ContentBlock {
    /// Builds a block from a JSON object whose `"type"` may be anywhere.
    fn from_object(mut obj: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let kind = match obj.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            // Not a string: an unknown block, as any kind not below.
            _ => String::new(),
        };
        let known = matches!(
            kind.as_str(),
            "text" | "image" | "audio" | "resource_link" | "resource"
        );
        if !known {
            return Ok(Self::Unknown(Value::Object(obj)));
        }
        obj.remove("type");
        let value = Value::Object(obj);
        Ok(match kind.as_str() {
            "text" => Self::Text(serde_json::from_value(value)?),
            "image" => Self::Image(serde_json::from_value(value)?),
            "audio" => Self::Audio(serde_json::from_value(value)?),
            "resource_link" => Self::ResourceLink(serde_json::from_value(value)?),
            _ => Self::Resource(serde_json::from_value(value)?),
        })
    }
}

#[cfg(test)]
#[path = "content/tests.rs"]
mod tests;
