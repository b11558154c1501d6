//! Private directories and files for host state.
//!
//! Host state (databases, approved plugins, compiled code) is for the user
//! running GOAT alone: directories are made mode 0700 and files 0600. A
//! file is written whole or not at all: through a temporary file in the
//! same directory, synced, then renamed over the target, so a reader (or a
//! GOAT that crashed mid-write) never sees half of it.

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
