//! A plugin's writes inside an attempt (issue 42): into the attempt's
//! layer, as the Pen's tools', landed with it.

use super::{can_attempt, in_layer};
use crate::jsonl::lines;
use crate::{GoatRun, content_reply};

#[tokio::test(flavor = "multi_thread")]
async fn a_plugins_writes_go_into_its_attempts_layer_and_land_with_it() {
    if !can_attempt() {
        return;
    }
    let builder = GoatRun::builder()
        .replies([
            goat_testkit::Reply::tool_call(
                "writer__write",
                r#"{"path": "made.txt", "content": "new\n"}"#,
            ),
            goat_testkit::Reply::tool_call(
                "writer__write",
                r#"{"path": "gone.txt", "remove": true}"#,
            ),
            content_reply("Done."),
        ])
        .allow_writes()
        .arg("--attempts")
        .arg("1")
        .arg("--output")
        .arg("jsonl");
    let env = builder.env();
    env.add_plugin(
        &crate::dist("testing/plugin_writer.wasm"),
        &["--name", "writer"],
    );
    std::fs::write(env.ws.join("gone.txt"), "bye\n").unwrap();
    let run = builder.run("Use the plugin").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let out = lines(&run.out.stdout);
    let end = out.last().unwrap();
    // What the plugin wrote was the attempt's layer's: a file, and a
    // removal (a whiteout), each the attempt's change.
    let mut changed: Vec<&str> = end["attempts"][0]["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    changed.sort_unstable();
    assert_eq!(changed, ["gone.txt", "made.txt"], "{end}");
    let upper = in_layer(&run.env.root, 1, "").unwrap();
    assert_eq!(
        std::fs::read_to_string(upper.join("made.txt")).unwrap(),
        "new\n"
    );
    let whiteout = std::fs::symlink_metadata(upper.join("gone.txt")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &whiteout.file_type()
    ));
    // Landed: the workspace holds it.
    assert_eq!(end["landed"], 1, "{end}");
    assert_eq!(run.read("made.txt"), "new\n");
    assert!(!run.exists("gone.txt"));
}
