//! The command's filesystem, as a Landlock ruleset built in GOAT before
//! the fork and enforced in the child.
//!
//! Landlock only grants: a right given on a directory holds for everything
//! beneath it, and nothing can take it back lower down. So "the workspace
//! writable except `.git`" cannot be one rule on the workspace. Instead the
//! workspace is walked (ADR-0070):
//!
//! - a directory with nothing below it that the rules or the protected names
//!   treat differently gets one rule for all of it (read-write, read-only, or
//!   none when hidden);
//! - a directory with something different below it gets only the right to
//!   list it, and each of its entries is granted on its own, recursively.
//!
//! So a protected or denied path is never under a grant wider than its own.
//! The cost, said plainly: nothing can be created, removed or renamed
//! *directly* in a directory that holds such a path (in a git repository,
//! the workspace root), because creating there would be a right on the whole
//! directory, `.git` included. Existing files there stay writable.
//!
//! # Security
//!
//! Entries are opened relative to their parent's descriptor with
//! `O_NOFOLLOW`, and symbolic links get no rule of their own: what a link
//! reaches is governed by the rules on its target, so a link to `~/.ssh`
//! grants nothing.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};
use rustix::fs::{FileType, Mode, OFlags};

use crate::limits::MAX_WALK_ENTRIES;
use crate::net::NetRules;
use crate::run::CommandError;

/// The Landlock ABI the containment is written for: 6 (Linux 6.12) brings
/// the signal and abstract-socket scopes, without which a command could
/// kill GOAT or reach a session bus; 4 brings the TCP rules, 3 truncation.
pub const REQUIRED_ABI: ABI = ABI::V6;

/// The permission rules, as the command's filesystem needs them: asked
/// about workspace paths (relative, `/` between components, `.` for the
/// root), never about names a model wrote.
pub trait WorkspaceRules: Send + Sync {
    /// Whether the path may be read at all.
    fn visible(&self, path: &str) -> bool;
    /// Whether the path may be created, changed, renamed or removed, and
    /// if not, why (in words for the model).
    fn writable_why(&self, path: &str) -> Result<(), String>;
    /// Whether the path may be created, changed, renamed or removed.
    fn writable(&self, path: &str) -> bool {
        self.writable_why(path).is_ok()
    }
    /// Whether any path could be hidden.
    fn hides_anything(&self) -> bool {
        true
    }
    /// Whether a rule could treat something strictly below the directory
    /// differently from the directory itself.
    fn governs_below(&self, dir: &str) -> bool;
    /// Whether a directory of this name is protected wherever it is
    /// (version-control metadata).
    fn is_protected_name(&self, name: &str) -> bool;
}

/// System locations every build reads: programs, libraries, headers,
/// configuration. Read and executed, never written.
pub const SYSTEM_READ_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// The system-wide files of `/proc` programs read to size themselves
/// (`nproc`, `free`, build tools choosing a job count). Never `/proc`
/// itself: `/proc/PID/environ` of GOAT, or of the shell that started it,
/// holds the API keys, and Landlock's ptrace restriction was seen not to
/// keep a command from reading it (Linux 6.18, GOAT as root). So
/// `/proc/self` is not readable either.
pub const PROC_READ_FILES: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
];

/// Device nodes a build reads and writes (`> /dev/null`).
pub const DEVICES_READ_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// Device nodes read for randomness.
pub const DEVICES_READ: &[&str] = &["/dev/urandom", "/dev/random"];

/// Toolchain directories under the home directory, readable (and
/// executable) by default: where rustup, cargo, npm, pip, pyenv, asdf,
/// mise, conda, nvm, volta, bun, deno, sdkman and Go keep compilers and
/// downloaded packages. Only the parts of `~/.cargo` a build reads are
/// named (`bin`, `registry`, `git`), never `credentials.toml`; everything
/// else in the home directory (`~/.ssh`, `~/.aws`, GOAT's own store) stays
/// unreadable.
pub const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".npm",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".sdkman",
    ".asdf",
    ".local/share/mise",
    ".pyenv",
    ".conda",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    ".cache/pip",
    ".local/bin",
    ".local/lib",
    "go",
];

/// Directories under the home directory that hold far more than a
/// toolchain: a `PATH` entry in them is granted alone, never widened.
const GENERAL_PLACES: &[&str] = &[".local", ".config", ".cache", "bin", "snap"];

/// [`HOME_TOOLCHAINS`] under `home`, and the toolchains the command's
/// `PATH` points into there: each `PATH` entry under the home directory,
/// and for one ending in `bin` or `shims` (pyenv, asdf, mise, volta), the
/// directory above it, where the tool keeps its versions.
pub fn default_read_paths(home: &Path) -> Vec<PathBuf> {
    read_paths_for(home, std::env::var_os("PATH").as_deref())
}

/// [`default_read_paths`] for a given `PATH`.
fn read_paths_for(home: &Path, path: Option<&std::ffi::OsStr>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = HOME_TOOLCHAINS.iter().map(|p| home.join(p)).collect();
    if let Some(path) = path {
        for entry in std::env::split_paths(path) {
            let Ok(rel) = entry.strip_prefix(home) else {
                continue;
            };
            if rel.as_os_str().is_empty() || rel.starts_with(".cargo") {
                continue;
            }
            if paths.iter().any(|p| entry.starts_with(p)) {
                continue;
            }
            // A version manager keeps its versions beside its `bin` or
            // `shims`; never widened to the home directory itself or to a
            // general place such as `~/.local` (which holds GOAT's own
            // state and others' secrets).
            let parent = entry.parent().map(Path::to_path_buf);
            let dir = match (entry.file_name().and_then(|n| n.to_str()), parent) {
                (Some("bin" | "shims"), Some(parent))
                    if parent != home && !GENERAL_PLACES.iter().any(|g| parent == home.join(g)) =>
                {
                    parent
                }
                _ => entry.clone(),
            };
            if dir != home && !paths.iter().any(|p| dir.starts_with(p)) {
                paths.push(dir);
            }
        }
    }
    paths
}

/// Whether the kernel can enforce the containment, by making (and
/// dropping) the ruleset it needs.
pub(crate) fn probe() -> Result<(), String> {
    base_ruleset(NetRules::Closed)
        .and_then(|r| r.create().map_err(|e| e.to_string()))
        .map(drop)
        .map_err(|why| {
            format!(
                "the kernel cannot enforce the command sandbox (Landlock ABI {} or later, Linux \
                 6.12, is needed, with TCP rules and scopes): {why}",
                REQUIRED_ABI as i32
            )
        })
}

fn base_ruleset(network: NetRules) -> Result<Ruleset, String> {
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(REQUIRED_ABI))
        .map_err(|e| e.to_string())?;
    let ruleset = match network {
        // Handled: every TCP bind and connect is refused but the one
        // connect a rule allows (the proxy's port, added once created).
        NetRules::Closed | NetRules::ConnectPort(_) => ruleset
            .handle_access(AccessNet::from_all(REQUIRED_ABI))
            .map_err(|e| e.to_string())?,
        NetRules::Open => ruleset,
    };
    ruleset
        .scope(Scope::from_all(REQUIRED_ABI))
        .map_err(|e| e.to_string())
}

/// The ruleset of a view, with the rules that hold across its bind mounts
/// (their inodes are the host's): system paths and toolchains readable,
/// the private `/tmp` writable, the device nodes. The workspace overlay,
/// the scratch home, `/dev/shm` and `/proc` are added inside the view
/// ([`add_inside`]).
pub(crate) fn view_ruleset(
    read_paths: &[PathBuf],
    tmpdir: &Path,
    network: NetRules,
) -> Result<RulesetCreated, CommandError> {
    host_grants(
        network,
        &[
            (SYSTEM_READ_PATHS, Grant::Read),
            (DEVICES_READ, Grant::Read),
            (DEVICES_READ_WRITE, Grant::ReadWrite),
            (&["/dev/tty"], Grant::ReadWrite),
        ],
        read_paths,
        tmpdir,
    )
}

/// One rule for a path, with the rights `grant` gives it.
fn add_rule(
    created: RulesetCreated,
    fd: &dyn AsFd,
    grant: Grant,
    is_dir: bool,
) -> Result<RulesetCreated, CommandError> {
    created
        .add_rule(PathBeneath::new(fd.as_fd(), rights(grant, is_dir)))
        .map_err(|e| CommandError::Containment(e.to_string()))
}

/// A ruleset with the host's grants both containments share: the host
/// paths in `groups` (where they exist), the toolchains readable, the
/// private temporary directory writable.
fn host_grants(
    network: NetRules,
    groups: &[(&[&str], Grant)],
    read_paths: &[PathBuf],
    tmpdir: &Path,
) -> Result<RulesetCreated, CommandError> {
    let failed = |why: String| CommandError::Containment(why);
    let mut created = base_ruleset(network)
        .map_err(failed)?
        .create()
        .map_err(|e| failed(e.to_string()))?;
    if let NetRules::ConnectPort(port) = network {
        // One port, on every address: Landlock's network rules know no
        // address (ADR-0082 says what holds the rest).
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| failed(e.to_string()))?;
    }
    let mut add = add_rule;
    for (paths, grant) in groups {
        for path in *paths {
            created = add_existing(created, Path::new(path), *grant, &mut add)?;
        }
    }
    for path in read_paths {
        created = add_existing(created, path, Grant::Read, &mut add)?;
    }
    add_existing(created, tmpdir, Grant::ReadWrite, &mut add)
}

/// What a place made inside a view is granted.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Inside {
    /// The workspace overlay: everything but making device nodes and
    /// device ioctls.
    Workspace,
    /// A scratch `tmpfs`: everything.
    ReadWrite,
    /// Read only (`/proc`).
    Read,
}

/// Adds a rule for `path` as the view shows it. Called in the child,
/// after the mounts: system calls only on the success path.
pub(crate) fn add_inside(
    created: RulesetCreated,
    path: &std::ffi::CStr,
    inside: Inside,
) -> std::io::Result<RulesetCreated> {
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?;
    let access = match inside {
        Inside::Workspace => {
            AccessFs::from_all(REQUIRED_ABI)
                & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
        }
        Inside::ReadWrite => AccessFs::from_all(REQUIRED_ABI),
        Inside::Read => AccessFs::from_read(REQUIRED_ABI),
    };
    created
        .add_rule(PathBeneath::new(fd.as_fd(), access))
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::PermissionDenied))
}

/// What the command may do beneath one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grant {
    /// Read and execute.
    Read,
    /// Everything, creating and removing included.
    ReadWrite,
    /// Only list the directory (its entries are granted one by one).
    ListOnly,
}

fn rights(grant: Grant, is_dir: bool) -> BitFlags<AccessFs> {
    let all = match grant {
        Grant::Read => AccessFs::from_read(REQUIRED_ABI),
        Grant::ReadWrite => AccessFs::from_all(REQUIRED_ABI),
        Grant::ListOnly => AccessFs::ReadDir.into(),
    };
    if is_dir {
        all
    } else {
        // A rule on a file may only carry file rights.
        all & AccessFs::from_file(REQUIRED_ABI)
    }
}

/// Where the command's filesystem comes from.
pub(crate) struct FsPlan<'a> {
    pub workspace: &'a Path,
    pub tmpdir: &'a Path,
    pub read_paths: &'a [PathBuf],
    pub rules: &'a dyn WorkspaceRules,
    pub network: NetRules,
}

/// The ruleset for one command, ready for `restrict_self` in the child.
pub(crate) fn ruleset(plan: &FsPlan<'_>) -> Result<RulesetCreated, CommandError> {
    let failed = |why: String| CommandError::Containment(why);
    let mut created = host_grants(
        plan.network,
        &[
            (SYSTEM_READ_PATHS, Grant::Read),
            (PROC_READ_FILES, Grant::Read),
            (DEVICES_READ, Grant::Read),
            (DEVICES_READ_WRITE, Grant::ReadWrite),
        ],
        plan.read_paths,
        plan.tmpdir,
    )?;
    let mut add = add_rule;

    let root = rustix::fs::open(
        plan.workspace,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        failed(format!(
            "cannot open the workspace {}: {e}",
            plan.workspace.display()
        ))
    })?;
    let mut split = HashSet::new();
    let mut budget = MAX_WALK_ENTRIES;
    // Landlock judges a path, not the file: a visible name of a file a
    // rule hides (a hard link) is granted nothing, as a view covers it.
    let linked = if plan.rules.hides_anything() {
        crate::special::special_paths(plan.workspace, plan.rules)?
            .1
            .into_iter()
            .filter_map(|(path, _)| path.to_str().map(str::to_owned))
            .filter(|rel| plan.rules.visible(rel))
            .collect()
    } else {
        HashSet::new()
    };
    let rules = HidingLinks {
        inner: plan.rules,
        linked,
    };
    if rules.visible(".") {
        mark_split(plan.workspace, ".", &rules, &mut split, &mut budget)?;
        created = grant_dir(created, &root, ".", &rules, &split, &mut add)?;
    }
    Ok(created)
}

/// The rules, with the other names of hidden files hidden too.
struct HidingLinks<'a> {
    inner: &'a dyn WorkspaceRules,
    /// Visible names of files a rule hides (workspace-relative).
    linked: HashSet<String>,
}

impl WorkspaceRules for HidingLinks<'_> {
    fn visible(&self, path: &str) -> bool {
        !self.linked.contains(path) && self.inner.visible(path)
    }

    fn writable_why(&self, path: &str) -> Result<(), String> {
        if self.linked.contains(path) {
            return Err("it is another name (a hard link) of a file a rule hides".to_owned());
        }
        self.inner.writable_why(path)
    }

    fn hides_anything(&self) -> bool {
        self.inner.hides_anything()
    }

    fn governs_below(&self, dir: &str) -> bool {
        self.inner.governs_below(dir)
            || self
                .linked
                .iter()
                .any(|name| dir == "." || name.starts_with(&format!("{dir}/")))
    }

    fn is_protected_name(&self, name: &str) -> bool {
        self.inner.is_protected_name(name)
    }
}

type AddRule<'f> =
    dyn FnMut(RulesetCreated, &dyn AsFd, Grant, bool) -> Result<RulesetCreated, CommandError> + 'f;

/// Adds a grant on a host path that may not exist (a missing `/lib32` or
/// `~/.npm` grants nothing). Host paths may be links (`/bin` to `usr/bin`):
/// they are the host's, not the workspace's, and are followed.
fn add_existing(
    created: RulesetCreated,
    path: &Path,
    grant: Grant,
    add: &mut AddRule<'_>,
) -> Result<RulesetCreated, CommandError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(created);
    };
    match PathFd::new(path) {
        Ok(fd) => add(created, &fd, grant, meta.is_dir()),
        Err(_) => Ok(created),
    }
}

fn join(rel: &str, name: &str) -> String {
    if rel == "." {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}

/// The grant a path's own rules give it; `None` when it is hidden.
fn grant_of(rules: &dyn WorkspaceRules, rel: &str) -> Option<Grant> {
    if !rules.visible(rel) {
        None
    } else if rules.writable(rel) {
        Some(Grant::ReadWrite)
    } else {
        Some(Grant::Read)
    }
}

/// First pass: which directories hold something treated differently from
/// themselves. Returns whether `rel` is one (and records it in `split`).
fn mark_split(
    dir: &Path,
    rel: &str,
    rules: &dyn WorkspaceRules,
    split: &mut HashSet<String>,
    budget: &mut usize,
) -> Result<bool, CommandError> {
    let own = grant_of(rules, rel);
    let mut differs = rules.governs_below(rel);
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CommandError::Containment(format!("cannot list {}: {e}", dir.display())))?;
    for entry in entries {
        let entry = entry.map_err(|e| {
            CommandError::Containment(format!("cannot list {}: {e}", dir.display()))
        })?;
        *budget = budget.checked_sub(1).ok_or_else(|| {
            CommandError::Containment(format!(
                "the workspace has more than {MAX_WALK_ENTRIES} entries; the command sandbox \
                 does not place its protected paths in a workspace that large"
            ))
        })?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            // A name the rules cannot be asked about: treat its directory
            // as holding something different, so it is granted on its own.
            differs = true;
            continue;
        };
        let child = join(rel, &name);
        let kind = entry.file_type().map_err(|e| {
            CommandError::Containment(format!("cannot inspect {}: {e}", entry.path().display()))
        })?;
        if kind.is_symlink() {
            continue;
        }
        if grant_of(rules, &child) != own || (kind.is_dir() && rules.is_protected_name(&name)) {
            differs = true;
        }
        if kind.is_dir()
            && grant_of(rules, &child).is_some()
            && mark_split(&entry.path(), &child, rules, split, budget)?
        {
            differs = true;
        }
    }
    if differs {
        split.insert(rel.to_owned());
    }
    Ok(differs)
}

/// Second pass: the rules, opening each entry beneath its parent's
/// descriptor without following links.
fn grant_dir(
    mut created: RulesetCreated,
    dir: &OwnedFd,
    rel: &str,
    rules: &dyn WorkspaceRules,
    split: &HashSet<String>,
    add: &mut AddRule<'_>,
) -> Result<RulesetCreated, CommandError> {
    let Some(own) = grant_of(rules, rel) else {
        return Ok(created);
    };
    if !split.contains(rel) {
        return add(created, dir, own, true);
    }
    created = add(created, dir, Grant::ListOnly, true)?;
    let listing = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| CommandError::Containment(format!("cannot list workspace path {rel}: {e}")))?;
    let mut names = Vec::new();
    let reader = rustix::fs::Dir::read_from(&listing)
        .map_err(|e| CommandError::Containment(format!("cannot list workspace path {rel}: {e}")))?;
    for entry in reader {
        let entry = entry.map_err(|e| {
            CommandError::Containment(format!("cannot list workspace path {rel}: {e}"))
        })?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    for name in names {
        let Some(text) = OsStr::from_bytes(&name).to_str() else {
            // Not UTF-8: no rule can name it, and it gets no grant.
            continue;
        };
        let child_rel = join(rel, text);
        let Some(grant) = grant_of(rules, &child_rel) else {
            continue;
        };
        let Ok(fd) = rustix::fs::openat(
            dir,
            name.as_slice(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        let kind = rustix::fs::fstat(&fd)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .map_err(|e| CommandError::Containment(format!("cannot inspect {child_rel}: {e}")))?;
        match kind {
            FileType::Symlink => {}
            FileType::Directory => {
                created = grant_dir(created, &fd, &child_rel, rules, split, add)?;
            }
            _ => created = add(created, &fd, grant, false)?,
        }
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_entries_grant_their_toolchain_never_a_general_place() {
        let home = Path::new("/home/u");
        let path = std::ffi::OsString::from(
            "/home/u/.local/bin:/home/u/.asdf/shims:/home/u/bin:/home/u/.pyenv/shims:/usr/bin:\
             /home/u/tools/zig/bin:/home/u",
        );
        let got = read_paths_for(home, Some(&path));
        // ~/.local/bin is granted as it is (already), never ~/.local.
        assert!(!got.contains(&PathBuf::from("/home/u/.local")), "{got:?}");
        assert!(
            got.contains(&PathBuf::from("/home/u/.local/bin")),
            "{got:?}"
        );
        assert!(got.contains(&PathBuf::from("/home/u/.asdf")), "{got:?}");
        // ~/bin alone, not the home directory; the home itself never.
        assert!(got.contains(&PathBuf::from("/home/u/bin")), "{got:?}");
        assert!(!got.contains(&PathBuf::from("/home/u")), "{got:?}");
        // A toolchain of its own kept beside its bin.
        assert!(got.contains(&PathBuf::from("/home/u/tools/zig")), "{got:?}");
        // Cargo's credentials never: only its bin, registry and git.
        assert!(!got.contains(&PathBuf::from("/home/u/.cargo")), "{got:?}");
    }
}
