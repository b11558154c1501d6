//! `hook_guard`, an example GOAT component hook (issue 41): the component
//! form of Claude Code's documented `PreToolUse` example. It denies a
//! `run_command` (Claude Code's `Bash`) whose command line holds `rm -rf`,
//! and has no opinion on anything else.
//!
//! A component hook is pure: it exports `goat:hook/hook` and imports
//! nothing, which the host checks from its bytes before compiling it.
//! Added with `goat hooks add guard --on pre_tool_use --component
//! hook_guard.wasm`.

/// The bindings wit-bindgen makes from `wit/hook/hook.wit`.
mod bindings {
    wit_bindgen::generate!({
        world: "hook-component",
        path: "../../../wit/hook",
    });
}

use bindings::exports::goat::hook::hook::{Decision, Guest, Verdict};

struct Guard;

impl Guest for Guard {
    fn decide(event: String) -> Decision {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&event) else {
            return Decision {
                verdict: Verdict::Deny,
                reason: "the event is not JSON".to_owned(),
            };
        };
        let command = event["tool_input"]["command"].as_str().unwrap_or("");
        if event["tool_name"] == "run_command" && command.contains("rm -rf") {
            Decision {
                verdict: Verdict::Deny,
                reason: "Destructive command blocked by a component hook".to_owned(),
            }
        } else {
            Decision {
                verdict: Verdict::None,
                reason: String::new(),
            }
        }
    }
}

bindings::export!(Guard with_types_in bindings);
