#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

/// The documented table, and no outcome shares another's code.
#[test]
fn every_outcome_has_its_own_exit_code() {
    let mut codes: Vec<u8> = Outcome::ALL.iter().map(|o| o.exit_code(false)).collect();
    assert_eq!(codes, [0, 3, 4, 5, 6, 7, 8, 9, 10, 130, 2]);
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), Outcome::ALL.len());
    assert_eq!(Outcome::CompletedWithDenials.exit_code(true), 0);
    assert_eq!(Outcome::NeedsApproval.exit_code(true), 4);
    for outcome in Outcome::ALL {
        assert_eq!(
            serde_json::to_value(outcome).unwrap(),
            serde_json::Value::String(outcome.as_str().to_owned())
        );
    }
}

#[test]
fn an_event_is_flat_with_its_type() {
    let event = Event {
        seq: 3,
        session_id: Some("s".into()),
        attempt: None,
        turn: Some(1),
        kind: EventKind::RoundStarted { round: 2 },
    };
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"seq": 3, "session_id": "s", "turn": 1, "type": "round.started", "round": 2})
    );
    let back: Event = serde_json::from_value(json).unwrap();
    assert_eq!(back, event);
}
