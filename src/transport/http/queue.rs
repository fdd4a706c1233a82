//! The ordered, bounded queue of frames waiting to be POSTed, shared by both HTTP transports.
//!
//! The session queues a frame without awaiting ([`PostQueue::push`]); one worker task of the
//! connection takes them in order ([`PostQueue::next`]) and POSTs each before the next, so
//! `initialize`, `notifications/initialized` and what follows reach the server in the order
//! sent. Legacy SSE POSTs every frame this way; Streamable HTTP its notifications and answers
//! (each request runs on a task of its own). The queue holds at most [`MAX_QUEUED`] bytes: a
//! server that stops taking POSTs makes [`SendError::Full`], never unbounded memory. Every
//! frame has a sequence number, and [`PostQueue::wait_sent`] waits until a given one was
//! POSTed (Streamable HTTP holds requests until `notifications/initialized` went out, and
//! flushes cancellations at shutdown).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use tokio::sync::{watch, Notify};

use crate::protocol::RequestId;
use crate::transport::SendError;

/// The most bytes of frames that may wait to be POSTed.
pub(crate) const MAX_QUEUED: usize = 64 * 1024 * 1024;

/// One frame waiting to be POSTed.
#[derive(Debug)]
pub(crate) struct Queued {
    /// Its sequence number: 1 for the first frame of the connection.
    pub(crate) seq: u64,
    /// The request it is, if it is one (a failed POST then fails that request).
    pub(crate) request: Option<RequestId>,
    pub(crate) frame: Bytes,
}

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct PostQueue {
    state: Mutex<State>,
    wake: Notify,
    /// The sequence number of the last frame whose POST ended (well or not).
    sent: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct State {
    frames: VecDeque<Queued>,
    bytes: usize,
    last_seq: u64,
    closed: bool,
}

impl PostQueue {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            sent: watch::channel(0).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the queue consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `frame` (request `request`, if it is one) and wakes the worker; its sequence
    /// number. A frame is queued whole or not at all: past [`MAX_QUEUED`] bytes (unless the
    /// queue is empty, so one big frame still goes) it is refused.
    pub(crate) fn push(
        &self,
        request: Option<RequestId>,
        frame: Vec<u8>,
    ) -> Result<u64, SendError> {
        let seq = {
            let mut state = self.lock();
            if state.closed {
                return Err(SendError::Closed);
            }
            if state.bytes + frame.len() > MAX_QUEUED && !state.frames.is_empty() {
                return Err(SendError::Full(state.bytes));
            }
            state.last_seq += 1;
            let seq = state.last_seq;
            state.bytes += frame.len();
            state.frames.push_back(Queued {
                seq,
                request,
                frame: Bytes::from(frame),
            });
            seq
        };
        self.wake.notify_one();
        Ok(seq)
    }

    /// The next frame, waiting for one; `None` once the queue is closed. For one worker.
    pub(crate) async fn next(&self) -> Option<Queued> {
        loop {
            {
                let mut state = self.lock();
                if state.closed {
                    return None;
                }
                if let Some(queued) = state.frames.pop_front() {
                    state.bytes -= queued.frame.len();
                    return Some(queued);
                }
            }
            // A push between the unlock and here leaves a permit: no wake-up is lost.
            self.wake.notified().await;
        }
    }

    /// The POST of frame `seq` ended.
    pub(crate) fn sent(&self, seq: u64) {
        self.sent.send_replace(seq);
    }

    /// The sequence number of the last frame queued (0: none yet).
    pub(crate) fn last_queued(&self) -> u64 {
        self.lock().last_seq
    }

    /// Waits until the POST of frame `seq` ended (at once for 0); forever if it never does,
    /// so callers bound it or end with the connection.
    pub(crate) async fn wait_sent(&self, seq: u64) {
        if seq > *self.sent.borrow() {
            let mut sent = self.sent.subscribe();
            let _ = sent.wait_for(|s| *s >= seq).await;
        }
    }

    /// Refuses every later frame, drops the queued ones and ends the worker.
    pub(crate) fn close(&self) {
        {
            let mut state = self.lock();
            state.closed = true;
            state.frames.clear();
            state.bytes = 0;
        }
        self.wake.notify_one();
    }

    /// Whether [`close`](Self::close) was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[tokio::test]
    async fn frames_come_out_in_order_and_closing_ends_the_worker() {
        let queue = PostQueue::new();
        assert_eq!(queue.push(None, b"a".to_vec()).unwrap(), 1);
        assert_eq!(
            queue
                .push(Some(RequestId::from(7u64)), b"b".to_vec())
                .unwrap(),
            2
        );
        let first = queue.next().await.unwrap();
        assert_eq!((first.seq, &first.frame[..]), (1, &b"a"[..]));
        let second = queue.next().await.unwrap();
        assert_eq!(second.request, Some(RequestId::from(7u64)));
        assert!(queue.next().now_or_never().is_none(), "waits for a frame");
        queue.close();
        assert!(queue.next().await.is_none());
        assert!(matches!(
            queue.push(None, b"c".to_vec()),
            Err(SendError::Closed)
        ));
    }

    #[test]
    fn a_full_queue_refuses_whole_frames_but_one_big_frame_goes() {
        let queue = PostQueue::new();
        queue
            .push(None, vec![0; MAX_QUEUED + 1])
            .expect("alone, it goes");
        assert!(matches!(
            queue.push(None, vec![0; 1]),
            Err(SendError::Full(_))
        ));
    }

    #[tokio::test]
    async fn waiting_for_a_frame_ends_when_its_post_did() {
        let queue = PostQueue::new();
        queue.wait_sent(0).await;
        let seq = queue.push(None, b"x".to_vec()).unwrap();
        assert!(queue.wait_sent(seq).now_or_never().is_none());
        queue.sent(seq);
        queue.wait_sent(seq).await;
    }
}
