//! The stdin writer: frames queued whole on a shared buffer, written eagerly but coalesced.
//!
//! [`StdioOutbound::send_with`] serializes the frame straight into the buffer under a
//! synchronous mutex (never held across an await), so a frame is queued whole or not at all.
//! The first frame of a burst is written at once by the caller, with a non-blocking `write(2)`.
//! Later callers of the same burst only append, and write themselves once [`COALESCE_BYTES`]
//! are waiting; the first of them wakes the writer task, which sends the tail and ends the
//! burst. The reader ends a burst too, each time it gets input ([`StdioOutbound::end_burst`]):
//! an answer means the requests before it are out, so a lone request (sequential calls) is
//! always written at once and never costs a task wake-up.
//!
//! A read that delivered several answers woke as many callers, who mostly send again before
//! anything else runs: their frames are gathered and written together by the last of them
//! (the reader counts the frames it hands on, [`Gathering`]), as one `write(2)` the server
//! answers with one write. Writing the first of them at once instead would wake a server
//! sharing the CPU for that one frame, and every round trip would split the burst in two.
//! Should fewer callers send than were answered, the writer task, woken by the first of them,
//! sends the rest once the tasks that were runnable have run. When the pipe is full the bytes stay
//! queued and the writer task waits for the pipe to drain. Nothing here ever waits for the server, so the reader task may answer a `ping`
//! through it without risking a deadlock (a full stdin and a full stdout).

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::sync::Notify;

use crate::protocol::RequestId;
use crate::transport::{
    CloseReason, InboundHandler, Outbound, OversizeFrame, SendError, SendFailure,
};

/// A caller writes the queued bytes itself once this many are waiting; below that the writer
/// task sends them when the callers' task yields. 16 KiB (about 150 small requests): at 64
/// calls in flight the whole burst then goes out in one `write(2)`, and the server answers it
/// with one write too. 512 B → 4 KiB raised throughput 10–20 % at 16–64 in flight,
/// 4 KiB → 16 KiB another 5–8 % at 64 (benches/README.md). The first frame of a burst is
/// still written at once, so a lone call never waits.
pub(crate) const COALESCE_BYTES: usize = 16384;

/// The sending half of a stdio connection. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct StdioOutbound {
    state: Mutex<WriteState>,
    /// Wakes the writer task: a burst began, or the connection closed.
    wake: Notify,
    /// The most bytes that may wait in the queue.
    max_queued: usize,
    /// Frames still expected from the callers the last read answered (one per frame it
    /// handed on): until the last of them, frames are only gathered. The reader counts them
    /// without taking the queue's lock.
    gather: AtomicUsize,
}

#[derive(Debug)]
struct WriteState {
    buf: Vec<u8>,
    /// How much of `buf` is already written.
    pos: usize,
    /// A frame was written eagerly and the burst it began has not ended yet.
    burst_open: bool,
    /// The writer task was woken and has not run yet.
    writer_woken: bool,
    closed: bool,
    /// The child's stdin; `None` once closed.
    fd: Option<Arc<pipe::Sender>>,
}

/// What one attempt to write the queue achieved.
enum Flush {
    /// Everything queued is written.
    Done,
    /// The pipe is full; bytes remain.
    WouldBlock,
}

impl WriteState {
    /// Writes as much of the queue as the pipe takes, without blocking.
    fn flush(&mut self) -> io::Result<Flush> {
        let Some(fd) = &self.fd else {
            return Err(io::ErrorKind::BrokenPipe.into());
        };
        let result = loop {
            if self.pos == self.buf.len() {
                break Ok(Flush::Done);
            }
            match fd.try_write(&self.buf[self.pos..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.pos += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(Flush::WouldBlock),
                Err(e) => break Err(e),
            }
        };
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > self.buf.len() / 2 && self.pos > 64 * 1024 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        result
    }

    fn close(&mut self) {
        self.closed = true;
        self.fd = None;
        self.buf = Vec::new();
        self.pos = 0;
    }
}

impl StdioOutbound {
    /// Wraps the child's stdin.
    pub(crate) fn new(fd: pipe::Sender, max_queued: usize) -> Self {
        Self {
            state: Mutex::new(WriteState {
                buf: Vec::with_capacity(16 * 1024),
                pos: 0,
                burst_open: false,
                writer_woken: false,
                closed: false,
                fd: Some(Arc::new(fd)),
            }),
            wake: Notify::new(),
            max_queued,
            gather: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, WriteState> {
        // A panic while holding this lock cannot leave the queue half-written (frames are
        // appended whole), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ends the current burst: the reader got input, so the next frame is written at once, or,
    /// when the read holds several frames, once as many are gathered ([`Self::expect_send`]).
    pub(crate) fn end_burst(&self) {
        let mut st = self.lock();
        if st.pos == st.buf.len() {
            st.burst_open = false;
        }
        self.gather.store(0, Ordering::Relaxed);
    }

    /// The reader hands a frame on: its caller, if it is an answer, may send again at once.
    fn expect_send(&self) {
        self.gather.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes what is still queued (a `notifications/cancelled` queued by a call that just
    /// timed out, say), waiting for the pipe at most `limit`, then closes stdin.
    pub(crate) async fn flush_and_close(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let fd = {
                let mut st = self.lock();
                if st.closed {
                    return;
                }
                match st.flush() {
                    Ok(Flush::WouldBlock) => st.fd.clone(),
                    Ok(Flush::Done) | Err(_) => None,
                }
            };
            let Some(fd) = fd else { break };
            match tokio::time::timeout_at(deadline, fd.writable()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => break,
            }
        }
        self.close();
    }

    /// Stops all writing and closes stdin (once the writer task lets go of it).
    pub(crate) fn close(&self) {
        self.lock().close();
        self.wake.notify_one();
    }

    /// The writer task: sends what callers left queued, waits for the pipe when it is full.
    pub(crate) async fn run_writer(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            if self.gather.load(Ordering::Relaxed) > 0 {
                // Woken by the first frame of a gathered burst: let the callers the reader
                // woke with it append theirs first (a multi-thread runtime runs the task it
                // just woke next, before them).
                tokio::task::yield_now().await;
                self.gather.store(0, Ordering::Relaxed);
            }
            loop {
                let fd = {
                    let mut st = self.lock();
                    if st.closed {
                        return;
                    }
                    match st.flush() {
                        Ok(Flush::Done) => {
                            st.burst_open = false;
                            st.writer_woken = false;
                            break;
                        }
                        Ok(Flush::WouldBlock) => match &st.fd {
                            Some(fd) => Arc::clone(fd),
                            None => return,
                        },
                        Err(e) => {
                            tracing::debug!(error = %e, "stdin write failed; closing it");
                            st.close();
                            return;
                        }
                    }
                };
                tokio::select! {
                    ready = fd.writable() => match ready {
                        // The next flush finds out whether the pipe really drained.
                        Ok(()) => {}
                        Err(_) => {
                            self.lock().close();
                            return;
                        }
                    },
                    () = self.wake.notified() => {}
                }
            }
        }
    }
}

/// The session's handler, with each frame counted by the writer before it is handed on (see
/// the [module docs](self)): wraps it for the reader.
pub(crate) struct Gathering {
    inner: Arc<dyn InboundHandler>,
    outbound: Arc<StdioOutbound>,
}

impl Gathering {
    pub(crate) fn new(inner: Arc<dyn InboundHandler>, outbound: Arc<StdioOutbound>) -> Self {
        Self { inner, outbound }
    }
}

impl InboundHandler for Gathering {
    fn on_open(&self, outbound: Arc<dyn Outbound>) {
        self.inner.on_open(outbound);
    }

    fn on_frame(&self, frame: &[u8]) {
        self.outbound.expect_send();
        self.inner.on_frame(frame);
    }

    fn on_oversize(&self, frame: OversizeFrame<'_>) {
        self.inner.on_oversize(frame);
    }

    fn on_oversize_passing(&self, frame: OversizeFrame<'_>) {
        self.inner.on_oversize_passing(frame);
    }

    fn on_send_failed(&self, id: &RequestId, failure: SendFailure) {
        self.inner.on_send_failed(id, failure);
    }

    fn awaits(&self, id: &RequestId) -> bool {
        self.inner.awaits(id)
    }

    fn on_closed(&self, reason: CloseReason) {
        self.inner.on_closed(reason);
    }
}

impl Outbound for StdioOutbound {
    fn send_with(
        &self,
        write: &mut dyn FnMut(&mut Vec<u8>) -> io::Result<()>,
    ) -> Result<(), SendError> {
        let mut st = self.lock();
        if st.closed {
            return Err(SendError::Closed);
        }
        let start = st.buf.len();
        if let Err(e) = write(&mut st.buf) {
            st.buf.truncate(start);
            return Err(SendError::Encode(e));
        }
        st.buf.push(b'\n');
        let queued = st.buf.len() - st.pos;
        if queued > self.max_queued {
            st.buf.truncate(start);
            return Err(SendError::Full(queued - (st.buf.len() - start)));
        }
        let first_of_burst = !st.burst_open;
        // A gathered burst is written by its last expected frame (the count taken down
        // atomically: the reader adds to it outside the queue's lock).
        let write_now = match self
            .gather
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |g| g.checked_sub(1))
        {
            Ok(before) => before == 1 || queued >= COALESCE_BYTES,
            Err(_) => first_of_burst || queued >= COALESCE_BYTES,
        };
        if write_now {
            if let Err(e) = st.flush() {
                // Nothing of this frame left if the very first byte could not be written.
                let untouched = st.pos <= start;
                tracing::debug!(error = %e, "stdin write failed; closing it");
                st.close();
                drop(st);
                self.wake.notify_one();
                return if untouched {
                    Err(SendError::Closed)
                } else {
                    Ok(())
                };
            }
        }
        if write_now {
            st.burst_open = true;
        }
        // Someone must send what is left: the writer task, woken once per burst.
        if st.pos < st.buf.len() && !st.writer_woken {
            st.writer_woken = true;
            drop(st);
            self.wake.notify_one();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn frame(text: &str) -> impl FnMut(&mut Vec<u8>) -> io::Result<()> + '_ {
        move |buf| {
            buf.extend_from_slice(text.as_bytes());
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_lone_frame_is_written_by_the_caller_at_once() {
        let (tx, mut rx) = pipe::pipe().unwrap();
        tx.writable().await.unwrap(); // let the reactor learn the pipe is writable
                                      // No writer task runs in this test: whatever arrives, the caller wrote.
        let out = StdioOutbound::new(tx, 1 << 20);
        out.send_with(&mut frame("{\"a\":1}")).unwrap();
        let mut got = vec![0u8; 64];
        let n = rx.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"{\"a\":1}\n");
        // The answer ends the burst, so the next lone frame goes out at once too.
        out.end_burst();
        out.send_with(&mut frame("{\"b\":2}")).unwrap();
        let n = rx.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"{\"b\":2}\n");
    }

    #[tokio::test]
    async fn small_frames_of_a_burst_wait_for_the_writer_task() {
        let (tx, mut rx) = pipe::pipe().unwrap();
        tx.writable().await.unwrap();
        let out = Arc::new(StdioOutbound::new(tx, 1 << 20));
        out.send_with(&mut frame("1")).unwrap(); // eager
        out.send_with(&mut frame("2")).unwrap(); // coalesced, wakes the writer
        out.send_with(&mut frame("3")).unwrap();
        let mut got = vec![0u8; 64];
        let n = rx.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"1\n", "only the first frame was written so far");
        tokio::spawn(Arc::clone(&out).run_writer());
        let mut all = got[..n].to_vec();
        while all.len() < 6 {
            let n = rx.read(&mut got).await.unwrap();
            all.extend_from_slice(&got[..n]);
        }
        assert_eq!(all, b"1\n2\n3\n");
    }

    #[tokio::test]
    async fn the_callers_a_read_answered_are_written_together_by_the_last() {
        let (tx, mut rx) = pipe::pipe().unwrap();
        tx.writable().await.unwrap();
        // No writer task runs: whatever arrives, a caller wrote.
        let out = StdioOutbound::new(tx, 1 << 20);
        // A read of three answers.
        out.end_burst();
        for _ in 0..3 {
            out.expect_send();
        }
        out.send_with(&mut frame("1")).unwrap();
        out.send_with(&mut frame("2")).unwrap();
        let mut got = vec![0u8; 64];
        // Writes happen inside send_with, so an empty pipe now means none was made.
        let nothing = rx.try_read(&mut got);
        assert!(
            matches!(&nothing, Err(e) if e.kind() == io::ErrorKind::WouldBlock),
            "nothing is written before the last of the three: {nothing:?}"
        );
        out.send_with(&mut frame("3")).unwrap();
        let n = rx.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"1\n2\n3\n", "one write for the three");
        // A read of one answer: the next frame goes at once, as a lone call's would.
        out.end_burst();
        out.expect_send();
        out.send_with(&mut frame("4")).unwrap();
        let n = rx.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"4\n");
    }

    #[tokio::test]
    async fn fewer_callers_than_a_read_answered_are_written_by_the_writer_task() {
        let (tx, mut rx) = pipe::pipe().unwrap();
        tx.writable().await.unwrap();
        let out = Arc::new(StdioOutbound::new(tx, 1 << 20));
        tokio::spawn(Arc::clone(&out).run_writer());
        out.end_burst();
        for _ in 0..8 {
            out.expect_send();
        }
        out.send_with(&mut frame("1")).unwrap();
        out.send_with(&mut frame("2")).unwrap();
        let mut all = Vec::new();
        let mut got = vec![0u8; 64];
        while all.len() < 4 {
            let n = rx.read(&mut got).await.unwrap();
            all.extend_from_slice(&got[..n]);
        }
        assert_eq!(all, b"1\n2\n");
        // The writer ended the gathering: a lone frame is written by its caller again.
        out.end_burst();
        out.send_with(&mut frame("3")).unwrap();
        let n = rx.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"3\n");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn frames_are_never_split_or_reordered_when_the_pipe_is_full() {
        let (tx, mut rx) = pipe::pipe().unwrap();
        let out = Arc::new(StdioOutbound::new(tx, 1 << 30));
        tokio::spawn(Arc::clone(&out).run_writer());
        let senders: Vec<_> = (0..8)
            .map(|task| {
                let out = Arc::clone(&out);
                tokio::spawn(async move {
                    for i in 0..5_000 {
                        let text = format!(
                            "{{\"task\":{task},\"i\":{i},\"pad\":\"{}\"}}",
                            "p".repeat(i % 300)
                        );
                        out.send_with(&mut frame(&text)).unwrap();
                        if i % 100 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        let mut data = Vec::new();
        let mut chunk = vec![0u8; 4096];
        let mut lines = 0;
        while lines < 40_000 {
            let n = rx.read(&mut chunk).await.unwrap();
            lines += chunk[..n].iter().filter(|b| **b == b'\n').count();
            data.extend_from_slice(&chunk[..n]);
            if lines % 7 == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await; // a slow reader
            }
        }
        for s in senders {
            s.await.unwrap();
        }
        let mut next = [0usize; 8];
        for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).expect("a whole frame");
            let task = usize::try_from(v["task"].as_u64().unwrap()).unwrap();
            assert_eq!(v["i"].as_u64().unwrap() as usize, next[task], "in order");
            next[task] += 1;
        }
        assert_eq!(next, [5_000; 8]);
    }

    #[tokio::test]
    async fn a_full_queue_refuses_a_frame_whole_and_close_refuses_everything() {
        let (tx, _rx) = pipe::pipe().unwrap(); // nobody reads
        let out = StdioOutbound::new(tx, 256 * 1024);
        let big = "x".repeat(10_000);
        let mut refused = None;
        for _ in 0..1000 {
            if let Err(e) = out.send_with(&mut frame(&big)) {
                refused = Some(e);
                break;
            }
        }
        assert!(matches!(refused, Some(SendError::Full(_))), "{refused:?}");
        let queued = {
            let st = out.lock();
            st.buf[st.pos..].to_vec()
        };
        assert_eq!(queued.last(), Some(&b'\n'), "only whole frames are queued");
        out.close();
        assert!(matches!(
            out.send_with(&mut frame("{}")),
            Err(SendError::Closed)
        ));
    }

    #[tokio::test]
    async fn an_encoding_error_queues_nothing() {
        let (tx, _rx) = pipe::pipe().unwrap();
        let out = StdioOutbound::new(tx, 1 << 20);
        let err = out
            .send_with(&mut |buf: &mut Vec<u8>| {
                buf.extend_from_slice(b"{\"half\":");
                Err(io::Error::other("cannot encode"))
            })
            .unwrap_err();
        assert!(matches!(err, SendError::Encode(_)));
        assert!(out.lock().buf.is_empty());
    }
}
