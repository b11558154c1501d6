//! The fence: what one call may see and change inside the Pen, decided on
//! the file each filesystem operation actually reaches.
//!
//! wasmtime-wasi keeps a tool inside the preopen; the fence keeps it inside
//! the policy. Every path-taking operation the guest makes is resolved by
//! the kernel (`openat2` with `RESOLVE_BENEATH`, so `..`, absolute paths and
//! symlinks leading out fail as they do under cap-std), and the file it
//! reaches is named by its descriptor (`/proc/self/fd`), not by the text the
//! tool passed. That name is what the [`PathPolicy`] is asked about, so no
//! symlink, walk or hard-coded path in a plugin gets around a rule.
//!
//! The fence also carries the rules that hold whatever the policy says:
//! only regular files and directories are opened (a FIFO swapped in cannot
//! block the call), a file with more than one hard link is never written,
//! and a whole-file write goes to a temporary file beside its target that
//! replaces it only when the call succeeds ([`Fence::commit`]), keeping its
//! permissions, so a failed, killed or timed-out write leaves the file as it
//! was.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, ResolveFlags};
use wasmtime_wasi::filesystem::Dir;
use wasmtime_wasi::{FsPerms, OpenMode};

use crate::Access;

/// What one call's tool may see and change, asked about workspace paths as
/// resolved on disk: relative to the workspace root, `/` between
/// components, `.` for the root itself. Implemented by the host's
/// permission gate; this crate knows nothing of rules.
pub trait PathPolicy: Send + Sync {
    /// Whether the tool may see `path` at all. A path it may not see does
    /// not exist for it: not listed, not found, not opened.
    fn visible(&self, path: &str) -> bool;

    /// Whether the tool may create, change, rename or remove `path`; if
    /// not, why, in words for the model.
    fn writable(&self, path: &str) -> Result<(), String>;

    /// Whether the policy could apply to anything strictly below the
    /// directory `dir`; such a directory is never renamed, since that would
    /// move what the policy protects under names it does not cover.
    fn governs_below(&self, dir: &str) -> bool;

    /// Whether any path at all could be invisible; when not, reads skip
    /// the visibility checks.
    fn hides_anything(&self) -> bool;

    /// The directories (workspace paths, `.` for the root) below which
    /// every invisible path lies. The default, the root, is always right;
    /// a narrower answer only makes [`Fence::may_see`]'s walk shorter.
    fn hidden_roots(&self) -> Vec<String> {
        vec![".".to_owned()]
    }
}

/// The most entries the fence walks, once per call, to find the files a
/// rule hides that have other names: enough for any directory of secrets
/// and for a workspace a `**/*.env` rule has to walk whole, while a walk
/// past it (tens of milliseconds) would slow every call. Past it the
/// answer is unknown, and every file with more than one name is then
/// treated as hidden.
pub const MAX_HIDDEN_WALK_ENTRIES: usize = 100_000;

/// A file as the kernel knows it, whatever its names: device and inode.
type FileId = (u64, u64);

/// The most hard links a file written by a tool may have: one, its own
/// name. Writing a file with another name elsewhere (perhaps outside the
/// workspace) would change that file too.
pub const MAX_WRITE_LINKS: u64 = 1;

/// How resolution is confined: never above the directory it starts from,
/// and never through `/proc` magic links.
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// A whole-file write waiting for the call to succeed.
struct Staged {
    /// The directory holding the target and the temporary file.
    dir: OwnedFd,
    /// The temporary file's name in `dir`.
    temp: String,
    /// The target's name in `dir`.
    target: String,
    /// The target as the model sees it, for messages.
    shown: String,
    /// The temporary file, to sync before it replaces the target.
    file: File,
    /// Fail rather than replace a file created meanwhile.
    exclusive: bool,
}

/// One call's fence: the workspace root, the policy, the writes staged, and
/// what was refused (for the message the model gets).
pub(crate) struct Fence {
    root: PathBuf,
    /// The workspace root, opened once per call: the tool's preopen and
    /// the fence's own starting point are this one descriptor.
    root_dir: Option<Dir>,
    policy: Option<Arc<dyn PathPolicy>>,
    staged: Vec<Staged>,
    notes: Vec<String>,
    streams: Vec<(u32, String)>,
    /// The files with more than one name that the policy hides, found on
    /// first need; `None` when the walk could not be finished.
    hidden_links: OnceLock<Option<HashSet<FileId>>>,
}

/// What a path-taking operation reached.
pub(crate) struct Reached {
    /// An `O_PATH` descriptor of it.
    pub(crate) fd: OwnedFd,
    /// Its type and link count.
    pub(crate) stat: rfs::Stat,
    /// Its workspace path.
    pub(crate) path: String,
}

impl Fence {
    /// A fence for a call that sees the workspace at `root` (canonical),
    /// through `root_dir`, the preopen the tool gets.
    pub(crate) fn new(root: Option<(&Path, Dir)>, policy: Option<Arc<dyn PathPolicy>>) -> Self {
        let (root, root_dir) = match root {
            Some((root, dir)) => (root.to_path_buf(), Some(dir)),
            None => (PathBuf::new(), None),
        };
        Self {
            root,
            root_dir,
            policy,
            staged: Vec::new(),
            notes: Vec::new(),
            streams: Vec::new(),
            hidden_links: OnceLock::new(),
        }
    }

    /// Opens the workspace root at `root` (canonical) as the preopen a tool
    /// gets with `access`: an `O_PATH` descriptor, as wasmtime-wasi's own
    /// preopen is, which every operation resolves beneath.
    pub(crate) fn open_root(root: &Path, access: Access) -> io::Result<Option<Dir>> {
        let Some(perms) = preopen_perms(access) else {
            return Ok(None);
        };
        let mode = match perms {
            FsPerms::ReadOnly => OpenMode::READ,
            FsPerms::ReadWrite => OpenMode::READ | OpenMode::WRITE,
        };
        let fd = rfs::open(
            root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Some(Dir::new(File::from(fd), perms, mode, true)))
    }

    /// The tool's preopen, when the call has a workspace.
    pub(crate) fn preopen(&self) -> Option<&Dir> {
        self.root_dir.as_ref()
    }

    /// Sets the policy deciding what the call may see and change.
    pub(crate) fn set_policy(&mut self, policy: Option<Arc<dyn PathPolicy>>) {
        self.policy = policy;
        self.hidden_links = OnceLock::new();
    }

    /// Why operations were refused during the call, for the model.
    pub(crate) fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Records a refusal and returns the error code the guest gets.
    pub(crate) fn refuse(&mut self, note: String) -> io::Error {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
        io::Error::from(rustix::io::Errno::PERM)
    }

    /// Whether reads need visibility checks at all.
    pub(crate) fn hides_anything(&self) -> bool {
        self.policy.as_ref().is_some_and(|p| p.hides_anything())
    }

    /// Whether the tool may see `path`.
    pub(crate) fn visible(&self, path: &str) -> bool {
        self.policy.as_ref().is_none_or(|p| p.visible(path))
    }

    /// Whether the tool may see the file it reached: by its name, and, for
    /// a regular file with more than one name, by what it is. A hard link
    /// in the workspace to a file a rule hides is that file: it is hidden
    /// too, under every name.
    ///
    /// # Security
    ///
    /// The hidden files with other names are found by walking what the
    /// rules could hide, once per call and only when a file with more than
    /// one name is reached. A walk that cannot be finished (too many
    /// entries, an unreadable directory) fails closed: every file with
    /// more than one name is then hidden.
    pub(crate) fn may_see(&self, reached: &Reached) -> bool {
        self.visible(&reached.path) && !self.hidden_by_link(&reached.stat)
    }

    /// Whether `stat` is a regular file with more than one name that is
    /// also a file the policy hides (or, when that cannot be known, any
    /// such file).
    pub(crate) fn hidden_by_link(&self, stat: &rfs::Stat) -> bool {
        if stat.st_nlink <= 1
            || file_type(stat) != rfs::FileType::RegularFile
            || !self.hides_anything()
        {
            return false;
        }
        match self.hidden_links.get_or_init(|| self.find_hidden_links()) {
            Some(ids) => ids.contains(&file_id(stat)),
            None => true,
        }
    }

    /// [`Fence::hidden_by_link`] for the workspace path `path`, not
    /// following a final symbolic link. Anything it cannot reach counts as
    /// not hidden, and is left to the operation that opens it.
    pub(crate) fn hidden_by_link_at(&self, path: &str) -> bool {
        let Some(root) = self.root_dir.as_ref() else {
            return false;
        };
        self.reach_as(root.dir.as_fd(), path, false, OFlags::PATH, false)
            .is_ok_and(|reached| self.hidden_by_link(&reached.stat))
    }

    /// Walks every directory the policy could hide something below, without
    /// following symbolic links, and returns the regular files with more
    /// than one name that it hides. `None` when the walk could not be
    /// finished.
    fn find_hidden_links(&self) -> Option<HashSet<FileId>> {
        let policy = self.policy.as_ref()?;
        let root = self.root_dir.as_ref()?;
        let mut found = HashSet::new();
        let mut budget = MAX_HIDDEN_WALK_ENTRIES;
        // Each root as the kernel resolves it, named by its descriptor: a
        // rule is asked about resolved paths.
        let mut stack: Vec<(OwnedFd, String)> = Vec::new();
        for start in policy.hidden_roots() {
            let fd = match openat2_beneath(
                root.dir.as_fd(),
                nonempty(&start),
                OFlags::PATH | OFlags::CLOEXEC,
            ) {
                Ok(fd) => fd,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
            let stat = rfs::fstat(&fd).ok()?;
            let path = self.workspace_path(&fd).ok()?;
            match file_type(&stat) {
                rfs::FileType::Directory => {
                    let dir = rfs::openat(
                        &fd,
                        c".",
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .ok()?;
                    stack.push((dir, path));
                }
                rfs::FileType::RegularFile if stat.st_nlink > 1 && !policy.visible(&path) => {
                    found.insert(file_id(&stat));
                }
                _ => {}
            }
        }
        while let Some((dir, path)) = stack.pop() {
            let mut reader = rfs::Dir::read_from(&dir).ok()?;
            while let Some(entry) = reader.read() {
                let entry = entry.ok()?;
                let raw = entry.file_name();
                if matches!(raw.to_bytes(), b"." | b"..") {
                    continue;
                }
                budget = budget.checked_sub(1)?;
                let name = String::from_utf8_lossy(raw.to_bytes());
                let child = if path == "." {
                    name.into_owned()
                } else {
                    format!("{path}/{name}")
                };
                let stat = rfs::statat(&dir, raw, AtFlags::SYMLINK_NOFOLLOW).ok()?;
                match file_type(&stat) {
                    rfs::FileType::Directory => {
                        let sub = rfs::openat(
                            &dir,
                            raw,
                            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .ok()?;
                        stack.push((sub, child));
                    }
                    rfs::FileType::RegularFile if stat.st_nlink > 1 && !policy.visible(&child) => {
                        found.insert(file_id(&stat));
                    }
                    _ => {}
                }
            }
        }
        Some(found)
    }

    /// Whether the tool may write `path`, recording why not.
    pub(crate) fn check_writable(&mut self, path: &str) -> io::Result<()> {
        match self.policy.as_ref().map(|p| p.writable(path)) {
            Some(Err(why)) => Err(self.refuse(why)),
            Some(Ok(())) | None => Ok(()),
        }
    }

    /// Whether renaming the directory at `path` could move what the policy
    /// protects.
    pub(crate) fn governs_below(&self, path: &str) -> bool {
        self.policy.as_ref().is_some_and(|p| p.governs_below(path))
    }

    /// Remembers the directory a readdir stream lists.
    pub(crate) fn track_stream(&mut self, rep: u32, dir: String) {
        self.streams.push((rep, dir));
    }

    /// The directory a readdir stream lists, if it is tracked.
    pub(crate) fn stream_dir(&self, rep: u32) -> Option<&str> {
        self.streams
            .iter()
            .find(|(r, _)| *r == rep)
            .map(|(_, d)| d.as_str())
    }

    /// Forgets a readdir stream.
    pub(crate) fn forget_stream(&mut self, rep: u32) {
        self.streams.retain(|(r, _)| *r != rep);
    }

    /// The workspace path of the file `fd` refers to, from the kernel's own
    /// record of it. Fails for anything outside the workspace.
    pub(crate) fn workspace_path(&self, fd: impl AsFd) -> io::Result<String> {
        // A call without a workspace has no root to name anything under.
        if self.root.as_os_str().is_empty() {
            return Err(io::ErrorKind::PermissionDenied.into());
        }
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))?;
        let rel = link.strip_prefix(&self.root).map_err(|_| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file is outside the workspace",
            )
        })?;
        if rel.as_os_str().is_empty() {
            return Ok(".".to_owned());
        }
        Ok(rel.to_string_lossy().into_owned())
    }

    /// Resolves `path` from the directory `dir` as an operation would
    /// (following a final symlink only if `follow`), confined beneath `dir`,
    /// without opening the file itself for reading or writing.
    pub(crate) fn reach(&self, dir: impl AsFd, path: &str, follow: bool) -> io::Result<Reached> {
        self.reach_as(dir, path, follow, OFlags::PATH, true)
    }

    /// [`Fence::reach`], opening with `access` (`O_PATH`, or `O_RDONLY` for
    /// a read that will use the descriptor itself: `O_NONBLOCK` keeps a
    /// FIFO from blocking the open) and naming the file only if `named`.
    pub(crate) fn reach_as(
        &self,
        dir: impl AsFd,
        path: &str,
        follow: bool,
        access: OFlags,
        named: bool,
    ) -> io::Result<Reached> {
        let mut flags = access | OFlags::CLOEXEC;
        if !access.contains(OFlags::PATH) {
            // openat2 takes no other flags with O_PATH, which never blocks.
            flags |= OFlags::NOCTTY | OFlags::NONBLOCK;
        }
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        let fd = openat2_beneath(dir.as_fd(), nonempty(path), flags)?;
        let stat = rfs::fstat(&fd)?;
        let path = if named {
            self.workspace_path(&fd)?
        } else {
            String::new()
        };
        Ok(Reached { fd, stat, path })
    }

    /// Whether `path`, from `dir`, names something that is neither a file
    /// nor a directory (a FIFO, socket or device), by its type alone and
    /// without opening it: a device's driver may act when it is opened, and
    /// opening a FIFO wakes a writer waiting for a reader. Unconfined (the
    /// kernel's `fstatat`), so a caller must confirm beneath the workspace
    /// before saying so; anything it cannot stat counts as not special and
    /// is left to the confined open.
    pub(crate) fn names_special_file(dir: impl AsFd, path: &str, follow: bool) -> bool {
        let flags = if follow {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        rfs::statat(dir, nonempty(path), flags).is_ok_and(|stat| {
            !matches!(
                file_type(&stat),
                rfs::FileType::RegularFile | rfs::FileType::Directory | rfs::FileType::Symlink
            )
        })
    }

    /// Resolves the directory that holds `path`'s last component, and that
    /// component: what creating, removing or renaming `path` acts on.
    pub(crate) fn reach_parent<'p>(
        &self,
        dir: impl AsFd,
        path: &'p str,
    ) -> io::Result<(Reached, &'p str, String)> {
        let trimmed = path.trim_end_matches('/');
        let (parent, name) = match trimmed.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => (".", trimmed),
        };
        if path.starts_with('/') {
            return Err(io::Error::from(rustix::io::Errno::PERM));
        }
        if name.is_empty() || name == "." || name == ".." {
            return Err(io::Error::from(rustix::io::Errno::INVAL));
        }
        let parent = self.reach(dir, nonempty(parent), true)?;
        if rfs::FileType::from_raw_mode(parent.stat.st_mode) != rfs::FileType::Directory {
            return Err(io::Error::from(rustix::io::Errno::NOTDIR));
        }
        let full = if parent.path == "." {
            name.to_owned()
        } else {
            format!("{}/{name}", parent.path)
        };
        Ok((parent, name, full))
    }

    /// Opens the file `reached` refers to, for the access `flags` asks, as
    /// the very file that was checked (through its descriptor, never by
    /// name again).
    pub(crate) fn reopen(reached: &Reached, flags: OFlags) -> io::Result<File> {
        let fd = rfs::open(
            format!("/proc/self/fd/{}", reached.fd.as_raw_fd()),
            flags | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        Ok(File::from(fd))
    }

    /// Starts a whole-file write of `target` in the directory `dir` (its
    /// workspace path `dir_path`): a new temporary file beside it, with
    /// `mode`, that replaces the target when the call succeeds.
    pub(crate) fn stage(
        &mut self,
        dir: &Reached,
        target: &str,
        shown: String,
        mode: Option<u32>,
        exclusive: bool,
    ) -> io::Result<File> {
        let dir = self.directory(dir)?;
        let temp = temp_name();
        let fd = rfs::openat2(
            &dir,
            temp.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode.unwrap_or(0o666)),
            BENEATH,
        )?;
        if let Some(mode) = mode {
            // The umask applied at creation; the target's bits are kept.
            rfs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777))?;
        }
        let file = File::from(fd);
        let keep = file.try_clone()?;
        self.staged.push(Staged {
            dir,
            temp,
            target: target.to_owned(),
            shown,
            file: keep,
            exclusive,
        });
        Ok(file)
    }

    /// A real directory descriptor (not `O_PATH`) for `reached`.
    fn directory(&self, reached: &Reached) -> io::Result<OwnedFd> {
        let file = Self::reopen(reached, OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok(OwnedFd::from(file))
    }

    /// Makes every staged write take effect, in order: each temporary file
    /// is synced and renamed over its target. Stops at the first that
    /// cannot, removing the rest; says which and why.
    pub(crate) fn commit(&mut self) -> Result<(), String> {
        let staged = std::mem::take(&mut self.staged);
        let mut result = Ok(());
        for s in staged {
            if result.is_err() {
                let _ = rfs::unlinkat(&s.dir, s.temp.as_str(), rfs::AtFlags::empty());
                continue;
            }
            let done = s.file.sync_data().and_then(|()| {
                if s.exclusive {
                    rfs::renameat_with(
                        &s.dir,
                        s.temp.as_str(),
                        &s.dir,
                        s.target.as_str(),
                        rfs::RenameFlags::NOREPLACE,
                    )
                } else {
                    rfs::renameat(&s.dir, s.temp.as_str(), &s.dir, s.target.as_str())
                }
                .map_err(io::Error::from)
            });
            if let Err(e) = done {
                let _ = rfs::unlinkat(&s.dir, s.temp.as_str(), rfs::AtFlags::empty());
                result = Err(format!(
                    "the tool finished, but its write of '{}' could not be completed ({e}); \
                     that file is as it was",
                    s.shown
                ));
            }
        }
        result
    }

    /// Drops every staged write: the targets stay as they were. Returns
    /// them, as the model knows them.
    pub(crate) fn discard(&mut self) -> Vec<String> {
        std::mem::take(&mut self.staged)
            .into_iter()
            .map(|s| {
                let _ = rfs::unlinkat(&s.dir, s.temp.as_str(), rfs::AtFlags::empty());
                s.shown
            })
            .collect()
    }

    /// The root's descriptor, when the call has a workspace.
    pub(crate) fn root_fd(&self) -> Option<&File> {
        self.root_dir.as_ref().map(|d| &*d.dir)
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        let _ = self.discard();
    }
}

/// The permissions of the preopen a tool granted `access` gets; none for
/// [`Access::None`].
pub(crate) fn preopen_perms(access: Access) -> Option<FsPerms> {
    match access {
        Access::None => None,
        Access::Read => Some(FsPerms::ReadOnly),
        Access::ReadWrite => Some(FsPerms::ReadWrite),
    }
}

/// `openat2` confined beneath `dir`. A path leading out of the workspace
/// (`..`, an absolute path or symlink) fails with EXDEV under
/// RESOLVE_BENEATH, and the guest gets "not permitted", as wasmtime-wasi
/// reports an escape. EAGAIN (a rename elsewhere on the system while `..`
/// was resolved) is retried a few times, as wasmtime-wasi does.
fn openat2_beneath(dir: BorrowedFd<'_>, path: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let mut tries = 0;
    loop {
        match rfs::openat2(dir, path, flags, Mode::empty(), BENEATH) {
            Ok(fd) => return Ok(fd),
            Err(rustix::io::Errno::AGAIN) if tries < 4 => tries += 1,
            Err(rustix::io::Errno::XDEV) => return Err(rustix::io::Errno::PERM.into()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// `.` for an empty path, as WASI reads it.
fn nonempty(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

/// A name no other write in this process uses, hidden, and recognisable
/// as GOAT's if a crash leaves it behind.
fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        ".goat-write-{}-{}-{nanos:08x}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The file `stat` describes, whatever its name.
fn file_id(stat: &rfs::Stat) -> FileId {
    (stat.st_dev, stat.st_ino)
}

/// The file type in `stat`.
pub(crate) fn file_type(stat: &rfs::Stat) -> rfs::FileType {
    rfs::FileType::from_raw_mode(stat.st_mode)
}
