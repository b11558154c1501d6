//! A person's answers at the terminal, through the real router, gate and
//! sandbox: "once" asks again next time, "session" and "always" are saved
//! as exact allow rules (and only ask once), a deny rule still wins over a
//! remembered allow, and a path a rule cannot spell exactly is never
//! remembered.

use std::path::Path;
use std::sync::{Arc, Mutex};

use goat_engine::ToolCall;
use goat_gate::{Access, Effect, Interactive, NewRule, PermissionDb, Rule, Scope, WritePolicy};
use goat_router::{AppToolRouter, Approval, ApprovalRequest, Approver, RouterConfig};
use goat_sandbox::SandboxBuilder;
use goat_store::CallStatus;
use serde_json::{Value, json};

/// What each question showed, in order.
#[derive(Clone, Debug)]
struct Asked {
    tool: String,
    prompt: String,
    paths: Vec<String>,
    arguments: Value,
    can_remember: bool,
}

/// Answers from a script and records each question.
struct Scripted {
    answers: Vec<Approval>,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl Approver for Scripted {
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> Approval {
        self.asked.lock().unwrap().push(Asked {
            tool: request.tool.to_owned(),
            prompt: request.prompt.to_owned(),
            paths: request.paths.to_vec(),
            arguments: request.arguments.clone(),
            can_remember: request.can_remember,
        });
        if self.answers.is_empty() {
            Approval::Deny
        } else {
            self.answers.remove(0)
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    db: std::path::PathBuf,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let db = dir.path().join("permissions.db");
        PermissionDb::open(&db).unwrap();
        Self {
            _dir: dir,
            ws,
            db,
            asked: Arc::default(),
        }
    }

    /// A router for `session` whose approver gives `answers` in turn.
    fn router(&self, session: &str, answers: Vec<Approval>) -> AppToolRouter {
        self.router_in(&self.ws, session, answers)
    }

    /// The same, working in `workspace`.
    fn router_in(&self, workspace: &Path, session: &str, answers: Vec<Approval>) -> AppToolRouter {
        let sandbox = sandbox();
        let tools = sandbox.load_pen_tools().unwrap();
        self.router_with(workspace, session, sandbox, tools, answers)
    }

    /// A router offering `tools`, run in `sandbox`, in `workspace`.
    fn router_with(
        &self,
        workspace: &Path,
        session: &str,
        sandbox: goat_sandbox::Sandbox,
        tools: Vec<goat_sandbox::Tool>,
        answers: Vec<Approval>,
    ) -> AppToolRouter {
        AppToolRouter::new(
            Arc::new(sandbox),
            tools,
            RouterConfig {
                workspace: workspace.to_owned(),
                permissions_db: self.db.clone(),
                session_id: session.to_owned(),
                interactive: Interactive::Yes,
                writes: WritePolicy::Default,
            },
        )
        .with_approver(Box::new(Scripted {
            answers,
            asked: self.asked.clone(),
        }))
    }

    fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    fn rules(&self) -> Vec<Rule> {
        PermissionDb::open(&self.db).unwrap().list().unwrap()
    }
}

/// A sandbox over the tests' shared compiled-code cache.
fn sandbox() -> goat_sandbox::Sandbox {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("goat-cache");
    SandboxBuilder::new().cache_dir(cache).build().unwrap()
}

fn write(path: &str, content: &str) -> ToolCall {
    let arguments = json!({"path": path, "content": content});
    ToolCall {
        index: 0,
        id: "call_1".to_owned(),
        id_generated: false,
        name: "write_file".to_owned(),
        raw_arguments: arguments.to_string(),
        arguments: Ok(arguments),
    }
}

#[test]
fn once_runs_the_call_and_asks_again_next_time() {
    let f = Fixture::new();
    let mut router = f.router("s1", vec![Approval::Once, Approval::Deny]);

    let first = router.route(&write("./notes/../a.txt", "one")).unwrap();
    assert_eq!(first.status, CallStatus::Ok, "{}", first.result);
    assert_eq!(
        first.decision,
        Some(goat_store::CallDecision::AskAllowedOnce)
    );
    assert_eq!(std::fs::read_to_string(f.ws.join("a.txt")).unwrap(), "one");

    let second = router.route(&write("a.txt", "two")).unwrap();
    assert_eq!(second.status, CallStatus::Denied, "{}", second.result);
    assert_eq!(second.decision, Some(goat_store::CallDecision::AskDenied));
    assert_eq!(std::fs::read_to_string(f.ws.join("a.txt")).unwrap(), "one");

    let asked = f.asked();
    assert_eq!(asked.len(), 2, "once is not remembered: {asked:?}");
    assert_eq!(asked[0].tool, "write_file");
    assert_eq!(
        asked[0].paths,
        ["a.txt"],
        "the path as the gate resolved it"
    );
    assert_eq!(asked[0].arguments["content"], "one");
    assert!(asked[0].can_remember);
    assert!(f.rules().is_empty(), "once saves no rule: {:?}", f.rules());
}

#[test]
fn session_saves_an_exact_session_rule_that_other_sessions_do_not_get() {
    let f = Fixture::new();
    let mut router = f.router("s1", vec![Approval::Session]);
    assert_eq!(
        router.route(&write("src/a.txt", "one")).unwrap().decision,
        Some(goat_store::CallDecision::AskAllowedSession)
    );
    // Same tool, same path: the saved rule allows it without asking.
    let again = router.route(&write("src/a.txt", "two")).unwrap();
    assert_eq!(again.status, CallStatus::Ok, "{}", again.result);
    assert_eq!(again.decision, Some(goat_store::CallDecision::Allow));
    // Another path is asked about again (and denied by the script).
    let other = router.route(&write("src/b.txt", "x")).unwrap();
    assert_eq!(other.status, CallStatus::Denied);
    assert_eq!(f.asked().len(), 2);
    assert!(!f.ws.join("src/b.txt").exists());

    let rules = f.rules();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0].tool.as_deref(), Some("write_file"));
    assert_eq!(rules[0].pattern, "src/a.txt");
    assert_eq!(rules[0].access, Access::Write);
    assert_eq!(rules[0].effect, Effect::Allow);
    assert_eq!(rules[0].scope, Scope::Session("s1".to_owned()));

    // A later session is asked again.
    let mut later = f.router("s2", vec![Approval::Deny]);
    let there = later.route(&write("src/a.txt", "three")).unwrap();
    assert_eq!(there.status, CallStatus::Denied);
    assert_eq!(f.asked().len(), 3);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("src/a.txt")).unwrap(),
        "two"
    );
}

#[test]
fn always_saves_a_persistent_rule_and_a_deny_rule_still_wins() {
    let f = Fixture::new();
    let mut router = f.router("s1", vec![Approval::Always]);
    let first = router.route(&write("a.txt", "one")).unwrap();
    assert_eq!(
        first.decision,
        Some(goat_store::CallDecision::AskAllowedAlways)
    );
    assert!(
        first
            .decision_reason
            .as_deref()
            .unwrap_or("")
            .contains("saved rule #1"),
        "{:?}",
        first.decision_reason
    );
    let rules = f.rules();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0].scope, Scope::Persistent);
    assert_eq!(rules[0].pattern, "a.txt");

    // Another session is allowed without a question.
    let mut later = f.router("s2", vec![]);
    assert_eq!(
        later.route(&write("a.txt", "two")).unwrap().status,
        CallStatus::Ok
    );
    assert_eq!(f.asked().len(), 1);

    // A deny rule added afterwards wins over the remembered allow.
    PermissionDb::open(&f.db)
        .unwrap()
        .add(NewRule {
            tool: None,
            pattern: "*.txt".to_owned(),
            access: Access::Write,
            effect: Effect::Deny,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 1,
            expires_at: None,
            command: None,
        })
        .unwrap();
    let denied = later.route(&write("a.txt", "three")).unwrap();
    assert_eq!(denied.status, CallStatus::Denied, "{}", denied.result);
    assert_eq!(std::fs::read_to_string(f.ws.join("a.txt")).unwrap(), "two");
    assert_eq!(f.asked().len(), 1, "a denied call is not asked about");
}

#[test]
fn a_path_with_wildcard_characters_is_never_remembered() {
    let f = Fixture::new();
    let mut router = f.router("s1", vec![Approval::Always]);
    let routed = router.route(&write("a*.txt", "one")).unwrap();
    assert_eq!(routed.status, CallStatus::Ok, "{}", routed.result);
    // A rule 'a*.txt' would allow every a...txt: it is not saved, and the
    // answer counts for this call only.
    assert_eq!(
        routed.decision,
        Some(goat_store::CallDecision::AskAllowedOnce)
    );
    assert!(f.rules().is_empty(), "{:?}", f.rules());
    assert!(!f.asked()[0].can_remember);
}

#[test]
fn always_is_bound_to_the_workspace_it_was_asked_in() {
    let f = Fixture::new();
    let mut router = f.router("s1", vec![Approval::Always]);
    assert_eq!(
        router.route(&write("Makefile", "ok")).unwrap().status,
        CallStatus::Ok
    );
    let rules = f.rules();
    assert_eq!(rules[0].workspace.as_deref(), f.ws.to_str(), "{rules:?}");

    // Another project with a file of the same name: asked again.
    let other = f.ws.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    let mut there = f.router_in(&other, "s2", vec![Approval::Deny]);
    let routed = there.route(&write("Makefile", "rm -rf")).unwrap();
    assert_eq!(routed.status, CallStatus::Denied, "{}", routed.result);
    assert_eq!(f.asked().len(), 2);
    assert!(!other.join("Makefile").exists());
}

#[test]
fn a_path_naming_the_workspace_root_is_never_remembered_as_the_whole_workspace() {
    for raw in [".", "", "src/..", "./"] {
        let f = Fixture::new();
        let mut router = f.router("s1", vec![Approval::Always]);
        let routed = router.route(&write(raw, "x")).unwrap();
        assert!(f.rules().is_empty(), "{raw:?}: {:?}", f.rules());
        let asked = f.asked();
        assert_eq!(asked.len(), 1, "{raw:?}: {}", routed.result);
        assert!(!asked[0].can_remember, "{raw:?}");
        assert_eq!(asked[0].paths, ["."], "{raw:?}");
    }
}

#[test]
fn the_question_names_the_file_a_link_leads_to() {
    let f = Fixture::new();
    std::fs::create_dir(f.ws.join("src")).unwrap();
    std::fs::write(f.ws.join("src/real.md"), "real\n").unwrap();
    std::os::unix::fs::symlink("src/real.md", f.ws.join("NOTES.md")).unwrap();
    let mut router = f.router("s1", vec![Approval::Once]);
    let routed = router.route(&write("NOTES.md", "new\n")).unwrap();
    assert_eq!(routed.status, CallStatus::Ok, "{}", routed.result);
    let asked = f.asked();
    assert_eq!(asked[0].paths, ["src/real.md"]);
    assert!(
        asked[0]
            .prompt
            .contains("'NOTES.md' is a link: the file written is 'src/real.md'"),
        "{}",
        asked[0].prompt
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("src/real.md")).unwrap(),
        "new\n"
    );
}

/// A deny rule naming a directory covers what is inside it (issue 11), but
/// an approval's exact rule never widens to what is under its path: a
/// write naming a directory (it fails) answered "always" does not let
/// later writes inside that directory through unasked.
#[test]
fn always_for_a_directory_path_does_not_cover_what_is_inside_it() {
    let f = Fixture::new();
    std::fs::create_dir(f.ws.join("notes")).unwrap();
    let mut router = f.router("s1", vec![Approval::Always, Approval::Deny]);

    let on_dir = router.route(&write("notes", "x")).unwrap();
    assert_ne!(on_dir.status, CallStatus::Ok, "{}", on_dir.result);
    let rules = f.rules();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0].pattern, "notes");
    assert!(
        !rules[0].covers_below(),
        "an allow rule grants exactly its path"
    );

    let inside = router.route(&write("notes/run.sh", "rm -rf ~")).unwrap();
    assert_eq!(inside.status, CallStatus::Denied, "{}", inside.result);
    assert!(!f.ws.join("notes/run.sh").exists());
    let asked = f.asked();
    assert_eq!(
        asked.len(),
        2,
        "the write inside was asked about: {asked:?}"
    );
    assert_eq!(asked[1].paths, ["notes/run.sh"]);

    // A deny rule naming the directory keeps a remembered allow inside it
    // from applying.
    PermissionDb::open(&f.db)
        .unwrap()
        .add(NewRule {
            tool: None,
            pattern: "notes".to_owned(),
            access: Access::Write,
            effect: Effect::Deny,
            scope: Scope::Persistent,
            workspace: None,
            created_at: goat_gate::now(),
            expires_at: None,
            command: None,
        })
        .unwrap();
    PermissionDb::open(&f.db)
        .unwrap()
        .add(NewRule {
            tool: Some("write_file".to_owned()),
            pattern: "notes/a.txt".to_owned(),
            access: Access::Write,
            effect: Effect::Allow,
            scope: Scope::Persistent,
            workspace: None,
            created_at: goat_gate::now(),
            expires_at: None,
            command: None,
        })
        .unwrap();
    let denied = router.route(&write("notes/a.txt", "x")).unwrap();
    assert_eq!(denied.status, CallStatus::Denied, "{}", denied.result);
    assert!(
        denied
            .result
            .contains("deny write 'notes' and everything under it"),
        "{}",
        denied.result
    );
    assert!(!f.ws.join("notes/a.txt").exists());
}

fn run_command(command: &str) -> ToolCall {
    let arguments = json!({"command": command, "cwd": "sub"});
    ToolCall {
        index: 0,
        id: "call_1".to_owned(),
        id_generated: false,
        name: "run_command".to_owned(),
        raw_arguments: arguments.to_string(),
        arguments: Ok(arguments),
    }
}

#[test]
fn a_command_question_shows_the_command_directory_and_network_and_always_saves_that_command() {
    if goat_router::command_support().is_err() {
        // The tool is not offered on this kernel; nothing to ask.
        return;
    }
    let f = Fixture::new();
    std::fs::create_dir(f.ws.join("sub")).unwrap();
    let tool = |network| goat_router::CommandTool {
        containment: goat_command::Containment {
            network,
            ..goat_router::default_containment(&f.ws, None)
        },
        policy: goat_gate::CommandPolicy::Default,
        egress: None,
    };
    let mut router = f
        .router("s1", vec![Approval::Always])
        .with_commands(tool(goat_command::Network::Closed));
    let routed = router.route(&run_command("touch made")).unwrap();
    assert_eq!(routed.status, CallStatus::Ok, "{}", routed.result);
    assert!(f.ws.join("sub/made").exists());
    let asked = f.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool, "run_command");
    assert_eq!(
        asked[0].prompt,
        "run_command wants to run 'touch made' in 'sub' (network closed); allow it?"
    );
    assert!(asked[0].can_remember);
    // Saved as exactly that command, bound to this workspace.
    let rules = f.rules();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].command.as_deref(), Some("touch made"));
    assert_eq!(rules[0].effect, Effect::Allow);
    assert_eq!(rules[0].workspace.as_deref(), f.ws.to_str());
    // The same command runs unasked now; another is asked about.
    router.route(&run_command("touch made")).unwrap();
    router.route(&run_command("touch other")).unwrap();
    assert_eq!(f.asked().len(), 2);
    assert!(!f.ws.join("sub/other").exists(), "denied by the script");

    // With the network opened, the question says so.
    let mut open = f
        .router("s2", vec![Approval::Deny])
        .with_commands(tool(goat_command::Network::Open));
    let routed = open.route(&run_command("curl example.com")).unwrap();
    assert_eq!(routed.status, CallStatus::Denied);
    assert!(
        f.asked()[2].prompt.contains("(NETWORK OPEN)"),
        "{:?}",
        f.asked()[2]
    );
    // With a list, the question says where the network may go.
    let list = goat_egress::Allowlist::parse(&["registries.rust", "localhost:8080"]).unwrap();
    let mut listed = f
        .router("s3", vec![Approval::Deny])
        .with_commands(goat_router::CommandTool {
            egress: Some(goat_egress::Proxy::new(list)),
            ..tool(goat_command::Network::Proxied)
        });
    let routed = listed.route(&run_command("cargo fetch")).unwrap();
    assert_eq!(routed.status, CallStatus::Denied);
    let prompt = &f.asked()[3].prompt;
    assert!(
        prompt.contains(
            "(network only through GOAT's proxy, to registries.rust (index.crates.io, \
             static.crates.io), localhost:8080"
        ),
        "{prompt}"
    );
}

#[test]
fn accept_edits_allows_the_file_tools_but_still_asks_about_a_plugins_write() {
    // Accept-edits answers for GOAT's own file tools only: a plugin's
    // writes (kept for undo as it makes them) are still asked about.
    let f = Fixture::new();
    let sandbox = sandbox();
    let wasm = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/dist/testing/hostile_rw.wasm"),
    )
    .unwrap();
    let mut tools = sandbox.load_pen_tools().unwrap();
    tools.push(
        sandbox
            .load("rw", &wasm)
            .unwrap()
            .exposed_as("rw__hostile_rw")
            .unwrap(),
    );
    let mut router = f
        .router_with(&f.ws, "s1", sandbox, tools, vec![])
        .with_mode(goat_router::ModeSwitch::new(
            goat_router::ApprovalMode::AcceptEdits,
        ));

    let edit = router.route(&write("notes.txt", "by the model")).unwrap();
    assert_eq!(edit.status, CallStatus::Ok);
    assert!(f.asked().is_empty(), "write_file was asked about");

    let arguments = json!({"action": "write", "path": "plugin.txt", "content": "pwned"});
    let plugin = router
        .route(&ToolCall {
            index: 0,
            id: "call_2".to_owned(),
            id_generated: false,
            name: "rw__hostile_rw".to_owned(),
            raw_arguments: arguments.to_string(),
            arguments: Ok(arguments),
        })
        .unwrap();
    assert_eq!(plugin.status, CallStatus::Denied);
    assert_eq!(f.asked().len(), 1, "the plugin's write was not asked about");
    assert_eq!(f.asked()[0].tool, "rw__hostile_rw");
    assert!(!f.ws.join("plugin.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("notes.txt")).unwrap(),
        "by the model"
    );
}

/// An outside (MCP) server's one tool, counting its calls.
struct OneOutsideTool {
    calls: Arc<Mutex<usize>>,
}

impl goat_router::ExternalTools for OneOutsideTool {
    fn tools(&self) -> Vec<goat_router::ExternalTool> {
        vec![goat_router::ExternalTool {
            name: "docs__search".to_owned(),
            server: "docs".to_owned(),
            description: "Search the docs.".to_owned(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
            writes: false,
            network: true,
        }]
    }

    fn schemas(&self) -> Vec<goat_engine::ToolSchema> {
        self.tools()
            .into_iter()
            .map(|t| goat_engine::ToolSchema {
                name: t.name,
                description: t.description,
                parameters: t.parameters,
            })
            .collect()
    }

    fn indirect(&self, _: &str, _: &Value) -> Option<Result<String, (String, Value)>> {
        None
    }

    fn call(
        &self,
        _: &str,
        args: &Value,
        _: &dyn goat_command::WorkspaceRules,
        _: &goat_command::Interrupt,
    ) -> goat_router::ExternalOutcome {
        *self.calls.lock().unwrap() += 1;
        goat_router::ExternalOutcome {
            status: CallStatus::Ok,
            error_kind: None,
            text: format!("found {}", args["q"]),
            changes: None,
            egress: Vec::new(),
            refusals: Vec::new(),
        }
    }
}

fn search(q: &str) -> ToolCall {
    let arguments = json!({"q": q});
    ToolCall {
        index: 0,
        id: "call_1".to_owned(),
        id_generated: false,
        name: "docs__search".to_owned(),
        raw_arguments: arguments.to_string(),
        arguments: Ok(arguments),
    }
}

#[test]
fn always_for_an_mcp_tool_sticks_and_a_deny_rule_still_wins() {
    let f = Fixture::new();
    let calls = Arc::new(Mutex::new(0));
    let outside = Arc::new(OneOutsideTool {
        calls: calls.clone(),
    });
    let mut router = f
        .router("s1", vec![Approval::Always])
        .with_external(outside.clone());
    let first = router.route(&search("one")).unwrap();
    assert_eq!(first.status, CallStatus::Ok, "{}", first.result);
    assert_eq!(
        first.decision,
        Some(goat_store::CallDecision::AskAllowedAlways)
    );
    assert!(
        f.asked()[0].prompt.contains("MCP server 'docs'"),
        "{:?}",
        f.asked()
    );
    // A new session, a new router: the saved rule answers; no one is asked.
    let mut later = f.router("s2", vec![]).with_external(outside.clone());
    let second = later.route(&search("two")).unwrap();
    assert_eq!(second.status, CallStatus::Ok, "{}", second.result);
    assert_eq!(second.decision, Some(goat_store::CallDecision::Allow));
    assert_eq!(f.asked().len(), 1, "{:?}", f.asked());
    let rules = f.rules();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0].tool.as_deref(), Some("docs__search"));
    // A deny rule for the tool wins over the remembered allow, unasked.
    PermissionDb::open(&f.db)
        .unwrap()
        .add(NewRule {
            tool: Some("docs__search".to_owned()),
            pattern: ".".to_owned(),
            access: Access::Write,
            effect: Effect::Deny,
            scope: Scope::Persistent,
            workspace: None,
            created_at: 0,
            expires_at: None,
            command: None,
        })
        .unwrap();
    let third = later.route(&search("three")).unwrap();
    assert_eq!(third.status, CallStatus::Denied, "{}", third.result);
    assert_eq!(
        *calls.lock().unwrap(),
        2,
        "the denied call never reached the server"
    );
    assert_eq!(f.asked().len(), 1);
}

/// A plugin's spec recorded at add (issue 38) that is not what its
/// component declares (here its path fields emptied, so the gate would see
/// no path) decides nothing: the router compiles and checks the tool
/// before the gate, so the person is never asked, no rule is remembered
/// and nothing is written.
#[test]
fn a_recorded_spec_that_lies_is_refused_before_the_gate_asks() {
    let f = Fixture::new();
    let sandbox = sandbox();
    let write_file = &goat_sandbox::builtin::PEN_TOOLS[4];
    assert_eq!(write_file.name, "write_file");
    let mut lying = sandbox.load_builtin(write_file).unwrap().spec().clone();
    lying.path_fields.clear();
    let tool = sandbox
        .load_plugin_declared("w", write_file.wasm.to_vec(), lying)
        .unwrap()
        .exposed_as("w__write_file")
        .unwrap();
    let mut router = f.router_with(&f.ws, "s1", sandbox, vec![tool], vec![Approval::Always]);
    let mut call = write("a.txt", "pwned");
    call.name = "w__write_file".to_owned();
    match router.route(&call) {
        Err(goat_sandbox::SandboxError::NotATool { reason, .. }) => {
            assert!(reason.contains("not the one recorded"), "{reason}")
        }
        other => panic!("expected NotATool, got {other:?}"),
    }
    assert!(
        f.asked().is_empty(),
        "the person was asked: {:?}",
        f.asked()
    );
    assert!(
        f.rules().is_empty(),
        "a rule was remembered: {:?}",
        f.rules()
    );
    assert!(!f.ws.join("a.txt").exists());
}

/// A call the rules allow, about which only a person's hook asks: the
/// person is asked, and no "session" or "always" is offered, so no rule
/// for the whole workspace can come of a question the rules never asked.
#[test]
fn a_question_only_a_hook_asks_is_answered_for_that_call_alone() {
    if goat_router::command_support().is_err() {
        eprintln!("note: skipped: hooks cannot be contained here");
        return;
    }
    let f = Fixture::new();
    std::fs::write(f.ws.join("a.txt"), "text\n").unwrap();
    let hook = f._dir.path().join("asks.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\ncat > /dev/null\nprintf '%s' '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"sure?\"}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let argv = vec![hook.display().to_string()];
    let pins = goat_hooks::pin::take(
        goat_hooks::Event::PreToolUse,
        None,
        goat_hooks::pin::Runs::Command(&argv),
        30,
    )
    .unwrap();
    let entry = goat_hooks::HookEntry {
        name: "asks".to_owned(),
        event: goat_hooks::Event::PreToolUse,
        matcher: None,
        argv,
        component: None,
        timeout_secs: 30,
        pins,
    };
    let hooks = goat_hooks::Hooks::new(vec![entry], goat_router::default_containment(&f.ws, None));
    let mut router = f.router("s1", vec![Approval::Always]).with_hooks(hooks);
    let args = r#"{"path": "a.txt"}"#;
    let routed = router
        .route(&ToolCall {
            index: 0,
            id: "c".into(),
            id_generated: false,
            name: "read_file".into(),
            raw_arguments: args.into(),
            arguments: goat_engine::parse_arguments(args),
        })
        .unwrap();
    assert_eq!(routed.status, CallStatus::Ok, "{}", routed.result);
    let asked = f.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].prompt.contains("the hook 'asks' asks"),
        "{asked:?}"
    );
    assert!(!asked[0].can_remember, "{asked:?}");
    assert!(f.rules().is_empty(), "{:?}", f.rules());
}
