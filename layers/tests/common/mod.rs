//! Helpers shared by the integration tests: a `tracing` capture.
//!
//! One global subscriber per test binary writes into the buffer of the capturing thread.
//! (Per-thread `set_default` subscribers race with tests on other threads when a callsite is
//! first registered, and then lose events.)

#![allow(dead_code)] // each test binary uses a part

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex, Once};

thread_local! {
    static CURRENT: RefCell<Option<Logs>> = const { RefCell::new(None) };
}

/// Everything the global `fmt` subscriber wrote on this thread while capturing, down to TRACE.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

/// Stops the capture when dropped.
pub(crate) struct Capturing(());

impl Drop for Capturing {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

impl Logs {
    /// Captures the events of the current thread (use a current-thread runtime).
    pub(crate) fn capture() -> (Self, Capturing) {
        static INIT: Once = Once::new();
        INIT.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .without_time()
                .with_writer(|| ThreadWriter)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        });
        let logs = Self::default();
        CURRENT.with(|current| *current.borrow_mut() = Some(logs.clone()));
        (logs, Capturing(()))
    }

    /// The text written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

struct ThreadWriter;

impl io::Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        CURRENT.with(|current| {
            if let Some(logs) = &*current.borrow() {
                logs.0.lock().unwrap().extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
