//! How a turn's one [`Outcome`] answers `session/prompt`.
//!
//! ACP v1 has five stop reasons; GOAT has ten outcomes. Each outcome is
//! mapped here, once, as an exhaustive match, so a new outcome is a compile
//! error rather than a silent `end_turn`.

use agent_client_protocol::v1::schema::StopReason;
use goat_session::Outcome;

/// What `session/prompt` answers for a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A response with this stop reason.
    Stop(StopReason),
    /// A JSON-RPC error: the turn failed and there is no stop reason that
    /// says so honestly. `refusal` is not used: in ACP it means the prompt
    /// is dropped from the conversation, while GOAT keeps the failed turn in
    /// the store (and the client may prompt again).
    Error,
}

/// The answer for `outcome`; `cancelled` says the client sent
/// `session/cancel` during the turn, which the spec says must end it with
/// `cancelled` whatever else happened.
pub fn answer(outcome: Outcome, cancelled: bool) -> Answer {
    if cancelled {
        return Answer::Stop(StopReason::Cancelled);
    }
    match outcome {
        // Denials are visible as failed tool calls; the turn itself ended.
        // An editor's turn is one attempt: it never ends in this one.
        Outcome::Completed
        | Outcome::CompletedWithDenials
        | Outcome::NeedsApproval
        | Outcome::NoAttemptPassed => Answer::Stop(StopReason::EndTurn),
        Outcome::RoundCap => Answer::Stop(StopReason::MaxTurnRequests),
        Outcome::ContextExhausted | Outcome::BudgetExhausted => Answer::Stop(StopReason::MaxTokens),
        Outcome::Cancelled => Answer::Stop(StopReason::Cancelled),
        Outcome::EngineFailed | Outcome::MarkupNotRecovered | Outcome::HostError => Answer::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_answer() {
        let table = [
            (Outcome::Completed, Answer::Stop(StopReason::EndTurn)),
            (
                Outcome::CompletedWithDenials,
                Answer::Stop(StopReason::EndTurn),
            ),
            (Outcome::NeedsApproval, Answer::Stop(StopReason::EndTurn)),
            (Outcome::RoundCap, Answer::Stop(StopReason::MaxTurnRequests)),
            (
                Outcome::ContextExhausted,
                Answer::Stop(StopReason::MaxTokens),
            ),
            (
                Outcome::BudgetExhausted,
                Answer::Stop(StopReason::MaxTokens),
            ),
            (Outcome::Cancelled, Answer::Stop(StopReason::Cancelled)),
            (Outcome::EngineFailed, Answer::Error),
            (Outcome::MarkupNotRecovered, Answer::Error),
            (Outcome::HostError, Answer::Error),
        ];
        for (outcome, expected) in table {
            assert_eq!(answer(outcome, false), expected, "{outcome:?}");
            assert_eq!(
                answer(outcome, true),
                Answer::Stop(StopReason::Cancelled),
                "{outcome:?} after session/cancel"
            );
        }
    }
}
