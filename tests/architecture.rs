//! The house rules that a compiler does not check, checked on the source:
//!
//! 1. Dependencies point one way: no two source files import each other,
//!    directly or through others (a file-level import cycle is what made
//!    changes risky before: baseline -> commands/measure -> commands/record
//!    -> baseline, cli <-> commands/tools).
//! 2. No clap type below `commands/`: the library takes validated domain
//!    types (e.g. `record::RecordPlan`), only `cli.rs`, `main.rs` and
//!    `commands/` see flags.
//!
//! Imports are read from `crate::a::b` and `super::x` paths outside test
//! code (everything after a file's first `#[cfg(test)]`, and test-only
//! files), which is how this code base writes them.

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

/// The non-test code of a file, comments removed.
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let text = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text[..],
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
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
            if &t != me && !t.starts_with(me) && !me.starts_with(&t) {
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
