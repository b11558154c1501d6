//! https engines: trusted through a CA file, refused with a message that
//! says what to do when the certificate is not trusted or names another
//! host, and a plain-http port at an https URL explained.

use std::path::Path;

use goat_engine::{
    CancellationToken, ChatRequest, EngineClient, EngineConfig, EngineError, Message,
};
use goat_testkit::*;

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
    }
}

fn config(url: String, ca: Option<&Path>) -> EngineConfig {
    let mut c = EngineConfig::new(url, "qwen");
    c.retries = 0;
    c.ca_cert = ca.map(Path::to_path_buf);
    c
}

async fn run(config: EngineConfig) -> Result<goat_engine::Response, EngineError> {
    EngineClient::new(config)?
        .stream_chat(&request(), &CancellationToken::new(), &mut |_| {})
        .await
}

fn ca_file(dir: &tempfile::TempDir, ca: &TestCa) -> std::path::PathBuf {
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, ca.ca_pem()).unwrap();
    path
}

#[tokio::test]
async fn an_https_engine_signed_by_a_ca_given_in_a_file_answers() {
    let ca = TestCa::new();
    let server = ScriptedServer::start_tls(vec![Reply::text("over tls")], &ca).await;
    assert!(server.base_url().starts_with("https://"));
    let dir = tempfile::tempdir().unwrap();
    let response = run(config(server.base_url(), Some(&ca_file(&dir, &ca))))
        .await
        .unwrap();
    assert_eq!(response.content, "over tls");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["messages"][0]["content"], "hi");
}

#[tokio::test]
async fn an_untrusted_certificate_fails_saying_so_and_sends_nothing() {
    let ca = TestCa::new();
    let server = ScriptedServer::start_tls(vec![Reply::text("must not be read")], &ca).await;
    let err = run(config(server.base_url(), None)).await.unwrap_err();
    assert!(matches!(err, EngineError::Certificate { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("TLS certificate"), "{message}");
    assert!(message.contains("UnknownIssuer"), "{message}");
    assert!(message.contains("--ca-cert FILE"), "{message}");
    assert!(
        !err.is_retryable(),
        "a certificate does not change on retry"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_certificate_for_another_host_fails_even_from_a_trusted_ca() {
    let ca = TestCa::for_names(&["engine.example"]);
    let server = ScriptedServer::start_tls(vec![Reply::text("must not be read")], &ca).await;
    let dir = tempfile::tempdir().unwrap();
    let err = run(config(server.base_url(), Some(&ca_file(&dir, &ca))))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Certificate { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("not valid for name"), "{message}");
    assert!(
        message.contains("put a name it lists in the engine URL"),
        "{message}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn an_https_url_at_a_plain_http_port_says_to_use_http() {
    // A plain http server answers a TLS hello as a malformed request.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut hello = [0u8; 512];
        let _ = socket.read(&mut hello).await;
        let _ = socket
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await;
    });
    let err = run(config(url, None)).await.unwrap_err();
    assert!(matches!(err, EngineError::Tls { .. }), "{err:?}");
    assert!(err.to_string().contains("use an http:// URL"), "{err}");
}

#[test]
fn a_fifo_given_as_the_ca_file_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ca.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let result = EngineClient::new(config(
            "https://127.0.0.1:1/v1".to_owned(),
            Some(path.as_path()),
        ));
        let _ = tx.send(result.map(|_| ()));
    });
    // A plain open of a FIFO waits for a writer that never comes.
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("opening the CA file blocked on a FIFO"))
        .unwrap_err();
    assert!(matches!(err, EngineError::CaCert { .. }), "{err:?}");
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn a_ca_file_that_is_missing_or_not_pem_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let not_pem = dir.path().join("key.txt");
    std::fs::write(&not_pem, "this is not a certificate\n").unwrap();
    for (file, says) in [
        (&missing, "No such file"),
        (&not_pem, "holds no PEM certificate"),
    ] {
        let err = EngineClient::new(config(
            "https://127.0.0.1:1/v1".to_owned(),
            Some(file.as_path()),
        ))
        .unwrap_err();
        assert!(matches!(err, EngineError::CaCert { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(&file.display().to_string()), "{message}");
        assert!(message.contains(says), "{message}");
    }
}
