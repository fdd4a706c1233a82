//! The era a server was found to speak, remembered between runs, so a legacy server's start
//! skips the `server/discover` probe (see [`era`](super::era)).
//!
//! The probe costs a round trip at every start of a legacy server, and some legacy servers log
//! it at length (the PyPI `mcp` 1.30 SDK writes a 95-line validation error on its stderr). A
//! client given an [`EraMemory`] ([`ClientOptions::era_memory`](super::ClientOptions::era_memory))
//! with [`EraPreference::Auto`] reads it once, when the client is
//! built: a file that says `legacy` makes every start go straight to `initialize`. A probe that
//! finds a legacy server writes the file; one that finds a modern server removes it (the
//! probe *is* a modern server's handshake, so there is nothing to skip). A start that fails for
//! a reason about the era ([`ClientError::is_about_the_era`]: `initialize` refused, a version
//! not spoken) removes it too, and when the era came from the file the same start probes at
//! once on a new connection: a wrong memory costs one more connection, never a failed start.
//! `era` in `local.toml` (legacy or modern) overrides it: the file is then neither read nor
//! written.
//!
//! The file holds one word, `legacy`. Anything else in it, a file that is not a regular file
//! this user owns, or one that cannot be read, is ignored with one DEBUG line, never an error;
//! so is a failure to write or remove it (the next run probes, as without a memory). It is
//! written as the OAuth token store writes its files: the directory created `0700`, the file
//! `0600` through a temporary file renamed over it, so two runs writing at once leave one
//! whole file. It is not fsynced: a write lost in a crash costs one probe.
//!
//! [`Session`](crate::Session) names the file of each server in the directory given to
//! [`SessionOptions::remember_eras`](crate::SessionOptions::remember_eras), by a digest of
//! what identifies the server as configured ([`crate::assemble::era_memory`]); the
//! `kaged-mcp` command line uses `$XDG_STATE_HOME/kaged-mcp/eras` (or
//! `~/.local/state/kaged-mcp/eras`).
//!
//! [`ClientError::is_about_the_era`]: super::ClientError::is_about_the_era

use std::fs::{self, DirBuilder, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::era::Era;
use super::rpc::RpcSession;
use super::ClientError;
use crate::config::EraPreference;
use crate::protocol::InitializeResult;

/// The mode of an era file.
const FILE_MODE: u32 = 0o600;
/// The mode its directory is created with.
const DIR_MODE: u32 = 0o700;
/// What a file remembering a legacy server holds.
const LEGACY: &str = "legacy\n";
/// A longer file is not an era file.
const MAX_FILE_BYTES: u64 = 64;

/// Where one client remembers its server's era between runs. See the
/// [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EraMemory {
    path: Arc<Path>,
}

impl EraMemory {
    /// A memory kept in the file `path` (its directory is created on the first write).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Arc::from(path.into()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The era the file remembers: `Some(Era::Legacy)`, or `None` when there is no file or it
    /// is unusable (one DEBUG line says why).
    pub(crate) fn recall(&self) -> Option<Era> {
        match self.read() {
            Ok(era) => era,
            Err(why) => {
                tracing::debug!(path = %self.path.display(), reason = %why, "era memory ignored");
                None
            }
        }
    }

    fn read(&self) -> Result<Option<Era>, String> {
        let mut file = match OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&self.path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot be opened: {e}")),
        };
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot be read: {e}"))?;
        if !meta.is_file() {
            return Err("not a regular file".into());
        }
        if meta.uid() != nix::unistd::geteuid().as_raw() {
            return Err(format!("owned by uid {}", meta.uid()));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!("larger than {MAX_FILE_BYTES} bytes"));
        }
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| format!("cannot be read: {e}"))?;
        match text.trim() {
            "legacy" => Ok(Some(Era::Legacy)),
            _ => Err("it does not say `legacy`".into()),
        }
    }

    /// Remembers that the server speaks the legacy era; `false` when the file could not be
    /// written (one DEBUG line says why).
    pub(crate) fn remember_legacy(&self) -> bool {
        match self.write() {
            Ok(()) => {
                tracing::debug!(path = %self.path.display(), "era remembered: legacy");
                true
            }
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "era not remembered");
                false
            }
        }
    }

    fn write(&self) -> io::Result<()> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)?;
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.{}.{nanos:08x}.tmp", std::process::id()));
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(FILE_MODE)
                .open(&tmp)?;
            // The umask may have narrowed the mode; the file is exactly 0600.
            file.set_permissions(Permissions::from_mode(FILE_MODE))?;
            file.write_all(LEGACY.as_bytes())?;
            drop(file);
            fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    /// Forgets the era, if a file remembered one.
    pub(crate) fn forget(&self) {
        match fs::remove_file(&self.path) {
            Ok(()) => tracing::debug!(path = %self.path.display(), "era forgotten"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "era memory not removed");
            }
        }
    }
}

// --- the memory's part of a start -----------------------------------------------------------

impl super::Shared {
    /// The era memory, when the client uses one (see [era memory](self)).
    pub(super) fn era_memory(&self) -> Option<&EraMemory> {
        self.options
            .era_memory
            .as_ref()
            .filter(|_| self.options.era == EraPreference::Auto)
    }

    /// One start: connect, find the era (see [`era`]), and in the legacy era `initialize`.
    /// When the era came from the [era memory](self) and the start fails about it, the memory is
    /// forgotten and the same start probes at once, on a new connection.
    pub(super) async fn connect_and_initialize(
        self: &Arc<Self>,
        generation: u64,
    ) -> Result<(Arc<RpcSession>, InitializeResult, Era), ClientError> {
        let recalled = self.era_memory().is_some() && self.lock().era_remembered;
        match self.start_in_era(generation).await {
            Err(e) if recalled && e.is_about_the_era() => {
                tracing::info!(server = &*self.server, error = %e, "the remembered legacy era was refused: forgotten, the server is probed");
                {
                    let mut sup = self.lock();
                    if sup.generation != generation {
                        return Err(e);
                    }
                    sup.era = None;
                    sup.era_remembered = false;
                }
                if let Some(memory) = self.era_memory() {
                    memory.forget();
                }
                self.start_in_era(generation).await
            }
            result => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_forgets_a_legacy_server() {
        let dir = tempfile::tempdir().unwrap();
        let memory = EraMemory::new(dir.path().join("eras").join("abc"));
        assert_eq!(memory.recall(), None, "no file yet");
        assert!(memory.remember_legacy());
        assert_eq!(memory.recall(), Some(Era::Legacy));
        let meta = fs::metadata(memory.path()).unwrap();
        assert_eq!(meta.mode() & 0o777, FILE_MODE);
        let dir_meta = fs::metadata(dir.path().join("eras")).unwrap();
        assert_eq!(dir_meta.mode() & 0o777, DIR_MODE);
        memory.remember_legacy();
        let left: Vec<_> = fs::read_dir(dir.path().join("eras")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        memory.forget();
        assert_eq!(memory.recall(), None);
        memory.forget(); // nothing to forget: no error
    }

    #[test]
    fn an_unusable_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        let memory = EraMemory::new(&path);
        for junk in ["", "modern\n", "legacy legacy", "\u{0}\u{1}"] {
            fs::write(&path, junk).unwrap();
            assert_eq!(memory.recall(), None, "{junk:?}");
        }
        fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(memory.recall(), None, "too long");
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert_eq!(memory.recall(), None, "a directory");
        fs::remove_dir(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path).unwrap();
        fs::write(dir.path().join("elsewhere"), LEGACY).unwrap();
        assert_eq!(memory.recall(), None, "a symbolic link is not followed");
    }

    #[test]
    fn a_directory_that_cannot_be_made_is_no_error() {
        let memory = EraMemory::new("/dev/null/kaged-mcp/eras/abc");
        assert!(!memory.remember_legacy());
        assert_eq!(memory.recall(), None);
        memory.forget();
    }
}
