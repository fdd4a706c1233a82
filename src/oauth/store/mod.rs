//! Where OAuth tokens live: one file per server and client, outside the project.
//!
//! Tokens never travel with a project, so they sit under the operator's state directory,
//! `$XDG_STATE_HOME/kaged-mcp/oauth` or else `$HOME/.local/state/kaged-mcp/oauth`
//! ([`TokenStore::default_dir`]); `config.toml` may name another directory, given to
//! [`TokenStore::new`]. A file is named for its server key and a hash of the server URL and the
//! client id ([`StoreKey::file_name`]), so a new URL or client starts from a clean slate.
//!
//! The directory is created `0700` and each file `0600`. A file is written whole or not at
//! all: a temporary file beside it (created exclusively, `0600`), fsynced, renamed over the
//! target, then the directory fsynced; on any failure the temporary file is removed and the old
//! file stays as it was. Two writers racing leave one file or the other, never a mix.
//!
//! [`TokenStore::load`] refuses a file that group or others may access, that is not a regular
//! file (a symbolic link included) or that another user owns, and [`TokenStore::save`] refuses a
//! directory so exposed; the error names the path, the mode and the fix. No token or client
//! secret reaches a log, a `Debug` or an error: they sit in [`Token`], whose `Debug` prints
//! `***`, and a corrupt file is reported by line and column, never by its content.

use std::ffi::OsStr;
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use serde_json::error::Category;

/// The mode of a token file.
const FILE_MODE: u32 = 0o600;
/// The mode the token directory is created with.
const DIR_MODE: u32 = 0o700;
/// Larger token files are refused as corrupt rather than read into memory.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// An OAuth token or client secret. `Debug` prints `***` and there is no `Display`, so the value
/// is read only through [`Token::expose`], where it goes on the wire.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Token(String);

impl Token {
    /// Wraps a value.
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself; call it only where the value goes on the wire.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// What the store keeps for one server and client, as JSON: the client, the authorization
/// server's endpoints and the tokens. `Debug` prints every [`Token`] as `***`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredTokens {
    /// The MCP server URL the tokens are for; [`TokenStore::load`] refuses a file whose URL is
    /// not the key's.
    pub(crate) server_url: String,
    /// The client id, configured or from dynamic registration.
    pub(crate) client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<Token>,
    /// How the client authenticates at the token endpoint (`client_secret_basic`,
    /// `client_secret_post`, `private_key_jwt`, `none`), as registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_endpoint_auth_method: Option<String>,
    /// Whether the client came from dynamic client registration.
    #[serde(default)]
    pub(crate) registered: bool,
    /// The authorization server's issuer identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) issuer: Option<String>,
    /// The authorization server's token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_endpoint: Option<String>,
    /// The resource indicator (RFC 8707) the tokens were requested for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resource: Option<String>,
    /// The access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) access_token: Option<Token>,
    /// The refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<Token>,
    /// The access token's `token_type`, lower-case (`dpop` for a DPoP-bound one); `bearer`
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_type: Option<String>,
    /// When the access token expires, in unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// The scopes granted.
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
    /// When the caller saved this, in unix seconds.
    pub(crate) saved_at: u64,
}

/// Which file holds the tokens of one server and client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct StoreKey {
    server: String,
    url: String,
    client: String,
}

impl StoreKey {
    /// The key for server key `server` at `url` with client `client`: the configured client
    /// id, or a fixed word (such as `dynamic`) for a dynamically registered client.
    pub(crate) fn new(
        server: impl Into<String>,
        url: impl Into<String>,
        client: impl Into<String>,
    ) -> Self {
        Self {
            server: server.into(),
            url: url.into(),
            client: client.into(),
        }
    }

    /// `<server>-<hash>.json`: the server key with characters other than `a-z`, `0-9`, `_` and
    /// `-` replaced by `_` (at most 64 of them), and the first 16 hex digits of
    /// SHA-256(`url` + `"\n"` + `client`).
    pub(crate) fn file_name(&self) -> String {
        let mut name: String = self
            .server
            .chars()
            .take(64)
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '_' | '-' => c,
                _ => '_',
            })
            .collect();
        if name.is_empty() {
            name.push('_');
        }
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(self.url.as_bytes());
        ctx.update(b"\n");
        ctx.update(self.client.as_bytes());
        name.push('-');
        name.push_str(&hex(&ctx.finish().as_ref()[..8]));
        name.push_str(".json");
        name
    }

    /// The name of the DPoP key file: [`file_name`](Self::file_name) ending `.dpop-key`.
    pub(crate) fn key_file_name(&self) -> String {
        let name = self.file_name();
        format!("{}.dpop-key", name.trim_end_matches(".json"))
    }
}

/// The bytes of the private file `path` (`None` when missing): not following a symbolic link,
/// refusing a file that is not regular, another user's, readable by group or others, or over
/// 1 MiB.
fn read_private(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    let path = path.to_path_buf();
    // No following a symbolic link, and no blocking on a FIFO: the file is checked once open.
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            // O_NOFOLLOW fails on a symbolic link, with ELOOP or EMLINK depending on the OS.
            if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
                return Err(StoreError::NotRegularFile { path });
            }
            return Err(StoreError::io(path, "open", e));
        }
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => return Err(StoreError::io(path, "read the metadata of", e)),
    };
    check_private(&path, &meta, Kind::File)?;
    let mut bytes = Vec::new();
    if let Err(e) = file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
        return Err(StoreError::io(path, "read", e));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let detail = format!("larger than {MAX_FILE_BYTES} bytes");
        return Err(StoreError::Corrupt { path, detail });
    }
    Ok(Some(bytes))
}

/// A directory of token files. See the [module docs](self) for where it is and what it refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// A store in `dir`, created on the first [`save`](Self::save) if missing.
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `$XDG_STATE_HOME/kaged-mcp/oauth` when `XDG_STATE_HOME` is an absolute path, else
    /// `$HOME/.local/state/kaged-mcp/oauth` when `HOME` is; an error when neither is.
    pub(crate) fn default_dir() -> Result<PathBuf, StoreError> {
        default_dir_from(
            std::env::var_os("XDG_STATE_HOME").as_deref(),
            std::env::var_os("HOME").as_deref(),
        )
    }

    /// The directory of the store.
    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds the tokens of `key`.
    pub(crate) fn path(&self, key: &StoreKey) -> PathBuf {
        self.dir.join(key.file_name())
    }

    /// The tokens of `key`, or `None` when it has no file.
    ///
    /// Refuses a file that is not a regular file, that another user owns, whose mode has any
    /// group or other bit, that is corrupt, or whose `server_url` is not the key's URL.
    pub(crate) fn load(&self, key: &StoreKey) -> Result<Option<StoredTokens>, StoreError> {
        let path = self.path(key);
        let Some(bytes) = read_private(&path)? else {
            return Ok(None);
        };
        let tokens: StoredTokens = match serde_json::from_slice(&bytes) {
            Ok(tokens) => tokens,
            Err(e) => return Err(corrupt(path, &e)),
        };
        if tokens.server_url != key.url {
            return Err(StoreError::Stale { path });
        }
        Ok(Some(tokens))
    }

    /// The DPoP key file of `key`: `<server>-<hash>.dpop-key`, beside its token file.
    pub(crate) fn key_path(&self, key: &StoreKey) -> PathBuf {
        self.dir.join(key.key_file_name())
    }

    /// The bytes of the DPoP key file of `key`, or `None` when it has none; the same checks as
    /// [`load`](Self::load) (a private regular file of this user, at most 1 MiB).
    pub(crate) fn load_key(&self, key: &StoreKey) -> Result<Option<Vec<u8>>, StoreError> {
        read_private(&self.key_path(key))
    }

    /// Writes the DPoP key file of `key` (`0600`, atomically, as [`save`](Self::save) does).
    pub(crate) fn save_key(&self, key: &StoreKey, bytes: &[u8]) -> Result<(), StoreError> {
        self.ensure_dir()?;
        write_atomically(&self.dir, &key.key_file_name(), |file| {
            file.write_all(bytes)
        })
    }

    /// Removes the DPoP key file of `key`; `true` if there was one.
    pub(crate) fn remove_key(&self, key: &StoreKey) -> Result<bool, StoreError> {
        let path = self.key_path(key);
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.dir).map(|()| true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io(path, "remove", e)),
        }
    }

    /// Writes the tokens of `key`, atomically: the file afterwards holds either `tokens` or
    /// what it held before, never a mix, and no temporary file is left behind.
    ///
    /// Creates the directory (and its parents) `0700` when missing; refuses one that group or
    /// others may access or that another user owns.
    pub(crate) fn save(&self, key: &StoreKey, tokens: &StoredTokens) -> Result<(), StoreError> {
        self.ensure_dir()?;
        // Strings, numbers and booleans only: serializing into a Vec cannot fail.
        let mut json = serde_json::to_vec_pretty(tokens).expect("StoredTokens serializes");
        json.push(b'\n');
        let name = key.file_name();
        write_atomically(&self.dir, &name, |file| file.write_all(&json))?;
        tracing::debug!(path = %self.dir.join(&name).display(), "oauth tokens saved");
        Ok(())
    }

    /// Removes the file of `key`; `true` if there was one.
    pub(crate) fn remove(&self, key: &StoreKey) -> Result<bool, StoreError> {
        let path = self.path(key);
        match fs::remove_file(&path) {
            Ok(()) => {
                sync_dir(&self.dir)?;
                tracing::debug!(path = %path.display(), "oauth tokens removed");
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io(path, "remove", e)),
        }
    }

    /// Creates the directory `0700` when missing, or checks the one there.
    fn ensure_dir(&self) -> Result<(), StoreError> {
        let dir = &self.dir;
        let meta = match fs::metadata(dir) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Err(e) = DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir) {
                    return Err(StoreError::io(dir, "create the token directory", e));
                }
                match fs::metadata(dir) {
                    Ok(meta) => meta,
                    Err(e) => return Err(StoreError::io(dir, "read the metadata of", e)),
                }
            }
            Err(e) => return Err(StoreError::io(dir, "read the metadata of", e)),
        };
        check_private(dir, &meta, Kind::Dir)
    }
}

/// [`TokenStore::default_dir`] over the values of `XDG_STATE_HOME` and `HOME`. An empty or
/// relative value counts as unset, as the XDG base directory specification says.
fn default_dir_from(
    xdg_state_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<PathBuf, StoreError> {
    fn absolute(v: Option<&OsStr>) -> Option<&Path> {
        v.map(Path::new).filter(|p| p.is_absolute())
    }
    if let Some(state) = absolute(xdg_state_home) {
        return Ok(state.join("kaged-mcp").join("oauth"));
    }
    if let Some(home) = absolute(home) {
        return Ok(home.join(".local/state/kaged-mcp/oauth"));
    }
    Err(StoreError::NoStateDir)
}

/// What [`check_private`] checks.
#[derive(Debug, Clone, Copy)]
enum Kind {
    File,
    Dir,
}

/// Checks `meta` is a regular file (or a directory), owned by this user, with no group or
/// other bit in its mode.
fn check_private(path: &Path, meta: &fs::Metadata, kind: Kind) -> Result<(), StoreError> {
    let path = || path.to_path_buf();
    match kind {
        Kind::File if !meta.is_file() => return Err(StoreError::NotRegularFile { path: path() }),
        Kind::Dir if !meta.is_dir() => return Err(StoreError::NotADirectory { path: path() }),
        _ => {}
    }
    let uid = nix::unistd::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(StoreError::NotOwned {
            path: path(),
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(match kind {
            Kind::File => StoreError::FileMode { path: path(), mode },
            Kind::Dir => StoreError::DirMode { path: path(), mode },
        });
    }
    Ok(())
}

/// Writes `dir/name` through a temporary file in `dir`: created exclusively with mode `0600`,
/// filled by `write`, fsynced and renamed over the target; then `dir` is fsynced. The temporary
/// file is removed on any failure.
fn write_atomically(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), StoreError> {
    let target = dir.join(name);
    let mut suffix = [0u8; 8];
    if SystemRandom::new().fill(&mut suffix).is_err() {
        let e = io::Error::other("the system random number generator failed");
        return Err(StoreError::io(target, "name a temporary file for", e));
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", hex(&suffix)));
    let mut file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&tmp)
    {
        Ok(file) => file,
        Err(e) => return Err(StoreError::io(tmp, "create", e)),
    };
    let guard = RemoveOnDrop(Some(&tmp));
    // The umask may have narrowed the mode; a token file is exactly 0600.
    if let Err(e) = file.set_permissions(Permissions::from_mode(FILE_MODE)) {
        return Err(StoreError::io(&tmp, "set the mode of", e));
    }
    if let Err(e) = write(&mut file) {
        return Err(StoreError::io(&tmp, "write", e));
    }
    if let Err(e) = file.sync_all() {
        return Err(StoreError::io(&tmp, "fsync", e));
    }
    drop(file);
    if let Err(e) = fs::rename(&tmp, &target) {
        return Err(StoreError::io(target, "rename a temporary file over", e));
    }
    guard.disarm();
    sync_dir(dir)
}

/// Removes a temporary file when dropped, unless disarmed.
#[derive(Debug)]
struct RemoveOnDrop<'a>(Option<&'a Path>);

impl RemoveOnDrop<'_> {
    /// The file was renamed: nothing to remove.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(path) = self.0 {
            // Best effort: the error being reported is the one that made the write fail.
            let _ = fs::remove_file(path);
        }
    }
}

/// Fsyncs a directory, so a rename or removal in it survives a crash.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, "fsync", e))
}

/// A corrupt-file error from a JSON error: its category and place, never its message (which may
/// quote the file).
fn corrupt(path: PathBuf, e: &serde_json::Error) -> StoreError {
    let what = match e.classify() {
        Category::Syntax => "not valid JSON",
        Category::Eof => "cut short",
        Category::Data => "a field is missing or has the wrong type",
        Category::Io => "unreadable",
    };
    let detail = format!("{what} at line {} column {}", e.line(), e.column());
    StoreError::Corrupt { path, detail }
}

/// Lowercase hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// What [`StoreError::NoStateDir`] and the public [`super::NoStateDir`] say.
pub(crate) const NO_STATE_DIR: &str = "no directory for OAuth tokens: neither XDG_STATE_HOME nor HOME is set to an absolute path; set one, or name the token directory in config.toml";

/// Why the token store could not load, save or remove a file. Each names the path and the fix;
/// none carries a token, a client secret or the content of a file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// Neither `XDG_STATE_HOME` nor `HOME` is an absolute path.
    #[error("{}", NO_STATE_DIR)]
    NoStateDir,
    /// A token file whose mode lets group or others in.
    #[error("{path}: mode {mode:04o} lets group or others read OAuth tokens; run `chmod 600 {path}`, or remove it and log in again")]
    FileMode {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A token directory whose mode lets group or others in.
    #[error("{path}: the OAuth token directory has mode {mode:04o}, which lets group or others in; run `chmod 700 {path}`")]
    DirMode {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A token path that is a symbolic link, a directory, a FIFO or a device.
    #[error("{path}: not a regular file (a symbolic link, a directory or a device); remove it and log in again")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// A token directory path that is not a directory.
    #[error("{path}: the OAuth token directory is not a directory")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// A token file or directory that another user owns.
    #[error(
        "{path}: owned by uid {owner}, not by this user (uid {uid}); remove it and log in again"
    )]
    NotOwned {
        /// The file or directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective user id.
        uid: u32,
    },
    /// A token file that does not parse; `detail` says how, never what it holds.
    #[error("{path}: corrupt OAuth token file ({detail}); remove it and log in again")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The kind of damage and where.
        detail: String,
    },
    /// A token file saved for another server URL.
    #[error("{path}: holds OAuth tokens for another server URL; remove it and log in again")]
    Stale {
        /// The file.
        path: PathBuf,
    },
    /// An I/O operation failed.
    #[error("{path}: cannot {action}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done, as a verb phrase (`open`, `create the token directory`).
        action: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl StoreError {
    fn io(path: impl Into<PathBuf>, action: &'static str, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            action,
            source,
        }
    }
}

#[cfg(test)]
mod tests;
