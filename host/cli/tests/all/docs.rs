//! The documentation is checked like code: every relative link in
//! README.md, ARCHITECTURE.md and `docs/` leads to a file (and an
//! `#anchor` to a heading in it), and every `goat ...` command line quoted
//! there names a subcommand the binary has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::{Env, text};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// README.md, ARCHITECTURE.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = root();
    let mut out = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// A page split into its prose (code blocks blanked out, so line numbers
/// hold) and the lines of its code blocks, fenced or indented, with their
/// line numbers.
struct Page {
    prose: Vec<String>,
    code: Vec<(usize, String)>,
}

fn split(markdown: &str) -> Page {
    let mut prose = Vec::new();
    let mut code = Vec::new();
    let mut fenced = false;
    let mut previous_blank = true;
    let mut indented = false;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            prose.push(String::new());
            continue;
        }
        // An indented block starts after a blank line and holds while its
        // lines are indented or blank.
        if !fenced {
            let four = line.starts_with("    ") || line.starts_with('\t');
            if four && (previous_blank || indented) {
                indented = true;
            } else if !line.trim().is_empty() {
                indented = false;
            }
        }
        if fenced || indented {
            code.push((i + 1, line.to_owned()));
            prose.push(String::new());
        } else {
            prose.push(line.to_owned());
        }
        previous_blank = line.trim().is_empty();
    }
    Page { prose, code }
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings, numbered as GitHub numbers repeats.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in split(markdown).prose {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of a page's links, inline (`[text](target)`) and by
/// reference (`[name]: target`), each with its line.
fn links(page: &Page) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in page.prose.iter().enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                let target = rest[..end].split_whitespace().next().unwrap_or("");
                out.push((i + 1, target.to_owned()));
                rest = &rest[end..];
            }
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && let Some(at) = trimmed.find("]: ")
        {
            out.push((i + 1, trimmed[at + 3..].trim().to_owned()));
        }
    }
    out
}

/// What is wrong with one link from `page`, if anything.
fn broken(page: &Path, target: &str) -> Option<String> {
    let target = target.trim_start_matches('<').trim_end_matches('>');
    if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if file.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let known = anchors(&std::fs::read_to_string(&file).unwrap());
    (!known.contains(anchor)).then(|| {
        format!(
            "{} has no heading with the anchor #{anchor} (it has: {})",
            file.display(),
            known.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

#[test]
fn every_relative_link_leads_somewhere() {
    let root = root();
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let markdown = std::fs::read_to_string(&page).unwrap();
        for (line, target) in links(&split(&markdown)) {
            checked += 1;
            if let Some(why) = broken(&page, &target) {
                let name = page.strip_prefix(&root).unwrap().display();
                failures.push(format!("{name}:{line}: ({target}): {why}"));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the parser right?"
    );
    assert!(
        failures.is_empty(),
        "broken links:\n{}",
        failures.join("\n")
    );
}

/// The subcommand path of a quoted command line: the words after `goat`
/// up to the first that is not a plain lower-case word (a flag, a
/// quoted or placeholder argument, a tool name, an id). None for text
/// that only mentions GOAT.
fn subcommand(line: &str) -> Option<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    let rest = line.strip_prefix("goat ")?;
    let path: Vec<String> = rest
        .split_whitespace()
        .take_while(|w| {
            w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        })
        .map(str::to_owned)
        .collect();
    (!path.is_empty()).then_some(path)
}

/// The `goat ...` command lines a page quotes: the lines of its code
/// blocks, and its inline code spans (which may run over a line break,
/// never past the end of a paragraph).
fn command_lines(page: &Page) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = page.code.clone();
    let mut span: Option<(usize, String)> = None;
    for (i, line) in page.prose.iter().enumerate() {
        if line.trim().is_empty() {
            span = None;
            continue;
        }
        for c in line.chars() {
            match (&mut span, c) {
                (None, '`') => span = Some((i + 1, String::new())),
                (Some(_), '`') => out.extend(span.take()),
                (Some((_, text)), c) => text.push(c),
                (None, _) => {}
            }
        }
        if let Some((_, text)) = &mut span {
            text.push(' ');
        }
    }
    out
}

#[test]
fn every_quoted_goat_command_parses() {
    let root = root();
    let mut paths: Vec<(Vec<String>, String)> = Vec::new();
    for page in pages() {
        let markdown = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for (line, quoted) in command_lines(&split(&markdown)) {
            if let Some(path) = subcommand(&quoted)
                && !paths.iter().any(|(p, _)| *p == path)
            {
                paths.push((path, format!("{name}:{line}: {}", quoted.trim())));
            }
        }
    }
    assert!(
        paths.len() > 15,
        "only {} subcommands found: is the parser right?",
        paths.len()
    );
    let env = Env::new();
    let mut failures = Vec::new();
    for (path, at) in &paths {
        let out = env.cmd().args(path).arg("--help").output().unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{at}\n  `goat {} --help` failed: {}",
                path.join(" "),
                text(&out.stderr).trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "quoted commands the CLI does not have:\n{}",
        failures.join("\n")
    );
}
