//! The eight Pen file tools, run as the real components through the real
//! sandbox against real files: every success path and every error the
//! tools can report, checked on the result text and on the disk.

use std::fs;

use goat_sandbox::{Access, CallResult, ToolError};
use serde_json::{Value, json};

use crate::support::*;

/// A `ToolError` variant, named by its constructor (`ToolError::Conflict`).
type Variant = fn(String) -> ToolError;

/// Asserts that `result` is a tool error of `variant` whose message
/// contains every one of `needles`, and returns the message.
#[track_caller]
fn expect_err(result: CallResult, variant: Variant, needles: &[&str]) -> String {
    let err = tool_err(result);
    assert_eq!(
        std::mem::discriminant(&err),
        std::mem::discriminant(&variant(String::new())),
        "wrong error variant: {err:?}"
    );
    let message = err.message().to_owned();
    for needle in needles {
        assert!(
            message.contains(needle),
            "error {err:?} does not mention {needle:?}"
        );
    }
    message
}

/// Asserts that `text` contains `needle`, showing `text` when it does not.
#[track_caller]
fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not found in:\n{text}");
}

/// Lines `1..=n` of the form `line 00001` padded to a fixed width, so that
/// a line's content says which line it is.
fn numbered_lines(n: usize, width: usize) -> String {
    (1..=n)
        .map(|i| format!("{:<width$}\n", format!("line {i:05}")))
        .collect()
}

/// `n` empty files `f0000.txt`... in directory `dir` of the workspace.
fn many_files(ws: &Workspace, dir: &str, n: usize) {
    let dir = ws.root.join(dir);
    fs::create_dir_all(&dir).unwrap();
    for i in 0..n {
        fs::write(dir.join(format!("f{i:04}.txt")), "").unwrap();
    }
}

/// Creates a symlink at `rel` inside the workspace pointing to `target`.
fn symlink(ws: &Workspace, target: impl AsRef<std::path::Path>, rel: &str) {
    std::os::unix::fs::symlink(target, ws.root.join(rel)).unwrap();
}

/// Creates a file at raw path bytes `rel` (parents included) in directory
/// `dir` of the workspace: names that are not valid UTF-8, which WASI
/// cannot hand the tool as strings.
fn write_raw_name(ws: &Workspace, dir: &str, rel: &[u8], content: &str) {
    use std::os::unix::ffi::OsStrExt;
    let path = ws.root.join(dir).join(std::ffi::OsStr::from_bytes(rel));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// `a.txt`, a file named `bad\xff.txt` (not UTF-8) and `z.txt`, each one
/// line `needle`: the undecodable name sits between two readable siblings.
fn undecodable_name_between_siblings() -> Workspace {
    let ws = Workspace::new();
    ws.write("a.txt", "needle\n").write("z.txt", "needle\n");
    write_raw_name(&ws, ".", b"bad\xff.txt", "needle\n");
    ws
}

mod arguments;
mod delete_file;
mod edit_file;
mod encodings;
mod find_files;
mod list_directory;
mod manners;
mod move_file;
mod paths;
mod read_file;
mod search_files;
mod special_files;
mod specs;
mod symlinks;
mod write_file;
