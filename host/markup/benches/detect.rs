//! Throughput of the unexecuted-markup detector on realistic assistant
//! content: prose with inline code, fenced code blocks, and now and then
//! tool-call markup (fenced, inline, in reasoning, and live).
//!
//! Run with `cargo bench -p goat-markup --bench detect`. Rounds are
//! interleaved so drift in machine load hits every measurement alike; medians
//! are reported. Targets: one-shot at least 1 GB/s, 16-byte chunks at least a
//! quarter of that, and 16x the input at most 17x the time.

use std::hint::black_box;
use std::time::{Duration, Instant};

use goat_markup::{Detector, Verdict};

const TOOLS: &[&str] = &[
    "read_file",
    "list_directory",
    "find_files",
    "search_files",
    "write_file",
    "edit_file",
];
const MIB: usize = 1 << 20;
const ROUNDS: usize = 21;

#[path = "../tests/common/rng.rs"]
mod rng;
use rng::Rng;

fn pick<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
    items[rng.below(items.len())]
}

const WORDS: &[&str] = &[
    "the",
    "file",
    "function",
    "returns",
    "a",
    "value",
    "when",
    "error",
    "is",
    "handled",
    "we",
    "should",
    "update",
    "test",
    "module",
    "because",
    "it",
    "reads",
    "configuration",
    "and",
    "then",
    "writes",
    "output",
    "to",
    "directory",
    "this",
    "change",
    "keeps",
    "behaviour",
    "same",
    "for",
    "callers",
    "I'll",
    "check",
    "which",
    "path",
    "compiler",
    "borrow",
    "lifetime",
    "é",
    "naïve",
    "café",
    "🦀",
];
const IDENTS: &[&str] = &[
    "read_to_string",
    "Vec<u8>",
    "Option<&str>",
    "src/main.rs",
    "cargo test",
    "HashMap<K, V>",
    "x < y",
    "--release",
    "Result<(), Error>",
];
const CODE: &[&str] = &[
    "fn parse(input: &str) -> Result<Vec<Token>, Error> {",
    "    let mut out = Vec::with_capacity(input.len() / 4);",
    "    for (i, line) in input.lines().enumerate() {",
    "        if line.len() < 3 && !line.is_empty() { continue; }",
    "        out.push(Token::new(i, line.trim()));",
    "    }",
    "    Ok(out)",
    "}",
    "impl<T: Clone> Cache<T> for Store<T> where T: Send + 'static {",
    "    // keep the last 16 entries; older ones are evicted",
    "let html = \"<div class=\\\"note\\\">a &lt; b</div>\";",
    "match state { State::Idle => {}, State::Busy(n) if n > 0 => return, _ => unreachable!() }",
];

/// One block of assistant content.
fn block(rng: &mut Rng, out: &mut String) {
    match rng.below(20) {
        0..=10 => {
            // A paragraph of prose with some inline code.
            let sentences = 2 + rng.below(5);
            for _ in 0..sentences {
                let words = 6 + rng.below(14);
                for w in 0..words {
                    if w > 0 {
                        out.push(' ');
                    }
                    if rng.below(12) == 0 {
                        out.push('`');
                        out.push_str(pick(rng, IDENTS));
                        out.push('`');
                    } else {
                        out.push_str(pick(rng, WORDS));
                    }
                }
                out.push_str(". ");
                if rng.below(3) == 0 {
                    out.push('\n');
                }
            }
            out.push_str("\n\n");
        }
        11..=16 => {
            let fence = if rng.below(4) == 0 { "~~~" } else { "```" };
            out.push_str(fence);
            out.push_str(pick(rng, &["rust", "", "toml", "sh"]));
            out.push('\n');
            for _ in 0..4 + rng.below(20) {
                out.push_str(pick(rng, CODE));
                out.push('\n');
            }
            out.push_str(fence);
            out.push_str("\n\n");
        }
        17 => {
            out.push_str("- item with `code` and <b>html</b>\n- another item: a < b > c\n\n");
        }
        _ => match rng.below(5) {
            0 => out.push_str(
                "Example of the format:\n```xml\n<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>\n```\n\n",
            ),
            1 => out.push_str("Call it as `<function=read_file>` with a path.\n\n"),
            2 => out.push_str(
                "<think>\nI should read the file first: <function=read_file> maybe.\n</think>\n",
            ),
            3 => out.push_str(
                "<tool_call>\n{\"name\": \"list_directory\", \"arguments\": {\"path\": \".\"}}\n</tool_call>\n\n",
            ),
            _ => out.push_str(
                "I'll read it.\n<function=read_file>\n<parameter=path>\nsrc/lib.rs\n</parameter>\n</function>\n</tool_call>\n\n",
            ),
        },
    }
}

fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = String::with_capacity(len + 4096);
    while out.len() < len {
        block(&mut rng, &mut out);
    }
    let mut bytes = out.into_bytes();
    bytes.truncate(len);
    bytes
}

fn one_shot(bytes: &[u8]) -> Verdict {
    let mut d = Detector::new(TOOLS);
    d.feed(bytes);
    d.finish()
}

fn chunked(bytes: &[u8], size: usize) -> Verdict {
    let mut d = Detector::new(TOOLS);
    for chunk in bytes.chunks(size) {
        d.feed(chunk);
    }
    d.finish()
}

/// Time of one pass.
fn time(f: impl FnOnce() -> Verdict) -> Duration {
    let start = Instant::now();
    black_box(f());
    start.elapsed()
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs.get(xs.len() / 2).copied().unwrap_or_default()
}

fn gbps(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn main() {
    let big = content(16 * MIB, 0x0065);
    let (one, four) = (&big[..MIB], &big[..4 * MIB]);
    let verdict = one_shot(&big);
    assert_eq!(verdict, chunked(&big, 16), "chunking changed the verdict");
    let density = |b: &[u8], pat: &[u8]| b.windows(pat.len()).filter(|w| *w == pat).count();
    println!(
        "content: {} MiB, {} fenced blocks, {} inline code spans, {} `<function=`; verdict on 16 MiB: unexecuted={} tool={:?}",
        big.len() / MIB,
        density(&big, b"\n```") + density(&big, b"\n~~~"),
        density(&big, b" `") / 2,
        density(&big, b"<function="),
        verdict.unexecuted,
        verdict.tool,
    );

    // Every sample is one pass, so medians compare like with like. The 1 MiB
    // samples rotate through the sixteen slices of the big input: repeating one
    // slice would measure it from L2 cache while 16 MiB comes from L3, and the
    // scaling ratio is about the algorithm, not the cache. The hot figure is
    // printed too, for reference.
    let slices: Vec<&[u8]> = big.chunks(MIB).collect();
    let (mut t1, mut hot, mut tc, mut t4, mut t16) = (vec![], vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        for k in 0..8 {
            let slice = slices[(round * 8 + k) % slices.len()];
            t1.push(time(|| one_shot(black_box(slice))));
        }
        for _ in 0..8 {
            hot.push(time(|| one_shot(black_box(one))));
        }
        for k in 0..4 {
            let slice = slices[(round * 4 + k) % slices.len()];
            tc.push(time(|| chunked(black_box(slice), 16)));
        }
        for _ in 0..2 {
            t4.push(time(|| one_shot(black_box(four))));
        }
        t16.push(time(|| one_shot(black_box(&big))));
    }
    let (t1, hot, tc, t4, t16) = (median(t1), median(hot), median(tc), median(t4), median(t16));

    println!(
        "one-shot    1 MiB: {:>9.3?}  {:6.2} GB/s",
        t1,
        gbps(MIB, t1)
    );
    println!(
        "16-B chunks 1 MiB: {:>9.3?}  {:6.2} GB/s",
        tc,
        gbps(MIB, tc)
    );
    println!(
        "one-shot    4 MiB: {:>9.3?}  {:6.2} GB/s",
        t4,
        gbps(4 * MIB, t4)
    );
    println!(
        "one-shot   16 MiB: {:>9.3?}  {:6.2} GB/s",
        t16,
        gbps(16 * MIB, t16)
    );
    println!(
        "(one 1 MiB slice again and again, from L2: {:.3?}, {:.2} GB/s)",
        hot,
        gbps(MIB, hot)
    );
    let chunk_ratio = t1.as_secs_f64() / tc.as_secs_f64();
    let scale = t16.as_secs_f64() / t1.as_secs_f64();
    println!("chunked/one-shot throughput: {chunk_ratio:.3} (target >= 0.25)");
    println!("time(16 MiB)/time(1 MiB):    {scale:.2} (target <= 17)");
}
