//! Transcripts in the shapes each engine sends, assembled into responses,
//! and the same bytes re-chunked every way giving the same response.

use goat_engine::{
    ArgumentsError, ChatRequest, Delta, EngineClient, EngineConfig, FinishReason, Message,
    Response, StreamAssembler, Usage,
};
use serde_json::json;

use goat_testkit::*;

/// A named stream and what it must assemble into.
struct Transcript {
    name: &'static str,
    body: String,
    check: fn(&Response),
}

fn llama_server() -> Transcript {
    // llama.cpp: a role-only first delta with null content, reasoning in
    // `reasoning_content`, a tool call whose id and name come in the first
    // fragment and arguments in pieces, then a usage chunk and [DONE].
    let body = [
        ev_delta(json!({"role": "assistant", "content": null})),
        ev_reasoning("reasoning_content", "The user wants "),
        ev_reasoning("reasoning_content", "the file."),
        ev_content("Reading it."),
        ev_tool_call(0, Some("call_7f3a"), Some("read_file"), Some("")),
        ev_tool_call(0, None, None, Some("{\"pa")),
        ev_tool_call(0, None, None, Some("th\": \"src/ma")),
        ev_tool_call(0, None, None, Some("in.rs\"}")),
        ev_finish("tool_calls"),
        ev_usage(812, 41),
        ev_done(),
    ]
    .concat();
    Transcript {
        name: "llama-server",
        body,
        check: |r| {
            assert_eq!(r.content, "Reading it.");
            assert_eq!(r.reasoning, "The user wants the file.");
            assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
            assert_eq!(
                r.usage,
                Some(Usage {
                    prompt_tokens: 812,
                    completion_tokens: 41,
                    total_tokens: 853,
                    cached_tokens: None,
                })
            );
            let [call] = r.tool_calls.as_slice() else {
                panic!("{:?}", r.tool_calls)
            };
            assert_eq!(
                (call.id.as_str(), call.name.as_str()),
                ("call_7f3a", "read_file")
            );
            assert!(!call.id_generated);
            assert_eq!(call.arguments, Ok(json!({"path": "src/main.rs"})));
        },
    }
}

fn vllm() -> Transcript {
    // vLLM: `tool_calls: []` beside content, `reasoning` (newer field
    // name), CRLF line ends.
    let body = [
        ev_delta(json!({"content": "Let me check", "tool_calls": []})),
        ev_delta(json!({"content": " the tests.", "tool_calls": []})),
        ev_reasoning("reasoning", "search first"),
        ev_tool_call(0, Some("chatcmpl-tool-91c2"), Some("search_files"), None),
        ev_tool_call(0, None, None, Some("{\"pattern\": \"fn test_\", ")),
        ev_tool_call(0, None, None, Some("\"glob\": \"*.rs\"}")),
        ev_finish("tool_calls"),
        ev_done(),
    ]
    .concat()
    .replace("\n", "\r\n");
    Transcript {
        name: "vLLM",
        body,
        check: |r| {
            assert_eq!(r.content, "Let me check the tests.");
            assert_eq!(r.reasoning, "search first");
            let [call] = r.tool_calls.as_slice() else {
                panic!()
            };
            assert_eq!(call.name, "search_files");
            assert_eq!(
                call.arguments,
                Ok(json!({"pattern": "fn test_", "glob": "*.rs"}))
            );
        },
    }
}

fn ollama() -> Transcript {
    // Ollama /v1: each call whole in one chunk, the second without an
    // index, and finish_reason "stop" although calls are present.
    let whole = |id: &str, name: &str, args: &str, index: Option<u64>| {
        let mut call =
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
        if let Some(i) = index {
            call["index"] = json!(i);
        }
        ev_delta(json!({"role": "assistant", "content": "", "tool_calls": [call]}))
    };
    let body = [
        ev_reasoning("reasoning", "two files"),
        whole("call_a1", "read_file", "{\"path\":\"a.txt\"}", Some(0)),
        whole("call_b2", "read_file", "{\"path\":\"b.txt\"}", None),
        ev_finish("stop"),
        ev_done(),
    ]
    .concat();
    Transcript {
        name: "Ollama",
        body,
        check: |r| {
            assert_eq!(r.content, "");
            assert_eq!(
                r.finish_reason,
                Some(FinishReason::ToolCalls),
                "stop beside calls means calls"
            );
            let ids: Vec<_> = r
                .tool_calls
                .iter()
                .map(|c| (c.index, c.id.as_str()))
                .collect();
            assert_eq!(ids, [(0, "call_a1"), (1, "call_b2")]);
            assert_eq!(r.tool_calls[1].arguments, Ok(json!({"path": "b.txt"})));
        },
    }
}

fn lm_studio() -> Transcript {
    // LM Studio style: a numeric id, arguments sent whole as an object,
    // keep-alive comments, and no usage.
    let call = json!({"index": 0, "id": 123456, "type": "function", "function": {"name": "list_directory", "arguments": {"path": "src", "depth": 2}}});
    let body = [
        ": keep-alive\n\n".to_owned(),
        ev_content("Listing."),
        ": keep-alive\n\n".to_owned(),
        ev_delta(json!({"tool_calls": [call]})),
        ev_finish("tool_calls"),
        ev_done(),
    ]
    .concat();
    Transcript {
        name: "LM Studio",
        body,
        check: |r| {
            let [call] = r.tool_calls.as_slice() else {
                panic!()
            };
            assert_eq!(call.id, "123456");
            assert_eq!(call.arguments, Ok(json!({"path": "src", "depth": 2})));
        },
    }
}

fn sglang() -> Transcript {
    // SGLang style: two calls interleaved by index, the second with no id
    // at all (one is made), a leading BOM, lone-CR line ends, and a usage
    // chunk after the finish.
    let body = [
        ev_tool_call(0, Some("call_0"), Some("read_file"), Some("{\"path\":")),
        ev_tool_call(1, None, Some("find_files"), Some("{\"pattern\":")),
        ev_tool_call(0, None, None, Some(" \"Cargo.toml\"}")),
        ev_tool_call(1, None, None, Some(" \"**/*.rs\"}")),
        ev_finish("tool_calls"),
        ev_usage(10, 5),
        ev_done(),
    ]
    .concat()
    .replace('\n', "\r");
    Transcript {
        name: "SGLang",
        body: format!("\u{feff}{body}"),
        check: |r| {
            let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["read_file", "find_files"]);
            assert_eq!(r.tool_calls[0].arguments, Ok(json!({"path": "Cargo.toml"})));
            assert_eq!(r.tool_calls[1].arguments, Ok(json!({"pattern": "**/*.rs"})));
            assert!(r.tool_calls[1].id_generated);
            assert!(r.tool_calls[1].id.starts_with("call_goat_"));
            assert_eq!(r.usage.map(|u| u.total_tokens), Some(15));
        },
    }
}

fn plain_answer() -> Transcript {
    // A final answer: no tool calls, [DONE] without a usage chunk, and
    // multi-line data (two data lines form one JSON text) with CRLF line
    // ends, so some splits fall between the CR and the LF inside an event.
    let body = [
        "data: {\"choices\": [{\"index\": 0,\n".to_owned(),
        "data: \"delta\": {\"content\": \"Done: é🦀\"}}]}\n\n".to_owned(),
        ev_finish("stop"),
        ev_done(),
    ]
    .concat()
    .replace('\n', "\r\n");
    Transcript {
        name: "plain answer",
        body,
        check: |r| {
            assert_eq!(r.content, "Done: é🦀");
            assert_eq!(r.finish_reason, Some(FinishReason::Stop));
            assert!(r.tool_calls.is_empty());
        },
    }
}

fn transcripts() -> Vec<Transcript> {
    vec![
        llama_server(),
        vllm(),
        ollama(),
        lm_studio(),
        sglang(),
        plain_answer(),
    ]
}

fn assemble(chunks: &[&[u8]]) -> Response {
    let mut a = StreamAssembler::new();
    for c in chunks {
        a.feed(c, &mut |_| {}).unwrap();
    }
    a.finish().unwrap()
}

#[test]
fn each_dialect_assembles_into_the_right_response() {
    for t in transcripts() {
        let r = assemble(&[t.body.as_bytes()]);
        (t.check)(&r);
        assert_eq!(r.received_bytes, t.body.len(), "{}", t.name);
    }
}

#[test]
fn every_rechunking_of_every_stream_gives_the_same_response() {
    for t in transcripts() {
        let bytes = t.body.as_bytes();
        let whole = assemble(&[bytes]);
        // Every chunk size, which puts a split at every offset.
        for size in 1..=bytes.len().min(97) {
            let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
            let mut got = assemble(&chunks);
            // Generated ids differ per assembly; compare the rest.
            for (g, w) in got.tool_calls.iter_mut().zip(&whole.tool_calls) {
                if g.id_generated {
                    g.id = w.id.clone();
                }
            }
            assert_eq!(got, whole, "{} in {size}-byte chunks", t.name);
        }
    }
}

#[test]
fn deltas_stream_in_order() {
    let mut seen = Vec::new();
    let mut a = StreamAssembler::new();
    for b in llama_server().body.as_bytes().chunks(5) {
        a.feed(b, &mut |d| {
            seen.push(match d {
                Delta::Content(t) => format!("c:{t}"),
                Delta::Reasoning(t) => format!("r:{t}"),
                Delta::ToolCallStarted { index, name } => format!("t:{index}:{name}"),
                Delta::EngineLoading { message, .. } => format!("l:{message}"),
            })
        })
        .unwrap();
    }
    assert_eq!(
        seen,
        [
            "r:The user wants ",
            "r:the file.",
            "c:Reading it.",
            "t:0:read_file"
        ]
    );
}

#[test]
fn bad_tool_arguments_are_errors_for_the_model_not_calls() {
    let body = [
        ev_tool_call(0, Some("a"), Some("read_file"), Some("{\"path\": ")),
        ev_tool_call(1, Some("b"), Some("read_file"), Some("")),
        ev_tool_call(2, Some("c"), Some("read_file"), Some("[\"x\"]")),
        ev_finish("tool_calls"),
        ev_done(),
    ]
    .concat();
    let r = assemble(&[body.as_bytes()]);
    assert!(matches!(
        r.tool_calls[0].arguments,
        Err(ArgumentsError::InvalidJson { .. })
    ));
    assert_eq!(r.tool_calls[0].raw_arguments, "{\"path\": ");
    assert_eq!(r.tool_calls[1].arguments, Err(ArgumentsError::Empty));
    assert_eq!(r.tool_calls[2].arguments, Err(ArgumentsError::NotAnObject));
}

#[tokio::test]
async fn streams_over_the_network_in_one_byte_reads() {
    for t in [llama_server(), sglang()] {
        let server = ScriptedServer::start(vec![Reply::sse_chunked(t.body.as_bytes(), 1)]).await;
        let client = EngineClient::new(EngineConfig::new(server.base_url(), "qwen")).unwrap();
        let request = ChatRequest {
            messages: vec![Message::User {
                content: "hi".into(),
            }],
            tools: vec![],
        };
        let r = client
            .stream_chat(&request, &Default::default(), &mut |_| {})
            .await
            .unwrap();
        (t.check)(&r);
    }
}
