//! Recognises Qwen tool-call markup that a model wrote into its answer as
//! plain text instead of calling a tool (ADR-0065).
//!
//! A local model sometimes streams `<function=read_file>…</tool_call>` as
//! ordinary content: nothing runs, and without this crate the turn would look
//! successful. [`Detector`] reads the assistant's *content* (never its
//! reasoning) and returns a [`Verdict`] saying whether such unexecuted markup
//! is there, which offered tool it names, and where it is.
//!
//! # What counts
//!
//! - Qwen3-Coder XML, `<function=NAME>` (with `<parameter=KEY>…</parameter>`
//!   children and `</function>`), or Hermes JSON, `<tool_call>` then optional
//!   whitespace then a JSON object whose top-level `"name"` is NAME.
//! - NAME must be one of the tools offered in this request, *and* the text
//!   must carry an envelope marker, `<tool_call>` or `</tool_call>`, somewhere
//!   live. A bare `<function=read_file>` in prose is not an attempted call; the
//!   failure the ADR records is function markup with an orphan `</tool_call>`.
//! - Opt in (ADR-0067, [`Detector::unwrapped_calls`]): a *complete*
//!   Qwen3-Coder block with no envelope marker, `<function=NAME>` then at
//!   least one `<parameter=KEY>` then `</function>`, NAME offered, also
//!   counts. vLLM's streaming qwen3_coder parser passes exactly this on as
//!   text. The verdict reports such a block ([`Verdict::unwrapped`]) whether
//!   or not it counts, so a probe can advise turning the rule on.
//! - Nothing inside Markdown fenced code blocks, inline code spans or
//!   `<think>…</think>` counts, neither markup nor envelope markers.
//! - Inside a parameter value only `</parameter>`, `</function>` and the
//!   envelope markers are recognised, so a value that quotes markup does not
//!   change which call the verdict names.
//!
//! Markdown is read as CommonMark reads it, narrowed to what matters here:
//! fences open with up to three spaces of indentation (a tab never) and at
//! least three backticks or tildes, a backtick fence's info string holds no
//! backtick, and a fence closes on a line of the same character, at least as
//! long, with only whitespace after; an unclosed fence runs to the end. Code
//! spans close on the next run of exactly as many backticks in the same
//! paragraph (blank lines and fences end paragraphs); an unmatched run is
//! literal. Not modelled, on purpose: indented code blocks (a model's
//! indented markup is still an attempted call), backslash escapes, block
//! quotes and list containers. An unclosed `<think>` runs to the end; a
//! `</think>` with no opener is ordinary text (content from a server that
//! splits reasoning out never has one).
//!
//! # Key decision: one pass, bytes in, no look-back
//!
//! The host feeds streamed bytes as they arrive, split anywhere (inside a tag,
//! a fence, a UTF-8 character), and the verdict must not depend on how they
//! were split. The detector is therefore a byte-at-a-time state machine that
//! never keeps or rereads the text: every token of interest is ASCII, so
//! partial tokens carry over in a few bytes of state, and `memchr` skips the
//! bytes in between. Markdown is modelled block-first as CommonMark does:
//! fences are decided per line, then inline constructs (code spans, `<think>`,
//! calls, parameter values) apply in order of where they start.
//!
//! The one construct that needs look-ahead is the inline code span: a run of
//! backticks is code only if a run of the same length closes it in the same
//! paragraph. Instead of buffering, the detector keeps scanning as if the run
//! were literal and remembers a snapshot of its findings from before the run.
//! A closing run restores the snapshot (everything since was code); the end of
//! the paragraph drops the snapshot (the run was literal, the findings stand).
//! The snapshot is a small fixed-size copy, so work stays linear in the input.
//!
//! # Security
//!
//! The verdict carries no arguments and nothing executable: a tool name picked
//! from the host's own offered list, a form, the envelope markers seen and a
//! byte span. This crate offers no way to turn text into a tool call; recovery
//! asks the model for a fresh structured call, which then goes through the
//! normal route, permission gate and sandbox. All limits are named constants
//! ([`MAX_TOOL_NAME_BYTES`], [`HERMES_NAME_WINDOW`],
//! [`MAX_PENDING_CODE_SPANS`]), so hostile text cannot make the detector
//! allocate or work without bound.
//!
//! # Layout
//!
//! [`Detector`] (`detector`) is the byte layer: it dispatches each byte by
//! mode and owns the `memchr` fast paths. `markdown` decides fences and code
//! spans, `tags` matches the XML tags and envelope markers, `hermes` reads
//! just enough JSON for a Hermes call, `scan` holds the findings a code-span
//! snapshot restores, and `verdict` the public result.

mod detector;
mod hermes;
mod markdown;
#[cfg(test)]
mod reference;
mod scan;
mod tags;
mod verdict;

pub use detector::{Detector, detect};
pub use hermes::HERMES_NAME_WINDOW;
pub use markdown::MAX_PENDING_CODE_SPANS;
pub use tags::MAX_TOOL_NAME_BYTES;
pub use verdict::{Form, Marker, Verdict};

#[cfg(test)]
#[path = "../tests/common/rng.rs"]
mod test_rng;
