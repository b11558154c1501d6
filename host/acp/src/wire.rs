//! The editor's end of the connection: stdin read as lines of bytes, and
//! stdout written a line at a time.
//!
//! The ACP crate's own stdio transport reads lines as UTF-8 and ends the
//! connection at the first line that is not, killing the agent mid-turn
//! (issue 39: the turn stayed `running` in the store and the prompt was
//! never answered). Here a line that is not UTF-8 is replaced by one that
//! is not JSON, so the client gets JSON-RPC's parse error for it, as for
//! any other line that is not JSON-RPC, and the agent goes on.

use std::io::{self, BufRead, Write};
use std::pin::Pin;

use agent_client_protocol::Lines;
use futures::{Sink, Stream};

/// What stands for a line that was not UTF-8: not JSON, so it is answered
/// with a parse error.
const NOT_UTF8: &str = "(a line that is not UTF-8)";

type Incoming = Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>;
type Outgoing = Pin<Box<dyn Sink<String, Error = io::Error> + Send>>;

/// The ACP transport over this process's stdin and stdout.
pub(crate) fn stdio() -> Lines<Outgoing, Incoming> {
    Lines::new(Box::pin(outgoing()), Box::pin(incoming()))
}

/// stdin's lines, each without its `\n` (or `\r\n`), read on a thread of
/// their own (a read of stdin cannot be cancelled); ends at end of file.
fn incoming() -> impl Stream<Item = io::Result<String>> + Send + 'static {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        loop {
            let mut line = Vec::new();
            let item = match stdin.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => Ok(text_of(line)),
                Err(e) => Err(e),
            };
            let failed = item.is_err();
            if tx.unbounded_send(item).is_err() || failed {
                break;
            }
        }
    });
    rx
}

/// One line read from stdin as the connection takes it.
fn text_of(mut line: Vec<u8>) -> String {
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    String::from_utf8(line).unwrap_or_else(|_| NOT_UTF8.to_owned())
}

/// stdout, one line per message, flushed after each.
fn outgoing() -> impl Sink<String, Error = io::Error> + Send + 'static {
    futures::sink::unfold((), async |(), line: String| {
        // A blocking write, off the runtime's async path: an editor slow to
        // read must not stall the other tasks on this worker.
        tokio::task::block_in_place(|| {
            let mut out = io::stdout().lock();
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            out.flush()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_becomes_one_that_is_not_json() {
        assert_eq!(text_of(b"{\"a\": 1}\r\n".to_vec()), "{\"a\": 1}");
        assert_eq!(text_of(b"{\"a\": 1}".to_vec()), "{\"a\": 1}");
        let bad = text_of(b"{\"a\": \"\xff\"}\n".to_vec());
        assert_eq!(bad, NOT_UTF8);
        assert!(serde_json::from_str::<serde_json::Value>(&bad).is_err());
    }
}
