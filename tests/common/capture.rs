//! A `tracing` writer that keeps everything written to it, for tests that read the logs.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

/// Everything written by the subscriber.
#[derive(Clone, Default)]
pub(crate) struct Captured(pub(crate) Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Installs a TRACE-level subscriber writing here as the global default (once per test
    /// binary) and returns the capture.
    pub(crate) fn install_trace() -> Self {
        let captured = Captured::default();
        tracing::subscriber::set_global_default(captured.subscriber())
            .expect("the only subscriber here");
        captured
    }

    /// A TRACE-level subscriber writing here, without ANSI colour.
    fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(self.clone())
            .finish()
    }

    /// Installs a TRACE-level subscriber writing here as this thread's default, until the
    /// guard is dropped: for a test on a current-thread runtime, whose tasks all run on it,
    /// beside other tests of the same binary.
    pub(crate) fn install_local() -> (Self, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let guard = tracing::subscriber::set_default(captured.subscriber());
        (captured, guard)
    }

    /// What was written so far, lossily decoded.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
