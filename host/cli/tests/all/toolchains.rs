//! Plugins built with the toolchains people write them with, from the
//! registries (issue 37): the same line-counting tool in Python, built
//! with componentize-py (PyPI), is added with `goat plugins add` and
//! called by a scripted model through `goat run`, and its counts are what
//! the engine is sent back. `.ci/run` installs componentize-py in a venv
//! cached outside the repository and names it with `GOAT_COMPONENTIZE_PY`;
//! without it the test skips with a note, unless
//! `GOAT_COMPONENTIZE_PY_REQUIRED=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use goat_testkit::Reply;

use crate::{GoatRun, text};

/// The componentize-py binary, or `None` with a note.
fn componentize_py() -> Option<PathBuf> {
    match std::env::var_os("GOAT_COMPONENTIZE_PY") {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("GOAT_COMPONENTIZE_PY_REQUIRED").is_some_and(|v| v == "1") => {
            panic!("GOAT_COMPONENTIZE_PY_REQUIRED=1 but GOAT_COMPONENTIZE_PY is not set")
        }
        None => {
            eprintln!(
                "note: GOAT_COMPONENTIZE_PY is not set (.ci/run installs componentize-py from \
                 PyPI); skipping the Python plugin"
            );
            None
        }
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_plugin_built_with_componentize_py_is_added_and_counts_lines() {
    let Some(componentize) = componentize_py() else {
        return;
    };
    let run = GoatRun::builder()
        .replies([
            Reply::tool_call("wcpy__count", r#"{"glob": "**/*.txt"}"#),
            Reply::text("Counted."),
        ])
        .arg("--output")
        .arg("jsonl");
    let env = run.env();
    // Built as docs/plugins.md says, from the repository's WIT, in a
    // directory of its own (the build writes bytecode beside the source).
    let source = env.root.join("python");
    std::fs::create_dir(&source).unwrap();
    std::fs::copy(
        repo().join("plugins/examples/python/app.py"),
        source.join("app.py"),
    )
    .unwrap();
    let wasm = env.root.join("wc_py.wasm");
    let built = Command::new(&componentize)
        .arg("-d")
        .arg(repo().join("wit"))
        .args(["-w", "file-tool", "componentize", "-p"])
        .arg(&source)
        .args(["app", "-o"])
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built.stderr));
    env.add_plugin(&wasm, &["--name", "wcpy"]);
    std::fs::write(env.ws.join("a.txt"), "one two\nthree\n").unwrap();
    std::fs::create_dir(env.ws.join("sub")).unwrap();
    std::fs::write(env.ws.join("sub/b.txt"), "four\n").unwrap();
    std::fs::write(env.ws.join("skip.md"), "not counted\n").unwrap();
    let run = run.run("Count the text files").await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());

    // What the engine was sent back is the plugin's count.
    let requests = run.server.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    let rows: Vec<Vec<&str>> = result
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["2", "3", "14", "a.txt"],
            vec!["1", "1", "5", "sub/b.txt"],
            vec!["3", "4", "19", "total"],
        ],
        "{result}"
    );
}
