//! Whole engine answers, one expression each, built on the `ev_*` events.

use serde_json::Value;

use crate::events::{ev_content, ev_done, ev_finish, ev_reasoning, ev_tool_call, ev_usage};
use crate::server::Reply;

impl Reply {
    /// An answer that is only `content`, finished with `stop`.
    pub fn text(content: &str) -> Self {
        Self::builder().text(content).build()
    }

    /// An answer that is one structured call of `name`, with id `call_1`.
    pub fn tool_call(name: &str, arguments: impl Arguments) -> Self {
        Self::builder().tool_call(name, arguments).build()
    }

    /// An answer whose content is a tool call written as text, in the
    /// Qwen3-Coder shape of ADR-0065 (see [`qwen_markup`]).
    pub fn markup(name: &str, parameters: &[(&str, &str)]) -> Self {
        Self::builder().markup(name, parameters).build()
    }

    /// An empty answer to build up event by event.
    pub fn builder() -> ReplyBuilder {
        ReplyBuilder::default()
    }
}

/// A tool call's arguments as the model writes them: JSON text (key order
/// kept, or deliberately broken) or a [`Value`].
pub trait Arguments {
    fn to_arguments(&self) -> String;
}

impl Arguments for &str {
    fn to_arguments(&self) -> String {
        (*self).to_owned()
    }
}

impl Arguments for String {
    fn to_arguments(&self) -> String {
        self.clone()
    }
}

impl Arguments for Value {
    fn to_arguments(&self) -> String {
        self.to_string()
    }
}

/// One streamed answer, built from the `ev_*` events. [`build`](Self::build)
/// ends it as an engine does: a finish reason (`tool_calls` if it made a
/// call, else `stop`, unless [`finish`](Self::finish) said otherwise), the
/// usage if given, then `[DONE]`.
#[derive(Clone, Debug, Default)]
pub struct ReplyBuilder {
    events: Vec<String>,
    calls: u64,
    finish: Option<String>,
    usage: Option<(u64, u64)>,
    chunk: Option<usize>,
}

impl ReplyBuilder {
    /// A content delta.
    pub fn text(mut self, content: &str) -> Self {
        self.events.push(ev_content(content));
        self
    }

    /// A reasoning delta in `field` (`reasoning_content`, `reasoning`).
    pub fn reasoning(mut self, field: &str, text: &str) -> Self {
        self.events.push(ev_reasoning(field, text));
        self
    }

    /// A structured call in one delta; the n-th call of the answer gets
    /// index n-1 and id `call_n`.
    pub fn tool_call(self, name: &str, arguments: impl Arguments) -> Self {
        let id = format!("call_{}", self.calls + 1);
        self.tool_call_with_id(&id, name, arguments)
    }

    /// A structured call with the id the test chooses.
    pub fn tool_call_with_id(mut self, id: &str, name: &str, arguments: impl Arguments) -> Self {
        self.events.push(ev_tool_call(
            self.calls,
            Some(id),
            Some(name),
            Some(&arguments.to_arguments()),
        ));
        self.calls += 1;
        self
    }

    /// A tool call written as content (see [`qwen_markup`]).
    pub fn markup(self, name: &str, parameters: &[(&str, &str)]) -> Self {
        self.text(&qwen_markup(name, parameters))
    }

    /// Any event, as the `ev_*` helpers make it.
    pub fn event(mut self, event: String) -> Self {
        self.events.push(event);
        self
    }

    /// The finish reason, instead of the one the calls imply.
    pub fn finish(mut self, reason: &str) -> Self {
        self.finish = Some(reason.to_owned());
        self
    }

    /// A usage chunk before `[DONE]`.
    pub fn usage(mut self, prompt: u64, completion: u64) -> Self {
        self.usage = Some((prompt, completion));
        self
    }

    /// Send the body in `chunk`-byte pieces (see [`Reply::sse_chunked`]).
    pub fn chunked(mut self, chunk: usize) -> Self {
        self.chunk = Some(chunk);
        self
    }

    /// The whole body as text.
    pub fn body(&self) -> String {
        let finish = match (&self.finish, self.calls) {
            (Some(reason), _) => reason.as_str(),
            (None, 0) => "stop",
            (None, _) => "tool_calls",
        };
        let mut body = self.events.concat();
        body.push_str(&ev_finish(finish));
        if let Some((prompt, completion)) = self.usage {
            body.push_str(&ev_usage(prompt, completion));
        }
        body.push_str(&ev_done());
        body
    }

    pub fn build(self) -> Reply {
        let body = self.body();
        match self.chunk {
            Some(chunk) => Reply::sse_chunked(body.as_bytes(), chunk),
            None => Reply::sse(body),
        }
    }
}

impl From<ReplyBuilder> for Reply {
    fn from(builder: ReplyBuilder) -> Self {
        builder.build()
    }
}

/// A tool call written as plain text the way Qwen3-Coder writes it when its
/// template slips: `<function=NAME>`, one `<parameter=KEY>` block per
/// parameter, and a closing `</tool_call>` with no opening one (ADR-0065's
/// case). The markup detector must catch this; the host never runs it.
pub fn qwen_markup(name: &str, parameters: &[(&str, &str)]) -> String {
    let mut text = format!("<function={name}>\n");
    for (key, value) in parameters {
        text.push_str(&format!("<parameter={key}>\n{value}\n</parameter>\n"));
    }
    text.push_str("</function>\n</tool_call>");
    text
}

/// A complete Qwen3-Coder call with no `<tool_call>` envelope at all:
/// `<function=NAME>`, one `<parameter=KEY>` block per parameter,
/// `</function>`. vLLM's streaming qwen3_coder parser passes this on as
/// content (ADR-0067); the detector counts it only when asked to.
pub fn qwen_unwrapped_markup(name: &str, parameters: &[(&str, &str)]) -> String {
    let mut text = format!("<function={name}>\n");
    for (key, value) in parameters {
        text.push_str(&format!("<parameter={key}>\n{value}\n</parameter>\n"));
    }
    text.push_str("</function>");
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_is_content_then_stop_then_done() {
        assert_eq!(
            Reply::builder().text("hi").body(),
            [ev_content("hi"), ev_finish("stop"), ev_done()].concat()
        );
    }

    #[test]
    fn calls_are_numbered_and_finish_with_tool_calls() {
        let body = Reply::builder()
            .reasoning("reasoning_content", "plan")
            .text("Reading both.")
            .tool_call("read_file", json!({"path": "a.txt"}))
            .tool_call("read_file", r#"{"path": "b.txt"}"#)
            .usage(10, 5)
            .body();
        let expected = [
            ev_reasoning("reasoning_content", "plan"),
            ev_content("Reading both."),
            ev_tool_call(
                0,
                Some("call_1"),
                Some("read_file"),
                Some(r#"{"path":"a.txt"}"#),
            ),
            ev_tool_call(
                1,
                Some("call_2"),
                Some("read_file"),
                Some(r#"{"path": "b.txt"}"#),
            ),
            ev_finish("tool_calls"),
            ev_usage(10, 5),
            ev_done(),
        ]
        .concat();
        assert_eq!(body, expected);
    }

    #[test]
    fn an_explicit_finish_reason_wins() {
        let body = Reply::builder()
            .tool_call_with_id("c9", "x", "{}")
            .finish("length")
            .body();
        assert_eq!(
            body,
            [
                ev_tool_call(0, Some("c9"), Some("x"), Some("{}")),
                ev_finish("length"),
                ev_done()
            ]
            .concat()
        );
    }

    #[test]
    fn markup_has_a_closing_envelope_and_no_opening_one() {
        assert_eq!(
            qwen_markup("write_file", &[("path", "hello.txt"), ("content", "hello")]),
            "<function=write_file>\n<parameter=path>\nhello.txt\n</parameter>\n\
             <parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>"
        );
        assert_eq!(
            Reply::builder().markup("f", &[]).body(),
            Reply::builder()
                .text("<function=f>\n</function>\n</tool_call>")
                .body()
        );
    }

    #[tokio::test]
    async fn the_server_answers_with_the_built_body_and_records_the_request() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let server = crate::ScriptedServer::start(vec![Reply::text("hello")]).await;
        let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let body = r#"{"model":"m"}"#;
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        socket.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(
            response.ends_with(&Reply::builder().text("hello").body()),
            "{response}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].path, "/v1/chat/completions");
        assert_eq!(requests[0].body, json!({"model": "m"}));
    }

    #[tokio::test]
    async fn a_held_reply_waits_for_its_release() {
        use std::time::Duration;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let hold = crate::Hold::new();
        let server = crate::ScriptedServer::start(vec![Reply::text("late").held(&hold)]).await;
        let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        socket
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}")
            .await
            .unwrap();
        assert!(server.wait_for_requests(1, Duration::from_secs(10)).await);
        let mut first = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(300), socket.read(&mut first)).await;
        assert!(early.is_err(), "answered before the release: {early:?}");
        hold.release();
        let mut response = String::new();
        socket.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    }
}
