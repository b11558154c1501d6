//! Sessions as a person names and resumes them: by a prefix of the id,
//! and with a failed request asked again sent once.

use goat_store::{HistoryEntry, TurnStatus};

use crate::open;

#[test]
fn a_failed_request_asked_again_word_for_word_is_sent_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let failed = store.start_turn(&session, "fix the test").unwrap();
    let r = store.start_round(failed).unwrap();
    store
        .finish_round_failed(r, goat_store::RoundFailure::Engine, "", "connection reset")
        .unwrap();
    store
        .finish_turn(failed, TurnStatus::Failed, Some("connection reset"))
        .unwrap();
    store.start_turn(&session, "fix the test").unwrap();
    assert_eq!(
        store.history(&session).unwrap(),
        [HistoryEntry::User("fix the test".into())]
    );
    // Asked differently, the failed request stays: "try again" refers to it.
    let mut store2 = open(&dir.path().join("second"));
    let s2 = store2
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let t = store2.start_turn(&s2, "fix the test").unwrap();
    store2
        .finish_turn(t, TurnStatus::Failed, Some("connection reset"))
        .unwrap();
    store2.start_turn(&s2, "try again").unwrap();
    assert_eq!(
        store2.history(&s2).unwrap(),
        [
            HistoryEntry::User("fix the test".into()),
            HistoryEntry::User("try again".into())
        ]
    );
}

#[test]
fn a_session_is_found_by_any_unique_prefix_of_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let ids: Vec<String> = (0..40)
        .map(|_| {
            store
                .create_session(dir.path(), "http://e/v1", "qwen")
                .unwrap()
        })
        .collect();
    let id = &ids[0];
    assert_eq!(&store.find_session(id).unwrap().id, id);
    // The shortest prefix no other id shares.
    let unique = (1..=id.len())
        .map(|n| &id[..n])
        .find(|p| ids.iter().filter(|i| i.starts_with(p)).count() == 1)
        .unwrap();
    assert_eq!(&store.find_session(unique).unwrap().id, id);
    assert_eq!(
        &store.find_session(&unique.to_ascii_uppercase()).unwrap().id,
        id
    );
    // A prefix shared by several names some of them.
    let shared = &id[..unique.len() - 1];
    if !shared.is_empty() {
        match store.find_session(shared) {
            Err(goat_store::StoreError::AmbiguousSession { matches, .. }) => {
                assert!(matches.len() >= 2 && matches.iter().all(|m| m.starts_with(shared)));
            }
            other => panic!("{other:?}"),
        }
    }
    for nothing in ["", "%", "_", "zz", "0%"] {
        assert!(
            matches!(
                store.find_session(nothing),
                Err(goat_store::StoreError::NoSession(_))
            ),
            "{nothing:?}"
        );
    }
}

#[test]
fn a_summary_replaces_the_turns_it_covers_only_in_the_history_sent() {
    use goat_store::{CompactReason, NewSummary};
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let turns: Vec<i64> = ["one", "two", "three"]
        .iter()
        .map(|p| {
            let t = store.start_turn(&session, p).unwrap();
            store.finish_turn(t, TurnStatus::Completed, None).unwrap();
            t
        })
        .collect();
    assert_eq!(store.latest_summary(&session).unwrap(), None);
    let summary = NewSummary {
        through_turn_id: turns[1],
        content: "asked one and two".into(),
        through_round_id: None,
        reason: CompactReason::Window,
        prompt_tokens: Some(900),
        completion_tokens: Some(12),
    };
    store.add_summary(&session, &summary).unwrap();
    let latest = store.latest_summary(&session).unwrap().unwrap();
    assert_eq!(
        (
            latest.through_turn_id,
            latest.content.as_str(),
            latest.reason
        ),
        (turns[1], "asked one and two", CompactReason::Window)
    );
    let after = store.history_turns(&session, Some(turns[1])).unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].entries, [HistoryEntry::User("three".into())]);
    // The record keeps every turn.
    assert_eq!(store.history(&session).unwrap().len(), 3);
    assert_eq!(store.turns(&session).unwrap().len(), 3);
    // A turn of another session is refused.
    let other = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    assert!(store.add_summary(&other, &summary).is_err());
    // Removing the session removes its summaries too.
    assert!(store.remove_session(&session).unwrap());
    assert!(store.summaries(&session).unwrap().is_empty());
}

#[test]
fn a_summary_inside_a_turn_keeps_the_request_and_the_rounds_after_it() {
    use goat_store::{CompactReason, NewSummary, RoundOk};
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let first = store.start_turn(&session, "one").unwrap();
    store
        .finish_turn(first, TurnStatus::Completed, None)
        .unwrap();
    let turn = store.start_turn(&session, "read everything").unwrap();
    let rounds: Vec<i64> = (0..3)
        .map(|n| {
            let r = store.start_round(turn).unwrap();
            store
                .finish_round_ok(
                    r,
                    &RoundOk {
                        content: format!("round {n}"),
                        prompt_tokens: Some(1000 + n),
                        cached_tokens: Some(900 + n),
                        ..RoundOk::default()
                    },
                )
                .unwrap();
            r
        })
        .collect();
    let whole = store.history_since(&session, None).unwrap();
    assert_eq!(whole.len(), 2);
    assert_eq!(
        whole[1].rounds,
        [(rounds[0], 1), (rounds[1], 2), (rounds[2], 3)]
    );
    assert_eq!(whole[1].round_of(0), None);
    assert_eq!(whole[1].round_of(2), Some(rounds[1]));
    store
        .add_summary(
            &session,
            &NewSummary {
                through_turn_id: turn,
                through_round_id: Some(rounds[1]),
                content: "read two files".into(),
                reason: CompactReason::Window,
                prompt_tokens: None,
                completion_tokens: None,
            },
        )
        .unwrap();
    let latest = store.latest_summary(&session).unwrap().unwrap();
    assert_eq!(latest.through_round_id, Some(rounds[1]));
    let after = store.history_since(&session, Some(&latest)).unwrap();
    assert_eq!(after.len(), 1, "the older turn is covered");
    assert_eq!(
        after[0].entries,
        [
            HistoryEntry::User("read everything".into()),
            HistoryEntry::Assistant {
                content: "round 2".into(),
                calls: vec![]
            }
        ],
        "the request stays; the rounds up to the summary's go"
    );
    assert_eq!(after[0].rounds, [(rounds[2], 1)]);
    // A round of another turn is refused.
    let wrong = NewSummary {
        through_turn_id: first,
        through_round_id: Some(rounds[0]),
        content: String::new(),
        reason: CompactReason::Window,
        prompt_tokens: None,
        completion_tokens: None,
    };
    assert!(store.add_summary(&session, &wrong).is_err());
    // The stubs' watermark only moves forward.
    assert_eq!(store.elided_through(&session).unwrap(), None);
    store.set_elided_through(&session, rounds[1]).unwrap();
    store.set_elided_through(&session, rounds[0]).unwrap();
    assert_eq!(store.elided_through(&session).unwrap(), Some(rounds[1]));
    assert!(store.elided_through("nope").is_err());
    // The engine's cached tokens are kept per round and summed.
    let tokens = store.session_tokens(&session).unwrap();
    assert_eq!((tokens.prompt, tokens.cached), (3003, 2703));
    assert_eq!(tokens.cache_reported_prompt, 3003);
    let stored = store.turns(&session).unwrap();
    assert_eq!(stored[1].rounds[2].cached_tokens, Some(902));
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats[0].prompt_tokens, stats[0].cached_tokens),
        (3003, 2703)
    );
}
