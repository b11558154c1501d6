//! A non-streaming model of the detector, for tests: it looks ahead where
//! the detector keeps snapshots.
//!
//! It reads the same rules the obvious way, so the detector's unit tests can
//! compare the two on generated input. It leaves Hermes JSON out: the table
//! tests cover it.

use crate::tags::{MAX_TOOL_NAME_BYTES, is_name_byte};
use crate::verdict::{Form, Marker, Verdict};

/// The rules, written the obvious way: find fences and paragraphs line by
/// line, then walk the visible text, looking ahead for each code span's
/// closing run.
pub(crate) fn reference(tools: &[&str], text: &[u8]) -> Verdict {
    reference_with(tools, text, false)
}

/// [`reference`], with ADR-0067's unwrapped-call rule on or off.
pub(crate) fn reference_with(tools: &[&str], text: &[u8], unwrapped_calls: bool) -> Verdict {
    let n = text.len();
    let mut visible = vec![true; n];
    let mut para = vec![0usize; n];
    let mut pid = 0;
    let mut fence: Option<(u8, usize)> = None;
    let mut start = 0;
    while start < n {
        let end = text[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(n, |k| start + k + 1);
        let line = &text[start..end];
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let ws = body
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\r'))
            .count();
        let spaces_only = body[..ws].iter().all(|&b| b == b' ');
        let hide = match fence {
            Some((ch, len)) => {
                let sp = body.iter().take_while(|&&b| b == b' ').count();
                let run = body[sp..].iter().take_while(|&&b| b == ch).count();
                let rest = &body[sp + run..];
                if sp <= 3 && run >= len && rest.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                    fence = None;
                    pid += 1;
                }
                true
            }
            None if ws == body.len() && line.ends_with(b"\n") => {
                pid += 1;
                false
            }
            // Trailing whitespace at the end of the text.
            None if ws == body.len() => false,
            None => {
                let c = body[ws];
                let run = body[ws..].iter().take_while(|&&b| b == c).count();
                let opens = spaces_only
                    && ws <= 3
                    && run >= 3
                    && (c == b'~' || (c == b'`' && !body[ws + run..].contains(&b'`')));
                if opens {
                    fence = Some((c, run));
                    pid += 1;
                }
                opens
            }
        };
        for k in start..end {
            visible[k] = !hide;
            para[k] = pid;
        }
        start = end;
    }

    let run_at = |i: usize| text[i..].iter().take_while(|&&b| b == b'`').count();
    let closer = |from: usize, len: usize, p: usize| {
        let mut j = from;
        while j < n && visible[j] && para[j] == p {
            if text[j] == b'`' {
                let run = run_at(j);
                if run == len {
                    return Some(j);
                }
                j += run;
            } else {
                j += 1;
            }
        }
        None
    };
    let name_at = |i: usize| {
        let len = text[i..].iter().take_while(|&&b| is_name_byte(b)).count();
        (len > 0 && len <= MAX_TOOL_NAME_BYTES && text.get(i + len) == Some(&b'>'))
            .then(|| &text[i..i + len])
    };

    #[derive(PartialEq)]
    enum R {
        Normal,
        Think,
        Param,
    }
    let mut region = R::Normal;
    let (mut call, mut tail, mut opener) = (None::<bool>, None::<bool>, None::<usize>);
    let mut first: Option<(usize, usize)> = None;
    // The open qualifying call (tool, start, saw a parameter), and the first
    // complete one.
    let mut open_call = (0, 0, false);
    let mut complete: Option<(usize, usize)> = None;
    let (mut span_end, mut open, mut close) = (0, false, false);
    let mut i = 0;
    while i < n {
        if !visible[i] {
            opener = None;
            tail = None;
            i += 1;
            continue;
        }
        let rest = &text[i..];
        let b = text[i];
        if region == R::Think {
            if rest.starts_with(b"</think>") {
                region = R::Normal;
                i += 8;
            } else {
                i += 1;
            }
            continue;
        }
        if b == b'`' && region == R::Normal {
            opener = None;
            tail = None;
            let len = run_at(i);
            i = match closer(i + len, len, para[i]) {
                Some(c) => c + len,
                None => i + len,
            };
            continue;
        }
        if b == b'<' {
            if rest.starts_with(b"<tool_call>") {
                (region, open, call, tail, opener) = (R::Normal, true, None, None, Some(i));
                i += 11;
                continue;
            }
            if rest.starts_with(b"</tool_call>") {
                close = true;
                if call.or(tail) == Some(true) {
                    span_end = i + 12;
                }
                (region, call, tail, opener) = (R::Normal, None, None, None);
                i += 12;
                continue;
            }
            if rest.starts_with(b"</function>") && call.is_some() {
                if call == Some(true) {
                    span_end = i + 11;
                    if open_call.2 {
                        complete.get_or_insert((open_call.0, open_call.1));
                    }
                }
                (region, tail, call) = (R::Normal, call, None);
                i += 11;
                continue;
            }
            if rest.starts_with(b"</parameter>") && region == R::Param {
                if call == Some(true) {
                    span_end = i + 12;
                }
                region = R::Normal;
                i += 12;
                continue;
            }
            if region == R::Normal {
                if let Some(name) = rest
                    .strip_prefix(b"<function=")
                    .and_then(|_| name_at(i + 10))
                {
                    let tool = tools.iter().position(|t| t.as_bytes() == name);
                    let start = opener.take().unwrap_or(i);
                    tail = None;
                    call = Some(tool.is_some());
                    i += 10 + name.len() + 1;
                    if let Some(tool) = tool {
                        open_call = (tool, start, false);
                        first.get_or_insert((tool, start));
                        span_end = i;
                    }
                    continue;
                }
                if let Some(key) = rest
                    .strip_prefix(b"<parameter=")
                    .and_then(|_| name_at(i + 11))
                    && call.is_some()
                {
                    i += 11 + key.len() + 1;
                    region = R::Param;
                    if call == Some(true) {
                        open_call.2 = true;
                        span_end = i;
                    }
                    continue;
                }
                if rest.starts_with(b"<think>") {
                    (region, opener, tail) = (R::Think, None, None);
                    i += 7;
                    continue;
                }
            }
        }
        if region == R::Normal && !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            assert!(!(b == b'{' && opener.is_some()), "no JSON here");
            opener = None;
            tail = None;
        }
        i += 1;
    }
    let markers: Vec<Marker> = [(open, Marker::Open), (close, Marker::Close)]
        .into_iter()
        .filter_map(|(seen, m)| seen.then_some(m))
        .collect();
    let unwrapped = markers.is_empty() && complete.is_some();
    let call = if markers.is_empty() {
        complete.filter(|_| unwrapped_calls)
    } else {
        first
    };
    match call {
        Some((tool, start)) => Verdict {
            unexecuted: true,
            tool: Some(tools[tool].to_owned()),
            form: Some(Form::QwenXml),
            markers,
            span: Some((start, span_end)),
            unwrapped,
        },
        None => Verdict {
            markers,
            unwrapped,
            ..Verdict::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::reference;

    const TOOLS: &[&str] = &["read_file", "write_file"];

    #[test]
    fn reference_agrees_with_a_few_known_verdicts() {
        // The reference is only useful if it is right on its own.
        let adr = b"Ok.\n<function=read_file>\n</function>\n</tool_call>";
        assert_eq!(reference(TOOLS, adr).span, Some((4, adr.len())));
        assert!(!reference(TOOLS, b"`<function=read_file></tool_call>`").unexecuted);
        assert!(!reference(TOOLS, b"```\n<function=read_file></tool_call>").unexecuted);
        assert!(reference(TOOLS, b"` <function=read_file></tool_call>").unexecuted);
    }
}
