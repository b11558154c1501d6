//! What the writing tools say about a file's encoding: the rule itself is
//! `goat_workpath::encoding`, shared with the host's approval preview.

use goat_workpath::encoding::{TextEncoding, Unencodable};

use crate::ToolError;
use crate::path::WorkPath;

/// What a result adds when a file was kept in an encoding other than
/// UTF-8; nothing for UTF-8.
pub fn kept_note(encoding: TextEncoding) -> String {
    match encoding {
        TextEncoding::Utf8 => String::new(),
        other => format!(" It was kept in its encoding, {}.", other.name()),
    }
}

/// The refusal when the new text has a character `path`'s encoding lacks.
pub fn unencodable(path: &WorkPath, encoding: TextEncoding, bad: Unencodable) -> ToolError {
    ToolError::InvalidArguments(format!(
        "'{path}' is {} text, which has no character '{}' (U+{:04X}); nothing was changed. \
         Use characters that encoding has, or convert the file to UTF-8 first (delete_file, \
         then write_file)",
        encoding.name(),
        bad.ch,
        u32::from(bad.ch)
    ))
}
