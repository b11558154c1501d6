//! GOAT's MCP client reaching servers, and servers reaching out: a
//! Streamable HTTP server (the Python SDK's) with a bearer token, and a
//! server whose network is a list of hosts, through GOAT's egress proxy.

use std::path::Path;

use serde_json::json;

use super::client::{allow, calling, hostile, servers_dir, tool_result};
use super::sdk_python;
use crate::{GoatRun, shown};

/// The Python SDK's server over Streamable HTTP, guarded by `token`, and
/// its URL.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(python: &Path, token: &str) -> Self {
        let mut child = std::process::Command::new(python)
            .arg(servers_dir().join("sdk_server.py"))
            .args(["http", token])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port: u16 = line.trim().parse().unwrap();
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamable_http_server_with_a_bearer_token_reaches_the_model() {
    let Some(python) = sdk_python() else { return };
    let server = HttpServer::start(&python, "the-token");
    let builder = GoatRun::builder();
    let env = builder.env();
    let out = env.run(&[
        "mcp",
        "add",
        "web",
        "--url",
        &server.url,
        "--bearer-env",
        "WEB_TOKEN",
    ]);
    assert!(out.status.success(), "{}", shown(&out));
    // Without the variable, and with a wrong token: nothing is trusted.
    let out = env.run(&["mcp", "trust", "web", "--yes"]);
    assert!(
        shown(&out).contains("WEB_TOKEN, named for its bearer token, is not set"),
        "{}",
        shown(&out)
    );
    let out = env
        .cmd()
        .args(["mcp", "trust", "web", "--yes"])
        .env("WEB_TOKEN", "wrong")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(shown(&out).contains("401"), "{}", shown(&out));
    let out = env
        .cmd()
        .args(["mcp", "trust", "web", "--yes"])
        .env("WEB_TOKEN", "the-token")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    allow(env, "web__add");
    let run = calling(
        builder.var("WEB_TOKEN", "the-token"),
        &[("web__add", json!({"a": 20, "b": 22}))],
    )
    .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let sum = tool_result(&run, 1);
    assert!(sum.contains("42"), "{sum}");
    // The token is never stored.
    let stored = std::fs::read_to_string(run.env.db.parent().unwrap().join("mcp.json")).unwrap();
    assert!(!stored.contains("the-token"), "{stored}");
    // Plain http is for this machine only.
    let out = run
        .env
        .run(&["mcp", "add", "far", "--url", "http://example.com/mcp"]);
    assert!(
        shown(&out).contains("plain http to another machine"),
        "{}",
        shown(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_reaches_only_its_listed_hosts_through_goats_proxy() {
    use std::io::{Read, Write};
    // Two local web servers: the listed one answers, the other must never
    // be reached.
    let listed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, b) = (
        listed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    std::thread::spawn(move || {
        for mut stream in listed.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 9\r\n\r\nlisted ok");
        }
    });
    other.set_nonblocking(true).unwrap();
    let builder = GoatRun::builder();
    let env = builder.env();
    hostile(
        env,
        "net",
        &["net"],
        &["--allow-host", &format!("localhost:{a}")],
    );
    allow(env, "net__fetch");
    let run = calling(
        builder,
        &[
            (
                "net__fetch",
                json!({"url": format!("http://localhost:{a}/ok")}),
            ),
            (
                "net__fetch",
                json!({"url": format!("http://localhost:{b}/no")}),
            ),
        ],
    )
    .await;
    // The proxy refused a host: the run says so (issue 36), exit 3.
    assert_eq!(run.code(), Some(3), "{}", run.stderr());
    assert_eq!(tool_result(&run, 1), "listed ok");
    let refused = tool_result(&run, 2);
    assert!(refused.starts_with("ERROR"), "{refused}");
    assert!(
        refused.contains(&format!(
            "localhost:{b}: not listed in the server's --allow-host list"
        )),
        "{refused}"
    );
    assert!(other.accept().is_err(), "the unlisted port was reached");
    // Each decision is recorded against the call that made it.
    let conn = rusqlite::Connection::open(&run.env.db).unwrap();
    let rows: Vec<(String, i64, String)> = conn
        .prepare(
            "SELECT c.tool, e.port, e.verdict FROM egress_decisions e
             JOIN tool_calls c ON c.id = e.call_row ORDER BY e.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        [
            ("net__fetch".to_owned(), i64::from(a), "allowed".to_owned()),
            (
                "net__fetch".to_owned(),
                i64::from(b),
                "not-listed".to_owned()
            ),
        ],
        "{rows:?}"
    );
}
