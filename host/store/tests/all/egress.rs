//! A command's proxy decisions (ADR-0082): stored against the call, read
//! back per session in order, removed with the session.

use goat_store::{EgressRecord, EgressRequest, EgressVerdict, RoundOk};

use crate::{call, open};

#[test]
fn proxy_decisions_are_kept_against_the_call_and_removed_with_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path());
    let session = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    let turn = store.start_turn(&session, "build").unwrap();
    let round = store.start_round(turn).unwrap();
    let rows = store
        .finish_round_ok(
            round,
            &RoundOk {
                calls: vec![call("c1", "run_command", "{}")],
                ..RoundOk::default()
            },
        )
        .unwrap();
    let allowed = EgressRecord {
        at: 1,
        request: EgressRequest::Connect,
        host: "index.crates.io".into(),
        port: 443,
        verdict: EgressVerdict::Allowed,
        detail: "listed".into(),
        entry: Some("index.crates.io".into()),
        address: Some("151.101.1.137:443".into()),
    };
    let refused = EgressRecord {
        at: 2,
        request: EgressRequest::Http,
        host: "registry.test".into(),
        port: 8080,
        verdict: EgressVerdict::NonPublic,
        detail: "it resolved to 127.0.0.1".into(),
        entry: Some("127.0.0.1:8080".into()),
        address: Some("127.0.0.1".into()),
    };
    store
        .record_egress(rows[0], &[allowed.clone(), refused.clone()])
        .unwrap();
    let stored = store.egress(&session).unwrap();
    assert_eq!(
        stored.iter().map(|r| r.record.clone()).collect::<Vec<_>>(),
        [allowed, refused]
    );
    assert!(stored.iter().all(|r| r.call_row == rows[0]));
    assert!(!stored[0].record.verdict.refused() && stored[1].record.verdict.refused());
    assert!(store.remove_session(&session).unwrap());
    let other = store
        .create_session(dir.path(), "http://e/v1", "qwen")
        .unwrap();
    assert!(store.egress(&other).unwrap().is_empty());
}
