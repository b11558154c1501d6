//! Whether and how commands can be contained here: the kernel's support,
//! probed once per process, and a trial view per workspace mount.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::{Pid, PidfdFlags};

use crate::fs::{self, WorkspaceRules};
use crate::layer::Layer;
use crate::net::NetRules;
use crate::run::{
    Changes, CommandRequest, Containment, ContainmentMode, Exit, Network, PidsCgroup, Unsupported,
    Used, layer_base, run_namespace,
};
use crate::seccomp;

/// Whether commands can be contained here at all (Landlock, seccomp,
/// pidfd); checked once per process.
pub fn support() -> Result<(), Unsupported> {
    static SUPPORT: OnceLock<Result<(), Unsupported>> = OnceLock::new();
    SUPPORT
        .get_or_init(|| {
            fs::probe().map_err(Unsupported)?;
            seccomp::program(NetRules::Closed, seccomp::Inbound::HostNetwork)
                .map_err(|why| Unsupported(format!("the seccomp filter cannot be built: {why}")))?;
            let me = Pid::from_raw(std::process::id().cast_signed())
                .ok_or_else(|| Unsupported("no process id".to_owned()))?;
            rustix::process::pidfd_open(me, PidfdFlags::empty()).map_err(|e| {
                Unsupported(format!("pidfd_open (Linux 5.3) is not available: {e}"))
            })?;
            Ok(())
        })
        .clone()
}

/// Whether a view can be made here: a trial command in one, run once per
/// process (a user namespace, the mounts, overlayfs and the fresh `/proc`
/// all have to work), its layer in the system's temporary directory.
/// Whether a given workspace can have one is [`workspace_support`].
pub fn namespace_support() -> Result<(), Unsupported> {
    static SUPPORT: OnceLock<Result<(), Unsupported>> = OnceLock::new();
    SUPPORT
        .get_or_init(|| {
            support()?;
            trial_in(&std::env::temp_dir()).map_err(|why| {
                Unsupported(format!(
                    "a namespace view cannot be made here (it needs a user namespace, overlayfs \
                     in it and a fresh /proc; in a container, docs/harness.md says which \
                     settings give them): {why}"
                ))
            })
        })
        .clone()
}

/// Whether `containment`'s workspace can have a view: a place for the
/// command's layer on the workspace's own mount, and overlayfs working
/// with its upper layer there (it does not on overlayfs, the root of most
/// containers). A trial command in a directory of that mount, once per
/// mount and process.
pub fn workspace_support(containment: &Containment) -> Result<(), Unsupported> {
    /// A workspace's mount and layers directory, and what its trial found.
    type Tried = (Option<u64>, PathBuf, Result<(), Unsupported>);
    static TRIED: std::sync::Mutex<Vec<Tried>> = std::sync::Mutex::new(Vec::new());
    namespace_support()?;
    let key = (
        mount_id(&containment.workspace),
        containment.layers_dir.clone().unwrap_or_default(),
    );
    let mut tried = TRIED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, _, result)) = tried.iter().find(|(m, l, _)| (m, l) == (&key.0, &key.1)) {
        return result.clone();
    }
    let result = layer_base(containment)
        .map_err(|e| e.to_string())
        .and_then(|base| trial_in(&base))
        .map_err(|why| {
            Unsupported(format!(
                "no namespace view for the workspace {}: {why}",
                containment.workspace.display()
            ))
        });
    tried.push((key.0, key.1, result.clone()));
    result
}

/// A trial command in a view whose workspace and layer are in `base`.
fn trial_in(base: &Path) -> Result<(), String> {
    let ws = Layer::create(base).map_err(|e| e.to_string())?;
    let workspace = ws.dir.join("tmp");
    let containment = Containment {
        workspace: workspace.clone(),
        read_paths: Vec::new(),
        network: Network::Closed,
        env: Vec::new(),
        pids_cgroup: PidsCgroup::Never,
        mode: ContainmentMode::Namespace,
        home: None,
        layers_dir: Some(base.to_path_buf()),
    };
    let out = run_namespace(
        &containment,
        &NoRules,
        &CommandRequest {
            command: "echo ok > probe",
            cwd: None,
            timeout: Duration::from_secs(10),
            proxy: None,
            interrupt: None,
            stdin: None,
            stdout_apart: false,
        },
    )
    .map_err(|e| e.to_string())?;
    match (&out.exit, &out.changes) {
        (Exit::Code(0), Changes::Pending(p)) if p.set.changes.iter().any(|c| c.path == "probe") => {
            Ok(())
        }
        _ => Err(format!("a trial command failed: {}", out.render().trim())),
    }
}

/// The mount a path is on (`statx` `STATX_MNT_ID`); `None` where the
/// kernel does not say.
pub(crate) fn mount_id(path: &Path) -> Option<u64> {
    use rustix::fs::{AtFlags, StatxFlags};
    let st = rustix::fs::statx(rustix::fs::CWD, path, AtFlags::empty(), StatxFlags::MNT_ID).ok()?;
    StatxFlags::from_bits_retain(st.stx_mask)
        .contains(StatxFlags::MNT_ID)
        .then_some(st.stx_mnt_id)
}

/// The rules of the support trial: nothing hidden or protected.
struct NoRules;

impl WorkspaceRules for NoRules {
    fn visible(&self, _: &str) -> bool {
        true
    }
    fn writable_why(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn governs_below(&self, _: &str) -> bool {
        false
    }
    fn is_protected_name(&self, _: &str) -> bool {
        false
    }
}

/// Which containment `containment` gets for its workspace: as
/// [`resolve_mode`], and a view only where [`workspace_support`] says its
/// workspace can have one.
pub fn resolve(containment: &Containment) -> Result<Used, Unsupported> {
    support()?;
    match containment.mode {
        ContainmentMode::Landlock => Ok(Used::Landlock),
        ContainmentMode::Namespace => workspace_support(containment).map(|()| Used::Namespace),
        ContainmentMode::Auto => Ok(if workspace_support(containment).is_ok() {
            Used::Namespace
        } else {
            Used::Landlock
        }),
    }
}

/// The mechanism `mode` comes to here, for any workspace: `Auto` takes
/// the view where it works; a forced mode that cannot work is an error,
/// never a weaker run. [`resolve`] also asks the workspace.
pub fn resolve_mode(mode: ContainmentMode) -> Result<Used, Unsupported> {
    support()?;
    match mode {
        ContainmentMode::Landlock => Ok(Used::Landlock),
        ContainmentMode::Namespace => namespace_support().map(|()| Used::Namespace),
        ContainmentMode::Auto => Ok(if namespace_support().is_ok() {
            Used::Namespace
        } else {
            Used::Landlock
        }),
    }
}
