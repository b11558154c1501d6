//! Loading a component as a [`Tool`]: size and header checks for plugins,
//! compiling (or taking it from the cache), refusing imports outside the
//! allowlist, linking once, and reading and checking its spec.
//!
//! Every check runs before the compiled form is cached, so the cache only
//! ever holds components that passed them all.

use crate::bindings::PureToolPre;
use crate::bindings::exports::goat::tool::tool as wit;
use crate::call::Host;
use crate::header::check_component_header;
use crate::linker::import_allowed;
use crate::{Access, Sandbox, SandboxError, ToolKind, ToolSpec, builtin, cache};

/// Largest component [`Sandbox::load_plugin`] takes. The Pen tools are a
/// few hundred KiB; a tool ten times larger than the largest is suspect,
/// and compiling is the expensive step a huge file would abuse.
pub const MAX_PLUGIN_BYTES: usize = 32 * 1024 * 1024;

/// A loaded tool: compiled once, linked once (`InstancePre`), instantiated
/// afresh for every call.
#[derive(Clone)]
pub struct Tool {
    pub(crate) spec: ToolSpec,
    declared_name: String,
    pub(crate) kind: ToolKind,
    sha256: String,
    imports: Vec<String>,
    pub(crate) pre: PureToolPre<Host>,
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

impl Sandbox {
    /// Compiles (or loads from the cache) and links `wasm`, refusing it if it
    /// imports anything outside [`ALLOWED_IMPORTS`](crate::ALLOWED_IMPORTS) or is not a valid tool,
    /// then reads and checks its spec. `label` names it in errors.
    pub fn load(&self, label: &str, wasm: &[u8]) -> Result<Tool, SandboxError> {
        self.load_as(label, wasm, ToolKind::Builtin)
    }

    /// Loads a plugin: like [`Sandbox::load`], but the component may import
    /// only [`PLUGIN_IMPORTS`](crate::PLUGIN_IMPORTS), must be at most [`MAX_PLUGIN_BYTES`], and is
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

    /// Loads the eight embedded Pen file tools.
    pub fn load_pen_tools(&self) -> Result<Vec<Tool>, SandboxError> {
        builtin::PEN_TOOLS
            .iter()
            .map(|b| self.load(b.name, b.wasm))
            .collect()
    }
}
