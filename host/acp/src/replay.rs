//! `session/load`: the stored conversation, replayed as updates.
//!
//! The spec has the agent stream the whole conversation back before it
//! answers. What the store keeps is what is replayed: each turn's request
//! as a user message, each answered round's reasoning and text, each call
//! with its result. Failed rounds (a markup recovery's first try, an
//! engine failure) are left out, as they are left out of the model's
//! prompts.

use std::sync::PoisonError;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::SessionUpdate;
use goat_store::{CallStatus, RoundStatus};

use crate::session::Session;
use crate::updates::{self, call_id, chunk};

/// Sends the stored conversation of `session` to the client.
pub fn replay(session: &Session, cx: &ConnectionTo<Client>) -> anyhow::Result<()> {
    let opened = &session.driver.opened;
    let turns = opened
        .store
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .turns(&opened.session_id)?;
    for (index, turn) in turns.iter().enumerate() {
        let number = u64::try_from(index).map_or(u64::MAX, |i| i + 1);
        // A stop hook's words were GOAT's to the model, not the person's;
        // a withheld prompt was never kept.
        let said = match (&turn.withheld_by, &turn.prompt_from_hook) {
            (Some(_), _) => SessionUpdate::AgentMessageChunk(chunk(
                "[goat: a user_prompt_submit hook withheld this prompt from the model; it is not \
                 kept]\n"
                    .to_owned(),
            )),
            (None, Some(_)) => {
                SessionUpdate::AgentMessageChunk(chunk(format!("\n{}\n", turn.prompt)))
            }
            (None, None) => SessionUpdate::UserMessageChunk(chunk(turn.prompt.clone())),
        };
        session.send(cx, said);
        let mut call = 0u32;
        for round in turn.rounds.iter().filter(|r| r.status == RoundStatus::Ok) {
            if !round.reasoning.is_empty() {
                session.send(
                    cx,
                    SessionUpdate::AgentThoughtChunk(chunk(round.reasoning.clone())),
                );
            }
            if !round.content.is_empty() {
                session.send(
                    cx,
                    SessionUpdate::AgentMessageChunk(chunk(round.content.clone())),
                );
            }
            for stored in &round.calls {
                call += 1;
                session.send(
                    cx,
                    SessionUpdate::ToolCall(updates::replayed_call(
                        &opened.workspace,
                        call_id(number, call),
                        &stored.call.tool,
                        &stored.call.arguments,
                        stored.status == CallStatus::Ok,
                        stored.result.as_deref(),
                    )),
                );
            }
        }
    }
    Ok(())
}
