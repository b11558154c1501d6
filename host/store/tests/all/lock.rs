//! One process drives a session at a time: the second lock fails at once
//! and names the holder; the lock goes when its guard is dropped or its
//! process is killed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use goat_store::{Store, StoreError};

/// The store in `dir`, with one session.
fn store_with_session(dir: &Path) -> (Store, String) {
    let mut store = Store::open(&dir.join("state").join("goat.db")).unwrap();
    let id = store
        .create_session(Path::new("/ws"), "http://e/v1", "m")
        .unwrap();
    (store, id)
}

#[test]
fn a_second_lock_on_a_session_fails_until_the_first_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, id) = store_with_session(dir.path());
    let other = store
        .create_session(Path::new("/ws"), "http://e/v1", "m")
        .unwrap();

    let held = store.lock_session(&id).unwrap();
    assert!(
        held.path()
            .starts_with(dir.path().join("state/goat.db-locks")),
        "{}",
        held.path().display()
    );
    // A second store on the same file, as a second process would open it.
    let second = Store::open(store.path()).unwrap();
    match second.lock_session(&id) {
        Err(StoreError::SessionInUse { id: in_use, pid }) => {
            assert_eq!(in_use, id);
            assert_eq!(pid, Some(std::process::id()));
        }
        other => panic!("expected SessionInUse, got {other:?}"),
    }
    let message = second.lock_session(&id).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "session {id} is in use: another GOAT process (pid {}) is running turns in it. \
             Wait for that process to finish (or stop it), or start a new session by leaving \
             out --session",
            std::process::id()
        )
    );

    // Another session is not held by it.
    let _other = second.lock_session(&other).unwrap();

    drop(held);
    let _again = second.lock_session(&id).unwrap();
}

#[cfg(unix)]
#[test]
fn the_lock_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(dir.path());
    let held = store.lock_session(&id).unwrap();
    let locks = held.path().parent().unwrap();
    let mode = std::fs::metadata(locks).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let mode = std::fs::metadata(held.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[cfg(unix)]
#[test]
fn a_lock_file_that_is_a_symlink_is_refused_and_its_target_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(dir.path());
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep me").unwrap();
    let locks = dir.path().join("state/goat.db-locks");
    std::fs::create_dir(&locks).unwrap();
    std::os::unix::fs::symlink(&target, locks.join(format!("{id}.lock"))).unwrap();
    match store.lock_session(&id) {
        Err(StoreError::Lock { path, .. }) => assert_eq!(path, locks.join(format!("{id}.lock"))),
        other => panic!("expected Lock, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}

/// The environment variables that make [`child_holds_a_lock`] a lock
/// holder rather than a test that does nothing.
const CHILD_DB: &str = "GOAT_STORE_TEST_LOCK_DB";
const CHILD_SESSION: &str = "GOAT_STORE_TEST_LOCK_SESSION";
/// What the child prints once it holds the lock (libtest may print it
/// after the test's name, on the same line).
const LOCKED: &str = "child-holds-the-lock";

/// Run by [`a_lock_held_by_a_killed_process_is_released`] in a child copy
/// of this test binary: takes the lock, says so, and waits to be killed.
#[test]
#[ignore = "a helper run by a_lock_held_by_a_killed_process_is_released"]
fn child_holds_a_lock() {
    let (Some(db), Some(id)) = (
        std::env::var_os(CHILD_DB),
        std::env::var(CHILD_SESSION).ok(),
    ) else {
        return;
    };
    let store = Store::open(Path::new(&db)).unwrap();
    let _held = store.lock_session(&id).unwrap();
    println!("{LOCKED}");
    std::thread::sleep(std::time::Duration::from_secs(120));
}

#[test]
fn a_lock_held_by_a_killed_process_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = store_with_session(dir.path());
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "lock::child_holds_a_lock",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DB, store.path())
            .env(CHILD_SESSION, &id)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let child = &mut child.0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.unwrap().contains(LOCKED)),
        "the child never took the lock"
    );

    match store.lock_session(&id) {
        Err(StoreError::SessionInUse { pid, .. }) => assert_eq!(pid, Some(child.id())),
        other => panic!("expected SessionInUse, got {other:?}"),
    }
    // SIGKILL: no destructor runs; only the kernel can let go.
    child.kill().unwrap();
    child.wait().unwrap();
    let _taken = store.lock_session(&id).unwrap();
}

/// A child process that does not outlive a failed test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
