//! The namespace launch, written once (issue 36): a view (ADR-0077)
//! prepared in GOAT, and entered in the child between `fork` and `exec`,
//! for a command (the workspace overlaid, [`crate::run`]) and for an MCP
//! server (the workspace bound, [`crate::server`]).
//!
//! Everything that allocates or can fail in interesting ways is done by
//! [`ViewLaunch::prepare`], before the fork: the layer, the view's plan,
//! the Landlock ruleset, the seccomp program, the pids cgroup, the proxy's
//! channel. [`ViewLaunch::install`] gives the child only system calls:
//! `setsid` and the cgroup, the namespaces, the second fork (so that the
//! command is PID 1 of its own PID namespace), the view's mounts, Landlock
//! on what the view made, every capability dropped, seccomp, and `exec`.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use rustix::process::Signal;

use crate::child::{
    cloexec_above_stdio, first_steps, install_pre_exec, pids_group, user_namespaces_work,
    wait_and_exit,
};
use crate::fs::{self, WorkspaceRules};
use crate::layer::Layer;
use crate::net::{self, NetRules, ProxyLink};
use crate::pids::PidsGroup;
use crate::progress::{Progress, Stage};
use crate::run::{
    CommandError, Containment, Network, layer_base, lock_down, refused_at, scratch_base,
};
use crate::seccomp;
use crate::special::special_paths;
use crate::view::{self, UserNs, ViewInput, ViewNet, ViewPlan, WorkspaceMount};

/// What is launched in the view, and how its workspace is given to it.
pub(crate) struct Launched<'a> {
    /// "command" or "server", for what is said when something fails.
    pub(crate) what: &'static str,
    /// Its working directory, inside the workspace.
    pub(crate) cwd: &'a Path,
    /// The workspace overlaid (a command: its changes are a change set),
    /// or bound (a server: read-only unless `writable`).
    pub(crate) mount: WorkspaceMount,
    /// The proxy that serves it, for [`Network::Proxied`].
    pub(crate) proxy: Option<&'a dyn ProxyLink>,
}

/// A view prepared for one process, not yet entered.
pub(crate) struct ViewLaunch<'a> {
    /// Its upper layer, root, `/tmp` and caches.
    pub(crate) layer: Layer,
    /// Its pids cgroup, where one could be made.
    pub(crate) pids: Option<(PidsGroup, OwnedFd)>,
    /// How far the child got, for naming a refused step.
    progress: Arc<Progress>,
    step_names: Vec<String>,
    /// The proxy and the channel its listener comes back over.
    link: Option<(&'a dyn ProxyLink, (OwnedFd, OwnedFd))>,
    /// What the child applies, moved into it by [`ViewLaunch::install`].
    child: Option<ChildParts>,
}

/// What the child needs, made before the fork.
struct ChildParts {
    plan: ViewPlan,
    ruleset: landlock::RulesetCreated,
    program: seccompiler::BpfProgram,
    join_fd: Option<RawFd>,
    workspace_access: fs::Inside,
}

impl<'a> ViewLaunch<'a> {
    /// Prepares the view for `launched` in `containment`, with what the
    /// permission `rules` hide or keep read-only covered.
    ///
    /// # Security
    ///
    /// Fails closed: any part that cannot be prepared is an error, and
    /// nothing is started.
    pub(crate) fn prepare(
        containment: &Containment,
        rules: &dyn WorkspaceRules,
        launched: &Launched<'a>,
    ) -> Result<Self, CommandError> {
        let what = launched.what;
        let failed =
            |doing: String, e: io::Error| CommandError::Containment(format!("{doing}: {e}"));
        // A bound workspace needs no change layer beside it: the view's
        // scratch parts may be anywhere GOAT may write.
        let base = match launched.mount {
            WorkspaceMount::Overlay => layer_base(containment)?,
            WorkspaceMount::Bind { .. } => scratch_base(containment)?,
        };
        let layer = Layer::create(&base)
            .map_err(|e| failed(format!("cannot make the {what}'s layer"), e))?;
        let (read_only, hidden) = special_paths(&containment.workspace, rules)?;
        let user_ns = if rustix::process::geteuid().is_root() && !user_namespaces_work() {
            UserNs::None
        } else {
            UserNs::New
        };
        let mut layer = layer;
        layer.opaque = crate::layer::opaque_xattr(user_ns == UserNs::New);
        // Proxied: the view's first child makes the proxy's listener in the
        // view's own network namespace and sends it back over this pair.
        let (view_net, net_rules, link) = match containment.network {
            Network::Closed => (ViewNet::Empty, NetRules::Closed, None),
            Network::Open => (ViewNet::Host, NetRules::Open, None),
            Network::Proxied => {
                let link = launched.proxy.ok_or_else(|| {
                    CommandError::Containment(format!(
                        "the network is to go through GOAT's proxy, and there is none for this \
                         {what}"
                    ))
                })?;
                let pair = net::channel()
                    .map_err(|e| CommandError::Containment(format!("the proxy's channel: {e}")))?;
                let view_net = ViewNet::Proxy {
                    port: net::VIEW_PROXY_PORT,
                    channel: pair.1.as_raw_fd(),
                };
                (
                    view_net,
                    NetRules::ConnectPort(net::VIEW_PROXY_PORT),
                    Some((link, pair)),
                )
            }
        };
        let workspace_access = match launched.mount {
            WorkspaceMount::Overlay | WorkspaceMount::Bind { writable: true } => {
                fs::Inside::Workspace
            }
            WorkspaceMount::Bind { writable: false } => fs::Inside::Read,
        };
        let plan = ViewPlan::prepare(&ViewInput {
            workspace: &containment.workspace,
            cwd: launched.cwd,
            upper: &layer.upper(),
            work: &layer.dir.join("work"),
            root: &layer.dir.join("root"),
            tmpdir: &layer.dir.join("tmp"),
            home: containment.home.as_deref(),
            read_paths: &containment.read_paths,
            read_only: &read_only,
            hidden: &hidden,
            empty_file: &layer.dir.join("empty"),
            empty_dir: &layer.dir.join("emptydir"),
            caches: &layer.dir.join("caches"),
            user_ns,
            net: view_net,
            workspace_mount: launched.mount,
        })
        .map_err(|e| failed(format!("cannot plan the {what}'s view"), e))?;
        // The rules made before the fork hold for bound paths (a bind mount
        // keeps its inodes); the overlay, the scratch home and /proc are
        // new and get theirs inside.
        let ruleset = fs::view_ruleset(&containment.read_paths, &layer.dir.join("tmp"), net_rules)?;
        let program = seccomp::program(net_rules, seccomp::Inbound::OwnNamespace)
            .map_err(CommandError::Containment)?;
        let pids = pids_group(containment)?;
        let join_fd = pids.as_ref().map(|(_, fd)| fd.as_raw_fd());
        let progress = Arc::new(Progress::new().map_err(|e| {
            CommandError::Containment(format!("cannot map the view's progress page: {e}"))
        })?);
        let step_names = plan.step_names();
        Ok(Self {
            layer,
            pids,
            progress,
            step_names,
            link,
            child: Some(ChildParts {
                plan,
                ruleset,
                program,
                join_fd,
                workspace_access,
            }),
        })
    }

    /// Whether it reaches the network through GOAT's proxy (its
    /// environment then names the proxy).
    pub(crate) fn proxied(&self) -> bool {
        self.link.is_some()
    }

    /// Makes `command` enter the view when spawned: between its `fork` and
    /// its `exec`, system calls only.
    pub(crate) fn install(&mut self, command: &mut Command) -> Result<(), CommandError> {
        let ChildParts {
            plan,
            ruleset,
            program,
            join_fd,
            workspace_access,
        } = self.child.take().ok_or_else(|| {
            CommandError::Containment("the view was already given to a process".to_owned())
        })?;
        let mut ruleset = Some(ruleset);
        let progress = Arc::clone(&self.progress);
        install_pre_exec(command, move || -> io::Result<()> {
            let progress = &progress;
            progress.mark(Stage::FirstSteps);
            first_steps(join_fd)?;
            progress.mark(Stage::Namespaces);
            view::unshare(&plan)?;
            progress.mark(Stage::Fork);
            #[expect(unsafe_code, reason = "the second fork, in the forked child")]
            // SAFETY: the first child has one thread; the second child makes
            // system calls only until it execs, as the first would have.
            let second = unsafe { libc::fork() };
            if second < 0 {
                return Err(io::Error::last_os_error());
            }
            if second > 0 {
                wait_and_exit(second);
            }
            // PID 1 of the new namespace.
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            cloexec_above_stdio()?;
            view::build(&plan, progress)?;
            progress.mark(Stage::Landlock);
            let mut ruleset = ruleset
                .take()
                .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
            ruleset = fs::add_inside(ruleset, plan.workspace(), workspace_access)?;
            for path in plan.rw_after() {
                ruleset = fs::add_inside(ruleset, path, fs::Inside::ReadWrite)?;
            }
            ruleset = fs::add_inside(ruleset, plan.proc_dir(), fs::Inside::Read)?;
            lock_down(ruleset, &program, progress)
        });
        Ok(())
    }

    /// A spawn that failed before `exec`, with the refused step named.
    pub(crate) fn refused(&self, error: CommandError) -> CommandError {
        refused_at(error, &self.progress, &self.step_names)
    }

    /// The proxy's side of the launch, to serve once the process is
    /// spawned.
    pub(crate) fn take_proxy(&mut self) -> PendingProxy<'a> {
        PendingProxy(self.link.take())
    }
}

/// A proxy waiting for the listener the view makes.
pub(crate) struct PendingProxy<'a>(Option<(&'a dyn ProxyLink, (OwnedFd, OwnedFd))>);

impl PendingProxy<'_> {
    /// Once spawned: takes the listener the view made and lets the proxy
    /// serve it (for as long as the link lives); nothing to do unproxied.
    pub(crate) fn serve(&mut self) -> io::Result<()> {
        let Some((link, (ours, theirs))) = self.0.take() else {
            return Ok(());
        };
        drop(theirs);
        link.serve(net::receive_listener(&ours)?)
    }
}
