//! A test guest that sends one `wasi:http` GET to `{"url": ...}` and says
//! what came back: `status N: BODY` (the body's first 64 KiB), or the
//! error code the host answered with; `"times": N` sends it N times and
//! says how many were refused. GOAT sends a plugin's requests only through
//! its egress proxy, to the hosts the person granted; everything else must
//! come back as a refusal. Two ways to wait inside the host forever, which
//! the call's deadline must end: `{"sleep": true}` blocks on a clock
//! pollable that is never ready, `{"stall": true}` writes to a request
//! body it never sends. Never shipped.

use goat_pen::{Access, Guest, ToolError, ToolResult, ToolSpec};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingBody, OutgoingRequest, Scheme};

/// Most body bytes the result carries.
const MAX_BODY: usize = 64 * 1024;

struct WantsHttp;

impl Guest for WantsHttp {
    fn spec() -> ToolSpec {
        goat_pen::spec(
            "wants_http",
            "Test guest: GET a URL through wasi:http.",
            serde_json::json!({
                "type": "object",
                "properties": {"url": {"type": "string"}},
                "required": ["url"],
            }),
            Access::None,
            &[],
        )
    }

    fn invoke(arguments: String) -> ToolResult<String> {
        let value: serde_json::Value = serde_json::from_str(&arguments)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let flag = |key: &str| value.get(key).and_then(serde_json::Value::as_bool) == Some(true);
        if flag("sleep") {
            wasip2::clocks::monotonic_clock::subscribe_duration(u64::MAX).block();
            return Ok("woke".into());
        }
        if flag("stall") {
            let request = OutgoingRequest::new(Fields::new());
            let body = request
                .body()
                .map_err(|()| ToolError::Io("no body".into()))?;
            let stream = body
                .write()
                .map_err(|()| ToolError::Io("no stream".into()))?;
            // blocking-write-and-flush takes 4 KiB at a time; 256 KiB is
            // far more than the body buffers before it is sent.
            let chunk = vec![b'x'; 4096];
            for _ in 0..64 {
                let _ = stream.blocking_write_and_flush(&chunk);
            }
            return Ok("written".into());
        }
        let times = value
            .get("times")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(1);
        let mut refused = 0;
        let mut last = String::new();
        for _ in 0..times {
            last = get(&value)?;
            if last.contains("HttpRequestDenied") {
                refused += 1;
            }
        }
        if times > 1 {
            return Ok(format!("{refused} of {times} refused; last: {last}"));
        }
        Ok(last)
    }
}

/// One GET of the `url` in `value`.
fn get(value: &serde_json::Value) -> ToolResult<String> {
    {
        let url = value
            .get("url")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| ToolError::InvalidArguments("url is required".into()))?;
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err(ToolError::InvalidArguments(
                "url must be http or https".into(),
            ));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let request = OutgoingRequest::new(Fields::new());
        let set = request.set_scheme(Some(&scheme)).is_ok()
            && request.set_authority(Some(authority)).is_ok()
            && request.set_path_with_query(Some(path)).is_ok();
        if !set {
            return Err(ToolError::InvalidArguments(format!("bad url {url}")));
        }
        let body = request
            .body()
            .map_err(|()| ToolError::Io("no request body".into()))?;
        let response = match outgoing_handler::handle(request, None) {
            Ok(response) => response,
            Err(code) => return Ok(format!("refused at once: {code:?}")),
        };
        OutgoingBody::finish(body, None).map_err(|e| ToolError::Io(format!("{e:?}")))?;
        response.subscribe().block();
        let response = match response.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Ok(format!("failed: {code:?}")),
            Some(Err(())) | None => return Err(ToolError::Io("no response".into())),
        };
        let status = response.status();
        let incoming = response
            .consume()
            .map_err(|()| ToolError::Io("no response body".into()))?;
        let stream = incoming
            .stream()
            .map_err(|()| ToolError::Io("no response stream".into()))?;
        let mut bytes = Vec::new();
        while bytes.len() < MAX_BODY {
            match stream.blocking_read(8192) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(_) => break,
            }
        }
        bytes.truncate(MAX_BODY);
        Ok(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&bytes)
        ))
    }
}

goat_pen::export_tool!(WantsHttp);
