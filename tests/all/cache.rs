//! The compiled-code cache under attack: a workspace holding it, sandboxes
//! filling it at once, damaged, planted, shared and foreign entries, and a
//! directory others may write. Each is refused or compiled again; a
//! planted entry is never run.

use goat_sandbox::{Access, SandboxBuilder, SandboxError};

use crate::support::*;

#[test]
fn workspace_containing_the_compiled_cache_is_refused() {
    let ws = Workspace::new();
    let sandbox = SandboxBuilder::new()
        .cache_dir(ws.root.join(".cache/goat"))
        .build()
        .unwrap();
    let tools = sandbox.load_pen_tools().unwrap();
    match sandbox.call(&tools[0], r#"{"path": "x"}"#, &ws.pen(Access::Read)) {
        Err(SandboxError::Workspace { reason, .. }) => {
            assert!(reason.contains("compiled-code cache"), "{reason}")
        }
        other => panic!("expected the workspace to be refused, got {other:?}"),
    }
}

/// Sandboxes in one process filling one fresh cache at the same time (the
/// CI found this: each wrote the entry through the same temporary file and
/// one rename took the other's away) all load, and one entry remains.
#[test]
fn sandboxes_filling_one_cache_at_once_all_load() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let barrier = std::sync::Barrier::new(6);
    let loaded: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (cache, barrier) = (&cache, &barrier);
                scope.spawn(move || {
                    let sandbox = SandboxBuilder::new().cache_dir(cache).build().unwrap();
                    barrier.wait();
                    sandbox
                        .load("hostile", HOSTILE_WASM)
                        .map(|t| t.sha256().to_owned())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap_or_else(|e| panic!("{e:#}")))
            .collect()
    });
    assert_eq!(loaded.len(), 6);
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries.len(), 1, "one entry and no leftovers: {entries:?}");
}

#[test]
fn compiled_cache_is_reused_and_a_damaged_entry_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let sandbox = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let tool = sandbox.load("hostile", HOSTILE_WASM).unwrap();
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let name = entry.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with(tool.sha256()) && name.ends_with(".cwasm"),
        "{name}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            std::fs::metadata(entry).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    // Damage the entry: the next load must notice, recompile and replace it.
    std::fs::write(entry, b"not compiled code").unwrap();
    let again = sandbox.load("hostile", HOSTILE_WASM).unwrap();
    assert_eq!(again.sha256(), tool.sha256());
    assert!(
        std::fs::read(entry).unwrap().len() > 1000,
        "the damaged entry was not replaced"
    );
    let ws = Workspace::new();
    ws.write("a.txt", "a\n");
    let read = sandbox
        .call(
            &again,
            r#"{"action": "read", "path": "a.txt"}"#,
            &ws.pen(Access::Read),
        )
        .unwrap();
    assert_eq!(read, Ok("a\n".to_owned()));
}

/// A read-only cache (`goat tools list`) is used when it is there and
/// never created or written: a missing entry is compiled in memory, a
/// damaged one stays as it is.
#[test]
fn a_read_only_cache_is_used_but_never_created_or_written() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let names = || -> Vec<_> {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    };

    let reader = SandboxBuilder::new()
        .read_only_cache_dir(&cache)
        .build()
        .unwrap();
    reader.load("hostile", HOSTILE_WASM).unwrap();
    assert!(!cache.exists(), "a read-only cache was created");
    assert!(reader.cache_dir().is_none());

    let writer = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let tool = writer.load("hostile", HOSTILE_WASM).unwrap();
    let entry = cache.join(&names()[0]);
    std::fs::write(&entry, b"not compiled code").unwrap();
    let reader = SandboxBuilder::new()
        .read_only_cache_dir(&cache)
        .build()
        .unwrap();
    assert_eq!(
        reader.cache_dir(),
        Some(cache.canonicalize().unwrap().as_path())
    );
    let again = reader.load("hostile", HOSTILE_WASM).unwrap();
    assert_eq!(again.sha256(), tool.sha256());
    assert_eq!(std::fs::read(&entry).unwrap(), b"not compiled code");
    let pen = &goat_sandbox::builtin::PEN_TOOLS[0];
    reader.load(pen.name, pen.wasm).unwrap();
    assert_eq!(names().len(), 1, "{:?}", names());
}

/// Replaces the cached compiled code of `hostile` with `read_file`'s (a
/// valid entry for this engine, so it would deserialize), leaves it as
/// `tamper` says, and returns what a fresh sandbox then loads as `hostile`.
#[cfg(unix)]
fn load_with_substituted_entry(tamper: impl Fn(&std::path::Path)) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // Compiled, not taken from the binary, so that read_file has an entry.
    let sandbox = SandboxBuilder::new()
        .cache_dir(&cache)
        .ignore_precompiled()
        .build()
        .unwrap();
    let hostile = sandbox.load("hostile", HOSTILE_WASM).unwrap();
    let pen = &goat_sandbox::builtin::PEN_TOOLS[0];
    let read_file = sandbox.load(pen.name, pen.wasm).unwrap();
    let entry_of = |sha: &str| {
        std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(sha))
            .unwrap()
    };
    let hostile_entry = entry_of(hostile.sha256());
    let planted = std::fs::read(entry_of(read_file.sha256())).unwrap();
    std::fs::write(&hostile_entry, &planted).unwrap();
    tamper(&hostile_entry);
    let fresh = SandboxBuilder::new().cache_dir(&cache).build().unwrap();
    let loaded = fresh.load("hostile", HOSTILE_WASM).unwrap();
    (
        loaded.spec().name.clone(),
        std::fs::read(&hostile_entry).unwrap(),
    )
}

#[cfg(unix)]
#[test]
fn a_cache_entry_others_may_write_is_never_deserialized() {
    use std::os::unix::fs::PermissionsExt;
    let expected = sandbox().load("hostile", HOSTILE_WASM).unwrap();
    // Control: a planted entry that passes the checks is what runs (the
    // cache cannot tell; that is why who may write it matters).
    let (name, _) = load_with_substituted_entry(|_| {});
    assert_eq!(name, "read_file", "the substitution itself works");
    let (name, now) = load_with_substituted_entry(|entry| {
        std::fs::set_permissions(entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    });
    assert_eq!(name, expected.spec().name, "a 0666 entry is not used");
    assert!(now.len() > 1000, "it was compiled again and replaced");
}

#[cfg(unix)]
#[test]
fn a_cache_entry_owned_by_another_user_is_never_deserialized() {
    if own_uid() != 0 {
        eprintln!("skipped: giving a file to another user needs root");
        return;
    }
    let expected = sandbox().load("hostile", HOSTILE_WASM).unwrap();
    let (name, _) = load_with_substituted_entry(|entry| {
        std::os::unix::fs::chown(entry, Some(4242), None).unwrap();
    });
    assert_eq!(
        name,
        expected.spec().name,
        "another user's entry is not used"
    );
}

/// The effective user id, from the owner of a file this process creates.
#[cfg(unix)]
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("me"), b"").unwrap();
    std::fs::metadata(dir.path().join("me")).unwrap().uid()
}

#[cfg(unix)]
#[test]
fn a_cache_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    match SandboxBuilder::new().cache_dir(&cache).build() {
        Err(e @ SandboxError::Cache { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("can be written by its group and everyone"),
                "{msg}"
            );
            assert!(msg.contains("chmod 700"), "{msg}");
        }
        Err(other) => panic!("expected a cache error, got {other:?}"),
        Ok(_) => panic!("a 0777 cache directory was used"),
    }
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "nothing cached"
    );
}
