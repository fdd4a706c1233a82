//! Unit tests of the content types: their wire shapes, the long-string bytes path and a
//! block whose `type` comes last.

use super::*;
use serde_json::json;

fn roundtrip(v: Value) -> ContentBlock {
    let block: ContentBlock = serde_json::from_value(v.clone()).unwrap();
    let from_str: ContentBlock = serde_json::from_str(&v.to_string()).unwrap();
    assert_eq!(block, from_str);
    assert_eq!(
        serde_json::to_value(&block).unwrap(),
        v,
        "serializes back as read"
    );
    block
}

#[test]
fn reads_every_kind_of_the_newest_spec() {
    assert!(
        matches!(roundtrip(json!({"type":"text","text":"hi"})), ContentBlock::Text(t) if t.text == "hi")
    );
    assert!(matches!(
        roundtrip(json!({"type":"image","data":"iVBO","mimeType":"image/png","annotations":{"priority":0.9}})),
        ContentBlock::Image(i) if i.mime_type == "image/png" && i.annotations.is_some()
    ));
    assert!(matches!(
        roundtrip(json!({"type":"audio","data":"UklG","mimeType":"audio/wav"})),
        ContentBlock::Audio(a) if a.data == "UklG"
    ));
    assert!(matches!(
        roundtrip(json!({"type":"resource_link","uri":"file:///a.rs","name":"a.rs","mimeType":"text/x-rust","size":3})),
        ContentBlock::ResourceLink(l) if l.size == Some(3)
    ));
    assert!(matches!(
        roundtrip(json!({"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"fn"}})),
        ContentBlock::Resource(EmbeddedResource { resource: ResourceContents::Text(t), .. }) if t.text == "fn"
    ));
    assert!(matches!(
        roundtrip(json!({"type":"resource","resource":{"uri":"file:///b","blob":"AAEC"}})),
        ContentBlock::Resource(EmbeddedResource { resource: ResourceContents::Blob(b), .. }) if b.blob == "AAEC"
    ));
}

#[test]
fn keeps_an_unknown_kind_as_sent() {
    let v = json!({"type":"hologram","frames":[1,2],"depth":3});
    let block = roundtrip(v);
    assert_eq!(block.kind(), "hologram");
    assert!(matches!(block, ContentBlock::Unknown(_)));
}

#[test]
fn long_fields_decode_escapes_refuse_bad_utf8_and_non_strings() {
    // The same on the client's bytes path and on the plain string path.
    for bytes_path in [false, true] {
        let decode = |text: &[u8]| {
            let plain = || serde_json::from_slice::<ContentBlock>(text);
            if bytes_path {
                json_bytes_path(plain)
            } else {
                plain()
            }
        };
        let block =
            decode(r#"{"type":"text","text":"a\"b\\c\n\u00e9\ud83d\ude00 é"}"#.as_bytes()).unwrap();
        assert!(
            matches!(&block, ContentBlock::Text(t) if t.text == "a\"b\\c\né😀 é"),
            "{bytes_path}: {block:?}"
        );
        let block = decode(br#"{"data":"QUJD","mimeType":"image/png","type":"image"}"#).unwrap();
        assert!(matches!(&block, ContentBlock::Image(i) if i.data == "QUJD"));
        for bad in [
            &br#"{"type":"text","text":"\ud800"}"#[..],
            &b"{\"type\":\"text\",\"text\":\"\xff\xfe\"}"[..],
            &br#"{"type":"text","text":["a"]}"#[..],
            &br#"{"type":"text","text":5}"#[..],
            &br#"{"type":"audio","data":null,"mimeType":"audio/wav"}"#[..],
        ] {
            let got = decode(bad);
            assert!(
                got.is_err(),
                "{bytes_path}: {}: {got:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // The one difference: a raw control character, invalid JSON, is kept on the bytes
        // path only.
        let raw_tab = decode(b"{\"type\":\"text\",\"text\":\"a\tb\"}");
        assert_eq!(raw_tab.is_ok(), bytes_path, "{raw_tab:?}");
    }
    // Through a `Value` (the path of a block whose type comes last): plain strings.
    let block: ContentBlock = json_bytes_path(|| {
        serde_json::from_value(json!({"data": "QUJD", "mimeType": "image/png", "type": "image"}))
    })
    .unwrap();
    assert!(matches!(&block, ContentBlock::Image(i) if i.data == "QUJD"));
    // The flag does not outlive its decode.
    assert!(!JSON_BYTES_PATH.with(std::cell::Cell::get));
}

#[test]
fn a_block_whose_type_comes_last_decodes_as_one_whose_type_comes_first() {
    // Sorted keys (`text` < `type`): a server built on `json!` or a map that sorts.
    for bytes_path in [false, true] {
        let decode = |text: &str| {
            let plain = || serde_json::from_str::<ContentBlock>(text);
            if bytes_path {
                json_bytes_path(plain)
            } else {
                plain()
            }
        };
        let long = r"é\\x\u00e9".repeat(LONG);
        let last = decode(&format!(r#"{{"text":"{long}","type":"text"}}"#)).unwrap();
        let first = decode(&format!(r#"{{"type":"text","text":"{long}"}}"#)).unwrap();
        let (ContentBlock::Text(last), ContentBlock::Text(first)) = (last, first) else {
            panic!("{bytes_path}: not text blocks");
        };
        assert_eq!(last.text, first.text, "{bytes_path}");
        assert_eq!(last.text.len(), "é\\xé".len() * LONG, "{bytes_path}");
        let image = decode(
            r#"{"annotations":{"priority":1},"data":"QUJD","mimeType":"image/png","type":"image"}"#,
        )
        .unwrap();
        assert!(
            matches!(&image, ContentBlock::Image(i) if i.data == "QUJD" && i.annotations.is_some()),
            "{bytes_path}: {image:?}"
        );
        let blob =
            decode(r#"{"resource":{"blob":"AAEC","uri":"file:///b"},"type":"resource"}"#).unwrap();
        assert!(
            matches!(&blob, ContentBlock::Resource(_)),
            "{bytes_path}: {blob:?}"
        );
        // An unknown kind keeps its long fields as sent: a string, an array.
        let unknown = decode(r#"{"data":[1,2],"text":"t","type":"hologram"}"#).unwrap();
        let ContentBlock::Unknown(v) = &unknown else {
            panic!("{bytes_path}: {unknown:?}");
        };
        assert_eq!(v, &json!({"data":[1,2],"text":"t","type":"hologram"}));
        // A text that is no string is refused, as when `type` comes first.
        assert!(
            decode(r#"{"text":5,"type":"text"}"#).is_err(),
            "{bytes_path}"
        );
        assert!(decode("{\"text\":\"\\ud800\",\"type\":\"text\"}").is_err());
        // The one difference between the paths: a long field that is a number, a boolean,
        // null or an object before an unknown `type` is refused on the bytes path (the
        // client's own decode of a frame), kept elsewhere.
        let odd = decode(r#"{"data":{"x":1},"type":"hologram"}"#);
        assert_eq!(odd.is_err(), bytes_path, "{odd:?}");
    }
}

#[test]
fn a_long_text_has_room_for_the_truncation_marker() {
    let long = "x".repeat(LONG);
    let block: ContentBlock =
        serde_json::from_str(&format!(r#"{{"type":"text","text":"{long}"}}"#)).unwrap();
    let ContentBlock::Text(mut t) = block else {
        panic!()
    };
    assert_eq!(t.text, long);
    assert!(!t.text.is_shared());
    assert!(t.text.make_mut().capacity() >= LONG + MARKER_ROOM);
    assert!(MARKER_ROOM >= "\n[... truncated at 18446744073709551615 bytes]".len());
    assert_eq!("\n[... truncated at 18446744073709551615 bytes]".len(), 46);
}

#[test]
fn a_block_type_without_escapes_is_borrowed_from_the_input() {
    let kind: Kind<'_> = serde_json::from_str(r#""text""#).unwrap();
    assert!(matches!(
        kind,
        Kind::Name(std::borrow::Cow::Borrowed("text"))
    ));
    let kind: Kind<'_> = serde_json::from_str(r#""te\u0078t""#).unwrap();
    assert!(matches!(kind, Kind::Name(std::borrow::Cow::Owned(ref k)) if k == "text"));
    let kind: Kind<'_> = serde_json::from_str("[1]").unwrap();
    assert!(matches!(kind, Kind::Other(Value::Array(_))));
}

#[test]
fn a_first_type_that_is_not_a_string_makes_an_unknown_block_as_sent() {
    for kind in [
        json!(5),
        json!(-5),
        json!(1.5),
        json!(true),
        json!(null),
        json!([1, "text", {"a": null}]),
        json!({"nested": ["text"]}),
    ] {
        let text = format!(r#"{{"type":{kind},"text":"x"}}"#);
        let block: ContentBlock = serde_json::from_str(&text).unwrap();
        let ContentBlock::Unknown(Value::Object(obj)) = &block else {
            panic!("{text}: {block:?}");
        };
        assert_eq!(obj.get("type"), Some(&kind), "{text}");
        assert_eq!(obj.get("text"), Some(&json!("x")), "{text}");
    }
}

#[test]
fn reads_a_block_whose_type_comes_last() {
    let block: ContentBlock =
        serde_json::from_str(r#"{"text":"late","_meta":{"a":1},"type":"text"}"#).unwrap();
    assert!(matches!(&block, ContentBlock::Text(t) if t.text == "late" && t.meta.is_some()));
    let block: ContentBlock = serde_json::from_str(r#"{"x":1,"type":"widget"}"#).unwrap();
    assert_eq!(block.kind(), "widget");
}

#[test]
fn ignores_unknown_fields_of_a_known_kind() {
    let block: ContentBlock =
        serde_json::from_str(r#"{"type":"text","text":"a","future":{"x":[1]}}"#).unwrap();
    assert_eq!(block, ContentBlock::text("a"));
}

#[test]
fn refuses_a_resource_without_text_or_blob() {
    let err = serde_json::from_str::<ContentBlock>(r#"{"type":"resource","resource":{"uri":"x"}}"#)
        .unwrap_err();
    assert!(
        err.to_string().contains("neither `text` nor `blob`"),
        "{err}"
    );
}

#[test]
fn refuses_a_text_block_without_text() {
    assert!(serde_json::from_str::<ContentBlock>(r#"{"type":"text"}"#).is_err());
}

#[test]
fn reads_escaped_keys_and_kinds() {
    let block: ContentBlock =
        serde_json::from_str(r#"{"typ\u0065":"t\u0065xt","text":"e"}"#).unwrap();
    assert_eq!(block, ContentBlock::text("e"));
}

/// Decodes `frame` as the client does a Streamable HTTP body: the bytes path, sharing from it.
fn decode_shared(frame: &bytes::Bytes) -> Result<Vec<ContentBlock>, serde_json::Error> {
    sharing_from(frame, || {
        json_bytes_path(|| serde_json::from_slice::<Vec<ContentBlock>>(frame))
    })
}

/// The shared text of `block`, checked to lie inside `frame`.
fn shared_text<'a>(block: &'a ContentBlock, frame: &bytes::Bytes) -> &'a str {
    let ContentBlock::Text(t) = block else {
        panic!("not a text block: {block:?}")
    };
    assert!(t.text.is_shared(), "copied: {:.40}", t.text.as_str());
    let range = frame.as_ptr_range();
    assert!(range.contains(&t.text.as_ptr()), "not a slice of the frame");
    &t.text
}

#[test]
fn a_long_text_is_a_slice_of_the_frame_whether_its_type_comes_first_or_last() {
    let long = "é".repeat(SHARE_MIN);
    for frame in [
        format!(r#"[{{"type":"text","text":"{long}","annotations":{{"priority":1}}}}]"#),
        format!(r#"[{{"annotations":{{"priority":1}},"text":"{long}","type":"text"}}]"#),
    ] {
        let frame = bytes::Bytes::from(frame);
        let blocks = decode_shared(&frame).unwrap();
        assert_eq!(shared_text(&blocks[0], &frame), long);
        let ContentBlock::Text(t) = &blocks[0] else {
            unreachable!()
        };
        assert_eq!(t.annotations, Some(json!({"priority": 1})));
        // Serialized, it is the block it was read from.
        assert_eq!(
            serde_json::to_value(&blocks[0]).unwrap(),
            json!({"type": "text", "text": long, "annotations": {"priority": 1}})
        );
    }
    // The source does not outlive its decode.
    assert!(SOURCE.with(|s| s.borrow().is_none()));
}

#[test]
fn texts_that_are_short_escaped_or_a_small_part_of_the_frame_are_copied() {
    let owned = |frame: String, want: &str| {
        let frame = bytes::Bytes::from(frame);
        for block in decode_shared(&frame).unwrap() {
            let ContentBlock::Text(t) = block else {
                panic!("not text")
            };
            assert!(!t.text.is_shared(), "shared: {:.40}", t.text.as_str());
            assert_eq!(t.text, want);
        }
    };
    // Short.
    let short = "x".repeat(SHARE_MIN - 1);
    owned(format!(r#"[{{"type":"text","text":"{short}"}}]"#), &short);
    // Escaped: its bytes are not the text's.
    let escaped = r"a\nb".repeat(SHARE_MIN);
    owned(
        format!(r#"[{{"type":"text","text":"{escaped}"}}]"#),
        &"a\nb".repeat(SHARE_MIN),
    );
    // Long, but under half of the frame: three of them.
    let long = "x".repeat(SHARE_MIN);
    let block = format!(r#"{{"type":"text","text":"{long}"}}"#);
    owned(format!("[{block},{block},{block}]"), &long);
    // Outside `sharing_from` nothing is shared.
    let frame = format!(r#"[{{"type":"text","text":"{long}"}}]"#);
    let blocks =
        json_bytes_path(|| serde_json::from_slice::<Vec<ContentBlock>>(frame.as_bytes())).unwrap();
    assert!(matches!(&blocks[0], ContentBlock::Text(t) if !t.text.is_shared() && t.text == long));
}

#[test]
fn a_long_text_that_is_not_utf8_fails_as_on_the_copying_path() {
    let mut frame = br#"[{"type":"text","text":""#.to_vec();
    frame.extend(std::iter::repeat_n(b'x', SHARE_MIN));
    frame.push(0xff);
    frame.extend(br#""}]"#);
    let len = frame.len();
    let shared = decode_shared(&bytes::Bytes::from(frame.clone())).unwrap_err();
    let copied =
        json_bytes_path(|| serde_json::from_slice::<Vec<ContentBlock>>(&frame)).unwrap_err();
    assert_eq!(shared.to_string(), copied.to_string());
    assert!(
        shared.to_string().contains(&format!("at byte {SHARE_MIN}")),
        "{shared} ({len} bytes)"
    );
}

#[test]
fn a_long_text_of_another_kind_of_block_is_kept_as_a_string() {
    let long = "x".repeat(SHARE_MIN);
    let frame = bytes::Bytes::from(format!(r#"[{{"text":"{long}","type":"hologram"}}]"#));
    let blocks = decode_shared(&frame).unwrap();
    assert_eq!(
        blocks[0],
        ContentBlock::Unknown(json!({"text": long, "type": "hologram"}))
    );
}

#[test]
fn a_text_block_whose_type_comes_last_is_the_block_whose_type_comes_first() {
    // The fields after `"type":"text"` in the order the server wrote them.
    let cases = [
        r#""text":"hi""#,
        r#""text":"a\"b\\c\né😀""#,
        r#""text":"hi","annotations":{"priority":1}"#,
        r#""annotations":null,"text":"hi","_meta":{"k":"v"}"#,
        r#""_meta":null,"text":"hi","unknown":[1,{"x":2}],"data":"QUJD""#,
        r#""annotations":{"audience":["user"]}"#,
        r#""text":7"#,
        r#""text":["a"]"#,
    ];
    for fields in cases {
        for bytes_path in [false, true] {
            let decode = |json: String| {
                let plain =
                    || serde_json::from_str::<ContentBlock>(&json).map_err(|e| e.to_string());
                if bytes_path {
                    json_bytes_path(plain)
                } else {
                    plain()
                }
            };
            let first = decode(format!(r#"{{"type":"text",{fields}}}"#));
            let last = decode(format!(r#"{{{fields},"type":"text"}}"#));
            match (&first, &last) {
                (Ok(f), Ok(l)) => assert_eq!(f, l, "{fields} ({bytes_path})"),
                // A refusal names the same problem; where serde found it may differ.
                (Err(f), Err(l)) => assert_eq!(
                    f.split(" at line").next(),
                    l.split(" at line").next(),
                    "{fields} ({bytes_path})"
                ),
                _ => panic!("{fields} ({bytes_path}): {first:?} / {last:?}"),
            }
        }
    }
}
