//! Which files git tracks, read from the repository's index file, for the
//! change-set guard: a command that removes a tracked file is asked about.
//!
//! The index is parsed here rather than by running `git`: running git in a
//! hostile repository runs what its configuration names (`core.fsmonitor`),
//! which is exactly what GOAT keeps commands from planting. Versions 2, 3
//! and 4 (path prefix compression) are read, with SHA-1 or SHA-256 object
//! names; anything else reads as "nothing known to be tracked", which only
//! means the guard counts files instead.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Largest index file read: a repository of a few hundred thousand files.
const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;

/// The tracked paths of the repository `workspace` is in, relative to the
/// workspace (paths outside it left out). Empty when there is no
/// repository or its index cannot be read.
pub fn tracked(workspace: &Path) -> HashSet<String> {
    let Some((repo_root, git_dir)) = find_repository(workspace) else {
        return HashSet::new();
    };
    let prefix = match workspace.strip_prefix(&repo_root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => return HashSet::new(),
    };
    let Some(bytes) = read_index(&git_dir.join("index")) else {
        return HashSet::new();
    };
    let Some(paths) = parse(&bytes) else {
        return HashSet::new();
    };
    paths
        .into_iter()
        .filter_map(|p| {
            if prefix.is_empty() {
                Some(p)
            } else {
                p.strip_prefix(&format!("{prefix}/")).map(str::to_owned)
            }
        })
        .collect()
}

/// The index file's bytes: a regular file (never through a link, never a
/// FIFO or device), at most [`MAX_INDEX_BYTES`].
fn read_index(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::NONBLOCK
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_INDEX_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= MAX_INDEX_BYTES).then_some(bytes)
}

/// The longest path an index entry may hold here (git's own limit is
/// PATH_MAX-like); a longer one means the file is not a real index.
const MAX_ENTRY_PATH_BYTES: usize = 4096;

/// The repository root and its git directory, looking from `start` up.
fn find_repository(start: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        let dot = d.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Ok(meta) if meta.is_dir() => return Some((d.to_path_buf(), dot)),
            Ok(meta) if meta.is_file() => {
                // A worktree or submodule: `gitdir: PATH`.
                let text = std::fs::read_to_string(&dot).ok()?;
                let target = text.strip_prefix("gitdir:")?.trim();
                let target = Path::new(target);
                let git_dir = if target.is_absolute() {
                    target.to_path_buf()
                } else {
                    d.join(target)
                };
                return Some((d.to_path_buf(), git_dir));
            }
            _ => dir = d.parent(),
        }
    }
    None
}

/// The paths in an index file; `None` when it is not one GOAT reads.
pub(crate) fn parse(bytes: &[u8]) -> Option<Vec<String>> {
    let header = bytes.get(..12)?;
    if header.get(..4)? != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes(header.get(4..8)?.try_into().ok()?);
    let count = u32::from_be_bytes(header.get(8..12)?.try_into().ok()?) as usize;
    if !(2..=4).contains(&version) {
        return None;
    }
    // SHA-1 names are 20 bytes; a SHA-256 repository's 32. Try SHA-1
    // first, then SHA-256, and keep the one that parses the whole count.
    for hash_len in [20usize, 32] {
        if let Some(paths) = entries(bytes, version, count, hash_len) {
            return Some(paths);
        }
    }
    None
}

fn entries(bytes: &[u8], version: u32, count: usize, hash_len: usize) -> Option<Vec<String>> {
    // Each entry takes at least 62 bytes in the file: a count larger than
    // the file could hold is not an index.
    if count > bytes.len() / 62 + 1 {
        return None;
    }
    // Version 4 compresses paths against the previous one, so the paths
    // can be far longer in total than the file; bound them.
    let mut total_path_bytes = 0usize;
    let max_total = bytes.len().saturating_mul(4).max(1 << 20);
    let mut at = 12usize;
    let mut paths: Vec<String> = Vec::with_capacity(count.min(1 << 20));
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        // ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each).
        at = at.checked_add(40 + hash_len)?;
        let flags = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let path = if version == 4 {
            // A varint of how many bytes to drop from the previous path,
            // then the rest, NUL-terminated.
            let (strip, used) = varint(bytes.get(at..)?)?;
            at += used;
            let end = at + bytes.get(at..)?.iter().position(|&b| b == 0)?;
            let keep = previous.len().checked_sub(strip)?;
            let mut path = previous.get(..keep)?.to_vec();
            path.extend_from_slice(bytes.get(at..end)?);
            at = end + 1;
            path
        } else {
            let end = at + bytes.get(at..)?.iter().position(|&b| b == 0)?;
            let path = bytes.get(at..end)?.to_vec();
            // Entries are padded with NULs to a multiple of 8 bytes.
            let len = end - start + 1;
            at = start + len.div_ceil(8) * 8;
            path
        };
        if path.len() > MAX_ENTRY_PATH_BYTES {
            return None;
        }
        total_path_bytes += path.len();
        if total_path_bytes > max_total {
            return None;
        }
        paths.push(String::from_utf8(path.clone()).ok()?);
        previous = path;
    }
    if at > bytes.len() {
        return None;
    }
    Some(paths)
}

/// Git's offset varint (each continuation adds one before shifting).
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut iter = bytes.iter();
    let mut byte = *iter.next()?;
    let mut value = usize::from(byte & 0x7f);
    let mut used = 1;
    while byte & 0x80 != 0 {
        byte = *iter.next()?;
        used += 1;
        value = value.checked_add(1)?.checked_shl(7)? | usize::from(byte & 0x7f);
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    #[test]
    fn the_index_of_a_real_repository_lists_its_tracked_files_in_every_version() {
        let dir = tempfile::tempdir().unwrap();
        if !git(dir.path(), &["init", "-q"]) {
            eprintln!("skipped: git is not installed");
            return;
        }
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        for f in ["a.txt", "src/lib.rs", "src/deep/x.rs", "untracked.txt"] {
            std::fs::write(dir.path().join(f), f).unwrap();
        }
        assert!(git(dir.path(), &["add", "a.txt", "src"]));
        for version in ["2", "3", "4"] {
            assert!(git(
                dir.path(),
                &["update-index", "--index-version", version]
            ));
            let mut got: Vec<String> = tracked(dir.path()).into_iter().collect();
            got.sort();
            assert_eq!(
                got,
                ["a.txt", "src/deep/x.rs", "src/lib.rs"],
                "version {version}"
            );
            let mut sub: Vec<String> = tracked(&dir.path().join("src")).into_iter().collect();
            sub.sort();
            assert_eq!(sub, ["deep/x.rs", "lib.rs"]);
        }
    }

    #[test]
    fn a_hostile_index_is_read_within_bounds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        // A link to an endless device: never followed.
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(".git/index")).unwrap();
        assert!(tracked(dir.path()).is_empty());
        // A FIFO: never opened for a blocking read.
        std::fs::remove_file(dir.path().join(".git/index")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join(".git/index"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert!(tracked(dir.path()).is_empty());
        // Version 4 with each path one byte longer than the last, and a
        // count the file could not hold: refused, not quadratic.
        let mut bytes = b"DIRC\0\0\0\x04\0\x10\0\0".to_vec();
        for _ in 0..2000 {
            bytes.extend_from_slice(&[0u8; 60]);
            bytes.extend_from_slice(&[0, 0]);
            bytes.push(0);
            bytes.extend_from_slice(b"a\0");
        }
        assert_eq!(parse(&bytes), None);
    }

    #[test]
    fn garbage_is_no_index() {
        assert_eq!(parse(b"DIRC\0\0\0\x02\0\0\0\x05short"), None);
        assert_eq!(parse(b"nope"), None);
    }
}
