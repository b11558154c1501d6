//! Loading a component as a [`Tool`]: size and header checks for plugins,
//! its imports read from its bytes and refused outside the allowlist before
//! anything compiles it, then compiling (or taking it from the cache),
//! checking the compiled type's imports again, linking once, and reading
//! and checking its spec.
//!
//! A built-in whose spec is recorded beside it ([`crate::builtin`]) is
//! loaded without compiling: the compile, the link and the spec check wait
//! for its first call ([`Sandbox::call`]), so a session compiles only the
//! tools it calls.
//!
//! Every check runs before the compiled form is cached, so the cache only
//! ever holds components that passed them all.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::bindings::PureToolPre;
use crate::bindings::exports::goat::tool::tool as wit;
use crate::builtin::{Builtin, recorded_spec};
use crate::call::Host;
use crate::header::check_component_header;
use crate::imports::{check_allowed, checked_imports};
use crate::{
    Access, Grants, Sandbox, SandboxError, ToolKind, ToolSpec, builtin, cache, precompiled,
};

/// Largest component [`Sandbox::load_plugin`] takes. The Pen tools are a
/// few hundred KiB; a tool ten times larger than the largest is suspect,
/// and compiling is the expensive step a huge file would abuse.
pub const MAX_PLUGIN_BYTES: usize = 32 * 1024 * 1024;

/// A loaded tool: its checked spec, and its code compiled once, linked once
/// (`InstancePre`) and instantiated afresh for every call. A built-in's
/// code is compiled on its first call.
#[derive(Clone)]
pub struct Tool {
    pub(crate) spec: ToolSpec,
    declared_name: String,
    pub(crate) kind: ToolKind,
    sha256: String,
    imports: Vec<String>,
    /// What the person granted it (plugins only; nothing by default).
    grants: Grants,
    /// Shared by the tool's clones, so one compile serves them all.
    code: Arc<Code>,
}

/// A tool's component, and its linked form once compiled.
struct Code {
    /// The component's bytes, kept until it is compiled; empty once linked
    /// at load.
    wasm: Cow<'static, [u8]>,
    pre: OnceLock<(PureToolPre<Host>, CodeOrigin)>,
}

/// A tool offered from a spec recorded for its bytes, not compiled yet:
/// its imports checked from its bytes and the spec validated now; compiled
/// (and its spec checked against this one) on its first call.
fn lazy(
    label: &str,
    wasm: Cow<'static, [u8]>,
    sha256: String,
    spec: ToolSpec,
    kind: ToolKind,
) -> Result<Tool, SandboxError> {
    let imports = checked_imports(label, &wasm, kind)?;
    spec.validate().map_err(|reason| SandboxError::NotATool {
        name: label.to_owned(),
        reason,
    })?;
    Ok(Tool {
        declared_name: spec.name.clone(),
        spec,
        kind,
        sha256,
        imports,
        grants: Grants::default(),
        code: Arc::new(Code {
            wasm,
            pre: OnceLock::new(),
        }),
    })
}

/// A plugin's bytes checked before anything else reads them: at most
/// [`MAX_PLUGIN_BYTES`], and a component (not a core module, not native
/// code).
fn check_plugin_bytes(label: &str, wasm: &[u8]) -> Result<(), SandboxError> {
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
    })
}

/// Where a tool's running code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeOrigin {
    /// Compiled when GOAT was built, and embedded in the binary (built-in
    /// tools only).
    Precompiled,
    /// Taken from the compiled-code cache.
    Cache,
    /// Compiled by this process.
    Compiled,
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

    /// Whether the component imports `interface` (`wasi:http/types`), at
    /// any version.
    pub fn imports_interface(&self, interface: &str) -> bool {
        self.imports
            .iter()
            .any(|i| i.split_once('@').map_or(i.as_str(), |(name, _)| name) == interface)
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

    /// What the person granted it at `goat plugins add`.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// The same plugin with `grants`, checked against their ceilings. A
    /// built-in is granted nothing.
    pub fn with_grants(mut self, grants: Grants) -> Result<Self, SandboxError> {
        let refused = |reason: String| SandboxError::NotATool {
            name: self.declared_name.clone(),
            reason,
        };
        if self.kind != ToolKind::Plugin && !grants.is_empty() {
            return Err(refused("only a plugin can be granted anything".to_owned()));
        }
        grants.check().map_err(refused)?;
        self.grants = grants;
        Ok(self)
    }

    /// Where the code its calls run came from, once it has some (a built-in
    /// has none until its first call).
    pub fn code_origin(&self) -> Option<CodeOrigin> {
        self.code.pre.get().map(|(_, origin)| *origin)
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
        self.load_now(label, wasm, ToolKind::Builtin)
    }

    /// Loads the embedded built-in `builtin` without compiling it when its
    /// spec is recorded ([`crate::builtin`]): its imports are checked from
    /// its bytes now; it is compiled (or taken from the cache), linked and
    /// its spec checked against the record on its first
    /// [`Sandbox::call`]. A built-in with no record for its bytes is loaded
    /// as [`Sandbox::load`] does.
    pub fn load_builtin(&self, builtin: &Builtin) -> Result<Tool, SandboxError> {
        let sha256 = cache::sha256_hex(builtin.wasm);
        let Some(spec) = recorded_spec(&sha256) else {
            return self.load(builtin.name, builtin.wasm);
        };
        lazy(
            builtin.name,
            Cow::Borrowed(builtin.wasm),
            sha256,
            spec,
            ToolKind::Builtin,
        )
    }

    /// Loads a plugin: like [`Sandbox::load`], but the component may import
    /// only [`PLUGIN_IMPORTS`](crate::PLUGIN_IMPORTS), must be at most [`MAX_PLUGIN_BYTES`], and is
    /// linked against the plugin linker.
    ///
    /// # Security
    ///
    /// `wasm` must be a WebAssembly component; precompiled native code (a
    /// `.cwasm`) and core modules are refused by their header before
    /// anything else reads them. Its imports are read from its bytes and a
    /// forbidden one refuses it (every such import named) before it is
    /// compiled. It is compiled here, by this engine, and its compiled form
    /// is cached (by sha256) only once it has passed every check. An
    /// allowed one is instantiated once, with no preopen, to read its spec.
    pub fn load_plugin(&self, label: &str, wasm: &[u8]) -> Result<Tool, SandboxError> {
        check_plugin_bytes(label, wasm)?;
        self.load_now(label, wasm, ToolKind::Plugin)
    }

    /// Loads a plugin whose spec was read from it when it was added
    /// (`declared`, its own name included), without compiling it: it is
    /// compiled (or taken from the cache) on its first call, as a built-in
    /// is, so a session compiles no plugin it does not call.
    ///
    /// # Security
    ///
    /// The same checks as [`Sandbox::load_plugin`] run now on the bytes
    /// (size, header, every import), and `declared` must be a valid spec.
    /// On the first call the compiled component's imports are checked
    /// again and the spec it declares must equal `declared`, or the call is
    /// refused: a changed record can change what is offered, never what
    /// runs or what it may reach.
    pub fn load_plugin_declared(
        &self,
        label: &str,
        wasm: Vec<u8>,
        declared: ToolSpec,
    ) -> Result<Tool, SandboxError> {
        check_plugin_bytes(label, &wasm)?;
        let sha256 = cache::sha256_hex(&wasm);
        lazy(label, Cow::Owned(wasm), sha256, declared, ToolKind::Plugin)
    }

    /// Checks the imports, compiles, links and reads the spec, all now.
    fn load_now(&self, label: &str, wasm: &[u8], kind: ToolKind) -> Result<Tool, SandboxError> {
        let imports = checked_imports(label, wasm, kind)?;
        let sha256 = cache::sha256_hex(wasm);
        let (pre, spec, origin) = self.compile(label, wasm, &sha256, kind, &|_| Ok(()))?;
        Ok(Tool {
            declared_name: spec.name.clone(),
            spec,
            kind,
            sha256,
            imports,
            grants: Grants::default(),
            code: Arc::new(Code {
                wasm: Cow::Borrowed(&[]),
                pre: OnceLock::from((pre, origin)),
            }),
        })
    }

    /// Readies `tool` for its calls now: compiled (or taken from the
    /// binary or the cache) and checked, its imports against the allowlist
    /// again and its spec against the one it was offered with. A router
    /// calls it before it relies on that spec (the schema check, the
    /// gate's paths, the question to the person), so a spec recorded
    /// wrongly never decides anything; [`Sandbox::call`] does it too.
    pub fn prepare(&self, tool: &Tool) -> Result<(), SandboxError> {
        self.prepared(tool).map(|_| ())
    }

    /// `tool`'s linked component, compiled (or taken from the cache) and
    /// checked on its first call: its imports against the allowlist again,
    /// its spec against the one it was offered with.
    pub(crate) fn prepared<'t>(
        &self,
        tool: &'t Tool,
    ) -> Result<&'t PureToolPre<Host>, SandboxError> {
        if let Some((pre, _)) = tool.code.pre.get() {
            return Ok(pre);
        }
        let mut offered = tool.spec.clone();
        offered.name.clone_from(&tool.declared_name);
        let same_spec = |read: &ToolSpec| {
            if *read == offered {
                Ok(())
            } else {
                Err(format!(
                    "its spec is not the one recorded for it (recorded {offered:?}, declared \
                     {read:?})"
                ))
            }
        };
        let (pre, _, origin) = self.compile(
            &tool.declared_name,
            &tool.code.wasm,
            &tool.sha256,
            tool.kind,
            &same_spec,
        )?;
        // Two calls racing to compile both succeed; the first kept serves.
        Ok(&tool.code.pre.get_or_init(|| (pre, origin)).0)
    }

    /// Compiles `wasm` (or takes it from the cache), checks the compiled
    /// type's imports, links it, reads its spec and checks it (valid, and
    /// `expected`), and caches the compiled form only then.
    fn compile(
        &self,
        label: &str,
        wasm: &[u8],
        sha256: &str,
        kind: ToolKind,
        expected: &dyn Fn(&ToolSpec) -> Result<(), String>,
    ) -> Result<(PureToolPre<Host>, ToolSpec, CodeOrigin), SandboxError> {
        // Built-in code compiled with GOAT is looked up only for a built-in:
        // a plugin whose bytes were a built-in's would still be compiled.
        let precompiled = match kind {
            ToolKind::Builtin => precompiled::lookup(self.precompiled, &self.engine, sha256),
            ToolKind::Plugin => None,
        };
        let found = precompiled
            .map(|c| (c, CodeOrigin::Precompiled))
            .or_else(|| {
                let cache = self.cache.as_ref()?;
                Some((cache.get(&self.engine, sha256)?, CodeOrigin::Cache))
            });
        let (component, origin) =
            match found {
                Some(found) => found,
                None => {
                    let component = wasmtime::component::Component::new(&self.engine, wasm)
                        .map_err(|source| SandboxError::Compile {
                            name: label.to_owned(),
                            source,
                        })?;
                    (component, CodeOrigin::Compiled)
                }
            };

        // Checked on the bytes already; checked again on what compiled (or
        // came from the cache), which is what runs.
        let ty = component.component_type();
        let imports: Vec<String> = ty
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        check_allowed(label, &imports, kind)?;

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

        let (mut store, _, _) = self.store(None, kind, &Grants::default(), None)?;
        let raw = pre
            .instantiate(&mut store)
            .and_then(|i| i.goat_tool_tool().call_spec(&mut store))
            .map_err(|e| not_a_tool(format!("calling spec() failed: {e:#}")))?;
        let parameters = serde_json::from_str(&raw.parameters)
            .map_err(|e| not_a_tool(format!("its parameters are not valid JSON: {e}")))?;
        let spec = ToolSpec {
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
        spec.validate().map_err(not_a_tool)?;
        expected(&spec).map_err(not_a_tool)?;
        // Only a component that passed every check is worth keeping.
        if origin == CodeOrigin::Compiled
            && let Some(cache) = &self.cache
        {
            cache.put(sha256, &component)?;
        }
        Ok((pre, spec, origin))
    }

    /// The eight embedded Pen file tools, none of them compiled yet (see
    /// [`Sandbox::load_builtin`]).
    pub fn load_pen_tools(&self) -> Result<Vec<Tool>, SandboxError> {
        builtin::PEN_TOOLS
            .iter()
            .map(|b| self.load_builtin(b))
            .collect()
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::builtin::PEN_TOOLS;
    use crate::{Pen, SandboxBuilder};

    fn entries(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn workspace() -> tempfile::TempDir {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
        ws
    }

    const READ_A: &str = r#"{"path": "a.txt"}"#;

    /// Compiling is the slow part of a first call; GOAT's build did it for
    /// the built-in tools. Each is taken from the binary on its first call,
    /// none is compiled or written to the cache, and a tool not called is
    /// not even deserialized.
    #[test]
    fn the_built_in_tools_run_the_code_compiled_when_goat_was_built() {
        assert_eq!(
            crate::precompiled_builtins(),
            Ok(PEN_TOOLS.len()),
            "this build should carry every built-in precompiled"
        );
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("cache");
        let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
        let tools = sandbox.load_pen_tools().unwrap();
        let ws = workspace();
        let pen = Pen::new(ws.path(), Access::Read).unwrap();
        let out = sandbox.call(&tools[0], READ_A, &pen).unwrap().unwrap();
        assert!(out.contains("alpha"), "{out}");
        assert_eq!(tools[0].code_origin(), Some(CodeOrigin::Precompiled));
        assert!(tools[1..].iter().all(|t| t.code_origin().is_none()));
        assert_eq!(entries(&cache), Vec::<String>::new(), "nothing compiled");
        for tool in &tools {
            sandbox.prepared(tool).unwrap();
            assert_eq!(
                tool.code_origin(),
                Some(CodeOrigin::Precompiled),
                "{}",
                tool.spec().name
            );
        }
        assert_eq!(entries(&cache), Vec::<String>::new());
    }

    /// Where the binary's code does not fit (another CPU), a session
    /// compiles only the tools it calls, caches them, and a new process
    /// takes them from the cache.
    #[test]
    fn without_precompiled_code_a_session_compiles_only_the_tools_it_calls() {
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("cache");
        let build = || {
            SandboxBuilder::new()
                .cache_dir(&cache)
                .ignore_precompiled()
                .build()
                .unwrap()
        };
        let sandbox = build();
        let tools = sandbox.load_pen_tools().unwrap();
        assert_eq!(tools.len(), PEN_TOOLS.len());
        assert_eq!(
            entries(&cache),
            Vec::<String>::new(),
            "offered, not compiled"
        );

        let ws = workspace();
        let pen = Pen::new(ws.path(), Access::Read).unwrap();
        let read_file = &tools[0];
        assert_eq!(read_file.spec().name, "read_file");
        let out = sandbox.call(read_file, READ_A, &pen).unwrap().unwrap();
        assert!(out.contains("alpha"), "{out}");
        assert_eq!(read_file.code_origin(), Some(CodeOrigin::Compiled));
        let cached = entries(&cache);
        assert_eq!(cached.len(), 1, "{cached:?}");
        assert!(cached[0].starts_with(read_file.sha256()), "{cached:?}");

        // A clone shares the compiled code; a second call compiles nothing.
        let again = read_file.clone();
        sandbox.call(&again, READ_A, &pen).unwrap().unwrap();
        assert_eq!(entries(&cache), cached);

        // A new process (a new sandbox) takes it from the cache.
        let warm = build();
        let tools = warm.load_pen_tools().unwrap();
        warm.call(&tools[0], READ_A, &pen).unwrap().unwrap();
        assert_eq!(tools[0].code_origin(), Some(CodeOrigin::Cache));
        assert_eq!(entries(&cache), cached);
    }

    /// Precompiled code that this engine does not accept (compiled under
    /// other settings, as for another CPU or another GOAT) is never run:
    /// the component is compiled as if there were none.
    #[test]
    fn precompiled_code_for_another_engine_configuration_is_compiled_again_not_loaded() {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let other = wasmtime::Engine::new(&config).unwrap();
        let foreign: &'static [u8] = other
            .precompile_component(PEN_TOOLS[0].wasm)
            .unwrap()
            .leak();
        let sha: &'static str = sha256_hex(PEN_TOOLS[0].wasm).leak();
        let table: precompiled::Table = vec![(sha, foreign)].leak();
        let sandbox = SandboxBuilder::new().precompiled(table).build().unwrap();
        let read_file = sandbox.load_builtin(&PEN_TOOLS[0]).unwrap();
        let ws = workspace();
        let pen = Pen::new(ws.path(), Access::Read).unwrap();
        let out = sandbox.call(&read_file, READ_A, &pen).unwrap().unwrap();
        assert!(out.contains("alpha"), "{out}");
        assert_eq!(read_file.code_origin(), Some(CodeOrigin::Compiled));
    }

    /// Code filed under a built-in's sha256 that is another tool's is
    /// refused on the spec it declares, not run as the tool offered.
    #[test]
    fn precompiled_code_of_another_tool_is_refused_by_its_spec() {
        let sandbox = SandboxBuilder::new().build().unwrap();
        let list = sandbox
            .engine
            .precompile_component(PEN_TOOLS[1].wasm)
            .unwrap();
        let sha: &'static str = sha256_hex(PEN_TOOLS[0].wasm).leak();
        let table: precompiled::Table = vec![(sha, &*list.leak())].leak();
        let sandbox = SandboxBuilder::new().precompiled(table).build().unwrap();
        let read_file = sandbox.load_builtin(&PEN_TOOLS[0]).unwrap();
        let ws = workspace();
        let pen = Pen::new(ws.path(), Access::Read).unwrap();
        match sandbox.call(&read_file, READ_A, &pen) {
            Err(SandboxError::NotATool { name, reason }) => {
                assert_eq!(name, "read_file");
                assert!(reason.contains("not the one recorded"), "{reason}");
            }
            other => panic!("expected NotATool, got {other:?}"),
        }
    }

    #[test]
    fn lazily_loaded_tools_offer_the_specs_the_components_declare() {
        let sandbox = SandboxBuilder::new().build().unwrap();
        for (lazy, b) in sandbox.load_pen_tools().unwrap().iter().zip(PEN_TOOLS) {
            let eager = sandbox.load(b.name, b.wasm).unwrap();
            assert_eq!(lazy.spec(), eager.spec(), "{}", b.name);
            assert_eq!(lazy.imports(), eager.imports(), "{}", b.name);
            assert_eq!(lazy.sha256(), eager.sha256(), "{}", b.name);
        }
    }

    #[test]
    fn a_recorded_spec_the_component_does_not_declare_refuses_the_call() {
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("cache");
        let sandbox = SandboxBuilder::new()
            .cache_dir(&cache)
            .ignore_precompiled()
            .build()
            .unwrap();
        let mut read_file = sandbox.load_builtin(&PEN_TOOLS[0]).unwrap();
        // A record claiming more access than the component declares.
        read_file.spec.access = Access::ReadWrite;
        let ws = workspace();
        let pen = Pen::new(ws.path(), Access::ReadWrite).unwrap();
        match sandbox.call(&read_file, READ_A, &pen) {
            Err(SandboxError::NotATool { name, reason }) => {
                assert_eq!(name, "read_file");
                assert!(reason.contains("not the one recorded"), "{reason}");
            }
            other => panic!("expected NotATool, got {other:?}"),
        }
        assert_eq!(
            entries(&cache),
            Vec::<String>::new(),
            "nothing refused is cached"
        );
    }

    /// An entry compiled by an engine configured otherwise, under this
    /// engine's name, is not loaded: wasmtime refuses it, and the
    /// component is compiled again and the entry replaced.
    #[test]
    fn code_compiled_for_another_engine_configuration_is_recompiled_not_loaded() {
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("cache");
        let sandbox = SandboxBuilder::new()
            .cache_dir(&cache)
            .ignore_precompiled()
            .build()
            .unwrap();
        let read_file = sandbox.load_builtin(&PEN_TOOLS[0]).unwrap();
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let other = wasmtime::Engine::new(&config).unwrap();
        let foreign = wasmtime::component::Component::new(&other, PEN_TOOLS[0].wasm)
            .unwrap()
            .serialize()
            .unwrap();
        let entry = sandbox.cache.as_ref().unwrap().path(read_file.sha256());
        std::fs::write(&entry, &foreign).unwrap();
        assert!(
            sandbox
                .cache
                .as_ref()
                .unwrap()
                .get(&sandbox.engine, read_file.sha256())
                .is_none(),
            "another configuration's code is refused"
        );

        let ws = workspace();
        let pen = Pen::new(ws.path(), Access::Read).unwrap();
        sandbox.call(&read_file, READ_A, &pen).unwrap().unwrap();
        let now = std::fs::read(&entry).unwrap();
        assert_ne!(now, foreign, "the entry was compiled again and replaced");
        assert!(
            sandbox
                .cache
                .as_ref()
                .unwrap()
                .get(&sandbox.engine, read_file.sha256())
                .is_some()
        );
    }

    #[test]
    fn a_plugin_with_forbidden_imports_is_refused_naming_each_before_compiling() {
        let home = tempfile::tempdir().unwrap();
        let cache = home.path().join("cache");
        let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
        let wasm = include_bytes!("../../../plugins/dist/testing/wants_more.wasm");
        match sandbox.load_plugin("more", wasm) {
            Err(SandboxError::ForbiddenImport { imports, .. }) => {
                assert!(
                    imports
                        .iter()
                        .all(|i| !crate::linker::import_allowed(i, crate::PLUGIN_IMPORTS)),
                    "{imports:?}"
                );
                let parsed = crate::imports::component_imports(wasm).unwrap();
                let all_forbidden: Vec<&String> = parsed
                    .iter()
                    .filter(|i| !crate::linker::import_allowed(i, crate::PLUGIN_IMPORTS))
                    .collect();
                assert_eq!(imports.iter().collect::<Vec<_>>(), all_forbidden);
            }
            other => panic!("expected ForbiddenImport, got {other:?}"),
        }
        assert_eq!(entries(&cache), Vec::<String>::new());
    }
}
