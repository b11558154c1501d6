//! `session/prompt`: the client's content as GOAT's request, and one turn.

use std::sync::{Arc, PoisonError};

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource, PromptResponse};
use agent_client_protocol::{Error, ErrorCode};
use goat_engine::CancellationToken;
use serde_json::json;

use crate::session::Session;
use crate::stop::{self, Answer};

/// Most bytes of prompt a client may send in one `session/prompt` (text
/// and embedded resources together): a large paste, not a repository.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// The request text: text blocks as they are, a resource link as a line
/// naming it, an embedded text resource in a fence with its URI. Images,
/// audio and binary resources are refused (the initialize response says
/// GOAT takes none).
pub fn prompt_text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut text = String::new();
    for block in blocks {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                text.push_str(&format!("[{}]({})", link.name, link.uri));
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    text.push_str(&format!("Context from {}:\n```\n{}\n```", r.uri, r.text));
                }
                _ => return Err(refused("a binary embedded resource")),
            },
            ContentBlock::Image(_) => return Err(refused("an image")),
            ContentBlock::Audio(_) => return Err(refused("audio")),
            _ => return Err(refused("this kind of content")),
        }
        if text.len() > MAX_PROMPT_BYTES {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("the prompt is over {MAX_PROMPT_BYTES} bytes"),
            ));
        }
    }
    if text.trim().is_empty() {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            "the prompt is empty; say what the model should do",
        ));
    }
    Ok(text)
}

/// What follows `/undo` when the prompt is that command (the editor sends
/// a command the agent advertised as the prompt's text).
pub fn undo_command(prompt: &str) -> Option<&str> {
    let rest = prompt.trim().strip_prefix("/undo")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

fn refused(what: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        format!("GOAT takes text, resource links and embedded text resources, not {what}"),
    )
}

/// Runs one turn and says how it ended: a stop reason, or an error for a
/// turn that failed (the engine, the markup recovery, the host).
pub async fn run(
    session: Arc<Session>,
    prompt: String,
    cancel: CancellationToken,
) -> Result<PromptResponse, Error> {
    let driver = session.driver.clone();
    let first = {
        let mut started = session
            .started
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        !std::mem::replace(&mut *started, true)
    };
    if first {
        driver.start().await;
    }
    let report = driver.turn(&prompt, &cancel, false).await;
    *session
        .cancel
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = None;
    match stop::answer(report.outcome, cancel.is_cancelled()) {
        Answer::Stop(reason) => Ok(PromptResponse::new(reason)),
        Answer::Error => {
            let words = report.ended.error.unwrap_or_default();
            Err(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the turn failed: {words}"),
            )
            .data(json!({
                "outcome": report.outcome.as_str(),
                "sessionId": session.id(),
            })))
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents,
    };

    use super::*;

    #[test]
    fn text_links_and_embedded_text_make_the_request() {
        let blocks = [
            ContentBlock::Text(TextContent::new("fix the bug")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/lib.rs",
                )),
            )),
        ];
        assert_eq!(
            prompt_text(&blocks).unwrap(),
            "fix the bug\n[main.rs](file:///w/main.rs)\nContext from file:///w/lib.rs:\n```\nfn \
             main() {}\n```"
        );
    }

    #[test]
    fn only_undo_itself_is_the_command() {
        assert_eq!(undo_command("/undo"), Some(""));
        assert_eq!(undo_command(" /undo 2\n"), Some(" 2"));
        assert_eq!(undo_command("/undone"), None);
        assert_eq!(undo_command("please /undo"), None);
    }

    #[test]
    fn an_image_or_nothing_is_refused() {
        let image = [ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
        assert!(prompt_text(&image).is_err());
        assert!(prompt_text(&[]).is_err());
        assert!(prompt_text(&[ContentBlock::Text(TextContent::new("  "))]).is_err());
    }
}
