//! Captured guest stdout/stderr with a hard cap.
//!
//! Tools get no inherited stdio. What they print is kept for diagnostics
//! (the tail of stderr goes into a crash report) up to a cap. Unlike
//! wasmtime-wasi's `MemoryOutputPipe`, which reports a full pipe as closed
//! and so lets a guest that ignores errors spin until its timeout, this
//! stream traps the guest the moment it writes past the cap, so the call
//! ends at once with a typed error.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// The trap raised when a guest writes past its stdio cap.
#[derive(Debug, thiserror::Error)]
#[error("guest wrote more than {limit_bytes} bytes to {stream}")]
pub(crate) struct StdioLimitExceeded {
    pub(crate) stream: &'static str,
    pub(crate) limit_bytes: usize,
}

/// A capped in-memory output stream. Clones share the buffer.
#[derive(Clone)]
pub(crate) struct CappedOutput {
    name: &'static str,
    limit_bytes: usize,
    buf: Arc<Mutex<Vec<u8>>>,
    exceeded: Arc<AtomicBool>,
}

impl CappedOutput {
    pub(crate) fn new(name: &'static str, limit_bytes: usize) -> Self {
        Self {
            name,
            limit_bytes,
            buf: Arc::default(),
            exceeded: Arc::default(),
        }
    }

    /// `stdout` or `stderr`.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the guest tried to write past the cap.
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }

    /// The last `n` bytes written, as lossy UTF-8.
    pub(crate) fn tail(&self, n: usize) -> String {
        let buf = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&buf[buf.len().saturating_sub(n)..]).into_owned()
    }

    fn room(&self) -> usize {
        let used = self
            .buf
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        self.limit_bytes.saturating_sub(used)
    }

    fn over(&self) -> StdioLimitExceeded {
        self.exceeded.store(true, Ordering::Relaxed);
        StdioLimitExceeded {
            stream: self.name,
            limit_bytes: self.limit_bytes,
        }
    }

    /// Appends `bytes` if they fit entirely; otherwise records the overflow.
    fn push(&self, bytes: &[u8]) -> Result<(), StdioLimitExceeded> {
        let mut buf = self.buf.lock().unwrap_or_else(PoisonError::into_inner);
        if bytes.len() > self.limit_bytes.saturating_sub(buf.len()) {
            drop(buf);
            return Err(self.over());
        }
        buf.extend_from_slice(bytes);
        Ok(())
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.push(&bytes).map_err(|e| StreamError::Trap(e.into()))
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        match self.room() {
            0 => Err(StreamError::Trap(self.over().into())),
            room => Ok(room),
        }
    }
}

impl tokio::io::AsyncWrite for CappedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(
            self.push(buf)
                .map(|()| buf.len())
                .map_err(std::io::Error::other),
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
