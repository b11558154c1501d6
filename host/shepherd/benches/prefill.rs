//! Prefill amplification (issue 25, ADR-0083): what an engine's prefix
//! cache must prefill over a whole session, against the least any fitting
//! of it must send, driving the real Shepherd, router, sandbox and store
//! against a scripted engine at the window's limit (see
//! `prefill/session.rs`; `goat_testkit::PrefillMeter` does the counting).
//!
//! Each session reads 4 KiB files (about 4.6 KB of numbered lines per
//! result); summary requests count as prefilled. The figures are bytes, so
//! they do not depend on the machine. The shepherd's tests hold the same
//! sessions to at most 1.3x. Run: `cargo bench -p goat-shepherd --bench
//! prefill`

#![expect(clippy::unwrap_used, reason = "benchmark")]

#[path = "prefill/session.rs"]
mod session;

use std::sync::Arc;

use goat_sandbox::SandboxBuilder;
use goat_testkit::estimated_tokens;
use session::{Plan, run};

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let sandbox = SandboxBuilder::new()
        .cache_dir(cache.path())
        .build()
        .unwrap();
    let tools = sandbox.load_pen_tools().unwrap();
    let sandbox = Arc::new(sandbox);
    let sessions = [
        (Plan::one_turn("one turn, 50 rounds", 50, None), 16_384),
        (Plan::one_turn("one turn, 200 rounds", 200, None), 16_384),
        (
            Plan::one_turn("one turn, 200 rounds, recovery at 100", 200, Some(100)),
            16_384,
        ),
        (Plan::turns("40 turns of 5 rounds", 40, 5), 16_384),
        (Plan::one_turn("one turn, 200 rounds", 200, None), 65_536),
    ];
    println!(
        "prefill amplification, 4 KiB read_file results\n{:<38} {:>6} {:>6} {:>8} {:>10} {:>10} {:>6} {:>8} {:>9} {:>8}",
        "session",
        "window",
        "rounds",
        "requests",
        "prefilled",
        "least",
        "ratio",
        "rewrites",
        "summaries",
        "largest"
    );
    for (plan, window) in &sessions {
        let m = rt.block_on(run(plan, *window, sandbox.clone(), tools.clone()));
        println!(
            "{:<38} {:>6} {:>6} {:>8} {:>7} KB {:>7} KB {:>5.2}x {:>8} {:>9} {:>8}",
            m.name,
            m.window,
            m.rounds,
            m.requests.len(),
            m.meter.prefilled_bytes / 1000,
            m.meter.least_bytes / 1000,
            m.meter.amplification(),
            m.meter.rewrites,
            m.stored.len(),
            m.largest_tokens,
        );
        println!(
            "{:<38} about {}k of {}k tokens prefilled; {} summary requests; {} refused as over \
             the window{}",
            "",
            estimated_tokens(m.meter.prefilled_bytes) / 1000,
            estimated_tokens(m.meter.least_bytes) / 1000,
            m.summaries,
            m.refused,
            m.failed.map(|f| format!("; {f}")).unwrap_or_default()
        );
    }
}
