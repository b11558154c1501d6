//! The committed schema of `goat run --output jsonl` is the one the types
//! make. After changing the protocol's types, write it again with
//! `GOAT_WRITE_SCHEMA=1 cargo test -p goat-session --test schema` and
//! commit it; within a major version a change may only add.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::PathBuf;

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/events.schema.json")
}

#[test]
fn the_committed_schema_is_the_one_the_types_make() {
    let made = serde_json::to_string_pretty(&goat_session::protocol::schema()).unwrap() + "\n";
    let path = committed();
    if std::env::var_os("GOAT_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &made).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == made,
        "{} differs from the protocol's types; if the change is meant (and only adds, within \
         schema version {}), write it with GOAT_WRITE_SCHEMA=1 cargo test -p goat-session \
         --test schema",
        path.display(),
        goat_session::SCHEMA_VERSION
    );
}
