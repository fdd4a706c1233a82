//! JSON-RPC 2.0 envelopes: request ids, error objects, and the messages the client writes.
//!
//! Incoming frames are decoded by the client session in one pass, typed by the request they
//! answer (see [`crate::client`]); this module holds the pieces both directions share.

use std::fmt;
use std::hash::Hasher;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// "Parse error": the server could not parse what it received.
pub const PARSE_ERROR: i64 = -32700;
/// "Invalid request".
pub const INVALID_REQUEST: i64 = -32600;
/// "Method not found": the answer to `roots/list`, `sampling/createMessage`, `elicitation/create`
/// without an elicitation handler, and every unknown server→client request.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// "Invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// "Internal error".
pub const INTERNAL_ERROR: i64 = -32603;

/// Fibonacci hashing of our own sequential ids: one multiply, well spread over the table. For
/// the maps keyed by the ids of the client's own requests (never by a server's: it could pick
/// colliding ones), where SipHash was ~300 instructions a lookup.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A JSON-RPC request id: a number or a string. Ids may start at 0.
///
/// The client numbers its own requests with a counter; servers pick theirs freely (the Python
/// SDK and server-everything start at 0, some servers use strings).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id. JSON-RPC allows any number; integers are what every SDK sends.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// The id as one of the client's own counters, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Self::Number(n) => u64::try_from(*n).ok(),
            Self::String(_) => None,
        }
    }
}

impl From<u64> for RequestId {
    fn from(n: u64) -> Self {
        // Client ids are a counter starting at 0: they never come near i64::MAX.
        Self::Number(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => serializer.serialize_i64(*n),
            Self::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC id (a number or a string)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom(format!("request id {v} is out of range")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
                // 3.0 is a legal JSON number for the id 3; anything fractional is not an id we
                // could have sent, keep it as text so it can still be echoed back.
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    #[allow(clippy::cast_possible_truncation)]
                    Ok(RequestId::Number(v as i64))
                } else {
                    Ok(RequestId::String(v.to_string()))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// A string borrowed from the input when it has no escapes, owned otherwise.
pub(crate) struct CowStr<'de>(pub(crate) std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CowVisitor;
        impl<'de> Visitor<'de> for CowVisitor {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<CowStr<'de>, E> {
                Ok(CowStr(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CowStr<'de>, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<CowStr<'de>, E> {
                Ok(CowStr(std::borrow::Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(CowVisitor)
    }
}

/// A JSON-RPC error object, as found in an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JsonRpcError {
    /// The error code (see the constants of this module).
    pub code: i64,
    /// A short description.
    #[serde(default)]
    pub message: String,
    /// Extra information, if the server sent any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// An error object with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// "Method not found" for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }
}

impl fmt::Display for JsonRpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for JsonRpcError {}

/// The `"jsonrpc": "2.0"` member, serialized as a constant.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Version2;

impl Serialize for Version2 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("2.0")
    }
}

/// A request the client writes: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`. The client
/// writes these bytes by hand on its hot path (`client::rpc::write_request`); this type is
/// the reference its tests compare against.
#[cfg(test)]
#[derive(Debug, Serialize)]
pub(crate) struct OutgoingRequest<'a, P> {
    pub(crate) jsonrpc: Version2,
    pub(crate) id: u64,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// A notification the client writes.
#[derive(Debug, Serialize)]
pub(crate) struct OutgoingNotification<'a, P> {
    pub(crate) jsonrpc: Version2,
    pub(crate) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<P>,
}

/// The client's answer to a server→client request: a result or an error, never both.
#[derive(Debug, Serialize)]
pub(crate) struct OutgoingResponse<'a> {
    pub(crate) jsonrpc: Version2,
    pub(crate) id: &'a RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<&'a JsonRpcError>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_read_numbers_strings_and_zero() {
        let id: RequestId = serde_json::from_str("0").unwrap();
        assert_eq!(id, RequestId::Number(0));
        assert_eq!(id.as_u64(), Some(0));
        let id: RequestId = serde_json::from_str("\"p1\"").unwrap();
        assert_eq!(id, RequestId::String("p1".into()));
        assert_eq!(id.as_u64(), None);
        let id: RequestId = serde_json::from_str("7.0").unwrap();
        assert_eq!(id, RequestId::Number(7));
        let id: RequestId = serde_json::from_str("-3").unwrap();
        assert_eq!(id.as_u64(), None);
        assert!(serde_json::from_str::<RequestId>("null").is_err());
        assert!(serde_json::from_str::<RequestId>("{}").is_err());
    }

    #[test]
    fn request_ids_serialize_as_they_came() {
        assert_eq!(serde_json::to_string(&RequestId::Number(5)).unwrap(), "5");
        assert_eq!(
            serde_json::to_string(&RequestId::String("a".into())).unwrap(),
            "\"a\""
        );
    }

    #[test]
    fn outgoing_request_has_the_jsonrpc_envelope() {
        let req = OutgoingRequest {
            jsonrpc: Version2,
            id: 3,
            method: "ping",
            params: None::<()>,
        };
        assert_eq!(
            serde_json::to_string(&req).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#
        );
    }

    #[test]
    fn an_error_object_without_message_still_reads() {
        let e: JsonRpcError = serde_json::from_str(r#"{"code":-32601}"#).unwrap();
        assert_eq!(e.code, METHOD_NOT_FOUND);
        assert_eq!(e.to_string(), "JSON-RPC error -32601: ");
    }
}
