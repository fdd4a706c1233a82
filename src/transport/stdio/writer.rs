//! The stdin writer: frames queued whole on a shared buffer, written eagerly but coalesced.
//!
//! [`StdioOutbound::send_with`] serializes the frame straight into the buffer under a
//! synchronous mutex (never held across an await), so a frame is queued whole or not at all.
//! The first frame of a burst is written at once by the caller, with a non-blocking `write(2)`;
//! it also wakes the writer task. Until that task runs, later callers only append, and write
//! themselves once [`COALESCE_BYTES`] are waiting; the writer task then sends the tail and ends
//! the burst. When the pipe is full the bytes stay queued and the writer task waits for the pipe
//! to drain. Nothing here ever waits for the server, so the reader task may answer a `ping`
//! through it without risking a deadlock (a full stdin and a full stdout).

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::unix::pipe;
use tokio::sync::Notify;

use crate::transport::{Outbound, SendError};

/// A caller writes the queued bytes itself once this many are waiting.
pub(crate) const COALESCE_BYTES: usize = 512;

/// The sending half of a stdio connection. See the [module docs](self).
#[derive(Debug)]
pub(crate) struct StdioOutbound {
    state: Mutex<WriteState>,
    /// Wakes the writer task: a burst began, or the connection closed.
    wake: Notify,
    /// The most bytes that may wait in the queue.
    max_queued: usize,
}

#[derive(Debug)]
struct WriteState {
    buf: Vec<u8>,
    /// How much of `buf` is already written.
    pos: usize,
    /// The writer task was woken and has not finished the burst yet.
    flush_scheduled: bool,
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
                flush_scheduled: false,
                closed: false,
                fd: Some(Arc::new(fd)),
            }),
            wake: Notify::new(),
            max_queued,
        }
    }

    fn lock(&self) -> MutexGuard<'_, WriteState> {
        // A panic while holding this lock cannot leave the queue half-written (frames are
        // appended whole), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
            loop {
                let fd = {
                    let mut st = self.lock();
                    if st.closed {
                        return;
                    }
                    match st.flush() {
                        Ok(Flush::Done) => {
                            st.flush_scheduled = false;
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
        let first_of_burst = !st.flush_scheduled;
        if first_of_burst || queued >= COALESCE_BYTES {
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
        if first_of_burst {
            st.flush_scheduled = true;
            drop(st);
            self.wake.notify_one();
        }
        Ok(())
    }
}
