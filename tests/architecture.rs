//! The house rules that a compiler does not check, checked on the source:
//!
//! 1. Dependencies point one way: no two source files import each other,
//!    directly or through others (a file-level import cycle is what made
//!    changes risky before: baseline -> commands/measure -> commands/record
//!    -> baseline, cli <-> commands/tools).
//! 2. The same between rooms (a room is the first path segment under
//!    `src/`: `summary`, `diagnose`, `analysis`, ...): no two rooms import
//!    each other through any of their files, no room imports the top
//!    (`lib.rs`, `main.rs`, `cli.rs`, `commands/`), and `config` (every
//!    section of gate.toml, `config/`) imports no room that reads it. The
//!    rules (`diagnose`) read summaries; run analysis (`analysis`) sits
//!    under the summary.
//! 3. No clap type below `commands/`: the library takes validated domain
//!    types (e.g. `record::RecordPlan`), only `cli.rs`, `main.rs` and
//!    `commands/` see flags.
//! 4. No function over 100 lines, except the parsers and renderers listed
//!    in `LONG_FUNCTIONS`.
//!
//! Imports are read from `crate::a::b` and `super::x` paths outside test
//! code (every item under `#[cfg(test)]`, blanked wherever it is in the
//! file, and test-only files), which is how this code base writes them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file as its module path (`["report", "check", "junit"]`).
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(src()).unwrap().with_extension("");
            let mut path: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if path
                .last()
                .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
            {
                path.pop();
            }
            (path, f)
        })
        .collect()
}

/// The non-test code of a whole file: comments, strings and chars blanked
/// (`blank_literals`), and every item under `#[cfg(test)]` (a test module,
/// a test-only function or import) blanked too (`blank_test_items`), line
/// breaks kept, so what follows a test module is read like the rest.
fn code(file: &Path) -> String {
    // Any non-ASCII character left (there is none in code) blanked too,
    // so a byte is a character.
    let text: String = blank_literals(&std::fs::read_to_string(file).unwrap())
        .chars()
        .map(|ch| if ch.is_ascii() { ch } else { ' ' })
        .collect();
    blank_test_items(&text)
}

/// `text` (literals blanked, ASCII) with each `#[cfg(test)]` item blanked
/// to spaces from its attribute to its closing brace or `;` (line breaks
/// kept).
fn blank_test_items(text: &str) -> String {
    let mut c = text.as_bytes().to_vec();
    let attr = b"#[cfg(test)]";
    let mut i = 0;
    while let Some(k) = c[i..].windows(attr.len()).position(|w| w == attr) {
        let start = i + k;
        let end = item_end(&c, start + attr.len()).unwrap_or(c.len() - 1);
        for ch in &mut c[start..=end] {
            if *ch != b'\n' {
                *ch = b' ';
            }
        }
        i = end + 1;
    }
    String::from_utf8(c).expect("ASCII")
}

fn is_test_only(path: &[String]) -> bool {
    path.last()
        .is_some_and(|l| l == "tests" || l.ends_with("_tests") || l == "tests_support")
}

/// The longest prefix of `parts` that names a module.
fn resolve(mods: &BTreeMap<Vec<String>, PathBuf>, parts: &[String]) -> Option<Vec<String>> {
    (1..=parts.len())
        .rev()
        .map(|k| parts[..k].to_vec())
        .find(|p| mods.contains_key(p))
}

fn import_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mods = modules();
    let crate_path = regex::Regex::new(r"crate((?:::[a-z_][a-z0-9_]*)+)").unwrap();
    let super_path = regex::Regex::new(r"\bsuper((?:::[a-z_][a-z0-9_]*)+)").unwrap();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (me, file) in &mods {
        if is_test_only(me) {
            continue;
        }
        let text = code(file);
        let is_mod_file = file.file_name().is_some_and(|n| n == "mod.rs");
        let mut targets = Vec::new();
        for c in crate_path.captures_iter(&text) {
            let parts: Vec<String> = c[1].split("::").skip(1).map(String::from).collect();
            targets.extend(resolve(&mods, &parts));
        }
        for c in super_path.captures_iter(&text) {
            // `super` of a mod.rs is its parent; of a leaf file, its directory's module.
            let mut base = me.clone();
            base.pop();
            if is_mod_file {
                // me is the directory module itself: its super is one more up.
                base = me[..me.len().saturating_sub(1)].to_vec();
            }
            let mut parts = base.clone();
            parts.extend(c[1].split("::").skip(1).map(String::from));
            targets.extend(resolve(&mods, &parts).or(Some(base)));
        }
        for t in targets {
            // A module and its own submodules are one room.
            let nested = t.starts_with(me) || me.starts_with(&t);
            if &t != me && !nested {
                graph.entry(me.clone()).or_default().insert(t);
            }
        }
    }
    graph
}

#[test]
fn no_source_file_imports_itself_through_others() {
    let graph = import_graph();
    assert!(
        graph.len() > 20,
        "the scan found too few imports: {graph:?}"
    );
    // Depth-first search for a back edge.
    fn visit(
        n: &Vec<String>,
        g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m) {
                Some(1) => {
                    let i = stack.iter().position(|x| x == m).unwrap();
                    let mut cycle = stack[i..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, g, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n) {
            if let Some(cycle) = visit(n, &graph, &mut state, &mut Vec::new()) {
                let names: Vec<String> = cycle.iter().map(|p| p.join("::")).collect();
                panic!("import cycle: {}", names.join(" -> "));
            }
        }
    }
}

#[test]
fn no_clap_type_below_the_commands() {
    let mut offenders = Vec::new();
    for (path, file) in modules() {
        let top = path.first().map(String::as_str).unwrap_or("");
        if path.is_empty() || matches!(top, "cli" | "commands") || is_test_only(&path) {
            continue; // lib.rs/main.rs, the CLI layer itself, test code
        }
        if code(&file).contains("clap::") {
            offenders.push(file.display().to_string());
        }
    }
    assert!(offenders.is_empty(), "clap below commands/: {offenders:?}");
}

/// The top of the layering: what may import any room, and no room may import.
const TOP: [&str; 3] = ["", "cli", "commands"];

/// The room a source file is in: its first path segment under `src/`.
fn room_of(path: &[String]) -> String {
    path.first().cloned().unwrap_or_default()
}

/// Which room imports which (`room_of`), with one file-level import that
/// makes each arrow, for the messages.
fn room_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let mut rooms: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, targets) in import_graph() {
        let a = room_of(&from);
        for to in targets {
            let b = room_of(&to);
            if a != b {
                let why = format!("{} -> {}", from.join("::"), to.join("::"));
                rooms.entry(a.clone()).or_default().entry(b).or_insert(why);
            }
        }
    }
    rooms
}

#[test]
fn no_room_imports_itself_through_others() {
    let graph = room_graph();
    assert!(
        ["summary", "analysis", "diagnose"]
            .iter()
            .all(|r| graph.contains_key(*r)),
        "the scan found too few rooms: {:?}",
        graph.keys()
    );
    // The rules read summaries (never a trace), and neither the summary nor
    // the analysis under it reads a rule (docs/architecture.md).
    for (from, to) in [
        ("summary", "diagnose"),
        ("analysis", "diagnose"),
        ("diagnose", "trace"),
    ] {
        assert!(
            !graph[from].contains_key(to),
            "{from} imports {to}: {}",
            graph[from][to]
        );
    }
    // The configuration is read by the rooms that act on it, and imports
    // none of them: each section's schema is in `config/` (no arrow back
    // up from `config` to a room that reads it, directly or through others).
    let reads_config = |room: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![room];
        while let Some(r) = todo.pop() {
            for next in graph.get(r).into_iter().flat_map(|t| t.keys()) {
                if next == "config" {
                    return true;
                }
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        false
    };
    let back_up: Vec<&String> = graph["config"]
        .iter()
        .filter(|(to, _)| reads_config(to))
        .map(|(_, why)| why)
        .collect();
    assert!(
        back_up.is_empty(),
        "config imports a room that reads the configuration: {back_up:?}"
    );
    let up: Vec<&String> = graph
        .iter()
        .filter(|(room, _)| !TOP.contains(&room.as_str()))
        .flat_map(|(_, to)| to.iter())
        .filter(|(b, _)| TOP.contains(&b.as_str()))
        .map(|(_, why)| why)
        .collect();
    assert!(up.is_empty(), "a room imports the top: {up:?}");
    // Rooms below the top, and the arrows between them.
    let below: BTreeMap<&String, Vec<&String>> = graph
        .iter()
        .filter(|(room, _)| !TOP.contains(&room.as_str()))
        .map(|(room, to)| (room, to.keys().collect()))
        .collect();
    // A room is in a cycle when it reaches itself.
    for start in below.keys() {
        let mut path: BTreeMap<&String, &String> = BTreeMap::new(); // room -> reached from
        let mut todo = vec![*start];
        while let Some(r) = todo.pop() {
            for &next in below.get(r).into_iter().flatten() {
                if next == *start {
                    let mut cycle = vec![graph[r][next].clone()];
                    let mut at = r;
                    while at != *start {
                        let from = path[at];
                        cycle.push(graph[from][at].clone());
                        at = from;
                    }
                    cycle.reverse();
                    panic!("room cycle through {start}: {}", cycle.join(", "));
                }
                if !path.contains_key(next) {
                    path.insert(next, r);
                    todo.push(next);
                }
            }
        }
    }
}

/// Functions allowed over 100 lines: parsers and renderers, which read
/// best as one walk over their input or output. (file under `src/`, name,
/// why). An entry must stay true: the test fails when its function is gone
/// or no longer over 100 lines.
const LONG_FUNCTIONS: &[(&str, &str, &str)] = &[
    ("diagnose/rules.rs", "from_table", "parser"),
    ("diagnose/dsl.rs", "lex", "parser"),
    ("config/user_metrics.rs", "user_reader", "parser"),
    ("report/run/svg.rs", "chart", "renderer"),
    ("report/check/openmetrics.rs", "render_many", "renderer"),
    ("report/check/pr_comment.rs", "render", "renderer"),
    ("report/check/words.rs", "metric_reason", "renderer"),
    ("report/check/markdown.rs", "render", "renderer"),
];

/// `text` with the contents of comments, strings and chars blanked to
/// spaces (line breaks kept, so line numbers hold): braces and `fn` in
/// them are not code.
fn blank_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, s: &[char]| {
        out.extend(s.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }))
    };
    let mut i = 0;
    while i < c.len() {
        let rest = &c[i..];
        let starts = |p: &str| rest.iter().take(p.len()).copied().eq(p.chars());
        let end = if starts("//") {
            i + rest.iter().position(|&ch| ch == '\n').unwrap_or(rest.len())
        } else if starts("/*") {
            let (mut depth, mut j) = (0usize, i);
            loop {
                if c[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if c[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break j;
                    }
                } else {
                    j += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&c, i) {
            end
        } else if c[i] == '"' {
            let mut j = i + 1;
            while c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if c[i] == '\'' && i + 2 < c.len() && (c[i + 1] == '\\' || c[i + 2] == '\'') {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let mut j = i + 1;
            while c[j] != '\'' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        blank(&mut out, &c[i..end]);
        i = end;
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Where a raw string (`r"..."`, `r#"..."#`, `br"..."`) that starts at `i` ends.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    if c[i] != 'r' || (i > 0 && is_ident(c[i - 1]) && c[i - 1] != 'b') {
        return None;
    }
    let hashes = c[i + 1..].iter().take_while(|&&ch| ch == '#').count();
    if c.get(i + 1 + hashes) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let body = i + 2 + hashes;
    (body..c.len())
        .find(|&j| c[j..].starts_with(&close))
        .map(|j| j + close.len())
}

/// The end (index of the closing brace, or of the `;`) of the item that
/// starts at `from`; None when the text ends first. A `;` inside brackets
/// (`[u8; 4]`) does not end it.
fn item_end(c: &[u8], from: usize) -> Option<usize> {
    let (mut braces, mut brackets) = (0usize, 0usize);
    for (j, &ch) in c.iter().enumerate().skip(from) {
        match ch {
            b';' if braces == 0 && brackets == 0 => return Some(j),
            b'(' | b'[' => brackets += 1,
            b')' | b']' => brackets = brackets.saturating_sub(1),
            b'{' => braces += 1,
            b'}' => {
                braces = braces.checked_sub(1)?;
                if braces == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every function with a body in `file` outside test code (`code`: the
/// whole file, test items blanked), as (name, lines from its `fn` line to
/// its closing brace).
fn function_lengths(file: &Path) -> Vec<(String, usize)> {
    let text = code(file);
    let text = &text[..];
    let c = text.as_bytes();
    let mut line_of = Vec::with_capacity(c.len());
    let mut line = 0;
    for &ch in c {
        line_of.push(line);
        line += usize::from(ch == b'\n');
    }
    let fn_re = regex::Regex::new(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)").unwrap();
    let mut out = Vec::new();
    for m in fn_re.captures_iter(text) {
        let start = m.get(0).unwrap().start();
        let Some(end) = item_end(c, start) else {
            continue;
        };
        if c[end] == b'}' {
            out.push((m[1].to_string(), line_of[end] - line_of[start] + 1));
        }
    }
    out
}

#[test]
fn no_function_over_100_lines_but_listed_parsers_and_renderers() {
    let mut long = Vec::new();
    let mut scanned = 0;
    for (module, file) in modules() {
        if is_test_only(&module) {
            continue;
        }
        let rel = file
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for (name, lines) in function_lengths(&file) {
            scanned += 1;
            if lines > 100 {
                long.push((rel.clone(), name, lines));
            }
        }
    }
    assert!(
        scanned > 1000,
        "the scan found too few functions: {scanned}"
    );
    let unlisted: Vec<String> = long
        .iter()
        .filter(|(path, name, _)| {
            !LONG_FUNCTIONS
                .iter()
                .any(|(f, n, _)| n == name && f == path)
        })
        .map(|(path, name, lines)| format!("src/{path} {name}: {lines} lines"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "functions over 100 lines (split them into named steps): {unlisted:?}"
    );
    let stale: Vec<String> = LONG_FUNCTIONS
        .iter()
        .filter(|(f, n, _)| !long.iter().any(|(path, name, _)| name == n && f == path))
        .map(|(f, n, why)| format!("src/{f} {n} ({why})"))
        .collect();
    assert!(
        stale.is_empty(),
        "listed as allowed but gone or no longer over 100 lines: drop them: {stale:?}"
    );
    for (_, _, why) in LONG_FUNCTIONS {
        assert!(matches!(*why, "parser" | "renderer"), "{why}");
    }
}

#[test]
fn the_function_scan_reads_past_literals_and_comments() {
    let dir = std::env::temp_dir().join(format!("gate-arch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sample.rs");
    let src = concat!(
        "fn a() {\n",
        "    let s = \"}\"; // }\n",
        "    let r = r#\"fn b() { }\"#;\n",
        "    let c = '}';\n",
        "    /* } fn c() { */\n",
        "}\n",
        "fn d<'x>(v: &'x str) -> &'x str {\n",
        "    v\n",
        "}\n",
        "trait T { fn e(&self, x: [u8; 4]); }\n",
        "fn g(x: [u8; 4]) -> u8 {\n",
        "    x[0]\n",
        "}\n",
        "#[cfg(test)]\n",
        "mod tests { fn f() {} }\n",
        "#[cfg(test)]\n",
        "use tests::f;\n",
        "fn h() {\n",
        "}\n",
    );
    std::fs::write(&file, src).unwrap();
    let found = function_lengths(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        vec![
            ("a".to_string(), 6),
            ("d".to_string(), 3),
            ("g".to_string(), 3),
            ("h".to_string(), 2)
        ]
    );
}

/// Names that say one thing: every `Run*` type of the source is a row of
/// docs/architecture.md's table of them, in the file that defines it, and
/// every row names a type that exists.
#[test]
fn every_run_type_has_one_meaning_in_the_glossary() {
    let def =
        regex::Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))? )?(?:struct|enum) (Run[A-Z][A-Za-z]*)")
            .unwrap();
    let mut types = BTreeMap::new();
    for (path, file) in modules() {
        if is_test_only(&path) {
            continue;
        }
        for c in def.captures_iter(&code(&file)) {
            let rel = file.strip_prefix(src()).unwrap().display().to_string();
            types.insert(c[1].to_string(), format!("src/{rel}"));
        }
    }
    assert!(types.len() >= 10, "{types:?}");
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let row =
        regex::Regex::new(r"(?m)^\| `(Run[A-Z][A-Za-z]*)` \| [^|]+ \| `([^`]+)` \|$").unwrap();
    let rows: BTreeMap<String, String> = row
        .captures_iter(&doc)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    assert_eq!(
        rows, types,
        "docs/architecture.md's `Run*` table vs the source"
    );
}

/// docs/architecture.md says where each command's plan and the writer
/// live: every plan of its table is a struct of the file it names, and the
/// writer's items are where it says.
#[test]
fn the_plans_and_the_writer_are_where_the_architecture_page_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let row = regex::Regex::new(r"(?m)^\| [^|`]+ \| `([A-Za-z]+)` \| `(src/[^`]+)` \|$").unwrap();
    let mut plans = Vec::new();
    for c in row.captures_iter(&doc) {
        let text = std::fs::read_to_string(root.join(&c[2])).unwrap();
        assert!(
            text.contains(&format!("struct {}", &c[1])),
            "{} is not in {}",
            &c[1],
            &c[2]
        );
        plans.push(c[1].to_string());
    }
    assert!(plans.len() >= 10, "{plans:?}");
    for (item, file) in [
        ("trait Pages", "src/commands/output.rs"),
        ("fn write_pages", "src/commands/output.rs"),
        ("struct Measurement", "src/commands/measure.rs"),
        ("enum GpuSelection", "src/sampler/nvml.rs"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(text.contains(item), "{item} is not in {file}");
        let name = item.split(' ').nth(1).unwrap();
        assert!(
            doc.contains(&format!("`{name}`")),
            "the page does not name {name}"
        );
    }
}
