//! Text that is not UTF-8: read as Windows-1252 (Latin-1) and said so,
//! edited and rewritten in the encoding it had, checked byte for byte on
//! the disk.

use super::*;

/// "Café, naïve — “quoted”" in Windows-1252, on two lines.
const LATIN: &[u8] = b"caf\xe9 = 1\nna\xefve \x97 \x93quoted\x94\n";

#[test]
fn read_file_reads_windows_1252_and_says_so() {
    let ws = Workspace::new();
    ws.write("legacy.txt", LATIN);
    let text = ok(ws.read_call("read_file", json!({"path": "legacy.txt"})));
    assert_eq!(
        text,
        "     1\tcafé = 1\n     2\tnaïve — “quoted”\n[2 lines shown are not valid UTF-8 and were read as \
         Windows-1252 (Latin-1); edit_file and write_file keep that encoding]\n"
    );
    // UTF-8 gets no note.
    ws.write("utf8.txt", "café\n");
    assert_eq!(
        ok(ws.read_call("read_file", json!({"path": "utf8.txt"}))),
        "     1\tcafé\n"
    );
}

#[test]
fn edit_file_keeps_the_encoding_and_every_byte_it_did_not_change() {
    let ws = Workspace::new();
    ws.write("legacy.txt", LATIN);
    let text = ok(ws.write_call(
        "edit_file",
        json!({"path": "legacy.txt", "old_string": "café = 1", "new_string": "café = 2 €"}),
    ));
    assert!(
        text.ends_with("It was kept in its encoding, Windows-1252 (Latin-1)."),
        "{text}"
    );
    assert_eq!(
        fs::read(ws.root.join("legacy.txt")).unwrap(),
        b"caf\xe9 = 2 \x80\nna\xefve \x97 \x93quoted\x94\n"
    );
}

#[test]
fn a_character_the_encoding_lacks_is_refused_and_the_file_kept() {
    let ws = Workspace::new();
    ws.write("legacy.txt", LATIN);
    expect_err(
        ws.write_call(
            "edit_file",
            json!({"path": "legacy.txt", "old_string": "café", "new_string": "café →"}),
        ),
        ToolError::InvalidArguments,
        &[
            "Windows-1252 (Latin-1) text",
            "'→' (U+2192)",
            "nothing was changed",
        ],
    );
    expect_err(
        ws.write_call(
            "write_file",
            json!({"path": "legacy.txt", "content": "日本\n"}),
        ),
        ToolError::InvalidArguments,
        &["'日' (U+65E5)", "nothing was changed"],
    );
    assert_eq!(fs::read(ws.root.join("legacy.txt")).unwrap(), LATIN);
}

#[test]
fn write_file_rewrites_a_legacy_file_in_its_encoding_and_a_new_one_in_utf8() {
    let ws = Workspace::new();
    ws.write("legacy.txt", LATIN);
    let text = ok(ws.write_call(
        "write_file",
        json!({"path": "legacy.txt", "content": "déjà vu\n"}),
    ));
    assert!(
        text.contains("It was kept in its encoding, Windows-1252"),
        "{text}"
    );
    assert_eq!(
        fs::read(ws.root.join("legacy.txt")).unwrap(),
        b"d\xe9j\xe0 vu\n"
    );
    ok(ws.write_call(
        "write_file",
        json!({"path": "new.txt", "content": "déjà vu\n"}),
    ));
    assert_eq!(ws.read("new.txt"), "déjà vu\n");
}

#[test]
fn a_binary_file_is_still_refused() {
    let ws = Workspace::new();
    ws.write("blob.bin", b"PK\x03\x04\x00\x00\xff\xfe");
    expect_err(
        ws.read_call("read_file", json!({"path": "blob.bin"})),
        ToolError::InvalidArguments,
        &["binary file"],
    );
    expect_err(
        ws.write_call(
            "edit_file",
            json!({"path": "blob.bin", "old_string": "PK", "new_string": "QK"}),
        ),
        ToolError::InvalidArguments,
        &["binary file"],
    );
    assert_eq!(
        fs::read(ws.root.join("blob.bin")).unwrap(),
        b"PK\x03\x04\x00\x00\xff\xfe"
    );
}

/// A UTF-8 file with one stray Latin-1 byte: read_file shows each line in
/// its own encoding ("José" on line 1), so write_file cannot rewrite it
/// whole in either without changing the other's lines; it refuses and the
/// file stays byte for byte. edit_file keeps every byte it does not replace.
#[test]
fn write_file_refuses_a_file_in_two_encodings_and_edit_file_keeps_it() {
    let ws = Workspace::new();
    let mixed: &[u8] = b"name = \"Jos\xc3\xa9\"\n# caf\xe9\n";
    ws.write("mixed.py", mixed);
    let text = ok(ws.read_call("read_file", json!({"path": "mixed.py"})));
    assert!(text.contains("1\tname = \"José\"\n"), "{text}");
    expect_err(
        ws.write_call(
            "write_file",
            json!({"path": "mixed.py", "content": "name = \"José\"\n# café!\n"}),
        ),
        ToolError::Conflict,
        &[
            "mixes UTF-8 lines with Windows-1252 ones",
            "nothing was written",
            "edit_file",
        ],
    );
    assert_eq!(fs::read(ws.root.join("mixed.py")).unwrap(), mixed);
    ok(ws.write_call(
        "edit_file",
        json!({"path": "mixed.py", "old_string": "# caf", "new_string": "# the caf"}),
    ));
    assert_eq!(
        fs::read(ws.root.join("mixed.py")).unwrap(),
        b"name = \"Jos\xc3\xa9\"\n# the caf\xe9\n"
    );
}
