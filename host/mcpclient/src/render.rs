//! A tool result as the model reads it: text as text, `structuredContent`
//! as JSON, images, audio and resources named but never inlined; every
//! control character but newline and tab escaped; capped.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The most of a result the model gets: its head and its tail, with what
/// was cut said between them.
pub const MAX_RESULT_BYTES: usize = 32 * 1024;

/// How much of [`MAX_RESULT_BYTES`] is the tail.
const TAIL_BYTES: usize = 8 * 1024;

/// The text of `result`, escaped and capped.
pub fn render(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[image ({}, {} bytes of base64) not shown]",
                image.mime_type,
                image.data.len()
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio ({}, {} bytes of base64) not shown]",
                audio.mime_type,
                audio.data.len()
            ),
            ContentBlock::ResourceLink(link) => {
                format!("[resource link '{}': {}]", link.name, link.uri)
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}: {} bytes of text not shown]", text.len())
                }
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[resource {uri}: {} bytes of base64 not shown]", blob.len())
                }
                _ => "[a resource of a kind GOAT does not know, not shown]".to_owned(),
            },
            _ => "[content of a kind GOAT does not know, not shown]".to_owned(),
        });
    }
    if let Some(structured) = &result.structured_content {
        parts.push(format!("structured content: {structured}"));
    }
    if parts.is_empty() {
        parts.push("(no content)".to_owned());
    }
    cap(&escape(&parts.join("\n")))
}

/// Every control character but `\n` and `\t` escaped (`\u{1b}`), and
/// bidirectional overrides: nothing a server writes can drive a terminal
/// that shows it, or hide text from the person reading it.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // Controls, bidirectional overrides, and what shows as nothing
        // (goat-session's `is_invisible`: zero-width characters, tags).
        let unsafe_char = (c.is_control() && c != '\n' && c != '\t')
            || matches!(
                c,
                '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
                    | '\u{00AD}'
                    | '\u{200B}'..='\u{200F}'
                    | '\u{2028}'..='\u{2029}'
                    | '\u{2060}'..='\u{2064}'
                    | '\u{FEFF}'
                    | '\u{FFF9}'..='\u{FFFB}'
                    | '\u{E0000}'..='\u{E007F}'
            );
        if unsafe_char {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` cut to [`MAX_RESULT_BYTES`] (head and tail, on character
/// boundaries), saying how much was left out.
pub fn cap(text: &str) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text.to_owned();
    }
    let head_end = floor(text, MAX_RESULT_BYTES - TAIL_BYTES);
    let tail_start = ceil(text, text.len() - TAIL_BYTES);
    format!(
        "{}\n[goat: {} bytes of the result cut here]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn floor(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_caps() {
        assert_eq!(escape("a\u{1b}[2Jb\n\tc\u{9b}"), "a\\u{1b}[2Jb\n\tc\\u{9b}");
        // An instruction in tag characters is seen, not hidden.
        assert_eq!(escape("x\u{E0049}\u{200B}"), "x\\u{e0049}\\u{200b}");
        let long = "é".repeat(40_000);
        let capped = cap(&long);
        assert!(capped.len() < MAX_RESULT_BYTES + 100);
        assert!(capped.contains("bytes of the result cut here"));
    }
}
