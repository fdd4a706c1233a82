//! `truncate`: the invariants of "Truncation, precisely" (module docs of `src/protocol/result.rs`) for
//! [`Truncatable::truncate_to`] on a [`ToolResult`].

use kaged_mcp::protocol::content::ContentBlock;
use kaged_mcp::protocol::result::truncation_marker;
use kaged_mcp::protocol::ToolResult;
use kaged_mcp_layers::truncate::Truncatable;

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
                    if o.text.starts_with(&k.text)
                        && o.text.is_char_boundary(k.text.len())
                        && k.annotations == o.annotations
                        && k.meta == o.meta)
        })
    })
}
