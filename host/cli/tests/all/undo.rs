//! Checkpoints and `goat undo` (ADR-0073), through the real binary: a
//! scripted model changes files with the Pen tools, then `goat undo` puts
//! back exactly what it changed, or refuses and changes nothing.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use goat_testkit::Reply;

use crate::{GoatRun, call_reply, content_reply, text};

/// Bytes that are not UTF-8 and end without a newline, so "exactly" means
/// exactly.
const KEEP: &[u8] = b"one\r\ntwo \xff\r\nthree";

/// The files the scripted turn changes, before it.
fn plant(run: &crate::GoatRunBuilder) {
    let ws = &run.env().ws;
    fs::write(ws.join("keep.txt"), KEEP).unwrap();
    fs::write(ws.join("old.txt"), b"moved away\n").unwrap();
    fs::write(ws.join("gone.bin"), b"\x00\x01binary\x00").unwrap();
    // Modes undo must give back: an executable deleted, a private file
    // moved away.
    fs::set_permissions(ws.join("gone.bin"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(ws.join("old.txt"), fs::Permissions::from_mode(0o600)).unwrap();
}

/// The permission bits of `path`.
fn mode_of(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// One turn that writes a new file, edits one, moves one and deletes one.
fn changing_turn() -> Vec<Reply> {
    vec![
        call_reply(
            "c1",
            "write_file",
            r#"{"path": "new/made.txt", "content": "fresh\n"}"#,
        ),
        call_reply(
            "c2",
            "edit_file",
            r#"{"path": "keep.txt", "old_string": "one", "new_string": "ONE"}"#,
        ),
        call_reply(
            "c3",
            "move_file",
            r#"{"from": "old.txt", "to": "moved.txt"}"#,
        ),
        call_reply("c4", "delete_file", r#"{"path": "gone.bin"}"#),
        content_reply("Done."),
    ]
}

async fn changed_world() -> GoatRun {
    let builder = GoatRun::builder().replies(changing_turn()).allow_writes();
    plant(&builder);
    let run = builder.run("change things").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    // The turn did what it says.
    assert_eq!(run.read("new/made.txt"), "fresh\n");
    assert!(
        fs::read(run.env.ws.join("keep.txt"))
            .unwrap()
            .starts_with(b"ONE")
    );
    assert!(!run.exists("old.txt") && run.exists("moved.txt"));
    assert!(!run.exists("gone.bin"));
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_puts_back_exactly_what_the_turn_changed() {
    let run = changed_world().await;
    let out = run.env.run(&["undo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let ws = &run.env.ws;
    assert_eq!(fs::read(ws.join("keep.txt")).unwrap(), KEEP);
    assert_eq!(fs::read(ws.join("old.txt")).unwrap(), b"moved away\n");
    assert_eq!(
        fs::read(ws.join("gone.bin")).unwrap(),
        b"\x00\x01binary\x00"
    );
    assert_eq!(mode_of(&ws.join("gone.bin")), 0o755);
    assert_eq!(mode_of(&ws.join("old.txt")), 0o600);
    assert!(!ws.join("moved.txt").exists());
    assert!(!ws.join("new/made.txt").exists(), "made by the turn");
    assert!(stdout.contains("undid turn 1 of session"), "{stdout}");
    for line in [
        "  removed (it did not exist before) new/made.txt",
        "  restored keep.txt",
        "  recreated old.txt",
        "  removed (it did not exist before) moved.txt",
        "  recreated gone.bin",
    ] {
        assert!(stdout.contains(line), "{line:?} in {stdout}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_undo_of_the_same_turn_does_nothing_and_says_so() {
    let run = changed_world().await;
    assert_eq!(run.env.run(&["undo"]).status.code(), Some(0));
    // Someone writes the made file again: a second undo must not remove it.
    fs::write(run.env.ws.join("moved.txt"), "mine\n").unwrap();
    for args in [&["undo"][..], &["undo", "--turn", "1"]] {
        let out = run.env.run(args);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}");
        assert!(stdout.starts_with("nothing to undo: "), "{stdout}");
    }
    let stdout = text(&run.env.run(&["undo", "--turn", "1"]).stdout);
    assert!(
        stdout.contains("turn 1's changes were already undone"),
        "{stdout}"
    );
    assert_eq!(run.read("moved.txt"), "mine\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_since_refuses_the_whole_turn_and_nothing_is_restored() {
    let run = changed_world().await;
    let ws = &run.env.ws;
    fs::write(ws.join("keep.txt"), "someone else's work\n").unwrap();
    let out = run.env.run(&["undo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("'keep.txt' (its content differs)")
            && stdout.contains("nothing was restored"),
        "{stdout}"
    );
    // Nothing of the turn was put back, and the person's work stands.
    assert_eq!(
        fs::read_to_string(ws.join("keep.txt")).unwrap(),
        "someone else's work\n"
    );
    assert_eq!(run.read("new/made.txt"), "fresh\n");
    assert!(run.exists("moved.txt") && !run.exists("old.txt") && !run.exists("gone.bin"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_planted_after_the_write_is_not_followed_out_of_the_workspace() {
    let run = changed_world().await;
    let ws = &run.env.ws;
    // `new/` becomes a link to a directory outside holding the very file
    // the turn made: following it, undo would remove the outside file.
    let outside = run.env.root.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("made.txt"), "fresh\n").unwrap();
    fs::remove_dir_all(ws.join("new")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("new")).unwrap();
    let out = run.env.run(&["undo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("'new/made.txt' (it is now"), "{stdout}");
    assert_eq!(
        fs::read_to_string(outside.join("made.txt")).unwrap(),
        "fresh\n"
    );
    // All or nothing: the rest of the turn stands too.
    assert!(
        fs::read(run.env.ws.join("keep.txt"))
            .unwrap()
            .starts_with(b"ONE")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_call_records_nothing_to_undo() {
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "edit_file",
                r#"{"path": "keep.txt", "old_string": "absent", "new_string": "x"}"#,
            ),
            content_reply("Could not."),
        ])
        .allow_writes();
    plant(&builder);
    let run = builder.run("edit").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let out = run.env.run(&["undo"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("has changed files left to undo"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(fs::read(run.env.ws.join("keep.txt")).unwrap(), KEEP);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_too_large_to_keep_is_not_deleted() {
    let builder = GoatRun::builder()
        .replies([
            call_reply("c1", "delete_file", r#"{"path": "big.bin"}"#),
            content_reply("Done."),
        ])
        .allow_writes();
    let big = vec![7u8; 8 * 1024 * 1024 + 1];
    fs::write(builder.env().ws.join("big.bin"), &big).unwrap();
    let run = builder.run("delete big.bin").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(fs::read(run.env.ws.join("big.bin")).unwrap(), big);
    assert!(
        run.request_text(1)
            .contains("more than the 8388608 bytes a checkpoint holds"),
        "{}",
        run.request_text(1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_that_cannot_be_kept_never_replaces_a_file_uncopied() {
    // The source is over the checkpoint cap, so the move is not
    // checkpointed; replacing main.rs with it would destroy main.rs with no
    // copy kept, so the call is refused and both files stay.
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "move_file",
                r#"{"from": "big.bin", "to": "main.rs", "overwrite": true}"#,
            ),
            content_reply("Done."),
        ])
        .allow_writes();
    let big = vec![7u8; 8 * 1024 * 1024 + 1];
    fs::write(builder.env().ws.join("big.bin"), &big).unwrap();
    fs::write(builder.env().ws.join("main.rs"), "fn main() {}\n").unwrap();
    let run = builder.run("move it").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(fs::read(run.env.ws.join("big.bin")).unwrap(), big);
    assert_eq!(
        fs::read_to_string(run.env.ws.join("main.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert!(
        run.request_text(1)
            .contains("would replace it with no copy kept"),
        "{}",
        run.request_text(1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_needs_a_session_to_work_on() {
    let env = crate::Env::new();
    let out = env.run(&["undo"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nothing to undo: there is no store yet"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_next_prompt_tells_the_model_its_changes_were_undone() {
    let run = changed_world().await;
    assert_eq!(run.env.run(&["undo"]).status.code(), Some(0));
    let id = run.sessions()[0]["id"].as_str().unwrap().to_owned();
    let server = goat_testkit::ScriptedServer::start(vec![content_reply("Understood.")]).await;
    let url = server.base_url();
    let out = run.env.resume(&url, &id, "what now?").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(
        sent.contains(&format!("{} keep.txt.]", goat_store::UNDONE_NOTE)),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_move_runs_unkept_and_undo_says_it_does_not_reverse_it() {
    let builder = GoatRun::builder()
        .replies([
            call_reply("c1", "write_file", r#"{"path": "a.txt", "content": "a\n"}"#),
            call_reply("c2", "move_file", r#"{"from": "dir", "to": "moved"}"#),
            content_reply("Done."),
        ])
        .allow_writes();
    fs::create_dir(builder.env().ws.join("dir")).unwrap();
    fs::write(builder.env().ws.join("dir/f.txt"), "f\n").unwrap();
    let run = builder.run("move").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert!(run.exists("moved/f.txt"));
    let out = run.env.run(&["undo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!run.exists("a.txt"));
    assert!(run.exists("moved/f.txt"), "moved back by undo");
    assert!(
        stdout.contains("note: turn 1 also moved a directory or link"),
        "{stdout}"
    );
}

/// Issue 22: a turn wrote `a.txt` and deleted `z/zz.txt`; then `z` became
/// a regular file. Undo refuses before writing anything, naming why, and
/// `a.txt` keeps the turn's version: never half a turn undone.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_in_the_way_refuses_the_whole_undo_through_the_binary() {
    let builder = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "write_file",
                r#"{"path": "a.txt", "content": "new\n"}"#,
            ),
            call_reply("c2", "delete_file", r#"{"path": "z/zz.txt"}"#),
            content_reply("Done."),
        ])
        .allow_writes();
    let ws = builder.env().ws.clone();
    fs::write(ws.join("a.txt"), "old\n").unwrap();
    fs::create_dir(ws.join("z")).unwrap();
    fs::write(ws.join("z/zz.txt"), "kept\n").unwrap();
    let run = builder.run("change and delete").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    fs::remove_dir_all(ws.join("z")).unwrap();
    fs::write(ws.join("z"), "a file now\n").unwrap();
    let out = run.env.run(&["undo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("'z/zz.txt' (it is now beneath 'z'"),
        "{stdout}"
    );
    assert_eq!(fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");
    assert_eq!(fs::read_to_string(ws.join("z")).unwrap(), "a file now\n");
}
