//! What is left of a stdio server's descendants once its process group is ended, and the
//! orphans this process adopts when it is a child subreaper ([`become_subreaper`]).
//!
//! A server's process group does not hold every process it started: one that called `setsid`
//! (a daemon, `setsid sleep 300 &`) is in a session and group of its own, and once its parent
//! exits it is re-parented to the nearest subreaper, or to init. So at a server's shutdown the
//! transport ends, besides the group:
//!
//! - its descendants by parent pid, as `/proc` shows them just before the shutdown starts
//!   (while the server still holds them), and
//! - when this process is a subreaper, the children it adopted that carry the server's tag
//!   (`KAGED_MCP_STDIO_TAG`, set in every server's environment and inherited by what it
//!   starts),
//!
//! each with SIGTERM, then SIGKILL after the transport's grace; the ones that are this process's
//! children are reaped. A process is identified by its pid and its start time, so a pid reused
//! in between is never signalled.
//!
//! A subreaper must reap what it adopts: [`become_subreaper`] starts a task that, at each
//! SIGCHLD, reaps the zombie children this process did not start itself (see its docs).
//! What SIGKILL of the client leaves: nothing runs in the client to end anything, so a
//! server's process group gets no signal (it sees end of file on stdin when the client's
//! pipes close, and a well-behaved server exits), and whatever left the group (a `setsid`
//! descendant) is re-parented to the next subreaper or init and runs on.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// The environment variable that tags a server's processes: `<client pid>-<n>`.
pub(super) const TAG_VAR: &str = "KAGED_MCP_STDIO_TAG";

/// How often the end of the leftovers is checked while waiting for it.
const POLL: Duration = Duration::from_millis(20);

/// The process groups of the servers this process started (their leaders' pids): a zombie
/// child in one of them that is not its leader was adopted and is reaped here; the leader is
/// tokio's to reap.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A tag for the next server this process starts.
pub(super) fn new_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Notes the process group of a server just started.
pub(super) fn started(pgid: i32) {
    GROUPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(pgid);
}

/// One process, as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy)]
struct Stat {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    zombie: bool,
    /// Clock ticks after boot: with the pid, the process's identity.
    start: u64,
}

/// A process to end: its pid and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Leftover {
    pid: i32,
    start: u64,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: the fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        zombie: matches!(fields.first()?.as_bytes().first(), Some(b'Z' | b'X')),
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process `/proc` shows (those that vanish while it is read are left out).
fn all() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// The descendants of `root` now, by parent pid (not `root` itself).
pub(super) fn descendants(root: i32) -> Vec<Leftover> {
    let procs = all();
    let mut found = Vec::new();
    let mut parents = vec![root];
    let mut seen = HashSet::from([root]);
    while let Some(parent) = parents.pop() {
        for p in procs.iter().filter(|p| p.ppid == parent && !p.zombie) {
            if seen.insert(p.pid) {
                parents.push(p.pid);
                found.push(Leftover {
                    pid: p.pid,
                    start: p.start,
                });
            }
        }
    }
    found
}

/// The live children of this process that carry `tag` (orphans of that server it adopted as a
/// subreaper), and their descendants.
pub(super) fn adopted(tag: &str, leader: i32) -> Vec<Leftover> {
    let me = std::process::id() as i32;
    let wanted = format!("{TAG_VAR}={tag}");
    let mut found = Vec::new();
    for p in all()
        .into_iter()
        .filter(|p| p.ppid == me && !p.zombie && p.pid != leader)
    {
        let Ok(environ) = std::fs::read(format!("/proc/{}/environ", p.pid)) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
            found.push(Leftover {
                pid: p.pid,
                start: p.start,
            });
            found.extend(descendants(p.pid));
        }
    }
    found
}

/// Whether `p` still runs as the same process (a zombie has ended).
fn running(p: Leftover) -> bool {
    stat(p.pid).is_some_and(|s| s.start == p.start && !s.zombie)
}

/// Reaps `p` if it is a zombie child of this process.
fn reap(p: Leftover) {
    if stat(p.pid).is_some_and(|s| s.start == p.start && s.zombie) {
        while let Err(Errno::EINTR) = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG)) {}
    }
}

fn signal(leftovers: &[Leftover], sig: Signal) {
    for &p in leftovers {
        if running(p) {
            match kill(Pid::from_raw(p.pid), sig) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(e) => {
                    tracing::warn!(pid = p.pid, %sig, error = %e, "could not signal what is left of a server")
                }
            }
        }
    }
}

/// Ends `leftovers` (a server's descendants outside its group): SIGTERM, up to `grace` for
/// them to go, then SIGKILL; the ones that are this process's children are reaped.
pub(super) async fn end(server: &str, mut leftovers: Vec<Leftover>, grace: Duration) {
    leftovers.sort_unstable_by_key(|p| p.pid);
    leftovers.dedup();
    leftovers.retain(|&p| running(p));
    if leftovers.is_empty() {
        return;
    }
    tracing::info!(
        server,
        count = leftovers.len(),
        "ending what is left of the server's descendants outside its process group"
    );
    signal(&leftovers, Signal::SIGTERM);
    if !gone_within(&leftovers, grace).await {
        signal(&leftovers, Signal::SIGKILL);
        // SIGKILL cannot be ignored; the bound only guards against a stuck process.
        gone_within(&leftovers, grace.max(Duration::from_secs(5))).await;
    }
}

/// Waits until none of `leftovers` runs, reaping the ones that are children; whether they went.
async fn gone_within(leftovers: &[Leftover], limit: Duration) -> bool {
    let until = tokio::time::Instant::now() + limit;
    loop {
        leftovers.iter().copied().for_each(reap);
        if !leftovers.iter().copied().any(running) {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// [`end`] at once, without waiting: SIGKILL to each (a dropped connection).
pub(super) fn kill_now(leftovers: &[Leftover]) {
    signal(leftovers, Signal::SIGKILL);
    leftovers.iter().copied().for_each(reap);
}

/// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): an orphaned descendant of
/// a process it started (a stdio server's `setsid` grandchild whose parent exited) becomes its
/// child instead of init's, so the stdio transport finds and ends it at that server's
/// shutdown. The command line turns it on at start; a daemon embedding the library opts in
/// here, once, from inside a Tokio runtime.
///
/// It is process-wide and lasts for the process's life: orphans of *everything* the process
/// started are adopted, and a subreaper must reap them. So this also starts a task, on the
/// current runtime, that at each SIGCHLD reaps the zombie children this process did not start
/// itself: those in a session other than this process's (a process that called `setsid`; the
/// transport and `std::process::Command` never start one so) and those in a stdio server's
/// process group other than its leader (which its exit watcher reaps). A child the embedder
/// starts in a session of its own (`setsid` in `pre_exec`) would be reaped by it too, so such
/// an embedder must not call this. An adopted orphan of something else that dies while still
/// in this process's session stays a zombie until the process exits.
///
/// Not calling it leaves the stdio transport as before, plus ending the descendants it still
/// finds under the server at shutdown.
///
/// # Errors
/// The `prctl` failed (not Linux), or there is no Tokio runtime to run the reaper on (nothing
/// was changed then).
pub fn become_subreaper() -> io::Result<()> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
        io::Error::other(format!("becoming a subreaper needs a Tokio runtime: {e}"))
    })?;
    let mut sigchld = {
        let _entered = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())?
    };
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
    runtime.spawn(async move {
        reap_adopted();
        while sigchld.recv().await.is_some() {
            reap_adopted();
        }
    });
    Ok(())
}

/// Reaps the zombie children this process did not start itself (see [`become_subreaper`]);
/// forgets the process groups of servers that are gone.
fn reap_adopted() {
    let me = std::process::id() as i32;
    let Some(own) = stat(me) else {
        return;
    };
    let procs = all();
    let mut groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
    for p in procs.iter().filter(|p| p.ppid == me && p.zombie) {
        let in_server_group = groups.contains(&p.pgrp) && p.pid != p.pgrp;
        if p.session != own.session || in_server_group {
            let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
    // A group is forgotten once nothing is left in it but the zombies just reaped.
    groups.retain(|&g| {
        procs
            .iter()
            .any(|p| p.pgrp == g && !(p.zombie && p.ppid == me && p.pid != g))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_as_running_with_its_parent_and_start() {
        let me = std::process::id() as i32;
        let s = stat(me).expect("our own /proc entry");
        assert_eq!(s.pid, me);
        assert_eq!(s.ppid, nix::unistd::getppid().as_raw());
        assert!(!s.zombie && s.start > 0);
        assert!(running(Leftover {
            pid: me,
            start: s.start
        }));
        assert!(!running(Leftover {
            pid: me,
            start: s.start + 1
        }));
    }

    #[test]
    fn tags_differ_and_name_this_process() {
        let (a, b) = (new_tag(), new_tag());
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("{}-", std::process::id())));
    }

    #[test]
    fn descendants_by_parent_pid_are_found() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut found = Vec::new();
        for _ in 0..500 {
            found = descendants(pid);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(found.len(), 1, "{found:?}");
        kill_now(&found);
        child.wait().unwrap();
    }
}
