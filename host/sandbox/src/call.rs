//! One call: the [`Pen`] it may see, a fresh [`Store`] with a fresh WASI
//! context and every limit armed (the epoch deadline among them), invoking
//! the tool, and what comes back.
//!
//! Nothing outlives a call: the store, its WASI context and its resource
//! table are built here and dropped when the call returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::bindings::exports::goat::tool::tool as wit;
use crate::fence::{Fence, PathPolicy, preopen_perms};
use crate::http::{HttpEgress, PluginHttp};
use crate::limiter::Limiter;
use crate::linker::FrozenClock;
use crate::output::CappedOutput;
use crate::policy_fs::PolicyFs;
use crate::{Access, Grants, Sandbox, SandboxError, Tool, ToolError, ToolFailure, ToolKind};

/// Per-call host state.
pub(crate) struct Host {
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) fence: Fence,
    http: WasiHttpCtx,
    /// Where the call's `wasi:http` requests go: the egress proxy, or
    /// nowhere.
    http_out: PluginHttp,
    /// When the call's time is up, for waits inside the host.
    deadline: tokio::time::Instant,
}

impl Host {
    /// `wasi:io` with the call's deadline on every wait.
    pub(crate) fn bounded_io(&mut self) -> crate::deadline::Bounded<'_> {
        crate::deadline::Bounded {
            table: &mut self.table,
            deadline: self.deadline,
        }
    }
}

impl WasiHttpView for Host {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_out,
        }
    }
}

impl Host {
    /// The filesystem as the tool gets it: wasmtime-wasi's, behind the
    /// call's fence.
    pub(crate) fn policy_fs(&mut self) -> PolicyFs<'_> {
        PolicyFs {
            inner: wasmtime_wasi::filesystem::WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            fence: &mut self.fence,
        }
    }
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The workspace a call may see, and how.
///
/// # Security
///
/// `root` and `access` come from the host, never from the model. The tool
/// gets the lesser of `access` and the access its spec declares.
#[derive(Clone)]
pub struct Pen {
    root: PathBuf,
    access: Access,
    policy: Option<Arc<dyn PathPolicy>>,
    http: Option<Arc<dyn HttpEgress>>,
}

impl std::fmt::Debug for Pen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pen")
            .field("root", &self.root)
            .field("access", &self.access)
            .field("policy", &self.policy.is_some())
            .field("http", &self.http.is_some())
            .finish()
    }
}

impl Pen {
    /// The workspace at `root` (an existing directory), granted `access`.
    pub fn new(root: impl AsRef<Path>, access: Access) -> Result<Self, SandboxError> {
        let given = root.as_ref();
        let root = given.canonicalize().map_err(|e| SandboxError::Workspace {
            path: given.to_owned(),
            reason: format!("{e}"),
        })?;
        if !root.is_dir() {
            return Err(SandboxError::Workspace {
                path: given.to_owned(),
                reason: "not a directory".to_owned(),
            });
        }
        Ok(Self {
            root,
            access,
            policy: None,
            http: None,
        })
    }

    /// The same Pen, with a plugin's `wasi:http` requests sent through the
    /// egress proxy `egress` gives, which decides each destination.
    /// Without one every request is refused.
    #[must_use]
    pub fn with_http_egress(mut self, egress: Arc<dyn HttpEgress>) -> Self {
        self.http = Some(egress);
        self
    }

    /// The same Pen, with `policy` deciding what the tool may see and
    /// change on every file it reaches.
    #[must_use]
    pub fn with_policy(mut self, policy: Arc<dyn PathPolicy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The access the caller grants.
    pub fn access(&self) -> Access {
        self.access
    }
}

/// A successful call's result text, or the failure to report to the model.
pub type CallResult = Result<String, ToolFailure>;

impl Sandbox {
    /// Runs `tool` with `arguments` (a JSON object as text) in a fresh store
    /// that sees `pen`.
    ///
    /// The outer `Err` is a host problem (the workspace cannot be opened, or
    /// it contains the compiled-code cache); the inner one is the call's
    /// failure, for the model.
    ///
    /// # Security
    ///
    /// The preopen is read-write only when the tool declares `read-write`
    /// and `pen` grants it. A workspace containing the compiled-code cache
    /// is refused: a writing tool could otherwise plant native code.
    pub fn call(
        &self,
        tool: &Tool,
        arguments: &str,
        pen: &Pen,
    ) -> Result<CallResult, SandboxError> {
        if let Some(dir) = self.cache_dir()
            && dir.starts_with(&pen.root)
        {
            return Err(SandboxError::Workspace {
                path: pen.root.clone(),
                reason: format!(
                    "it contains GOAT's compiled-code cache ({}); choose a workspace that does \
                     not hold host state",
                    dir.display()
                ),
            });
        }
        // Compiled (or taken from the cache) on the tool's first call,
        // before the store whose deadline the call runs under.
        let pre = self.prepared(tool)?;
        let granted = tool.spec.access.min(pen.access);
        let (mut store, stdout, stderr) = self.store(
            Some((&pen.root, granted)),
            tool.kind,
            tool.grants(),
            pen.http.clone(),
        )?;
        store.data_mut().fence.set_policy(pen.policy.clone());

        let outcome = pre
            .instantiate(&mut store)
            .and_then(|instance| instance.goat_tool_tool().call_invoke(&mut store, arguments));
        let limits = store.data().limiter.limits();
        let result = match outcome {
            Ok(Ok(text)) if text.len() > limits.result_bytes => Err(ToolFailure::OutputExceeded {
                stream: "result",
                limit_bytes: limits.result_bytes,
            }),
            Ok(Ok(text)) => Ok(text),
            Ok(Err(e)) => Err(ToolFailure::Tool(tool_error(e))),
            Err(e) => Err(self.classify(&e, &store, &stdout, &stderr)),
        };
        // Staged whole-file writes take effect only when the call succeeded;
        // otherwise every target is left as it was.
        let fence = &mut store.data_mut().fence;
        Ok(match result {
            Ok(text) => match fence.commit() {
                Ok(()) => Ok(text),
                Err(why) => Err(ToolFailure::Tool(ToolError::Io(why))),
            },
            Err(failure) => {
                let kept: Vec<String> = fence
                    .discard()
                    .into_iter()
                    .map(|path| format!("nothing was written: '{path}' is as it was"))
                    .collect();
                let notes: Vec<String> = fence.notes().iter().cloned().chain(kept).collect();
                Err(with_notes(failure, &notes))
            }
        })
    }

    /// A fresh store: new WASI context, new resource table, limits armed
    /// (a plugin's as granted).
    pub(crate) fn store(
        &self,
        preopen: Option<(&Path, Access)>,
        kind: ToolKind,
        grants: &Grants,
        http: Option<Arc<dyn HttpEgress>>,
    ) -> Result<(Store<Host>, CappedOutput, CappedOutput), SandboxError> {
        let limits = &self.limits.granted(grants);
        let stdout = CappedOutput::new("stdout", limits.stdio_bytes);
        let stderr = CappedOutput::new("stderr", limits.stdio_bytes);
        let mut wasi = WasiCtxBuilder::new();
        // Must come before `preopened_dir`: it is copied into each preopen.
        wasi.allow_blocking_current_thread(true);
        wasi.stdout(stdout.clone()).stderr(stderr.clone());
        // Sockets are linked for plugins (ADR-0096) and refused whole: no
        // TCP, no UDP, no name lookup, and no address passes the check.
        // Stdin is empty, the arguments are empty, and the environment
        // holds only the keys the person granted a plugin (GOAT's values,
        // read now): nothing else of the host's reaches a tool.
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }));
        if kind == ToolKind::Plugin {
            // Frozen at the epoch unless the person granted the real one.
            if !grants.wall_clock {
                wasi.wall_clock(FrozenClock);
            }
            for key in &grants.env {
                if let Ok(value) = std::env::var(key) {
                    wasi.env(key, value);
                }
            }
        }
        let mut fence = Fence::new(None, None);
        if let Some((root, access)) = preopen {
            let refused = |reason: String| SandboxError::Workspace {
                path: root.to_owned(),
                reason,
            };
            if self.fenced {
                // One open of the root serves the tool's preopen and the
                // fence (served by `PolicyFs`'s `get-directories`).
                if let Some(dir) =
                    Fence::open_root(root, access).map_err(|e| refused(e.to_string()))?
                {
                    fence = Fence::new(Some((root, dir)), None);
                }
            } else if let Some(perms) = preopen_perms(access) {
                wasi.preopened_dir(root, ".", perms)
                    .map_err(|e| refused(format!("{e:#}")))?;
            }
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.resources);
        let host = Host {
            wasi: wasi.build(),
            table,
            limiter: Limiter::new(limits.clone()),
            fence,
            http: {
                let mut http = WasiHttpCtx::new();
                http.set_field_size_limit(crate::http::FIELD_BYTES);
                http
            },
            http_out: PluginHttp::new(http, limits.timeout),
            deadline: tokio::time::Instant::now() + limits.timeout,
        };
        let mut store = Store::new(&self.engine, host);
        store.limiter(|h| &mut h.limiter);
        store.set_epoch_deadline(limits.timeout_ticks());
        store.epoch_deadline_trap();
        store.set_hostcall_fuel(limits.hostcall_bytes);
        store.set_max_component_handles(limits.resources);
        Ok((store, stdout, stderr))
    }
}

fn tool_error(e: wit::ToolError) -> ToolError {
    match e {
        wit::ToolError::InvalidArguments(m) => ToolError::InvalidArguments(m),
        wit::ToolError::NotFound(m) => ToolError::NotFound(m),
        wit::ToolError::Conflict(m) => ToolError::Conflict(m),
        wit::ToolError::PermissionDenied(m) => ToolError::PermissionDenied(m),
        wit::ToolError::TooLarge(m) => ToolError::TooLarge(m),
        wit::ToolError::Io(m) => ToolError::Io(m),
    }
}

/// A tool's failure with what the fence refused during the call appended,
/// so the model learns why (which rule, which protection) and not only that
/// permission was denied.
fn with_notes(failure: ToolFailure, notes: &[String]) -> ToolFailure {
    if notes.is_empty() {
        return failure;
    }
    let why = format!(" (GOAT: {})", notes.join("; "));
    match failure {
        ToolFailure::Tool(e) => ToolFailure::Tool(match e {
            ToolError::InvalidArguments(m) => ToolError::InvalidArguments(m + &why),
            ToolError::NotFound(m) => ToolError::NotFound(m + &why),
            ToolError::Conflict(m) => ToolError::Conflict(m + &why),
            ToolError::PermissionDenied(m) => ToolError::PermissionDenied(m + &why),
            ToolError::TooLarge(m) => ToolError::TooLarge(m + &why),
            ToolError::Io(m) => ToolError::Io(m + &why),
        }),
        other => other,
    }
}
