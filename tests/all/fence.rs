//! The fence with a policy in force, through the real sandbox and the Pen
//! tools: what a policy hides is gone, and everything else reads exactly
//! as it does without one (the fence answers some calls itself, so its
//! answers must match wasmtime-wasi's).

use std::sync::Arc;

use goat_sandbox::{Access, CallResult, PathPolicy};
use serde_json::{Value, json};

use crate::support::*;

/// Hides `secrets` and what is under it; refuses writes there.
struct HideSecrets;

impl PathPolicy for HideSecrets {
    fn visible(&self, path: &str) -> bool {
        path != "secrets" && !path.starts_with("secrets/")
    }

    fn writable(&self, path: &str) -> Result<(), String> {
        if self.visible(path) {
            Ok(())
        } else {
            Err(format!("writing '{path}' is forbidden by a test rule"))
        }
    }

    fn governs_below(&self, dir: &str) -> bool {
        dir == "." || dir == "secrets" || dir.starts_with("secrets/")
    }

    fn hides_anything(&self) -> bool {
        true
    }
}

fn call(ws: &Workspace, policy: bool, name: &str, args: &Value, access: Access) -> CallResult {
    let mut pen = ws.pen(access);
    if policy {
        pen = pen.with_policy(Arc::new(HideSecrets));
    }
    sandbox().call(tool(name), &args.to_string(), &pen).unwrap()
}

fn tree() -> Workspace {
    let ws = Workspace::new();
    ws.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    ws.write("src/lib/mod.rs", "pub mod a;\n");
    ws.write("README.md", "# demo\n");
    ws.write("secrets/prod.env", "API_KEY=1\n");
    std::os::unix::fs::symlink("src", ws.root.join("code")).unwrap();
    ws
}

#[test]
fn with_a_policy_the_rest_of_the_workspace_reads_exactly_the_same() {
    let ws = tree();
    // The same workspace without the secrets, and no policy: the reference.
    let bare = tree();
    std::fs::remove_dir_all(bare.root.join("secrets")).unwrap();
    for (name, args) in [
        ("list_directory", json!({"path": ".", "depth": 3})),
        ("find_files", json!({"pattern": "**/*.rs"})),
        ("search_files", json!({"pattern": "main|mod|API"})),
        ("read_file", json!({"path": "code/main.rs"})),
        (
            "read_file",
            json!({"path": "README.md", "offset": 1, "limit": 1}),
        ),
    ] {
        let fenced = call(&ws, true, name, &args, Access::Read);
        let reference = call(&bare, false, name, &args, Access::Read);
        assert_eq!(fenced, reference, "{name} {args}");
    }
}

#[test]
fn a_hidden_file_is_not_found_by_any_name_and_not_written() {
    let ws = tree();
    std::os::unix::fs::symlink("secrets/prod.env", ws.root.join("env")).unwrap();
    for path in ["secrets/prod.env", "env", "code/../secrets/prod.env"] {
        let failure = tool_err(call(
            &ws,
            true,
            "read_file",
            &json!({"path": path}),
            Access::Read,
        ));
        assert!(
            matches!(failure, goat_sandbox::ToolError::NotFound(_)),
            "{path}: {failure:?}"
        );
        let failure = tool_err(call(
            &ws,
            true,
            "write_file",
            &json!({"path": path, "content": "x"}),
            Access::ReadWrite,
        ));
        assert!(
            failure.to_string().contains("forbidden by a test rule")
                || matches!(failure, goat_sandbox::ToolError::NotFound(_)),
            "{path}: {failure:?}"
        );
    }
    assert_eq!(ws.read("secrets/prod.env"), "API_KEY=1\n");
}
