//! Component hooks (issue 41, ADR-0098): a component exporting
//! `goat:hook/hook` (`wit/hook/hook.wit`), pure. It may import nothing at
//! all, which is checked from its bytes before anything compiles it; it
//! runs in a fresh store per decision, under the timeout and the memory
//! limit, with an empty linker.

use std::time::Duration;

use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use crate::limiter::Limiter;
use crate::{Limits, Sandbox, SandboxError};

mod bindings {
    wasmtime::component::bindgen!({
        world: "hook-component",
        path: "../../wit/hook",
    });
}

use bindings::exports::goat::hook::hook::Verdict;

/// A hook component, compiled, checked to import nothing.
#[derive(Clone)]
pub struct HookComponent {
    component: Component,
}

impl std::fmt::Debug for HookComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HookComponent")
    }
}

/// What a component hook answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookVerdict {
    /// No objection.
    None,
    /// Allow (which changes nothing).
    Allow,
    /// Ask the person.
    Ask,
    /// Deny.
    Deny,
}

/// Why a component hook gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    /// Past its timeout.
    #[error("it did not answer within {0:?}")]
    Timeout(Duration),
    /// Past its memory limit.
    #[error("it used more than {0} bytes of memory")]
    Memory(usize),
    /// It trapped, or could not be instantiated.
    #[error("it crashed: {0}")]
    Crashed(String),
}

/// The store's data for a decision: only the memory limiter.
struct HookHost {
    limiter: Limiter,
}

impl Sandbox {
    /// Checks that `wasm` is a hook component that imports nothing, and
    /// compiles it. `name` is how errors call it.
    pub fn load_hook(&self, name: &str, wasm: &[u8]) -> Result<HookComponent, SandboxError> {
        let imports =
            crate::imports::component_imports(wasm).map_err(|e| SandboxError::NotATool {
                name: name.to_owned(),
                reason: format!("it is not a component: {e}"),
            })?;
        if !imports.is_empty() {
            return Err(SandboxError::ForbiddenImport {
                name: name.to_owned(),
                imports,
                allowed: "nothing: a hook component is pure".to_owned(),
            });
        }
        let component =
            Component::new(&self.engine, wasm).map_err(|source| SandboxError::Compile {
                name: name.to_owned(),
                source,
            })?;
        let hook = HookComponent { component };
        // It must export the interface: instantiated once, answering nothing.
        let linker: Linker<HookHost> = Linker::new(&self.engine);
        let mut store = self.hook_store(Duration::from_secs(5));
        bindings::HookComponent::instantiate(&mut store, &hook.component, &linker).map_err(
            |e| SandboxError::NotATool {
                name: name.to_owned(),
                reason: format!("it does not export goat:hook/hook@0.1.0: {e:#}"),
            },
        )?;
        Ok(hook)
    }

    /// Asks `hook` about `event` (the JSON a command hook reads), in a
    /// fresh store, within `timeout`.
    pub fn decide(
        &self,
        hook: &HookComponent,
        event: &str,
        timeout: Duration,
    ) -> Result<(HookVerdict, String), HookFailure> {
        let linker: Linker<HookHost> = Linker::new(&self.engine);
        let mut store = self.hook_store(timeout);
        let failed = |store: &Store<HookHost>, e: wasmtime::Error| {
            if store.data().limiter.memory_exceeded() {
                HookFailure::Memory(store.data().limiter.limits().memory_bytes)
            } else if e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt) {
                HookFailure::Timeout(timeout)
            } else {
                HookFailure::Crashed(format!("{e:#}"))
            }
        };
        let instance =
            match bindings::HookComponent::instantiate(&mut store, &hook.component, &linker) {
                Ok(instance) => instance,
                Err(e) => return Err(failed(&store, e)),
            };
        match instance.goat_hook_hook().call_decide(&mut store, event) {
            Ok(decision) => Ok((
                match decision.verdict {
                    Verdict::None => HookVerdict::None,
                    Verdict::Allow => HookVerdict::Allow,
                    Verdict::Ask => HookVerdict::Ask,
                    Verdict::Deny => HookVerdict::Deny,
                },
                decision.reason,
            )),
            Err(e) => Err(failed(&store, e)),
        }
    }

    /// A store for one decision: the sandbox's limits with `timeout`.
    fn hook_store(&self, timeout: Duration) -> Store<HookHost> {
        let limits = Limits {
            timeout,
            ..self.limits.clone()
        };
        let mut store = Store::new(
            &self.engine,
            HookHost {
                limiter: Limiter::new(limits.clone()),
            },
        );
        store.limiter(|h| &mut h.limiter);
        store.set_epoch_deadline(limits.timeout_ticks());
        store.epoch_deadline_trap();
        store
    }
}
