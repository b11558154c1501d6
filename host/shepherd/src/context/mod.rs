//! Context that never runs out (issue 15, ADR-0073): what the engine's
//! window is, how many tokens a request will take, and keeping every
//! request within the window.
//!
//! The window is the person's `context_tokens` setting when given, else
//! what the engine says (llama.cpp `/props`, vLLM `/v1/models`, LM
//! Studio `/api/v0/models`, Ollama `/api/show`), else
//! [`DEFAULT_CONTEXT_TOKENS`]. Tokens are estimated from the request's
//! bytes, with no tokenizer: [`DEFAULT_BYTES_PER_TOKEN`] until the engine
//! has reported a request's `usage.prompt_tokens`, then that request's own
//! ratio, and always with [`ESTIMATE_MARGIN`] on top. Before each request
//! (every round) the history is fitted ([`fit`]): old tool results become
//! one-line stubs first, and if that is not enough the older turns are
//! summarised by the model ([`compact`]). An engine that refuses a request
//! as too long anyway gets one compaction and one retry.

pub(crate) mod compact;
pub(crate) mod fit;

pub use compact::{
    COMPACT_INSTRUCTION, MAX_SUMMARY_BYTES, SUMMARY_HEADING, SUMMARY_INPUT_RESULT_BYTES,
    SUMMARY_INSTRUCTION,
};

use goat_engine::{ChatRequest, WindowSource};

/// The window assumed when neither the setting nor the engine says one,
/// said once in the session ([`TurnEvent::WindowNotSaid`](crate::TurnEvent::WindowNotSaid)).
/// llama.cpp, vLLM, LM Studio and Ollama say theirs where GOAT asks, so
/// this is for gateways and engines that do not. 32768 is what today's
/// local coding models are served with (Qwen2.5-Coder and Qwen3-Coder
/// take 32k natively and more with scaling); 8192, the value before,
/// made a 30-round session cut and rewrite its prompt 9 times (issue 38).
/// An engine that serves less refuses a request over its window, and
/// GOAT then believes the window the refusal names; one that truncates
/// silently needs `context_tokens` set.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 32768;

/// Bytes of request body per token before the engine has said how many
/// tokens a request took. Tokenizers of code models give 3.5 to 4.5
/// bytes of English or code per token; JSON escaping adds bytes, not
/// tokens. 3 errs on the side of too many tokens.
pub const DEFAULT_BYTES_PER_TOKEN: f64 = 3.0;

/// The most bytes per token a calibration is believed: an engine that
/// counts only the uncached part of a prompt would otherwise make every
/// later estimate far too low.
pub const MAX_BYTES_PER_TOKEN: f64 = 4.5;

/// The fewest bytes per token a calibration is believed (text that
/// tokenizes a byte at a time is the worst case).
pub const MIN_BYTES_PER_TOKEN: f64 = 1.0;

/// Estimates are multiplied by this: the next request's content is not
/// the last one's, and its ratio of bytes to tokens differs a little.
pub const ESTIMATE_MARGIN: f64 = 1.1;

/// Tokens kept free for the answer: a file the model writes whole is
/// a few thousand. At most a quarter of the window, so a small window
/// still has room for history.
pub const ANSWER_RESERVE_TOKENS: u64 = 4096;

/// The most of the request budget the repository's part of the system
/// prompt (its `AGENTS.md`) may take. A quarter leaves GOAT's own prompt,
/// the tool schemas, the person's request and a file read room in the
/// smallest window an engine is likely to serve (8192 tokens); in a 32k
/// window ([`DEFAULT_CONTEXT_TOKENS`]) it is about the 32 KiB read cap, so
/// a large window loses nothing.
pub const PROJECT_PROMPT_SHARE: f64 = 0.25;

/// The repository's part of the system prompt (its project
/// instructions), rendered to fit a share of the window each round.
///
/// # Security
///
/// The repository may be hostile: a text as long as it likes must never
/// leave the person's request without room, so the Shepherd asks for it
/// in at most [`PROJECT_PROMPT_SHARE`] of the budget, and the part says
/// itself what it left out.
pub trait ProjectPrompt: Send + Sync {
    /// The part in at most `max_bytes` bytes (saying in its text what it
    /// cut); empty when there is none.
    fn within(&self, max_bytes: usize) -> ProjectSection;
}

/// The repository's part of the system prompt, as rendered to fit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectSection {
    /// What follows GOAT's own system prompt.
    pub text: String,
    /// Bytes of the instructions in it.
    pub kept: usize,
    /// Bytes of the instructions there are: more than `kept` when the
    /// share cut them.
    pub whole: usize,
}

/// The bytes the repository's part may take of `budget` tokens. Counted at
/// [`DEFAULT_BYTES_PER_TOKEN`], not the calibration: the part must be the
/// same bytes in every request while the window stays (issue 25), or the
/// engine's prompt cache would be lost at the system prompt each time an
/// engine's count moved the ratio.
pub(crate) fn project_bytes(budget: u64) -> usize {
    (budget as f64 * PROJECT_PROMPT_SHARE * DEFAULT_BYTES_PER_TOKEN / ESTIMATE_MARGIN) as usize
}

/// The low-water mark: a request over the budget (the high-water mark) is
/// cut once, its oldest results elided until it takes at most this share
/// of the budget; then requests only grow, each extending the last, until
/// the budget is reached again (ADR-0083). A cut makes the engine prefill
/// again every whole result it keeps after the first one elided, so the
/// mark weighs what the model still sees whole against what the cut
/// costs: at a 64k window, 200 reads of 4 KiB were prefilled 1.12 times
/// over at 0.3, 1.20 at 0.4 and 1.37 at 0.5 (1.07 at 0.2, keeping about
/// seven results whole where 0.3 keeps eleven).
pub const LOW_WATER_SHARE: f64 = 0.3;

/// A cut that eliding every result but the newest round's leaves over this
/// share of the budget also summarises (older turns, and the running
/// turn's older rounds): the calls and stubs alone would otherwise leave
/// too little room to grow before the next cut. At a 16k window, 200 reads
/// of 4 KiB in one turn were summarised 15 times at 0.5 (1.16 times
/// prefilled), 9 at 0.6 (1.13), 6 at 0.7 (1.11, but about two whole
/// results between cuts): 0.6 keeps the model's own record, the calls
/// and their stubs, the longest while leaving two fifths to grow.
pub const COMPACT_SHARE: f64 = 0.6;

/// The output cap sent when the person sets none (`max_output_tokens`):
/// the room each request leaves for the answer, so an answer that fits
/// the reserve is never cut, and a model that repeats itself stops after
/// it (about 80 s at 50 tokens/s on a CPU) instead of filling the window.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = ANSWER_RESERVE_TOKENS;

/// How the window is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowChoice {
    /// The person's `context_tokens`: the engine is not asked.
    Setting(u64),
    /// Ask the engine; `fallback` when it does not say.
    Ask {
        /// The window assumed when the engine does not say.
        fallback: u64,
    },
}

impl Default for WindowChoice {
    fn default() -> Self {
        Self::Ask {
            fallback: DEFAULT_CONTEXT_TOKENS,
        }
    }
}

/// What `/status` shows about the context.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContextStatus {
    /// The window, in tokens; `None` until the engine was asked.
    pub window: Option<u64>,
    /// Where it came from.
    pub source: Option<WindowSource>,
    /// The estimated tokens of the last request sent (or fitted).
    pub next_request_tokens: u64,
    /// Tokens the budget allows a request (the window less the reserve).
    pub budget_tokens: Option<u64>,
    /// The engine's own count of the last request's prompt, when it
    /// reported usage: what the turn's stats line says too. It can be far
    /// below the estimate when the engine dropped part of the request (a
    /// template without tools).
    pub last_request_tokens: Option<u64>,
    /// Bytes per token the estimates use now.
    pub bytes_per_token: f64,
    /// Prompt tokens the engine reported for this process's requests.
    pub session_prompt_tokens: u64,
    /// Completion tokens likewise.
    pub session_completion_tokens: u64,
    /// Summaries written in this process.
    pub compactions: u64,
    /// Requests in this process that were cut (results elided down to
    /// the low-water mark, ADR-0083): each rewrote part of what was sent
    /// before, so the engine's prompt cache could not serve all of it.
    pub cuts: u64,
}

/// The context's state for one Shepherd.
#[derive(Debug)]
pub(crate) struct ContextState {
    pub(crate) choice: WindowChoice,
    pub(crate) window: Option<(u64, WindowSource)>,
    /// The engine answered the probe (said or not): it is not asked again.
    pub(crate) settled: bool,
    pub(crate) bytes_per_token: f64,
    pub(crate) last_estimate: u64,
    /// The engine's count of the last request, when it said.
    pub(crate) last_prompt_tokens: Option<u64>,
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    pub(crate) compactions: u64,
    pub(crate) cuts: u64,
    /// Results of rounds up to this one (row id) are sent as stubs: the
    /// watermark a cut moves on, and only a cut (ADR-0083).
    pub(crate) elided_through: Option<i64>,
    /// The last round request the engine answered.
    pub(crate) answered: Option<Answered>,
}

/// The last round request the engine answered, kept so that a summary can
/// be asked as its continuation: the engine's prompt cache holds it.
#[derive(Clone, Debug)]
pub(crate) struct Answered {
    pub(crate) request: ChatRequest,
    /// The newest round it carried, with its turn: what the summary covers.
    pub(crate) newest_round: Option<(i64, i64)>,
    /// The summary it carried (row id): a continuation is asked only while
    /// that summary is still the newest.
    pub(crate) summary_id: Option<i64>,
}

impl ContextState {
    pub(crate) fn new(choice: WindowChoice) -> Self {
        let window = match choice {
            WindowChoice::Setting(n) => Some((n, WindowSource::Setting)),
            WindowChoice::Ask { .. } => None,
        };
        Self {
            choice,
            settled: window.is_some(),
            window,
            bytes_per_token: DEFAULT_BYTES_PER_TOKEN,
            last_estimate: 0,
            last_prompt_tokens: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            compactions: 0,
            cuts: 0,
            elided_through: None,
            answered: None,
        }
    }

    /// The window in force: known, or the fallback.
    pub(crate) fn window(&self) -> (u64, WindowSource) {
        match (self.window, self.choice) {
            (Some(w), _) => w,
            (None, WindowChoice::Setting(n)) => (n, WindowSource::Setting),
            (None, WindowChoice::Ask { fallback }) => (fallback, WindowSource::Default),
        }
    }

    /// Tokens a request may take: the window less the answer's reserve.
    pub(crate) fn budget(&self) -> u64 {
        let window = self.window().0;
        window.saturating_sub(ANSWER_RESERVE_TOKENS.min(window / 4))
    }

    /// Learns from a request of `bytes` the engine counted as
    /// `prompt_tokens`.
    pub(crate) fn calibrate(&mut self, bytes: usize, prompt_tokens: u64) {
        if prompt_tokens > 0 {
            self.last_prompt_tokens = Some(prompt_tokens);
            self.bytes_per_token = (bytes as f64 / prompt_tokens as f64)
                .clamp(MIN_BYTES_PER_TOKEN, MAX_BYTES_PER_TOKEN);
        }
    }

    /// After the engine refused a request GOAT thought fitted: believe
    /// the window it named (never a larger one than in force, unless the
    /// one in force is only the default assumed for an engine that had not
    /// said), and its count of the request, or else count more tokens per
    /// byte from now.
    pub(crate) fn learn_overflow(
        &mut self,
        bytes: usize,
        window: Option<u64>,
        prompt_tokens: Option<u64>,
    ) {
        let (current, source) = self.window();
        let assumed = source == WindowSource::Default;
        if let Some(w) = window.filter(|&w| w > 0 && (w < current || assumed)) {
            self.window = Some((w, WindowSource::OverflowError));
        }
        match prompt_tokens {
            Some(n) if n > 0 => self.calibrate(bytes, n),
            _ => {
                self.bytes_per_token =
                    (self.bytes_per_token * OVERFLOW_TIGHTEN).max(MIN_BYTES_PER_TOKEN);
            }
        }
    }

    pub(crate) fn status(&self) -> ContextStatus {
        let known = self.settled || self.window.is_some();
        ContextStatus {
            window: known.then(|| self.window().0),
            source: known.then(|| self.window().1),
            next_request_tokens: self.last_estimate,
            last_request_tokens: self.last_prompt_tokens,
            budget_tokens: known.then(|| self.budget()),
            bytes_per_token: self.bytes_per_token,
            session_prompt_tokens: self.prompt_tokens,
            session_completion_tokens: self.completion_tokens,
            compactions: self.compactions,
            cuts: self.cuts,
        }
    }
}

/// How much fewer bytes per token are assumed after an overflow the
/// engine gave no count for: a quarter, enough to leave the estimate
/// that failed well behind.
const OVERFLOW_TIGHTEN: f64 = 0.75;

/// Estimated tokens of `bytes` at `bytes_per_token`, with the margin.
pub(crate) fn estimate(bytes: usize, bytes_per_token: f64) -> u64 {
    (bytes as f64 / bytes_per_token * ESTIMATE_MARGIN).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_keeps_a_reserve_for_the_answer() {
        let state = ContextState::new(WindowChoice::Setting(32768));
        assert_eq!(state.budget(), 32768 - ANSWER_RESERVE_TOKENS);
        let small = ContextState::new(WindowChoice::Setting(4096));
        assert_eq!(small.budget(), 3072, "a quarter of a small window");
        let unknown = ContextState::new(WindowChoice::default());
        assert_eq!(
            unknown.window(),
            (DEFAULT_CONTEXT_TOKENS, WindowSource::Default)
        );
    }

    #[test]
    fn calibration_is_clamped_and_an_overflow_only_tightens() {
        let mut state = ContextState::new(WindowChoice::Setting(32768));
        assert_eq!(estimate(3000, state.bytes_per_token), 1100);
        state.calibrate(4000, 1000);
        assert!((state.bytes_per_token - 4.0).abs() < 1e-9);
        state.calibrate(100_000, 10);
        assert!((state.bytes_per_token - MAX_BYTES_PER_TOKEN).abs() < 1e-9);
        state.learn_overflow(1000, Some(65536), None);
        assert_eq!(state.window().0, 32768, "a larger window is not believed");
        assert!((state.bytes_per_token - MAX_BYTES_PER_TOKEN * 0.75).abs() < 1e-9);
        state.learn_overflow(1000, Some(16384), Some(500));
        assert_eq!(state.window(), (16384, WindowSource::OverflowError));
        assert!((state.bytes_per_token - 2.0).abs() < 1e-9);
    }

    #[test]
    fn an_engine_naming_its_window_replaces_the_assumed_default() {
        let mut state = ContextState::new(WindowChoice::default());
        state.learn_overflow(1000, Some(32768), None);
        assert_eq!(state.window(), (32768, WindowSource::OverflowError));
        // Once the engine has said, a larger figure is not believed.
        state.learn_overflow(1000, Some(65536), None);
        assert_eq!(state.window().0, 32768);
    }
}
