//! The second child's part of the view: the mounts, one step at a time,
//! then `pivot_root`. System calls only; each step is marked in the
//! shared [`Progress`] page first, and named in words for the error.

use std::ffi::CStr;
use std::io;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, MountFlags, MountPropagationFlags, MoveMountFlags,
    UnmountFlags,
};

use super::{ROOT_TMPFS, Step, ViewPlan};
use crate::progress::{Progress, Stage};

impl ViewPlan {
    /// Each step in words, in order, for an error that names the one the
    /// kernel refused ([`Progress`]).
    pub(crate) fn step_names(&self) -> Vec<String> {
        let s = |c: &CStr| c.to_string_lossy().into_owned();
        self.steps
            .iter()
            .map(|step| match step {
                Step::Mkdir(p) => format!("mkdir {}", s(p)),
                Step::Touch(p) => format!("create {}", s(p)),
                Step::Symlink { target, link } => format!("link {} to {}", s(link), s(target)),
                Step::Tmpfs { at, .. } => format!("tmpfs at {}", s(at)),
                Step::Bind {
                    from,
                    at,
                    read_only,
                } => format!(
                    "bind {} at {}{}",
                    s(from),
                    s(at),
                    if read_only.is_some() {
                        ", read-only"
                    } else {
                        ""
                    }
                ),
                Step::BindTree { from, at, .. } => {
                    format!("bind {} with its mounts at {}, read-only", s(from), s(at))
                }
                Step::Proc(at) => format!("a fresh /proc at {}", s(at)),
                Step::Overlay {
                    lower, upper, at, ..
                } => format!(
                    "the overlay at {} (lower {}, upper {})",
                    s(at),
                    s(lower),
                    s(upper)
                ),
                Step::SealRoot(root) => format!("the new root {} made read-only", s(root)),
            })
            .collect()
    }
}

/// In the second child (PID 1 of the new namespace): the mounts, then
/// `pivot_root` into the view and the working directory. System calls
/// only.
pub(crate) fn build(plan: &ViewPlan, progress: &Progress) -> io::Result<()> {
    progress.mark(Stage::Root);
    rustix::mount::mount_change(
        c"/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )?;
    rustix::mount::mount(
        c"tmpfs",
        plan.root.as_c_str(),
        c"tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        ROOT_TMPFS,
    )?;
    for (index, step) in plan.steps.iter().enumerate() {
        progress.mark_step(index);
        run_step(step)?;
    }
    progress.mark(Stage::PivotRoot);
    rustix::process::chdir(plan.root.as_c_str())?;
    rustix::process::pivot_root(c".", c".")?;
    rustix::mount::unmount(c".", UnmountFlags::DETACH)?;
    rustix::process::chdir(plan.cwd.as_c_str())?;
    Ok(())
}

fn run_step(step: &Step) -> io::Result<()> {
    match step {
        Step::Mkdir(path) => match rustix::fs::mkdir(path.as_c_str(), Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
            Err(e) => Err(e.into()),
        },
        Step::Touch(path) => {
            // Already there (a file inside a read-only bind): bound over.
            if rustix::fs::lstat(path.as_c_str()).is_ok() {
                return Ok(());
            }
            match rustix::fs::open(
                path.as_c_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            ) {
                Ok(_) | Err(rustix::io::Errno::EXIST) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Step::Symlink { target, link } => {
            match rustix::fs::symlink(target.as_c_str(), link.as_c_str()) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Step::Tmpfs { at, options } => Ok(rustix::mount::mount(
            c"tmpfs",
            at.as_c_str(),
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            *options,
        )?),
        Step::Bind {
            from,
            at,
            read_only,
        } => {
            rustix::mount::mount_bind(from.as_c_str(), at.as_c_str())?;
            if let Some(flags) = read_only {
                rustix::mount::mount_remount(at.as_c_str(), *flags | MountFlags::BIND, c"")?;
            }
            Ok(())
        }
        Step::BindTree {
            from,
            at,
            read_only,
            below,
        } => {
            rustix::mount::mount_bind_recursive(from.as_c_str(), at.as_c_str())?;
            rustix::mount::mount_remount(at.as_c_str(), *read_only | MountFlags::BIND, c"")?;
            for (at, flags) in below {
                rustix::mount::mount_remount(at.as_c_str(), *flags | MountFlags::BIND, c"")?;
            }
            Ok(())
        }
        Step::Proc(at) => Ok(rustix::mount::mount(
            c"proc",
            at.as_c_str(),
            c"proc",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            None,
        )?),
        Step::Overlay {
            lower,
            upper,
            work,
            at,
            userxattr,
        } => {
            let fs = rustix::mount::fsopen(c"overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
            // Each path its own parameter (`lowerdir+`, Linux 6.8): no
            // escaping of `:` or `,` in a workspace's name.
            rustix::mount::fsconfig_set_string(&fs, c"lowerdir+", lower.as_c_str())?;
            rustix::mount::fsconfig_set_string(&fs, c"upperdir", upper.as_c_str())?;
            rustix::mount::fsconfig_set_string(&fs, c"workdir", work.as_c_str())?;
            // A renamed directory is copied, never recorded as a redirect;
            // no metadata-only copy-up: every change in the upper layer is
            // a whole file, which is what GOAT inspects and lands.
            rustix::mount::fsconfig_set_string(&fs, c"redirect_dir", c"nofollow")?;
            rustix::mount::fsconfig_set_string(&fs, c"metacopy", c"off")?;
            rustix::mount::fsconfig_set_string(&fs, c"index", c"off")?;
            if *userxattr {
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
                at.as_c_str(),
                MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
            )?;
            Ok(())
        }
        Step::SealRoot(root) => Ok(rustix::mount::mount_remount(
            root.as_c_str(),
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
            ROOT_TMPFS,
        )?),
    }
}
