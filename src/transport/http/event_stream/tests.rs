use proptest::prelude::*;

use super::*;

const MIB: usize = 1024 * 1024;

fn parse_chunks(limit: usize, chunks: &[&[u8]]) -> Vec<SseItem> {
    let mut parser = EventParser::new(limit);
    let mut out = Vec::new();
    for chunk in chunks {
        parser.push(chunk, &mut out);
    }
    out
}

fn parse(text: &str) -> Vec<SseItem> {
    parse_chunks(16 * MIB, &[text.as_bytes()])
}

fn event(name: &str, data: &str) -> SseItem {
    SseItem::Event(SseEvent {
        event: name.to_owned(),
        data: data.to_owned(),
        id: None,
    })
}

fn events(items: &[SseItem]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|item| match item {
            SseItem::Event(e) => (e.event.clone(), e.data.clone()),
            SseItem::Oversized(o) => ("<oversized>".to_owned(), o.len.to_string()),
        })
        .collect()
}

#[test]
fn parses_the_endpoint_and_a_message_with_lf_endings() {
    let items = parse(
        "event: endpoint\ndata: /message?sessionId=abc\n\nevent: message\ndata: {\"id\":0}\n\n",
    );
    assert_eq!(
        items,
        vec![
            event("endpoint", "/message?sessionId=abc"),
            event("message", "{\"id\":0}")
        ]
    );
}

#[test]
fn crlf_and_lone_cr_end_lines_like_lf() {
    let lf = parse("event: a\ndata: 1\n\ndata: 2\n\n");
    assert_eq!(parse("event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"), lf);
    assert_eq!(parse("event: a\rdata: 1\r\rdata: 2\r\r"), lf);
    assert_eq!(
        events(&lf),
        [("a".into(), "1".into()), ("message".into(), "2".into())]
    );
}

#[test]
fn a_crlf_split_between_chunks_ends_one_line() {
    let items = parse_chunks(MIB, &[b"data: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n"]);
    assert_eq!(items, vec![event("message", "1"), event("message", "2")]);
}

#[test]
fn comments_and_unknown_fields_are_ignored() {
    let items = parse(": ping - 2026-01-01\n\n: hello\ndata: x\nfoo: bar\n: mid\n\n");
    assert_eq!(items, vec![event("message", "x")]);
}

#[test]
fn data_lines_are_joined_with_newlines() {
    let items = parse("data: {\"a\":1,\ndata: \"b\":2}\ndata\ndata:\n\n");
    assert_eq!(items, vec![event("message", "{\"a\":1,\n\"b\":2}\n\n")]);
}

#[test]
fn only_one_space_after_the_colon_is_dropped() {
    let items = parse("data:x\n\ndata:  y\n\n");
    assert_eq!(items, vec![event("message", "x"), event("message", " y")]);
}

#[test]
fn an_event_without_data_is_not_dispatched() {
    let items = parse("event: endpoint\n\nid: 3\n\nretry: 10\n\ndata: z\n\n");
    assert_eq!(events(&items), [("message".into(), "z".into())]);
}

#[test]
fn retry_and_id_fields_are_read() {
    let mut parser = EventParser::new(MIB);
    let mut out = Vec::new();
    parser.push(b"retry: 3000\nid: 7\ndata: a\n\nretry: x1\n\n", &mut out);
    assert_eq!(parser.retry(), Some(Duration::from_millis(3000)));
    match &out[..] {
        [SseItem::Event(e)] => assert_eq!(e.id.as_deref(), Some("7")),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_leading_bom_is_dropped_even_split_byte_by_byte() {
    let text = "\u{feff}event: endpoint\r\ndata: /m\r\n\r\n";
    let whole = parse(text);
    assert_eq!(whole, vec![event("endpoint", "/m")]);
    let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
    assert_eq!(parse_chunks(MIB, &bytes), whole);
}

#[test]
fn a_bom_later_in_the_stream_is_not_dropped() {
    let items = parse("data: 1\n\n\u{feff}data: 2\n\n");
    // The second BOM is part of a field name, so the line is an unknown field.
    assert_eq!(items, vec![event("message", "1")]);
}

#[test]
fn bytes_that_only_start_like_a_bom_are_kept() {
    // 0xEF 0xBB then ':' is no BOM: the bytes belong to the first line (an unknown field).
    let items = parse_chunks(MIB, &[b"\xEF", b"\xBB: x\ndata: 1\n\n"]);
    assert_eq!(items, vec![event("message", "1")]);
}

#[test]
fn an_unfinished_event_at_the_end_is_not_dispatched() {
    assert_eq!(parse("data: 1\n\ndata: 2\n"), vec![event("message", "1")]);
}

#[test]
fn invalid_utf8_in_data_is_replaced() {
    let items = parse_chunks(MIB, &[b"data: a\xFFb\n\n"]);
    assert_eq!(items, vec![event("message", "a\u{fffd}b")]);
}

#[test]
fn a_one_mib_data_line_comes_through_in_small_chunks() {
    let payload = "x".repeat(MIB);
    let text = format!("event: message\r\ndata: {payload}\r\n\r\ndata: after\r\n\r\n");
    let chunks: Vec<&[u8]> = text.as_bytes().chunks(16 * 1024).collect();
    let items = parse_chunks(16 * MIB, &chunks);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], event("message", &payload));
    assert_eq!(items[1], event("message", "after"));
}

#[test]
fn an_event_over_the_limit_is_skipped_and_reported_with_its_edges() {
    let limit = 64 * 1024;
    let body = "y".repeat(4 * limit);
    let msg = format!("{{\"jsonrpc\":\"2.0\",\"id\":41,\"result\":\"{body}\",\"id2\":\"end\"}}");
    let text = format!("event: message\ndata: {msg}\n\ndata: next\n\n");
    let mut parser = EventParser::new(limit);
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(1000) {
        parser.push(chunk, &mut out);
        // Memory stays bounded while the big line goes by.
        assert!(parser.line.capacity() + parser.data.capacity() <= 2 * limit + 2048);
    }
    assert_eq!(out.len(), 2, "{:?}", events(&out));
    let SseItem::Oversized(big) = &out[0] else {
        panic!("expected an oversized report, got {:?}", events(&out));
    };
    assert_eq!(big.event.as_deref(), Some("message"));
    assert_eq!(big.head.len(), OVERSIZE_HEAD);
    assert!(big.head.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":41,"));
    assert_eq!(big.tail.len(), OVERSIZE_TAIL);
    assert!(big.tail.ends_with(b",\"id2\":\"end\"}"));
    assert_eq!(big.len, msg.len() as u64);
    assert_eq!(out[1], event("message", "next"));
}

#[test]
fn an_endless_event_is_given_once_as_it_passes_the_limit() {
    let limit = 64 * 1024;
    let mut parser = EventParser::new(limit);
    let mut out = Vec::new();
    parser.push(
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"",
        &mut out,
    );
    let piece = vec![b'x'; 1000];
    let mut passing = Vec::new();
    for _ in 0..(4 * limit / piece.len()) {
        parser.push(&piece, &mut out);
        passing.extend(parser.take_passing());
        assert!(parser.line.capacity() + parser.data.capacity() <= 2 * limit + 2048);
    }
    assert!(out.is_empty(), "{:?}", events(&out));
    assert_eq!(passing.len(), 1, "given once");
    let first = &passing[0];
    assert!(first.head.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":7,"));
    assert!(first.len > (limit - 100) as u64 && first.len <= (limit + 1000) as u64);
    // Its end, if it comes, is reported as usual; a new event is not passing.
    parser.push(b"\"}\n\ndata: next\n\n", &mut out);
    assert!(matches!(&out[..], [SseItem::Oversized(o), _] if o.len > 4 * limit as u64 - 1000));
    assert_eq!(parser.take_passing(), None);
}

#[test]
fn an_event_that_passes_the_limit_and_ends_in_one_chunk_is_not_passing() {
    let limit = 2048;
    let text = format!("data: {}\n\n", "y".repeat(3 * limit));
    let mut parser = EventParser::new(limit);
    let mut out = Vec::new();
    parser.push(text.as_bytes(), &mut out);
    assert!(matches!(out[..], [SseItem::Oversized(_)]));
    assert_eq!(parser.take_passing(), None);
}

#[test]
fn many_small_data_lines_over_the_limit_are_skipped_too() {
    let limit = 2048;
    let mut text = String::from("event: message\n");
    for i in 0..1000 {
        text.push_str(&format!("data: line{i}\n"));
    }
    text.push_str("\ndata: ok\n\n");
    let items = parse_chunks(limit, &[text.as_bytes()]);
    assert_eq!(items.len(), 2);
    let SseItem::Oversized(big) = &items[0] else {
        panic!("expected an oversized report");
    };
    assert!(big.head.starts_with(b"line0\nline1\n"), "{:?}", big.head);
    assert!(
        big.tail.ends_with(b"line998\nline999"),
        "{:?}",
        String::from_utf8_lossy(&big.tail)
    );
    let data: Vec<String> = (0..1000).map(|i| format!("line{i}")).collect();
    assert_eq!(big.len, data.join("\n").len() as u64);
    assert_eq!(items[1], event("message", "ok"));
}

#[test]
fn an_event_exactly_at_the_limit_is_kept() {
    let data = "z".repeat(1000);
    let line = format!("data: {data}");
    let items = parse_chunks(line.len(), &[format!("{line}\n\n").as_bytes()]);
    assert_eq!(items, vec![event("message", &data)]);
    let items = parse_chunks(line.len() - 1, &[format!("{line}\n\n").as_bytes()]);
    assert!(matches!(items[..], [SseItem::Oversized(_)]));
}

/// One field line of a generated stream.
#[derive(Debug, Clone)]
enum Line {
    Data(String),
    Event(String),
    Id(String),
    Retry(u32),
    Comment(String),
}

fn line_strategy() -> impl Strategy<Value = Line> {
    let text = "[a-zA-Z0-9 {}\":,é\u{1F600}]{0,40}";
    prop_oneof![
        4 => text.prop_map(Line::Data),
        1 => "[a-z]{1,10}".prop_map(Line::Event),
        1 => "[a-z0-9]{0,5}".prop_map(Line::Id),
        1 => any::<u32>().prop_map(Line::Retry),
        1 => text.prop_map(Line::Comment),
    ]
}

fn render(events: &[Vec<Line>], eol: &str, bom: bool) -> String {
    let mut s = String::new();
    if bom {
        s.push('\u{feff}');
    }
    for lines in events {
        for line in lines {
            match line {
                Line::Data(d) => s.push_str(&format!("data: {d}")),
                Line::Event(e) => s.push_str(&format!("event: {e}")),
                Line::Id(i) => s.push_str(&format!("id: {i}")),
                Line::Retry(r) => s.push_str(&format!("retry: {r}")),
                Line::Comment(c) => s.push_str(&format!(":{c}")),
            }
            s.push_str(eol);
        }
        s.push_str(eol);
    }
    s
}

/// What a correct parser must produce for `events`, computed from the lines, not by parsing.
fn expected(events: &[Vec<Line>]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for lines in events {
        let mut name = None;
        let mut data: Option<String> = None;
        for line in lines {
            match line {
                Line::Data(d) => {
                    // `render` writes `data: {d}`: the parser drops that one space only.
                    data = Some(match data {
                        Some(prev) => format!("{prev}\n{d}"),
                        None => d.clone(),
                    });
                }
                Line::Event(e) => name = Some(e.clone()),
                _ => {}
            }
        }
        if let Some(data) = data {
            out.push((name.unwrap_or_else(|| "message".into()), data));
        }
    }
    out
}

proptest! {
    #[test]
    fn any_split_of_a_stream_yields_the_same_events(
        evs in proptest::collection::vec(proptest::collection::vec(line_strategy(), 1..6), 0..8),
        eol in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        bom in any::<bool>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
    ) {
        let text = render(&evs, eol, bom);
        let bytes = text.as_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.push(0);
        points.push(bytes.len());
        points.sort_unstable();
        points.dedup();
        let chunks: Vec<&[u8]> = points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect();
        let split = parse_chunks(MIB, &chunks);
        let whole = parse_chunks(MIB, &[bytes]);
        prop_assert_eq!(&split, &whole);
        prop_assert_eq!(events(&whole), expected(&evs));
    }

    #[test]
    fn a_stream_split_byte_by_byte_yields_the_same_events(
        evs in proptest::collection::vec(proptest::collection::vec(line_strategy(), 1..4), 0..4),
        eol in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
    ) {
        let text = render(&evs, eol, true);
        let chunks: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        prop_assert_eq!(events(&parse_chunks(MIB, &chunks)), expected(&evs));
    }

    #[test]
    fn oversized_reports_do_not_depend_on_the_split(
        sizes in proptest::collection::vec(0usize..3000, 1..6),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
    ) {
        let limit = 1024;
        let mut text = String::new();
        for (i, n) in sizes.iter().enumerate() {
            text.push_str(&format!("event: e{i}\ndata: {}\ndata: tail{i}\n\n", "q".repeat(*n)));
        }
        let bytes = text.as_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.extend([0, bytes.len()]);
        points.sort_unstable();
        points.dedup();
        let chunks: Vec<&[u8]> = points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect();
        let split = parse_chunks(limit, &chunks);
        prop_assert_eq!(&split, &parse_chunks(limit, &[bytes]));
        prop_assert_eq!(split.len(), sizes.len());
        for (item, n) in split.iter().zip(&sizes) {
            // The data so far (n bytes) plus the line being read ("data: tailN").
            prop_assert_eq!(matches!(item, SseItem::Oversized(_)), n + 11 > limit);
        }
    }
}
