//! `wasi:filesystem/types` as tools get it: wasmtime-wasi's own
//! implementation, with every path-taking operation decided by the
//! [`Fence`] on the file it reaches.
//!
//! Opening, creating, removing, renaming and `stat-at` are done here, on
//! descriptors the fence resolved (so what was checked is what is used);
//! readlink and set-times are checked here and then done by wasmtime-wasi;
//! directory listings are read here ([`crate::listing`]) and filtered by the
//! fence; the preopen is the root the fence opened. Operations on an open
//! descriptor need no check, since it was checked when opened: the ones
//! every read makes (`read`, `stat`, `get-flags`, `get-type`) are done here
//! on the calling thread, the rest by wasmtime-wasi, which takes each
//! through a Tokio runtime. See ADR-0069 and ADR-0076.

use std::fs::File;
use std::io;
use std::sync::Arc;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as sync;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi::{FsPerms, OpenMode};

use crate::fence::{Fence, MAX_WRITE_LINKS, Reached, file_type};
use crate::listing::{Listing, descriptor_type};

/// The linker's marker for [`PolicyFs`].
pub(crate) struct PolicyFilesystem;

impl HasData for PolicyFilesystem {
    type Data<'a> = PolicyFs<'a>;
}

/// wasmtime-wasi's filesystem view and the call's fence.
pub(crate) struct PolicyFs<'a> {
    pub(crate) inner: WasiFilesystemCtxView<'a>,
    pub(crate) fence: &'a mut Fence,
}

type Fd = Resource<sync::Descriptor>;

impl PolicyFs<'_> {
    /// The directory `fd` names, and the permissions of its preopen.
    fn dir(&self, fd: &Fd) -> FsResult<(Arc<File>, FsPerms)> {
        match self.inner.table.get(fd)? {
            Descriptor::Dir(d) => Ok((Arc::clone(&d.dir), d.perms)),
            Descriptor::File(_) => Err(ErrorCode::NotDirectory.into()),
        }
    }

    /// The directory `fd` names, refusing if its preopen is read-only.
    fn dir_for_write(&self, fd: &Fd) -> FsResult<Arc<File>> {
        let (dir, perms) = self.dir(fd)?;
        if perms.write_not_permitted() {
            return Err(ErrorCode::NotPermitted.into());
        }
        Ok(dir)
    }

    /// Refuses a change made through a descriptor that was not opened for
    /// writing: wasmtime-wasi checks only the preopen's permissions, and a
    /// file opened for reading was checked for reading alone (a protected
    /// file's times could otherwise be changed through it).
    fn require_opened_for_write(&self, fd: &Fd) -> FsResult<()> {
        let mode = match self.inner.table.get(fd)? {
            Descriptor::File(f) => f.open_mode,
            Descriptor::Dir(d) => d.open_mode,
        };
        if mode.contains(OpenMode::WRITE) {
            Ok(())
        } else {
            Err(ErrorCode::NotPermitted.into())
        }
    }

    /// Refuses with "no such file" when `path`, reached from `fd`, is one
    /// the tool may not see. Failures to resolve are left to the operation
    /// itself, which reports them as it always does.
    fn require_visible(&self, fd: &Fd, path: &str, follow: bool) -> FsResult<()> {
        if !self.fence.hides_anything() {
            return Ok(());
        }
        let (dir, _) = self.dir(fd)?;
        match self.fence.reach(&*dir, path, follow) {
            Ok(reached) if !self.fence.may_see(&reached) => Err(ErrorCode::NoEntry.into()),
            Ok(_) | Err(_) => Ok(()),
        }
    }

    /// Resolves the directory holding `path`'s last component for an
    /// operation that changes that name, and checks the name may be
    /// changed.
    fn parent_for_write<'p>(&mut self, fd: &Fd, path: &'p str) -> FsResult<(Reached, &'p str)> {
        let dir = self.dir_for_write(fd)?;
        let (parent, name, full) = self.fence.reach_parent(&*dir, path)?;
        self.fence.check_writable(&full)?;
        Ok((parent, name))
    }

    /// Opens an existing file or directory the fence reached.
    fn open_reached(
        &mut self,
        reached: Reached,
        how: &Open,
        perms: FsPerms,
    ) -> FsResult<Descriptor> {
        if self.fence.hides_anything() && !self.fence.may_see(&reached) {
            return Err(ErrorCode::NoEntry.into());
        }
        if how.create && how.exclusive {
            return Err(ErrorCode::Exist.into());
        }
        match file_type(&reached.stat) {
            rfs::FileType::Directory => {
                if how.write {
                    return Err(ErrorCode::IsDirectory.into());
                }
                // Only reads get here (a write was refused above), and a
                // read's descriptor is already open for reading.
                let dir = File::from(reached.fd);
                Ok(Descriptor::Dir(Dir::new(dir, perms, how.mode, true)))
            }
            rfs::FileType::RegularFile => {
                if how.directory {
                    return Err(ErrorCode::NotDirectory.into());
                }
                if how.write {
                    self.fence.check_writable(&reached.path)?;
                    if reached.stat.st_nlink > MAX_WRITE_LINKS {
                        return Err(self
                            .fence
                            .refuse(format!(
                                "'{}' has {} hard links, so writing it would change a file \
                                 under another name too (perhaps outside the workspace); it was \
                                 not written",
                                reached.path, reached.stat.st_nlink
                            ))
                            .into());
                    }
                }
                let file = if how.truncate {
                    self.stage_replacement(&reached)?
                } else if how.write {
                    Fence::reopen(&reached, how.access())?
                } else {
                    // Already open for reading; regular files ignore
                    // O_NONBLOCK.
                    File::from(reached.fd)
                };
                Ok(Descriptor::File(wasmtime_wasi::filesystem::File::new(
                    file, perms, how.mode, true,
                )))
            }
            rfs::FileType::Symlink => Err(ErrorCode::Loop.into()),
            _ => {
                // Unnamed only when a special file was swapped in after a
                // read looked the type up (reads are named only when the
                // policy could hide them).
                let shown = match reached.path.as_str() {
                    "" => self
                        .fence
                        .workspace_path(&reached.fd)
                        .map_or_else(|_| "the file".to_owned(), |path| format!("'{path}'")),
                    path => format!("'{path}'"),
                };
                Err(self
                    .fence
                    .refuse(format!(
                        "{shown} is not a regular file or directory (a FIFO, socket or \
                         device); tools open only files and directories"
                    ))
                    .into())
            }
        }
    }

    /// A whole-file write of the existing file `reached`: a temporary file
    /// beside it with its permissions, replacing it when the call succeeds.
    fn stage_replacement(&mut self, reached: &Reached) -> FsResult<File> {
        let (parent_path, name) = match reached.path.rsplit_once('/') {
            Some((parent, name)) => (parent.to_owned(), name.to_owned()),
            None => (".".to_owned(), reached.path.clone()),
        };
        let root = self
            .fence
            .root_fd()
            .ok_or(ErrorCode::NotPermitted)?
            .try_clone()?;
        let parent = self.fence.reach(&root, &parent_path, false)?;
        // The name must still be the file that was checked.
        let now = rfs::statat(&parent.fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(io::Error::from)?;
        if (now.st_dev, now.st_ino) != (reached.stat.st_dev, reached.stat.st_ino) {
            return Err(ErrorCode::Busy.into());
        }
        let mode = reached.stat.st_mode & 0o7777;
        Ok(self
            .fence
            .stage(&parent, &name, reached.path.clone(), Some(mode), false)?)
    }
}

/// What an `open-at` asks for.
struct Open {
    read: bool,
    write: bool,
    create: bool,
    exclusive: bool,
    truncate: bool,
    directory: bool,
    mode: OpenMode,
}

impl Open {
    fn new(oflags: sync::OpenFlags, flags: sync::DescriptorFlags) -> Self {
        let create = oflags.contains(sync::OpenFlags::CREATE);
        let truncate = oflags.contains(sync::OpenFlags::TRUNCATE);
        let write = flags.contains(sync::DescriptorFlags::WRITE) || create || truncate;
        // As wasmtime-wasi does: a descriptor not opened for writing is
        // opened for reading.
        let read = flags.contains(sync::DescriptorFlags::READ)
            || !flags.contains(sync::DescriptorFlags::WRITE);
        let mut mode = OpenMode::empty();
        if read {
            mode |= OpenMode::READ;
        }
        if write {
            mode |= OpenMode::WRITE;
        }
        Self {
            read,
            write,
            create,
            exclusive: oflags.contains(sync::OpenFlags::EXCLUSIVE),
            truncate,
            directory: oflags.contains(sync::OpenFlags::DIRECTORY),
            mode,
        }
    }

    fn access(&self) -> OFlags {
        match (self.read, self.write) {
            (true, true) => OFlags::RDWR,
            (false, true) => OFlags::WRONLY,
            (_, false) => OFlags::RDONLY,
        }
    }
}

/// The most one `read` returns, as wasmtime-wasi allows: the host allocates
/// what is asked, so a guest cannot make it allocate more per call.
const MAX_READ_BYTES: usize = 64 * 1024;

/// A stat as WASI gives it, from the kernel's.
fn descriptor_stat(stat: &rfs::Stat) -> sync::DescriptorStat {
    let time = |secs: i64, nanos: u64| {
        Some(sync::Datetime {
            seconds: u64::try_from(secs).ok()?,
            nanoseconds: u32::try_from(nanos).ok()?,
        })
    };
    sync::DescriptorStat {
        type_: descriptor_type(file_type(stat)),
        link_count: stat.st_nlink,
        size: u64::try_from(stat.st_size).unwrap_or(0),
        data_access_timestamp: time(stat.st_atime, stat.st_atime_nsec),
        data_modification_timestamp: time(stat.st_mtime, stat.st_mtime_nsec),
        status_change_timestamp: time(stat.st_ctime, stat.st_ctime_nsec),
    }
}

fn not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

impl sync::Host for PolicyFs<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<sync::ErrorCode> {
        sync::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<streams::Error>,
    ) -> wasmtime::Result<Option<sync::ErrorCode>> {
        sync::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl wasmtime_wasi::p2::bindings::filesystem::preopens::Host for PolicyFs<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        // The one preopen, the workspace root the fence opened for the call.
        let Some(dir) = self.fence.preopen().cloned() else {
            return Ok(Vec::new());
        };
        let fd = self.inner.table.push(Descriptor::Dir(dir))?;
        Ok(vec![(fd, ".".to_owned())])
    }
}

impl sync::HostDescriptor for PolicyFs<'_> {
    fn open_at(
        &mut self,
        fd: Fd,
        path_flags: sync::PathFlags,
        path: String,
        oflags: sync::OpenFlags,
        flags: sync::DescriptorFlags,
    ) -> FsResult<Fd> {
        let (dir, perms) = self.dir(&fd)?;
        if flags.intersects(
            sync::DescriptorFlags::FILE_INTEGRITY_SYNC
                | sync::DescriptorFlags::DATA_INTEGRITY_SYNC
                | sync::DescriptorFlags::REQUESTED_WRITE_SYNC,
        ) {
            return Err(ErrorCode::Unsupported.into());
        }
        let how = Open::new(oflags, flags);
        if how.directory && (how.create || how.exclusive || how.truncate) {
            return Err(ErrorCode::Invalid.into());
        }
        if how.write && perms.write_not_permitted() {
            return Err(ErrorCode::NotPermitted.into());
        }
        let follow = path_flags.contains(sync::PathFlags::SYMLINK_FOLLOW);
        if !how.write {
            let hides = self.fence.hides_anything();
            // Only files and directories are ever opened: anything else is
            // looked up by type first and, once confirmed beneath the
            // workspace without opening it (O_PATH), refused.
            if Fence::names_special_file(&*dir, &path, follow) {
                let reached = self.fence.reach(&*dir, &path, follow)?;
                return Err(self
                    .open_reached(reached, &how, perms)
                    .err()
                    .unwrap_or_else(|| ErrorCode::NotPermitted.into()));
            }
            // A read opens the file itself, non-blocking, and checks what it
            // opened (a file swapped in since the lookup is refused then);
            // it is named only when the policy could hide it.
            let reached = self
                .fence
                .reach_as(&*dir, &path, follow, OFlags::RDONLY, hides)?;
            let descriptor = self.open_reached(reached, &how, perms)?;
            return Ok(self.inner.table.push(descriptor)?);
        }
        let descriptor = match self.fence.reach(&*dir, &path, follow) {
            Ok(reached) => self.open_reached(reached, &how, perms)?,
            Err(e) if how.create && not_found(&e) => {
                let (parent, name, full) = self.fence.reach_parent(&*dir, &path)?;
                self.fence.check_writable(&full)?;
                let file = self.fence.stage(&parent, name, full, None, how.exclusive)?;
                Descriptor::File(wasmtime_wasi::filesystem::File::new(
                    file, perms, how.mode, true,
                ))
            }
            Err(e) => return Err(e.into()),
        };
        Ok(self.inner.table.push(descriptor)?)
    }

    fn stat_at(
        &mut self,
        fd: Fd,
        path_flags: sync::PathFlags,
        path: String,
    ) -> FsResult<sync::DescriptorStat> {
        let follow = path_flags.contains(sync::PathFlags::SYMLINK_FOLLOW);
        // Resolved once, as an open would: the visibility check's own stat
        // is the answer, and the file is named only when the policy could
        // hide it.
        let (dir, _) = self.dir(&fd)?;
        let hides = self.fence.hides_anything();
        let reached = self
            .fence
            .reach_as(&*dir, &path, follow, OFlags::PATH, hides)?;
        if hides && !self.fence.may_see(&reached) {
            return Err(ErrorCode::NoEntry.into());
        }
        Ok(descriptor_stat(&reached.stat))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Fd,
        path_flags: sync::PathFlags,
        path: String,
    ) -> FsResult<sync::MetadataHashValue> {
        self.require_visible(
            &fd,
            &path,
            path_flags.contains(sync::PathFlags::SYMLINK_FOLLOW),
        )?;
        sync::HostDescriptor::metadata_hash_at(&mut self.inner, fd, path_flags, path)
    }

    fn readlink_at(&mut self, fd: Fd, path: String) -> FsResult<String> {
        self.require_visible(&fd, &path, false)?;
        sync::HostDescriptor::readlink_at(&mut self.inner, fd, path)
    }

    fn set_times_at(
        &mut self,
        fd: Fd,
        path_flags: sync::PathFlags,
        path: String,
        atim: sync::NewTimestamp,
        mtim: sync::NewTimestamp,
    ) -> FsResult<()> {
        let follow = path_flags.contains(sync::PathFlags::SYMLINK_FOLLOW);
        let dir = self.dir_for_write(&fd)?;
        let reached = self.fence.reach(&*dir, &path, follow)?;
        if self.fence.hides_anything() && !self.fence.may_see(&reached) {
            return Err(ErrorCode::NoEntry.into());
        }
        self.fence.check_writable(&reached.path)?;
        sync::HostDescriptor::set_times_at(&mut self.inner, fd, path_flags, path, atim, mtim)
    }

    fn create_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        let (parent, name) = self.parent_for_write(&fd, &path)?;
        rfs::mkdirat(&parent.fd, name, Mode::from_raw_mode(0o777)).map_err(io::Error::from)?;
        Ok(())
    }

    fn unlink_file_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        self.require_visible(&fd, &path, false)?;
        let (parent, name) = self.parent_for_write(&fd, &path)?;
        rfs::unlinkat(&parent.fd, name, AtFlags::empty()).map_err(io::Error::from)?;
        Ok(())
    }

    fn remove_directory_at(&mut self, fd: Fd, path: String) -> FsResult<()> {
        self.require_visible(&fd, &path, false)?;
        let (parent, name) = self.parent_for_write(&fd, &path)?;
        rfs::unlinkat(&parent.fd, name, AtFlags::REMOVEDIR).map_err(io::Error::from)?;
        Ok(())
    }

    fn rename_at(
        &mut self,
        fd: Fd,
        old_path: String,
        new_fd: Fd,
        new_path: String,
    ) -> FsResult<()> {
        let (_, old_perms) = self.dir(&fd)?;
        let (_, new_perms) = self.dir(&new_fd)?;
        if old_perms != new_perms {
            return Err(ErrorCode::NotPermitted.into());
        }
        self.require_visible(&fd, &old_path, false)?;
        let (from, from_name) = self.parent_for_write(&fd, &old_path)?;
        let (to, to_name) = self.parent_for_write(&new_fd, &new_path)?;
        let source =
            rfs::statat(&from.fd, from_name, AtFlags::SYMLINK_NOFOLLOW).map_err(io::Error::from)?;
        if file_type(&source) == rfs::FileType::Directory {
            let join = |dir: &str, name: &str| {
                if dir == "." {
                    name.to_owned()
                } else {
                    format!("{dir}/{name}")
                }
            };
            let (src, dst) = (join(&from.path, from_name), join(&to.path, to_name));
            if self.fence.governs_below(&src) || self.fence.governs_below(&dst) {
                return Err(self
                    .fence
                    .refuse(format!(
                        "renaming the directory '{src}' to '{dst}' is refused: permission rules \
                         apply to paths inside one of them, and a rename would move those files \
                         out from under them"
                    ))
                    .into());
            }
        }
        rfs::renameat(&from.fd, from_name, &to.fd, to_name).map_err(io::Error::from)?;
        Ok(())
    }

    fn symlink_at(&mut self, fd: Fd, src_path: String, dest_path: String) -> FsResult<()> {
        if src_path.starts_with('/') {
            return Err(ErrorCode::NotPermitted.into());
        }
        let (parent, name) = self.parent_for_write(&fd, &dest_path)?;
        rfs::symlinkat(src_path.as_str(), &parent.fd, name).map_err(io::Error::from)?;
        Ok(())
    }

    fn link_at(
        &mut self,
        fd: Fd,
        _old_path_flags: sync::PathFlags,
        _old_path: String,
        _new_descriptor: Fd,
        _new_path: String,
    ) -> FsResult<()> {
        self.dir_for_write(&fd)?;
        Err(self
            .fence
            .refuse(
                "tools may not create hard links: a second name for a file would let a later \
                 write change it under the first"
                    .to_owned(),
            )
            .into())
    }

    fn read_directory(&mut self, fd: Fd) -> FsResult<Resource<sync::DirectoryEntryStream>> {
        let (dir, _) = self.dir(&fd)?;
        let listed = if self.fence.hides_anything() {
            Some(self.fence.workspace_path(&*dir)?)
        } else {
            None
        };
        // Our own listing (see `listing`), under the stream's handle.
        let listing = self.inner.table.push(Listing::read(&dir)?)?;
        let stream = Resource::new_own(listing.rep());
        if let Some(dir) = listed {
            self.fence.track_stream(stream.rep(), dir);
        }
        Ok(stream)
    }

    // What follows acts on an open descriptor, checked when it was opened.

    fn advise(
        &mut self,
        fd: Fd,
        offset: sync::Filesize,
        len: sync::Filesize,
        advice: sync::Advice,
    ) -> FsResult<()> {
        sync::HostDescriptor::advise(&mut self.inner, fd, offset, len, advice)
    }

    fn sync_data(&mut self, fd: Fd) -> FsResult<()> {
        sync::HostDescriptor::sync_data(&mut self.inner, fd)
    }

    fn get_flags(&mut self, fd: Fd) -> FsResult<sync::DescriptorFlags> {
        // What wasmtime-wasi reports, known without asking the kernel: no
        // descriptor here is ever opened with a sync flag (`open_at`
        // refuses them, and the preopen has none), so the flags are the
        // mode it was opened in.
        let mut flags = sync::DescriptorFlags::empty();
        let (mode, write) = match self.inner.table.get(&fd)? {
            Descriptor::File(f) => (f.open_mode, sync::DescriptorFlags::WRITE),
            Descriptor::Dir(d) => (d.open_mode, sync::DescriptorFlags::MUTATE_DIRECTORY),
        };
        if mode.contains(OpenMode::READ) {
            flags |= sync::DescriptorFlags::READ;
        }
        if mode.contains(OpenMode::WRITE) {
            flags |= write;
        }
        Ok(flags)
    }

    fn get_type(&mut self, fd: Fd) -> FsResult<sync::DescriptorType> {
        Ok(self.stat(fd)?.type_)
    }

    fn set_size(&mut self, fd: Fd, size: sync::Filesize) -> FsResult<()> {
        self.require_opened_for_write(&fd)?;
        sync::HostDescriptor::set_size(&mut self.inner, fd, size)
    }

    fn set_times(
        &mut self,
        fd: Fd,
        atim: sync::NewTimestamp,
        mtim: sync::NewTimestamp,
    ) -> FsResult<()> {
        self.require_opened_for_write(&fd)?;
        sync::HostDescriptor::set_times(&mut self.inner, fd, atim, mtim)
    }

    fn read(
        &mut self,
        fd: Fd,
        len: sync::Filesize,
        offset: sync::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        // wasmtime-wasi's read, done here on this thread (the call may
        // block it) instead of through a Tokio runtime for every chunk.
        let Descriptor::File(f) = self.inner.table.get(&fd)? else {
            return Err(ErrorCode::BadDescriptor.into());
        };
        let want = usize::try_from(len).map_or(MAX_READ_BYTES, |n| n.min(MAX_READ_BYTES));
        let mut buffer = vec![0; want];
        let n = std::os::unix::fs::FileExt::read_at(&*f.file, &mut buffer, offset)?;
        buffer.truncate(n);
        Ok((buffer, n == 0))
    }

    fn write(&mut self, fd: Fd, buf: Vec<u8>, offset: sync::Filesize) -> FsResult<sync::Filesize> {
        self.require_opened_for_write(&fd)?;
        sync::HostDescriptor::write(&mut self.inner, fd, buf, offset)
    }

    fn sync(&mut self, fd: Fd) -> FsResult<()> {
        sync::HostDescriptor::sync(&mut self.inner, fd)
    }

    fn stat(&mut self, fd: Fd) -> FsResult<sync::DescriptorStat> {
        // As `stat_at` gives it, without a trip through Tokio.
        let stat = match self.inner.table.get(&fd)? {
            Descriptor::File(f) => rfs::fstat(&*f.file),
            Descriptor::Dir(d) => rfs::fstat(&*d.dir),
        }
        .map_err(io::Error::from)?;
        Ok(descriptor_stat(&stat))
    }

    fn drop(&mut self, fd: Fd) -> wasmtime::Result<()> {
        sync::HostDescriptor::drop(&mut self.inner, fd)
    }

    fn read_via_stream(
        &mut self,
        fd: Fd,
        offset: sync::Filesize,
    ) -> FsResult<Resource<streams::InputStream>> {
        sync::HostDescriptor::read_via_stream(&mut self.inner, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Fd,
        offset: sync::Filesize,
    ) -> FsResult<Resource<streams::OutputStream>> {
        self.require_opened_for_write(&fd)?;
        sync::HostDescriptor::write_via_stream(&mut self.inner, fd, offset)
    }

    fn append_via_stream(&mut self, fd: Fd) -> FsResult<Resource<streams::OutputStream>> {
        self.require_opened_for_write(&fd)?;
        sync::HostDescriptor::append_via_stream(&mut self.inner, fd)
    }

    fn is_same_object(&mut self, a: Fd, b: Fd) -> wasmtime::Result<bool> {
        sync::HostDescriptor::is_same_object(&mut self.inner, a, b)
    }

    fn metadata_hash(&mut self, fd: Fd) -> FsResult<sync::MetadataHashValue> {
        sync::HostDescriptor::metadata_hash(&mut self.inner, fd)
    }
}

impl sync::HostDirectoryEntryStream for PolicyFs<'_> {
    fn read_directory_entry(
        &mut self,
        stream: Resource<sync::DirectoryEntryStream>,
    ) -> FsResult<Option<sync::DirectoryEntry>> {
        let rep = stream.rep();
        let dir = self.fence.stream_dir(rep).map(str::to_owned);
        let listing = self
            .inner
            .table
            .get_mut(&Resource::<Listing>::new_borrow(rep))?;
        let Some(dir) = dir else {
            return Ok(listing.next_entry()?);
        };
        loop {
            match listing.next_entry()? {
                Some(e) => {
                    let path = if dir == "." {
                        e.name.clone()
                    } else {
                        format!("{dir}/{}", e.name)
                    };
                    // A file with another name the rules hide is not
                    // listed either (its type says when to look).
                    if self.fence.visible(&path)
                        && !(e.type_ == sync::DescriptorType::RegularFile
                            && self.fence.hidden_by_link_at(&path))
                    {
                        return Ok(Some(e));
                    }
                }
                None => return Ok(None),
            }
        }
    }

    fn drop(&mut self, stream: Resource<sync::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.fence.forget_stream(stream.rep());
        self.inner
            .table
            .delete(Resource::<Listing>::new_own(stream.rep()))?;
        Ok(())
    }
}
