//! Sockets and FIFOs are never read (the host opens without blocking, so a
//! FIFO cannot hold a call past its timeout, and refuses anything but files
//! and directories): refused when named, passed by when walking.

use super::*;

/// A workspace with `fifo`, `sock` and `a.txt`; keep the listener alive.
fn workspace() -> (Workspace, std::os::unix::net::UnixListener) {
    let ws = Workspace::new();
    ws.write("a.txt", "x\n");
    let status = std::process::Command::new("mkfifo")
        .arg(ws.root.join("fifo"))
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo failed");
    let listener = std::os::unix::net::UnixListener::bind(ws.root.join("sock")).unwrap();
    (ws, listener)
}

#[test]
fn every_tool_refuses_a_special_file_named_as_its_path() {
    let (ws, _listener) = workspace();
    let not_read = "is not a regular file (a device, pipe or socket); it was not read";
    for path in ["fifo", "sock"] {
        let calls = [
            ("read_file", json!({"path": path}), not_read),
            (
                "edit_file",
                json!({"path": path, "old_string": "x", "new_string": "y"}),
                not_read,
            ),
            (
                "search_files",
                json!({"pattern": "x", "path": path}),
                not_read,
            ),
            (
                "write_file",
                json!({"path": path, "content": "x"}),
                "is not a regular file",
            ),
            (
                "list_directory",
                json!({"path": path}),
                "is not a directory",
            ),
            (
                "find_files",
                json!({"pattern": "*", "path": path}),
                "is not a directory to search",
            ),
        ];
        // The host opened the FIFO (without blocking) and refused it, in
        // its own words naming the file (a socket cannot be opened at all).
        if path == "fifo" {
            expect_err(
                ws.read_call("read_file", json!({"path": path})),
                ToolError::Conflict,
                &["GOAT: 'fifo' is not a regular file or directory (a FIFO, socket or device)"],
            );
        }
        for (name, args, why) in calls {
            expect_err(
                ws.write_call(name, args),
                ToolError::Conflict,
                &[&format!("'{path}' {why}")],
            );
        }
    }
}

#[test]
fn walks_pass_special_files_by() {
    let (ws, _listener) = workspace();
    assert_eq!(
        ok(ws.read_call("list_directory", json!({}))),
        "a.txt  (file, 2 bytes)\nfifo  (special file)\nsock  (special file)\n"
    );
    assert_eq!(
        ok(ws.read_call("find_files", json!({"pattern": "*"}))),
        "a.txt\n"
    );
    assert_eq!(
        ok(ws.read_call("search_files", json!({"pattern": "x"}))),
        "a.txt:1:x\n[1 matching line in 1 file; 1 file searched]\n"
    );
}

/// A FIFO named to a tool is never opened, not even without blocking: the
/// open alone would wake a writer waiting for a reader (and, for a device,
/// could make its driver act). A writer blocked opening the FIFO stays
/// blocked through every tool's call on it.
#[test]
fn a_fifo_named_to_a_tool_is_never_opened() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (ws, _listener) = workspace();
    let fifo = ws.root.join("fifo");
    let woke = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (fifo, woke) = (fifo.clone(), woke.clone());
        // Blocks in open until some reader opens the FIFO.
        std::thread::spawn(move || {
            let file = std::fs::OpenOptions::new().write(true).open(&fifo);
            woke.store(true, Ordering::SeqCst);
            file.is_ok()
        })
    };
    for (name, args) in [
        ("read_file", json!({"path": "fifo"})),
        ("search_files", json!({"pattern": "x", "path": "fifo"})),
        (
            "edit_file",
            json!({"path": "fifo", "old_string": "x", "new_string": "y"}),
        ),
    ] {
        assert!(ws.write_call(name, args).is_err(), "{name}");
    }
    // A woken writer would have set the flag by now; give it the chance.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let woken_by_a_tool = woke.load(Ordering::SeqCst);
    assert!(!woken_by_a_tool, "a tool opened the FIFO");
    // Release the writer, still waiting: open the FIFO for reading.
    let _reader = std::fs::File::open(&fifo).unwrap();
    assert!(writer.join().unwrap());
}
