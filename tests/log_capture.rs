//! The tests' log capture (`tests/common/capture.rs`), in a binary of its own: whether a
//! capture sees the events of its thread depends on which dispatchers the process has
//! registered, so this test must not share the process with other tests' subscribers.

#[path = "common/capture.rs"]
mod capture;

/// A capture on this thread sees an event whose callsite another thread, one without a
/// subscriber, reached first (while the capture was the only subscriber in the process):
/// tracing-core cached that callsite as never enabled, for every thread, until
/// `capture::keep_interest_shared`. It made `http`'s
/// `a_get_stream_event_over_the_frame_limit_is_discarded_and_the_stream_goes_on` miss
/// `hello from GET` when another test reached the server-log callsite first.
#[test]
fn an_event_whose_callsite_a_thread_without_a_subscriber_reached_first_is_captured() {
    let (captured, _guard) = capture::Captured::install_local();
    fn emit(n: u32) {
        tracing::info!(n, "the same callsite");
    }
    std::thread::spawn(|| emit(1)).join().unwrap();
    emit(2);
    let text = captured.text();
    assert!(text.contains("the same callsite n=2"), "{text:?}");
    assert!(!text.contains("n=1"), "{text:?}");
}
