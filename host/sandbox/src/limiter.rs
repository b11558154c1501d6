//! Memory, table and instance limits on one store, enforced as wasmtime
//! grows them.

use wasmtime::ResourceLimiter;

use crate::Limits;

/// The trap raised when a guest asks for more memory than allowed.
#[derive(Debug, thiserror::Error)]
#[error("guest asked for {desired} bytes of memory; the limit is {limit}")]
pub(crate) struct MemoryLimitExceeded {
    desired: usize,
    limit: usize,
}

/// Enforces [`Limits`] on one store, trapping (rather than letting
/// `memory.grow` return -1) so the call ends with a typed error at once.
pub(crate) struct Limiter {
    limits: Limits,
    memory_in_use: usize,
    memory_exceeded: bool,
}

impl Limiter {
    /// A limiter for a fresh store: nothing in use yet.
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            memory_in_use: 0,
            memory_exceeded: false,
        }
    }

    /// Whether the guest asked for more memory than allowed, however the
    /// call then ended.
    pub(crate) fn memory_exceeded(&self) -> bool {
        self.memory_exceeded
    }

    /// The limits this store runs under.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }
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
