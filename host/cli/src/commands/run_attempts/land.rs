//! Landing an attempt: a copy of its layer, and, in place of another
//! attempt already in the workspace, what was there before put back in
//! the same change set (issue 42, ADR-0099).

use std::path::Path;

use anyhow::{Context, bail};
use goat_command::attempt::AttemptLayer;
use serde_json::json;

use crate::text;

/// What a landing swaps out: the attempt in the workspace, and what the
/// run's landings changed that is not undone, oldest first
/// ([`goat_store::Store::landing`]).
pub(crate) type SwapOut = (u32, Vec<goat_store::ChangeRecord>);

/// Why nothing landed, said before any landing was tried: nothing was
/// changed or recorded.
#[derive(Debug)]
pub(crate) struct NotLanded(anyhow::Error);

impl std::fmt::Display for NotLanded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for NotLanded {}

/// Lands attempt `n` of `run` (its `layer`) in `workspace` through
/// `calls`: from a copy of the layer, so the layer itself stays as it was
/// and can land again after an undo. The copy goes once the landing is
/// settled, unless a landing that failed could not be taken back (it then
/// holds what the workspace held, and is said).
///
/// With `swap_out`, the copy also takes back the attempt in the workspace
/// (what was there before the run's landings, put back wherever attempt
/// `n` says nothing), in the same change set. Refused, with nothing
/// changed, where that could lose anyone's work or could not be undone: a
/// file the landings left was changed since (checked before the set is
/// read and again after, so nothing changed in between goes unseen; the
/// landing then checks nothing moved since it was read), something was
/// put since in a directory the swap would remove, or a file the swap
/// would replace is too large for GOAT to keep a copy of.
pub(crate) fn land(
    runtime: &tokio::runtime::Runtime,
    calls: &goat_router::DirectCalls,
    (run, n): (i64, u32),
    layer: &AttemptLayer,
    workspace: &Path,
    swap_out: Option<&SwapOut>,
) -> anyhow::Result<goat_store::CallOutcome> {
    let (label, args, pending, copy) = prepare(layer, (run, n), workspace, swap_out)
        .map_err(|e| anyhow::Error::new(NotLanded(e)))?;
    let call = runtime.block_on(calls.land_attempt(&label, &args, pending))?;
    // A landing that failed half-way and could not take its steps back
    // leaves what the workspace held in the copy's backups. After a
    // landing that succeeded, the journal holds what was replaced.
    let kept = call.status != goat_store::CallStatus::Ok
        && std::fs::read_dir(copy.dir().join("backup"))
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(false);
    if kept {
        crate::note(format!(
            "the landing's copy is kept at {}: it holds what the workspace held",
            copy.dir().display()
        ));
    } else {
        let _ = copy.discard();
    }
    Ok(call)
}

/// What the workspace held before the landings of `records` (see
/// [`goat_router::checkpoint::befores`]), or why attempt `old` cannot be
/// taken back.
fn swap_befores(
    workspace: &Path,
    old: u32,
    records: &[&goat_store::ChangeRecord],
) -> anyhow::Result<Vec<(String, goat_command::attempt::Before)>> {
    goat_router::checkpoint::befores(workspace, records).map_err(|e| {
        anyhow::anyhow!(
            "attempt {old} is in the workspace and cannot be taken back: {}; nothing landed",
            text::escape_controls(&e.to_string())
        )
    })
}

/// The landing's label, arguments, change set and copy of the layer.
type Prepared = (
    String,
    serde_json::Value,
    goat_command::Pending,
    AttemptLayer,
);

/// Everything before the landing: the copy, what is put back in a swap,
/// the checks, the set read.
fn prepare(
    layer: &AttemptLayer,
    (run, n): (i64, u32),
    workspace: &Path,
    swap_out: Option<&SwapOut>,
) -> anyhow::Result<Prepared> {
    let swap = match swap_out {
        Some((old, records)) => {
            let records: Vec<&goat_store::ChangeRecord> = records.iter().collect();
            let befores = swap_befores(workspace, *old, &records)?;
            Some((*old, records, befores))
        }
        None => None,
    };
    let copy = (1..)
        .map(|k| layer.dir().join(format!("landing-{k}")))
        .find(|dir| !dir.exists())
        .context("naming the landing's copy")?;
    let copy = layer
        .copy_to(&copy)
        .context("copying the attempt's layer to land it")?;
    let made = (|| {
        let Some((old, records, befores)) = &swap else {
            return Ok((
                format!("land attempt {n} of run {run}"),
                json!({ "run": run, "attempt": n }),
                copy.pending(workspace)?,
            ));
        };
        copy.put_back(workspace, befores).map_err(|e| {
            anyhow::anyhow!(
                "attempt {old} cannot be swapped out: {}; nothing landed",
                text::escape_controls(&e.to_string())
            )
        })?;
        let pending = copy.pending(workspace)?;
        // What the set was read from is still what the landings left.
        swap_befores(workspace, *old, records)?;
        if pending.set.unkept > 0 {
            bail!(
                "attempt {old} cannot be swapped out: a file it would replace is too large for \
                 GOAT to keep a copy of, so the swap could not be undone; nothing landed. Take \
                 attempt {old} back with goat undo, then land attempt {n}"
            );
        }
        Ok((
            format!("land attempt {n} of run {run} in place of attempt {old}"),
            json!({ "run": run, "attempt": n, "replaces": old }),
            pending,
        ))
    })();
    match made {
        Ok((label, args, pending)) => Ok((label, args, pending, copy)),
        Err(e) => {
            let _ = copy.discard();
            Err(e)
        }
    }
}
