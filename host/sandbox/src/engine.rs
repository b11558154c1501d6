//! The process's one [`Sandbox`]: how its engine is configured (component
//! model, epoch interruption, a pool of instance slots), its two linkers,
//! the compiled-code cache, and the thread that advances the epoch.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

use crate::cache::CacheAccess;
use crate::call::Host;
use crate::linker::restricted_linker;
use crate::{
    EPOCH_TICK, Limits, MAX_CONCURRENT_CALLS, MAX_GRANTED_INSTANCES, MAX_GRANTED_MEMORY_BYTES,
    SandboxError, ToolKind, cache, precompiled,
};

/// Builds a [`Sandbox`].
#[derive(Debug, Default)]
pub struct SandboxBuilder {
    cache_dir: Option<(PathBuf, CacheAccess)>,
    limits: Limits,
    /// Off unless a benchmark asks (`unfenced-baseline`): a default builder
    /// always fences.
    unfenced: bool,
    /// Built-in code compiled ahead of time; `None` is the binary's own.
    precompiled: Option<precompiled::Table>,
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
        self.cache_dir = Some((dir.into(), CacheAccess::ReadWrite));
        self
    }

    /// Uses the compiled components in `dir` if it exists, and never
    /// creates or writes it: a component not there is compiled in memory
    /// only. For commands that must change nothing on disk.
    ///
    /// # Security
    ///
    /// As for [`SandboxBuilder::cache_dir`]: an existing `dir` must be
    /// private to the user, and each entry is checked before it is read.
    pub fn read_only_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some((dir.into(), CacheAccess::ReadOnly));
        self
    }

    /// Compiles the built-in tools on their first call (or takes them from
    /// the cache) even where this binary carries them precompiled: what a
    /// binary does on a machine its precompiled code does not fit. For
    /// tests of the cache and the cold-start benchmark's baseline.
    #[must_use]
    pub fn ignore_precompiled(mut self) -> Self {
        self.precompiled = Some(&[]);
        self
    }

    /// Replaces the built-in code compiled ahead of time (tests only).
    #[cfg(test)]
    pub(crate) fn precompiled(mut self, table: precompiled::Table) -> Self {
        self.precompiled = Some(table);
        self
    }

    /// Replaces the limits every call runs under.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Links tools to wasmtime-wasi's filesystem directly, without the
    /// fence: only for measuring what the fence costs
    /// (`tests/benches/read_file.rs`). Never used by GOAT itself; the
    /// feature that offers it is off unless a benchmark asks for it.
    #[cfg(feature = "unfenced-baseline")]
    #[must_use]
    pub fn unfenced(mut self) -> Self {
        self.unfenced = true;
        self
    }

    /// Creates the engine, the linker and the epoch ticker.
    pub fn build(self) -> Result<Sandbox, SandboxError> {
        let mut config = Config::new();
        crate::codegen::configure_codegen(&mut config);
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
        let linker = restricted_linker(&engine, ToolKind::Builtin, !self.unfenced)
            .map_err(SandboxError::Engine)?;
        let plugin_linker = restricted_linker(&engine, ToolKind::Plugin, !self.unfenced)
            .map_err(SandboxError::Engine)?;
        let cache = self
            .cache_dir
            .map(|(dir, access)| cache::Cache::open(dir, &engine, access))
            .transpose()?
            .flatten();
        let ticker = Ticker::start(engine.clone())?;
        Ok(Sandbox {
            engine,
            linker,
            plugin_linker,
            cache,
            limits: self.limits,
            fenced: !self.unfenced,
            precompiled: self.precompiled.unwrap_or(precompiled::PRECOMPILED),
            _ticker: ticker,
        })
    }
}

/// Instance slots kept ready for reuse: a fresh call takes a slot whose
/// memory was already mapped (and reset) instead of mapping new memory, which
/// is most of what instantiation costs.
///
/// Each slot is sized for the most a plugin can be granted
/// ([`MAX_GRANTED_INSTANCES`], [`MAX_GRANTED_MEMORY_BYTES`]); every store's
/// limiter holds its call to its own limits, the default ones unless
/// granted. (A slot's address space is reserved whatever its memory may
/// grow to, so the larger maximum costs no memory.)
fn pooling(limits: &Limits) -> wasmtime::InstanceAllocationStrategy {
    let calls = MAX_CONCURRENT_CALLS;
    let per_component =
        u32::try_from(limits.instances.max(MAX_GRANTED_INSTANCES)).unwrap_or(u32::MAX);
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(calls)
        .total_core_instances(calls * u32::try_from(limits.instances).unwrap_or(u32::MAX))
        .total_memories(calls * u32::try_from(limits.memories).unwrap_or(u32::MAX))
        .total_tables(calls * u32::try_from(limits.tables).unwrap_or(u32::MAX))
        .max_core_instances_per_component(per_component)
        .max_memories_per_component(u32::try_from(limits.memories).unwrap_or(u32::MAX))
        .max_tables_per_component(u32::try_from(limits.tables).unwrap_or(u32::MAX))
        .max_memory_size(limits.memory_bytes.max(MAX_GRANTED_MEMORY_BYTES))
        .table_elements(limits.table_elements)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_BYTES)
        .pagemap_scan(wasmtime::Enabled::Auto);
    wasmtime::InstanceAllocationStrategy::Pooling(pool)
}

/// Bytes of each pooled memory (and table) kept mapped between calls and
/// reset with a memset instead of being unmapped and faulted in again. The
/// Pen tools link with a 128 KiB stack at the bottom of memory, and a call
/// dirties the top of the stack, the data segment and a little heap above
/// it; 256 KiB covers that. Measured in the read_file bench: 0 and 128 KiB
/// were ~30% slower, 384-512 KiB no faster (memset grows with it). Where
/// the kernel has `PAGEMAP_SCAN` (Linux 6.7+), only the pages a call
/// dirtied are reset (`pagemap_scan`): a no-op call 19.9 -> 15.6 µs in one
/// run; 1 MiB kept resident with it was no faster.
const KEEP_RESIDENT_BYTES: usize = 256 * 1024;

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
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<Host>,
    pub(crate) plugin_linker: Linker<Host>,
    pub(crate) cache: Option<cache::Cache>,
    pub(crate) limits: Limits,
    /// Whether tools get the filesystem through the fence (always, but in
    /// the benchmark that measures it).
    pub(crate) fenced: bool,
    /// Built-in code compiled when GOAT was built.
    pub(crate) precompiled: precompiled::Table,
    _ticker: Ticker,
}

impl Sandbox {
    /// The limits calls run under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The compiled-code cache directory, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(cache::Cache::dir)
    }
}
