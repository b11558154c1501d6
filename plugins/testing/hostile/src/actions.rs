//! The hostile guest's actions, shared by `hostile` (declares read access)
//! and `hostile_rw` (declares read-write), so escape attempts can be made
//! through both a read-only and a read-write preopen.

use goat_pen::args::Args;
use goat_pen::{Access, ToolError, ToolResult, ToolSpec};
use wasip2::clocks::wall_clock::Datetime;
use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, NewTimestamp, OpenFlags, PathFlags};

fn root() -> ToolResult<Descriptor> {
    get_directories()
        .into_iter()
        .next()
        .map(|(d, _)| d)
        .ok_or_else(|| ToolError::PermissionDenied("no preopen".to_owned()))
}

fn raw(e: wasip2::filesystem::types::ErrorCode) -> ToolError {
    // Report the host's own error code untranslated, so tests see exactly
    // what the sandbox said.
    ToolError::Io(format!("wasi error: {}", e.name()))
}

/// The spec, under `name`, declaring `access`.
pub fn spec(name: &str, access: Access) -> ToolSpec {
    goat_pen::spec(
        name,
        "Test guest: attempts escapes and resource abuse on request.",
        serde_json::json!({
            "type": "object",
            "properties": {
                "action": {"type": "string"},
                "path": {"type": "string"},
                "content": {"type": "string"},
                "bytes": {"type": "integer"},
                "then": {"type": "string"}
            }
        }),
        access,
        &["path"],
    )
}

/// Does what `arguments` asks, with no safety checks of its own.
pub fn invoke(arguments: &str) -> ToolResult<String> {
    let args = Args::parse(arguments, &["action", "path", "content", "bytes", "then"])?;
    match args.string("action")? {
        // Raw open + read of any path, no normalisation.
        "read" => {
            let fd = root()?
                .open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    args.string("path")?,
                    OpenFlags::empty(),
                    DescriptorFlags::READ,
                )
                .map_err(raw)?;
            let (data, _) = fd.read(1 << 20, 0).map_err(raw)?;
            Ok(String::from_utf8_lossy(&data).into_owned())
        }
        // Raw create + write of any path.
        "write" => {
            let fd = root()?
                .open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    args.string("path")?,
                    OpenFlags::CREATE | OpenFlags::TRUNCATE,
                    DescriptorFlags::WRITE,
                )
                .map_err(raw)?;
            fd.write(args.opt_string("content")?.unwrap_or("pwned").as_bytes(), 0)
                .map_err(raw)?;
            Ok("wrote".to_owned())
        }
        // Opens a file for reading, then changes its modification time
        // through that descriptor: a change the open never asked for.
        "touch-through-read" => {
            let fd = root()?
                .open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    args.string("path")?,
                    OpenFlags::empty(),
                    DescriptorFlags::READ,
                )
                .map_err(raw)?;
            fd.set_times(
                NewTimestamp::NoChange,
                NewTimestamp::Timestamp(Datetime {
                    seconds: 0,
                    nanoseconds: 0,
                }),
            )
            .map_err(raw)?;
            Ok("touched".to_owned())
        }
        // Truncates and half-writes a file, then fails as `then` says
        // (`loop`: until the timeout; `panic`; `error`): the file must be
        // left as it was.
        "write-then" => {
            let fd = root()?
                .open_at(
                    PathFlags::SYMLINK_FOLLOW,
                    args.string("path")?,
                    OpenFlags::CREATE | OpenFlags::TRUNCATE,
                    DescriptorFlags::WRITE,
                )
                .map_err(raw)?;
            fd.write(b"half", 0).map_err(raw)?;
            match args.string("then")? {
                "loop" => {
                    let mut n = 0u64;
                    loop {
                        n = std::hint::black_box(n.wrapping_add(1));
                    }
                }
                "panic" => panic!("hostile guest panics mid-write on purpose"),
                _ => Err(ToolError::Io("failed mid-write on purpose".to_owned())),
            }
        }
        "mkdir" => {
            root()?
                .create_directory_at(args.string("path")?)
                .map_err(raw)?;
            Ok("created".to_owned())
        }
        "unlink" => {
            root()?.unlink_file_at(args.string("path")?).map_err(raw)?;
            Ok("removed".to_owned())
        }
        "symlink" => {
            root()?
                .symlink_at(args.string("content")?, args.string("path")?)
                .map_err(raw)?;
            Ok("linked".to_owned())
        }
        // Nothing: measures what the sandbox itself costs per call.
        "noop" => Ok(String::new()),
        // Opens descriptors and never closes them.
        "leak" => {
            let root = root()?;
            let mut held = Vec::new();
            loop {
                let fd = root
                    .open_at(
                        PathFlags::empty(),
                        ".",
                        OpenFlags::DIRECTORY,
                        DescriptorFlags::READ,
                    )
                    .map_err(raw)?;
                held.push(fd);
            }
        }
        // Recurses until the stack runs out.
        "recurse" => Ok(format!("{}", recurse(std::hint::black_box(1)))),
        "loop" => {
            let mut n = 0u64;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        "alloc" => {
            let bytes = args.opt_u64("bytes")?.unwrap_or(1 << 30) as usize;
            let v = std::hint::black_box(vec![1u8; bytes]);
            Ok(format!("allocated {}", v.len()))
        }
        "print" => {
            let out = wasip2::cli::stdout::get_stdout();
            let line = [b'x'; 4096];
            loop {
                // Ignore errors: a hostile guest keeps trying.
                let _ = out.blocking_write_and_flush(&line);
            }
        }
        "big-result" => {
            let bytes = args.opt_u64("bytes")?.unwrap_or(8 << 20) as usize;
            Ok("y".repeat(bytes))
        }
        "panic" => panic!("hostile guest panics on purpose"),
        other => Err(ToolError::InvalidArguments(format!(
            "unknown action {other}"
        ))),
    }
}

fn recurse(n: u64) -> u64 {
    if n == u64::MAX {
        return 0;
    }
    let frame = std::hint::black_box([n; 64]);
    frame[(n % 64) as usize].wrapping_add(recurse(n + 1))
}
