//! Landing a command's change set in the real workspace: every step a
//! rename (or a chmod), each one atomic, the whole set put back if any step
//! fails.
//!
//! What the workspace held at a path is first linked (a file or link) or
//! moved (a directory, a removal) into the layer's `backup` directory, on
//! the same filesystem, and only then is the new entry renamed over the
//! name. So at every instant each path holds either what it held before or
//! what the command left; a crash of GOAT leaves the backups in its own
//! layer directory, never in the workspace. When a step fails, the steps
//! done are undone in reverse order from those backups.
//!
//! # Security
//!
//! Every directory is reached from the workspace root (and the upper
//! layer's root) with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so
//! a link planted in the workspace since cannot redirect a rename.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;

use crate::layer::{Ident, Op};

/// Beneath the root, through no link, and never onto another mount (a
/// mount inside the workspace is not what the command's overlay saw).
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_XDEV);

/// One step done, and how to take it back.
#[derive(Debug)]
enum Done {
    /// A new entry renamed into a free name.
    Placed(String),
    /// A new entry renamed over an old one, kept as backup `n`.
    Replaced(String, usize),
    /// An entry moved away into backup `n`.
    Moved(String, usize),
    /// A directory's bits changed from these.
    Chmodded(String, u32),
}

/// Why a change set did not land.
#[derive(Debug, thiserror::Error)]
#[error("landing '{path}' failed ({source}); {undone}")]
pub struct LandError {
    /// The path it failed at.
    pub path: String,
    /// The failure.
    pub source: io::Error,
    /// What happened to the steps already done, said plainly.
    pub undone: String,
    /// Whether every step done was taken back (the workspace is as it was).
    /// When not, the layer and its backups are kept (see `undone`).
    pub taken_back: bool,
}

fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn open_beneath(root: &OwnedFd, dir: &str) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat2(
        root,
        if dir.is_empty() { "." } else { dir },
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        RESOLVE,
    )?)
}

fn open_root(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Lands `ops` from `upper` into `workspace`, with `backup` (an empty
/// directory on the same filesystem) for what they replace. All of it or
/// none of it.
pub(crate) fn land(
    workspace: &Path,
    upper: &Path,
    backup: &Path,
    ops: &[Op],
) -> Result<usize, LandError> {
    let fail = |path: &str, source: io::Error, (undone, taken_back): (String, bool)| LandError {
        path: path.to_owned(),
        source,
        undone,
        taken_back,
    };
    let roots = open_root(workspace).and_then(|ws| Ok((ws, open_root(upper)?, open_root(backup)?)));
    let (ws, up, bk) = match roots {
        Ok(roots) => roots,
        Err(e) => return Err(fail(".", e, ("nothing was changed".to_owned(), true))),
    };
    let mut done: Vec<Done> = Vec::new();
    for op in ops {
        let step = step(&ws, &up, &bk, op, done.len());
        match step {
            Ok(Some(d)) => done.push(d),
            Ok(None) => {}
            Err(e) => {
                let undone = rollback(&ws, &up, &bk, done, backup);
                return Err(fail(op.path(), e, undone));
            }
        }
    }
    Ok(done.len())
}

fn step(ws: &OwnedFd, up: &OwnedFd, bk: &OwnedFd, op: &Op, n: usize) -> io::Result<Option<Done>> {
    let backup_name = format!("{n}");
    // What is there must be what was there when the set was read: someone
    // may have changed it while the person was being asked.
    let unchanged = |dir: &OwnedFd, name: &str, was: &Ident| -> io::Result<()> {
        if crate::layer::ident(dir, name.as_bytes())? == *was {
            Ok(())
        } else {
            Err(io::Error::other(
                "it changed in the workspace after the command ended",
            ))
        }
    };
    match op {
        Op::Remove(path, was) => {
            let (dir, name) = split(path);
            let dir = open_beneath(ws, dir)?;
            unchanged(&dir, name, was)?;
            match rustix::fs::renameat(&dir, name, bk, backup_name.as_str()) {
                Ok(()) => Ok(Some(Done::Moved(path.clone(), n))),
                // Already gone: nothing to take back.
                Err(Errno::NOENT) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        Op::Place(path, was) => {
            let (dir, name) = split(path);
            let ws_dir = open_beneath(ws, dir)?;
            let up_dir = open_beneath_upper(up, dir)?;
            unchanged(&ws_dir, name, was)?;
            // Something there (the file the command changed): keep it by a
            // second name first, then replace it in one rename.
            match rustix::fs::linkat(&ws_dir, name, bk, backup_name.as_str(), AtFlags::empty()) {
                Ok(()) => {
                    rustix::fs::renameat(&up_dir, name, &ws_dir, name)?;
                    Ok(Some(Done::Replaced(path.clone(), n)))
                }
                Err(Errno::NOENT) => {
                    rustix::fs::renameat_with(
                        &up_dir,
                        name,
                        &ws_dir,
                        name,
                        RenameFlags::NOREPLACE,
                    )?;
                    Ok(Some(Done::Placed(path.clone())))
                }
                Err(e) => Err(e.into()),
            }
        }
        Op::Chmod(path, mode) => {
            let (dir, name) = split(path);
            let ws_dir = open_beneath(ws, dir)?;
            let target = rustix::fs::openat2(
                &ws_dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                RESOLVE,
            )?;
            let old = rustix::fs::fstat(&target)?.st_mode & 0o7777;
            rustix::fs::fchmod(&target, Mode::from_raw_mode(*mode))?;
            Ok(Some(Done::Chmodded(path.clone(), old)))
        }
    }
}

/// A directory of the upper layer (no mount lies inside it).
fn open_beneath_upper(root: &OwnedFd, dir: &str) -> io::Result<OwnedFd> {
    open_beneath(root, dir)
}

/// Takes back `done`, newest first, never over something made since;
/// says what could not be, and whether all was.
fn rollback(
    ws: &OwnedFd,
    up: &OwnedFd,
    bk: &OwnedFd,
    done: Vec<Done>,
    backup: &Path,
) -> (String, bool) {
    let total = done.len();
    let mut failed = Vec::new();
    for d in done.into_iter().rev() {
        let result: io::Result<()> = (|| match &d {
            Done::Placed(path) => {
                let (dir, name) = split(path);
                let ws_dir = open_beneath(ws, dir)?;
                let up_dir = open_beneath(up, dir)?;
                Ok(rustix::fs::renameat_with(
                    &ws_dir,
                    name,
                    &up_dir,
                    name,
                    RenameFlags::NOREPLACE,
                )?)
            }
            Done::Replaced(path, n) | Done::Moved(path, n) => {
                let (dir, name) = split(path);
                let ws_dir = open_beneath(ws, dir)?;
                Ok(rustix::fs::renameat(
                    bk,
                    format!("{n}").as_str(),
                    &ws_dir,
                    name,
                )?)
            }
            Done::Chmodded(path, old) => {
                let (dir, name) = split(path);
                let ws_dir = open_beneath(ws, dir)?;
                Ok(rustix::fs::chmodat(
                    &ws_dir,
                    name,
                    Mode::from_raw_mode(*old),
                    AtFlags::empty(),
                )?)
            }
        })();
        if let Err(e) = result {
            let path = match &d {
                Done::Placed(p)
                | Done::Replaced(p, _)
                | Done::Moved(p, _)
                | Done::Chmodded(p, _) => p.clone(),
            };
            failed.push(format!("'{path}' ({e})"));
        }
    }
    if failed.is_empty() {
        (
            format!("the {total} steps already done were taken back; the workspace is as it was"),
            true,
        )
    } else {
        (
            format!(
                "taking back the steps already done failed for {}; those paths may hold the \
                 command's version, and what they held before is kept in {}",
                failed.join(", "),
                backup.display()
            ),
            false,
        )
    }
}
