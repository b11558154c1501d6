//! The model's answer as a person reads it at a terminal: Markdown
//! rendered (headings, emphasis, inline code, lists, block quotes, fenced
//! code with a light highlight) and words wrapped at the terminal's width.
//!
//! It streams: [`Renderer::feed`] takes text as the engine sends it and
//! returns what can be shown already. A line's kind (heading, list item,
//! quote, paragraph) is known from its first word, and from then on each
//! word is shown as soon as the whitespace after it arrives, so a long
//! paragraph still appears as it is written. Fence lines and code lines
//! are shown whole, when their newline arrives: the fence state is
//! carried across chunks, and code is never wrapped. [`Renderer::finish`]
//! ends the message (a round's text), showing a last line that never got
//! its newline.
//!
//! Hand-written rather than a Markdown crate: a CommonMark parser needs a
//! whole paragraph (emphasis is decided by its closing marker), which a
//! stream does not have until the paragraph ends; the rules here decide
//! each word on what came before, and only for how it looks. Styling is
//! per word and reset after each, so no colour can leak into GOAT's own
//! lines. Without colour (`NO_COLOR`) the text is shown as written, only
//! wrapped.
//!
//! # Security
//!
//! Every character from the model passes through the escaping of
//! [`crate::text`] (code lines keep their tabs), whatever construct it is
//! in: an escape sequence in a heading or a code block is shown, never
//! obeyed.

use unicode_width::UnicodeWidthStr;

use crate::text::{escape_controls, escape_for_terminal};

/// Narrowest width GOAT wraps to: below it a list item's hanging indent
/// leaves no room for words, so a tiny window gets 20-column rows that the
/// terminal folds itself.
const MIN_WRAP_COLUMNS: usize = 20;

/// Longest horizontal rule drawn, in columns: a rule across a 200-column
/// window reads as a border, not a break.
const RULE_COLUMNS: usize = 40;

/// Foreground colours given to fenced code blocks in turn, so two blocks
/// one after the other are told apart: cyan, yellow, magenta, blue.
const BLOCK_COLOURS: [&str; 4] = ["36", "33", "35", "34"];

/// Words shown in bold in code, across the languages models write most;
/// a light touch, not a grammar.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "case", "class", "const", "continue", "def", "do", "elif",
    "else", "enum", "export", "extends", "false", "fi", "fn", "for", "from", "func", "function",
    "if", "impl", "import", "in", "let", "match", "mod", "mut", "new", "nil", "None", "null",
    "pub", "return", "self", "Self", "static", "struct", "switch", "then", "trait", "true", "True",
    "False", "type", "use", "var", "where", "while", "with", "yield",
];

/// Renders a streamed answer for a terminal.
pub struct Renderer {
    /// Wrap to this many columns; `None` leaves the lines long.
    width: Option<usize>,
    /// Styles and colours may be written.
    color: bool,
    /// The current source line's text not yet shown.
    line: String,
    /// How the current line is shown, once its first word says.
    block: Option<Block>,
    /// Inside a fenced code block.
    fence: Option<Fence>,
    /// Fenced blocks opened so far, for their colours.
    fences_opened: usize,
    /// Output column on the current row.
    col: usize,
    /// A space is owed before the next word on this row.
    space: bool,
    /// Emphasis open on the current line.
    inline: Inline,
}

/// A shown line's kind, as far as its words care.
#[derive(Clone, Debug, Default)]
struct Block {
    /// Written at the start of each row a wrap makes, and its width.
    hang: String,
    hang_cols: usize,
    heading: bool,
}

#[derive(Clone, Copy, Debug)]
struct Fence {
    marker: char,
    len: usize,
    colour: &'static str,
}

#[derive(Clone, Copy, Debug, Default)]
struct Inline {
    bold: bool,
    em: bool,
    code: bool,
}

impl Renderer {
    /// A renderer wrapping at `width` columns (none when `None`), with
    /// styles when `color`.
    pub fn new(width: Option<usize>, color: bool) -> Self {
        Self {
            width: width.map(|w| w.max(MIN_WRAP_COLUMNS)),
            color,
            line: String::new(),
            block: None,
            fence: None,
            fences_opened: 0,
            col: 0,
            space: false,
            inline: Inline::default(),
        }
    }

    /// Takes the next piece of the answer; returns what can be shown now.
    pub fn feed(&mut self, text: &str) -> String {
        self.line.push_str(text);
        let mut out = String::new();
        self.drain(&mut out, false);
        out
    }

    /// Ends the message: shows what is left (a last line without its
    /// newline stays open) and forgets the fence, so the next message
    /// starts afresh.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        self.drain(&mut out, true);
        self.block = None;
        self.fence = None;
        self.col = 0;
        self.space = false;
        self.inline = Inline::default();
        out
    }

    fn drain(&mut self, out: &mut String, all: bool) {
        while !self.line.is_empty() {
            if self.block.is_none() && (self.fence.is_some() || could_be_fence(&self.line)) {
                let (whole, ends) = match self.line.find('\n') {
                    Some(end) => (self.line[..end].to_owned(), true),
                    None if all => (self.line.clone(), false),
                    None => return,
                };
                if self.fence.is_some() || fence_opening(&whole).is_some() {
                    self.line.drain(..whole.len() + usize::from(ends));
                    self.code_line(&whole, out);
                    if ends {
                        out.push('\n');
                    }
                    continue;
                }
                // Looked like a fence but is not one: an ordinary line.
            }
            if self.block.is_none() {
                let known =
                    self.line.contains('\n') || self.line.trim_start().contains([' ', '\t']);
                if !known && !all {
                    return;
                }
                self.open_line(out);
            }
            let mut ended = false;
            while let Some(at) = self.line.find([' ', '\t', '\n']) {
                let sep = self.line[at..].chars().next().unwrap_or(' ');
                let word: String = self.line.drain(..at).collect();
                self.line.drain(..sep.len_utf8());
                if !word.is_empty() {
                    self.word(&word, out);
                }
                if sep == '\n' {
                    self.end_line(out);
                    ended = true;
                    break;
                }
                self.space = self.col > 0;
            }
            if ended {
                continue;
            }
            if all && !self.line.is_empty() {
                let word = std::mem::take(&mut self.line);
                self.word(&word, out);
            }
            return;
        }
    }

    /// Decides the current line's kind from its start, writes its marker
    /// and takes the marker off the line.
    fn open_line(&mut self, out: &mut String) {
        let lead = self.line.len() - self.line.trim_start_matches(' ').len();
        let rest = &self.line[lead..];
        let first = rest.split([' ', '\t', '\n']).next().unwrap_or("");
        let after = rest.get(first.len()..).unwrap_or("");
        let spaced = after.starts_with([' ', '\t']);
        let indent = " ".repeat(lead);
        let whole_line = rest.split('\n').next().unwrap_or("").trim_end();
        let mut block = Block::default();
        let (marker, shown): (usize, String) = if is_rule(whole_line) && self.line.contains('\n') {
            let cols = self.width.unwrap_or(RULE_COLUMNS).min(RULE_COLUMNS);
            let rule = if self.color {
                self.paint("2", &"─".repeat(cols))
            } else {
                whole_line.to_owned()
            };
            (whole_line.len(), rule)
        } else if (1..=6).contains(&first.len()) && first.chars().all(|c| c == '#') && spaced {
            block.heading = true;
            if self.color {
                (first.len() + 1, String::new())
            } else {
                (0, String::new())
            }
        } else if let Some(quoted) = rest.strip_prefix('>') {
            let cut = if quoted.starts_with(' ') { 2 } else { 1 };
            let bar = if self.color {
                format!("{} ", self.paint("2", "│"))
            } else {
                "> ".to_owned()
            };
            block.hang = format!("{indent}{bar}");
            block.hang_cols = lead + 2;
            (
                if self.color { cut } else { 0 },
                if self.color { bar } else { String::new() },
            )
        } else if matches!(first, "-" | "*" | "+") && spaced {
            block.hang = " ".repeat(lead + 2);
            block.hang_cols = lead + 2;
            if self.color {
                (2, "• ".to_owned())
            } else {
                (0, String::new())
            }
        } else if is_ordered(first) && spaced {
            let cols = first.len() + 1;
            block.hang = " ".repeat(lead + cols);
            block.hang_cols = lead + cols;
            (0, String::new())
        } else {
            block.hang = indent.clone();
            block.hang_cols = lead;
            (0, String::new())
        };
        let marker = (lead + marker).min(self.line.len());
        self.line.drain(..marker);
        out.push_str(&indent);
        out.push_str(&shown);
        self.col = lead + UnicodeWidthStr::width(strip_sgr(&shown).as_str());
        self.space = false;
        self.inline = Inline::default();
        self.block = Some(block);
    }

    fn end_line(&mut self, out: &mut String) {
        out.push('\n');
        self.col = 0;
        self.space = false;
        self.block = None;
        self.inline = Inline::default();
    }

    /// One word of running text: styled, and on a new row when it would
    /// pass the width (a word longer than a row overflows; it is never cut).
    fn word(&mut self, word: &str, out: &mut String) {
        let heading = self.block.as_ref().is_some_and(|b| b.heading);
        let (styled, cols) = if self.color {
            self.styled_word(word, heading)
        } else {
            let shown = escape_controls(word);
            let cols = UnicodeWidthStr::width(shown.as_str());
            (shown, cols)
        };
        let (hang, hang_cols) = self
            .block
            .as_ref()
            .map_or((String::new(), 0), |b| (b.hang.clone(), b.hang_cols));
        let wraps = self
            .width
            .is_some_and(|w| self.space && self.col + 1 + cols > w && self.col > hang_cols);
        if wraps {
            out.push('\n');
            out.push_str(&hang);
            self.col = hang_cols;
        } else if self.space {
            out.push(' ');
            self.col += 1;
        }
        out.push_str(&styled);
        self.col += cols;
        self.space = false;
    }

    /// A word with its emphasis markers turned into styles: the shown
    /// text and its width in columns.
    fn styled_word(&mut self, word: &str, heading: bool) -> (String, usize) {
        let chars: Vec<char> = word.chars().collect();
        let mut runs: Vec<(String, String)> = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '`' {
                self.inline.code = !self.inline.code;
                i += 1;
                continue;
            }
            if !self.inline.code && matches!(c, '*' | '_') {
                let run = chars[i..].iter().take_while(|&&m| m == c).count();
                let bold = run >= 2;
                let open = if bold {
                    self.inline.bold
                } else {
                    self.inline.em
                };
                let boundary = c == '*' || i == 0 || i + run == chars.len();
                let toggles = boundary && if open { i > 0 } else { i + run < chars.len() };
                if toggles && run <= 3 {
                    if run == 3 {
                        self.inline.bold = !self.inline.bold;
                        self.inline.em = !self.inline.em;
                    } else if bold {
                        self.inline.bold = !self.inline.bold;
                    } else {
                        self.inline.em = !self.inline.em;
                    }
                    i += run;
                    continue;
                }
            }
            let mut codes = Vec::new();
            if heading || self.inline.bold {
                codes.push("1");
            }
            if self.inline.em {
                codes.push("3");
            }
            if self.inline.code {
                codes.push("36");
            }
            let code = codes.join(";");
            let shown = escape_controls(&c.to_string());
            match runs.last_mut() {
                Some((last, text)) if *last == code => text.push_str(&shown),
                _ => runs.push((code, shown)),
            }
            i += 1;
        }
        let cols = runs
            .iter()
            .map(|(_, t)| UnicodeWidthStr::width(t.as_str()))
            .sum();
        let styled = runs
            .iter()
            .map(|(code, text)| self.paint(code, text))
            .collect();
        (styled, cols)
    }

    /// A fence line or a line of code, shown whole and never wrapped.
    fn code_line(&mut self, line: &str, out: &mut String) {
        match self.fence {
            None => {
                if let Some((marker, len)) = fence_opening(line) {
                    let colour = BLOCK_COLOURS[self.fences_opened % BLOCK_COLOURS.len()];
                    self.fences_opened += 1;
                    self.fence = Some(Fence {
                        marker,
                        len,
                        colour,
                    });
                }
                out.push_str(&self.paint("2", &escape_for_terminal(line)));
            }
            Some(fence) => {
                if closes(line, fence) {
                    self.fence = None;
                    out.push_str(&self.paint("2", &escape_for_terminal(line)));
                } else if self.color {
                    out.push_str(&highlight(line, fence.colour));
                } else {
                    out.push_str(&escape_for_terminal(line));
                }
            }
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color && !code.is_empty() && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// Whether `line` (so far) may still turn out to be a fence line, so it
/// must wait for its newline.
fn could_be_fence(line: &str) -> bool {
    let first = line.split('\n').next().unwrap_or("");
    let t = first.trim_start_matches(' ');
    if first.len() - t.len() > 3 {
        return false;
    }
    ["```", "~~~"]
        .iter()
        .any(|m| t.starts_with(m) || (!t.is_empty() && m.starts_with(t)))
}

/// The marker and its length when `line` opens a fence (three or more
/// backticks or tildes, at most three spaces in; backticks with no
/// backtick in the info string).
fn fence_opening(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let marker = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = t.chars().take_while(|&c| c == marker).count();
    let info = &t[len..];
    (len >= 3 && !(marker == '`' && info.contains('`'))).then_some((marker, len))
}

fn closes(line: &str, fence: Fence) -> bool {
    let t = line.trim_start_matches(' ');
    let len = t.chars().take_while(|&c| c == fence.marker).count();
    line.len() - t.len() <= 3 && len >= fence.len && t[len..].trim().is_empty()
}

/// `---`, `***`, `___` (three or more, nothing else).
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| t.chars().all(|c| c.to_string() == *m))
}

/// `1.` or `1)`.
fn is_ordered(word: &str) -> bool {
    let digits = word.trim_end_matches(['.', ')']);
    word.len() == digits.len() + 1
        && (1..=9).contains(&digits.len())
        && digits.chars().all(|c| c.is_ascii_digit())
}

/// `text` without the SGR sequences GOAT itself added (for its width).
fn strip_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match rest.find('m') {
            Some(end) => rest = &rest[end + 1..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// One line of code in its block's colour: comments dimmed, strings
/// green, keywords bold. Escaped first, so nothing from the model drives
/// the terminal.
fn highlight(line: &str, colour: &str) -> String {
    let line = escape_for_terminal(line);
    let mut out = String::new();
    let paint = |out: &mut String, code: &str, text: &str| {
        if !text.is_empty() {
            out.push_str(&format!("\x1b[{code}m{text}\x1b[0m"));
        }
    };
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut plain_from = 0;
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let prev_space = i == 0 || chars[i - 1].1.is_whitespace();
        if line[at..].starts_with("//") || (c == '#' && prev_space) {
            paint(&mut out, colour, &line[plain_from..at]);
            paint(&mut out, "2", &line[at..]);
            return out;
        }
        if c == '"' {
            paint(&mut out, colour, &line[plain_from..at]);
            let mut j = i + 1;
            while j < chars.len() && chars[j].1 != '"' {
                j += if chars[j].1 == '\\' { 2 } else { 1 };
            }
            let end = chars.get(j + 1).map_or(line.len(), |&(a, _)| a);
            paint(&mut out, "32", &line[at..end]);
            plain_from = end;
            i = j + 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].1.is_alphanumeric() || chars[j].1 == '_') {
                j += 1;
            }
            let end = chars.get(j).map_or(line.len(), |&(a, _)| a);
            if KEYWORDS.contains(&&line[at..end]) {
                paint(&mut out, colour, &line[plain_from..at]);
                paint(&mut out, &format!("1;{colour}"), &line[at..end]);
                plain_from = end;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    paint(&mut out, colour, &line[plain_from..]);
    out
}

#[cfg(test)]
mod tests;
