//! The detector's findings and inline state: the part a code-span snapshot
//! copies and restores, so it stays small and `Copy`.

use crate::hermes::Json;
use crate::verdict::Form;

pub(crate) const MARKER_OPEN: u8 = 1;
pub(crate) const MARKER_CLOSE: u8 = 2;

/// Where inline text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Region {
    /// Ordinary text, including a function body between parameters.
    Normal,
    /// Inside `<think>`: reasoning, ignored up to `</think>`.
    Think,
    /// Inside a parameter value of an open function.
    Parameter,
    /// Inside a Hermes JSON object after `<tool_call>`.
    Json,
}

/// Everything a code-span snapshot must restore: inline state and findings.
/// Small and `Copy` on purpose; no buffers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scan {
    pub(crate) region: Region,
    pub(crate) json: Json,
    /// An XML function is open: `Some(qualifying)`.
    pub(crate) call: Option<bool>,
    /// The open qualifying function, when `call` is `Some(true)`: where it
    /// starts, the offered tool it names, whether a `<parameter=…>` was read.
    pub(crate) open_call: OpenCall,
    /// Only whitespace since a call ended: `Some(qualifying)`; a
    /// `</tool_call>` now belongs to that call.
    pub(crate) tail: Option<bool>,
    /// Only whitespace since a live `<tool_call>` that started here.
    pub(crate) opener: Option<usize>,
    pub(crate) first: Option<FirstCall>,
    /// The first complete qualifying XML block: `<function=NAME>`, at least
    /// one `<parameter=…>`, `</function>` (ADR-0067).
    pub(crate) complete: Option<FirstCall>,
    /// End of the last tag belonging to a qualifying call.
    pub(crate) span_end: usize,
    pub(crate) markers: u8,
}

impl Scan {
    pub(crate) fn new() -> Self {
        Scan {
            region: Region::Normal,
            json: Json::new(0, 0),
            call: None,
            open_call: OpenCall {
                tool: 0,
                start: 0,
                parameters: false,
            },
            tail: None,
            opener: None,
            first: None,
            complete: None,
            span_end: 0,
            markers: 0,
        }
    }

    /// Something other than whitespace was read in ordinary text.
    pub(crate) fn cancel_pending(&mut self) {
        self.opener = None;
        self.tail = None;
    }

    /// A qualifying call was found: remember it if it is the first, and
    /// extend the span.
    pub(crate) fn qualifying(&mut self, tool: usize, form: Form, start: usize, end: usize) {
        if self.first.is_none() {
            self.first = Some(FirstCall { tool, form, start });
        }
        self.span_end = end;
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct FirstCall {
    /// Index into `Detector::tools`.
    pub(crate) tool: usize,
    pub(crate) form: Form,
    pub(crate) start: usize,
}

/// The XML function being read, for ADR-0067's complete-block rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenCall {
    /// Index into `Detector::tools`.
    pub(crate) tool: usize,
    pub(crate) start: usize,
    /// A `<parameter=…>` tag was read inside it.
    pub(crate) parameters: bool,
}
