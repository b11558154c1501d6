//! Where no view of the workspace can be made (a default Docker
//! container's filter, a kernel without user namespaces), `--attempts` is
//! refused, saying so, and nothing runs (issue 42, ADR-0099).

use super::write;
use crate::{content_reply, text};

/// Filters refusing every way to a namespace or a mount (`unshare`,
/// `setns`, `clone` with a namespace flag, `mount`, `fsopen`,
/// `open_tree`), as a default Docker container's does: where no view of
/// the workspace can be made. `clone3`, whose flags a filter cannot read,
/// is "not implemented", so the C library falls back to `clone`.
#[cfg(target_arch = "x86_64")]
fn no_namespaces() -> Vec<seccompiler::BpfProgram> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let filter = |rules, errno| -> seccompiler::BpfProgram {
        SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno),
            seccompiler::TargetArch::x86_64,
        )
        .unwrap()
        .try_into()
        .unwrap()
    };
    let mut refused = std::collections::BTreeMap::new();
    // unshare, setns, mount, fsopen, open_tree.
    for call in [272_i64, 308, 165, 430, 428] {
        refused.insert(call, Vec::new());
    }
    // clone with any namespace flag: one rule a flag.
    let flags = [
        0x0002_0000_u64,
        0x0200_0000,
        0x0400_0000,
        0x0800_0000,
        0x1000_0000,
        0x2000_0000,
        0x4000_0000,
    ];
    refused.insert(
        56,
        flags
            .iter()
            .map(|&flag| {
                SeccompRule::new(vec![
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(flag),
                        flag,
                    )
                    .unwrap(),
                ])
                .unwrap()
            })
            .collect(),
    );
    let mut clone3 = std::collections::BTreeMap::new();
    clone3.insert(435_i64, Vec::new());
    // EPERM; ENOSYS.
    vec![filter(refused, 1), filter(clone3, 38)]
}

/// `cmd` run under [`no_namespaces`]'s filters.
#[cfg(target_arch = "x86_64")]
fn without_namespaces(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let filters = no_namespaces();
    #[expect(unsafe_code, reason = "pre_exec installs the filters in the child")]
    // SAFETY: installing a prepared filter makes system calls only.
    unsafe {
        cmd.pre_exec(move || {
            for program in &filters {
                seccompiler::apply_filter(program)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
            }
            Ok(())
        });
    }
}

#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread")]
async fn where_no_view_can_be_made_attempts_are_refused_saying_so_and_nothing_runs() {
    let env = crate::Env::new();
    let server = goat_testkit::ScriptedServer::start(vec![
        write("a1", "value.txt", "written\n"),
        content_reply("Done."),
    ])
    .await;
    let url = server.base_url();
    let mut cmd = env.cmd();
    cmd.args([
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "--allow-writes",
        "--attempts",
        "2",
        "--attempts-parallel",
        "1",
        "Try",
    ]);
    without_namespaces(&mut cmd);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(
        said.contains("--attempts needs a view of the workspace of its own")
            && said.contains("not run with Landlock alone"),
        "{said}"
    );
    // Nothing ran: no request for a turn, nothing written.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.body["messages"].is_null()),
        "{:?}",
        server.requests().len()
    );
    assert!(!env.ws.join("value.txt").exists());
    // The same goat, under the same filters, still runs a plain turn:
    // commands and all are held by Landlock alone there.
    let mut cmd = env.cmd();
    cmd.args([
        "run",
        "--engine",
        &url,
        "--model",
        "qwen",
        "--allow-writes",
        "Try",
    ]);
    without_namespaces(&mut cmd);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("value.txt")).unwrap(),
        "written\n"
    );
}
