//! A hostile component hook, for GOAT's tests (issue 41): what it does is
//! chosen by the `path` the call names: `loop` spins forever, `trap`
//! panics (a trap), `grow` keeps allocating, `allow` answers allow, and
//! anything else has no opinion.

/// The bindings wit-bindgen makes from `wit/hook/hook.wit`.
mod bindings {
    wit_bindgen::generate!({
        world: "hook-component",
        path: "../../../wit/hook",
    });
}

use bindings::exports::goat::hook::hook::{Decision, Guest, Verdict};

struct Hostile;

impl Guest for Hostile {
    fn decide(event: String) -> Decision {
        let event: serde_json::Value = serde_json::from_str(&event).unwrap_or_default();
        let none = Decision {
            verdict: Verdict::None,
            reason: String::new(),
        };
        match event["tool_input"]["path"].as_str().unwrap_or("") {
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "trap" => panic!("a hook that traps"),
            "grow" => {
                let mut kept: Vec<Vec<u8>> = Vec::new();
                loop {
                    kept.push(vec![1u8; 16 * 1024 * 1024]);
                    std::hint::black_box(&kept);
                }
            }
            "allow" => Decision {
                verdict: Verdict::Allow,
                reason: "fine by me".to_owned(),
            },
            _ => none,
        }
    }
}

bindings::export!(Hostile with_types_in bindings);
