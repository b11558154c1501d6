//! A `GIT binary patch` hunk: `literal LEN`, then the bytes
//! zlib-deflated and written in git's base85, one line per 52 bytes of
//! deflated data, each line opening with a letter for how many (`A` 1 to
//! `Z` 26, `a` 27 to `z` 52), then a blank line. As git's `diff.c`
//! (`emit_binary_diff_body`) writes it and `apply.c`
//! (`parse_binary_hunk`) reads it; git's `delta` hunks, smaller for a
//! small edit of a large file, are not written: a `literal` always
//! applies.

/// How hard to deflate: zlib's default. Git's own diff uses 1 (its
/// `core.compression` default, fastest); a patch is written once and then
/// kept or sent, so the smaller output is worth the time, which stays
/// small at the 8 MiB a checkpoint keeps of a file. Higher levels save
/// little more.
const DEFLATE_LEVEL: u8 = 6;

/// Deflated bytes per line: what git writes and the most its reader takes
/// (the length letter goes up to `z`).
const BYTES_PER_LINE: usize = 52;

/// Git's base85 alphabet (`base85.c`), not Ascii85's nor RFC 1924's order.
const EN85: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Appends a `literal` hunk that makes `bytes`.
pub(super) fn literal(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(format!("literal {}\n", bytes.len()).as_bytes());
    let deflated = miniz_oxide::deflate::compress_to_vec_zlib(bytes, DEFLATE_LEVEL);
    for chunk in deflated.chunks(BYTES_PER_LINE) {
        out.push(length_letter(chunk.len()));
        encode_85(out, chunk);
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// `A` for 1 byte to `Z` for 26, `a` for 27 to `z` for 52.
fn length_letter(n: usize) -> u8 {
    let n = u8::try_from(n).unwrap_or(u8::MAX).clamp(1, 52);
    if n <= 26 { b'A' + n - 1 } else { b'a' + n - 27 }
}

/// Git's `encode_85`: each 4 bytes (the last group padded with zeros) as
/// a big-endian number, written as 5 base-85 digits, most significant
/// first.
fn encode_85(out: &mut Vec<u8>, bytes: &[u8]) {
    for group in bytes.chunks(4) {
        let mut word = [0u8; 4];
        word[..group.len()].copy_from_slice(group);
        let mut acc = u32::from_be_bytes(word);
        let mut digits = [0u8; 5];
        for d in digits.iter_mut().rev() {
            *d = EN85[(acc % 85) as usize];
            acc /= 85;
        }
        out.extend_from_slice(&digits);
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn encoded(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        encode_85(&mut out, bytes);
        String::from_utf8(out).unwrap()
    }

    /// What git writes for an empty file (`literal 0`, `HcmV?d00001`):
    /// zlib's stream for nothing at level 1, `78 01 03 00 00 00 00 01`.
    #[test]
    fn base85_matches_gits_encoding() {
        assert_eq!(
            encoded(&[0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]),
            "cmV?d00001"
        );
        assert_eq!(encoded(&[0xff; 4]), "|NsC0");
        // A short last group is padded, still five digits.
        assert_eq!(encoded(&[0]).len(), 5);
    }

    #[test]
    fn lines_hold_52_bytes_and_say_how_many() {
        assert_eq!(length_letter(1), b'A');
        assert_eq!(length_letter(26), b'Z');
        assert_eq!(length_letter(27), b'a');
        assert_eq!(length_letter(52), b'z');
        // Bytes deflate does not shrink make several lines.
        let noise: Vec<u8> = (0u32..200)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut out = Vec::new();
        literal(&mut out, &noise);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "literal 200");
        assert!(lines.len() > 4, "{text}");
        for l in &lines[1..lines.len() - 2] {
            assert!(l.starts_with('z') && l.len() == 1 + 65, "{l}");
        }
        assert_eq!(lines.last(), Some(&""));
        assert!(text.ends_with("\n\n"));
    }
}
