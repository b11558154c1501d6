//! Private directories and files for host state.
//!
//! Host state (databases, approved plugins, compiled code) is for the user
//! running GOAT alone: directories are made mode 0700 and files 0600. A
//! file is written whole or not at all: through a temporary file in the
//! same directory, synced, then renamed over the target, so a reader (or a
//! GOAT that crashed mid-write) never sees half of it.
//!
//! Where GOAT trusts what it finds (compiled code it runs as native code,
//! approved plugins), making a directory private is not enough: one that
//! already existed may belong to someone else or be open to them.
//! [`open_private_dir`] and [`check_private_dir`] refuse such a directory,
//! and [`check_private_file`] such a file, saying why and what to do.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates `dir` (and its parents) so only its owner, the user running
/// GOAT, can enter it: the place for host state such as the store and the
/// permission database.
///
/// A directory that already exists is left as it is.
#[cfg(unix)]
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// See the unix version.
#[cfg(not(unix))]
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

/// Why a directory or file GOAT would trust is not private to the user
/// running it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrivacyError {
    /// The directory could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Its owner and mode could not be read.
    #[error("cannot look at {}: {source}", path.display())]
    Inspect {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Something other than a directory (a symlink, a file) is where the
    /// directory should be.
    #[error(
        "{} is not a directory (it is {kind}); remove it, and GOAT will make a private one",
        path.display()
    )]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Something other than a regular file is where a file should be.
    #[error("{} is not a regular file (it is {kind}); remove it", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Another user owns it: they could change what GOAT trusts.
    #[error(
        "{} belongs to user {owner}, not to you (user {me}); GOAT trusts what it finds there, so \
         it must be yours alone. Remove it (GOAT makes its own), or point GOAT elsewhere",
        path.display()
    )]
    NotOwned {
        /// The path.
        path: PathBuf,
        /// Its owner's user id.
        owner: u32,
        /// The user running GOAT.
        me: u32,
    },
    /// Its group or everyone may write it.
    #[error(
        "{} can be written by {who} (mode {mode:03o}); they could plant what GOAT trusts there. \
         Run `chmod {fix:o} {}`, or remove it",
        path.display(),
        path.display()
    )]
    Writable {
        /// The path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// "its group", "everyone", "its group and everyone".
        who: &'static str,
        /// The mode to set instead (700 for a directory, 600 for a file).
        fix: u32,
    },
}

/// Creates `dir` (and its parents) private to the user running GOAT, as
/// [`create_private_dir`] does, then [`check_private_dir`]s it: one that
/// already existed must be as private as a new one.
///
/// # Security
///
/// For directories whose contents GOAT trusts: the compiled-code cache and
/// the plugin directory. A 0777 cache directory would let any local user
/// replace the native code run as `read_file`.
pub fn open_private_dir(dir: &Path) -> Result<(), PrivacyError> {
    create_private_dir(dir).map_err(|source| PrivacyError::Create {
        path: dir.to_owned(),
        source,
    })?;
    check_private_dir(dir)
}

/// Refuses `dir` unless it is a directory (not a symlink to one: callers
/// pass resolved paths), owned by the user running GOAT and writable by no
/// one else. A missing directory holds nothing to trust and passes.
pub fn check_private_dir(dir: &Path) -> Result<(), PrivacyError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(PrivacyError::Inspect {
                path: dir.to_owned(),
                source,
            });
        }
    };
    if !meta.is_dir() {
        return Err(PrivacyError::NotADirectory {
            path: dir.to_owned(),
            kind: kind_of(&meta.file_type()),
        });
    }
    check_owner_and_mode(dir, &meta, DIR_MODE)
}

/// Refuses an open file unless it is a regular file owned by the user
/// running GOAT and writable by no one else. Checked on the descriptor,
/// so the file checked is the file read.
pub fn check_private_file(file: &fs::File, path: &Path) -> Result<(), PrivacyError> {
    let meta = file.metadata().map_err(|source| PrivacyError::Inspect {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_file() {
        return Err(PrivacyError::NotAFile {
            path: path.to_owned(),
            kind: kind_of(&meta.file_type()),
        });
    }
    check_owner_and_mode(path, &meta, FILE_MODE)
}

/// Opens `path` to read a file GOAT will trust (a compiled-code cache
/// entry), refusing a symlink, anything but a regular file, and a file
/// [`check_private_file`] refuses.
///
/// # Security
///
/// Opened without following a final symlink and without blocking (a FIFO
/// put in its place cannot hang the caller), then checked on the
/// descriptor: the file checked is the file read, whatever is renamed
/// over the path meanwhile.
pub fn open_private_file(path: &Path) -> Result<fs::File, PrivacyError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits().cast_signed());
    }
    let file = options.open(path).map_err(|source| PrivacyError::Inspect {
        path: path.to_owned(),
        source,
    })?;
    check_private_file(&file, path)?;
    Ok(file)
}

/// Why [`open_regular`] refused a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenRegularError {
    /// It could not be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// It is not a regular file.
    #[error("{} is not a regular file (it is {kind}); give a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
}

/// Opens `path` for reading if it is a regular file (following symlinks),
/// and refuses anything else (a FIFO, a device, a socket, a directory)
/// without ever blocking on it.
///
/// # Security
///
/// Checking the type first and then opening leaves a gap: a FIFO swapped
/// in between makes a plain open wait forever for a writer. So the file is
/// opened with `O_NONBLOCK` (which a FIFO honours by opening at once and
/// a regular file ignores) and its type checked on the descriptor.
pub fn open_regular(path: &Path) -> Result<fs::File, OpenRegularError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed());
    }
    let open_err = |source| OpenRegularError::Open {
        path: path.to_owned(),
        source,
    };
    let file = options.open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() {
        return Err(OpenRegularError::NotAFile {
            path: path.to_owned(),
            kind: kind_of(&meta.file_type()),
        });
    }
    Ok(file)
}

/// The mode a private directory is made with.
const DIR_MODE: u32 = 0o700;

/// The mode a private file is written with.
const FILE_MODE: u32 = 0o600;

/// What a file type is, for a message.
fn kind_of(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "something else"
    }
}

/// Whether the file `meta` describes belongs to the user GOAT runs as, or
/// to root: files anyone else owns (another user's, in a shared directory)
/// are not taken as the person's own configuration.
#[cfg(unix)]
pub fn owned_by_me_or_root(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let owner = meta.uid();
    owner == 0 || owner == rustix::process::geteuid().as_raw()
}

#[cfg(unix)]
fn check_owner_and_mode(path: &Path, meta: &fs::Metadata, fix: u32) -> Result<(), PrivacyError> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let owner = meta.uid();
    if owner != me {
        return Err(PrivacyError::NotOwned {
            path: path.to_owned(),
            owner,
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (false, false) => return Ok(()),
        (true, false) => "its group",
        (false, true) => "everyone",
        (true, true) => "its group and everyone",
    };
    Err(PrivacyError::Writable {
        path: path.to_owned(),
        mode,
        who,
        fix,
    })
}

/// Owners and modes are a unix idea; elsewhere the checks pass.
#[cfg(not(unix))]
fn check_owner_and_mode(_path: &Path, _meta: &fs::Metadata, _fix: u32) -> Result<(), PrivacyError> {
    Ok(())
}

/// Writes `bytes` to `path` (mode 0600) through a new temporary file in the
/// same directory, synced, then renamed over `path`: a reader sees the old
/// file or the new one, never half of either. On failure the temporary file
/// is removed and whatever was at `path` is left as it was.
///
/// The directory must exist; see [`create_private_dir`].
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path)?;
    let mut options = fs::OpenOptions::new();
    // create_new: never write through a file (or symlink) already there.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    written
        .and_then(|()| fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
}

/// Why a host list (the MCP servers', the hooks') was not read.
#[derive(Debug, thiserror::Error)]
pub enum ListReadError {
    /// A symbolic link, not a regular file, or where others may write.
    #[error("{0}")]
    Unsafe(String),
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Larger than its cap.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
}

/// Reads a list of what GOAT starts (the MCP servers, the hooks): `None`
/// when there is none.
///
/// # Security
///
/// It says which programs GOAT runs: a symbolic link (to anywhere), a
/// file another user owns or may write, or one in a directory others may
/// write, is refused before it is read; it is read up to `max` bytes. No
/// file is no list, so a store kept in a shared directory still works;
/// only a list found there is refused.
pub fn read_private_list(path: &Path, max: u64) -> Result<Option<Vec<u8>>, ListReadError> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ListReadError::Unsafe(
            "it is a symbolic link; GOAT keeps its lists in regular files".to_owned(),
        ));
    }
    if let Some(dir) = path.parent()
        && path.exists()
    {
        check_private_dir(dir).map_err(|e| ListReadError::Unsafe(e.to_string()))?;
    }
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(OpenRegularError::Open { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(ListReadError::Unsafe(e.to_string())),
    };
    check_private_file(&file, path).map_err(|e| ListReadError::Unsafe(e.to_string()))?;
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, max + 1), &mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ListReadError::TooLarge(max));
    }
    Ok(Some(bytes))
}

/// Why a host list was not written.
#[derive(Debug, thiserror::Error)]
pub enum ListWriteError {
    /// Writing failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Its directory is where others may write: it would be refused when
    /// read.
    #[error("{0}")]
    Unsafe(String),
}

/// Writes a list [`read_private_list`] reads, whole or not at all (mode
/// 0600), making its directory private if it is new.
pub fn write_private_list(path: &Path, bytes: &[u8]) -> Result<(), ListWriteError> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
        check_private_dir(dir).map_err(|e| ListWriteError::Unsafe(e.to_string()))?;
    }
    Ok(write_private_atomic(path, bytes)?)
}

/// A temporary name beside `path`, unique per write and not only per
/// process: two threads (two sandboxes caching one component, say) may
/// write one target at once, and sharing a temporary file would have one
/// rename the other's away.
fn temp_path(path: &Path) -> io::Result<PathBuf> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let mut tmp = OsString::from(format!(".tmp-{}-{n}-", std::process::id()));
    tmp.push(name);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok(dir.join(tmp))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp-"))
            .collect()
    }

    #[test]
    fn a_private_dir_is_made_with_its_parents_for_the_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        create_private_dir(&deep).unwrap();
        assert!(deep.is_dir());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for d in [dir.path().join("a"), deep] {
                let mode = fs::metadata(&d).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o700, "{}", d.display());
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_open_to_others_is_refused_and_left_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        open_private_dir(&cache).unwrap();
        for (mode, who) in [
            (0o777, "its group and everyone"),
            (0o770, "its group"),
            (0o702, "everyone"),
        ] {
            fs::set_permissions(&cache, fs::Permissions::from_mode(mode)).unwrap();
            let err = open_private_dir(&cache).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, PrivacyError::Writable { .. }),
                "{mode:o}: {msg}"
            );
            assert!(msg.contains(&format!("can be written by {who}")), "{msg}");
            assert!(
                msg.contains(&format!("chmod 700 {}", cache.display())),
                "{msg}"
            );
            let kept = fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
            assert_eq!(kept, mode, "left as it was");
        }
        // Readable by others is not a way in.
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o755)).unwrap();
        open_private_dir(&cache).unwrap();
        // A symlink or a file where the directory should be.
        let file = dir.path().join("file");
        fs::write(&file, b"").unwrap();
        assert!(matches!(
            check_private_dir(&file),
            Err(PrivacyError::NotADirectory {
                kind: "a regular file",
                ..
            })
        ));
        std::os::unix::fs::symlink(&cache, dir.path().join("link")).unwrap();
        assert!(matches!(
            check_private_dir(&dir.path().join("link")),
            Err(PrivacyError::NotADirectory {
                kind: "a symlink",
                ..
            })
        ));
        check_private_dir(&dir.path().join("missing")).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_or_file_owned_by_another_user_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let me = rustix::process::geteuid().as_raw();
        if me != 0 {
            // Only root can give a file away; see the mode tests instead.
            eprintln!("skipped: giving a file to another user needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        open_private_dir(&cache).unwrap();
        let entry = cache.join("entry");
        write_private_atomic(&entry, b"code").unwrap();
        check_private_file(&fs::File::open(&entry).unwrap(), &entry).unwrap();
        std::os::unix::fs::chown(&entry, Some(4242), None).unwrap();
        assert!(matches!(
            check_private_file(&fs::File::open(&entry).unwrap(), &entry),
            Err(PrivacyError::NotOwned {
                owner: 4242,
                me: 0,
                ..
            })
        ));
        std::os::unix::fs::chown(&cache, Some(4242), None).unwrap();
        let err = open_private_dir(&cache).unwrap_err();
        assert!(
            err.to_string().contains("belongs to user 4242, not to you"),
            "{err}"
        );
        // A file open to others.
        let other = dir.path().join("other");
        fs::write(&other, b"code").unwrap();
        fs::set_permissions(&other, fs::Permissions::from_mode(0o666)).unwrap();
        let err = check_private_file(&fs::File::open(&other).unwrap(), &other).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn open_regular_refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        // Blocking here would hang the test: it has no writer.
        let err = open_regular(&fifo).unwrap_err();
        assert!(
            matches!(err, OpenRegularError::NotAFile { kind: "a FIFO", .. }),
            "{err}"
        );
        assert!(matches!(
            open_regular(dir.path()),
            Err(OpenRegularError::NotAFile {
                kind: "a directory",
                ..
            })
        ));
        let file = dir.path().join("file");
        fs::write(&file, b"text").unwrap();
        let mut text = String::new();
        io::Read::read_to_string(&mut open_regular(&file).unwrap(), &mut text).unwrap();
        assert_eq!(text, "text");
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_is_opened_only_if_regular_ours_and_closed_to_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("entry");
        write_private_atomic(&entry, b"code").unwrap();
        open_private_file(&entry).unwrap();
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
        let err = open_private_file(&entry).unwrap_err();
        assert!(matches!(err, PrivacyError::Writable { .. }), "{err}");
        assert!(err.to_string().contains("chmod 600"), "{err}");
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&entry, dir.path().join("link")).unwrap();
        assert!(open_private_file(&dir.path().join("link")).is_err());
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(matches!(
            open_private_file(&fifo),
            Err(PrivacyError::NotAFile { kind: "a FIFO", .. })
        ));
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_privately() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        fs::write(&path, b"old").unwrap();
        write_private_atomic(&path, b"new contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new contents");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn a_directory_in_the_way_fails_the_write_and_is_left_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), b"kept").unwrap();
        assert!(write_private_atomic(&path, b"new").is_err());
        assert_eq!(fs::read(path.join("inside")).unwrap(), b"kept");
        assert!(
            leftovers(dir.path()).is_empty(),
            "the temporary file is removed"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_read_only_directory_fails_the_write_and_keeps_the_original() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("ro");
        fs::create_dir(&sub).unwrap();
        let path = sub.join("entry");
        fs::write(&path, b"original").unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o500)).unwrap();
        // A privileged user (root in a container) writes regardless; there
        // is then no failure to observe.
        let privileged = fs::write(sub.join("probe"), b"").is_ok();
        let result = write_private_atomic(&path, b"replacement");
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).unwrap();
        if privileged {
            return;
        }
        assert!(result.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"original");
    }

    #[test]
    fn each_write_gets_its_own_temporary_name() {
        let path = Path::new("/state/entry");
        let a = temp_path(path).unwrap();
        let b = temp_path(path).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(Path::new("/state")));
        assert!(a.to_string_lossy().ends_with("-entry"), "{}", a.display());
    }

    #[test]
    fn concurrent_writes_of_one_target_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8_u8)
                .map(|i| {
                    let path = &path;
                    scope.spawn(move || {
                        for _ in 0..20 {
                            write_private_atomic(path, &[i; 4096])?;
                        }
                        io::Result::Ok(())
                    })
                })
                .collect();
            for writer in writers {
                writer.join().unwrap().unwrap();
            }
        });
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert!(
            bytes.iter().all(|b| *b == bytes[0]),
            "one writer's whole file"
        );
        assert!(leftovers(dir.path()).is_empty());
    }
}
