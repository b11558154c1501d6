//! The compiled-code cache.
//!
//! Compiling a component with Cranelift takes far longer than running it,
//! so compiled code is kept on disk, keyed by the sha256 of the component's
//! bytes and by the engine's compatibility hash (wasmtime version, target,
//! settings). Deserializing compiled code means trusting it as native code,
//! so it is only ever read from this host-owned directory, which GOAT
//! creates private to the user and refuses to share with a workspace; a
//! plugin's or a workspace's `.cwasm` is never loaded. A directory that
//! another user owns or may write is refused, and each entry is checked
//! (a regular file, ours, writable by no one else) on the descriptor it is
//! read from, before a byte of it is deserialized.

use std::io::Read;
use std::path::{Path, PathBuf};

use goat_state::fs::{
    check_private_dir, open_private_dir, open_private_file, write_private_atomic,
};
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::SandboxError;

/// A directory of compiled components for one engine configuration.
pub(crate) struct Cache {
    dir: PathBuf,
    engine_key: String,
    /// Whether [`Cache::put`] writes, or the cache is only read.
    access: CacheAccess,
}

/// Whether a sandbox may add to its compiled-code cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CacheAccess {
    /// Created if missing (private to the user); components compiled here
    /// are kept.
    ReadWrite,
    /// Used only if it exists, never created or written: what is there is
    /// used, anything else is compiled in memory and forgotten. For
    /// commands that must leave the disk as they found it (`goat tools
    /// list`).
    ReadOnly,
}

impl Cache {
    /// Opens (creating, private to the user) the cache directory.
    ///
    /// # Security
    ///
    /// A directory that already exists must be as private as a new one:
    /// owned by the user running GOAT and writable by no one else. A 0777
    /// cache would let any local user replace the code run as a tool.
    ///
    /// With [`CacheAccess::ReadOnly`], a missing directory is no cache
    /// (`None`), and an existing one is checked as strictly but not
    /// created.
    pub(crate) fn open(
        dir: PathBuf,
        engine: &Engine,
        access: CacheAccess,
    ) -> Result<Option<Self>, SandboxError> {
        let private = match access {
            CacheAccess::ReadWrite => open_private_dir(&dir),
            CacheAccess::ReadOnly => {
                if std::fs::symlink_metadata(&dir).is_err() {
                    return Ok(None);
                }
                check_private_dir(&dir)
            }
        };
        private.map_err(|e| SandboxError::Cache {
            path: dir.clone(),
            source: std::io::Error::other(e),
        })?;
        let dir = dir.canonicalize().map_err(|source| SandboxError::Cache {
            path: dir.clone(),
            source,
        })?;
        Ok(Some(Self {
            dir,
            engine_key: engine_key(engine),
            access,
        }))
    }

    /// The directory, canonical.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The compiled form of the component whose sha256 is `sha256`, if this
    /// engine cached one. A stale or damaged entry fails to deserialize
    /// (wasmtime checks its header and the engine's compatibility) and
    /// counts as absent: the caller compiles again and [`Cache::put`]s it.
    ///
    /// # Security
    ///
    /// An entry that is not a regular file owned by the user running GOAT
    /// and closed to others' writes is a miss too, and is never
    /// deserialized: it is checked on the open descriptor, and the bytes
    /// deserialized are read from that same descriptor.
    pub(crate) fn get(&self, engine: &Engine, sha256: &str) -> Option<Component> {
        let path = self.path(sha256);
        let mut file = open_private_file(&path).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        deserialize(engine, &bytes).ok()
    }

    /// Keeps `component`'s compiled form under `sha256`. Called only for a
    /// component that passed every check, so nothing refused is cached. A
    /// read-only cache keeps nothing.
    pub(crate) fn put(&self, sha256: &str, component: &Component) -> Result<(), SandboxError> {
        if self.access == CacheAccess::ReadOnly {
            return Ok(());
        }
        let path = self.path(sha256);
        let bytes = component.serialize().map_err(SandboxError::Host)?;
        // Through a temporary file and a rename, unique per write: a reader
        // never sees half an entry, and two sandboxes caching one component
        // at once do not clash.
        write_private_atomic(&path, &bytes).map_err(|source| SandboxError::Cache {
            path: path.clone(),
            source,
        })
    }

    pub(crate) fn path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}-{}.cwasm", self.engine_key))
    }
}

#[expect(
    unsafe_code,
    reason = "deserializing compiled code trusts it as native code; the file comes only from \
              GOAT's private cache directory, written by GOAT itself"
)]
fn deserialize(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `bytes` were read from an entry of the cache directory, which
    // GOAT creates with mode 0700, refuses if another user owns or may
    // write it, and never shares with a workspace or plugin directory (see
    // `Sandbox::call`); `open_private_file` checked, on the descriptor they
    // were read from, that the entry is a regular file of ours that no one
    // else may write. wasmtime validates the header and engine
    // compatibility.
    unsafe { Component::deserialize(engine, bytes) }
}

/// sha256 of `bytes`, lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A short stable key for the engine's configuration.
fn engine_key(engine: &Engine) -> String {
    use std::hash::Hash;
    struct ShaHasher(Sha256);
    impl std::hash::Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    hex(&h.0.finalize()[..8])
}
