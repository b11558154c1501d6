//! The command's view of the machine (ADR-0077): a mount namespace,
//! entered through a user namespace, in which everything but the
//! command's own places is read-only or absent, and the workspace is an
//! overlay whose changes land in an upper directory GOAT owns.
//!
//! Everything is prepared in GOAT before the fork ([`ViewPlan::prepare`]:
//! every path as a `CString`, the mount list in order, the id maps); the
//! child then makes system calls only ([`enter`]), as the Landlock part of
//! the sandbox always has.
//!
//! The shape of the child:
//!
//! - the first child (the one `std::process::Command` forked) unshares the
//!   user, mount, PID, IPC and (unless the network is open) network
//!   namespaces, writes its id maps, makes the proxy's listener in the new
//!   network namespace when the network is proxied ([`crate::net`]), and
//!   forks again; it then only waits for that second child and exits as it
//!   did. The second child is PID 1
//!   of the new PID namespace: when it exits, the kernel kills everything
//!   still in the namespace.
//! - the second child builds the new root on a `tmpfs`: system
//!   directories and granted toolchains bound read-only, a scratch home,
//!   the private `/tmp`, a `/dev` of a few nodes, a fresh `/proc`, and the
//!   workspace as an overlay (lower: the real workspace; upper: GOAT's).
//!   Existing version-control directories are bound read-only over the
//!   overlay, and paths a rule hides are covered by empty read-only ones.
//!   Then `pivot_root`, Landlock on top, every capability dropped, seccomp,
//!   `exec`.
//!
//! # Security
//!
//! Bind mounts are remounted read-only with the flags their source mount
//! already had (a user namespace may not clear `nosuid`, `nodev` or
//! `noexec`); a read-only remount refuses `chmod`, `chown`, `utime` and
//! `setxattr` along with writes. Nothing of the home directory is there but
//! the toolchain directories granted by name, each read-only.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

mod mount;
pub(crate) use mount::build;

use rustix::fs::{Mode, OFlags};
use rustix::mount::MountFlags;

/// A `tmpfs` mounted with these options holds the new root: only the
/// directories and files made for mount points, so a few KiB suffice.
const ROOT_TMPFS: &CStr = c"mode=0755,size=1m";

/// The scratch home: the toolchains bound into it, and room for the
/// caches and lock files tools write there (`~/.cargo/.package-cache`,
/// `~/.cache`). Discarded when the command ends.
const HOME_TMPFS: &CStr = c"mode=0700,size=256m";

/// `/dev` itself: a handful of nodes bound from the host, and links.
const DEV_TMPFS: &CStr = c"mode=0755,size=64k";

/// `/dev/shm`, for programs that use POSIX shared memory (Python's
/// `multiprocessing`).
const SHM_TMPFS: &CStr = c"mode=1777,size=64m";

/// Device nodes a build uses, bound from the host's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// One step of building the view, in order.
#[derive(Debug)]
enum Step {
    /// `mkdir`, an existing directory accepted.
    Mkdir(CString),
    /// An empty file to bind a file over.
    Touch(CString),
    /// A symbolic link.
    Symlink { target: CString, link: CString },
    /// `tmpfs` with options.
    Tmpfs { at: CString, options: &'static CStr },
    /// A bind mount; `read_only` remounts it with the source's locked flags
    /// kept.
    Bind {
        from: CString,
        at: CString,
        read_only: Option<MountFlags>,
    },
    /// A read-only bind of a directory with mounts below it (Docker mounts
    /// `/etc/hosts`, `/etc/hostname` and `/etc/resolv.conf`): bound with
    /// them (the kernel refuses to bind such a directory alone in a user
    /// namespace, as that would show what they cover), then it and each of
    /// them, at `below`, remounted read-only with its locked flags kept.
    BindTree {
        from: CString,
        at: CString,
        read_only: MountFlags,
        below: Vec<(CString, MountFlags)>,
    },
    /// A fresh `/proc` for the new PID namespace.
    Proc(CString),
    /// The workspace overlay.
    Overlay {
        lower: CString,
        upper: CString,
        work: CString,
        at: CString,
        userxattr: bool,
    },
    /// The new root's own `tmpfs` made read-only, once every mount point
    /// exists.
    SealRoot(CString),
}

/// Whether the command gets a user namespace (always, but where GOAT runs
/// as root on a kernel that refuses one, it may do without: it then has
/// the rights to make the mounts itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UserNs {
    /// A new user namespace, with these maps.
    New,
    /// None (root only).
    None,
}

/// Everything the child needs, prepared before the fork.
#[derive(Debug)]
pub(crate) struct ViewPlan {
    steps: Vec<Step>,
    /// The new root (a directory of the scratch area).
    root: CString,
    /// Where the command starts, inside the view.
    cwd: CString,
    /// The workspace as the command sees it (the same path as outside).
    workspace: CString,
    /// Places given a Landlock rule after the mounts (their inodes are new):
    /// read-write.
    rw_after: Vec<CString>,
    /// The new `/proc`, readable.
    proc_dir: CString,
    user_ns: UserNs,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    net: ViewNet,
}

/// The view's network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ViewNet {
    /// The host's (the network is open).
    Host,
    /// A namespace of its own with nothing in it.
    Empty,
    /// A namespace of its own where only the proxy's listener, on this
    /// port, is reachable; the listener goes to GOAT over `channel` (the
    /// child's end of a socket pair GOAT keeps open until the spawn).
    Proxy { port: u16, channel: RawFd },
}

/// What the view is built from; every path canonical.
pub(crate) struct ViewInput<'a> {
    pub workspace: &'a Path,
    pub cwd: &'a Path,
    pub upper: &'a Path,
    pub work: &'a Path,
    pub root: &'a Path,
    pub tmpdir: &'a Path,
    pub home: Option<&'a Path>,
    pub read_paths: &'a [PathBuf],
    /// Directories inside the workspace bound read-only over the overlay
    /// (existing version-control metadata), relative.
    pub read_only: &'a [String],
    /// Paths inside the workspace a rule hides (or that no rule can be
    /// asked about, not being UTF-8): covered by an empty read-only file or
    /// directory, relative, with whether each is a directory.
    pub hidden: &'a [(PathBuf, bool)],
    pub empty_file: &'a Path,
    pub empty_dir: &'a Path,
    /// Where each package cache's discarded upper layer is made.
    pub caches: &'a Path,
    pub user_ns: UserNs,
    pub net: ViewNet,
    /// How the workspace is mounted.
    pub workspace_mount: WorkspaceMount,
}

/// How the workspace appears in a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WorkspaceMount {
    /// An overlay whose upper layer GOAT inspects and lands (a command).
    Overlay,
    /// The workspace itself, bound read-only or read-write (a long-lived
    /// server, whose writes a snapshot records call by call).
    Bind {
        /// Whether the bind is writable.
        writable: bool,
    },
}

/// Package caches under the home directory that package managers write
/// when they download (`cargo build` with a new dependency, `npm
/// install`, `pip install`, `go mod download`). Bound read-only they make
/// such a command fail (`Read-only file system`); bound read-write a
/// command could plant a package the person's own builds would later use.
/// So each is an overlay in the view: the host's cache below, an upper
/// layer in the command's layer directory above, discarded with it. The
/// command reads what is cached and downloads the rest; the host's cache
/// never changes.
pub const HOME_CACHES: &[&str] = &[
    ".cargo/registry",
    ".cargo/git",
    ".npm",
    ".cache/pip",
    ".bun/install/cache",
    "go/pkg/mod",
];

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

/// System locations bound read-only into every view, where they exist (a
/// link such as `/bin -> usr/bin` is made again as a link).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Secrets in `/etc` that no build reads: covered in the view (a file by
/// an empty file, a directory by an empty directory).
const ETC_HIDDEN: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/krb5.keytab",
    "/etc/ssl/private",
    "/etc/wireguard",
    "/etc/NetworkManager/system-connections",
    "/etc/ipsec.secrets",
];

/// The host's SSH keys: every `ssh_host_*_key` in `/etc/ssh`.
fn ssh_host_keys() -> Vec<PathBuf> {
    std::fs::read_dir("/etc/ssh")
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The locked flags of the mount `path` is on, which a read-only remount
/// inside a user namespace must keep.
/// The mount points strictly below `dir`, outermost first, from
/// `/proc/self/mountinfo` (GOAT's own mount namespace); none where it
/// cannot be read.
fn mounts_below(dir: &Path) -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut below: Vec<PathBuf> = info
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape_mountinfo(field)))
        .filter(|point| point != dir && point.starts_with(dir))
        .collect();
    below.sort_by_key(|p| p.components().count());
    below.dedup();
    below
}

/// A mount point as `mountinfo` writes it: space, tab, newline and
/// backslash as three octal digits after a backslash.
fn unescape_mountinfo(field: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt as _;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

fn locked_flags(path: &Path) -> MountFlags {
    let Ok(st) = rustix::fs::statvfs(path) else {
        return MountFlags::NOSUID | MountFlags::NODEV;
    };
    let mut flags = MountFlags::RDONLY;
    for (st_flag, flag) in [
        (rustix::fs::StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (rustix::fs::StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (rustix::fs::StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (rustix::fs::StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (
            rustix::fs::StatVfsMountFlags::NODIRATIME,
            MountFlags::NODIRATIME,
        ),
        (
            rustix::fs::StatVfsMountFlags::RELATIME,
            MountFlags::RELATIME,
        ),
    ] {
        if st.f_flag.contains(st_flag) {
            flags |= flag;
        }
    }
    flags
}

impl ViewPlan {
    /// Lays out the view's steps.
    pub(crate) fn prepare(input: &ViewInput<'_>) -> io::Result<Self> {
        let mut plan = Planner {
            root: input.root.to_path_buf(),
            steps: Vec::new(),
            made: std::collections::HashSet::new(),
        };
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = std::fs::read_link(path)?;
                    plan.steps.push(Step::Symlink {
                        target: cstring(&target)?,
                        link: cstring(&plan.inside(path))?,
                    });
                }
                Ok(meta) if meta.is_dir() => plan.bind_ro(path, path, true)?,
                _ => {}
            }
        }
        let secrets: Vec<PathBuf> = ETC_HIDDEN
            .iter()
            .map(PathBuf::from)
            .chain(ssh_host_keys())
            .collect();
        for path in &secrets {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_file() => plan.bind_ro(input.empty_file, path, false)?,
                Ok(m) if m.is_dir() => plan.cover_dir(input.empty_dir, path)?,
                _ => {}
            }
        }
        // /dev: a few nodes and the usual links.
        let dev = Path::new("/dev");
        plan.mkdirs(dev)?;
        plan.steps.push(Step::Tmpfs {
            at: cstring(&plan.inside(dev))?,
            options: DEV_TMPFS,
        });
        for name in DEVICES {
            let node = dev.join(name);
            if std::fs::metadata(&node).is_ok() {
                let at = plan.inside(&node);
                plan.steps.push(Step::Touch(cstring(&at)?));
                // Read-only: the node still reads and writes, but its mode,
                // owner and times (the host's own node) cannot change.
                plan.steps.push(Step::Bind {
                    from: cstring(&node)?,
                    at: cstring(&at)?,
                    read_only: Some(locked_flags(&node)),
                });
            }
        }
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            plan.steps.push(Step::Symlink {
                target: CString::new(target)?,
                link: cstring(&plan.inside(&dev.join(link)))?,
            });
        }
        let shm = dev.join("shm");
        plan.steps.push(Step::Mkdir(cstring(&plan.inside(&shm))?));
        plan.steps.push(Step::Tmpfs {
            at: cstring(&plan.inside(&shm))?,
            options: SHM_TMPFS,
        });
        let proc_dir = Path::new("/proc");
        plan.mkdirs(proc_dir)?;
        plan.steps
            .push(Step::Proc(cstring(&plan.inside(proc_dir))?));
        // The private /tmp, from GOAT's private temporary directory.
        let tmp = Path::new("/tmp");
        plan.mkdirs(tmp)?;
        plan.steps.push(Step::Bind {
            from: cstring(input.tmpdir)?,
            at: cstring(&plan.inside(tmp))?,
            read_only: None,
        });
        let mut rw_after = vec![CString::new("/dev/shm")?];
        // The scratch home, with the toolchains bound in read-only.
        if let Some(home) = input.home {
            plan.mkdirs(home)?;
            plan.steps.push(Step::Tmpfs {
                at: cstring(&plan.inside(home))?,
                options: HOME_TMPFS,
            });
            rw_after.push(cstring(home)?);
        }
        let mut read_paths: Vec<&PathBuf> = input.read_paths.iter().collect();
        read_paths.sort_by_key(|p| p.components().count());
        for path in read_paths {
            // A granted path that is the workspace or holds it would hide
            // the overlay below it: the workspace is never a read path.
            if input.workspace.starts_with(path) {
                continue;
            }
            if let Ok(meta) = std::fs::metadata(path) {
                plan.bind_ro(path, path, meta.is_dir())?;
            }
        }
        // Package caches granted (under a read path), each an overlay with
        // a discarded upper layer: writable in the view, unchanged outside.
        if let Some(home) = input.home {
            let caches = HOME_CACHES.iter().map(|c| home.join(c)).filter(|cache| {
                cache.is_dir()
                    && input.read_paths.iter().any(|p| cache.starts_with(p))
                    && !input.workspace.starts_with(cache)
                    && !cache.starts_with(input.workspace)
            });
            for (n, cache) in caches.enumerate() {
                let own = input.caches.join(n.to_string());
                let (upper, work) = (own.join("upper"), own.join("work"));
                std::fs::create_dir_all(&upper)?;
                std::fs::create_dir_all(&work)?;
                plan.mkdirs(&cache)?;
                plan.steps.push(Step::Overlay {
                    lower: cstring(&cache)?,
                    upper: cstring(&upper)?,
                    work: cstring(&work)?,
                    at: cstring(&plan.inside(&cache))?,
                    userxattr: input.user_ns == UserNs::New,
                });
                rw_after.push(cstring(&cache)?);
            }
        }
        // The workspace overlay, then what is kept from it.
        plan.mkdirs(input.workspace)?;
        let at = plan.inside(input.workspace);
        match input.workspace_mount {
            WorkspaceMount::Overlay => plan.steps.push(Step::Overlay {
                lower: cstring(input.workspace)?,
                upper: cstring(input.upper)?,
                work: cstring(input.work)?,
                at: cstring(&at)?,
                userxattr: input.user_ns == UserNs::New,
            }),
            WorkspaceMount::Bind { writable } => plan.steps.push(Step::Bind {
                from: cstring(input.workspace)?,
                at: cstring(&at)?,
                read_only: (!writable).then(|| locked_flags(input.workspace)),
            }),
        }
        for rel in input.read_only {
            let path = input.workspace.join(rel);
            plan.steps.push(Step::Bind {
                from: cstring(&path)?,
                at: cstring(&plan.inside(&path))?,
                read_only: Some(locked_flags(&path)),
            });
        }
        // A writable bind: each directory above a hidden path is bound onto
        // itself, so it is a mount point, which cannot be renamed or
        // removed (EBUSY): otherwise moving the directory would carry the
        // hidden file, on the host, to a name no rule covers.
        if input.workspace_mount == (WorkspaceMount::Bind { writable: true }) {
            let mut above: Vec<PathBuf> = input
                .hidden
                .iter()
                .flat_map(|(rel, _)| {
                    rel.ancestors()
                        .skip(1)
                        .filter(|a| !a.as_os_str().is_empty())
                        .map(Path::to_path_buf)
                        .collect::<Vec<_>>()
                })
                .collect();
            above.sort_by(|a, b| {
                (a.components().count(), a.as_path()).cmp(&(b.components().count(), b.as_path()))
            });
            above.dedup();
            for rel in above {
                let path = input.workspace.join(&rel);
                plan.steps.push(Step::Bind {
                    from: cstring(&path)?,
                    at: cstring(&plan.inside(&path))?,
                    read_only: None,
                });
            }
        }
        for (rel, is_dir) in input.hidden {
            let path = input.workspace.join(rel);
            let empty = if *is_dir {
                input.empty_dir
            } else {
                input.empty_file
            };
            plan.steps.push(Step::Bind {
                from: cstring(empty)?,
                at: cstring(&plan.inside(&path))?,
                read_only: Some(locked_flags(empty)),
            });
        }
        plan.steps.push(Step::SealRoot(cstring(input.root)?));
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        // Each maps only its own ids (a process inside a new user namespace
        // may write no wider map); others' files show as `nobody` and,
        // with every capability dropped, are not writable, as for any
        // process without privileges.
        let uid_map = format!("{uid} {uid} 1\n").into_bytes();
        let gid_map = format!("{gid} {gid} 1\n").into_bytes();
        Ok(Self {
            steps: plan.steps,
            root: cstring(input.root)?,
            cwd: cstring(input.cwd)?,
            workspace: cstring(input.workspace)?,
            rw_after,
            proc_dir: CString::new("/proc")?,
            user_ns: input.user_ns,
            uid_map,
            gid_map,
            net: input.net,
        })
    }

    /// The workspace as the command sees it.
    pub(crate) fn workspace(&self) -> &CStr {
        &self.workspace
    }

    /// Places that need a read-write Landlock rule made inside the view.
    pub(crate) fn rw_after(&self) -> &[CString] {
        &self.rw_after
    }

    /// The view's `/proc`.
    pub(crate) fn proc_dir(&self) -> &CStr {
        &self.proc_dir
    }
}

struct Planner {
    root: PathBuf,
    steps: Vec<Step>,
    made: std::collections::HashSet<PathBuf>,
}

impl Planner {
    /// `path` under the new root.
    fn inside(&self, path: &Path) -> PathBuf {
        let rel = path.strip_prefix("/").unwrap_or(path);
        self.root.join(rel)
    }

    /// `mkdir -p` of `path` (a path as the command sees it) in the new root.
    fn mkdirs(&mut self, path: &Path) -> io::Result<()> {
        let mut at = PathBuf::from("/");
        for part in path.strip_prefix("/").unwrap_or(path).components() {
            at.push(part);
            if self.made.insert(at.clone()) {
                let inside = self.inside(&at);
                self.steps.push(Step::Mkdir(cstring(&inside)?));
            }
        }
        Ok(())
    }

    /// An empty read-only directory bound over the existing directory
    /// `at` (inside a read-only bind: its mount point is already there).
    fn cover_dir(&mut self, empty: &Path, at: &Path) -> io::Result<()> {
        self.steps.push(Step::Bind {
            from: cstring(empty)?,
            at: cstring(&self.inside(at))?,
            read_only: Some(locked_flags(empty)),
        });
        Ok(())
    }

    /// A read-only bind of `from` at `at` (as the command sees it).
    fn bind_ro(&mut self, from: &Path, at: &Path, is_dir: bool) -> io::Result<()> {
        if is_dir {
            self.mkdirs(at)?;
            let below = mounts_below(from);
            if !below.is_empty() {
                let inside = self.inside(at);
                let below = below
                    .iter()
                    .filter_map(|mount| {
                        let rel = mount.strip_prefix(from).ok()?;
                        Some(cstring(&inside.join(rel)).map(|c| (c, locked_flags(mount))))
                    })
                    .collect::<io::Result<Vec<_>>>()?;
                self.steps.push(Step::BindTree {
                    from: cstring(from)?,
                    at: cstring(&inside)?,
                    read_only: locked_flags(from),
                    below,
                });
                return Ok(());
            }
        } else {
            if let Some(parent) = at.parent() {
                self.mkdirs(parent)?;
            }
            self.steps.push(Step::Touch(cstring(&self.inside(at))?));
        }
        self.steps.push(Step::Bind {
            from: cstring(from)?,
            at: cstring(&self.inside(at))?,
            read_only: Some(locked_flags(from)),
        });
        Ok(())
    }
}

/// In the first child: the new namespaces and the id maps. System calls
/// only.
pub(crate) fn unshare(plan: &ViewPlan) -> io::Result<()> {
    use rustix::thread::UnshareFlags;
    let mut flags = UnshareFlags::NEWNS | UnshareFlags::NEWPID | UnshareFlags::NEWIPC;
    if plan.user_ns == UserNs::New {
        flags |= UnshareFlags::NEWUSER;
    }
    if plan.net != ViewNet::Host {
        flags |= UnshareFlags::NEWNET;
    }
    #[expect(
        unsafe_code,
        reason = "unshare in the forked child; no descriptor table is unshared"
    )]
    // SAFETY: `FILES` is not among the flags, so no thread can observe a
    // descriptor table it does not share; the child has one thread.
    unsafe {
        rustix::thread::unshare_unsafe(flags)?;
    }
    if plan.user_ns == UserNs::New {
        write_file(c"/proc/self/setgroups", b"deny\n")?;
        write_file(c"/proc/self/uid_map", &plan.uid_map)?;
        write_file(c"/proc/self/gid_map", &plan.gid_map)?;
    }
    if let ViewNet::Proxy { port, channel } = plan.net {
        crate::net::listen_in_view(port, channel)?;
    }
    Ok(())
}

pub(crate) fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let n = rustix::io::write(&fd, bytes)?;
    if n != bytes.len() {
        return Err(io::Error::from(io::ErrorKind::WriteZero));
    }
    Ok(())
}
