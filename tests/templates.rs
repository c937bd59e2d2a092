//! The CI templates under `ci-templates/` are code that users paste into
//! their pipelines, so they are tested like code:
//!
//! 1. Every template is parsed as YAML (or, for the local recipes, as a
//!    Makefile / bash script) and every `gate` command line in it is
//!    extracted: from GitHub `run:` scripts, GitLab `script:` lists, make
//!    recipes and the pre-push hook, with `\` line continuations joined.
//! 2. Template variables are substituted the way the platform does it
//!    (`${{ inputs.x }}` / `${{ github.x }}` into a step's `env:`,
//!    `$[[ inputs.x ]]` into a GitLab job, `$(VAR)` in make), then the shell
//!    words are expanded with test values (`$VAR`, `"${arr[@]}"`,
//!    `${VAR:+words}`, `$(cmd)`). A variable the test has no value for is a
//!    failure: a new variable in a template must be looked at here.
//! 3. The run test replaces the live measurement (`-- CMD`, `--pid`) with
//!    `--replay` of shipped traces, points `--baseline-ref` at `HEAD` of a
//!    temp git repository holding the committed baseline and gate.toml, and
//!    RUNS each command with the real binary there, checking exit code 0 and
//!    the files the template later uploads (and, for GitHub, the verdict in
//!    `$GITHUB_OUTPUT`). A renamed flag therefore fails this test.
//!
//! Traces: `fixtures/traces/healthy-{1,2,3}.jsonl` (real H200 recordings)
//! when present, else `tests/data/synthetic-healthy-{1,2,3}.jsonl` (checked
//! against the generator by `tests/committed_data.rs`), whose header note
//! says "synthetic".

use serde::Deserialize;
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BASELINE: &str = "synthetic-train";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn root(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

// ---------------------------------------------------------------------------
// Shell lexing: just enough bash to find command words and operators.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A word with its quotes and `$` constructs still in it.
    Word(String),
    /// A control operator that ends a simple command: `;` `&&` `||` `|` `&` `;;`.
    Op(String),
    /// A redirection (`>`, `>>`, `>&`, `<`, `2>`...); its target word follows.
    Redirect,
}

/// Length in bytes of a `$(...)` / `${...}` construct starting at `s[0]`
/// (`s` begins with `$(` or `${`), honouring nested quotes and brackets.
fn construct_len(s: &str) -> Result<usize, String> {
    let (open, close) = if s.starts_with("$(") {
        ('(', ')')
    } else {
        ('{', '}')
    };
    let b: Vec<char> = s.chars().collect();
    let mut depth = 0usize;
    let mut i = 1;
    let mut bytes = '$'.len_utf8();
    while i < b.len() {
        let c = b[i];
        match c {
            '\\' if i + 1 < b.len() => {
                bytes += c.len_utf8() + b[i + 1].len_utf8();
                i += 2;
                continue;
            }
            '\'' | '"' => {
                let q = c;
                bytes += c.len_utf8();
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == '\\' && q == '"' && i + 1 < b.len() {
                        bytes += b[i].len_utf8();
                        i += 1;
                    }
                    bytes += b[i].len_utf8();
                    i += 1;
                }
                if i >= b.len() {
                    return Err(format!("unterminated quote in '{s}'"));
                }
            }
            _ if c == open => depth += 1,
            _ if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Ok(bytes + c.len_utf8());
                }
            }
            _ => {}
        }
        bytes += c.len_utf8();
        i += 1;
    }
    Err(format!("unterminated '{}{open}' in '{s}'", '$'))
}

/// Split one logical line into words and operators. Comments end the line.
fn lex(line: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let s = line;
    let flush = |toks: &mut Vec<Tok>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            toks.push(Tok::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < s.len() {
        let rest = &s[i..];
        let c = rest.chars().next().unwrap();
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                flush(&mut toks, &mut word, &mut in_word);
                i += c.len_utf8();
            }
            '#' if !in_word => break,
            ';' | '&' | '|' => {
                flush(&mut toks, &mut word, &mut in_word);
                let two = rest.get(..2).unwrap_or("");
                let op = if matches!(two, "&&" | "||" | ";;") {
                    two
                } else {
                    &rest[..1]
                };
                toks.push(Tok::Op(op.to_string()));
                i += op.len();
            }
            '>' | '<' => {
                // `2>` / `2>&1`: a word of digits right before is the fd.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                flush(&mut toks, &mut word, &mut in_word);
                toks.push(Tok::Redirect);
                i += 1;
                if s[i..].starts_with('>') || s[i..].starts_with('&') {
                    i += 1;
                }
            }
            '\'' => {
                let end = rest[1..]
                    .find('\'')
                    .ok_or_else(|| format!("unterminated ' in: {line}"))?;
                word.push_str(&rest[..end + 2]);
                in_word = true;
                i += end + 2;
            }
            '"' => {
                let mut j = 1;
                loop {
                    let r = &rest[j..];
                    let Some(ch) = r.chars().next() else {
                        return Err(format!("unterminated \" in: {line}"));
                    };
                    if ch == '"' {
                        j += 1;
                        break;
                    }
                    if ch == '\\' {
                        j += 1 + r[1..].chars().next().map(char::len_utf8).unwrap_or(0);
                    } else if r.starts_with("$(") || r.starts_with("${") {
                        j += construct_len(r)?;
                    } else {
                        j += ch.len_utf8();
                    }
                }
                word.push_str(&rest[..j]);
                in_word = true;
                i += j;
            }
            '\\' => {
                let n = rest[1..].chars().next().map(char::len_utf8).unwrap_or(0);
                word.push_str(&rest[..1 + n]);
                in_word = true;
                i += 1 + n;
            }
            '$' if rest.starts_with("$(") || rest.starts_with("${") => {
                let n = construct_len(rest)?;
                word.push_str(&rest[..n]);
                in_word = true;
                i += n;
            }
            _ => {
                word.push(c);
                in_word = true;
                i += c.len_utf8();
            }
        }
    }
    flush(&mut toks, &mut word, &mut in_word);
    Ok(toks)
}

/// Join `\`-continued lines; returns (first line number, text).
fn logical_lines(script: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    for (n, line) in script.lines().enumerate() {
        if cur.is_empty() {
            start = n + 1;
        }
        if let Some(body) = line.strip_suffix('\\') {
            cur.push_str(body);
            cur.push(' ');
        } else {
            cur.push_str(line);
            out.push((start, std::mem::take(&mut cur)));
        }
    }
    if !cur.is_empty() {
        out.push((start, cur));
    }
    out
}

/// Words that may precede a command without being it.
const LEADERS: &[&str] = &[
    "if", "then", "elif", "else", "do", "while", "until", "!", "{", "(", "time",
];

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The raw words (after `gate`) of every `gate ...` simple command in a script.
fn gate_commands_in(script: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    for (lineno, line) in logical_lines(script) {
        if !line.contains("gate") {
            continue;
        }
        let toks = lex(&line).unwrap_or_else(|e| panic!("line {lineno}: {e}"));
        let mut segment: Vec<String> = Vec::new();
        let mut skip_next = false;
        let mut segments = Vec::new();
        for t in toks {
            match t {
                Tok::Op(_) => segments.push(std::mem::take(&mut segment)),
                Tok::Redirect => skip_next = true,
                Tok::Word(w) if skip_next => {
                    let _ = w;
                    skip_next = false;
                }
                Tok::Word(w) => segment.push(w),
            }
        }
        segments.push(segment);
        for seg in segments {
            let mut words = seg
                .into_iter()
                .skip_while(|w| LEADERS.contains(&w.as_str()) || is_assignment(w));
            if words.next().as_deref() == Some("gate") {
                found.push((lineno, words.collect()));
            }
        }
    }
    found
}

// ---------------------------------------------------------------------------
// Word expansion with test values.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Val {
    S(String),
    A(Vec<String>),
}

fn s(v: impl Into<String>) -> Val {
    Val::S(v.into())
}

#[derive(Debug, Clone, Default)]
struct Vars {
    vars: HashMap<String, Val>,
    /// `$(...)` text -> its output.
    subst: HashMap<String, String>,
}

impl Vars {
    fn set(&mut self, k: &str, v: Val) -> &mut Self {
        self.vars.insert(k.to_string(), v);
        self
    }

    fn get(&self, name: &str, ctx: &str) -> &Val {
        self.vars
            .get(name)
            .unwrap_or_else(|| panic!("{ctx}: the test has no value for ${name}; add one"))
    }

    fn scalar(&self, name: &str, ctx: &str) -> String {
        match self.get(name, ctx) {
            Val::S(v) => v.clone(),
            Val::A(a) => a.first().cloned().unwrap_or_default(),
        }
    }
}

#[derive(Default)]
struct Fields {
    out: Vec<String>,
    cur: Option<String>,
}

impl Fields {
    fn quoted(&mut self, s: &str) {
        self.cur.get_or_insert_with(String::new).push_str(s);
    }
    fn finish(&mut self) {
        if let Some(c) = self.cur.take() {
            self.out.push(c);
        }
    }
    /// Unquoted expansion result: field splitting on whitespace.
    fn unquoted(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if s.starts_with(char::is_whitespace) {
            self.finish();
        }
        for (i, p) in s.split_whitespace().enumerate() {
            if i > 0 {
                self.finish();
            }
            self.quoted(p);
        }
        if s.ends_with(char::is_whitespace) {
            self.finish();
        }
    }
    /// Several fields (`"${a[@]}"`, `${X:+a "b c"}`): the first joins the
    /// current word, the last stays open.
    fn many(&mut self, f: Vec<String>) {
        for (i, x) in f.iter().enumerate() {
            if i > 0 {
                self.finish();
            }
            self.quoted(x);
        }
    }
}

fn var_name_len(s: &str) -> usize {
    s.char_indices()
        .find(|&(i, c)| !(c.is_ascii_alphanumeric() || c == '_') || (i == 0 && c.is_ascii_digit()))
        .map(|(i, _)| i)
        .unwrap_or(s.len())
}

/// Expand `$...` at the start of `s`; returns bytes consumed.
fn expand_dollar(s: &str, quoted: bool, vars: &Vars, ctx: &str, f: &mut Fields) -> usize {
    let push = |f: &mut Fields, v: &str| {
        if quoted {
            f.quoted(v)
        } else {
            f.unquoted(v)
        }
    };
    if s.starts_with("$(") {
        let n = construct_len(s).unwrap();
        let inner = s[2..n - 1].trim();
        let out = vars
            .subst
            .get(inner)
            .unwrap_or_else(|| panic!("{ctx}: the test has no output for $({inner})"));
        push(f, out);
        return n;
    }
    if s.starts_with("${") {
        let n = construct_len(s).unwrap();
        let body = &s[2..n - 1];
        let name_len = var_name_len(body);
        let (name, op) = body.split_at(name_len);
        match op {
            "" => push(f, &vars.scalar(name, ctx)),
            "[@]" => match vars.get(name, ctx) {
                Val::A(a) if quoted => f.many(a.clone()),
                Val::A(a) => f.unquoted(&a.join(" ")),
                Val::S(v) => push(f, v),
            },
            _ if op.starts_with(":+") => {
                if !vars.scalar(name, ctx).is_empty() {
                    let words = expand_words(&op[2..], vars, ctx);
                    if quoted {
                        f.quoted(&words.join(" "))
                    } else {
                        f.many(words)
                    }
                }
            }
            _ if op.starts_with(":-") => {
                let v = vars
                    .vars
                    .get(name)
                    .map(|_| vars.scalar(name, ctx))
                    .unwrap_or_default();
                if v.is_empty() {
                    let words = expand_words(&op[2..], vars, ctx);
                    if quoted {
                        f.quoted(&words.join(" "))
                    } else {
                        f.many(words)
                    }
                } else {
                    push(f, &v);
                }
            }
            _ => panic!("{ctx}: unsupported expansion '${{{body}}}' in a gate command"),
        }
        return n;
    }
    let rest = &s[1..];
    let n = var_name_len(rest);
    if n == 0 {
        if rest.starts_with('?') {
            push(f, &vars.scalar("?", ctx));
            return 2;
        }
        f.quoted("$");
        return 1;
    }
    push(f, &vars.scalar(&rest[..n], ctx));
    1 + n
}

/// Expand a sequence of raw words (quotes, `$` forms) into argv fields.
fn expand_words(text: &str, vars: &Vars, ctx: &str) -> Vec<String> {
    let mut f = Fields::default();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let c = rest.chars().next().unwrap();
        match c {
            ' ' | '\t' | '\n' => {
                f.finish();
                i += 1;
            }
            '\'' => {
                let end = rest[1..].find('\'').expect("lexed") + 1;
                f.quoted(&rest[1..end]);
                i += end + 1;
            }
            '"' => {
                // `""` is one empty word, but `"${empty[@]}"` is none.
                let mut array = false;
                let mut j = 1;
                loop {
                    let r = &rest[j..];
                    let ch = r.chars().next().expect("lexed");
                    match ch {
                        '"' => {
                            if !array {
                                f.quoted("");
                            }
                            j += 1;
                            break;
                        }
                        '\\' => {
                            let nx = r[1..].chars().next().unwrap();
                            if matches!(nx, '"' | '\\' | '$' | '`') {
                                f.quoted(&nx.to_string());
                            } else {
                                f.quoted(&r[..1 + nx.len_utf8()]);
                            }
                            j += 1 + nx.len_utf8();
                        }
                        '$' => {
                            let n = expand_dollar(r, true, vars, ctx, &mut f);
                            array |= r[..n].ends_with("[@]}");
                            j += n;
                        }
                        _ => {
                            f.quoted(&ch.to_string());
                            j += ch.len_utf8();
                        }
                    }
                }
                i += j;
            }
            '\\' => {
                let nx = rest[1..].chars().next().unwrap_or(' ');
                f.quoted(&nx.to_string());
                i += 1 + nx.len_utf8();
            }
            '$' => i += expand_dollar(rest, false, vars, ctx, &mut f),
            _ => {
                f.quoted(&c.to_string());
                i += c.len_utf8();
            }
        }
    }
    f.finish();
    f.out
}

/// `dir/prefix*suffix` in the last path component, relative to `cwd`.
fn glob(pattern: &str, cwd: &Path) -> Vec<String> {
    if !pattern.contains('*') {
        return vec![pattern.to_string()];
    }
    let (dir, file) = pattern.rsplit_once('/').unwrap_or((".", pattern));
    let (pre, post) = file.split_once('*').unwrap();
    let mut hits: Vec<String> = std::fs::read_dir(cwd.join(dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(pre) && n.ends_with(post))
                .map(|n| format!("{dir}/{n}"))
                .collect()
        })
        .unwrap_or_default();
    hits.sort();
    if hits.is_empty() {
        vec![pattern.to_string()] // bash keeps an unmatched pattern as is
    } else {
        hits
    }
}

// ---------------------------------------------------------------------------
// Templates -> gate commands.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct GateCommand {
    /// template file, step/job, line: for messages.
    origin: String,
    /// argv after `gate`, expanded with the scenario's values.
    argv: Vec<String>,
}

impl GateCommand {
    fn sub(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }
    /// Value of `--flag VALUE` (before any `--`).
    fn flag(&self, name: &str) -> Option<&str> {
        let pos = self
            .argv
            .iter()
            .take_while(|a| *a != "--")
            .position(|a| a == name)?;
        self.argv.get(pos + 1).map(String::as_str)
    }
    fn has(&self, name: &str) -> bool {
        self.argv
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == name)
    }
    fn long_flags(&self) -> BTreeSet<String> {
        let mut flags = BTreeSet::new();
        let mut it = self.argv.iter().take_while(|a| *a != "--");
        while let Some(a) = it.next() {
            if a.starts_with("--") {
                flags.insert(a.clone());
                // Their values are strings that may start with `--`.
                if a == "--args-string" || a == "--command-string" {
                    it.next();
                }
            }
        }
        flags
    }
    /// The live command: after `--`, or `--command-string` split the way
    /// gate splits it.
    fn live(&self) -> Vec<String> {
        if let Some(line) = self.flag("--command-string") {
            return shlex::split(line).expect("a valid command string");
        }
        match self.argv.iter().position(|a| a == "--") {
            Some(p) => self.argv[p + 1..].to_vec(),
            None => Vec::new(),
        }
    }
}

fn collect(origin: &str, script: &str, vars: &Vars) -> Vec<GateCommand> {
    gate_commands_in(script)
        .into_iter()
        .map(|(line, words)| {
            let ctx = format!("{origin}, script line {line}");
            let mut argv = Vec::new();
            for w in &words {
                argv.extend(expand_words(w, vars, &ctx));
            }
            GateCommand { origin: ctx, argv }
        })
        .collect()
}

fn yaml(rel: &str) -> Value {
    serde_yaml::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml_docs(rel: &str) -> Vec<Value> {
    let text = read(rel);
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{rel}: {e}")))
        .collect()
}

fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// Replace every `open ... close` expression in `text` using `f(expr)`.
fn substitute(text: &str, open: &str, close: &str, f: &mut dyn FnMut(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(p) = rest.find(open) {
        out.push_str(&rest[..p]);
        let after = &rest[p + open.len()..];
        let end = after
            .find(close)
            .unwrap_or_else(|| panic!("unterminated {open} in {text}"));
        out.push_str(&f(after[..end].trim()));
        rest = &after[end + close.len()..];
    }
    out.push_str(rest);
    out
}

/// Values a GitHub scenario gives to `${{ ... }}` expressions.
struct GithubCtx {
    declared_inputs: BTreeMap<String, Value>,
    inputs: HashMap<String, String>,
    exprs: HashMap<String, String>,
}

impl GithubCtx {
    fn eval(&self, expr: &str, ctx: &str) -> String {
        if let Some(name) = expr.strip_prefix("inputs.") {
            let decl = self.declared_inputs.get(name).unwrap_or_else(|| {
                panic!("{ctx}: ${{{{ inputs.{name} }}}} is not a declared input")
            });
            return self
                .inputs
                .get(name)
                .cloned()
                .unwrap_or_else(|| str_of(&decl["default"]));
        }
        self.exprs
            .get(expr)
            .cloned()
            .unwrap_or_else(|| panic!("{ctx}: the test has no value for ${{{{ {expr} }}}}"))
    }

    fn resolve(&self, text: &str, ctx: &str) -> String {
        substitute(text, "${{", "}}", &mut |e| self.eval(e, ctx))
    }
}

struct Scenario {
    name: &'static str,
    commands: Vec<GateCommand>,
    /// Set GITHUB_ACTIONS/GITHUB_OUTPUT/GITHUB_STEP_SUMMARY when running.
    github: bool,
}

const ACTION: &str = "ci-templates/github/action.yml";
const WORKFLOW: &str = "ci-templates/github/workflows/gpu-gate.yml";
const GL_CHECK: &str = "templates/gate-check.yml";
const GL_CAPTURE: &str = "templates/gate-capture.yml";
const COMMENT_WORKFLOW: &str = "ci-templates/github/workflows/gate-pr-comment.yml";
const INSTALL_SCRIPT: &str = "ci-templates/install-gate.sh";
const RELEASE_CHECKSUMS: &str = "ci-templates/release-checksums.txt";
/// The benchmark command every scenario gives its template, as one string.
const COMMAND: &str = "python bench/train.py --seconds 60";
const MAKEFILE: &str = "ci-templates/local/gate.mk";
const PRE_PUSH: &str = "ci-templates/local/pre-push";

/// Shell variables the templates' scripts set themselves before their gate
/// lines; the scenario's values for them.
fn shell_locals(v: &mut Vars, out: &str) {
    v.set("gate_config", s("gate.toml"));
    // The change's accept file (run_scenario writes one).
    v.set("gate_accept", s("gate-accept.toml"));
    v.set("committed", s(format!("baselines/{BASELINE}.toml")));
    v.set("captured", s(format!("{out}/baselines/{BASELINE}.toml")));
    // mode ab: the benchmark command in each work tree (one string each).
    v.set("gate_a", s(format!("env -C {out}/ab/a {COMMAND}")));
    v.set("gate_b", s(format!("env -C {out}/ab/b {COMMAND}")));
}

fn github_action_scenario() -> Scenario {
    let action = yaml(ACTION);
    let declared: BTreeMap<String, Value> = action["inputs"]
        .as_mapping()
        .expect("inputs")
        .iter()
        .map(|(k, v)| (str_of(k), v.clone()))
        .collect();
    let gh = GithubCtx {
        declared_inputs: declared,
        inputs: [
            ("baseline", BASELINE),
            ("command", COMMAND),
            ("threshold", "0.1"),
            ("extra-args", "--tag source=template-test"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        exprs: [
            ("github.base_ref", "main"),
            ("github.sha", COMMIT),
            ("github.server_url", "https://github.example"),
            ("github.repository", "acme/trainer"),
            ("github.run_id", "42"),
            ("github.event.pull_request.number", "17"),
            ("github.action_repository", "acme/gpugate"),
            ("github.token", "test-token"),
            ("steps.target.outputs.ref", "origin/main"),
            ("steps.target.outputs.config", "gate.toml"),
            (
                "join(github.event.pull_request.labels.*.name, ',')",
                "bug,perf-accepted",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    let out = gh.eval("inputs.output-dir", ACTION);
    let mut commands = Vec::new();
    for step in action["runs"]["steps"].as_sequence().expect("steps") {
        let Some(run) = step.get("run") else { continue };
        let origin = format!("{ACTION}, step '{}'", str_of(&step["name"]));
        let mut vars = Vars::default();
        if let Some(env) = step.get("env").and_then(Value::as_mapping) {
            for (k, val) in env {
                vars.set(&str_of(k), s(gh.resolve(&str_of(val), &origin)));
            }
        }
        shell_locals(&mut vars, &out);
        let script = gh.resolve(&str_of(run), &origin);
        commands.extend(collect(&origin, &script, &vars));
    }
    Scenario {
        name: "github-action",
        commands,
        github: true,
    }
}

/// A GitLab component: its `spec:inputs` and its job after interpolation.
struct Component {
    inputs: BTreeMap<String, Value>,
    /// job name -> job, `$[[ inputs.x ]]` already substituted.
    jobs: BTreeMap<String, Value>,
}

fn interpolate(v: &Value, f: &mut dyn FnMut(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, "$[[", "]]", f)),
        Value::Sequence(seq) => Value::Sequence(seq.iter().map(|x| interpolate(x, f)).collect()),
        Value::Mapping(m) => Value::Mapping(
            m.iter()
                .map(|(k, x)| (interpolate(k, f), interpolate(x, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn gitlab_component(rel: &str, values: &[(&str, Value)]) -> Component {
    let docs = yaml_docs(rel);
    assert_eq!(docs.len(), 2, "{rel}: a component is 'spec' --- jobs");
    let inputs: BTreeMap<String, Value> = docs[0]["spec"]["inputs"]
        .as_mapping()
        .unwrap_or_else(|| panic!("{rel}: no spec:inputs"))
        .iter()
        .map(|(k, v)| (str_of(k), v.clone()))
        .collect();
    let given: HashMap<&str, &Value> = values.iter().map(|(k, v)| (*k, v)).collect();
    for k in given.keys() {
        assert!(
            inputs.contains_key(*k),
            "{rel}: test sets undeclared input '{k}'"
        );
    }
    let mut used = BTreeSet::new();
    let jobs_doc = interpolate(&docs[1], &mut |expr| {
        let name = expr
            .strip_prefix("inputs.")
            .unwrap_or_else(|| panic!("{rel}: unsupported interpolation $[[ {expr} ]]"));
        let decl = inputs.get(name).unwrap_or_else(|| {
            panic!("{rel}: $[[ inputs.{name} ]] is not declared in spec:inputs")
        });
        used.insert(name.to_string());
        let v = given
            .get(name)
            .copied()
            .or_else(|| decl.get("default"))
            .unwrap_or_else(|| panic!("{rel}: required input '{name}' has no test value"));
        str_of(v)
    });
    let unused: Vec<_> = inputs.keys().filter(|k| !used.contains(*k)).collect();
    assert!(
        unused.is_empty(),
        "{rel}: inputs declared but never used: {unused:?}"
    );
    let jobs = jobs_doc
        .as_mapping()
        .expect("jobs")
        .iter()
        .map(|(k, v)| (str_of(k), v.clone()))
        .collect();
    Component { inputs, jobs }
}

fn gitlab_predefined(v: &mut Vars) {
    v.set("CI_COMMIT_SHA", s(COMMIT))
        .set(
            "CI_PIPELINE_URL",
            s("https://gitlab.example/acme/trainer/-/pipelines/7"),
        )
        .set("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", s("main"))
        .set("CI_MERGE_REQUEST_LABELS", s("bug,perf-accepted"))
        .set(
            "CI_JOB_URL",
            s("https://gitlab.example/acme/trainer/-/jobs/9"),
        )
        .set("CI_PROJECT_DIR", s("."));
}

fn gitlab_scenario(rel: &str, locals: &[(&str, Val)]) -> (Component, Vec<GateCommand>) {
    let comp = gitlab_component(
        rel,
        &[
            ("baseline", Value::String(BASELINE.into())),
            ("command", Value::String(COMMAND.into())),
            (
                "extra-args",
                Value::String("--tag source=template-test".into()),
            ),
        ],
    );
    let mut commands = Vec::new();
    for (name, job) in &comp.jobs {
        let mut vars = Vars::default();
        gitlab_predefined(&mut vars);
        if let Some(m) = job.get("variables").and_then(Value::as_mapping) {
            for (k, val) in m {
                vars.set(&str_of(k), s(str_of(val)));
            }
        }
        let out = match vars.vars.get("GATE_OUT") {
            Some(_) => vars.scalar("GATE_OUT", rel),
            None => ".gate/ci".to_string(),
        };
        shell_locals(&mut vars, &out);
        for (k, val) in locals {
            vars.set(k, val.clone());
        }
        for key in ["before_script", "script", "after_script"] {
            let Some(items) = job.get(key).and_then(Value::as_sequence) else {
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                let origin = format!("{rel}, job '{name}', {key}[{i}]");
                commands.extend(collect(&origin, &str_of(item), &vars));
            }
        }
    }
    (comp, commands)
}

fn gitlab_check_scenario() -> (Component, Scenario) {
    let (comp, commands) = gitlab_scenario(
        GL_CHECK,
        &[
            // What the script computes on a merge request pipeline.
            ("GATE_BASELINE_REF", s("origin/main")),
            ("GATE_THRESHOLD", s("0.1")),
            ("gate_allow_env", s("--allow-env-mismatch")),
            ("gate_fail_improve", s("--fail-on-improvement")),
        ],
    );
    let sc = Scenario {
        name: "gitlab-check",
        commands,
        github: false,
    };
    (comp, sc)
}

fn gitlab_capture_scenario() -> (Component, Scenario) {
    let (comp, commands) = gitlab_scenario(GL_CAPTURE, &[]);
    let sc = Scenario {
        name: "gitlab-capture",
        commands,
        github: false,
    };
    (comp, sc)
}

/// Make: `NAME ?= value` defaults, `$(NAME)` and `$$`.
fn make_expand(text: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(p) = rest.find('$') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('(') {
            let end = r.find(')').expect("make variable");
            let name = &r[..end];
            let v = vars
                .get(name)
                .unwrap_or_else(|| panic!("{MAKEFILE}: unknown make variable $({name})"));
            out.push_str(v);
            rest = &r[end + 1..];
        } else {
            panic!("{MAKEFILE}: lone '$' in a recipe: {text}");
        }
    }
    out.push_str(rest);
    out
}

fn local_scenario() -> Scenario {
    let mk = read(MAKEFILE);
    let mut make_vars: HashMap<String, String> = mk
        .lines()
        .filter_map(|l| l.split_once("?="))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    make_vars.insert("GATE_BASELINE".into(), BASELINE.into());
    let out = make_vars["GATE_OUT"].clone();
    let mut vars = Vars::default();
    // gate.mk exports GATE_COMMAND; the recipes pass it as "$GATE_COMMAND".
    vars.set("GATE_COMMAND", s(make_vars["GATE_COMMAND"].clone()));
    vars.subst
        .insert("git rev-parse HEAD".into(), COMMIT.into());
    vars.subst.insert(
        format!("ls -t {out}/traces/*.jsonl | head -n 1"),
        format!("{out}/traces/seed.jsonl"),
    );
    // Recipes: tab-indented lines; each target's recipe is one script.
    let mut commands = Vec::new();
    let mut target = String::new();
    let mut recipe = String::new();
    let flush = |target: &str, recipe: &mut String, commands: &mut Vec<GateCommand>| {
        if !recipe.is_empty() {
            let script = make_expand(recipe, &make_vars);
            commands.extend(collect(
                &format!("{MAKEFILE}, target '{target}'"),
                &script,
                &vars,
            ));
            recipe.clear();
        }
    };
    for line in mk.lines() {
        if let Some(body) = line.strip_prefix('\t') {
            recipe.push_str(body.trim_start_matches(['@', '-']));
            recipe.push('\n');
        } else {
            flush(&target, &mut recipe, &mut commands);
            if let Some((t, _)) = line.split_once(':') {
                if !line.starts_with(['#', '.', ' ']) && !line.contains('=') {
                    target = t.to_string();
                }
            }
        }
    }
    flush(&target, &mut recipe, &mut commands);

    let mut hook_vars = Vars::default();
    hook_vars
        .set("baseline", s(BASELINE))
        .set("baseline_dir", s("baselines"))
        .set("target", s("main"))
        .set("out", s(".gate/pre-push"))
        .set("command_line", s(COMMAND));
    shell_locals(&mut hook_vars, ".gate/pre-push");
    commands.extend(collect(PRE_PUSH, &read(PRE_PUSH), &hook_vars));
    Scenario {
        name: "local",
        commands,
        github: false,
    }
}

fn subcommands(cmds: &[GateCommand]) -> Vec<&str> {
    cmds.iter().map(GateCommand::sub).collect()
}

fn flags(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------
// Extraction and structure (run everywhere).
// ---------------------------------------------------------------------------

#[test]
fn lexer_and_expansion_follow_bash() {
    let mut v = Vars::default();
    v.set("REF", s("origin/main"))
        .set("EMPTY", s(""))
        .set("DIR", s("a b"))
        .set("arr", Val::A(vec!["x y".into(), "z".into()]))
        .set("none", Val::A(vec![]));
    let words = |t: &str| expand_words(t, &v, "test");
    assert_eq!(
        words(r#"${REF:+--baseline-ref "$REF"} ${EMPTY:+--x "$EMPTY"} "$DIR"/t.toml $DIR"#),
        vec!["--baseline-ref", "origin/main", "a b/t.toml", "a", "b"]
    );
    assert_eq!(
        words(r#"-- "${arr[@]}" "${none[@]}" 'lit $REF'"#),
        vec!["--", "x y", "z", "lit $REF"]
    );
    assert_eq!(words(r#""" "$EMPTY" $EMPTY"#), vec!["", ""]);
    assert_eq!(
        words(r#"${EMPTY:-fallback} \$REF"#),
        vec!["fallback", "$REF"]
    );

    let script = "if ! gate doctor >/dev/null 2>&1; then\n  exit 0\nfi\n\
                  gate check \\\n  --baseline b \\\n  -- python x.py || echo \"gate failed\"\n\
                  command -v gate >/dev/null || { echo \"no gate\"; exit 2; }\n\
                  NO_COLOR=1 gate diff a b | tee d.txt\n# gate check in a comment\n";
    let found = gate_commands_in(script);
    let subs: Vec<&str> = found.iter().map(|(_, w)| w[0].as_str()).collect();
    assert_eq!(subs, vec!["doctor", "check", "diff"], "{found:?}");
    assert_eq!(found[1].0, 4, "line of the first physical line");
    assert_eq!(
        found[1].1,
        vec!["check", "--baseline", "b", "--", "python", "x.py"]
    );
}

#[test]
#[should_panic(expected = "no value for $GATE_NEW")]
fn a_variable_without_a_test_value_fails_loudly() {
    let v = Vars::default();
    expand_words("--baseline \"$GATE_NEW\"", &v, "test");
}

#[test]
fn github_action_is_composite_with_a_shell_on_every_run_step() {
    let action = yaml(ACTION);
    assert_eq!(str_of(&action["runs"]["using"]), "composite");
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    for step in steps {
        if step.get("run").is_some() {
            assert!(
                step.get("shell").is_some(),
                "step '{}' has run: but no shell:",
                str_of(&step["name"])
            );
            // Inputs reach scripts through env:, never spliced into shell code.
            assert!(
                !str_of(&step["run"]).contains("${{"),
                "step '{}' puts an expression into its script; pass it through env:",
                str_of(&step["name"])
            );
        }
    }
    for out in ["verdict", "regressions"] {
        let value = str_of(&action["outputs"][out]["value"]);
        assert_eq!(
            value,
            format!("${{{{ steps.check.outputs.{out} || steps.ab.outputs.{out} }}}}")
        );
    }
    let upload = steps
        .iter()
        .find(|s| str_of(&s["uses"]).starts_with("actions/upload-artifact@"))
        .expect("an upload-artifact step");
    assert_eq!(str_of(&upload["if"]), "always()");
    let report = steps
        .iter()
        .find(|s| str_of(&s["run"]).contains("gate report"))
        .expect("a gate report step");
    assert_eq!(str_of(&report["if"]), "always()");
    for input in [
        "baseline",
        "command",
        "thresholds-file",
        "baseline-dir",
        "extra-args",
        "gate-version",
        "gate-sha256",
        "gate-binary",
    ] {
        assert!(
            action["inputs"].get(input).is_some(),
            "input '{input}' missing"
        );
    }
}

#[test]
fn github_action_gate_commands_use_the_contract_flags() {
    let sc = github_action_scenario();
    let cmds = &sc.commands;
    assert_eq!(
        subcommands(cmds),
        vec![
            "--version",
            "check",
            "--version",
            "ab",
            "--version",
            "capture",
            "diff",
            "report"
        ],
        "{cmds:#?}"
    );
    // mode ab: the same command in the two work trees, the thresholds from
    // the target branch, every report check writes.
    let ab = &cmds[3];
    assert_eq!(
        ab.long_flags(),
        flags(&[
            "--baseline",
            "--baseline-ref",
            "--config",
            "--threshold",
            "--rounds",
            "--junit",
            "--json",
            "--markdown",
            "--pr-comment",
            "--html",
            "--html-url",
            "--trace-dir",
            "--args-string",
            "--a",
            "--b",
        ])
    );
    assert_eq!(ab.flag("--baseline-ref"), Some("origin/main"));
    assert_eq!(ab.flag("--rounds"), Some("8"));
    assert_eq!(
        ab.flag("--a"),
        Some(format!("env -C .gate/ci/ab/a {COMMAND}").as_str())
    );
    assert_eq!(
        ab.flag("--b"),
        Some(format!("env -C .gate/ci/ab/b {COMMAND}").as_str())
    );
    assert_eq!(ab.flag("--json"), cmds[1].flag("--json"));
    let check = &cmds[1];
    assert_eq!(
        check.long_flags(),
        flags(&[
            "--baseline",
            "--baseline-dir",
            "--baseline-ref",
            "--config",
            "--threshold",
            "--accept",
            "--accept-labels",
            "--junit",
            "--json",
            "--markdown",
            "--pr-comment",
            "--html",
            "--html-url",
            "--trace-dir",
            "--args-string",
            "--command-string",
        ])
    );
    // The check page is written where the upload step takes it from, and
    // linked to the run's page (where GitHub lists the artifact).
    assert_eq!(check.flag("--html"), Some(".gate/ci/gate-check.html"));
    assert_eq!(
        check.flag("--html-url"),
        Some("https://github.example/acme/trainer/actions/runs/42")
    );
    assert_eq!(
        check.flag("--args-string"),
        Some("--tag source=template-test")
    );
    assert_eq!(check.flag("--baseline"), Some(BASELINE));
    assert_eq!(check.flag("--baseline-ref"), Some("origin/main"));
    assert_eq!(check.flag("--threshold"), Some("0.1"));
    assert_eq!(check.flag("--accept"), Some("gate-accept.toml"));
    assert_eq!(check.flag("--accept-labels"), Some("bug,perf-accepted"));
    assert_eq!(
        check.live(),
        vec!["python", "bench/train.py", "--seconds", "60"]
    );

    let capture = &cmds[5];
    assert_eq!(capture.flag("--runs"), Some("3"));
    assert_eq!(capture.flag("--commit"), Some(COMMIT));
    assert_eq!(capture.flag("--baseline-dir"), Some(".gate/ci/baselines"));
    assert!(
        !capture.has("--replace"),
        "CI never overwrites the committed baseline"
    );
    assert_eq!(
        cmds[6].argv,
        vec![
            "diff",
            &format!("baselines/{BASELINE}.toml"),
            &format!(".gate/ci/baselines/{BASELINE}.toml")
        ]
    );
    let report = &cmds[7];
    assert_eq!(report.argv[1], ".gate/ci/traces/*.jsonl");
    assert_eq!(report.flag("--html"), Some(".gate/ci/gate-report.html"));

    // What the check writes is what the upload step uploads.
    let action = yaml(ACTION);
    let upload = action["runs"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| str_of(&s["uses"]).starts_with("actions/upload-artifact@"))
        .unwrap();
    let gh = GithubCtx {
        declared_inputs: action["inputs"]
            .as_mapping()
            .unwrap()
            .iter()
            .map(|(k, v)| (str_of(k), v.clone()))
            .collect(),
        inputs: HashMap::new(),
        exprs: HashMap::new(),
    };
    let paths: Vec<String> = gh
        .resolve(&str_of(&upload["with"]["path"]), ACTION)
        .lines()
        .map(|l| l.trim().trim_start_matches("./").to_string())
        .collect();
    for file in [
        check.flag("--junit"),
        check.flag("--json"),
        check.flag("--markdown"),
        report.flag("--html"),
    ] {
        let file = file.unwrap();
        assert!(
            paths.iter().any(|p| p == file),
            "{file} is not uploaded: {paths:?}"
        );
    }
    assert!(paths.iter().any(|p| p == ".gate/ci/traces/"), "{paths:?}");
}

#[test]
fn example_workflow_gives_pull_request_code_no_write_access() {
    let text = read(WORKFLOW);
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("pull_request_target")),
        "no pull_request_target trigger"
    );
    // The header tells the truth about forks: the PR's own workflow file
    // runs, so the protection is approval plus a restricted runner group.
    for needle in [
        "Require approval for all external",
        "runner group",
        "No\n# condition in this file is a security boundary",
    ] {
        assert!(text.contains(needle), "{WORKFLOW} header lacks '{needle}'");
    }
    let wf = yaml(WORKFLOW);
    let action = yaml(ACTION);
    let declared: BTreeSet<String> = action["inputs"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(str_of)
        .collect();
    let mut gpu_jobs = 0;
    for (name, job) in wf["jobs"].as_mapping().unwrap() {
        let name = str_of(name);
        let runs_on: Vec<String> = match &job["runs-on"] {
            Value::Sequence(s) => s.iter().map(str_of).collect(),
            other => vec![str_of(other)],
        };
        if runs_on.iter().any(|l| l == "self-hosted") {
            gpu_jobs += 1;
            assert_eq!(runs_on, vec!["self-hosted", "gpu"], "job {name}");
            assert!(
                job.get("permissions").is_none(),
                "job {name} runs benchmark code: it keeps the workflow's read-only token"
            );
        }
        for step in job["steps"].as_sequence().unwrap() {
            if step.get("run").is_some() {
                assert!(
                    step.get("shell").is_some(),
                    "job {name}: run step without shell"
                );
            }
            if str_of(&step["uses"]) == "./ci-templates/github" {
                let with = step["with"].as_mapping().expect("with:");
                for k in with.keys().map(str_of) {
                    assert!(
                        declared.contains(&k),
                        "job {name}: action has no input '{k}'"
                    );
                }
                for req in ["baseline", "command"] {
                    assert!(
                        with.contains_key(req),
                        "job {name}: required input '{req}' missing"
                    );
                }
            }
            if str_of(&step["uses"]).starts_with("actions/checkout@")
                && runs_on.iter().any(|l| l == "self-hosted")
            {
                assert_eq!(
                    step["with"]["persist-credentials"],
                    Value::Bool(false),
                    "job {name}: the benchmark must not see the token"
                );
            }
        }
    }
    assert_eq!(gpu_jobs, 2, "check + capture");
    assert_eq!(str_of(&wf["permissions"]["contents"]), "read");
}

#[test]
fn pull_request_comment_is_posted_by_a_workflow_run_job_that_runs_no_pr_code() {
    let wf = yaml(COMMENT_WORKFLOW);
    let gpu_gate = yaml(WORKFLOW);
    // serde_yaml reads the key `on` as a string (YAML 1.2).
    let on = &wf["on"]["workflow_run"];
    assert_eq!(
        on["workflows"],
        Value::Sequence(vec![gpu_gate["name"].clone()]),
        "it must follow the workflow that runs the check"
    );
    assert_eq!(on["types"][0], Value::String("completed".into()));
    assert_eq!(
        wf["permissions"],
        Value::Mapping(Default::default()),
        "nothing by default"
    );
    let jobs = wf["jobs"].as_mapping().unwrap();
    assert_eq!(jobs.len(), 1);
    let job = jobs.values().next().unwrap();
    assert_eq!(str_of(&job["runs-on"]), "ubuntu-latest");
    let perms: BTreeMap<String, String> = job["permissions"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| (str_of(k), str_of(v)))
        .collect();
    assert_eq!(
        perms,
        [("actions", "read"), ("pull-requests", "write")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    );
    let steps = job["steps"].as_sequence().unwrap();
    assert!(
        steps
            .iter()
            .all(|st| !str_of(&st["uses"]).starts_with("actions/checkout")),
        "checking out code in a job with a write token is how pwn requests happen"
    );
    let download = &steps[0];
    // The action uploads gate-pr-comment-<baseline>; the pattern finds it.
    let action = yaml(ACTION);
    let upload = action["runs"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|st| str_of(&st["name"]) == "Upload the pull request comment")
        .expect("the action uploads the comment");
    let uploaded = str_of(&upload["with"]["name"]);
    let pattern = str_of(&download["with"]["pattern"]);
    assert!(
        uploaded.starts_with(pattern.trim_end_matches('*')),
        "{uploaded} vs {pattern}"
    );
    let script = str_of(&steps[1]["run"]);
    assert!(!script.contains("${{"), "expressions go through env:");
    for needle in [
        "HEAD_SHA",
        "gate-pr-comment:[A-Za-z0-9._-]{1,100}",
        "<!-- gate-changed:yes -->",
        "--method PATCH",
    ] {
        assert!(script.contains(needle), "comment script lacks '{needle}'");
    }
}

#[test]
fn gitlab_check_component_has_typed_inputs_retry_and_reports() {
    let (comp, sc) = gitlab_check_scenario();
    let mut types = BTreeSet::new();
    for (name, decl) in &comp.inputs {
        let ty = decl
            .get("type")
            .map(str_of)
            .unwrap_or_else(|| "string".into());
        assert!(
            ["string", "boolean", "number"].contains(&ty.as_str()),
            "input {name}: type {ty}"
        );
        assert!(
            decl.get("description").is_some(),
            "input {name} has no description"
        );
        if let Some(d) = decl.get("default") {
            let ok = match ty.as_str() {
                "string" => d.is_string(),
                "boolean" => d.is_bool(),
                _ => d.is_number(),
            };
            assert!(ok, "input {name}: default {d:?} is not a {ty}");
        }
        types.insert(ty);
    }
    assert_eq!(types, flags(&["boolean", "number", "string"]));
    assert!(
        comp.inputs["baseline"].get("default").is_none(),
        "baseline is required"
    );

    let job = &comp.jobs["gate-check"];
    assert_eq!(
        job["tags"],
        Value::Sequence(vec![Value::String("gpu".into())])
    );
    assert_eq!(job["retry"]["max"], Value::Number(2.into()));
    let codes: Vec<String> = job["retry"]["exit_codes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    // Only "gate or the runner could not measure" is retried: never a
    // regression (1), bad input (2), an inconclusive verdict (4) or the
    // benchmark's own failure (5), which would only fail again.
    assert_eq!(
        codes,
        vec![gpugate::exit_code::INFRA.to_string()],
        "retry exactly exit 3"
    );
    assert_eq!(str_of(&job["artifacts"]["when"]), "always");

    let script: Vec<String> = job["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    let all = script.join("\n");
    assert!(all.contains("git fetch"), "the target branch is fetched");
    assert_sections_balanced(&all, GL_CHECK);

    assert_eq!(
        subcommands(&sc.commands),
        vec!["--version", "ab", "check", "report"]
    );
    // mode ab: the same command in the two work trees, the same reports.
    let ab = &sc.commands[1];
    assert_eq!(
        ab.flag("--a"),
        Some(format!("env -C .gate/ci/ab/a {COMMAND}").as_str())
    );
    assert_eq!(
        ab.flag("--b"),
        Some(format!("env -C .gate/ci/ab/b {COMMAND}").as_str())
    );
    assert_eq!(ab.flag("--baseline-ref"), Some("origin/main"));
    assert_eq!(ab.flag("--rounds"), Some("8"));
    let check = &sc.commands[2];
    for flag in [
        "--junit",
        "--json",
        "--markdown",
        "--openmetrics",
        "--pr-comment",
        "--html",
    ] {
        assert_eq!(ab.flag(flag), check.flag(flag), "{flag}");
    }
    assert_eq!(check.flag("--baseline-ref"), Some("origin/main"));
    assert_eq!(
        check.long_flags(),
        flags(&[
            "--baseline",
            "--baseline-dir",
            "--baseline-ref",
            "--config",
            "--threshold",
            "--allow-env-mismatch",
            "--fail-on-improvement",
            "--accept",
            "--accept-labels",
            "--junit",
            "--json",
            "--markdown",
            "--openmetrics",
            "--pr-comment",
            "--html",
            "--html-url",
            "--trace-dir",
            "--args-string",
            "--command-string",
        ])
    );
    // The check page, linked from the note: a file of the job's artifacts.
    let page = check.flag("--html").expect("--html");
    assert_eq!(
        check.flag("--html-url").map(str::to_string),
        Some(format!(
            "https://gitlab.example/acme/trainer/-/jobs/9/artifacts/file/{page}"
        ))
    );
    // The reports GitLab reads are the files gate writes.
    assert_eq!(
        Some(str_of(&job["artifacts"]["reports"]["junit"]).as_str()),
        check.flag("--junit")
    );
    assert_eq!(
        Some(str_of(&job["artifacts"]["reports"]["metrics"]).as_str()),
        check.flag("--openmetrics")
    );
    assert_eq!(
        check.live(),
        vec!["python", "bench/train.py", "--seconds", "60"]
    );
}

fn assert_sections_balanced(script: &str, origin: &str) {
    let mut open = Vec::new();
    for line in script.lines() {
        if let Some(p) = line.find("section_start:") {
            let name = line[p..]
                .split(':')
                .nth(2)
                .unwrap()
                .split('[')
                .next()
                .unwrap();
            assert!(line.contains("\\e[0K"), "{origin}: {line}");
            open.push(name.split('\\').next().unwrap().to_string());
        }
        if let Some(p) = line.find("section_end:") {
            let name = line[p..]
                .split(':')
                .nth(2)
                .unwrap()
                .split('\\')
                .next()
                .unwrap();
            assert_eq!(
                open.pop().as_deref(),
                Some(name),
                "{origin}: section_end without start"
            );
        }
    }
    assert!(open.is_empty(), "{origin}: unclosed sections {open:?}");
}

#[test]
fn gitlab_capture_component_captures_on_the_default_branch() {
    let (comp, sc) = gitlab_capture_scenario();
    let job = &comp.jobs["gate-capture"];
    let rule = str_of(&job["rules"][0]["if"]);
    assert!(
        rule.contains("$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"),
        "{rule}"
    );
    assert_eq!(
        job["retry"]["exit_codes"],
        Value::Sequence(vec![Value::Number(gpugate::exit_code::INFRA.into())]),
        "retry exactly exit 3"
    );
    assert_eq!(comp.inputs["runs"]["type"], Value::String("number".into()));
    assert_eq!(
        subcommands(&sc.commands),
        vec!["--version", "capture", "diff"]
    );
    let capture = &sc.commands[1];
    assert_eq!(capture.flag("--runs"), Some("3"));
    assert_eq!(capture.flag("--commit"), Some(COMMIT));
    assert_eq!(capture.flag("--baseline-dir"), Some(".gate/ci/baselines"));
    assert_sections_balanced(
        &job["script"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(str_of)
            .collect::<Vec<_>>()
            .join("\n"),
        GL_CAPTURE,
    );
}

#[test]
fn local_recipes_check_against_the_target_branch() {
    let sc = local_scenario();
    let origins: Vec<String> = sc
        .commands
        .iter()
        .map(|c| format!("{} {}", c.origin, c.sub()))
        .collect();
    assert_eq!(
        subcommands(&sc.commands),
        vec!["check", "capture", "capture", "report", "doctor", "check"],
        "{origins:#?}"
    );
    let make_check = &sc.commands[0];
    assert_eq!(make_check.flag("--baseline-ref"), Some("origin/main"));
    assert_eq!(make_check.flag("--baseline"), Some(BASELINE));
    assert!(
        sc.commands[2].has("--replace"),
        "gate-refresh replaces on purpose"
    );
    assert!(
        !sc.commands[1].has("--replace"),
        "gate-capture must not overwrite"
    );
    assert_eq!(sc.commands[2].flag("--commit"), Some(COMMIT));
    assert_eq!(sc.commands[3].argv[1], ".gate/local/traces/seed.jsonl");
    let hook = &sc.commands[5];
    assert_eq!(hook.flag("--baseline-ref"), Some("origin/main"));
    assert_eq!(
        hook.live(),
        vec!["python", "bench/train.py", "--seconds", "60"]
    );
    let mode = std::fs::metadata(root(PRE_PUSH)).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert!(
            mode.permissions().mode() & 0o111 != 0,
            "the hook must be executable"
        );
    }
    let _ = mode;
}

// ---------------------------------------------------------------------------
// Synthetic traces (tests/data) and the run test.
// ---------------------------------------------------------------------------

/// The three runs the run test replays: real fixtures when they exist.
fn replay_traces() -> Vec<PathBuf> {
    let real: Vec<PathBuf> = (1..=3)
        .map(|i| root(&format!("fixtures/traces/healthy-{i}.jsonl")))
        .collect();
    if real.iter().all(|p| p.exists()) {
        return real;
    }
    (1..=3)
        .map(|i| root(&format!("tests/data/synthetic-healthy-{i}.jsonl")))
        .collect()
}

/// Turn a template's command into one that runs here: live measurement ->
/// `--replay`, `--baseline-ref` -> `HEAD` of the temp repository (dropped
/// when `git_ref` is false), hardware-only commands parse-only.
fn runnable(cmd: &GateCommand, traces: &[PathBuf], cwd: &Path, git_ref: bool) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    let mut it = cmd.argv.iter().peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => break,
            "--pid" | "--command-string" => {
                it.next();
            }
            "--baseline-ref" => {
                it.next();
                if git_ref {
                    argv.extend(["--baseline-ref".to_string(), "HEAD".to_string()]);
                }
            }
            _ => argv.extend(glob(a, cwd)),
        }
    }
    let replay = |n: usize| {
        traces
            .iter()
            .cycle()
            .take(n)
            .map(|p| p.display().to_string())
    };
    match cmd.sub() {
        "check" => {
            argv.push("--replay".into());
            argv.extend(replay(1));
        }
        "capture" => {
            let runs: usize = cmd.flag("--runs").map(|r| r.parse().unwrap()).unwrap_or(3);
            argv.push("--replay".into());
            argv.extend(replay(runs));
        }
        "report" if argv.iter().skip(1).all(|a| !a.ends_with(".jsonl")) => {
            argv.push("--replay".into());
            argv.extend(replay(1));
        }
        // They need a GPU: check that the flags parse, nothing more (ab
        // runs the two work trees' builds, which a template test has not).
        "doctor" | "record" | "ab" => argv.push("--help".into()),
        _ => {}
    }
    argv
}

fn run_scenario(sc: &Scenario, traces: &[PathBuf]) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let gate = env!("CARGO_BIN_EXE_gate");
    let base = |args: &[String]| {
        let mut c = std::process::Command::new(gate);
        c.args(args)
            .current_dir(cwd)
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_OUTPUT")
            .env_remove("GITHUB_STEP_SUMMARY");
        c
    };
    // The committed baseline and config the templates find in a checkout,
    // and a trace where the report steps look for recorded runs.
    std::fs::write(cwd.join("gate.toml"), "[defaults]\nthreshold = 0.10\n").unwrap();
    // The change's accept file, in its working tree (never committed to the
    // target): an entry for another baseline, so nothing is accepted here.
    std::fs::write(
        cwd.join("gate-accept.toml"),
        "[[accept]]\nbaseline = \"other\"\nmetrics = [\"samples_per_s\"]\nmax_change_pct = 5\nreason = \"template test\"\n",
    )
    .unwrap();
    let mut seed = vec![
        "capture".to_string(),
        "--baseline".into(),
        BASELINE.into(),
        "--baseline-dir".into(),
        "baselines".into(),
        "--replay".into(),
    ];
    seed.extend(traces.iter().map(|p| p.display().to_string()));
    let out = base(&seed).output().unwrap();
    assert!(
        out.status.success(),
        "{}: seeding the baseline failed: {}",
        sc.name,
        String::from_utf8_lossy(&out.stderr)
    );
    for d in [
        ".gate/ci/traces",
        ".gate/local/traces",
        ".gate/pre-push/traces",
    ] {
        std::fs::create_dir_all(cwd.join(d)).unwrap();
        std::fs::copy(&traces[0], cwd.join(d).join("seed.jsonl")).unwrap();
    }
    // Commit baseline and config, as a checkout of the target branch has
    // them, so `--baseline-ref HEAD` reads them through git like CI does.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args([
                "-c",
                "user.name=gate-test",
                "-c",
                "user.email=gate@test.invalid",
            ])
            .args(args)
            .current_dir(cwd)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    let git_ref = git(&["init", "-q"])
        && git(&["add", "gate.toml", "baselines"])
        && git(&["commit", "-q", "-m", "baseline"]);
    if !git_ref {
        eprintln!(
            "{}: no git here; --baseline-ref is dropped instead",
            sc.name
        );
    }

    // Every flag must exist in the CLI definition before anything runs: a
    // clearer message than the binary's exit code 2.
    for cmd in &sc.commands {
        let argv = runnable(cmd, traces, cwd, git_ref);
        let parse = std::iter::once("gate".to_string()).chain(argv.iter().cloned());
        if let Err(e) = <gpugate::cli::Cli as clap::Parser>::try_parse_from(parse) {
            use clap::error::ErrorKind::*;
            assert!(
                matches!(e.kind(), DisplayHelp | DisplayVersion),
                "{}: gate {}\n{e}",
                cmd.origin,
                argv.join(" ")
            );
        }
    }

    for (i, cmd) in sc.commands.iter().enumerate() {
        let argv = runnable(cmd, traces, cwd, git_ref);
        if cmd.sub() == "capture" && !cmd.has("--replace") {
            // A capture without --replace is a first capture (gate.mk's
            // gate-capture): the seeded baseline must not be in its way.
            let dir = cmd.flag("--baseline-dir").unwrap_or("baselines");
            let name = cmd.flag("--baseline").unwrap();
            let _ = std::fs::remove_file(cwd.join(dir).join(format!("{name}.toml")));
        }
        let mut c = base(&argv);
        let gh_output = cwd.join(format!("github-output-{i}"));
        if sc.github {
            c.env("GITHUB_ACTIONS", "true")
                .env("GITHUB_OUTPUT", &gh_output)
                .env("GITHUB_STEP_SUMMARY", cwd.join("step-summary.md"));
        }
        let out = c.output().unwrap();
        let what = format!("{}: gate {}", cmd.origin, argv.join(" "));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let file = |flag: &str| cmd.flag(flag).map(|p| cwd.join(p));
        match cmd.sub() {
            "check" => {
                if let Some(j) = file("--junit") {
                    let xml = std::fs::read_to_string(&j).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(xml.contains("<testsuite"), "{what}: {xml}");
                }
                for flag in ["--json", "--markdown"] {
                    if let Some(p) = file(flag) {
                        assert!(
                            std::fs::metadata(&p).map(|m| m.len() > 0).unwrap_or(false),
                            "{what}: {flag} file empty or missing"
                        );
                    }
                }
                if let Some(p) = file("--pr-comment") {
                    let text =
                        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(
                        COMMENT_MARKER.is_match(&text),
                        "{what}: no marker in {text}"
                    );
                    assert!(
                        text.lines().next().unwrap().starts_with("**gate: "),
                        "{what}: {text}"
                    );
                }
                if let Some(p) = file("--openmetrics") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    assert!(
                        text.ends_with("# EOF\n"),
                        "{what}: OpenMetrics must end with # EOF"
                    );
                }
                if sc.github {
                    let outputs = std::fs::read_to_string(&gh_output).unwrap_or_default();
                    assert!(
                        outputs.lines().any(|l| l == "verdict=pass"),
                        "{what}: GITHUB_OUTPUT={outputs}"
                    );
                    assert!(
                        outputs.lines().any(|l| l == "regressions=0"),
                        "{what}: GITHUB_OUTPUT={outputs}"
                    );
                }
            }
            "capture" => {
                let dir = cmd.flag("--baseline-dir").unwrap_or("baselines");
                let name = cmd.flag("--baseline").unwrap();
                let toml = cwd.join(dir).join(format!("{name}.toml"));
                assert!(toml.exists(), "{what}: no {}", toml.display());
            }
            "report" => {
                if let Some(p) = file("--html") {
                    let html =
                        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(html.to_lowercase().contains("<html"), "{what}");
                }
            }
            "diff" => assert!(!out.stdout.is_empty(), "{what}: empty diff output"),
            _ => {}
        }
    }
}

#[test]
fn template_commands_run_against_the_real_binary() {
    let traces = replay_traces();
    let scenarios = [
        github_action_scenario(),
        gitlab_check_scenario().1,
        gitlab_capture_scenario().1,
        local_scenario(),
    ];
    let total: usize = scenarios.iter().map(|s| s.commands.len()).sum();
    assert_eq!(total, 8 + 4 + 3 + 6);
    for sc in &scenarios {
        run_scenario(sc, &traces);
    }
}

// ---------------------------------------------------------------------------
// Install script, pinned checksums, shell evaluation, GitLab include route.
// ---------------------------------------------------------------------------

/// The marker both comment-posting scripts search for (their regex).
static COMMENT_MARKER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?m)^<!-- gate-pr-comment:[A-Za-z0-9._-]{1,100} -->$").unwrap()
});

/// Lines strictly between `begin` and `end` marker lines (markers included
/// when `with_markers`), each with `indent` leading spaces removed.
fn marked_block(
    text: &str,
    begin: &str,
    end: &str,
    indent: usize,
) -> Option<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let b = lines.iter().position(|l| l.trim() == begin)?;
    let e = b + lines[b..].iter().position(|l| l.trim() == end)?;
    let body: Vec<String> = lines[b..=e]
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end().to_string())
        .collect();
    Some((b, e, body.join("\n")))
}

/// The GitLab components carry a byte-identical copy of
/// ci-templates/install-gate.sh's function (a component cannot ship files)
/// and of the pinned release checksums. `GATE_BLESS=1` rewrites the copies.
#[test]
fn gitlab_components_carry_the_install_script_and_the_pinned_checksums() {
    const IND: usize = 6;
    let script = read(INSTALL_SCRIPT);
    let (_, _, install) = marked_block(
        &script,
        "# --- BEGIN install-gate ---",
        "# --- END install-gate ---",
        0,
    )
    .expect("install-gate.sh has the markers");
    let sums: Vec<String> = read(RELEASE_CHECKSUMS)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(String::from)
        .collect();
    for l in &sums {
        let (sha, file) = l.split_once("  ").expect("sha256sum format");
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{l}"
        );
        assert!(
            (file.starts_with("gate-") && file.ends_with(".tar.gz"))
                || (file.starts_with("gpugate-") && file.ends_with(".whl")),
            "{l}"
        );
    }
    let checksums = std::iter::once("# --- BEGIN release-checksums ---".to_string())
        .chain(sums)
        .chain(std::iter::once(
            "# --- END release-checksums ---".to_string(),
        ))
        .collect::<Vec<_>>()
        .join("\n");
    for rel in [GL_CHECK, GL_CAPTURE] {
        let mut text = read(rel);
        for (begin, end, want) in [
            (
                "# --- BEGIN install-gate ---",
                "# --- END install-gate ---",
                &install,
            ),
            (
                "# --- BEGIN release-checksums ---",
                "# --- END release-checksums ---",
                &checksums,
            ),
        ] {
            let (b, e, have) = marked_block(&text, begin, end, IND)
                .unwrap_or_else(|| panic!("{rel}: no '{begin}' block"));
            if &have == want {
                continue;
            }
            if std::env::var_os("GATE_BLESS").is_some() {
                let mut lines: Vec<String> = text.lines().map(String::from).collect();
                let fresh: Vec<String> = want
                    .lines()
                    .map(|l| {
                        if l.is_empty() {
                            String::new()
                        } else {
                            format!("{}{l}", " ".repeat(IND))
                        }
                    })
                    .collect();
                lines.splice(b..=e, fresh);
                text = lines.join("\n") + "\n";
                std::fs::write(root(rel), &text).unwrap();
            } else {
                panic!(
                    "{rel}: the '{begin}' block differs from its source; rerun with GATE_BLESS=1"
                );
            }
        }
        // And it is really used: the install item defines and calls it.
        let comp = gitlab_component(
            rel,
            &[
                ("baseline", Value::String(BASELINE.into())),
                ("command", Value::String(COMMAND.into())),
            ],
        );
        let job = comp.jobs.values().next().unwrap();
        let all: String = job["script"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(str_of)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            all.contains("gate_install() {") && all.contains("gate_install || exit $?"),
            "{rel}"
        );
        let cache = &job["cache"];
        assert_eq!(
            str_of(&cache["paths"][0]),
            ".gate/cache/",
            "{rel}: the install cache"
        );
    }
}

/// No template evaluates user input as shell code: no `eval`, no unquoted
/// expansion of the command or extra-args, and the strings reach gate whole.
#[test]
fn no_template_evaluates_user_input() {
    for rel in [
        ACTION,
        WORKFLOW,
        COMMENT_WORKFLOW,
        GL_CHECK,
        GL_CAPTURE,
        MAKEFILE,
        PRE_PUSH,
        INSTALL_SCRIPT,
    ] {
        let text = read(rel);
        for (n, line) in text.lines().enumerate() {
            let code = line.split(" #").next().unwrap().trim_start();
            if code.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = code
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .collect();
            assert!(!words.contains(&"eval"), "{rel}:{}: eval: {line}", n + 1);
            for var in ["GATE_COMMAND", "GATE_EXTRA_ARGS", "command_line"] {
                for bad in [format!(" ${var}"), format!("${{{var}}} ")] {
                    assert!(
                        !code.contains(&bad) || code.contains(&format!("\"${var}\"")),
                        "{rel}:{}: unquoted ${var}: {line}",
                        n + 1
                    );
                }
            }
        }
    }
    // Every live gate command in them passes the command as one string.
    for sc in [
        github_action_scenario(),
        gitlab_check_scenario().1,
        gitlab_capture_scenario().1,
        local_scenario(),
    ] {
        for c in &sc.commands {
            if matches!(c.sub(), "check" | "capture") {
                assert_eq!(c.flag("--command-string"), Some(COMMAND), "{}", c.origin);
                assert!(!c.argv.contains(&"--".to_string()), "{}", c.origin);
            }
        }
    }
}

#[test]
fn gitlab_comment_job_runs_no_merge_request_code_and_keeps_the_token_away() {
    let (comp, _) = gitlab_check_scenario();
    let job = &comp.jobs["gate-check-comment"];
    assert_eq!(str_of(&job["needs"][0]["job"]), "gate-check");
    assert_eq!(
        str_of(&job["variables"]["GIT_STRATEGY"]),
        "none",
        "no checkout of the MR's code"
    );
    assert_eq!(str_of(&job["environment"]["name"]), "gate-notes");
    assert_eq!(str_of(&job["environment"]["action"]), "access");
    assert!(job.get("tags").is_none(), "not on the GPU runner");
    let script = str_of(&job["script"][0]);
    for needle in [
        "GATE_NOTE_TOKEN",
        "gate-pr-comment:[A-Za-z0-9._-]{1,100}",
        "<!-- gate-changed:yes -->",
        "--request PUT",
    ] {
        assert!(script.contains(needle), "comment script lacks '{needle}'");
    }
    // The GPU job never names the token.
    let gpu = serde_yaml::to_string(&comp.jobs["gate-check"]).unwrap();
    assert!(!gpu.contains("GATE_NOTE_TOKEN"));
    // The note it posts is the file the check writes.
    let (_, sc) = gitlab_check_scenario();
    let check = sc.commands.iter().find(|c| c.sub() == "check").unwrap();
    assert_eq!(
        check.flag("--pr-comment"),
        Some(str_of(&job["variables"]["GATE_NOTE"]).as_str())
    );
    // Default-branch pipelines run the check too (their OpenMetrics are what
    // the merge request widget compares with).
    let rules = comp.jobs["gate-check"]["rules"].as_sequence().unwrap();
    assert!(rules.iter().any(|r| str_of(&r["if"])
        .contains("$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH")
        && str_of(&r["when"]) == "on_success"));
}

/// The `include:` routes the docs show resolve: a component name maps to
/// `templates/<name>.yml` at the repository root (what `include: component:`
/// looks up), an `include: project:` names an existing file, and every input
/// the examples pass is declared while every required one is passed. The
/// examples are YAML that the CI schema check also validates
/// (GATE_TEMPLATE_EXPORT_DIR, see .ci/run).
#[test]
fn documented_gitlab_include_routes_resolve() {
    let docs = ["ci-templates/README.md", "ci-templates/gitlab/README.md"];
    let mut includes = 0;
    for doc in docs {
        let text = read(doc);
        for (i, block) in text.split("```yaml\n").skip(1).enumerate() {
            let yaml_text = block.split("```").next().unwrap();
            if !yaml_text.contains("include:") {
                continue;
            }
            let v: Value = serde_yaml::from_str(yaml_text)
                .unwrap_or_else(|e| panic!("{doc} yaml block {i}: {e}"));
            export_for_schema_check(
                &format!("include-example-{}-{i}.yml", doc.replace('/', "_")),
                yaml_text,
            );
            for inc in v["include"].as_sequence().unwrap() {
                let file = if let Some(c) = inc.get("component") {
                    let c = str_of(c);
                    let name = c
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .split('@')
                        .next()
                        .unwrap()
                        .to_string();
                    assert!(c.contains("/gpugate/"), "{doc}: {c}");
                    format!("templates/{name}.yml")
                } else if inc.get("project").is_some() {
                    str_of(&inc["file"]).trim_start_matches('/').to_string()
                } else {
                    continue;
                };
                assert!(
                    root(&file).exists(),
                    "{doc}: include resolves to missing {file}"
                );
                let docs = yaml_docs(&file);
                let declared = docs[0]["spec"]["inputs"].as_mapping().unwrap();
                let given = inc["inputs"].as_mapping().cloned().unwrap_or_default();
                for k in given.keys() {
                    assert!(declared.contains_key(k), "{doc}: {file} has no input {k:?}");
                }
                for (k, d) in declared {
                    assert!(
                        d.get("default").is_some() || given.contains_key(k),
                        "{doc}: required input {k:?} of {file} not given"
                    );
                }
                includes += 1;
            }
        }
    }
    assert!(
        includes >= 3,
        "component and project routes documented: {includes}"
    );
}

/// With GATE_TEMPLATE_EXPORT_DIR set (.ci/run sets it), write `text` there
/// for check-jsonschema.
fn export_for_schema_check(name: &str, text: &str) {
    if let Some(dir) = std::env::var_os("GATE_TEMPLATE_EXPORT_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The GitLab components with their inputs filled in (defaults plus the
/// scenario's), as GitLab would see them: `.ci/run` validates these against
/// the gitlab-ci schema (spec headers cannot be validated filled in).
#[test]
fn gitlab_components_filled_in_for_the_schema_check() {
    for (rel, name) in [(GL_CHECK, "gate-check"), (GL_CAPTURE, "gate-capture")] {
        let comp = gitlab_component(
            rel,
            &[
                ("baseline", Value::String(BASELINE.into())),
                ("command", Value::String(COMMAND.into())),
            ],
        );
        let jobs: serde_yaml::Mapping = comp
            .jobs
            .iter()
            .map(|(k, v)| (Value::String(k.clone()), v.clone()))
            .collect();
        let mut doc = serde_yaml::Mapping::new();
        doc.insert(
            Value::String("stages".into()),
            Value::Sequence(vec![Value::String("test".into())]),
        );
        doc.extend(jobs);
        let text = serde_yaml::to_string(&Value::Mapping(doc)).unwrap();
        assert!(!text.contains("$[["), "{rel}: uninterpolated input left");
        export_for_schema_check(&format!("{name}.filled.gitlab-ci.yml"), &text);
        // The `spec:` header is a document of its own (check-jsonschema
        // reads one document per file).
        let raw = read(rel);
        let header = raw.split("\n---\n").next().unwrap();
        export_for_schema_check(&format!("{name}.spec.gitlab-ci.yml"), header);
    }
}

/// Issue 20.3: the check templates hand gate the change's accept file from
/// the PR/MR head's working tree (a plain file test, never `git show` of
/// the target), and the request's labels; the permission and its bounds
/// stay in the target's gate.toml, which `--baseline-ref` reads.
#[test]
fn check_templates_wire_the_accept_file_from_the_head_and_the_labels() {
    for (rel, labels) in [
        (ACTION, "GATE_PR_LABELS"),
        (GL_CHECK, "CI_MERGE_REQUEST_LABELS"),
    ] {
        let t = read(rel);
        assert!(
            t.contains(r#"${gate_accept:+--accept "$gate_accept"}"#),
            "{rel}"
        );
        assert!(
            t.contains(&format!(r#"${{{labels}:+--accept-labels "${labels}"}}"#)),
            "{rel}"
        );
        assert!(t.contains(r#"[ -f "$GATE_ACCEPT_FILE" ]"#), "{rel}");
        assert!(
            !t.contains(r#":./$GATE_ACCEPT_FILE"#),
            "{rel}: read from the head, not a ref"
        );
    }
    assert!(read(ACTION).contains("join(github.event.pull_request.labels.*.name, ',')"));
}
