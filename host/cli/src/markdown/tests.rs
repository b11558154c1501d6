use super::*;

/// Everything shown for `chunks` fed one by one, then finished.
fn render(chunks: &[&str], width: Option<usize>, color: bool) -> String {
    let mut r = Renderer::new(width, color);
    let mut out: String = chunks.iter().map(|c| r.feed(c)).collect();
    out.push_str(&r.finish());
    out
}

fn plain(chunks: &[&str], width: usize) -> String {
    render(chunks, Some(width), false)
}

fn styled(text: &str) -> String {
    render(&[text], None, true)
}

#[test]
fn words_wrap_at_the_width_and_are_never_cut() {
    let text = "The quick brown fox jumps over the lazy dog and keeps on running.\n";
    let out = plain(&[text], 20);
    assert_eq!(
        out,
        "The quick brown fox\njumps over the lazy\ndog and keeps on\nrunning.\n"
    );
    for line in out.lines() {
        assert!(line.chars().count() <= 20, "{line:?}");
    }
    // A word longer than a row overflows on its own row.
    let url = "https://example.com/a/very/long/path/that/does/not/fit";
    assert_eq!(
        plain(&[&format!("see {url} now\n")], 20),
        format!("see\n{url}\nnow\n")
    );
}

#[test]
fn a_row_is_filled_to_the_last_column_and_not_one_past() {
    // 14 + 1 + 5 = 20 fits; 14 + 1 + 6 = 21 does not, space included.
    assert_eq!(
        plain(&["aaaa bbbb cccc ddddd e\n"], 20),
        "aaaa bbbb cccc ddddd\ne\n"
    );
    assert_eq!(
        plain(&["aaaa bbbb cccc dddddd\n"], 20),
        "aaaa bbbb cccc\ndddddd\n"
    );
    // A word too long for any row starts where it is, with no empty row.
    let long = "x".repeat(30);
    assert_eq!(plain(&[&format!("{long} y\n")], 20), format!("{long}\ny\n"));
    assert_eq!(
        render(&[&format!("- {long} y\n")], Some(20), true),
        format!("• {long}\n  y\n")
    );
}

#[test]
fn wide_characters_count_two_columns() {
    // Each of these takes two columns: five of them fill ten.
    assert_eq!(plain(&["漢字漢字漢 漢字\n"], 20), "漢字漢字漢 漢字\n");
    assert_eq!(
        plain(&["漢字漢字漢字漢字 漢字漢字漢字\n"], 20),
        "漢字漢字漢字漢字\n漢字漢字漢字\n"
    );
}

#[test]
fn words_show_as_they_complete_without_waiting_for_the_line() {
    let mut r = Renderer::new(Some(80), false);
    assert_eq!(r.feed("Hello wor"), "Hello");
    assert_eq!(r.feed("ld, again"), " world,");
    assert_eq!(r.feed("\n"), " again\n");
    // A last line without its newline is shown when the message ends.
    assert_eq!(r.feed("tail"), "");
    assert_eq!(r.finish(), "tail");
}

#[test]
fn headings_emphasis_and_inline_code_are_styled_and_lose_their_markers() {
    assert_eq!(
        styled("# Title here\n"),
        "\x1b[1mTitle\x1b[0m \x1b[1mhere\x1b[0m\n"
    );
    assert_eq!(
        styled("a **bold** *em* `co de` x\n"),
        "a \x1b[1mbold\x1b[0m \x1b[3mem\x1b[0m \x1b[36mco\x1b[0m \x1b[36mde\x1b[0m x\n"
    );
    // Markers that open nothing are text: a lone star, snake_case.
    assert_eq!(styled("2 * 3 is a_b_c\n"), "2 * 3 is a_b_c\n");
    // Inside inline code, stars are text.
    assert_eq!(styled("`*x*`\n"), "\x1b[36m*x*\x1b[0m\n");
}

#[test]
fn lists_and_quotes_keep_their_hanging_indent_when_wrapped() {
    assert_eq!(
        render(&["- one two three four five six\n"], Some(20), true),
        "• one two three four\n  five six\n"
    );
    assert_eq!(
        render(&["12. one two three four five\n"], Some(20), true),
        "12. one two three\n    four five\n"
    );
    assert_eq!(
        render(&["> one two three four five six\n"], Some(20), true),
        "\x1b[2m│\x1b[0m one two three four\n\x1b[2m│\x1b[0m five six\n"
    );
    assert_eq!(
        render(&["---\n"], Some(10), true),
        format!("\x1b[2m{}\x1b[0m\n", "─".repeat(20))
    );
}

#[test]
fn without_colour_the_text_is_shown_as_written() {
    let text = "# Title\n- **item** `x`\n> quote\n```\ncode\n```\n";
    assert_eq!(render(&[text], Some(80), false), text);
}

#[test]
fn a_fence_split_across_chunks_keeps_its_state_and_code_is_never_wrapped() {
    let chunks = [
        "Intro:\n``",
        "`rust\nlet x = \"a b\"; // note",
        " more words than fit in twenty\n`",
        "``\n**after**\n",
    ];
    let out = render(&chunks, Some(20), true);
    assert_eq!(
        out,
        concat!(
            "Intro:\n",
            "\x1b[2m```rust\x1b[0m\n",
            "\x1b[1;36mlet\x1b[0m\x1b[36m x = \x1b[0m\x1b[32m\"a b\"\x1b[0m\x1b[36m; \x1b[0m",
            "\x1b[2m// note more words than fit in twenty\x1b[0m\n",
            "\x1b[2m```\x1b[0m\n",
            "\x1b[1mafter\x1b[0m\n",
        )
    );
    // Inside the fence, Markdown is not Markdown.
    assert_eq!(
        render(&["~~~\n# not a heading\n~~~\n"], None, false),
        "~~~\n# not a heading\n~~~\n"
    );
    // Each block gets its own colour.
    let two = render(&["```\na\n```\n```\nb\n```\n"], None, true);
    assert!(two.contains("\x1b[36ma\x1b[0m"), "{two:?}");
    assert!(two.contains("\x1b[33mb\x1b[0m"), "{two:?}");
}

#[test]
fn escapes_from_the_model_are_shown_never_obeyed_in_every_construct() {
    let esc = "\u{1b}[2J";
    for text in [
        format!("# head {esc}\n"),
        format!("plain {esc} **b{esc}**\n"),
        format!("- item {esc}\n"),
        format!("> {esc}\n"),
        format!("```\ncode {esc}\r\n```\n"),
        format!("`{esc}`\n"),
        format!("unfinished {esc}"),
    ] {
        for color in [true, false] {
            let out = render(&[&text], Some(40), color);
            assert!(!out.contains('\u{1b}') || color, "{out:?}");
            assert!(
                !out.contains("\u{1b}[2J") && !out.contains('\r'),
                "raw escape in {out:?}"
            );
            assert!(out.contains("\\u{1b}[2J"), "not shown in {out:?}");
        }
    }
}

#[test]
fn a_new_message_starts_outside_any_fence() {
    let mut r = Renderer::new(None, false);
    r.feed("```\nopen");
    assert_eq!(r.finish(), "open");
    assert_eq!(r.feed("# x\n"), "# x\n");
    let mut r = Renderer::new(None, true);
    r.feed("```\nopen");
    r.finish();
    assert_eq!(r.feed("**b**\n"), "\x1b[1mb\x1b[0m\n");
}

#[test]
fn a_typical_answer_renders_as_reviewed() {
    let answer = "## Plan\n\nI will add a `--verbose` flag to **src/main.rs** and wire it \
                  through to the logger, so that *every* step can be seen.\n\n1. Parse the \
                  flag.\n2. Pass it on.\n\n> Note: the tests stay green.\n\n```rust\nfn \
                  main() {\n    let verbose = true; // from the flag\n    println!(\"{verbose}\");\n}\
                  \n```\n---\nDone.";
    // Chunks of 5 bytes, as a stream would cut them.
    let chunks: Vec<String> = answer
        .as_bytes()
        .chunks(5)
        .map(|c| String::from_utf8(c.to_vec()).unwrap_or_default())
        .collect();
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let shown = render(&chunks, Some(40), true).replace('\u{1b}', "␛");
    insta::assert_snapshot!(shown);
}
