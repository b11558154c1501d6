//! `edit_file`: exact text replacement in one file.
//!
//! The old text must match exactly once unless `replace_all` is set: an
//! ambiguous edit is refused, never guessed, and the error says how many
//! matches there were and on which lines so the model can widen its context.

use goat_pen::args::Args;
use goat_pen::fs::Workspace;
use goat_pen::path;
use goat_pen::text::plural;
use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};

/// Largest file this tool edits. It reads the whole file and writes it back,
/// so the cap bounds both guest memory and the size of one write.
const MAX_EDIT_BYTES: u64 = 4 * 1024 * 1024;

/// Line numbers listed in an ambiguous-match error before "and N more".
const MAX_LISTED_LINES: usize = 10;

struct EditFile;

impl Guest for EditFile {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "edit_file",
            "Replace exact text in a file in the workspace. old_string must match the file \
             exactly (whitespace and indentation included) and exactly once, unless replace_all \
             is true. Include enough surrounding lines to make the match unique. To create a \
             file, use write_file.",
            serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one. Default false."}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
            Access::ReadWrite,
            &["path"],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let args = Args::parse(
            &arguments,
            &["path", "old_string", "new_string", "replace_all"],
        )?;
        let path = path::parse(args.string("path")?)?;
        let old = args.string("old_string")?;
        let new = args.string("new_string")?;
        let replace_all = args.opt_bool("replace_all")?.unwrap_or(false);
        if old.is_empty() {
            return Err(ToolError::InvalidArguments(
                "old_string is empty; give the exact text to replace (to create a file, use \
                 write_file)"
                    .to_owned(),
            ));
        }
        if old == new {
            return Err(ToolError::InvalidArguments(
                "old_string and new_string are the same; nothing would change".to_owned(),
            ));
        }

        let ws = Workspace::open()?;
        let bytes = ws.read_file(&path, MAX_EDIT_BYTES)?;
        // UTF-8, or Windows-1252 for other text (goat_workpath::encoding,
        // as read_file and the approval preview read it); written back in
        // the same encoding.
        let (text, encoding) = goat_workpath::encoding::decode(&bytes).ok_or_else(|| {
            ToolError::InvalidArguments(format!(
                "'{path}' is a binary file (it has NUL bytes); edit_file only edits text files"
            ))
        })?;

        // Match in the file's own line endings, as the approval preview
        // shows (one rule, in goat-workpath).
        let (old, new) = goat_workpath::edit::in_file_convention(&text, old, new);

        let starts: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        match starts.len() {
            0 => {
                return Err(ToolError::Conflict(format!(
                    "old_string was not found in '{path}' (0 matches); read the file again and \
                     copy the exact text, including whitespace and indentation"
                )));
            }
            n if n > 1 && !replace_all => {
                return Err(ToolError::Conflict(format!(
                    "old_string matches {n} times in '{path}' (at lines {}); include more \
                     surrounding text to make it unique, or set replace_all to true to replace \
                     every occurrence",
                    listed_lines(&starts, line_of)
                )));
            }
            _ => {}
        }

        let edited = if replace_all {
            text.replace(&old, &new)
        } else {
            text.replacen(&old, &new, 1)
        };
        let bytes = goat_workpath::encoding::encode(&edited, encoding)
            .map_err(|bad| goat_pen::encoding::unencodable(&path, encoding, bad))?;
        ws.write_file(&path, &bytes)?;

        let n = starts.len();
        let (removed, added) = (old.lines().count().max(1), new.lines().count());
        Ok(format!(
            "Edited '{path}': replaced {} at line{} {} (each: -{removed} +{added} lines). The \
             file now has {}.{}",
            plural(n, "occurrence"),
            if n == 1 { "" } else { "s" },
            listed_lines(&starts, line_of),
            plural(edited.lines().count(), "line"),
            goat_pen::encoding::kept_note(encoding)
        ))
    }
}

/// "3, 10, 12" for the lines where matches start, with "and N more" past
/// [`MAX_LISTED_LINES`].
fn listed_lines(starts: &[usize], line_of: impl Fn(usize) -> usize) -> String {
    let mut lines: Vec<String> = starts
        .iter()
        .take(MAX_LISTED_LINES)
        .map(|&i| line_of(i).to_string())
        .collect();
    if starts.len() > MAX_LISTED_LINES {
        lines.push(format!("and {} more", starts.len() - MAX_LISTED_LINES));
    }
    lines.join(", ")
}

goat_pen::export_tool!(EditFile);
