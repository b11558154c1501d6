//! Tests of the unexecuted-markup detector through its public API: a table of
//! messages and their verdicts, and a property test that the verdict does not
//! depend on how the message is split into chunks.

use goat_markup::{
    Detector, Form, HERMES_NAME_WINDOW, MAX_TOOL_NAME_BYTES, Marker, Verdict, detect,
};

const TOOLS: &[&str] = &["read_file", "write_file", "list_directory"];

/// What a case expects.
enum Want {
    /// Not unexecuted; these markers were seen.
    No(&'static [Marker]),
    /// Unexecuted, naming this tool in this form, with these markers. The span
    /// is marked in the case's text with `«` and `»`.
    Yes(&'static str, Form, &'static [Marker]),
    /// A complete unwrapped Qwen3-Coder block naming this tool (ADR-0067):
    /// reported as `unwrapped` always, and unexecuted, with no markers and
    /// the marked span, only when the detector counts unwrapped calls.
    Unwrapped(&'static str),
}

struct Case {
    name: &'static str,
    tools: &'static [&'static str],
    text: String,
    want: Want,
}

fn case(name: &'static str, text: impl Into<String>, want: Want) -> Case {
    Case {
        name,
        tools: TOOLS,
        text: text.into(),
        want,
    }
}

const OPEN: &[Marker] = &[Marker::Open];
const CLOSE: &[Marker] = &[Marker::Close];
const BOTH: &[Marker] = &[Marker::Open, Marker::Close];
const NONE: &[Marker] = &[];
const XML: Form = Form::QwenXml;
const HERMES: Form = Form::HermesJson;

/// Removes the `«`/`»` span marks, returning the content and the marked span.
fn unmark(text: &str) -> (String, Option<(usize, usize)>) {
    let start = text.find('«');
    let content = text.replace(['«', '»'], "");
    let span = start.map(|s| {
        let end = text.find('»').map(|e| e - '«'.len_utf8());
        (s, end.unwrap_or(content.len()))
    });
    (content, span)
}

/// The ADR-0065 failure: function markup with a closing envelope only.
const ADR_CASE: &str = "I'll read it.\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";

/// A complete Qwen3-Coder call for `read_file`, with no backticks in it.
const READ_CALL: &str =
    "<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>";

fn cases() -> Vec<Case> {
    let long_name: &'static str = "n".repeat(MAX_TOOL_NAME_BYTES + 1).leak();
    let long_tools: &'static [&'static str] = vec![long_name].leak();
    let padding = "x".repeat(HERMES_NAME_WINDOW);
    vec![
        // The envelope rule.
        case(
            "missing_opening_envelope_with_orphan_closer",
            ADR_CASE.replace("<function", "«<function") + "»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "opener_without_closer_truncated_stream",
            "Reading.\n«<tool_call>\n<function=read_file>\n<parameter=path>»\nsrc/li",
            Want::Yes("read_file", XML, OPEN),
        ),
        case(
            "opener_and_function_tag_only",
            "«<tool_call>\n<function=read_file>»",
            Want::Yes("read_file", XML, OPEN),
        ),
        case(
            "complete_envelope",
            format!("«<tool_call>\n{READ_CALL}»"),
            Want::Yes("read_file", XML, BOTH),
        ),
        case(
            "function_markup_without_envelope_counts_only_when_opted_in",
            "Use «<function=read_file> with <parameter=path>x</parameter></function>» to read.",
            Want::Unwrapped("read_file"),
        ),
        // ADR-0067: complete unwrapped Qwen3-Coder blocks.
        case(
            "unwrapped_qwen3_coder_call",
            "I'll read it.\n«<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>»\n",
            Want::Unwrapped("read_file"),
        ),
        case(
            "unwrapped_two_blocks_span_both",
            "«<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n<function=write_file>\n<parameter=path>\nb\n</parameter>\n</function>»",
            Want::Unwrapped("read_file"),
        ),
        case(
            "unwrapped_span_starts_at_the_first_complete_block",
            "Try <function=read_file> first, then «<function=write_file>\n<parameter=path>\na\n</parameter>\n</function>»",
            Want::Unwrapped("write_file"),
        ),
        case(
            "unwrapped_parameter_left_open_still_completes",
            "«<function=read_file>\n<parameter=path>\na\n</function>»",
            Want::Unwrapped("read_file"),
        ),
        case(
            "unwrapped_block_in_a_fence_never_counts",
            "Like this:\n```xml\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n```\n",
            Want::No(NONE),
        ),
        case(
            "unwrapped_block_in_a_tilde_fence_never_counts",
            "~~~\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n~~~",
            Want::No(NONE),
        ),
        case(
            "unwrapped_block_in_inline_code_never_counts",
            "Write `<function=read_file><parameter=path>a</parameter></function>` to call it.",
            Want::No(NONE),
        ),
        case(
            "unwrapped_block_split_by_a_fence_never_counts",
            "```\n<function=read_file>\n<parameter=path>\n```\na\n</parameter>\n</function>",
            Want::No(NONE),
        ),
        case(
            "unwrapped_block_in_think_never_counts",
            "<think>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</think>\nDone.",
            Want::No(NONE),
        ),
        case(
            "unwrapped_block_naming_a_tool_not_offered",
            "<function=delete_file>\n<parameter=path>\na\n</parameter>\n</function>",
            Want::No(NONE),
        ),
        case(
            "unwrapped_function_without_a_parameter_is_not_complete",
            "<function=list_directory>\n</function>",
            Want::No(NONE),
        ),
        case(
            "unwrapped_function_without_its_end_is_not_complete",
            "<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n",
            Want::No(NONE),
        ),
        case(
            "unwrapped_parameter_outside_a_function_is_not_complete",
            "<parameter=path>\na\n</parameter>\n</function>",
            Want::No(NONE),
        ),
        case(
            "tool_not_offered_is_not_a_match",
            "<function=delete_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>",
            Want::No(CLOSE),
        ),
        case(
            "name_must_match_exactly",
            "<function=read_file2>\n</function>\n<function=Read_file>\n</function>\n</tool_call>",
            Want::No(CLOSE),
        ),
        case(
            "stray_marker_alone_is_reported_but_not_a_call",
            "The template ends calls with </tool_call>.",
            Want::No(CLOSE),
        ),
        case(
            "marker_anywhere_live_counts",
            "«<function=read_file>\n</function>» and later a stray <tool_call> marker.",
            Want::Yes("read_file", XML, OPEN),
        ),
        // Hermes JSON.
        case(
            "hermes_with_closer",
            "«<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>»\n",
            Want::Yes("read_file", HERMES, BOTH),
        ),
        case(
            "hermes_without_closer",
            "«<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}»\nThen...",
            Want::Yes("read_file", HERMES, OPEN),
        ),
        case(
            "hermes_truncated_inside_arguments",
            "«<tool_call>{\"name\":\"read_file\"», \"arguments\": {\"pa",
            Want::Yes("read_file", HERMES, OPEN),
        ),
        case(
            "hermes_pretty_printed",
            "«<tool_call>\n{\n  \"name\"\n    : \"list_directory\",\n  \"arguments\": {}\n}\n</tool_call>»",
            Want::Yes("list_directory", HERMES, BOTH),
        ),
        case(
            "hermes_nested_name_is_not_the_tool",
            "«<tool_call>{\"arguments\": {\"name\": \"write_file\", \"x\": [\"name\"]}, \"name\": \"read_file\"}»",
            Want::Yes("read_file", HERMES, OPEN),
        ),
        case(
            "hermes_name_not_offered",
            "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>",
            Want::No(BOTH),
        ),
        case(
            "hermes_arguments_hold_markup",
            "«<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"content\": \"<function=read_file> ` </tool_call>\"}}\n</tool_call>»",
            Want::Yes("write_file", HERMES, BOTH),
        ),
        case(
            "hermes_name_within_window",
            format!(
                "«<tool_call>{{\"arguments\": {{\"content\": \"{}\"}}, \"name\": \"read_file\"}}»",
                &padding[..HERMES_NAME_WINDOW - 64]
            ),
            Want::Yes("read_file", HERMES, OPEN),
        ),
        case(
            "hermes_name_beyond_window",
            format!(
                "<tool_call>{{\"arguments\": {{\"content\": \"{padding}\"}}, \"name\": \"read_file\"}}"
            ),
            Want::No(OPEN),
        ),
        case(
            "hermes_object_in_a_fence_is_content",
            "<tool_call>\n```json\n{\"name\": \"read_file\"}\n```\n</tool_call>",
            Want::No(BOTH),
        ),
        case(
            "text_between_opener_and_object_is_not_hermes",
            "<tool_call> then {\"name\": \"read_file\"}",
            Want::No(OPEN),
        ),
        // Fences.
        case(
            "markup_in_backtick_fence",
            format!("Example:\n```xml\n<tool_call>\n{READ_CALL}\n```\nDone."),
            Want::No(NONE),
        ),
        case(
            "markup_in_tilde_fence",
            format!("Example:\n~~~\n{READ_CALL}\n~~~\nDone."),
            Want::No(NONE),
        ),
        case(
            "markup_in_fence_indented_three_spaces",
            format!("Example:\n   ```\n{READ_CALL}\n  ```\nDone."),
            Want::No(NONE),
        ),
        case(
            "four_space_indent_is_not_a_fence",
            "Example:\n    ```\n«<function=read_file>\n</function>\n</tool_call>»\n",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "tab_indent_is_not_a_fence",
            "\t```\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "markup_in_unclosed_fence",
            format!("Example:\n```\n{READ_CALL}\n"),
            Want::No(NONE),
        ),
        case(
            "longer_fence_is_not_closed_by_a_shorter_one",
            format!("````\n```\n{READ_CALL}\n```\nstill code\n````\n"),
            Want::No(NONE),
        ),
        case(
            "longer_fence_closed_by_an_equal_or_longer_one",
            "````md\n```\n`````\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "tilde_fence_is_not_closed_by_backticks",
            format!("~~~\n```\n{READ_CALL}"),
            Want::No(NONE),
        ),
        case(
            "closing_fence_with_text_after_is_not_a_close",
            format!("```\n``` not yet\n{READ_CALL}"),
            Want::No(NONE),
        ),
        case(
            "info_string_with_backtick_is_not_a_fence",
            "``` not`a fence\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "markup_in_info_string_is_not_content",
            "```<function=read_file></tool_call>\ncode\n```\n",
            Want::No(NONE),
        ),
        case(
            "info_string_at_end_of_text_is_not_content",
            "Text.\n```<function=read_file></tool_call>",
            Want::No(NONE),
        ),
        case(
            "two_tildes_are_not_a_fence",
            "~~ almost\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "crlf_fence",
            format!("```\r\n{}\r\n```\r\n", READ_CALL.replace('\n', "\r\n")),
            Want::No(NONE),
        ),
        case(
            "crlf_markup",
            "I'll read it.\r\n«<function=read_file>\r\n</function>\r\n</tool_call>»\r\n",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "fenced_function_with_live_orphan_closer",
            "```\n<function=read_file>\n```\n</tool_call>",
            Want::No(CLOSE),
        ),
        // Inline code.
        case(
            "markup_in_single_backtick_code",
            "Write `<function=read_file></function></tool_call>` to call it.",
            Want::No(NONE),
        ),
        case(
            "markup_in_double_backtick_code",
            "Write ``<function=read_file>` </tool_call>`` to call it.",
            Want::No(NONE),
        ),
        case(
            "code_span_closes_only_on_equal_run",
            "Write ``<function=read_file>```</tool_call>` ``x`` after.",
            Want::No(NONE),
        ),
        case(
            "code_span_across_lines",
            "Use `foo\n<function=read_file>\n</tool_call>\nbar` ok.",
            Want::No(NONE),
        ),
        case(
            "unmatched_backtick_leaves_markup_live",
            "Note the ` character.\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "unmatched_double_backtick_leaves_markup_live",
            "Odd `` run and a `span`.\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "code_span_does_not_cross_a_blank_line",
            "Start `code\n  \n«<function=read_file>\n</function>\n</tool_call>»\n\nend `",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "code_span_does_not_cross_a_fence",
            "Start `code\n```\nx\n```\n«<function=read_file>\n</function>\n</tool_call>» end `",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "marker_in_code_does_not_count",
            "Here `</tool_call>` ends a call.\n<function=read_file>\n</function>",
            Want::No(NONE),
        ),
        case(
            "think_tag_in_code_is_not_reasoning",
            "`<think>` opens reasoning.\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "code_span_started_before_think_wins",
            "`a <think> b` «<function=read_file></function></tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        // Reasoning.
        case(
            "markup_in_think",
            format!("<think>I could write\n{READ_CALL}\n</think>\nHere is the answer."),
            Want::No(NONE),
        ),
        case(
            "markup_in_unclosed_think",
            format!("<think>\nmaybe\n{READ_CALL}"),
            Want::No(NONE),
        ),
        case(
            "markup_after_think",
            "<think>plan: ` one backtick</think>\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "marker_in_think_does_not_count",
            "<think></tool_call></think>\n<function=read_file>\n</function>",
            Want::No(NONE),
        ),
        case(
            "backtick_in_think_does_not_open_code",
            "<think>`</think>«<function=read_file></function></tool_call>» `",
            Want::Yes("read_file", XML, CLOSE),
        ),
        // Shape of the markup.
        case(
            "prose_before_and_after",
            "Let me check the file.\n«<function=read_file>\n<parameter=path>\nREADME.md\n</parameter>\n</function>\n</tool_call>»\nI will wait for the result.",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "several_calls_first_named_span_covers_all",
            "«<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=list_directory>\n<parameter=path>\n.\n</parameter>\n</function>\n</tool_call>»\nok",
            Want::Yes("read_file", XML, BOTH),
        ),
        case(
            "several_calls_first_not_offered_is_skipped",
            "<function=nope>\n</function>\n</tool_call>\n«<function=write_file>\n<parameter=path>\nb\n</parameter>\n</function>\n</tool_call>»",
            Want::Yes("write_file", XML, CLOSE),
        ),
        case(
            "several_calls_mixed_forms",
            "«<tool_call>{\"name\": \"list_directory\"}</tool_call>\n<function=read_file>\n</function>»",
            Want::Yes("list_directory", HERMES, BOTH),
        ),
        case(
            "parameter_value_with_markup_names_the_outer_function",
            "«<function=write_file>\n<parameter=content>\nuse <function=read_file> here\n</parameter>\n</function>\n</tool_call>»",
            Want::Yes("write_file", XML, CLOSE),
        ),
        Case {
            name: "markup_inside_a_value_of_a_tool_not_offered_does_not_count",
            tools: &["read_file"],
            text: "<function=write_file>\n<parameter=content>\nuse <function=read_file> here\n</parameter>\n</function>\n</tool_call>".into(),
            want: Want::No(CLOSE),
        },
        case(
            "parameter_value_with_backticks_and_fence",
            "«<function=write_file>\n<parameter=content>\nrun `x and ``y\n```sh\ncargo build\n```\n</parameter>\n</function>\n</tool_call>»",
            Want::Yes("write_file", XML, CLOSE),
        ),
        case(
            "closer_after_unclosed_parameter_still_belongs",
            "«<function=read_file>\n<parameter=path>\nsrc/main.rs\n</tool_call>»\nthen prose",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "closer_after_prose_is_a_marker_outside_the_span",
            "«<function=read_file>\n</function>»\nDone reading.\n</tool_call>",
            Want::Yes("read_file", XML, CLOSE),
        ),
        Case {
            name: "name_longer_than_the_capture_limit_is_not_a_match",
            tools: long_tools,
            text: format!("<function={long_name}>\n</function>\n</tool_call>"),
            want: Want::No(CLOSE),
        },
        Case {
            name: "multibyte_tool_name",
            tools: &["lire_fichier_é"],
            text: "«<function=lire_fichier_é>\n</function>\n</tool_call>» 🦀".into(),
            want: Want::Yes("lire_fichier_é", XML, CLOSE),
        },
        case(
            "orphan_think_end_is_ordinary_text",
            "reasoning</think>\n«<function=read_file>\n</function>\n</tool_call>»",
            Want::Yes("read_file", XML, CLOSE),
        ),
        case(
            "empty_content",
            "",
            Want::No(NONE),
        ),
    ]
}

/// Checks `got`, made with unwrapped calls counted (`on`) or not.
fn check(case: &Case, got: &Verdict, on: bool, how: &str) {
    let name = case.name;
    let how = &format!("{how}, unwrapped calls {}", if on { "on" } else { "off" });
    let (_, span) = unmark(&case.text);
    assert_eq!(
        got.unwrapped,
        matches!(case.want, Want::Unwrapped(_)),
        "{name} ({how}): {got:?}"
    );
    match case.want {
        Want::Unwrapped(tool) if on => {
            assert!(got.unexecuted, "{name} ({how}): {got:?}");
            assert_eq!(got.tool.as_deref(), Some(tool), "{name} ({how})");
            assert_eq!(got.form, Some(XML), "{name} ({how})");
            assert_eq!(got.markers, NONE, "{name} ({how})");
            assert!(span.is_some(), "{name}: mark the span in the case");
            assert_eq!(got.span, span, "{name} ({how})");
        }
        Want::Unwrapped(_) => {
            assert!(!got.unexecuted, "{name} ({how}): {got:?}");
            assert_eq!(
                (&got.tool, got.form, got.span),
                (&None, None, None),
                "{name} ({how})"
            );
            assert_eq!(got.markers, NONE, "{name} ({how})");
        }
        Want::No(markers) => {
            assert!(!got.unexecuted, "{name} ({how}): {got:?}");
            assert_eq!(got.tool, None, "{name} ({how})");
            assert_eq!(got.form, None, "{name} ({how})");
            assert_eq!(got.span, None, "{name} ({how})");
            assert_eq!(got.markers, markers, "{name} ({how})");
        }
        Want::Yes(tool, form, markers) => {
            assert!(got.unexecuted, "{name} ({how}): {got:?}");
            assert_eq!(got.tool.as_deref(), Some(tool), "{name} ({how})");
            assert_eq!(got.form, Some(form), "{name} ({how})");
            assert_eq!(got.markers, markers, "{name} ({how})");
            assert!(span.is_some(), "{name}: mark the span in the case");
            assert_eq!(got.span, span, "{name} ({how})");
        }
    }
}

#[test]
fn verdict_table() {
    let cases = cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    for case in &cases {
        let (content, _) = unmark(&case.text);
        check(case, &detect(case.tools, &content), false, "one-shot");
        let bytes = content.as_bytes();
        for on in [false, true] {
            let new = || Detector::new(case.tools).unwrapped_calls(on);
            let mut d = new();
            d.feed(bytes);
            check(case, &d.finish(), on, "one feed");
            let mut d = new();
            for b in bytes.chunks(1) {
                d.feed(b);
            }
            check(case, &d.finish(), on, "1-byte chunks");
            for split in 0..=bytes.len() {
                let mut d = new();
                d.feed(&bytes[..split]);
                d.feed(&bytes[split..]);
                check(case, &d.finish(), on, &format!("split at {split}"));
            }
        }
    }
}

#[test]
fn verdict_carries_the_offered_name_not_the_text() {
    // The reported name is the host's own string.
    let v = detect(&["read_file"], ADR_CASE);
    assert_eq!(v.tool, Some("read_file".to_owned()));
    assert_eq!(Form::QwenXml.as_str(), "qwen-xml");
    assert_eq!(Form::HermesJson.as_str(), "hermes-json");
    assert_eq!(Marker::Open.as_str(), "<tool_call>");
    assert_eq!(Marker::Close.as_str(), "</tool_call>");
}

#[test]
fn no_tools_offered_means_nothing_qualifies() {
    let v = detect(&[], ADR_CASE);
    assert!(!v.unexecuted);
    assert_eq!(v.markers, [Marker::Close]);
}

#[path = "../common/rng.rs"]
mod rng;
use rng::Rng;

/// Pieces of markup, Markdown and text that interact with each other.
const FRAGMENTS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<tool_call>\n",
    "\n</tool_call>",
    "<function=read_file>",
    "<function=write_file>\n",
    "<function=nope>",
    "</function>",
    "<parameter=path>",
    "<parameter=content>\n",
    "</parameter>",
    "<think>",
    "</think>",
    "```",
    "```rust",
    "````",
    "~~~",
    "   ```",
    "    ```",
    "`",
    "``",
    "`code`",
    "\n",
    "\n",
    "\n\n",
    "\r\n",
    "  ",
    "\t",
    "é",
    "🦀",
    "prose words ",
    "src/main.rs",
    "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
    "{\"name\": ",
    "\"write_file\"",
    "{",
    "}",
    "\"",
    "\\",
    "<",
    ">",
    "<tool_",
    "call>",
    "<func",
    "tion=",
    "read_file>",
    "~",
    "=",
];

fn generate(rng: &mut Rng) -> Vec<u8> {
    let mut text = Vec::new();
    for _ in 0..rng.below(60) {
        text.extend_from_slice(FRAGMENTS[rng.below(FRAGMENTS.len())].as_bytes());
    }
    text
}

fn chunked(bytes: &[u8], on: bool, sizes: &mut dyn FnMut() -> usize) -> Verdict {
    let mut d = Detector::new(TOOLS).unwrapped_calls(on);
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = sizes().min(rest.len());
        d.feed(&rest[..n]);
        rest = &rest[n..];
    }
    d.finish()
}

#[test]
fn verdict_is_independent_of_chunking() {
    let mut rng = Rng(0x5EED_0065);
    let mut unexecuted = 0;
    const INPUTS: usize = 3000;
    for n in 0..INPUTS {
        let bytes = generate(&mut rng);
        let shown = String::from_utf8_lossy(&bytes);
        // ADR-0067's rule on and off: the seed, and so the inputs, stay
        // the same for the rule-off run.
        let sizes_seed = rng.next();
        for on in [false, true] {
            let mut d = Detector::new(TOOLS).unwrapped_calls(on);
            d.feed(&bytes);
            let whole = d.finish();
            if !on {
                unexecuted += usize::from(whole.unexecuted);
            }
            assert_eq!(
                chunked(&bytes, on, &mut || 1),
                whole,
                "input {n}, 1-byte chunks, unwrapped calls {on}: {shown:?}"
            );
            let mut seeds = Rng(sizes_seed);
            for round in 0..6 {
                let mut sizes = Rng(seeds.next());
                let got = chunked(&bytes, on, &mut || 1 + sizes.below(64));
                assert_eq!(
                    got, whole,
                    "input {n}, round {round}, unwrapped calls {on}: {shown:?}"
                );
            }
        }
    }
    // The generator must produce both outcomes, or the property says little.
    assert!(
        unexecuted > INPUTS / 20 && unexecuted < INPUTS * 19 / 20,
        "{unexecuted} of {INPUTS} unexecuted"
    );
}
