//! The verdict: what the detector reports about one message.

/// Which tool-call syntax the unexecuted markup used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Form {
    /// Qwen3-Coder XML: `<function=NAME>`, `<parameter=KEY>…</parameter>`,
    /// `</function>`.
    QwenXml,
    /// Hermes JSON (Qwen2.5, Qwen3): `<tool_call>` then
    /// `{"name": NAME, "arguments": …}`.
    HermesJson,
}

impl Form {
    /// The form's name in machine-readable output: `qwen-xml` or
    /// `hermes-json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::QwenXml => "qwen-xml",
            Form::HermesJson => "hermes-json",
        }
    }
}

/// A tool-call envelope marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Marker {
    /// `<tool_call>`.
    Open,
    /// `</tool_call>`.
    Close,
}

impl Marker {
    /// The marker as it appears in text.
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::Open => "<tool_call>",
            Marker::Close => "</tool_call>",
        }
    }
}

/// What the detector found in one assistant message.
///
/// # Security
///
/// Deliberately holds no arguments and nothing that could be executed; see
/// the crate documentation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Verdict {
    /// The content holds unexecuted tool-call markup: a call naming an
    /// offered tool, and an envelope marker, both outside code and reasoning
    /// (ADR-0065); or, when the detector counts them, a complete unwrapped
    /// block (see `unwrapped`, ADR-0067).
    pub unexecuted: bool,
    /// The offered tool named by the first qualifying call, when
    /// `unexecuted`.
    pub tool: Option<String>,
    /// The syntax of the first qualifying call, when `unexecuted`.
    pub form: Option<Form>,
    /// Every envelope marker kind seen outside code and reasoning, in the
    /// order `Open`, `Close`, whether or not the content is `unexecuted`.
    pub markers: Vec<Marker>,
    /// Byte offsets `[start, end)` into the whole content, when `unexecuted`:
    /// from the start of the first qualifying call (its `<tool_call>` when only
    /// whitespace separates them) to the end of the last tag belonging to any
    /// qualifying call (its `</tool_call>` when only whitespace follows the
    /// call, or the Hermes object's closing brace).
    ///
    /// When `unexecuted` only by the unwrapped rule, the span starts at the
    /// first *complete* block.
    pub span: Option<(usize, usize)>,
    /// The content holds a complete Qwen3-Coder block naming an offered tool
    /// (`<function=NAME>`, at least one `<parameter=…>`, `</function>`),
    /// outside code and reasoning, and no envelope marker anywhere live: a
    /// call vLLM's streaming qwen3_coder parser passes on as text (ADR-0067).
    /// Reported whether or not the detector counts it as `unexecuted`.
    pub unwrapped: bool,
}
