//! Which encoding a text file is in, and how to read and write it back in
//! that encoding: the rule `read_file`, `edit_file` and `write_file` (wasm32
//! guests) apply and the approval preview (the host) shows.
//!
//! Text that is valid UTF-8 is UTF-8. Anything else that is not binary (the
//! caller sniffs for NUL) is read as Windows-1252, the encoding older
//! Western European text is in: its bytes 0xA0-0xFF are Latin-1's, and
//! 0x80-0x9F are the typographic characters Windows put there (`€`, `‘`,
//! `—`). As the WHATWG Encoding Standard does, the five bytes Windows left
//! undefined map to the C1 control points of the same number, so every byte
//! sequence decodes, and encoding the decoded text gives back exactly the
//! bytes read: an edit leaves every byte it did not change as it was.

/// How much of a file's start is checked for NUL bytes to call it binary,
/// the window git and ripgrep use.
pub const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// Whether `data` looks binary: a NUL byte near the start.
pub fn looks_binary(data: &[u8]) -> bool {
    binary_probe(data).contains(&0)
}

/// The part of `data` that [`looks_binary`] searches for a NUL, for a
/// caller with a faster search of its own.
pub fn binary_probe(data: &[u8]) -> &[u8] {
    &data[..data.len().min(BINARY_PROBE_BYTES)]
}

/// A whole file's text and the encoding it is in; `None` for a binary file.
pub fn decode(bytes: &[u8]) -> Option<(String, TextEncoding)> {
    if looks_binary(bytes) {
        return None;
    }
    Some(match String::from_utf8(bytes.to_vec()) {
        Ok(text) => (text, TextEncoding::Utf8),
        Err(_) => (decode_windows_1252(bytes), TextEncoding::Windows1252),
    })
}

/// Whether `bytes` are not UTF-8 as a whole yet hold a line that is, with
/// characters beyond ASCII: a file edited in two encodings. `read_file`
/// shows each line in its own, so rewriting the whole file in either one
/// would change the other's lines.
pub fn is_mixed(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_err()
        && bytes
            .split(|&b| b == b'\n')
            .any(|line| !line.is_ascii() && std::str::from_utf8(line).is_ok())
}

/// `text` as bytes in `encoding`, or the first character it cannot hold.
pub fn encode(text: &str, encoding: TextEncoding) -> Result<Vec<u8>, Unencodable> {
    match encoding {
        TextEncoding::Utf8 => Ok(text.as_bytes().to_vec()),
        TextEncoding::Windows1252 => encode_windows_1252(text),
    }
}

/// A text file's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextEncoding {
    /// UTF-8 (a byte order mark, if any, is kept by the caller).
    Utf8,
    /// Windows-1252, read as a superset of Latin-1 (ISO 8859-1).
    Windows1252,
}

impl TextEncoding {
    /// Its name as the tools say it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Utf8 => "UTF-8",
            Self::Windows1252 => "Windows-1252 (Latin-1)",
        }
    }

    /// The encoding of `bytes`, a whole file or its start. A start cut
    /// inside a UTF-8 character still counts as UTF-8.
    pub fn of(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(_) => Self::Utf8,
            Err(e) if e.error_len().is_none() => Self::Utf8,
            Err(_) => Self::Windows1252,
        }
    }
}

/// Bytes 0x80-0x9F of Windows-1252 (WHATWG's index).
const HIGH: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}',
    '\u{0090}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

/// `bytes` read as Windows-1252. Never fails: every byte is a character.
pub fn decode_windows_1252(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            0x80..=0x9F => HIGH[usize::from(b - 0x80)],
            _ => char::from(b),
        })
        .collect()
}

/// A character that Windows-1252 has no byte for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unencodable {
    /// The character.
    pub ch: char,
    /// Its position in the text, in characters from the start.
    pub at: usize,
}

/// `text` as Windows-1252 bytes, or the first character it cannot hold.
pub fn encode_windows_1252(text: &str) -> Result<Vec<u8>, Unencodable> {
    text.chars()
        .enumerate()
        .map(|(at, ch)| {
            let code = u32::from(ch);
            match code {
                0..=0x7F | 0xA0..=0xFF => u8::try_from(code).ok(),
                _ => HIGH
                    .iter()
                    .position(|&c| c == ch)
                    .and_then(|i| u8::try_from(0x80 + i).ok()),
            }
            .ok_or(Unencodable { ch, at })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_decodes_and_encodes_back_to_itself() {
        let all: Vec<u8> = (0..=255).collect();
        let text = decode_windows_1252(&all);
        assert_eq!(text.chars().count(), 256);
        assert_eq!(encode_windows_1252(&text), Ok(all));
    }

    #[test]
    fn latin_1_and_the_windows_characters_read_as_people_wrote_them() {
        assert_eq!(decode_windows_1252(b"caf\xe9 \x80 \x93x\x94"), "café € “x”");
        assert_eq!(
            encode_windows_1252("naïve — ok"),
            Ok(b"na\xefve \x97 ok".to_vec())
        );
    }

    #[test]
    fn a_character_windows_1252_lacks_is_named_with_its_place() {
        assert_eq!(
            encode_windows_1252("ab→c"),
            Err(Unencodable { ch: '→', at: 2 })
        );
    }

    #[test]
    fn a_file_is_decoded_in_its_encoding_and_binary_is_refused() {
        assert_eq!(
            decode("é\n".as_bytes()),
            Some(("é\n".to_owned(), TextEncoding::Utf8))
        );
        assert_eq!(
            decode(b"caf\xe9\n"),
            Some(("café\n".to_owned(), TextEncoding::Windows1252))
        );
        assert_eq!(decode(b"PK\x03\x04\x00\x00"), None);
        assert_eq!(
            encode("café", TextEncoding::Windows1252),
            Ok(b"caf\xe9".to_vec())
        );
        assert_eq!(
            encode("café", TextEncoding::Utf8),
            Ok("café".as_bytes().to_vec())
        );
    }

    #[test]
    fn a_file_in_two_encodings_is_mixed() {
        assert!(is_mixed(
            "José\n"
                .as_bytes()
                .iter()
                .chain(b"caf\xe9\n")
                .copied()
                .collect::<Vec<_>>()
                .as_slice()
        ));
        assert!(!is_mixed(b"plain\ncaf\xe9\n"));
        assert!(!is_mixed("José\ncafé\n".as_bytes()));
    }

    #[test]
    fn utf8_is_recognised_even_cut_mid_character() {
        assert_eq!(TextEncoding::of("é".as_bytes()), TextEncoding::Utf8);
        assert_eq!(TextEncoding::of(&"é".as_bytes()[..1]), TextEncoding::Utf8);
        assert_eq!(TextEncoding::of(b"caf\xe9!"), TextEncoding::Windows1252);
        assert_eq!(TextEncoding::of(b""), TextEncoding::Utf8);
    }
}
