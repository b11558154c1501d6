//! What the person grants a plugin at `goat plugins add` (ADR-0097),
//! through the real binary: hosts its `wasi:http` requests may reach,
//! through GOAT's egress proxy and recorded like a command's; environment
//! keys; limits. The model grants nothing; a grant the plugin cannot use,
//! or past its ceiling, is refused before anything is stored.

use serde_json::json;

use crate::network::Server;
use crate::{Env, GoatRun, call_reply, content_reply, dist, json_out, text};

fn wants_http() -> std::path::PathBuf {
    dist("testing/wants_http.wasm")
}

/// A run (JSON output) whose model calls `web__wants_http` once with each
/// of `calls`, in order, then answers.
fn fetching(calls: &[serde_json::Value]) -> crate::GoatRunBuilder {
    let mut replies: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, args)| call_reply(&format!("c{}", i + 1), "web__wants_http", &args.to_string()))
        .collect();
    replies.push(content_reply("Done."));
    GoatRun::builder().replies(replies).json()
}

/// A plugin granted `localhost:A` reaches it, and nothing else: another
/// port and an IP literal are refused by the proxy, each server checked
/// for what it received; the refusals are in the model's next request,
/// in the store against the call, and make the run end with denials
/// (exit 3; `refusals.rs` checks the denial entry itself).
#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_reaches_only_the_hosts_it_was_granted_through_the_proxy() {
    let granted = Server::start();
    let other = Server::start();
    let (a, b) = (granted.port, other.port);
    let run = fetching(&[
        json!({ "url": format!("http://localhost:{a}/ok") }),
        json!({ "url": format!("http://localhost:{b}/secret") }),
        json!({ "url": format!("http://127.0.0.1:{a}/literal") }),
    ]);
    run.env().add_plugin(
        &wants_http(),
        &["--name", "web", "--allow-host", &format!("localhost:{a}")],
    );
    let run = run.run("fetch").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(run.summary()["outcome"], "completed_with_denials");
    // Only the granted server was reached, once, at the path asked for.
    let seen = granted.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("GET /ok HTTP/1.1"), "{seen:?}");
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    // The model read the answer, and each refusal with what would allow it.
    let sent = run.request_text(3);
    assert!(
        sent.contains(&format!("status 200: served by {a} /ok")),
        "{sent}"
    );
    assert!(
        sent.contains("failed: ErrorCode::HttpRequestDenied"),
        "{sent}"
    );
    assert!(
        sent.contains("GOAT's network proxy refused what this plugin asked for"),
        "{sent}"
    );
    assert!(
        sent.contains(&format!(
            "localhost:{b}: not listed in the plugin's --allow-host grants"
        )),
        "{sent}"
    );
    // Every decision is in the store against its call.
    let conn = rusqlite::Connection::open(&run.env.db).unwrap();
    let rows: Vec<(String, String, i64, String)> = conn
        .prepare(
            "SELECT c.tool, e.host, e.port, e.verdict FROM egress_decisions e
             JOIN tool_calls c ON c.id = e.call_row ORDER BY e.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let row = |host: &str, port: u16, verdict: &str| {
        (
            "web__wants_http".to_owned(),
            host.to_owned(),
            i64::from(port),
            verdict.to_owned(),
        )
    };
    assert_eq!(
        rows,
        [
            row("localhost", a, "allowed"),
            row("localhost", b, "not-listed"),
            row("127.0.0.1", a, "ip-literal"),
        ]
    );
}

/// A plugin granted no host can import `wasi:http`, and every request it
/// makes is refused and recorded; the server never sees it.
#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_granted_no_host_reaches_nothing_and_the_attempt_is_a_denial() {
    let server = Server::start();
    let port = server.port;
    let run = fetching(&[json!({ "url": format!("http://localhost:{port}/x") })]);
    let env = run.env();
    let added = env.run(&[
        "plugins",
        "add",
        wants_http().to_str().unwrap(),
        "--name",
        "web",
        "--yes",
    ]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added.stderr));
    assert!(
        text(&added.stdout).contains("network      none: it can send wasi:http requests"),
        "{}",
        text(&added.stdout)
    );
    let run = run.run("fetch").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert!(server.seen().is_empty());
    let sent = run.request_text(1);
    assert!(
        sent.contains("failed: ErrorCode::HttpRequestDenied"),
        "{sent}"
    );
    assert!(
        sent.contains(&format!(
            "localhost:{port}: not listed in the plugin's --allow-host grants"
        )),
        "{sent}"
    );
}

/// Grants are shown before approval and kept with it; one the plugin
/// cannot use, or past its ceiling, is refused and nothing is stored.
#[test]
fn grants_are_shown_kept_and_refused_when_unusable() {
    let env = Env::new();
    let wc = crate::plugins::wc();
    let env_plugin = dist("testing/wants_env.wasm");
    let cases: [(&std::path::Path, &[&str], &str); 5] = [
        (
            &wc,
            &["--allow-host", "example.com"],
            "it does not import wasi:http/outgoing-handler, so it cannot use --allow-host",
        ),
        (
            &wc,
            &["--env", "HOME"],
            "it does not import wasi:cli/environment, so it cannot use --env",
        ),
        (
            &env_plugin,
            &["--env", "A=B"],
            "'A=B' is not an environment variable name",
        ),
        (
            &env_plugin,
            &["--memory", "4096"],
            "the memory must be from 1 to 1024 MiB",
        ),
        (
            &wants_http(),
            &["--allow-host", "exa mple.com"],
            "--allow-host",
        ),
    ];
    for (file, extra, why) in cases {
        let mut args = vec![
            "plugins",
            "add",
            file.to_str().unwrap(),
            "--yes",
            "--name",
            "p",
        ];
        args.extend_from_slice(extra);
        let out = env.run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{extra:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(err.contains(why), "{extra:?}: {err}");
    }
    assert!(env.stored_plugins().is_empty());
    let out = env.run(&[
        "plugins",
        "add",
        env_plugin.to_str().unwrap(),
        "--yes",
        "--name",
        "envy",
        "--env",
        "LANG",
        "--timeout",
        "90",
        "--memory",
        "256",
        "--wall-clock",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "grants       environment LANG; timeout 90 s; memory 256 MiB; the wall clock"
        ),
        "{}",
        text(&out.stdout)
    );
    let listed = text(&env.run(&["plugins", "list"]).stdout);
    assert!(
        listed.contains("granted environment LANG; timeout 90 s; memory 256 MiB; the wall clock"),
        "{listed}"
    );
    let shown = json_out(&env.run(&["plugins", "inspect", "envy", "--json"]));
    assert_eq!(
        shown["grants"],
        json!({"env": ["LANG"], "timeout_secs": 90, "memory_mib": 256, "wall_clock": true})
    );
}

/// The port of `url` (`https://127.0.0.1:PORT/v1`).
fn port_of(url: &str) -> String {
    url.rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/v1")
        .to_owned()
}

/// `https://` goes through the proxy as a `CONNECT` tunnel, with TLS to
/// the origin checked against the system's roots (here `SSL_CERT_FILE`
/// names a test CA): the origin answers through it; an origin whose
/// certificate no trusted CA signed is refused by the plugin's TLS, and
/// the request never completes.
#[tokio::test(flavor = "multi_thread")]
async fn an_https_request_is_tunnelled_through_the_proxy_and_its_certificate_checked() {
    let ca = goat_testkit::TestCa::for_names(&["localhost"]);
    let origin = goat_testkit::ScriptedServer::start_tls(Vec::new(), &ca).await;
    let port = port_of(&origin.base_url());
    let untrusted = goat_testkit::ScriptedServer::start_tls(
        Vec::new(),
        &goat_testkit::TestCa::for_names(&["localhost"]),
    )
    .await;
    let other = port_of(&untrusted.base_url());
    let url = |port: &str| json!({ "url": format!("https://localhost:{port}/v1/models") });
    let run = fetching(&[url(&port), url(&other)]);
    let env = run.env();
    let ca_file = env.root.join("ca.pem");
    std::fs::write(&ca_file, ca.ca_pem()).unwrap();
    env.add_plugin(
        &wants_http(),
        &[
            "--name",
            "web",
            "--allow-host",
            &format!("localhost:{port}"),
            "--allow-host",
            &format!("localhost:{other}"),
        ],
    );
    let run = run
        .var("SSL_CERT_FILE", ca_file.to_str().unwrap())
        .run("fetch")
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sent = run.request_text(2);
    // The origin's own 404 for a path it does not serve came back over TLS.
    assert!(sent.contains("status 404"), "{sent}");
    assert_eq!(origin.probes().len(), 1, "the origin answered once");
    // The other origin's certificate is not trusted: refused in TLS.
    assert!(
        sent.contains("failed: ErrorCode::TlsProtocolError"),
        "{sent}"
    );
    assert!(untrusted.probes().is_empty());
}

/// A plugin call may make 256 requests; past them each is refused before
/// it reaches the proxy, the server never sees it, and the outcome says
/// how many as a limit (so a flood cannot push a refusal out of the
/// proxy's record unseen).
#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_call_past_its_request_limit_is_refused_and_counted() {
    let server = Server::start();
    let port = server.port;
    let run = fetching(&[json!({ "url": format!("http://localhost:{port}/n"), "times": 300 })]);
    run.env().add_plugin(
        &wants_http(),
        &[
            "--name",
            "web",
            "--allow-host",
            &format!("localhost:{port}"),
        ],
    );
    let run = run.run("fetch").await;
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(server.seen().len(), 256);
    let sent = run.request_text(1);
    assert!(sent.contains("44 of 300 refused"), "{sent}");
    assert!(
        sent.contains("44 wasi:http requests past the 256 a plugin call may make were refused"),
        "{sent}"
    );
    let refused: Vec<String> = run.summary()["denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["source"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(refused.contains(&"limit".to_owned()), "{}", run.summary());
}

/// A granted limit is the call's limit: a plugin granted one second is
/// stopped after one second, where the default would give it thirty.
#[test]
fn a_granted_timeout_is_the_limit_its_calls_run_under() {
    let env = Env::new();
    env.add_plugin(&wants_http(), &["--name", "web", "--timeout", "1"]);
    let out = env.run(&[
        "tools",
        "call",
        "web__wants_http",
        r#"{"url": "x", "sleep": true}"#,
    ]);
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("longer than 1s"), "{err}");
}
