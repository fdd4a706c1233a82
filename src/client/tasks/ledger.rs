//! The `tasks/cancel` requests a client sent and the server has not confirmed yet: a command
//! that gives up on a task (interrupted, timed out) waits for them a little
//! ([`McpClient::settle_cancels`](crate::client::McpClient::settle_cancels)) and then says
//! which were not confirmed
//! ([`McpClient::unconfirmed_cancels`](crate::client::McpClient::unconfirmed_cancels)): those
//! tasks may still run on the server.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::client::{ClientError, ErrorKind, Kind};

/// A `tasks/cancel` the server did not confirm: the task may still run there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnconfirmedCancel {
    /// The server's label.
    pub server: String,
    /// The task's id, as the server gave it (server-supplied: escape it before printing).
    pub task_id: String,
    /// Why it is not confirmed.
    pub reason: Unconfirmed,
}

/// Why a `tasks/cancel` is not confirmed (see [`UnconfirmedCancel`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unconfirmed {
    /// It could not be sent (no session to send it on, or its sending failed): `detail` says
    /// why.
    NotSent {
        /// What went wrong (may quote the server: escape it before printing).
        detail: String,
    },
    /// It was sent (or queued) and no answer came: before the session closed, or within
    /// `within` when that is set.
    NotAnswered {
        /// The bound it was not answered within, if it was given up on for time.
        within: Option<Duration>,
    },
    /// The server answered it with an error.
    Refused {
        /// The server's error (quotes the server: escape it before printing).
        detail: String,
    },
}

impl fmt::Display for Unconfirmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSent { detail } => write!(f, "tasks/cancel could not be sent ({detail})"),
            Self::NotAnswered {
                within: Some(limit),
            } => write!(
                f,
                "tasks/cancel got no answer within {} ms",
                limit.as_millis()
            ),
            Self::NotAnswered { within: None } => f.write_str("tasks/cancel got no answer"),
            Self::Refused { detail } => write!(f, "tasks/cancel was refused ({detail})"),
        }
    }
}

impl Unconfirmed {
    /// What a failed `tasks/cancel` (`sent`: it was queued) means.
    pub(super) fn of(error: &ClientError, sent: bool) -> Self {
        match error.parts() {
            Kind::JsonRpc { code, message, .. } => Self::Refused {
                detail: format!("{code} {message}"),
            },
            Kind::RequestTimeout { after } if sent => Self::NotAnswered {
                within: Some(*after),
            },
            _ if sent
                && matches!(
                    error.kind(),
                    ErrorKind::ConnectionClosed | ErrorKind::Exited
                ) =>
            {
                Self::NotAnswered { within: None }
            }
            _ => Self::NotSent {
                detail: error.to_string(),
            },
        }
    }
}

/// One `tasks/cancel` of the ledger.
/// The most cancels a client records at once.
const MAX_KEPT: usize = 256;

#[derive(Debug)]
struct Entry {
    seq: u64,
    task_id: Arc<str>,
    /// `None` while its answer is awaited.
    failed: Option<Unconfirmed>,
}

/// The `tasks/cancel` requests of a client that are awaited or failed (a confirmed one leaves).
#[derive(Debug, Default)]
pub(super) struct Ledger {
    entries: Mutex<(u64, Vec<Entry>)>,
    /// Told each time a `tasks/cancel` is answered or fails.
    settled: Notify,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Vec<Entry>)> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A `tasks/cancel` for `task_id` is on its way: its number, for [`settle`](Self::settle).
    pub(super) fn open(&self, task_id: &Arc<str>) -> u64 {
        let mut guard = self.lock();
        let (next, entries) = &mut *guard;
        // An embedder that never asks (`unconfirmed_cancels`) keeps the newest `MAX_KEPT`:
        // the oldest settled failure goes first, the record never grows without bound.
        if entries.len() >= MAX_KEPT {
            let oldest = entries.iter().position(|e| e.failed.is_some()).unwrap_or(0);
            entries.remove(oldest);
        }
        *next += 1;
        entries.push(Entry {
            seq: *next,
            task_id: Arc::clone(task_id),
            failed: None,
        });
        *next
    }

    /// `tasks/cancel` number `seq` ended: confirmed (`Ok`), or not and why.
    pub(super) fn settle(&self, seq: u64, outcome: Result<(), Unconfirmed>) {
        {
            let mut guard = self.lock();
            let entries = &mut guard.1;
            if let Some(at) = entries.iter().position(|e| e.seq == seq) {
                match outcome {
                    Ok(()) => {
                        entries.remove(at);
                    }
                    Err(why) => entries[at].failed = Some(why),
                }
            }
        }
        self.settled.notify_waiters();
    }

    /// Waits at most `limit` until no `tasks/cancel` awaits its answer; `true` when none does.
    pub(super) async fn wait(&self, limit: Duration) -> bool {
        let all = async {
            loop {
                let settled = self.settled.notified();
                tokio::pin!(settled);
                // Registered before the check, so a settling between the two is not missed.
                settled.as_mut().enable();
                if self.lock().1.iter().all(|e| e.failed.is_some()) {
                    return;
                }
                settled.await;
            }
        };
        tokio::time::timeout(limit, all).await.is_ok()
    }

    /// Takes every `tasks/cancel` not confirmed: those that failed, and those still awaited
    /// (as not answered: the caller gives up waiting for them).
    pub(super) fn take(&self, server: &str) -> Vec<UnconfirmedCancel> {
        std::mem::take(&mut self.lock().1)
            .into_iter()
            .map(|e| UnconfirmedCancel {
                server: server.to_owned(),
                task_id: e.task_id.to_string(),
                reason: e
                    .failed
                    .unwrap_or(Unconfirmed::NotAnswered { within: None }),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_is_bounded_and_forgets_the_oldest_failure_first() {
        let ledger = Ledger::default();
        let first = ledger.open(&Arc::from("t-first"));
        ledger.settle(first, Err(Unconfirmed::NotAnswered { within: None }));
        for i in 1..MAX_KEPT + 10 {
            ledger.open(&Arc::from(format!("t-{i}").as_str()));
        }
        let told = ledger.take("srv");
        assert_eq!(told.len(), MAX_KEPT);
        assert!(
            told.iter().all(|c| c.task_id != "t-first"),
            "the failure went first"
        );
        assert_eq!(told.last().unwrap().task_id, format!("t-{}", MAX_KEPT + 9));
    }

    #[tokio::test(start_paused = true)]
    async fn a_confirmed_cancel_leaves_and_the_others_are_told_with_their_reason() {
        let ledger = Ledger::default();
        let confirmed = ledger.open(&Arc::from("t-ok"));
        let refused = ledger.open(&Arc::from("t-refused"));
        let _silent = ledger.open(&Arc::from("t-silent"));
        assert!(!ledger.wait(Duration::from_millis(10)).await);
        ledger.settle(confirmed, Ok(()));
        ledger.settle(
            refused,
            Err(Unconfirmed::Refused {
                detail: "no".into(),
            }),
        );
        assert!(!ledger.wait(Duration::from_millis(10)).await);
        let told = ledger.take("srv");
        assert_eq!(
            told.iter()
                .map(|c| (c.task_id.as_str(), c.reason.to_string()))
                .collect::<Vec<_>>(),
            [
                ("t-refused", "tasks/cancel was refused (no)".to_owned()),
                ("t-silent", "tasks/cancel got no answer".to_owned()),
            ]
        );
        assert!(told.iter().all(|c| c.server == "srv"));
        assert!(ledger.take("srv").is_empty(), "told once");
        assert!(ledger.wait(Duration::ZERO).await);
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_when_the_last_cancel_is_answered() {
        let ledger = Arc::new(Ledger::default());
        let seq = ledger.open(&Arc::from("t"));
        let settler = Arc::clone(&ledger);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            settler.settle(seq, Ok(()));
        });
        assert!(ledger.wait(Duration::from_secs(60)).await);
        assert!(ledger.take("srv").is_empty());
    }
}
