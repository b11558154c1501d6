//! The workspace as a Pen tool sees it: one preopened directory.
//!
//! `wasm32-unknown-unknown` has no working `std::fs`, so every operation goes
//! through WASI descriptors opened relative to the preopen the host gave the
//! component. Errors from the host are turned into `tool-error`s that name
//! the path and say what to do.

use std::cell::OnceCell;

use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, OpenFlags, PathFlags,
};

use crate::manners::{IgnoreStack, Ignores, Manners, Skip, skip};
use crate::path::WorkPath;
use crate::{ToolError, ToolResult};

/// Bytes asked of the host per read call: big enough to keep hostcalls few,
/// small enough that a tool reading a window of a huge file stops early.
pub const READ_CHUNK_BYTES: u64 = 64 * 1024;

/// Bytes handed to the host per write call. Below the host's per-hostcall
/// data limit with a wide margin.
pub const WRITE_CHUNK_BYTES: usize = 64 * 1024;

/// The kind of a directory entry, as listings show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed by walks).
    Symlink,
    /// Anything else: devices, sockets, fifos.
    Other,
}

impl Kind {
    fn from_type(t: DescriptorType) -> Self {
        match t {
            DescriptorType::RegularFile => Self::File,
            DescriptorType::Directory => Self::Dir,
            DescriptorType::SymbolicLink => Self::Symlink,
            _ => Self::Other,
        }
    }
}

/// What [`Workspace::read_dir`] found in one directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirEntries {
    /// Entries with their kinds, sorted by name.
    pub entries: Vec<(String, Kind)>,
    /// Entries passed over because their names are not valid UTF-8.
    pub undecodable_names: usize,
}

/// What [`Workspace::read_text_into`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// The whole file is in the buffer.
    Text,
    /// The first block holds a NUL byte; the rest was not read.
    Binary,
    /// The file is larger than the limit; it was not read.
    TooLarge,
}

/// The workspace root, preopened by the host.
pub struct Workspace {
    pub(crate) root: Descriptor,
    /// Whether the host preopened the workspace writable, asked only when
    /// a tool is about to write (most calls never do).
    writable: OnceCell<bool>,
}

impl Workspace {
    /// Finds the workspace preopen. A tool run without one was given no
    /// filesystem: that is a host configuration error, reported as such.
    pub fn open() -> ToolResult<Self> {
        let mut dirs = get_directories();
        match dirs.iter().position(|(_, name)| name == ".") {
            Some(i) => {
                let root = dirs.swap_remove(i).0;
                Ok(Self {
                    root,
                    writable: OnceCell::new(),
                })
            }
            None => Err(ToolError::PermissionDenied(
                "this tool was given no workspace; the host must preopen the workspace".to_owned(),
            )),
        }
    }

    /// Opens `path` for reading, following symlinks (the host refuses any
    /// that lead outside the workspace).
    pub fn open_read(&self, path: &WorkPath) -> ToolResult<Descriptor> {
        self.open_read_as(path, PathFlags::SYMLINK_FOLLOW)
    }

    /// Opens `path` for reading with `follow` deciding a final symlink.
    ///
    /// No stat comes first: the host never opens anything but files and
    /// directories (it looks the type up itself), whatever a guest asks.
    /// Only when the open fails is the type looked up, to say plainly why.
    fn open_read_as(&self, path: &WorkPath, follow: PathFlags) -> ToolResult<Descriptor> {
        self.root
            .open_at(
                follow,
                path.as_str(),
                OpenFlags::empty(),
                DescriptorFlags::READ,
            )
            .map_err(|e| match self.stat(path) {
                Ok(stat)
                    if !matches!(
                        stat.type_,
                        DescriptorType::RegularFile | DescriptorType::Directory
                    ) =>
                {
                    ToolError::Conflict(format!(
                        "'{path}' is not a regular file (a device, pipe or socket); it was not read"
                    ))
                }
                _ => fs_error(e, path, "open"),
            })
    }

    /// Opens a directory for listing without following a final symlink.
    pub fn open_dir(&self, path: &WorkPath) -> ToolResult<Descriptor> {
        self.root
            .open_at(
                PathFlags::SYMLINK_FOLLOW,
                path.as_str(),
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map_err(|e| fs_error(e, path, "open directory"))
    }

    /// Metadata of `path`, following symlinks.
    pub fn stat(&self, path: &WorkPath) -> ToolResult<DescriptorStat> {
        self.root
            .stat_at(PathFlags::SYMLINK_FOLLOW, path.as_str())
            .map_err(|e| fs_error(e, path, "stat"))
    }

    /// Metadata of `path` itself: a symlink is reported as a symlink.
    pub fn lstat(&self, path: &WorkPath) -> ToolResult<DescriptorStat> {
        self.root
            .stat_at(PathFlags::empty(), path.as_str())
            .map_err(|e| fs_error(e, path, "stat"))
    }

    /// Whether `path` exists (following symlinks).
    pub fn exists(&self, path: &WorkPath) -> ToolResult<bool> {
        match self.root.stat_at(PathFlags::SYMLINK_FOLLOW, path.as_str()) {
            Ok(_) => Ok(true),
            Err(ErrorCode::NoEntry) => Ok(false),
            Err(e) => Err(fs_error(e, path, "stat")),
        }
    }

    /// Reads a whole regular file, refusing more than `max_bytes`.
    pub fn read_file(&self, path: &WorkPath, max_bytes: u64) -> ToolResult<Vec<u8>> {
        let fd = self.open_read(path)?;
        let stat = fd.stat().map_err(|e| fs_error(e, path, "stat"))?;
        require_file(path, stat.type_)?;
        if stat.size > max_bytes {
            return Err(ToolError::TooLarge(format!(
                "'{path}' is {} bytes; this tool handles files up to {max_bytes} bytes",
                stat.size
            )));
        }
        let mut data = Vec::with_capacity(usize::try_from(stat.size).unwrap_or(0));
        loop {
            let (chunk, end) = fd
                .read(READ_CHUNK_BYTES, data.len() as u64)
                .map_err(|e| fs_error(e, path, "read"))?;
            data.extend_from_slice(&chunk);
            if data.len() as u64 > max_bytes {
                return Err(ToolError::TooLarge(format!(
                    "'{path}' grew past {max_bytes} bytes while being read"
                )));
            }
            if end || chunk.is_empty() {
                return Ok(data);
            }
        }
    }

    /// Reads regular file `path` into `buf` (cleared first) for a search:
    /// in [`READ_CHUNK_BYTES`] reads, the most the host hands over per call,
    /// into one buffer the caller reuses from file to file. Stops after the
    /// first block when it looks binary (a NUL in the first
    /// [`crate::text::BINARY_PROBE_BYTES`], the one rule every tool and the
    /// host use), and before reading a file larger than `max_bytes`.
    ///
    /// `known_file` is for a path a walk just listed as a regular file: it
    /// is opened without following a final symlink, since it was not one.
    pub fn read_text_into(
        &self,
        path: &WorkPath,
        known_file: bool,
        max_bytes: u64,
        buf: &mut Vec<u8>,
    ) -> ToolResult<Contents> {
        buf.clear();
        let follow = if known_file {
            PathFlags::empty()
        } else {
            PathFlags::SYMLINK_FOLLOW
        };
        let fd = self.open_read_as(path, follow)?;
        let stat = fd.stat().map_err(|e| fs_error(e, path, "stat"))?;
        require_file(path, stat.type_)?;
        if stat.size > max_bytes {
            return Ok(Contents::TooLarge);
        }
        loop {
            let (chunk, end) = fd
                .read(READ_CHUNK_BYTES, buf.len() as u64)
                .map_err(|e| fs_error(e, path, "read"))?;
            if buf.is_empty() && crate::text::looks_binary(&chunk) {
                return Ok(Contents::Binary);
            }
            buf.extend_from_slice(&chunk);
            if buf.len() as u64 > max_bytes {
                return Ok(Contents::TooLarge);
            }
            // The size was known: a file read to it needs no call that
            // returns nothing to say it ended.
            if end || chunk.is_empty() || buf.len() as u64 >= stat.size {
                return Ok(Contents::Text);
            }
        }
    }

    /// Creates every missing directory on the way to `dir`. Returns the
    /// directories it created, outermost first.
    pub fn create_dir_all(&self, dir: &WorkPath) -> ToolResult<Vec<WorkPath>> {
        self.require_writable(dir)?;
        let mut created = Vec::new();
        if dir.is_root() {
            return Ok(created);
        }
        let mut at = WorkPath::root();
        for part in dir.as_str().split('/') {
            at = at.join(part);
            match self.root.stat_at(PathFlags::SYMLINK_FOLLOW, at.as_str()) {
                Ok(stat) if stat.type_ == DescriptorType::Directory => {}
                Ok(_) => {
                    return Err(ToolError::Conflict(format!(
                        "'{at}' exists and is not a directory, so '{dir}' cannot be created"
                    )));
                }
                Err(ErrorCode::NoEntry) => {
                    self.root
                        .create_directory_at(at.as_str())
                        .map_err(|e| fs_error(e, &at, "create directory"))?;
                    created.push(at.clone());
                }
                Err(e) => return Err(fs_error(e, &at, "stat")),
            }
        }
        Ok(created)
    }

    /// Replaces the contents of `path` with `data`, creating the file if it
    /// does not exist. The parent directory must exist.
    pub fn write_file(&self, path: &WorkPath, data: &[u8]) -> ToolResult<()> {
        self.require_writable(path)?;
        let fd = self
            .root
            .open_at(
                PathFlags::SYMLINK_FOLLOW,
                path.as_str(),
                OpenFlags::CREATE | OpenFlags::TRUNCATE,
                DescriptorFlags::WRITE,
            )
            .map_err(|e| fs_error(e, path, "open for writing"))?;
        let mut offset = 0usize;
        while offset < data.len() {
            let end = data.len().min(offset + WRITE_CHUNK_BYTES);
            let n = fd
                .write(&data[offset..end], offset as u64)
                .map_err(|e| fs_error(e, path, "write"))?;
            if n == 0 {
                return Err(ToolError::Io(format!("writing '{path}' made no progress")));
            }
            offset += usize::try_from(n).unwrap_or(end - offset);
        }
        Ok(())
    }

    /// Refuses at once when the host gave this call read-only access.
    pub fn require_writable(&self, path: &WorkPath) -> ToolResult<()> {
        // The host preopens read-only unless the tool may write; knowing
        // which lets a refused write say so plainly instead of surfacing
        // the host's generic "not permitted".
        let writable = *self.writable.get_or_init(|| {
            self.root
                .get_flags()
                .is_ok_and(|f| f.bits() & DescriptorFlags::MUTATE_DIRECTORY.bits() != 0)
        });
        if writable {
            Ok(())
        } else {
            Err(ToolError::PermissionDenied(format!(
                "cannot write '{path}': this tool was given read-only access to the workspace, \
                 so nothing was changed"
            )))
        }
    }

    /// The entries of directory `dir`, sorted by name, and how many entries
    /// were passed over because their names are not valid UTF-8.
    ///
    /// WASI 0.2 hands a tool names as strings. For a name that is not UTF-8
    /// (a Linux file name is any bytes), wasmtime-wasi yields
    /// `illegal-byte-sequence` in that entry's place in the stream and the
    /// next read goes on with the next entry. Such a name cannot be shown to
    /// the model nor opened again, so it is counted and skipped: one odd
    /// file does not hide its siblings. Any other error fails the listing.
    pub fn read_dir(&self, dir: &WorkPath) -> ToolResult<DirEntries> {
        let fd = self.open_dir(dir)?;
        let stream = fd.read_directory().map_err(|e| fs_error(e, dir, "list"))?;
        let mut listing = DirEntries::default();
        loop {
            match stream.read_directory_entry() {
                Ok(Some(entry)) => listing
                    .entries
                    .push((entry.name, Kind::from_type(entry.type_))),
                Ok(None) => break,
                Err(ErrorCode::IllegalByteSequence) => {
                    listing.undecodable_names += 1;
                    // A host that kept yielding this error would otherwise
                    // hold the tool here until its time limit.
                    if listing.undecodable_names > MAX_WALK_ENTRIES {
                        return Err(ToolError::Io(format!(
                            "cannot list '{dir}': more than {MAX_WALK_ENTRIES} of its entries \
                             have names that are not valid UTF-8"
                        )));
                    }
                }
                Err(e) => return Err(fs_error(e, dir, "list")),
            }
        }
        listing.entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(listing)
    }

    /// Where symlink `path` points, as stored in the link.
    pub fn read_link(&self, path: &WorkPath) -> ToolResult<String> {
        self.root
            .readlink_at(path.as_str())
            .map_err(|e| fs_error(e, path, "read link"))
    }
}

/// Refuses anything but a regular file, saying which tool fits instead.
pub fn require_file(path: &WorkPath, t: DescriptorType) -> ToolResult<()> {
    match t {
        DescriptorType::RegularFile => Ok(()),
        DescriptorType::Directory => Err(ToolError::Conflict(format!(
            "'{path}' is a directory, not a file; use list_directory to see what it contains"
        ))),
        _ => Err(ToolError::Conflict(format!(
            "'{path}' is not a regular file"
        ))),
    }
}

/// Turns a WASI error on `path` into a `tool-error` the model can act on.
pub fn fs_error(e: ErrorCode, path: &WorkPath, doing: &str) -> ToolError {
    match e {
        ErrorCode::NoEntry => ToolError::NotFound(format!(
            "'{path}' does not exist (paths are relative to the workspace root)"
        )),
        ErrorCode::NotPermitted | ErrorCode::Access => ToolError::PermissionDenied(format!(
            "cannot {doing} '{path}': it resolves outside the workspace (for example through a \
             symbolic link) or the sandbox does not permit it"
        )),
        ErrorCode::ReadOnly => ToolError::PermissionDenied(format!(
            "cannot {doing} '{path}': this tool has read-only access to the workspace"
        )),
        ErrorCode::IsDirectory => ToolError::Conflict(format!("'{path}' is a directory")),
        ErrorCode::NotDirectory => ToolError::Conflict(format!(
            "'{path}' is not a directory, or a part of it is a file"
        )),
        ErrorCode::Exist => ToolError::Conflict(format!("'{path}' already exists")),
        ErrorCode::Loop => ToolError::PermissionDenied(format!(
            "cannot {doing} '{path}': too many levels of symbolic links"
        )),
        ErrorCode::NameTooLong => ToolError::InvalidArguments(format!("path '{path}' is too long")),
        ErrorCode::FileTooLarge | ErrorCode::InsufficientSpace | ErrorCode::Quota => {
            ToolError::TooLarge(format!("cannot {doing} '{path}': {}", e.message()))
        }
        other => ToolError::Io(format!("cannot {doing} '{path}': {}", other.message())),
    }
}

/// Most entries one walk visits before it stops: keeps a tool on a huge tree
/// (a `node_modules`, a build directory) inside its time limit, and lets it
/// say it stopped instead of being killed.
pub const MAX_WALK_ENTRIES: usize = 100_000;

/// Directories walks do not enter: version-control internals are never what
/// a search or a file pattern means.
pub const SKIP_DIRS: &[&str] = &[".git", ".hg", ".svn"];

/// What a walk visitor wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Go on, entering this entry if it is a directory.
    Continue,
    /// Go on, but do not enter this directory.
    SkipDir,
    /// Stop the walk.
    Stop,
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkEnd {
    /// The walk hit [`MAX_WALK_ENTRIES`].
    pub hit_entry_cap: bool,
    /// Directories that could not be listed and were passed over.
    pub unreadable_dirs: usize,
    /// Entries passed over because their names are not valid UTF-8 (a
    /// directory among them is not entered).
    pub undecodable_names: usize,
    /// Entries passed over because an ignore file names them (a directory
    /// counts once, whatever it holds).
    pub ignored: usize,
    /// Hidden entries passed over (version-control directories, never
    /// walked, are not counted).
    pub hidden: usize,
}

impl WalkEnd {
    /// The one-line note saying how many entries were skipped for their
    /// names, when any were: a result must not look complete when it is not.
    pub fn undecodable_note(&self) -> Option<String> {
        undecodable_note(self.undecodable_names)
    }

    /// The one-line note saying how many entries were passed over as
    /// ignored or hidden, and how to include them, when any were.
    pub fn skipped_note(&self) -> Option<String> {
        crate::manners::skipped_note(self.ignored, self.hidden)
    }
}

/// "[1 entry skipped: its name is not valid UTF-8]", or `None` for 0.
pub fn undecodable_note(n: usize) -> Option<String> {
    match n {
        0 => None,
        1 => Some("[1 entry skipped: its name is not valid UTF-8]".to_owned()),
        n => Some(format!(
            "[{n} entries skipped: their names are not valid UTF-8]"
        )),
    }
}

impl Workspace {
    /// Visits everything under directory `base`, depth-first, the entries of
    /// each directory in name order. `depth` is 1 for `base`'s own entries;
    /// nothing deeper than `max_depth` is visited. Symlinks are reported and
    /// never followed, so a walk cannot loop or leave through one. An entry
    /// whose name is not valid UTF-8 is skipped and counted in the
    /// [`WalkEnd`], never failing its directory. Nothing is passed over for
    /// being ignored or hidden: see [`Workspace::walk_with`].
    pub fn walk(
        &self,
        base: &WorkPath,
        max_depth: usize,
        visit: &mut dyn FnMut(&WorkPath, Kind, usize) -> Walk,
    ) -> ToolResult<WalkEnd> {
        self.walk_with(base, Manners::ALL, max_depth, visit)
    }

    /// [`Workspace::walk`] with ripgrep's manners: entries that the ignore
    /// files name, or that are hidden, are passed over as `manners` says
    /// (a directory with everything in it), and counted in the [`WalkEnd`]
    /// so the result can say so. `base` itself is never passed over: it
    /// was named.
    pub fn walk_with(
        &self,
        base: &WorkPath,
        manners: Manners,
        max_depth: usize,
        visit: &mut dyn FnMut(&WorkPath, Kind, usize) -> Walk,
    ) -> ToolResult<WalkEnd> {
        let mut end = WalkEnd::default();
        let mut seen = 0usize;
        let mut stack: Vec<(WorkPath, Kind, usize)> = Vec::new();
        let mut ignores = IgnoreStack::at(self, base, manners);
        let respect = manners.ignores == Ignores::Respect;
        // Entries are pushed in reverse so they pop in name order.
        let first = self.read_dir(base)?;
        end.undecodable_names += first.undecodable_names;
        if respect {
            ignores.push_dir(self, base, 0, Some(&first.entries));
        }
        push_entries(&mut stack, base, first.entries, 1);
        while let Some((path, kind, depth)) = stack.pop() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                end.hit_entry_cap = true;
                break;
            }
            ignores.leave_to(depth);
            let name = path.split_last().map_or("", |(_, name)| name);
            match skip(&ignores, manners, &path, name, kind) {
                Some(Skip::Hidden) => {
                    // Version-control internals are never walked, so they
                    // are not news when left out.
                    if !SKIP_DIRS.contains(&name) {
                        end.hidden += 1;
                    }
                    continue;
                }
                Some(Skip::Ignored) => {
                    end.ignored += 1;
                    continue;
                }
                None => {}
            }
            match visit(&path, kind, depth) {
                Walk::Stop => break,
                Walk::SkipDir => continue,
                Walk::Continue => {}
            }
            if kind == Kind::Dir && depth < max_depth && !SKIP_DIRS.contains(&name) {
                match self.read_dir(&path) {
                    Ok(listing) => {
                        end.undecodable_names += listing.undecodable_names;
                        if respect {
                            ignores.push_dir(self, &path, depth, Some(&listing.entries));
                        }
                        push_entries(&mut stack, &path, listing.entries, depth + 1);
                    }
                    Err(_) => end.unreadable_dirs += 1,
                }
            }
        }
        Ok(end)
    }
}

fn push_entries(
    stack: &mut Vec<(WorkPath, Kind, usize)>,
    dir: &WorkPath,
    entries: Vec<(String, Kind)>,
    depth: usize,
) {
    for (name, kind) in entries.into_iter().rev() {
        stack.push((dir.join(&name), kind, depth));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undecodable_note_is_absent_for_none_and_agrees_in_number() {
        assert_eq!(undecodable_note(0), None);
        assert_eq!(
            undecodable_note(1).as_deref(),
            Some("[1 entry skipped: its name is not valid UTF-8]")
        );
        assert_eq!(
            undecodable_note(3).as_deref(),
            Some("[3 entries skipped: their names are not valid UTF-8]")
        );
    }
}
