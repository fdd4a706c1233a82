//! A `tracing` writer that keeps everything written to it, for tests that read the logs.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

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
        keep_interest_shared();
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

/// Registers, once per test binary and before the first capture, a dispatcher that lives as
/// long as the process (it records nothing), so that a capture is never the only dispatcher
/// registered.
///
/// While at most one dispatcher is registered, tracing-core (0.1.36, `Dispatchers::rebuilder`,
/// `has_just_one`) decides whether a callsite is enabled from the default of the thread that
/// first reaches it, alone, and caches that for every thread. A test thread without a
/// subscriber (before `install_trace`'s global one) reaching a callsite first, while another
/// test's local capture was the only dispatcher, cached it as never enabled: that capture then
/// lost the event on its own thread (`after_handshake`'s frame-limit test saw its WARN lines,
/// whose callsites it reached first, but not the DEBUG and INFO lines of the GET stream, nor
/// its `hello from GET`, whose callsites another test reached first). With two dispatchers
/// registered, tracing-core asks every live one, and each thread's own decides.
fn keep_interest_shared() {
    static KEEPER: OnceLock<tracing::Dispatch> = OnceLock::new();
    KEEPER.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::new()));
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
