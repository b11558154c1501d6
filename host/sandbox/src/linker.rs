//! What a tool can reach outside its own memory, by kind: the two import
//! allowlists, the linkers that define exactly those interfaces, and the
//! frozen wall clock plugins read.
//!
//! Both the load-time check ([`import_allowed`]) and the linker read the
//! same lists, so a component cannot import an interface the linker would
//! not define, nor the linker define one the check would refuse.

use wasmtime::Engine;
use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::HostWallClock;
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};

use crate::call::Host;
use crate::policy_fs::PolicyFilesystem;

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
/// at load time by [`Sandbox::load`](crate::Sandbox::load).
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

/// The WASI version family the linker implements; imports must be of it.
const WASI_VERSION_PREFIX: &str = "0.2.";

/// `wasi:io` host functions need only the resource table.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// A linker with exactly the imports `kind` allows ([`ALLOWED_IMPORTS`] or
/// [`PLUGIN_IMPORTS`]), synchronous flavour.
pub(crate) fn restricted_linker(
    engine: &Engine,
    kind: ToolKind,
    fenced: bool,
) -> wasmtime::Result<Linker<Host>> {
    use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, sync};
    let mut l = Linker::<Host>::new(engine);
    sync::io::error::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
    sync::io::poll::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
    sync::io::streams::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
    clocks::wall_clock::add_to_linker::<Host, WasiClocks>(&mut l, Host::clocks)?;
    // Every path-taking filesystem operation goes through the call's fence
    // (unfenced only in the benchmark that measures the fence).
    if fenced {
        sync::filesystem::types::add_to_linker::<Host, PolicyFilesystem>(&mut l, Host::policy_fs)?;
        filesystem::preopens::add_to_linker::<Host, PolicyFilesystem>(&mut l, Host::policy_fs)?;
    } else {
        sync::filesystem::types::add_to_linker::<Host, WasiFilesystem>(&mut l, Host::filesystem)?;
        filesystem::preopens::add_to_linker::<Host, WasiFilesystem>(&mut l, Host::filesystem)?;
    }
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
pub(crate) struct FrozenClock;

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
    /// [`Sandbox::load`](crate::Sandbox::load): [`ALLOWED_IMPORTS`].
    Builtin,
    /// Added by the person with `goat plugins add` and loaded with
    /// [`Sandbox::load_plugin`](crate::Sandbox::load_plugin):
    /// [`PLUGIN_IMPORTS`], a frozen clock.
    Plugin,
}

impl ToolKind {
    pub(crate) fn allowed_imports(self) -> &'static [&'static str] {
        match self {
            Self::Builtin => ALLOWED_IMPORTS,
            Self::Plugin => PLUGIN_IMPORTS,
        }
    }
}

/// Whether `name` (`interface@version`, as a component imports it) is one
/// of `allowed`, at a version the linker implements.
pub(crate) fn import_allowed(name: &str, allowed: &[&str]) -> bool {
    let (interface, version) = name.split_once('@').unwrap_or((name, ""));
    version.starts_with(WASI_VERSION_PREFIX) && allowed.contains(&interface)
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
}
