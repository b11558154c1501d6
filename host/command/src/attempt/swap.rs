//! Swapping one landed attempt for another in one change set (issue 42,
//! ADR-0099): a copy of the new attempt's layer, to which
//! [`AttemptLayer::put_back`] adds what the workspace held before the
//! landed attempt wherever the new layer says nothing. Landed over the
//! workspace, that one set takes the old attempt back and brings the new
//! one in, inspected, journaled and landed whole like any other; undoing
//! it brings the old attempt back.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::AttemptLayer;
use crate::layer::{Node, is_opaque, open_dir_at, open_dir_path};

/// What a path held before a landing, to be put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Before {
    /// Nothing.
    Absent,
    /// A regular file, with its bytes and permission bits (`0o7777`).
    File {
        /// Its bytes.
        bytes: Vec<u8>,
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link, with its target.
    Link(Vec<u8>),
    /// A directory, with its permission bits.
    Dir(u32),
}

impl Before {
    /// What `node` says was there; `None` when it cannot be put back (a
    /// file whose bytes were not kept, or a special file).
    pub fn from_node(node: &Node) -> Option<Self> {
        Some(match node {
            Node::Absent => Self::Absent,
            Node::File {
                bytes: Some(bytes),
                mode,
                ..
            } => Self::File {
                bytes: bytes.clone(),
                mode: *mode,
            },
            Node::File { bytes: None, .. } | Node::Special(_) => return None,
            Node::Symlink(target) => Self::Link(target.clone()),
            Node::Dir(mode) => Self::Dir(*mode),
        })
    }
}

impl AttemptLayer {
    /// Adds to this layer what `workspace` held before at each of `paths`
    /// (`/`-separated, parents before children) that this layer says
    /// nothing of: neither the path nor a file, link, removal or opaque
    /// directory above it is in the layer. Landed over a workspace where
    /// another attempt landed with those paths, the layer then takes that
    /// landing back wherever it does not replace it. Directories made to
    /// hold what is put back get the workspace's permission bits, so
    /// landing leaves them as they are. Nothing is followed.
    pub fn put_back(&self, workspace: &Path, paths: &[(String, Before)]) -> io::Result<()> {
        let upper = open_dir_path(&self.dir.join("upper"))?;
        let ws = open_dir_path(workspace)?;
        let opaque = crate::layer::opaque_xattr(!rustix::process::geteuid().is_root());
        // Directories made here, given their bits once everything is in
        // them (a read-only one would refuse what goes in it).
        let mut modes: Vec<(OwnedFd, u32)> = Vec::new();
        let known: std::collections::HashSet<&str> =
            paths.iter().map(|(p, _)| p.as_str()).collect();
        for (path, before) in paths {
            let names = components(path)?;
            let Some((last, parents)) = names.split_last() else {
                continue;
            };
            let (mut dir, mut below) = (dup(&upper)?, Some(dup(&ws)?));
            let mut covered = false;
            for name in parents {
                let below_dir = below.as_ref().and_then(|b| open_dir_at(b, name).ok());
                match rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                        let sub = open_dir_at(&dir, name)?;
                        if is_opaque(&sub, opaque) {
                            covered = true;
                            break;
                        }
                        dir = sub;
                    }
                    Ok(_) => {
                        covered = true;
                        break;
                    }
                    Err(Errno::NOENT) => {
                        // Made to hold what is put back, as the workspace
                        // has it (a directory that was there before was
                        // named earlier in `paths`, and is in the layer).
                        let Some(below_dir) = &below_dir else {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidData,
                                format!("'{path}' has no directory to be put back in"),
                            ));
                        };
                        let mode = rustix::fs::fstat(below_dir)?.st_mode & 0o7777;
                        rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o700))?;
                        let sub = open_dir_at(&dir, name)?;
                        modes.push((dup(&sub)?, mode));
                        dir = sub;
                    }
                    Err(e) => return Err(e.into()),
                }
                below = below_dir;
            }
            if covered || exists(&dir, last)? {
                continue;
            }
            // A directory the workspace holds is removed whole by anything
            // but a directory put in its place: never with something in it
            // that the landing did not put there (the person's, since).
            if !matches!(before, Before::Dir(_))
                && let Some(below) = &below
                && let Ok(sub) = open_dir_at(below, last)
                && let Some(foreign) = unknown_below(&sub, path, &known)?
            {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "'{foreign}' was put in '{path}' after the landing, which did not make \
                         it; it would be removed"
                    ),
                ));
            }
            match before {
                // A removal, of what is there now.
                Before::Absent => {
                    if below
                        .as_ref()
                        .is_some_and(|b| exists(b, last).unwrap_or(true))
                    {
                        rustix::fs::mknodat(
                            &dir,
                            *last,
                            FileType::CharacterDevice,
                            Mode::empty(),
                            0,
                        )?;
                    }
                }
                Before::File { bytes, mode } => {
                    let file = rustix::fs::openat(
                        &dir,
                        *last,
                        OFlags::WRONLY
                            | OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::NOFOLLOW
                            | OFlags::CLOEXEC,
                        Mode::from_raw_mode(0o600),
                    )?;
                    let mut file = std::fs::File::from(file);
                    io::Write::write_all(&mut file, bytes)?;
                    rustix::fs::fchmod(&file, Mode::from_raw_mode(*mode))?;
                }
                Before::Link(target) => rustix::fs::symlinkat(target.as_slice(), &dir, *last)?,
                Before::Dir(mode) => {
                    rustix::fs::mkdirat(&dir, *last, Mode::from_raw_mode(0o700))?;
                    modes.push((open_dir_at(&dir, last)?, *mode));
                }
            }
        }
        for (dir, mode) in modes.iter().rev() {
            rustix::fs::fchmod(dir, Mode::from_raw_mode(*mode))?;
        }
        Ok(())
    }
}

/// The first path under the directory `dir` (at `rel`) that is not in
/// `known`, if any; nothing is followed.
fn unknown_below(
    dir: &OwnedFd,
    rel: &str,
    known: &std::collections::HashSet<&str>,
) -> io::Result<Option<String>> {
    for name in crate::layer::names(dir)? {
        let child = format!("{rel}/{}", String::from_utf8_lossy(&name));
        if !known.contains(child.as_str()) {
            return Ok(Some(child));
        }
        if let Ok(sub) = open_dir_at(dir, &name)
            && let Some(found) = unknown_below(&sub, &child, known)?
        {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The names of `path`, each a plain one (no `.`, `..` or empty name).
fn components(path: &str) -> io::Result<Vec<&[u8]>> {
    let names: Vec<&[u8]> = path.split('/').map(str::as_bytes).collect();
    if names
        .iter()
        .any(|n| n.is_empty() || *n == b"." || *n == b".." || n.contains(&0))
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{path}' is not a path inside the workspace"),
        ));
    }
    Ok(names)
}

fn dup(fd: &impl AsFd) -> io::Result<OwnedFd> {
    Ok(rustix::io::fcntl_dupfd_cloexec(fd, 0)?)
}

fn exists(dir: &impl AsFd, name: &[u8]) -> io::Result<bool> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
