//! What a tool can reach outside its own memory, by kind: the two import
//! allowlists, the linkers that define exactly those interfaces, and the
//! frozen wall clock plugins read. What each interface gives a plugin is
//! set in its WASI context ([`crate::call`]): nothing of the host's.
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
use crate::deadline::HasBoundedIo;
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

/// The interfaces a plugin may import: the whole of WASI 0.2's command
/// world and `wasi:http`'s outgoing requests, each giving a plugin nothing
/// the person did not grant (ADR-0096, ADR-0097). The plugin linker
/// defines exactly these.
///
/// # Security
///
/// What each gives a plugin:
/// - the filesystem only through the preopen its declared and granted
///   access allows, every path decided by the fence; the streams and
///   pollables on its files;
/// - stdin empty; stdout and stderr captured and capped (shown to the
///   person, never to the model: a plugin reports through its result);
/// - no environment but the keys the person granted it ([`crate::Grants`]),
///   no arguments; `exit` ends the call as a tool failure; no terminal;
/// - the wall clock frozen at the Unix epoch ([`FrozenClock`]); the
///   monotonic clock and random numbers as wasmtime provides them (the
///   toolchains' runtimes seed themselves and time out with them);
/// - sockets and name lookup linked, every use refused (no TCP, no UDP,
///   no lookup, no address allowed);
/// - `wasi:http` outgoing requests sent by GOAT through the egress proxy
///   the call is given, which allows only the hosts the person granted
///   the plugin and records each decision; a call given no proxy has
///   every request refused ([`crate::http`]). No incoming handler.
///
/// Toolchains import the whole world whether a tool uses it or not
/// (componentize-py imports 25 interfaces and calls the environment and
/// random on every call; componentize-js imports stdio with every feature
/// off), so a narrower list refused every plugin not built GOAT's way.
pub const PLUGIN_IMPORTS: &[&str] = &[
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
    "wasi:http/types",
    "wasi:http/outgoing-handler",
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
    match kind {
        // GOAT's own tools wait only on their files.
        ToolKind::Builtin => {
            sync::io::poll::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
            sync::io::streams::add_to_linker::<Host, HasIo>(&mut l, |h| &mut h.table)?;
        }
        // A plugin's every wait ends at its call's deadline
        // ([`crate::deadline`]): it can wait on clocks, request bodies
        // and responses that never come.
        ToolKind::Plugin => {
            sync::io::poll::add_to_linker::<Host, HasBoundedIo>(&mut l, Host::bounded_io)?;
            sync::io::streams::add_to_linker::<Host, HasBoundedIo>(&mut l, Host::bounded_io)?;
        }
    }
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
    cli::stdout::add_to_linker::<Host, WasiCli>(&mut l, Host::cli)?;
    cli::stderr::add_to_linker::<Host, WasiCli>(&mut l, Host::cli)?;
    match kind {
        ToolKind::Builtin => {}
        ToolKind::Plugin => add_plugin_world(&mut l)?,
    }
    Ok(l)
}

/// The rest of [`PLUGIN_IMPORTS`]: what the call's WASI context makes of
/// each is in [`crate::call`] (empty, captured, refused).
fn add_plugin_world(l: &mut Linker<Host>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::{cli, clocks, random, sockets, sync};
    use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
    use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView};
    clocks::monotonic_clock::add_to_linker::<Host, WasiClocks>(l, Host::clocks)?;
    random::random::add_to_linker::<Host, WasiRandom>(l, Host::random)?;
    random::insecure::add_to_linker::<Host, WasiRandom>(l, Host::random)?;
    random::insecure_seed::add_to_linker::<Host, WasiRandom>(l, Host::random)?;
    cli::environment::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::exit::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::stdin::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_input::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_output::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_stdin::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_stdout::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    cli::terminal_stderr::add_to_linker::<Host, WasiCli>(l, Host::cli)?;
    sockets::network::add_to_linker::<Host, WasiSockets>(l, &Default::default(), Host::sockets)?;
    sockets::instance_network::add_to_linker::<Host, WasiSockets>(l, Host::sockets)?;
    sockets::tcp_create_socket::add_to_linker::<Host, WasiSockets>(l, Host::sockets)?;
    sockets::ip_name_lookup::add_to_linker::<Host, WasiSockets>(l, Host::sockets)?;
    sync::sockets::tcp::add_to_linker::<Host, WasiSockets>(l, Host::sockets)?;
    sync::sockets::udp::add_to_linker::<Host, WasiSockets>(l, Host::sockets)?;
    sync::sockets::udp_create_socket::add_to_linker::<Host, WasiSockets>(l, Host::sockets)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(l)?;
    Ok(())
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
            assert!(import_allowed("wasi:cli/stdout@0.2.9", allowed));
            assert!(!import_allowed("wasi:filesystem/types@0.3.0", allowed));
            assert!(!import_allowed("wasi:filesystem/types", allowed));
            assert!(!import_allowed(
                "wasi:http/incoming-handler@0.2.12",
                allowed
            ));
            assert!(!import_allowed("evil:x/y@0.2.0", allowed));
        }
        // GOAT's own tools get no more than they use.
        for import in [
            "wasi:sockets/tcp@0.2.12",
            "wasi:cli/environment@0.2.12",
            "wasi:cli/stdin@0.2.12",
            "wasi:clocks/monotonic-clock@0.2.12",
            "wasi:random/random@0.2.12",
            "wasi:http/outgoing-handler@0.2.12",
            "wasi:http/types@0.2.12",
        ] {
            assert!(!import_allowed(import, ALLOWED_IMPORTS), "{import}");
            assert!(import_allowed(import, PLUGIN_IMPORTS), "{import}");
        }
    }

    #[test]
    fn the_builtins_imports_are_a_subset_of_a_plugins() {
        for import in ALLOWED_IMPORTS {
            assert!(PLUGIN_IMPORTS.contains(import), "{import}");
        }
    }
}
