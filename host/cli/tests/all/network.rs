//! `commands.network` as a list (ADR-0082), through the real binary, all on
//! loopback: a listed `localhost:PORT` is fetched through GOAT's proxy by
//! curl, Python's urllib and cargo; a connection that goes around the
//! proxy, a server on a port not listed, and a listed name that resolves
//! to this machine are refused, each server checked for what it received;
//! every decision is in the store against its call and named in the
//! result; the same holds for an unprivileged user. Each case runs in a
//! namespace view (where one can be made) and with Landlock only.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::{Env, GoatRun, Nobody, call_reply, content_reply, have, json_out, shown, text};

/// An HTTP server on 127.0.0.1 that answers every request with
/// `served by PORT PATH` and records each request head it received.
pub(crate) struct Server {
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let record = record.clone();
                std::thread::spawn(move || {
                    stream
                        .set_read_timeout(Some(Duration::from_secs(5)))
                        .unwrap();
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => break,
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                    record.lock().unwrap().push(head);
                    let body = format!("served by {port} {path}\n");
                    let _ = stream.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                });
            }
        });
        Self { port, seen }
    }

    /// Every request head received so far.
    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// The containments to try here: Landlock only always, a view where one
/// can be made.
fn modes(env: &Env) -> Vec<&'static str> {
    let specs = json_out(&env.run(&["tools", "list", "--json"]));
    let view = specs
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "run_command" && s["containment"] == "namespace");
    if view {
        vec!["namespace", "landlock"]
    } else {
        eprintln!("no namespace view here: Landlock only");
        vec!["landlock"]
    }
}

/// `goat tools call run_command` with `network` as commands.network.
fn proxied(env: &Env, mode: &str, network: &str, command: &str) -> Output {
    let mut cmd = env.cmd();
    cmd.env("GOAT_COMMANDS_NETWORK", network)
        .env("GOAT_COMMANDS_CONTAINMENT", mode)
        .args(["tools", "call", "run_command"])
        .arg(json!({ "command": command }).to_string())
        .args(["--workspace", env.ws_str(), "--allow-commands"]);
    cmd.output().unwrap()
}

/// A Cargo project depending on a crate from a sparse registry at
/// `localhost:port`: resolving it makes cargo fetch the index's
/// `config.json`.
fn cargo_project(ws: &Path, port: u16) {
    std::fs::create_dir_all(ws.join("proj/src")).unwrap();
    std::fs::create_dir_all(ws.join("proj/.cargo")).unwrap();
    std::fs::write(
        ws.join("proj/Cargo.toml"),
        // Its own workspace: cargo looks no further up (the test's
        // directory is inside GOAT's checkout, unreadable to a command).
        "[package]\nname = \"proj\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [workspace]\n\n[dependencies]\nfoo = { version = \"1\", registry = \"local\" }\n",
    )
    .unwrap();
    std::fs::write(ws.join("proj/src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        ws.join("proj/.cargo/config.toml"),
        format!("[registries.local]\nindex = \"sparse+http://localhost:{port}/index/\"\n"),
    )
    .unwrap();
}

#[test]
fn a_listed_localhost_port_is_fetched_through_the_proxy_by_curl_python_and_cargo() {
    let env = Env::new();
    let cargo = have("cargo");
    for mode in modes(&env) {
        let server = Server::start();
        let port = server.port;
        cargo_project(&env.ws, port);
        let command = format!(
            "curl -sS http://localhost:{port}/curl; \
             python3 -c 'import urllib.request as u; \
             print(u.urlopen(\"http://localhost:{port}/python\").read().decode())'; \
             {}",
            if cargo {
                // A cargo home of its own: with Landlock only, ~/.cargo is
                // read-only and cargo writes its index cache there first.
                "cd proj && CARGO_HOME=$TMPDIR/cargo-home cargo generate-lockfile 2>&1 | tail -2"
            } else {
                "true"
            }
        );
        let out = proxied(&env, mode, &format!("localhost:{port}"), &command);
        let result = shown(&out);
        assert!(
            result.contains(&format!("served by {port} /curl")),
            "{mode}: {result}"
        );
        assert!(
            result.contains(&format!("served by {port} /python")),
            "{mode}: {result}"
        );
        assert!(!result.contains("refused"), "{mode}: {result}");
        let seen = server.seen();
        let mut paths: Vec<&str> = seen.iter().filter_map(|h| h.split(' ').nth(1)).collect();
        paths.sort_unstable();
        let mut want = vec!["/curl", "/python"];
        if cargo {
            want.push("/index/config.json");
        }
        want.sort_unstable();
        assert_eq!(paths, want, "{mode}: {seen:?}\n{result}");
        // Each came through the proxy: origin form, the Host of the URI,
        // and the proxy's one request per connection.
        for head in &seen {
            assert!(
                head.contains(&format!("Host: localhost:{port}\r\n"))
                    && head.contains("Connection: close\r\n")
                    && !head.contains("Proxy-"),
                "{mode}: {head}"
            );
        }
    }
}

#[test]
fn a_connection_around_the_proxy_and_a_server_on_an_unlisted_port_get_nothing() {
    let env = Env::new();
    // Node's own fetch reads no proxy variable (npm does): it goes
    // straight for the address, and gets nowhere.
    let node = have("node");
    for mode in modes(&env) {
        let listed = Server::start();
        let unlisted = Server::start();
        let (a, b) = (listed.port, unlisted.port);
        let node = if node {
            format!(
                "node -e 'fetch(\"http://localhost:{a}/node\").then(r => console.log(r.status), \
                 e => console.log(\"node fetch failed\", e.cause && e.cause.code))'"
            )
        } else {
            "true".to_owned()
        };
        let command = format!(
            "curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{a}/around; \
             python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {a}), 3)' \
               2>&1 | tail -1; \
             curl -sS --max-time 5 http://localhost:{b}/unlisted; \
             curl -sS --max-time 5 https://localhost:{b}/tunnel 2>&1; \
             curl -sS --max-time 5 http://localhost:{a}/listed; {node}"
        );
        let out = proxied(&env, mode, &format!("localhost:{a}"), &command);
        let result = shown(&out);
        // What was allowed arrived, so the test can see a connection when
        // there is one.
        assert!(
            result.contains(&format!("served by {a} /listed")),
            "{mode}: {result}"
        );
        let seen_a: Vec<String> = listed.seen();
        assert_eq!(seen_a.len(), 1, "{mode}: {seen_a:?}");
        assert!(seen_a[0].starts_with("GET /listed "), "{mode}: {seen_a:?}");
        assert_eq!(unlisted.seen(), Vec::<String>::new(), "{mode}");
        assert!(!result.contains("/around"), "{mode}: {result}");
        assert!(!result.contains("/node"), "{mode}: {result}");
        assert!(
            result.contains("CONNECT tunnel failed, response 403"),
            "{mode}: {result}"
        );
        // The result names the host refused and the setting that would
        // allow it.
        assert!(
            result.contains(&format!(
                "localhost:{b}: not listed in commands.network; to allow it, add \
                 \"localhost:{b}\" to commands.network (2 times)"
            )),
            "{mode}: {result}"
        );
    }
}

/// A name other than `localhost` that this machine's hosts file maps to
/// 127.0.0.1 (a container's or a VM's own name often is), if there is one.
fn loopback_name() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    hosts.lines().find_map(|line| {
        let mut words = line.split('#').next()?.split_whitespace();
        (words.next()? == "127.0.0.1")
            .then(|| words.find(|w| !w.contains("localhost")).map(str::to_owned))
            .flatten()
    })
}

/// Runs `command` with `network`, where `name` resolves to 127.0.0.1: a
/// name the hosts file already maps there, or else `registry.test` in a
/// hosts file bound over `/etc/hosts` in a mount namespace of goat's own
/// (root only).
fn with_name_at_loopback(
    env: &Env,
    name: &str,
    mode: &str,
    network: &str,
    command: &str,
) -> Output {
    if name != "registry.test" {
        return proxied(env, mode, network, command);
    }
    let hosts = env.root.join("hosts");
    let mut lines = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    lines.push_str("\n127.0.0.1 registry.test\n");
    std::fs::write(&hosts, lines).unwrap();
    let mut cmd = Command::new("unshare");
    env.isolate(&mut cmd);
    cmd.env("GOAT_COMMANDS_NETWORK", network)
        .env("GOAT_COMMANDS_CONTAINMENT", mode)
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind \"$0\" /etc/hosts && exec \"$@\"")
        .arg(&hosts)
        .arg(env!("CARGO_BIN_EXE_goat"))
        .args(["tools", "call", "run_command"])
        .arg(json!({ "command": command }).to_string())
        .args(["--workspace", env.ws_str(), "--allow-commands"]);
    cmd.output().unwrap()
}

#[test]
fn a_listed_name_that_resolves_to_this_machine_is_refused_unless_the_address_is_listed() {
    let env = Env::new();
    let name = match loopback_name() {
        Some(name) => name,
        None if rustix::process::geteuid().is_root() && have("unshare") => {
            "registry.test".to_owned()
        }
        None => {
            eprintln!(
                "skipped: no name but localhost maps to 127.0.0.1 here, and making one \
                 needs root and unshare"
            );
            return;
        }
    };
    for mode in modes(&env) {
        let server = Server::start();
        let port = server.port;
        let command = format!(
            "curl -sS --max-time 5 http://{name}:{port}/rebound; \
             curl -sS --max-time 5 https://{name}:{port}/tunnel 2>&1"
        );
        let out = with_name_at_loopback(&env, &name, mode, &format!("{name}:{port}"), &command);
        let result = shown(&out);
        if mode == "namespace" && result.contains("a namespace view cannot be made here") {
            // A bind mount inside /etc (the hosts file here, as in Docker)
            // keeps the view from binding /etc until it binds it
            // recursively; Landlock only still runs.
            eprintln!("skipped the view with a hosts file bound over /etc/hosts: {result}");
            continue;
        }
        assert_eq!(server.seen(), Vec::<String>::new(), "{mode}: {result}");
        assert!(
            result.contains(&format!(
                "{name}:{port}: it resolved to 127.0.0.1, a loopback address (this \
                 machine), which is not listed; a listed name reaches such an address only \
                 when the address is listed too: add \"127.0.0.1:{port}\" to commands.network \
                 (2 times)"
            )),
            "{mode}: {result}"
        );
        // Listing the address as well lets the name through.
        let out = with_name_at_loopback(
            &env,
            &name,
            mode,
            &format!("{name}:{port},127.0.0.1:{port}"),
            &format!("curl -sS --max-time 5 http://{name}:{port}/listed"),
        );
        let result = shown(&out);
        assert!(
            result.contains(&format!("served by {port} /listed")),
            "{mode}: {result}"
        );
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{mode}: {seen:?}");
        assert!(
            seen[0].contains(&format!("Host: {name}:{port}\r\n")),
            "{seen:?}"
        );
    }
}

/// The hostile review of ADR-0082: with Landlock only, a TCP socket that
/// listens without a `bind` got a port on every address of the host
/// (Landlock's bind rule is not asked), reachable from outside. Now
/// `listen` is refused there; in a view it listens in the command's own
/// network namespace, which nothing outside reaches.
#[test]
fn listen_is_refused_with_landlock_only_and_kept_in_the_views_namespace() {
    let env = Env::new();
    for mode in modes(&env) {
        let out = proxied(
            &env,
            mode,
            "localhost:9",
            "python3 -c \"import socket, time\ns = socket.socket()\ntry:\n    s.listen()\n\
             except OSError as e:\n    print('refused', e.errno)\nelse:\n    \
             print('listening', s.getsockname()[1], flush=True); time.sleep(2)\"",
        );
        let said = shown(&out);
        if mode == "landlock" {
            assert!(said.contains("refused 1"), "{mode}: {said}");
            continue;
        }
        // In its own network namespace, which has no route out and
        // nothing outside can reach (the other tests here), it may.
        assert!(said.contains("listening "), "{mode}: {said}");
    }
}

/// A scripted run: every decision is in the store against the call, the
/// model is shown the refusal, and `goat sessions show` lists them.
#[tokio::test(flavor = "multi_thread")]
async fn every_decision_is_recorded_against_the_call_and_the_model_sees_the_refusal() {
    let listed = Server::start();
    let (a, b) = (listed.port, listed.port.wrapping_add(1).max(1024));
    let command = format!(
        "curl -sS http://localhost:{a}/ok; curl -sS --max-time 5 http://localhost:{b}/no; \
         curl -sS --max-time 5 http://127.0.0.1:{a}/literal"
    );
    let run = GoatRun::builder()
        .replies([
            call_reply(
                "c1",
                "run_command",
                &json!({ "command": command }).to_string(),
            ),
            content_reply("Done."),
        ])
        .var("GOAT_COMMANDS_NETWORK", &format!("localhost:{a}"))
        .arg("--allow-commands")
        .run("fetch")
        .await;
    // The proxy refused two destinations: the run says so (issue 36).
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    // The model read the refusals, with what would allow them.
    let sent = run.request_text(1);
    assert!(sent.contains(&format!("served by {a} /ok")), "{sent}");
    assert!(
        sent.contains(&format!("localhost:{b}: not listed in commands.network")),
        "{sent}"
    );
    assert!(
        sent.contains(&format!(
            "127.0.0.1:{a}: an IP address that is not listed; to allow it, add \
             \\\"127.0.0.1:{a}\\\" to commands.network"
        )),
        "{sent}"
    );
    let conn = rusqlite::Connection::open(&run.env.db).unwrap();
    let rows: Vec<(String, String, i64, String, Option<String>)> = conn
        .prepare(
            "SELECT c.tool, e.host, e.port, e.verdict, e.entry FROM egress_decisions e
             JOIN tool_calls c ON c.id = e.call_row ORDER BY e.id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let call = |host: &str, port: u16, verdict: &str, entry: &str| {
        (
            "run_command".to_owned(),
            host.to_owned(),
            i64::from(port),
            verdict.to_owned(),
            Some(entry.to_owned()),
        )
    };
    assert_eq!(
        rows,
        [
            call("localhost", a, "allowed", &format!("localhost:{a}")),
            call("localhost", b, "not-listed", &format!("localhost:{b}")),
            call("127.0.0.1", a, "ip-literal", &format!("127.0.0.1:{a}")),
        ]
    );
    let session = run.sessions()[0]["id"].as_str().unwrap().to_owned();
    let show = text(&run.env.run(&["sessions", "show", &session]).stdout);
    assert!(show.contains("network, through GOAT's proxy:"), "{show}");
    assert!(
        show.contains(&format!("allowed http localhost:{a} by localhost:{a}, at ")),
        "{show}"
    );
    assert!(
        show.contains(&format!(
            "refused http localhost:{b} (not-listed): not listed"
        )),
        "{show}"
    );
    // `--json` carries them too, on the call that made them.
    let shown = json_out(&run.env.run(&["sessions", "show", &session, "--json"]));
    let network = &shown["turns"][0]["rounds"][0]["tool_calls"][0]["network"];
    let verdicts: Vec<(&str, u64, &str)> = network
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["host"].as_str().unwrap(),
                e["port"].as_u64().unwrap(),
                e["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("localhost", u64::from(a), "allowed"),
            ("localhost", u64::from(b), "not-listed"),
            ("127.0.0.1", u64::from(a), "ip-literal"),
        ],
        "{shown}"
    );
    assert_eq!(network[1]["entry"], format!("localhost:{b}"));
}

/// As an unprivileged user (made by the test; CI runs as root), a listed
/// port is fetched through the proxy and a direct connection refused, in
/// a view and with Landlock only.
#[test]
fn as_an_unprivileged_user_only_the_proxy_is_reachable() {
    let Some(nobody) = Nobody::new("goat-nobody-net") else {
        return;
    };
    let env = Env::new();
    let server = Server::start();
    let other = Server::start();
    let port = server.port;
    for mode in modes(&env) {
        let out = nobody.run_command(
            &json!({"command": format!(
                "id -u; curl -sS --max-time 5 http://localhost:{port}/nobody; \
                 curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{}/around",
                other.port
            )}),
            &[
                ("GOAT_COMMANDS_NETWORK", &format!("localhost:{port}")),
                ("GOAT_COMMANDS_CONTAINMENT", mode),
            ],
        );
        let result = shown(&out);
        if mode == "namespace" && result.contains("not offered") {
            eprintln!("skipped the view: none for an unprivileged user here: {result}");
            continue;
        }
        if mode == "landlock" && result.contains("could not be started: Operation not permitted") {
            // Landlock-only containment cannot start any command as an
            // unprivileged user yet (dropping the capability bounding set
            // needs CAP_SETPCAP), network or not.
            eprintln!("skipped Landlock only: no command starts unprivileged: {result}");
            continue;
        }
        assert!(result.starts_with("exit code"), "{mode}: {result}");
        assert!(result.contains("\n65534\n"), "{mode}: {result}");
        assert!(
            result.contains(&format!("served by {port} /nobody")),
            "{mode}: {result}"
        );
        assert_eq!(other.seen(), Vec::<String>::new(), "{mode}");
    }
    let _ = std::fs::remove_dir_all(&nobody.base);
}
