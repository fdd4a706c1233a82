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
//! # Reaping
//!
//! A subreaper must reap what it adopts, and must never reap a child it started itself.
//! [`become_subreaper`] says which zombies its reaper thread takes, and why that never
//! includes a child `tokio::process` is waiting for. The transport reaps the leftovers it ends
//! itself.
//!
//! What SIGKILL of the client leaves: nothing runs in the client to end anything, so a
//! server's process group gets no signal (it sees end of file on stdin when the client's
//! pipes close, and a well-behaved server exits), and whatever left the group (a `setsid`
//! descendant) is re-parented to the next subreaper or init and runs on.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// The environment variable that tags a server's processes: `<client pid>-<n>`.
pub(super) const TAG_VAR: &str = "KAGED_MCP_STDIO_TAG";

/// How often the end of the leftovers is checked while waiting for it.
const POLL: Duration = Duration::from_millis(20);

/// How often the reaper looks for adopted children while a server runs (besides each SIGCHLD).
const SCAN: Duration = Duration::from_secs(1);

/// What the reaper knows (see [`become_subreaper`]).
#[derive(Debug, Default)]
struct State {
    /// The process groups of the servers this process started (their leaders' pids, which
    /// tokio reaps).
    groups: Vec<i32>,
    /// Children seen alive carrying one of this process's server tags, not a server: adopted.
    adopted: HashSet<Leftover>,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// A tag for the next server this process starts.
pub(super) fn new_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Starts a server with `start` (which returns it and its pid, the leader of its process
/// group) and notes its group, with the reaper held off meanwhile: a tagged child the reaper
/// sees is a registered server or adopted, never a server not registered yet.
pub(super) fn starting<T, E>(start: impl FnOnce() -> Result<(T, i32), E>) -> Result<(T, i32), E> {
    let mut state = state();
    let (server, pid) = start()?;
    state.groups.push(pid);
    Ok((server, pid))
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

/// The children of this process: the pids each of its threads lists in
/// `/proc/self/task/TID/children` (a handful of files, not the whole of `/proc`, so the
/// reaper's pass every [`SCAN`] costs what this process's own children do, whatever else runs
/// on the host), or, on a kernel without that file, every process whose parent it is.
fn children() -> Vec<Stat> {
    let me = std::process::id() as i32;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return all().into_iter().filter(|p| p.ppid == me).collect();
    };
    let mut pids = Vec::new();
    for task in tasks.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(text) => pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            ),
            Err(_) => return all().into_iter().filter(|p| p.ppid == me).collect(),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids.into_iter()
        .filter_map(stat)
        .filter(|p| p.ppid == me)
        .collect()
}

/// Whether any process is in process group `pgrp` (signal 0 to the group: a zombie counts).
fn group_exists(pgrp: i32) -> bool {
    !matches!(
        nix::sys::signal::killpg(Pid::from_raw(pgrp), None),
        Err(Errno::ESRCH)
    )
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
/// here. Calling it again does nothing more; it needs no Tokio runtime.
///
/// It is process-wide and lasts for the process's life: orphans of *everything* the process
/// started are adopted, and a subreaper must reap them. So this also starts a thread of its
/// own (`kaged-mcp-reaper`, with a small runtime of its own, so it outlives every runtime of
/// the caller's), woken by each SIGCHLD and, while a stdio server runs, every second.
///
/// # What the reaper reaps
///
/// It must never reap a child this process started itself: `tokio::process` and
/// `std::process` reap their own children by pid, and a wait status taken from under them
/// makes their `wait` fail. So a zombie child is reaped there only when no `Command` of this
/// process can have started it:
///
/// - it is in a session other than this process's: it, or an ancestor that is gone, called
///   `setsid` (neither the transport nor `Command` starts a process so, unless `setsid` is
///   called in `pre_exec`: an embedder that starts children so must not call this);
/// - it is in a stdio server's process group but not its leader (the leader is the one
///   child the transport started; tokio reaps it);
/// - or it was seen alive as this process's child carrying a tag of this process's servers
///   while not one of them (a server is registered before the reaper can see it: it is
///   spawned with the reaper held off).
///
/// What stays a zombie until this process exits: an adopted orphan in this process's
/// session, in a group other than a server's (job control), that died before the reaper saw
/// it alive (within a second of its adoption, or after its server ended), or that had
/// cleared its environment.
///
/// Not calling it leaves the stdio transport as before, plus ending the descendants it still
/// finds under the server at shutdown.
///
/// # Errors
/// The `prctl` failed (not Linux), or the reaper thread could not be started (nothing was
/// changed then).
pub fn become_subreaper() -> io::Result<()> {
    static ON: Mutex<bool> = Mutex::new(false);
    let mut on = ON.lock().unwrap_or_else(PoisonError::into_inner);
    if *on {
        return Ok(());
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("kaged-mcp-reaper".to_owned())
        .spawn(move || reaper(&ready_tx))?;
    ready_rx
        .recv()
        .map_err(|_| io::Error::other("the reaper thread ended before it started"))??;
    *on = true;
    Ok(())
}

/// The reaper thread: registers for SIGCHLD on a runtime of its own, becomes a subreaper, says
/// so on `ready`, then reaps at each SIGCHLD (and every [`SCAN`] while a server runs).
fn reaper(ready: &std::sync::mpsc::Sender<io::Result<()>>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    runtime.block_on(async {
        let sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())
            .and_then(|s| {
                nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
                Ok(s)
            });
        let mut sigchld = match sigchld {
            Ok(s) => {
                let _ = ready.send(Ok(()));
                s
            }
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        loop {
            reap_adopted();
            let servers = !state().groups.is_empty();
            if servers {
                let _ = tokio::time::timeout(SCAN, sigchld.recv()).await;
            } else if sigchld.recv().await.is_none() {
                return;
            }
        }
    });
}

/// One pass of the reaper (see [`become_subreaper`]): notes the live adopted children
/// carrying a tag of this process's servers, reaps the zombie children it did not start,
/// forgets the process groups of servers that are gone.
fn reap_adopted() {
    let me = std::process::id() as i32;
    let Some(own) = stat(me) else {
        return;
    };
    // Locked before /proc is read: a server started meanwhile is either registered or not
    // yet listed, never a tagged child of unknown origin.
    let mut state = state();
    let procs = children();
    let mine = format!("{TAG_VAR}={me}-");
    for p in &procs {
        let id = Leftover {
            pid: p.pid,
            start: p.start,
        };
        let leader = state.groups.contains(&p.pid);
        if p.zombie {
            let seen = state.adopted.remove(&id);
            let in_server_group = state.groups.contains(&p.pgrp) && !leader;
            if seen || in_server_group || p.session != own.session {
                while let Err(Errno::EINTR) =
                    waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG))
                {}
            }
        } else if !leader && !state.adopted.contains(&id) && tagged(p.pid, &mine) {
            state.adopted.insert(id);
        }
    }
    // An adopted child reaped elsewhere (by `end`) is forgotten, and so is a group once
    // nothing is left in it but the zombies just reaped.
    state.adopted.retain(|a| {
        procs
            .iter()
            .any(|p| p.pid == a.pid && p.start == a.start && !p.zombie)
    });
    // The zombies just reaped are gone: a group with nothing else left in it is gone too.
    state.groups.retain(|&g| group_exists(g));
}

/// Whether `pid`'s environment holds a variable starting with `prefix` (`NAME=value-start`).
fn tagged(pid: i32, prefix: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
        environ
            .split(|b| *b == 0)
            .any(|v| v.starts_with(prefix.as_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

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
    fn children_are_read_from_this_process_alone_and_match_a_whole_scan() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let me = std::process::id() as i32;
        let mine: Vec<i32> = children().iter().map(|p| p.pid).collect();
        let scanned: Vec<i32> = all()
            .iter()
            .filter(|p| p.ppid == me)
            .map(|p| p.pid)
            .collect();
        assert!(mine.contains(&pid), "{mine:?}");
        assert!(scanned.contains(&pid), "{scanned:?}");
        assert!(group_exists(nix::unistd::getpgrp().as_raw()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!children().iter().any(|p| p.pid == pid));
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

    /// Waits up to ten seconds for `done`.
    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        for _ in 0..1000 {
            if done() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("not in time: {what}");
    }

    /// Runs `script` under `sh`, which starts the process it describes in the background and
    /// writes its pid to the file named by `$1`, then exits; the process's pid once this
    /// process adopted it.
    fn adopt(script: &str, env: &[(&str, &str)]) -> i32 {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let status = std::process::Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&file)
            .envs(env.iter().copied())
            .status()
            .unwrap();
        assert!(status.success());
        let pid = std::fs::read_to_string(&file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let me = std::process::id() as i32;
        wait_for("adopted", || stat(pid).is_some_and(|s| s.ppid == me));
        pid
    }

    fn gone(pid: i32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn the_reaper_outlives_the_runtime_it_was_turned_on_from() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async { become_subreaper().unwrap() });
        drop(runtime);
        // A setsid grandchild whose parent (the shell) exited: adopted, then it ends.
        let pid = adopt(
            "setsid sh -c 'echo $$ > \"$0\"; sleep 0.3' \"$1\" </dev/null & wait_for_file=$1; \
             while [ ! -s \"$wait_for_file\" ]; do sleep 0.01; done",
            &[],
        );
        // (A zombie keeps its /proc entry: gone means reaped.)
        wait_for("the adopted setsid grandchild reaped", || gone(pid));
    }

    #[test]
    fn an_adopted_orphan_in_this_session_outside_a_server_group_is_reaped() {
        become_subreaper().unwrap();
        let tag = format!("{}-orphan", std::process::id());
        // In this process's session, the leader of a process group of its own.
        let pid = adopt(
            "python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(60)' </dev/null & \
             echo $! > \"$1\"",
            &[(TAG_VAR, &tag)],
        );
        wait_for("in a group of its own", || {
            stat(pid).is_some_and(|s| s.pgrp == pid)
        });
        let own = stat(std::process::id() as i32).unwrap();
        assert_eq!(stat(pid).unwrap().session, own.session);
        reap_adopted(); // as the reaper's next pass would: it is seen alive, tagged
        kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
        wait_for("the adopted orphan reaped", || gone(pid));
    }

    #[tokio::test]
    async fn the_reaper_leaves_the_children_tokio_waits_for() {
        become_subreaper().unwrap();
        let tag = format!("{}-server", std::process::id());
        let command = |code: i32, group: bool, tag: Option<&str>| {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.args(["-c", &format!("read _; exit {code}")])
                .stdin(Stdio::piped());
            if group {
                cmd.process_group(0);
            }
            if let Some(tag) = tag {
                cmd.env(TAG_VAR, tag);
            }
            cmd
        };
        // In this process's group, in a group of its own, and a tagged server (registered).
        let plain = command(3, false, None).spawn().unwrap();
        let leader = command(4, true, None).spawn().unwrap();
        let (server, _) = starting(|| {
            let child = command(5, true, Some(&tag)).spawn()?;
            let pid = child.id().unwrap() as i32;
            Ok::<_, io::Error>((child, pid))
        })
        .unwrap();
        let mut children = [(plain, 3), (leader, 4), (server, 5)];
        for (child, _) in &mut children {
            let pid = child.id().unwrap() as i32;
            wait_for("running", || stat(pid).is_some_and(|s| s.start > 0));
        }
        reap_adopted(); // alive: none is taken for adopted
        for (child, _) in &mut children {
            let pid = child.id().unwrap() as i32;
            drop(child.stdin.take());
            wait_for("a zombie", || stat(pid).is_some_and(|s| s.zombie));
        }
        reap_adopted(); // a zombie each: none is reaped here
        for (child, code) in &mut children {
            let status = child.wait().await.expect("the child's own wait status");
            assert_eq!(status.code(), Some(*code));
        }
    }
}
