//! Runs GOAT's tools as WASI 0.2 components in wasmtime, with the workspace
//! (the Pen) as their only filesystem.
//!
//! The key decision: a tool is untrusted code, and every call starts from
//! nothing. Each call gets a fresh [`wasmtime::Store`] and a fresh WASI
//! context that grants no environment, no arguments, no inherited stdio, no
//! sockets and no name lookup, and exactly one preopen: the workspace,
//! read-only unless the tool declares `read-write` *and* the caller grants
//! it. wasmtime-wasi resolves every path through cap-std, so `..`, absolute
//! paths and symlinks cannot leave the preopen. Limits on time (epoch
//! interruption), memory, tables, instances, WASI resources, hostcall data,
//! captured output and result size are on by default; hitting one ends the
//! call with a typed [`ToolFailure`] and leaves the host healthy.
//!
//! The linker offers only the interfaces in [`ALLOWED_IMPORTS`]; a component
//! importing anything else is refused when it is loaded, before it can run.
//! Plugins (third-party tools the person added, [`Sandbox::load_plugin`])
//! get a narrower linker still, [`PLUGIN_IMPORTS`]: no stdio, and a wall
//! clock frozen at the epoch. This crate knows nothing of models or
//! permissions: the caller decides what access a call gets.

pub mod builtin;
mod cache;
mod error;
mod limits;
mod output;
mod spec;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime::{Config, Engine, ResourceLimiter, Store, Trap};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::{FsPerms, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

pub use error::{SandboxError, ToolError, ToolFailure};
pub use limits::*;
pub use spec::{Access, MAX_DESCRIPTION_BYTES, MAX_TOOL_NAME_BYTES, ToolSpec};

use output::{CappedOutput, StdioLimitExceeded};

mod bindings {
    wasmtime::component::bindgen!({
        world: "pure-tool",
        path: "../../wit",
    });
}

use bindings::PureToolPre;
use bindings::exports::goat::tool::tool as wit;

/// The interfaces a tool may import, without their `@0.2.x` version. The
/// linker defines only these.
///
/// # Security
///
/// This is the whole of what a component can reach outside its own memory:
/// the filesystem (only through the preopen the call grants), streams on
/// files and captured stdio, and the wall clock (its `datetime` type is part
/// of file metadata). No sockets, name lookup, environment, arguments,
/// random, exit or terminal. A component importing anything else is refused
/// at load time by [`Sandbox::load`].
pub const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
];

/// The interfaces a plugin may import: [`ALLOWED_IMPORTS`] without
/// `wasi:cli/stdout` and `wasi:cli/stderr`. The plugin linker defines only
/// these.
///
/// # Security
///
/// A plugin gets the filesystem (only through the preopen its declared and
/// granted access allows) and the streams and pollables on its files. The
/// wall clock is here only because `wasi:filesystem/types` names its
/// `datetime` type (file times); a plugin that calls `now()` reads the Unix
/// epoch (see [`FrozenClock`]), so it cannot time anything with it. No
/// stdio, even captured: a plugin reports through its result alone.
pub const PLUGIN_IMPORTS: &[&str] = &[
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
];

/// Largest component [`Sandbox::load_plugin`] takes. The Pen tools are a
/// few hundred KiB; a tool ten times larger than the largest is suspect,
/// and compiling is the expensive step a huge file would abuse.
pub const MAX_PLUGIN_BYTES: usize = 32 * 1024 * 1024;

/// The WASI version family the linker implements; imports must be of it.
const WASI_VERSION_PREFIX: &str = "0.2.";

/// Bytes of a crashed guest's stderr kept in its crash report.
const CRASH_STDERR_TAIL_BYTES: usize = 2048;

/// Per-call host state.
struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// `wasi:io` host functions need only the resource table.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// The trap raised when a guest asks for more memory than allowed.
#[derive(Debug, thiserror::Error)]
#[error("guest asked for {desired} bytes of memory; the limit is {limit}")]
struct MemoryLimitExceeded {
    desired: usize,
    limit: usize,
}

/// Enforces [`Limits`] on one store, trapping (rather than letting
/// `memory.grow` return -1) so the call ends with a typed error at once.
struct Limiter {
    limits: Limits,
    memory_in_use: usize,
    memory_exceeded: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.memory_in_use - current.min(self.memory_in_use) + desired;
        if total > self.limits.memory_bytes {
            self.memory_exceeded = true;
            return Err(MemoryLimitExceeded {
                desired: total,
                limit: self.limits.memory_bytes,
            }
            .into());
        }
        self.memory_in_use = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.limits.table_elements)
    }

    fn instances(&self) -> usize {
        self.limits.instances
    }

    fn tables(&self) -> usize {
        self.limits.tables
    }

    fn memories(&self) -> usize {
        self.limits.memories
    }
}

/// Builds a [`Sandbox`].
#[derive(Debug, Default)]
pub struct SandboxBuilder {
    cache_dir: Option<PathBuf>,
    limits: Limits,
}

impl SandboxBuilder {
    /// A builder with the default [`Limits`] and no compiled-code cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps compiled components in `dir` (created private to the user).
    ///
    /// # Security
    ///
    /// Compiled code is trusted as native code. `dir` must be host state
    /// that no tool can write: [`Sandbox::call`] refuses any workspace that
    /// contains it.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Replaces the limits every call runs under.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Creates the engine, the linker and the epoch ticker.
    pub fn build(self) -> Result<Sandbox, SandboxError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        config.allocation_strategy(pooling(&self.limits));
        // The pool reserves address space up front; where that is refused
        // (a `ulimit -v`, a tool like valgrind) fall back to mapping each
        // call's memory on demand: slower, equally isolated.
        let engine = match Engine::new(&config) {
            Ok(engine) => engine,
            Err(_) => {
                config.allocation_strategy(wasmtime::InstanceAllocationStrategy::OnDemand);
                Engine::new(&config).map_err(SandboxError::Engine)?
            }
        };
        let linker = restricted_linker(&engine, ToolKind::Builtin).map_err(SandboxError::Engine)?;
        let plugin_linker =
            restricted_linker(&engine, ToolKind::Plugin).map_err(SandboxError::Engine)?;
        let cache = self
            .cache_dir
            .map(|dir| cache::Cache::open(dir, &engine))
            .transpose()?;
        let ticker = Ticker::start(engine.clone())?;
        Ok(Sandbox {
            engine,
            linker,
            plugin_linker,
            cache,
            limits: self.limits,
            _ticker: ticker,
        })
    }
}

/// Instance slots kept ready for reuse: a fresh call takes a slot whose
/// memory was already mapped (and reset) instead of mapping new memory, which
/// is most of what instantiation costs.
fn pooling(limits: &Limits) -> wasmtime::InstanceAllocationStrategy {
    let calls = MAX_CONCURRENT_CALLS;
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(calls)
        .total_core_instances(calls * u32::try_from(limits.instances).unwrap_or(u32::MAX))
        .total_memories(calls * u32::try_from(limits.memories).unwrap_or(u32::MAX))
        .total_tables(calls * u32::try_from(limits.tables).unwrap_or(u32::MAX))
        .max_core_instances_per_component(u32::try_from(limits.instances).unwrap_or(u32::MAX))
        .max_memories_per_component(u32::try_from(limits.memories).unwrap_or(u32::MAX))
        .max_tables_per_component(u32::try_from(limits.tables).unwrap_or(u32::MAX))
        .max_memory_size(limits.memory_bytes)
        .table_elements(limits.table_elements)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_BYTES);
    wasmtime::InstanceAllocationStrategy::Pooling(pool)
}

/// Bytes of each pooled memory (and table) kept mapped between calls and
/// reset with a memset instead of being unmapped and faulted in again. The
/// Pen tools link with a 128 KiB stack at the bottom of memory, and a call
/// dirties the top of the stack, the data segment and a little heap above
/// it; 256 KiB covers that. Measured in the read_file bench: 0 and 128 KiB
/// were ~30% slower, 384-512 KiB no faster (memset grows with it).
const KEEP_RESIDENT_BYTES: usize = 256 * 1024;

/// A linker with exactly the imports `kind` allows ([`ALLOWED_IMPORTS`] or
/// [`PLUGIN_IMPORTS`]), synchronous flavour.
fn restricted_linker(engine: &Engine, kind: ToolKind) -> wasmtime::Result<Linker<Host>> {
    use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, sync};
    let mut l = Linker::<Host>::new(engine);
    sync::io::error::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
    sync::io::poll::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
    sync::io::streams::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
    clocks::wall_clock::add_to_linker::<Host, WasiClocks>(&mut l, Host::clocks)?;
    sync::filesystem::types::add_to_linker::<Host, WasiFilesystem>(&mut l, Host::filesystem)?;
    filesystem::preopens::add_to_linker::<Host, WasiFilesystem>(&mut l, Host::filesystem)?;
    match kind {
        ToolKind::Builtin => {
            cli::stdout::add_to_linker::<Host, WasiCli>(&mut l, Host::cli)?;
            cli::stderr::add_to_linker::<Host, WasiCli>(&mut l, Host::cli)?;
        }
        ToolKind::Plugin => {}
    }
    Ok(l)
}

/// The wall clock a plugin reads: always the Unix epoch, at a resolution of
/// one second.
///
/// # Security
///
/// `wasi:filesystem/types` cannot be imported without `wasi:clocks/
/// wall-clock` (file times are `datetime`s), but nothing a plugin should do
/// needs the current time, and a precise clock is what timing side channels
/// are made of. File times in `stat` results still come from the
/// filesystem.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }

    fn now(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

/// Where a tool came from, which decides the linker and the WASI context it
/// gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolKind {
    /// Shipped inside GOAT (the Pen tools) or loaded by a test with
    /// [`Sandbox::load`]: [`ALLOWED_IMPORTS`].
    Builtin,
    /// Added by the person with `goat plugins add` and loaded with
    /// [`Sandbox::load_plugin`]: [`PLUGIN_IMPORTS`], a frozen clock.
    Plugin,
}

impl ToolKind {
    fn allowed_imports(self) -> &'static [&'static str] {
        match self {
            Self::Builtin => ALLOWED_IMPORTS,
            Self::Plugin => PLUGIN_IMPORTS,
        }
    }
}

/// Advances the engine's epoch every [`EPOCH_TICK`] so that deadlines fire.
/// Stopped and joined when the sandbox is dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: Engine) -> Result<Self, SandboxError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("goat-epoch".to_owned())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .map_err(|e| SandboxError::Host(wasmtime::Error::new(e)))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One wasmtime engine and linker for the process, and the limits calls run
/// under. Cheap to share: calls take `&self` and may run on many threads.
pub struct Sandbox {
    engine: Engine,
    linker: Linker<Host>,
    plugin_linker: Linker<Host>,
    cache: Option<cache::Cache>,
    limits: Limits,
    _ticker: Ticker,
}

/// A loaded tool: compiled once, linked once (`InstancePre`), instantiated
/// afresh for every call.
#[derive(Clone)]
pub struct Tool {
    spec: ToolSpec,
    declared_name: String,
    kind: ToolKind,
    sha256: String,
    imports: Vec<String>,
    pre: PureToolPre<Host>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("spec", &self.spec)
            .field("declared_name", &self.declared_name)
            .field("kind", &self.kind)
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl Tool {
    /// The tool's checked spec.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// sha256 of the component's bytes, lowercase hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The interfaces the component imports, as it names them.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The name the component's own spec gives, before any
    /// [`Tool::exposed_as`].
    pub fn declared_name(&self) -> &str {
        &self.declared_name
    }

    /// Built in or a plugin.
    pub fn kind(&self) -> ToolKind {
        self.kind
    }

    /// The same tool offered to the model (and judged by the gate, and
    /// recorded in the store) as `name`, which must itself be a valid tool
    /// name. The host namespaces plugins this way, so a plugin cannot take a
    /// built-in's name or another plugin's.
    pub fn exposed_as(mut self, name: &str) -> Result<Self, SandboxError> {
        self.spec.name = name.to_owned();
        self.spec
            .validate()
            .map_err(|reason| SandboxError::NotATool {
                name: self.declared_name.clone(),
                reason,
            })?;
        Ok(self)
    }
}

/// sha256 of `bytes`, lowercase hex, as [`Tool::sha256`] reports it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    cache::sha256_hex(bytes)
}

/// Checks the header before anything else looks at the bytes, so a file
/// that is not a component is refused with what it is instead.
fn check_component_header(bytes: &[u8]) -> Result<(), String> {
    const WASM_MAGIC: &[u8] = b"\0asm";
    const CORE_VERSION: &[u8] = &[1, 0, 0, 0];
    const COMPONENT_VERSION: &[u8] = &[0x0d, 0, 1, 0];
    if bytes.starts_with(b"\x7fELF") {
        return Err(
            "it is native code (an ELF file, such as a wasmtime .cwasm precompiled \
                    artifact); GOAT never loads precompiled code from a plugin: give it the \
                    WebAssembly component (.wasm) and GOAT compiles it itself"
                .to_owned(),
        );
    }
    if !bytes.starts_with(WASM_MAGIC) {
        return Err("it is not WebAssembly (no \\0asm header)".to_owned());
    }
    match bytes.get(4..8) {
        Some(COMPONENT_VERSION) => Ok(()),
        Some(CORE_VERSION) => Err(
            "it is a core WebAssembly module, not a component; make it a \
                                   component that exports goat:tool/tool@0.1.0 (wasm-component-ld \
                                   does this when linking, or `wasm-tools component new`)"
                .to_owned(),
        ),
        _ => Err(
            "it is WebAssembly of an unknown version or layer, not a WASI 0.2 component".to_owned(),
        ),
    }
}

/// The workspace a call may see, and how.
///
/// # Security
///
/// `root` and `access` come from the host, never from the model. The tool
/// gets the lesser of `access` and the access its spec declares.
#[derive(Clone, Debug)]
pub struct Pen {
    root: PathBuf,
    access: Access,
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
        Ok(Self { root, access })
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
    /// The limits calls run under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The compiled-code cache directory, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(cache::Cache::dir)
    }

    /// Compiles (or loads from the cache) and links `wasm`, refusing it if it
    /// imports anything outside [`ALLOWED_IMPORTS`] or is not a valid tool,
    /// then reads and checks its spec. `label` names it in errors.
    pub fn load(&self, label: &str, wasm: &[u8]) -> Result<Tool, SandboxError> {
        self.load_as(label, wasm, ToolKind::Builtin)
    }

    /// Loads a plugin: like [`Sandbox::load`], but the component may import
    /// only [`PLUGIN_IMPORTS`], must be at most [`MAX_PLUGIN_BYTES`], and is
    /// linked against the plugin linker.
    ///
    /// # Security
    ///
    /// `wasm` must be a WebAssembly component; precompiled native code (a
    /// `.cwasm`) and core modules are refused by their header before
    /// anything else reads them. The component is compiled here, by this
    /// engine, and its compiled form is cached (by sha256) only once it has
    /// passed every check. A forbidden import is refused before the
    /// component is ever instantiated; an allowed one is instantiated once,
    /// with no preopen, to read its spec.
    pub fn load_plugin(&self, label: &str, wasm: &[u8]) -> Result<Tool, SandboxError> {
        if wasm.len() > MAX_PLUGIN_BYTES {
            return Err(SandboxError::NotATool {
                name: label.to_owned(),
                reason: format!(
                    "it is {} bytes; plugins may be at most {MAX_PLUGIN_BYTES}",
                    wasm.len()
                ),
            });
        }
        check_component_header(wasm).map_err(|reason| SandboxError::NotATool {
            name: label.to_owned(),
            reason,
        })?;
        self.load_as(label, wasm, ToolKind::Plugin)
    }

    fn load_as(&self, label: &str, wasm: &[u8], kind: ToolKind) -> Result<Tool, SandboxError> {
        let sha256 = cache::sha256_hex(wasm);
        let cached = self
            .cache
            .as_ref()
            .and_then(|cache| cache.get(&self.engine, &sha256));
        let fresh = cached.is_none();
        let component = match cached {
            Some(component) => component,
            None => wasmtime::component::Component::new(&self.engine, wasm).map_err(|source| {
                SandboxError::Compile {
                    name: label.to_owned(),
                    source,
                }
            })?,
        };

        let ty = component.component_type();
        let allowed = kind.allowed_imports();
        let mut imports = Vec::new();
        for (name, _) in ty.imports(&self.engine) {
            if !import_allowed(name, allowed) {
                return Err(SandboxError::ForbiddenImport {
                    name: label.to_owned(),
                    import: name.to_owned(),
                    allowed: allowed.join(", "),
                });
            }
            imports.push(name.to_owned());
        }

        let not_a_tool = |reason: String| SandboxError::NotATool {
            name: label.to_owned(),
            reason,
        };
        let linker = match kind {
            ToolKind::Builtin => &self.linker,
            ToolKind::Plugin => &self.plugin_linker,
        };
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| not_a_tool(format!("{e:#}")))?;
        let pre = PureToolPre::new(instance_pre)
            .map_err(|e| not_a_tool(format!("it does not export goat:tool/tool@0.1.0 ({e:#})")))?;

        let mut tool = Tool {
            spec: ToolSpec {
                name: String::new(),
                description: String::new(),
                parameters: serde_json::Value::Null,
                access: Access::None,
                path_fields: Vec::new(),
            },
            declared_name: String::new(),
            kind,
            sha256,
            imports,
            pre,
        };
        let (mut store, _, _) = self.store(None, kind)?;
        let raw = tool
            .pre
            .instantiate(&mut store)
            .and_then(|i| i.goat_tool_tool().call_spec(&mut store))
            .map_err(|e| not_a_tool(format!("calling spec() failed: {e:#}")))?;
        let parameters = serde_json::from_str(&raw.parameters)
            .map_err(|e| not_a_tool(format!("its parameters are not valid JSON: {e}")))?;
        tool.declared_name.clone_from(&raw.name);
        tool.spec = ToolSpec {
            name: raw.name,
            description: raw.description,
            parameters,
            access: match raw.access {
                wit::Access::None => Access::None,
                wit::Access::Read => Access::Read,
                wit::Access::ReadWrite => Access::ReadWrite,
            },
            path_fields: raw.path_fields,
        };
        tool.spec.validate().map_err(not_a_tool)?;
        // Only a component that passed every check is worth keeping.
        if fresh && let Some(cache) = &self.cache {
            cache.put(&tool.sha256, &component)?;
        }
        Ok(tool)
    }

    /// Loads the six embedded Pen file tools.
    pub fn load_pen_tools(&self) -> Result<Vec<Tool>, SandboxError> {
        builtin::PEN_TOOLS
            .iter()
            .map(|b| self.load(b.name, b.wasm))
            .collect()
    }

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
        let granted = tool.spec.access.min(pen.access);
        let (mut store, stdout, stderr) = self.store(Some((&pen.root, granted)), tool.kind)?;

        let outcome = tool
            .pre
            .instantiate(&mut store)
            .and_then(|instance| instance.goat_tool_tool().call_invoke(&mut store, arguments));
        let limits = &self.limits;
        Ok(match outcome {
            Ok(Ok(text)) if text.len() > limits.result_bytes => Err(ToolFailure::OutputExceeded {
                stream: "result",
                limit_bytes: limits.result_bytes,
            }),
            Ok(Ok(text)) => Ok(text),
            Ok(Err(e)) => Err(ToolFailure::Tool(tool_error(e))),
            Err(e) => Err(self.classify(&e, &store, &stdout, &stderr)),
        })
    }

    /// A fresh store: new WASI context, new resource table, limits armed.
    fn store(
        &self,
        preopen: Option<(&Path, Access)>,
        kind: ToolKind,
    ) -> Result<(Store<Host>, CappedOutput, CappedOutput), SandboxError> {
        let limits = &self.limits;
        let stdout = CappedOutput::new("stdout", limits.stdio_bytes);
        let stderr = CappedOutput::new("stderr", limits.stdio_bytes);
        let mut wasi = WasiCtxBuilder::new();
        // Must come before `preopened_dir`: it is copied into each preopen.
        wasi.allow_blocking_current_thread(true);
        wasi.stdout(stdout.clone()).stderr(stderr.clone());
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if kind == ToolKind::Plugin {
            wasi.wall_clock(FrozenClock);
        }
        if let Some((root, access)) = preopen {
            let perms = match access {
                Access::None => None,
                Access::Read => Some(FsPerms::ReadOnly),
                Access::ReadWrite => Some(FsPerms::ReadWrite),
            };
            if let Some(perms) = perms {
                wasi.preopened_dir(root, ".", perms)
                    .map_err(|e| SandboxError::Workspace {
                        path: root.to_owned(),
                        reason: format!("{e:#}"),
                    })?;
            }
        }
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.resources);
        let host = Host {
            wasi: wasi.build(),
            table,
            limiter: Limiter {
                limits: limits.clone(),
                memory_in_use: 0,
                memory_exceeded: false,
            },
        };
        let mut store = Store::new(&self.engine, host);
        store.limiter(|h| &mut h.limiter);
        store.set_epoch_deadline(limits.timeout_ticks());
        store.epoch_deadline_trap();
        store.set_hostcall_fuel(limits.hostcall_bytes);
        store.set_max_component_handles(limits.resources);
        Ok((store, stdout, stderr))
    }

    /// Names the limit a failed call ran into, or reports the crash.
    fn classify(
        &self,
        e: &wasmtime::Error,
        store: &Store<Host>,
        stdout: &CappedOutput,
        stderr: &CappedOutput,
    ) -> ToolFailure {
        let limits = &self.limits;
        if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return ToolFailure::Timeout {
                limit: limits.timeout,
            };
        }
        if store.data().limiter.memory_exceeded || e.downcast_ref::<MemoryLimitExceeded>().is_some()
        {
            return ToolFailure::MemoryExceeded {
                limit_bytes: limits.memory_bytes,
            };
        }
        if let Some(over) = e.downcast_ref::<StdioLimitExceeded>() {
            return ToolFailure::OutputExceeded {
                stream: over.stream,
                limit_bytes: over.limit_bytes,
            };
        }
        if let Some(out) = [stdout, stderr].into_iter().find(|o| o.exceeded()) {
            return ToolFailure::OutputExceeded {
                stream: out.name(),
                limit_bytes: limits.stdio_bytes,
            };
        }
        if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
            return ToolFailure::LimitExceeded {
                what: format!("more than {MAX_CONCURRENT_CALLS} tool calls at once"),
            };
        }
        // The WASI table and the store's component handles share one
        // budget; either may run out first.
        let text = format!("{e:#}");
        if e.downcast_ref::<wasmtime::component::ResourceTableError>()
            .is_some()
            || text.contains("handle limit exceeded")
        {
            return ToolFailure::LimitExceeded {
                what: format!("more than {} open WASI resources", limits.resources),
            };
        }
        // wasmtime reports these with private error types.
        if text.contains("fuel allocated for hostcalls has been exhausted") {
            return ToolFailure::LimitExceeded {
                what: format!(
                    "more than {} bytes passed to the host in one call",
                    limits.hostcall_bytes
                ),
            };
        }
        if text.contains("resource limit exceeded") {
            return ToolFailure::LimitExceeded {
                what: first_line(&text),
            };
        }
        // The top-level message is wasmtime's "error while executing at
        // wasm backtrace: ..."; the trap itself says what happened.
        let mut message = match e.downcast_ref::<Trap>() {
            Some(trap) => trap.to_string(),
            None => first_line(&format!("{}", e.root_cause())),
        };
        let tail = stderr.tail(CRASH_STDERR_TAIL_BYTES);
        if !tail.trim().is_empty() {
            message.push_str("; stderr: ");
            message.push_str(tail.trim());
        }
        ToolFailure::Crashed { message }
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}

fn import_allowed(name: &str, allowed: &[&str]) -> bool {
    let (interface, version) = name.split_once('@').unwrap_or((name, ""));
    version.starts_with(WASI_VERSION_PREFIX) && allowed.contains(&interface)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_allowlist_checks_interface_and_version() {
        for allowed in [ALLOWED_IMPORTS, PLUGIN_IMPORTS] {
            assert!(import_allowed("wasi:filesystem/types@0.2.12", allowed));
            assert!(import_allowed("wasi:io/streams@0.2.0", allowed));
            assert!(!import_allowed("wasi:filesystem/types@0.3.0", allowed));
            assert!(!import_allowed("wasi:filesystem/types", allowed));
            assert!(!import_allowed("wasi:sockets/tcp@0.2.12", allowed));
            assert!(!import_allowed("wasi:cli/environment@0.2.12", allowed));
            assert!(!import_allowed("wasi:cli/stdin@0.2.12", allowed));
            assert!(!import_allowed(
                "wasi:clocks/monotonic-clock@0.2.12",
                allowed
            ));
            assert!(!import_allowed("wasi:random/random@0.2.12", allowed));
            assert!(!import_allowed("evil:x/y@0.2.0", allowed));
        }
        assert!(import_allowed("wasi:cli/stderr@0.2.12", ALLOWED_IMPORTS));
        assert!(!import_allowed("wasi:cli/stderr@0.2.12", PLUGIN_IMPORTS));
        assert!(!import_allowed("wasi:cli/stdout@0.2.12", PLUGIN_IMPORTS));
    }

    #[test]
    fn plugin_imports_are_a_subset_of_the_builtin_ones() {
        for import in PLUGIN_IMPORTS {
            assert!(ALLOWED_IMPORTS.contains(import), "{import}");
        }
    }

    #[test]
    fn headers_other_than_a_component_are_refused_saying_what_they_are() {
        let table: [(&[u8], Option<&str>); 5] = [
            (b"\0asm\x0d\0\x01\0rest", None),
            (b"\x7fELF\x02\x01\x01", Some("precompiled")),
            (b"\0asm\x01\0\0\0", Some("core WebAssembly module")),
            (b"\0asm\x0e\0\x01\0", Some("unknown version")),
            (b"(component)", Some("not WebAssembly")),
        ];
        for (bytes, want) in table {
            match (check_component_header(bytes), want) {
                (Ok(()), None) => {}
                (Err(reason), Some(want)) => assert!(reason.contains(want), "{reason}"),
                (got, want) => panic!("{bytes:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn timeout_rounds_up_to_whole_ticks() {
        let limits = Limits {
            timeout: EPOCH_TICK * 3 + std::time::Duration::from_nanos(1),
            ..Limits::default()
        };
        assert_eq!(limits.timeout_ticks(), 4);
        let zero = Limits {
            timeout: std::time::Duration::ZERO,
            ..Limits::default()
        };
        assert_eq!(zero.timeout_ticks(), 1);
    }
}
