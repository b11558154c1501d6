//! A hook's trust, pinned to every byte it runs (ADR-0098).
//!
//! Codex pins a hook by the hash of its command line; the script that line
//! runs can then be rewritten, by the agent among others, and still run as
//! trusted. GOAT pins the definition (event, matcher, argv, timeout) and
//! the content of every file the hook runs: the program, resolved through
//! links to the file the kernel executes, and every argument that names a
//! regular file (the script an interpreter reads). Before every run the
//! pins are taken again; any difference suspends the hook.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::event::Event;

/// The largest file a hook may run: what is pinned is read whole.
const MAX_PINNED_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// What the person trusted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pins {
    /// sha256 of the definition.
    pub definition: String,
    /// Every file the hook runs, with the sha256 of its content.
    pub files: Vec<PinnedFile>,
}

/// One file a hook runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedFile {
    /// Its path, resolved through links.
    pub path: PathBuf,
    /// sha256 of its content.
    pub sha256: String,
}

/// What a hook runs.
#[derive(Clone, Copy, Debug)]
pub enum Runs<'a> {
    /// A program and its arguments.
    Command(&'a [String]),
    /// A component, by its absolute path.
    Component(&'a Path),
}

/// The sha256 of a definition, over a fixed layout of its parts.
pub fn definition_hash(
    event: Event,
    matcher: Option<&str>,
    runs: Runs<'_>,
    timeout_secs: u64,
) -> String {
    let canonical = match runs {
        Runs::Command(argv) => serde_json::json!({
            "event": event.name(),
            "matcher": matcher,
            "argv": argv,
            "timeout_secs": timeout_secs,
        }),
        Runs::Component(path) => serde_json::json!({
            "event": event.name(),
            "matcher": matcher,
            "component": path.display().to_string(),
            "timeout_secs": timeout_secs,
        }),
    };
    hex(&Sha256::digest(canonical.to_string().as_bytes()))
}

/// The files `argv` runs, resolved: the program (found on `PATH` when it
/// has no `/`) and every argument that names an existing regular file.
/// `Err` says why the program cannot be found.
pub fn files_run(argv: &[String]) -> Result<Vec<PathBuf>, String> {
    let Some(program) = argv.first() else {
        return Err("there is no program to run".to_owned());
    };
    let mut files = vec![resolve_program(program)?];
    for arg in &argv[1..] {
        let path = Path::new(arg);
        if path.is_absolute()
            && let Ok(real) = path.canonicalize()
            && real.is_file()
            && !files.contains(&real)
        {
            files.push(real);
        }
    }
    // What a script's `#!` line runs is run too.
    for interpreter in files.clone().iter().flat_map(|f| interpreters(f)) {
        if !files.contains(&interpreter) {
            files.push(interpreter);
        }
    }
    Ok(files)
}

/// The words of `file`'s `#!` line as written (none when it has none):
/// checked against the workspace before the hook runs, since the kernel
/// runs the interpreter by that path, not by the one pinned.
pub fn shebang_words(file: &Path) -> Vec<String> {
    let mut head = [0u8; 256];
    let Ok(n) = goat_state::fs::open_regular(file)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        .and_then(|mut f| f.read(&mut head))
    else {
        return Vec::new();
    };
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return Vec::new();
    };
    let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// What the `#!` line of `file` runs, resolved: the interpreter, and for
/// `env` the program it looks up on `PATH` (as it finds it now).
fn interpreters(file: &Path) -> Vec<PathBuf> {
    let words = shebang_words(file);
    let mut words = words.iter().map(String::as_str);
    let Some(first) = words.next() else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = resolve_program(first).into_iter().collect();
    if Path::new(first).file_name().is_some_and(|n| n == "env")
        && let Some(program) = words.find(|w| !w.starts_with('-'))
        && let Ok(real) = resolve_program(program)
    {
        found.push(real);
    }
    found
}

/// `program` as the file the kernel would execute: an absolute path
/// resolved through links, or the first executable of that name on
/// `PATH`.
pub fn resolve_program(program: &str) -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(program)).collect())
            .unwrap_or_default()
    };
    candidates
        .iter()
        .filter(|c| c.is_absolute())
        .find_map(|c| {
            let real = c.canonicalize().ok()?;
            executable(&real).then_some(real)
        })
        .ok_or_else(|| {
            format!(
                "'{}' is not an executable file{}",
                program.escape_default(),
                if program.contains('/') {
                    " (give its absolute path)"
                } else {
                    " on PATH"
                }
            )
        })
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The sha256 of `bytes`, in hex.
pub fn bytes_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The sha256 of the file at `path`, read whole (at most 256 MiB).
pub fn file_hash(path: &Path) -> Result<String, String> {
    let file = goat_state::fs::open_regular(path).map_err(|e| e.to_string())?;
    let mut hasher = Sha256::new();
    let mut reader = file.take(MAX_PINNED_FILE_BYTES + 1);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    if total > MAX_PINNED_FILE_BYTES {
        return Err(format!(
            "{} is larger than {MAX_PINNED_FILE_BYTES} bytes",
            path.display()
        ));
    }
    Ok(hex(&hasher.finalize()))
}

/// The pins a definition has now: its hash and every file's.
pub fn take(
    event: Event,
    matcher: Option<&str>,
    runs: Runs<'_>,
    timeout_secs: u64,
) -> Result<Pins, String> {
    let files = match runs {
        Runs::Command(argv) => files_run(argv)?,
        Runs::Component(path) => vec![
            path.canonicalize()
                .map_err(|e| format!("{}: {e}", path.display()))?,
        ],
    };
    let files = files
        .into_iter()
        .map(|path| {
            let sha256 = file_hash(&path)?;
            Ok(PinnedFile { path, sha256 })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Pins {
        definition: definition_hash(event, matcher, runs, timeout_secs),
        files,
    })
}

/// Why a hook's pins no longer hold, if they do not: the first
/// difference, in words for the person.
pub fn changed(trusted: &Pins, now: &Result<Pins, String>) -> Option<String> {
    let now = match now {
        Ok(now) => now,
        Err(why) => return Some(why.clone()),
    };
    if trusted.definition != now.definition {
        return Some("its definition changed".to_owned());
    }
    for file in &now.files {
        match trusted.files.iter().find(|f| f.path == file.path) {
            None => {
                return Some(format!(
                    "it now runs {}, which was not trusted",
                    file.path.display()
                ));
            }
            Some(pinned) if pinned.sha256 != file.sha256 => {
                return Some(format!("{} changed", file.path.display()));
            }
            Some(_) => {}
        }
    }
    trusted
        .files
        .iter()
        .find(|f| !now.files.iter().any(|n| n.path == f.path))
        .map(|gone| format!("{} is gone or moved", gone.path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_rewritten_behind_its_command_line_breaks_the_pin() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let script = dir.path().join("guard.sh");
        std::fs::write(&script, "exit 0\n").unwrap_or_else(|e| panic!("{e}"));
        let command = vec!["sh".to_owned(), script.display().to_string()];
        let argv = Runs::Command(&command);
        let trusted =
            take(Event::PreToolUse, Some("Bash"), argv, 30).unwrap_or_else(|e| panic!("{e}"));
        // The shell and the script, both pinned.
        assert_eq!(trusted.files.len(), 2, "{trusted:?}");
        // A script's interpreter is pinned with it, `env`'s program too.
        std::fs::write(&script, "#!/usr/bin/env sh\nexit 0\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        let direct = vec![script.display().to_string()];
        let pinned = take(Event::PreToolUse, None, Runs::Command(&direct), 30)
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = pinned
            .files
            .iter()
            .filter_map(|f| f.path.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert!(names.iter().any(|n| n == "env"), "{names:?}");
        assert!(
            names.iter().any(|n| n.contains("sh") && n != "guard.sh"),
            "{names:?}"
        );
        std::fs::write(&script, "exit 0\n").unwrap_or_else(|e| panic!("{e}"));
        let same = take(Event::PreToolUse, Some("Bash"), argv, 30);
        assert_eq!(changed(&trusted, &same), None);
        std::fs::write(&script, "exit 2\n").unwrap_or_else(|e| panic!("{e}"));
        let now = take(Event::PreToolUse, Some("Bash"), argv, 30);
        let why = changed(&trusted, &now).unwrap_or_default();
        assert!(why.ends_with("guard.sh changed"), "{why}");
        let other = take(Event::PreToolUse, Some("Write"), argv, 30);
        assert_eq!(
            changed(&trusted, &other).as_deref(),
            Some("its definition changed")
        );
        std::fs::remove_file(&script).unwrap_or_else(|e| panic!("{e}"));
        let gone = take(Event::PreToolUse, Some("Bash"), argv, 30);
        assert!(
            changed(&trusted, &gone).is_some_and(|w| w.contains("gone")),
            "{gone:?}"
        );
    }

    #[test]
    fn a_program_is_found_on_path_or_refused() {
        assert!(resolve_program("sh").is_ok());
        assert!(resolve_program("no-such-program-goat").is_err());
        assert!(resolve_program("./relative").is_err());
    }
}
