//! `count`: lines, words and bytes of the workspace files a glob matches,
//! like `wc`. A GOAT plugin in plain Rust: the bindings come from GOAT's
//! WIT (`wit/`) through wit-bindgen, the workspace from the one preopen
//! GOAT gives a tool that declares `read` access.

wit_bindgen::generate!({ path: "wit", world: "file-tool", generate_all });

use exports::goat::tool::tool::{Access, Guest, ToolError, ToolSpec};
use wasi::filesystem::preopens::get_directories;
use wasi::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags,
};

/// Most files counted in one call.
const MAX_FILES: usize = 2000;
/// Bytes read at a time.
const CHUNK: u64 = 64 * 1024;

struct Wc;

impl Guest for Wc {
    fn spec() -> ToolSpec {
        ToolSpec {
            name: "count".into(),
            description: "Count lines, words and bytes in workspace files, like `wc`. `path` is \
                          a directory (default: the root); `glob` picks files under it \
                          (default '**')."
                .into(),
            parameters: r#"{"type": "object", "properties": {"path": {"type": "string"},
                "glob": {"type": "string"}}, "additionalProperties": false}"#
                .into(),
            access: Access::Read,
            path_fields: vec!["path".into()],
        }
    }

    fn invoke(arguments: String) -> Result<String, ToolError> {
        let args: serde_json::Value = serde_json::from_str(&arguments)
            .map_err(|e| ToolError::InvalidArguments(format!("arguments are not JSON: {e}")))?;
        let text = |key: &str| args.get(key).and_then(serde_json::Value::as_str);
        let base = text("path").unwrap_or("").trim_matches('/');
        let base = if base == "." { "" } else { base };
        let glob = text("glob").unwrap_or("**");
        let Some((root, _)) = get_directories().into_iter().next() else {
            return Err(ToolError::PermissionDenied(
                "this tool was given no workspace".into(),
            ));
        };
        let mut files = Vec::new();
        walk(&root, base, &mut files, 0)
            .map_err(|e| fs_error(e, if base.is_empty() { "." } else { base }))?;
        files.sort();
        let (mut rows, mut total) = (Vec::new(), [0u64; 3]);
        for file in &files {
            let relative = if base.is_empty() {
                file.as_str()
            } else {
                &file[base.len() + 1..]
            };
            if !matches(glob.as_bytes(), relative.as_bytes()) {
                continue;
            }
            match count(&root, file) {
                Ok(c) => {
                    for i in 0..3 {
                        total[i] += c[i];
                    }
                    rows.push(format!("{:>8} {:>8} {:>8} {file}", c[0], c[1], c[2]));
                }
                Err(e) => rows.push(format!("(skipped {file}: {e:?})")),
            }
        }
        rows.push(format!(
            "{:>8} {:>8} {:>8} total",
            total[0], total[1], total[2]
        ));
        Ok(rows.join("\n"))
    }
}

/// Every regular file under `rel`, `.git` left out.
fn walk(
    root: &Descriptor,
    rel: &str,
    out: &mut Vec<String>,
    depth: usize,
) -> Result<(), ErrorCode> {
    if depth > 64 || out.len() > MAX_FILES {
        return Ok(());
    }
    let dir = root.open_at(
        PathFlags::empty(),
        if rel.is_empty() { "." } else { rel },
        OpenFlags::DIRECTORY,
        DescriptorFlags::READ,
    )?;
    let entries = dir.read_directory()?;
    while let Some(entry) = entries.read_directory_entry()? {
        if entry.name == ".git" {
            continue;
        }
        let name = if rel.is_empty() {
            entry.name
        } else {
            format!("{rel}/{}", entry.name)
        };
        match entry.type_ {
            DescriptorType::Directory => walk(root, &name, out, depth + 1)?,
            DescriptorType::RegularFile => out.push(name),
            _ => {}
        }
    }
    Ok(())
}

/// Lines, words and bytes of one file.
fn count(root: &Descriptor, path: &str) -> Result<[u64; 3], ErrorCode> {
    let file = root.open_at(
        PathFlags::empty(),
        path,
        OpenFlags::empty(),
        DescriptorFlags::READ,
    )?;
    let (mut c, mut in_word, mut offset) = ([0u64; 3], false, 0u64);
    loop {
        let (chunk, end) = file.read(CHUNK, offset)?;
        offset += chunk.len() as u64;
        c[2] += chunk.len() as u64;
        for &b in &chunk {
            if b == b'\n' {
                c[0] += 1;
            }
            let space = b.is_ascii_whitespace() || b == 0x0b;
            if !space && !in_word {
                c[1] += 1;
            }
            in_word = !space;
        }
        if end || chunk.is_empty() {
            return Ok(c);
        }
    }
}

/// Whether `name` matches `glob`: `*` and `?` within a path segment, `**`
/// across segments.
fn matches(glob: &[u8], name: &[u8]) -> bool {
    match glob {
        [] => name.is_empty(),
        [b'*', b'*', b'/', rest @ ..] => {
            matches(rest, name)
                || name
                    .iter()
                    .position(|&b| b == b'/')
                    .is_some_and(|i| matches(glob, &name[i + 1..]))
        }
        [b'*', b'*', rest @ ..] => (0..=name.len()).any(|i| matches(rest, &name[i..])),
        [b'*', rest @ ..] => (0..=name.len())
            .take_while(|&i| i == 0 || name[i - 1] != b'/')
            .any(|i| matches(rest, &name[i..])),
        [b'?', rest @ ..] => name.first().is_some_and(|&b| b != b'/') && matches(rest, &name[1..]),
        [c, rest @ ..] => name.first() == Some(c) && matches(rest, &name[1..]),
    }
}

fn fs_error(e: ErrorCode, what: &str) -> ToolError {
    match e {
        ErrorCode::NoEntry => ToolError::NotFound(format!("'{what}' does not exist")),
        ErrorCode::Access | ErrorCode::NotPermitted => {
            ToolError::PermissionDenied(format!("'{what}': permission denied"))
        }
        other => ToolError::Io(format!("'{what}': {other:?}")),
    }
}

export!(Wc);
