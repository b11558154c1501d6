//! The walking tools on a realistic tree against ripgrep and fd, through
//! the real sandboxed call, in one run.
//!
//! The tree (generated, or `GOAT_BENCH_TREE=path` to use one): source-like
//! files in nested directories, a `.gitignore`d `node_modules/` and
//! `target/`, a few binary files, and a `.git/` so that ripgrep and fd
//! honour the ignore files too. Sizes in MB from `GOAT_BENCH_SIZES`
//! (default `10`; `10,100,1000` shows growth); `GOAT_BENCH_ROUNDS` sets the
//! rounds (default 7); `GOAT_BENCH_FILE_KB` the average source file size
//! (default 6; 14, as in the crates.io sources, keeps a 1 GB tree under the
//! walks' 100,000-entry cap).
//!
//! Compared, each a median of interleaved rounds, baselines single-threaded:
//! - `search_files` (literal and a regex class) with `include_ignored`
//!   against `rg -j1 -uu`, and with the defaults against `rg -j1`;
//! - `find_files` against `fd -j1 -uu` (or `find`), both walking the whole
//!   tree for a name that few files have;
//! - `list_directory` (depth 10) of one source subtree (under its
//!   1000-entry cap) against `fd -j1 -uu` listing the same subtree;
//! - both walks against `find` too when fd is installed: find starts in
//!   about a millisecond, fd in several, which dominates a small tree.
//!
//! A baseline that is not installed is skipped with a note
//! (`apt-get install ripgrep fd-find`).
//!
//! Run: `cargo bench -p goat-tests --bench search`

#![expect(clippy::unwrap_used, reason = "benchmark")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use goat_sandbox::{Access, Pen, Sandbox, SandboxBuilder, Tool};

/// Rounds per measurement when `GOAT_BENCH_ROUNDS` does not say.
const ROUNDS: usize = 7;

/// Average size of a generated source file when `GOAT_BENCH_FILE_KB` does
/// not say: about what a Rust or JavaScript source file weighs.
const SOURCE_FILE_BYTES: usize = 6 * 1024;

/// Average size of a generated source file: `GOAT_BENCH_FILE_KB` or
/// [`SOURCE_FILE_BYTES`]. At 6 KiB a 1 GB tree holds about 170,000 files,
/// past the walks' 100,000-entry cap; the crates.io sources a Rust build
/// leaves average about 14 KiB a file, which keeps 1 GB under it.
fn source_file_bytes() -> usize {
    std::env::var("GOAT_BENCH_FILE_KB")
        .ok()
        .and_then(|kb| kb.parse::<usize>().ok())
        .map_or(SOURCE_FILE_BYTES, |kb| kb * 1024)
}

/// Files per generated directory, before a new one is started.
const FILES_PER_DIR: usize = 24;

/// The literal searched for: planted once per this many source files, so
/// the hits stay under the tool's 500-match cap up to about 1 GB.
const LITERAL: &str = "unsafe impl Send";
const PLANT_EVERY: usize = 400;

/// A regex with a class that never matches: the whole tree is scanned.
const CLASS_REGEX: &str = "[a-z]+zzqq";

const WORDS: &[&str] = &[
    "value", "buffer", "index", "config", "parser", "token", "stream", "handle", "state", "node",
    "result", "error", "count", "offset", "length", "request", "response", "client", "server",
    "cache", "entry", "table", "record", "field", "schema", "query", "filter", "option", "limit",
];

/// A deterministic pseudo-random sequence (64-bit LCG): the tree is the
/// same in every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.next() % WORDS.len()]
    }
}

/// One source-like file of about `bytes` bytes; `plant` puts the literal in.
fn source_file(rng: &mut Lcg, bytes: usize, plant: bool) -> String {
    let mut text = String::with_capacity(bytes + 128);
    text.push_str("use std::collections::HashMap;\n\n");
    let mut line = 0usize;
    while text.len() < bytes {
        line += 1;
        let (a, b, c, d) = (rng.word(), rng.word(), rng.word(), rng.word());
        match rng.next() % 6 {
            0 => text.push_str(&format!(
                "pub fn {a}_{b}({c}: &mut {d}) -> Result<(), Error> {{\n"
            )),
            1 => text.push_str(&format!(
                "    let {a}_{b} = {c}.{d}({line}, \"{a} {b}\")?;\n"
            )),
            2 => text.push_str(&format!("    // {a} the {b} before the {c} reaches {d}\n")),
            3 => text.push_str(&format!(
                "    if {a}.{b} > {line} {{ return Err(Error::{c}); }}\n"
            )),
            4 => text.push_str("    }\n}\n\n"),
            _ => text.push_str(&format!("    self.{a}.insert({b}, {c}_{d});\n")),
        }
        if plant && line == 7 {
            text.push_str(&format!("{LITERAL} for {a}{b} {{}}\n"));
        }
    }
    text
}

/// Writes a tree of about `mb` megabytes under `root`: 70% sources under
/// `src/`, 20% under an ignored `node_modules/`, 9% under an ignored
/// `target/`, 1% binary files under `assets/`.
fn build_tree(root: &Path, mb: usize) {
    let total = mb * 1024 * 1024;
    let mut rng = Lcg(mb as u64);
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/info/exclude"), "*.local\n").unwrap();
    std::fs::write(root.join(".gitignore"), "node_modules/\ntarget/\n*.log\n").unwrap();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"bench\"\n").unwrap();
    let parts = [
        ("src", total * 70 / 100, "rs"),
        ("node_modules", total * 20 / 100, "js"),
        ("target", total * 9 / 100, "rs"),
    ];
    let mut planted = 0usize;
    let file_bytes = source_file_bytes();
    for (top, bytes, ext) in parts {
        let mut written = 0usize;
        let mut n = 0usize;
        while written < bytes {
            let dir = root.join(format!(
                "{top}/m{}/d{}",
                n / (FILES_PER_DIR * 8),
                (n / FILES_PER_DIR) % 8
            ));
            if n.is_multiple_of(FILES_PER_DIR) {
                std::fs::create_dir_all(&dir).unwrap();
                if top == "src" && n.is_multiple_of(FILES_PER_DIR * 8) {
                    std::fs::write(dir.join("Cargo.toml"), "[package]\n").unwrap();
                }
            }
            let size = file_bytes / 2 + rng.next() % file_bytes;
            let plant = n % PLANT_EVERY == 3;
            planted += usize::from(plant);
            let text = source_file(&mut rng, size, plant);
            written += text.len();
            std::fs::write(dir.join(format!("f{n}.{ext}")), text).unwrap();
            n += 1;
        }
    }
    std::fs::create_dir_all(root.join("assets")).unwrap();
    let mut written = 0usize;
    let mut i = 0usize;
    while written < total / 100 {
        let mut blob: Vec<u8> = (0..64 * 1024).map(|_| rng.next() as u8).collect();
        blob[10] = 0;
        written += blob.len();
        std::fs::write(root.join(format!("assets/img{i}.png")), blob).unwrap();
        i += 1;
    }
    assert!(planted > 0);
}

fn rounds() -> usize {
    std::env::var("GOAT_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(ROUNDS)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The first of `names` found on PATH.
fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// One measured thing: a sandboxed call or a command.
enum Job<'a> {
    Tool { tool: &'a Tool, args: String },
    Command { program: PathBuf, args: Vec<String> },
}

struct Bench<'a> {
    sandbox: &'a Sandbox,
    pen: &'a Pen,
    root: &'a Path,
}

impl Bench<'_> {
    /// Runs `job` once; returns its output text (the tool's result, or the
    /// command's stdout).
    fn run(&self, job: &Job<'_>) -> String {
        match job {
            Job::Tool { tool, args } => self.sandbox.call(tool, args, self.pen).unwrap().unwrap(),
            Job::Command { program, args } => {
                let out = Command::new(program)
                    .args(args)
                    .current_dir(self.root)
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            }
        }
    }

    /// Medians of interleaved rounds of each job, in order.
    fn time(&self, jobs: &[&Job<'_>]) -> Vec<Duration> {
        for job in jobs {
            self.run(job);
        }
        let mut times = vec![Vec::new(); jobs.len()];
        for _ in 0..rounds() {
            for (job, t) in jobs.iter().zip(&mut times) {
                let start = Instant::now();
                std::hint::black_box(self.run(job));
                t.push(start.elapsed());
            }
        }
        times.into_iter().map(median).collect()
    }
}

fn tool_job<'a>(tool: &'a Tool, args: serde_json::Value) -> Job<'a> {
    Job::Tool {
        tool,
        args: args.to_string(),
    }
}

fn command_job(program: &Path, args: &[&str]) -> Job<'static> {
    Job::Command {
        program: program.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    }
}

/// The tool's own count of matching lines, from its summary line.
fn tool_matches(text: &str) -> usize {
    text.lines()
        .find_map(|l| {
            l.strip_prefix('[')?
                .split(" matching line")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn report(what: &str, ours: Duration, theirs: Option<(&str, Duration)>) {
    match theirs {
        Some((name, t)) => println!(
            "  {what:<44} {:>9.1?}  {name:<16} {:>9.1?}  ratio {:>6.2}x",
            ours,
            t,
            ours.as_secs_f64() / t.as_secs_f64()
        ),
        None => println!("  {what:<44} {ours:>9.1?}"),
    }
}

fn main() {
    let rg = which(&["rg"]);
    let fd = which(&["fd", "fdfind"]);
    let find = which(&["find"]);
    if rg.is_none() {
        println!("note: rg is not installed; the ripgrep baselines are skipped");
    }
    if fd.is_none() {
        println!("note: fd/fdfind is not installed; using find for the walk baselines");
    }

    let dir = tempfile::tempdir().unwrap();
    let sandbox = SandboxBuilder::new()
        .cache_dir(dir.path().join("cache"))
        .build()
        .unwrap();
    let load = |name: &str| {
        let builtin = goat_sandbox::builtin::PEN_TOOLS
            .iter()
            .find(|b| b.name == name)
            .unwrap();
        sandbox.load(builtin.name, builtin.wasm).unwrap()
    };
    let (search, find_files, list) = (
        load("search_files"),
        load("find_files"),
        load("list_directory"),
    );

    let trees: Vec<(String, PathBuf)> = match std::env::var_os("GOAT_BENCH_TREE") {
        Some(tree) => vec![("given tree".to_owned(), PathBuf::from(tree))],
        None => std::env::var("GOAT_BENCH_SIZES")
            .unwrap_or_else(|_| "10".to_owned())
            .split(',')
            .map(|mb| {
                let mb: usize = mb.trim().parse().unwrap();
                let root = dir.path().join(format!("tree{mb}"));
                build_tree(&root, mb);
                (format!("{mb} MB tree"), root)
            })
            .collect(),
    };

    for (label, root) in &trees {
        let pen = Pen::new(root, Access::Read).unwrap();
        let bench = Bench {
            sandbox: &sandbox,
            pen: &pen,
            root,
        };
        let files = walk_count(root);
        println!(
            "{label} ({} files, {:.1} MB), median of {} interleaved rounds",
            files.0,
            files.1 as f64 / 1e6,
            rounds()
        );

        for (name, pattern) in [("literal", LITERAL), ("regex class", CLASS_REGEX)] {
            for include_ignored in [true, false] {
                let ours = tool_job(
                    &search,
                    serde_json::json!({"pattern": pattern, "include_ignored": include_ignored}),
                );
                let what = format!(
                    "search_files {name}, {}",
                    if include_ignored {
                        "ignore rules off"
                    } else {
                        "ignore rules on"
                    }
                );
                let Some(rg) = &rg else {
                    report(&what, bench.time(&[&ours])[0], None);
                    continue;
                };
                let mut rg_args = vec!["-j1", "--no-config", "-n"];
                let rg_name = if include_ignored {
                    rg_args.push("-uu");
                    "rg -j1 -uu"
                } else {
                    "rg -j1"
                };
                rg_args.extend(["-e", pattern, "."]);
                let theirs = command_job(rg, &rg_args);
                // Same work: the same matching lines, or the comparison
                // means nothing.
                let (ours_text, rg_text) = (bench.run(&ours), bench.run(&theirs));
                assert_eq!(
                    tool_matches(&ours_text),
                    rg_text.lines().count(),
                    "search_files and {rg_name} disagree:\n{ours_text}"
                );
                let t = bench.time(&[&ours, &theirs]);
                report(&what, t[0], Some((rg_name, t[1])));
            }
        }

        // A name few files have, so both walk the whole tree and neither
        // stops at a result cap.
        let ours = tool_job(
            &find_files,
            serde_json::json!({"pattern": "**/Cargo.toml", "include_ignored": true}),
        );
        let (walk_name, theirs) = match (&fd, &find) {
            (Some(fd), _) => (
                "fd -j1 -uu",
                Some(command_job(fd, &["-j1", "-uu", "-g", "Cargo.toml", "."])),
            ),
            (None, Some(find)) => (
                "find",
                Some(command_job(find, &[".", "-name", "Cargo.toml"])),
            ),
            (None, None) => ("", None),
        };
        report_walk(
            &bench,
            "find_files **/Cargo.toml, ignore off",
            &ours,
            walk_name,
            theirs.as_ref(),
        );
        // find starts faster than fd, so on a small tree it shows more of
        // the walk itself.
        if let (Some(_), Some(find)) = (&fd, &find) {
            let theirs = command_job(find, &[".", "-name", "Cargo.toml"]);
            let what = "find_files **/Cargo.toml, ignore off";
            report_walk(&bench, what, &ours, "find", Some(&theirs));
        }

        // One source subtree, under the listing's 1000-entry cap.
        let sub = "src/m0";
        let ours = tool_job(
            &list,
            serde_json::json!({"path": sub, "depth": 10, "include_ignored": true}),
        );
        let theirs = match (&fd, &find) {
            (Some(fd), _) => Some(command_job(fd, &["-j1", "-uu", ".", sub])),
            (None, Some(find)) => Some(command_job(find, &[sub])),
            (None, None) => None,
        };
        report_walk(
            &bench,
            "list_directory src/m0 depth 10, ignore off",
            &ours,
            walk_name,
            theirs.as_ref(),
        );
        if let (Some(_), Some(find)) = (&fd, &find) {
            let theirs = command_job(find, &[sub, "-maxdepth", "10"]);
            let what = "list_directory src/m0 depth 10, ignore off";
            report_walk(&bench, what, &ours, "find", Some(&theirs));
        }
        println!();
    }
}

fn report_walk(
    bench: &Bench<'_>,
    what: &str,
    ours: &Job<'_>,
    name: &str,
    theirs: Option<&Job<'_>>,
) {
    match theirs {
        Some(theirs) => {
            let t = bench.time(&[ours, theirs]);
            report(what, t[0], Some((name, t[1])));
        }
        None => {
            println!("  note: neither fd nor find is installed; {what} has no baseline");
            report(what, bench.time(&[ours])[0], None);
        }
    }
}

/// Files and bytes in the tree, for the heading.
fn walk_count(root: &Path) -> (usize, u64) {
    let mut stack = vec![root.to_owned()];
    let (mut files, mut bytes) = (0usize, 0u64);
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                files += 1;
                bytes += meta.len();
            }
        }
    }
    (files, bytes)
}
