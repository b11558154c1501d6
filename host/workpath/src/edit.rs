//! How an edit's text is matched in a file: the one rule `edit_file` (a
//! wasm32 guest) applies and the approval preview (the host) shows, so the
//! person approves exactly what the tool will do.

/// `old` and `new` as `edit_file` matches and writes them in `text`.
///
/// A model writes `\n`; a file checked out on Windows has `\r\n`. When the
/// file uses `\r\n` and `old` is found in that convention, both `old` and
/// `new` are turned into it, so the edit matches despite the invisible
/// difference and the file keeps its line endings. Otherwise they are used
/// as given.
pub fn in_file_convention(text: &str, old: &str, new: &str) -> (String, String) {
    let to_crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    match text.contains("\r\n").then(|| to_crlf(old)) {
        Some(crlf_old) if text.contains(&crlf_old) => (crlf_old, to_crlf(new)),
        _ => (old.to_owned(), new.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::in_file_convention;

    #[test]
    fn a_crlf_file_is_matched_and_edited_in_its_own_convention() {
        let text = "a\r\nb\r\nc\r\n";
        assert_eq!(
            in_file_convention(text, "a\nb", "x\ny"),
            ("a\r\nb".to_owned(), "x\r\ny".to_owned())
        );
        // Already CRLF: not doubled.
        assert_eq!(
            in_file_convention(text, "a\r\nb", "x\r\ny"),
            ("a\r\nb".to_owned(), "x\r\ny".to_owned())
        );
        // An LF file, or text not found as CRLF: as given.
        assert_eq!(
            in_file_convention("a\nb\n", "a\nb", "x"),
            ("a\nb".to_owned(), "x".to_owned())
        );
        assert_eq!(
            in_file_convention(text, "zz\n", "y"),
            ("zz\n".to_owned(), "y".to_owned())
        );
    }
}
