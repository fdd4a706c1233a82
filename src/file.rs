//! Reading the operator's files (configuration, `mcp.lock`) safely: only regular files, never
//! more than a bound, and never blocking on what is not a file.
//!
//! A path the project names can be anything the file system holds: a FIFO (whose `open` waits
//! for a writer forever), a device, a directory, a file that grows while it is read. [`read`]
//! opens without blocking (`O_NONBLOCK`, `O_NOCTTY`), refuses anything but a regular file by the
//! metadata of the file it opened (not of the path, which may change in between), and reads at
//! most `max` bytes plus one to tell a file over the bound from one at it.

use std::fmt;
use std::io::Read as _;
use std::path::Path;

/// Why [`read`] gave nothing.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// The path names no file.
    NotFound,
    /// The path names a directory, a FIFO, a socket or a device: `what` says which.
    NotRegular {
        /// `a directory`, `a FIFO`, `a socket`, `a device`.
        what: &'static str,
    },
    /// The file is larger than the bound.
    TooLarge {
        /// Its size as its metadata gives it, when that is over the bound already (none
        /// of it was read); `None` when it grew past the bound while it was read.
        size: Option<u64>,
        /// The bound, in bytes.
        max: u64,
    },
    /// The file could not be opened or read.
    Io(std::io::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("does not exist"),
            ReadError::NotRegular { what } => write!(f, "is {what}, not a regular file"),
            ReadError::TooLarge {
                size: Some(size),
                max,
            } => write!(f, "is {size} bytes; the limit is {max} bytes"),
            ReadError::TooLarge { size: None, max } => {
                write!(f, "is larger than the limit of {max} bytes")
            }
            ReadError::Io(e) => write!(f, "cannot read: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The bytes of the regular file at `path` (symbolic links followed), at most `max` of them.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e),
    })?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            what: kind_of(&meta),
        });
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge {
            size: Some(meta.len()),
            max,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge { size: None, max });
    }
    Ok(bytes)
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    "not a regular file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_up_to_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read(&p, 5).unwrap(), b"12345");
        assert!(matches!(
            read(&p, 4),
            Err(ReadError::TooLarge {
                size: Some(5),
                max: 4
            })
        ));
        assert!(matches!(
            read(&dir.path().join("none"), 4),
            Err(ReadError::NotFound)
        ));
        assert!(matches!(
            read(dir.path(), 4),
            Err(ReadError::NotRegular {
                what: "a directory"
            })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read(&p, 1024).unwrap_err();
        assert!(matches!(e, ReadError::NotRegular { what: "a FIFO" }), "{e}");
        assert_eq!(e.to_string(), "is a FIFO, not a regular file");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused() {
        let e = read(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(
            matches!(e, ReadError::NotRegular { what: "a device" }),
            "{e}"
        );
    }
}
