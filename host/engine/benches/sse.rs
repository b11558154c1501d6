//! SSE decoding and response assembly throughput on a long stream shaped
//! like a real one (content deltas a few tokens each, keep-alive comments,
//! a fragmented tool call, usage, [DONE]), fed in 1 KiB reads.
//!
//! Baseline in the same run: `serde_json` parsing just the chunk JSON of
//! every event, the work no decoder can avoid. Reported as ratios of
//! medians over interleaved rounds.
//!
//! Run: `cargo bench -p goat-engine --bench sse`

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use goat_engine::StreamAssembler;
use goat_engine::sse::SseDecoder;
use serde_json::json;

const ROUNDS: usize = 15;
const READ_BYTES: usize = 1024;

fn stream() -> (Vec<u8>, Vec<String>) {
    let mut body = String::new();
    let mut jsons = Vec::new();
    let mut push = |chunk: serde_json::Value, body: &mut String| {
        let text = chunk.to_string();
        body.push_str("data: ");
        body.push_str(&text);
        body.push_str("\n\n");
        jsons.push(text);
    };
    let words = [
        "Let",
        " me",
        " look",
        " at",
        " the",
        " `main`",
        " function",
        " in",
        " src/main.rs",
        ".\n",
    ];
    for i in 0..40_000 {
        let delta = json!({"content": words[i % words.len()]});
        push(
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "qwen3-coder", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
            &mut body,
        );
        if i % 500 == 0 {
            body.push_str(": ping\n\n");
        }
    }
    push(
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}}]}),
        &mut body,
    );
    for piece in ["{\"pa", "th\": \"src/", "main.rs\"}"] {
        push(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}),
            &mut body,
        );
    }
    push(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        &mut body,
    );
    push(
        json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}),
        &mut body,
    );
    body.push_str("data: [DONE]\n\n");
    (body.into_bytes(), jsons)
}

fn time(f: &mut dyn FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let (body, jsons) = stream();
    let mut decode = || {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for read in body.chunks(READ_BYTES) {
            d.feed(read, &mut out).unwrap();
            out.clear();
        }
        black_box(&d);
    };
    let mut assemble = || {
        let mut a = StreamAssembler::new();
        for read in body.chunks(READ_BYTES) {
            a.feed(read, &mut |d| {
                black_box(d);
            })
            .unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        black_box(r);
    };
    let mut baseline = || {
        for j in &jsons {
            black_box(serde_json::from_str::<serde_json::Value>(j).unwrap());
        }
    };
    decode();
    assemble();
    baseline();
    let (mut d, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        d.push(time(&mut decode));
        a.push(time(&mut assemble));
        b.push(time(&mut baseline));
    }
    let (d, a, b) = (median(d), median(a), median(b));
    let mbps = |t: Duration| body.len() as f64 / t.as_secs_f64() / 1e6;
    println!(
        "stream of {} bytes, {} events, {READ_BYTES}-byte reads, median of {ROUNDS}",
        body.len(),
        jsons.len() + 1
    );
    println!(
        "  SSE decode only          {:>9.2?}  {:>8.0} MB/s",
        d,
        mbps(d)
    );
    println!(
        "  decode + assemble        {:>9.2?}  {:>8.0} MB/s",
        a,
        mbps(a)
    );
    println!(
        "  serde_json chunks only   {:>9.2?}  {:>8.0} MB/s  (baseline)",
        b,
        mbps(b)
    );
    println!(
        "  ratio assemble/baseline  {:>9.2}x",
        a.as_secs_f64() / b.as_secs_f64()
    );
    println!(
        "  ratio decode/baseline    {:>9.2}x",
        d.as_secs_f64() / b.as_secs_f64()
    );
}
