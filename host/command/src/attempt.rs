//! A kept copy-on-write layer of the workspace for one attempt at a task
//! (issue 42, ADR-0099).
//!
//! An [`AttemptLayer`] is a directory on the workspace's filesystem with an
//! overlay's `upper` and `work` directories. [`AttemptLayer::enter`] gives
//! a child process (between `fork` and `exec`) a mount namespace of its
//! own, with a user namespace where GOAT is not root, in which the
//! workspace's own path is an overlay: the workspace below, this layer's
//! `upper` above. Everything the child and its children write there lands
//! in the layer; the real workspace, and every other attempt's layer, are
//! out of its reach by the kernel's own mount table, whatever tool made
//! the write.
//!
//! The layer is kept on disk until it is discarded: a crash leaves it as
//! it was. [`AttemptLayer::pending`] reads what it changed as a command's
//! [`ChangeSet`], inspected and landed whole by the same code as a
//! command's, and the layer stays where it is after a landing as before.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use std::os::fd::OwnedFd;

use rustix::fs::Mode;
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags, MountPropagationFlags};

use crate::layer::Layer;
use crate::run::{CommandError, Containment, Pending};

mod swap;

pub use swap::Before;

/// Where attempts' layers are kept for `containment`'s workspace: beside
/// commands' change layers, on the workspace's own mount (a landing is
/// renames), under `attempts/`.
pub fn attempts_base(containment: &Containment) -> Result<PathBuf, CommandError> {
    Ok(crate::run::layer_base(containment)?.join("attempts"))
}

/// One attempt's kept layer: `dir/upper`, `dir/work`, `dir/backup`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptLayer {
    dir: PathBuf,
}

/// What [`AttemptLayer::enter`] prepared before the fork: every path as a C
/// string, every map as bytes, so the child makes system calls only.
struct Entry {
    workspace: CString,
    /// Another layer's `upper`, between the workspace and this layer.
    over: Option<CString>,
    upper: CString,
    work: CString,
    user_ns: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl AttemptLayer {
    /// Makes the layer at `dir` (mode 0700; its parent is made too), which
    /// must not exist yet.
    pub fn create(dir: &Path) -> io::Result<Self> {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)?;
        }
        rustix::fs::mkdir(dir, Mode::from_raw_mode(0o700))?;
        for part in ["upper", "work", "backup"] {
            std::fs::create_dir(dir.join(part))?;
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The layer kept at `dir`, as [`AttemptLayer::create`] made it.
    pub fn open(dir: &Path) -> io::Result<Self> {
        for part in ["upper", "work", "backup"] {
            if !dir.join(part).is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} is not an attempt's layer (no {part})", dir.display()),
                ));
            }
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// Where it is kept.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A step for [`std::os::unix::process::CommandExt::pre_exec`]: the
    /// child gets its own mount namespace (and a user namespace, mapping
    /// only its own ids, unless GOAT is root), mounts are made private, and
    /// `workspace` becomes an overlay of itself below this layer. The
    /// child's working directory becomes the overlaid workspace.
    pub fn enter(
        &self,
        workspace: &Path,
    ) -> io::Result<impl FnMut() -> io::Result<()> + Send + Sync + 'static> {
        let user_ns = !rustix::process::geteuid().is_root();
        self.enter_as(workspace, user_ns, None)
    }

    /// [`AttemptLayer::enter`], with or without a user namespace (as root,
    /// either works).
    pub fn enter_as(
        &self,
        workspace: &Path,
        user_ns: bool,
        over: Option<&AttemptLayer>,
    ) -> io::Result<impl FnMut() -> io::Result<()> + Send + Sync + 'static> {
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
        };
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        let entry = Entry {
            workspace: c(workspace)?,
            over: over.map(|o| c(&o.dir.join("upper"))).transpose()?,
            upper: c(&self.dir.join("upper"))?,
            work: c(&self.dir.join("work"))?,
            user_ns,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        };
        Ok(move || entry.enter())
    }

    /// `program`, to be run inside this layer over `workspace` (see
    /// [`AttemptLayer::enter`]), from the overlaid workspace.
    pub fn command(
        &self,
        workspace: &Path,
        program: impl AsRef<std::ffi::OsStr>,
    ) -> io::Result<std::process::Command> {
        self.command_as(workspace, program, !rustix::process::geteuid().is_root())
    }

    /// `program`, to be run in this layer stacked on `below` (a layer of
    /// its own, read-only here) over `workspace`: it sees what `below`
    /// changed, and what it writes stays in this layer. For an attempt's
    /// check, whose writes (build outputs) must not change the attempt.
    pub fn command_over(
        &self,
        below: &AttemptLayer,
        workspace: &Path,
        program: impl AsRef<std::ffi::OsStr>,
    ) -> io::Result<std::process::Command> {
        let user_ns = !rustix::process::geteuid().is_root();
        self.spawnable(self.enter_as(workspace, user_ns, Some(below))?, program)
    }

    /// [`AttemptLayer::command`], with or without a user namespace.
    pub fn command_as(
        &self,
        workspace: &Path,
        program: impl AsRef<std::ffi::OsStr>,
        user_ns: bool,
    ) -> io::Result<std::process::Command> {
        self.spawnable(self.enter_as(workspace, user_ns, None)?, program)
    }

    fn spawnable(
        &self,
        step: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
        program: impl AsRef<std::ffi::OsStr>,
    ) -> io::Result<std::process::Command> {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(program);
        #[expect(unsafe_code, reason = "pre_exec runs in the forked child before exec")]
        // SAFETY: the step makes system calls only, with everything it
        // needs prepared before the fork (no allocation, no lock).
        unsafe {
            command.pre_exec(step);
        }
        Ok(command)
    }

    /// What the layer changed in `workspace`, read as a command's change
    /// set, ready to inspect and land whole. The layer is kept whatever
    /// happens to the set.
    pub fn pending(&self, workspace: &Path) -> io::Result<Pending> {
        let layer = Layer {
            dir: self.dir.clone(),
            keep: true,
            // As `enter` mounted it: with a user namespace unless root.
            opaque: crate::layer::opaque_xattr(!rustix::process::geteuid().is_root()),
        };
        let set = layer.changes(workspace)?;
        Ok(Pending::new(layer, workspace.to_owned(), set))
    }

    /// A copy of this layer, made at `dir`: what a landing moves into the
    /// workspace, so this layer stays as it was and can land again later.
    /// Files, directories (with their modes and opaque markers), links and
    /// whiteouts are copied; nothing is followed.
    pub fn copy_to(&self, dir: &Path) -> io::Result<AttemptLayer> {
        let copy = AttemptLayer::create(dir)?;
        let from = crate::layer::open_dir_path(&self.dir.join("upper"))?;
        let to = crate::layer::open_dir_path(&copy.dir.join("upper"))?;
        if let Err(e) = copy_tree(&from, &to) {
            let _ = copy.discard();
            return Err(e);
        }
        Ok(copy)
    }

    /// Removes the layer and everything in it.
    pub fn discard(self) -> io::Result<()> {
        crate::layer::remove_tree(&self.dir)
    }
}

impl Entry {
    /// In the forked child: system calls only.
    fn enter(&self) -> io::Result<()> {
        use rustix::thread::UnshareFlags;
        // Ended with GOAT: an attempt never runs on unwatched (it ends as a
        // cancelled turn would, what it wrote kept in its layer).
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
        let mut flags = UnshareFlags::NEWNS;
        if self.user_ns {
            flags |= UnshareFlags::NEWUSER;
        }
        #[expect(
            unsafe_code,
            reason = "unshare in the forked child; no descriptor table is unshared"
        )]
        // SAFETY: `FILES` is not among the flags, so no thread can observe
        // a descriptor table it does not share; the child has one thread.
        unsafe {
            rustix::thread::unshare_unsafe(flags)?;
        }
        if self.user_ns {
            crate::view::write_file(c"/proc/self/setgroups", b"deny\n")?;
            crate::view::write_file(c"/proc/self/uid_map", &self.uid_map)?;
            crate::view::write_file(c"/proc/self/gid_map", &self.gid_map)?;
        }
        // Nothing mounted here reaches the host's mount table.
        rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
        )?;
        let fs = rustix::mount::fsopen(c"overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
        // The top-most lower layer first.
        if let Some(over) = &self.over {
            rustix::mount::fsconfig_set_string(&fs, c"lowerdir+", over.as_c_str())?;
        }
        rustix::mount::fsconfig_set_string(&fs, c"lowerdir+", self.workspace.as_c_str())?;
        rustix::mount::fsconfig_set_string(&fs, c"upperdir", self.upper.as_c_str())?;
        rustix::mount::fsconfig_set_string(&fs, c"workdir", self.work.as_c_str())?;
        // As a command's view: every change in the upper layer is a whole
        // file, which is what GOAT inspects and lands.
        rustix::mount::fsconfig_set_string(&fs, c"redirect_dir", c"nofollow")?;
        rustix::mount::fsconfig_set_string(&fs, c"metacopy", c"off")?;
        rustix::mount::fsconfig_set_string(&fs, c"index", c"off")?;
        if self.user_ns {
            rustix::mount::fsconfig_set_flag(&fs, c"userxattr")?;
        }
        rustix::mount::fsconfig_create(&fs)?;
        let mnt = rustix::mount::fsmount(
            &fs,
            FsMountFlags::FSMOUNT_CLOEXEC,
            MountAttrFlags::MOUNT_ATTR_NODEV | MountAttrFlags::MOUNT_ATTR_NOSUID,
        )?;
        rustix::mount::move_mount(
            &mnt,
            c"",
            rustix::fs::CWD,
            self.workspace.as_c_str(),
            rustix::mount::MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        // The directory it was in is the workspace below the overlay.
        rustix::process::chdir(self.workspace.as_c_str())?;
        Ok(())
    }
}

/// Copies the overlay upper directory `from` into `to`, entry by entry,
/// following no link.
fn copy_tree(from: &OwnedFd, to: &OwnedFd) -> io::Result<()> {
    use rustix::fs::{AtFlags, FileType, OFlags};
    for name in crate::layer::names(from)? {
        let name = name.as_slice();
        let stat = rustix::fs::statat(from, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let mode = Mode::from_raw_mode(stat.st_mode & 0o7777);
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                rustix::fs::mkdirat(to, name, Mode::from_raw_mode(0o700))?;
                let (sub_from, sub_to) = (
                    crate::layer::open_dir_at(from, name)?,
                    crate::layer::open_dir_at(to, name)?,
                );
                for attr in crate::layer::OPAQUE_XATTRS {
                    let mut value = [0u8; 4];
                    if let Ok(n) = rustix::fs::fgetxattr(&sub_from, *attr, &mut value) {
                        rustix::fs::fsetxattr(
                            &sub_to,
                            *attr,
                            &value[..n],
                            rustix::fs::XattrFlags::empty(),
                        )?;
                    }
                }
                copy_tree(&sub_from, &sub_to)?;
                rustix::fs::fchmod(&sub_to, mode)?;
            }
            FileType::RegularFile => {
                let src = rustix::fs::openat(
                    from,
                    name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                let dst = rustix::fs::openat(
                    to,
                    name,
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )?;
                let mut src = std::fs::File::from(src);
                let mut dst = std::fs::File::from(dst);
                io::copy(&mut src, &mut dst)?;
                rustix::fs::fchmod(&dst, mode)?;
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(from, name, Vec::new())?;
                rustix::fs::symlinkat(target.as_c_str(), to, name)?;
            }
            // A whiteout: a removal.
            FileType::CharacterDevice if stat.st_rdev == 0 => {
                rustix::fs::mknodat(to, name, FileType::CharacterDevice, Mode::empty(), 0)?;
            }
            // Never landed (the inspection leaves special files out).
            _ => {}
        }
    }
    Ok(())
}
