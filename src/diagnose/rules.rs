//! Rules as data: loading the built-in `rules.toml` and the user's
//! `[rules.<name>]` tables from gate.toml into checked, parsed rules, and
//! rendering their texts with values.
//!
//! Every expression (condition, evidence, `{placeholders}` in texts) is
//! parsed when the rule is loaded: a typo is an error with the rule name,
//! the field and the column, never a rule that silently never fires.

use super::dsl::{self, Expr, ParseError, Type, Vocabulary};
use super::Severity;
use crate::metrics::Statistic;
use crate::stats::{MetricSource, Stat};
use std::collections::BTreeMap;

/// Fields a rule table may have.
pub(crate) const FIELDS: &[&str] = &[
    "when",
    "change_when",
    "explains",
    "for",
    "severity",
    "order",
    "title",
    "explanation",
    "change",
    "change_nogpm",
    "next_steps",
    "next_steps_for",
    "evidence",
    "enabled",
];

/// Frameworks `next_steps_for` may name (`framework::NAMES`).
pub(crate) use crate::analysis::framework::NAMES as FRAMEWORKS;

/// Reading order given to user rules that do not say.
pub(crate) const DEFAULT_USER_ORDER: u32 = 5;

/// Where a rule came from (shown by reports, so users know what they changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    /// A built-in rule the user re-configured in gate.toml.
    Overridden,
    User,
}

/// One checked rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub title: String,
    pub severity: Severity,
    /// Reading order, 0 = look first (docs/counters.md).
    pub order: u32,
    pub enabled: bool,
    pub origin: Origin,
    /// Source text of the condition.
    pub when: String,
    pub(crate) cond: Expr,
    /// Condition on a change (baseline -> new run), with `base()`,
    /// `delta()`, `ratio()` and `z()`. When present it alone decides whether
    /// the rule explains a change; without it the rule explains a change
    /// when `when` holds in the new run and not in the baseline.
    pub(crate) change_when: Option<(String, Expr)>,
    /// The share of a slowdown (0..1) the cause can account for, read on a
    /// change (`share()`); findings of a change are ranked by it.
    pub explains: Option<(String, Expr)>,
    /// (source text, parsed) of each evidence expression.
    pub evidence: Vec<(String, Expr)>,
    pub explanation: Template,
    pub change: Option<Template>,
    /// The change text for a run without GPM (`sm_active_pct` unknown):
    /// says which causes NVML's counters cannot tell apart. None: `change`.
    pub(crate) change_nogpm: Option<Template>,
    /// Generic things to try (the framework is unknown).
    pub next_steps: Vec<String>,
    /// Things to try in the words of one framework (`FRAMEWORKS`), used
    /// instead of `next_steps` when the run's framework is known.
    pub(crate) next_steps_for: BTreeMap<String, Vec<String>>,
    /// `for = "5m"`: for `gate watch`, the condition must hold over a
    /// sliding window this long (its statistics are the window's) before
    /// the rule alerts. None: the watch's default window. A whole run
    /// (check, report) ignores it.
    pub(crate) hold_for: Option<std::time::Duration>,
}

/// What a `{placeholder}` shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Slot {
    /// `{expr}`: the value in the (new) run.
    Value,
    /// `{base:expr}`: the value in the baseline.
    Base,
    /// `{change:expr}`: "rose from A to B" / "fell from A to B" / "stayed at A".
    Change,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Expr(Slot, Expr),
    /// `{if COND: text}`: the text (which may hold placeholders) only when
    /// COND is definitely true, so that the evidence that held chooses the
    /// words (a rule with an escape clause does not claim what its escape
    /// let through).
    If(Expr, Template),
}

/// A text with `{expr}` placeholders (`{{` and `}}` for literal braces).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    pub source: String,
    pub(crate) pieces: Vec<Piece>,
}

impl Template {
    pub fn parse(src: &str, vocab: &Vocabulary) -> Result<Template, ParseError> {
        let chars: Vec<char> = src.chars().collect();
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '{' if chars.get(i + 1) == Some(&'{') => {
                    text.push('{');
                    i += 2;
                }
                '}' if chars.get(i + 1) == Some(&'}') => {
                    text.push('}');
                    i += 2;
                }
                '{' => {
                    let open = i;
                    let Some(close) = matching_brace(&chars[i..]) else {
                        return Err(ParseError {
                            column: open + 1,
                            message: "'{' without a closing '}' (write '{{' for a literal brace)"
                                .into(),
                        });
                    };
                    let inner: String = chars[i + 1..i + close].iter().collect();
                    if let Some(rest) = inner.strip_prefix("if ") {
                        let Some(colon) = rest.find(':') else {
                            return Err(ParseError {
                                column: open + 1,
                                message: "'{if' needs a ':' after its condition ({if COND: text})"
                                    .into(),
                            });
                        };
                        let cond_src = &rest[..colon];
                        let body_src = rest[colon + 1..]
                            .strip_prefix(' ')
                            .unwrap_or(&rest[colon + 1..]);
                        let cond =
                            dsl::parse(cond_src, Type::Bool, vocab).map_err(|e| ParseError {
                                column: open + 1 + 3 + e.column,
                                message: e.message,
                            })?;
                        let body_offset = open + 1 + inner.len() - body_src.len();
                        let body = Template::parse(body_src, vocab).map_err(|e| ParseError {
                            column: body_offset + e.column,
                            message: e.message,
                        })?;
                        if !text.is_empty() {
                            pieces.push(Piece::Text(std::mem::take(&mut text)));
                        }
                        pieces.push(Piece::If(cond, body));
                        i += close + 1;
                        continue;
                    }
                    let (slot, body, offset) = if let Some(b) = inner.strip_prefix("change:") {
                        (Slot::Change, b, 7)
                    } else if let Some(b) = inner.strip_prefix("base:") {
                        (Slot::Base, b, 5)
                    } else {
                        (Slot::Value, inner.as_str(), 0)
                    };
                    let expr = dsl::parse(body, Type::Num, vocab).map_err(|e| ParseError {
                        column: open + 1 + offset + e.column,
                        message: e.message,
                    })?;
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Expr(slot, expr));
                    i += close + 1;
                }
                '}' => {
                    return Err(ParseError {
                        column: i + 1,
                        message: "'}' without an opening '{' (write '}}' for a literal brace)"
                            .into(),
                    })
                }
                c => {
                    text.push(c);
                    i += 1;
                }
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Template {
            source: src.to_string(),
            pieces,
        })
    }

    /// Fill the placeholders from `new` (and `base` when comparing).
    pub fn render(&self, base: Option<&dyn MetricSource>, new: &dyn MetricSource) -> String {
        let mut out = String::new();
        self.render_into(base, new, &mut out, &mut Vec::new());
        out
    }

    /// `render`, also listing the placeholders' expressions the text shows
    /// (in reading order): the finding's evidence table must hold them.
    pub(crate) fn render_used(
        &self,
        base: Option<&dyn MetricSource>,
        new: &dyn MetricSource,
    ) -> (String, Vec<Expr>) {
        let (mut out, mut used) = (String::new(), Vec::new());
        self.render_into(base, new, &mut out, &mut used);
        (out, used)
    }

    fn render_into(
        &self,
        base: Option<&dyn MetricSource>,
        new: &dyn MetricSource,
        out: &mut String,
        used: &mut Vec<Expr>,
    ) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::If(cond, body) => {
                    if dsl::eval_bool(cond, new) == Some(true) {
                        body.render_into(base, new, out, used);
                    }
                }
                Piece::Expr(slot, e) => {
                    used.push(e.clone());
                    let now = dsl::eval_num(e, new, None);
                    let before = base.and_then(|b| dsl::eval_num(e, b, None));
                    let s = match (slot, base) {
                        (Slot::Value, _) => with_unit(now, e),
                        (Slot::Base, _) => with_unit(before, e),
                        (Slot::Change, None) => format!("is {}", with_unit(now, e)),
                        (Slot::Change, Some(_)) => change_words(before, now, e),
                    };
                    out.push_str(&s);
                }
            }
        }
    }
}

/// Length up to the `}` that closes the `{` at `chars[0]` (nested
/// `{placeholders}` inside an `{if ...: text}` included).
fn matching_brace(chars: &[char]) -> Option<usize> {
    let mut depth = 0usize;
    for (k, c) in chars.iter().enumerate() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// "fell from 94 % to 0.3 %", "rose from 3 % to 77 %", "stayed at 5 %".
pub(crate) fn change_words(before: Option<f64>, now: Option<f64>, e: &Expr) -> String {
    let (b, n) = (with_unit(before, e), with_unit(now, e));
    match (before, now) {
        (Some(x), Some(y)) if b == n || x == y => format!("stayed at {n}"),
        (Some(x), Some(y)) if y < x => format!("fell from {b} to {n}"),
        (Some(_), Some(_)) => format!("rose from {b} to {n}"),
        (None, Some(_)) => format!("is {n} (baseline: n/a)"),
        (_, None) => format!("is n/a (baseline: {b})"),
    }
}

/// Unit of an expression's value, when it has one (for "94 %", "20270 MiB/s").
pub(crate) fn unit_of(e: &Expr) -> Option<&'static str> {
    match e {
        Expr::Ident(dsl::Ident::Stat { metric, stat }) => {
            if *stat == Stat::N {
                return None;
            }
            crate::metrics::find(metric)
                .map(|d| d.unit)
                .filter(|u| *u != "count")
        }
        Expr::Ident(dsl::Ident::Feature(name)) => {
            let feature = name.rsplit('.').next().unwrap_or("");
            if feature.ends_with("_pct") {
                Some("%")
            } else if feature.ends_with("_s") {
                Some("s")
            } else if feature.ends_with("per_min") {
                Some("/min")
            } else {
                None
            }
        }
        Expr::Neg(a) => unit_of(a),
        Expr::Call(_, args) => args.first().and_then(unit_of),
        Expr::Arith(dsl::ArithOp::Add | dsl::ArithOp::Sub, a, b) => {
            let u = unit_of(a);
            (u == unit_of(b)).then_some(u).flatten()
        }
        _ => None,
    }
}

/// A value with its unit, or "n/a" when missing.
pub(crate) fn with_unit(v: Option<f64>, e: &Expr) -> String {
    match v {
        None => "n/a".into(),
        Some(x) => value_text(x, unit_of(e)),
    }
}

/// How every number of a finding prints, in its text and in its evidence
/// table alike (so the two never disagree in a digit).
pub(crate) fn value_text(v: f64, unit: Option<&str>) -> String {
    match unit {
        Some(u) => format!("{} {u}", crate::format::number(v)),
        None => crate::format::number(v),
    }
}

/// What an expression is called in a finding's evidence table: the
/// metrics' and features' human names (`metrics::label`,
/// `features::label`), never an internal id when a name exists.
pub(crate) fn label_of(e: &Expr) -> String {
    use dsl::{ArithOp, Func, Ident};
    // Composite expressions the built-in rules use, by their meaning.
    let canonical = e.to_string();
    let named = match canonical.as_str() {
        "sm_active_pct.mean / gpu_busy_pct.mean" => Some("SM active per busy second"),
        "mem_busy_pct.mean / gpu_busy_pct.mean" => Some("memory-controller busy per busy second"),
        "gpu_busy_pct.mean / benchmark.work_rate" => Some("GPU busy per unit of work"),
        "processes.mean - other_processes.mean" => Some("benchmark's processes per GPU"),
        "pcie_rx_mib_s.mean + pcie_tx_mib_s.mean" | "pcie_tx_mib_s.mean + pcie_rx_mib_s.mean" => {
            Some("PCIe traffic, both ways")
        }
        "nvlink_rx_mib_s.mean + nvlink_tx_mib_s.mean"
        | "nvlink_tx_mib_s.mean + nvlink_rx_mib_s.mean" => Some("NVLink traffic, both ways"),
        _ => None,
    };
    if let Some(n) = named {
        return n.to_string();
    }
    match e {
        Expr::Ident(Ident::Stat { metric, stat }) => {
            let name = crate::metrics::label(metric);
            match stat {
                Stat::Of(Statistic::Mean) => name.to_string(),
                Stat::N => format!("{name}, samples"),
                s => format!("{name}, {s}"),
            }
        }
        Expr::Ident(Ident::Feature(f)) => crate::analysis::features::label(f)
            .map(str::to_string)
            .unwrap_or_else(|| f.clone()),
        Expr::Ident(Ident::GpuCount) => "GPUs".to_string(),
        Expr::Num(v) => crate::format::number(*v),
        Expr::Neg(a) => format!("minus {}", label_of(a)),
        Expr::Arith(op, a, b) => {
            let sym = match op {
                ArithOp::Add => "+",
                ArithOp::Sub => "-",
                ArithOp::Mul => "x",
                ArithOp::Div => "/",
            };
            format!("{} {sym} {}", label_of(a), label_of(b))
        }
        Expr::Call(f, args) => {
            let a = args.first().map(label_of).unwrap_or_default();
            match f {
                Func::Spread => format!("{a}, spread between GPUs"),
                Func::GpuMin => format!("{a}, lowest GPU"),
                Func::GpuMax => format!("{a}, highest GPU"),
                Func::GpuMean => format!("{a}, mean of GPUs"),
                Func::Coalesce | Func::Abs => a,
                Func::Base => format!("{a}, baseline"),
                Func::Delta => format!("{a}, change"),
                Func::Ratio => format!("{a}, new / baseline"),
                Func::Z => format!("{a}, change in noise bands"),
                _ => canonical,
            }
        }
        _ => canonical,
    }
}

/// Severity from its name in a rule file.
pub(crate) fn parse_severity(s: &str) -> Option<Severity> {
    Some(match s {
        "info" => Severity::Info,
        "low" => Severity::Low,
        "medium" => Severity::Medium,
        "high" => Severity::High,
        _ => return None,
    })
}

/// Load one rule from its table. `base` is the rule being overridden (a
/// user table may then give only the fields it changes). Errors name the
/// field and the column; the caller adds the rule name and the file.
pub fn from_table(
    name: &str,
    table: &toml::Value,
    base: Option<&Rule>,
    origin: Origin,
    vocab: &Vocabulary,
) -> Result<Rule, String> {
    let table = table
        .as_table()
        .ok_or_else(|| "must be a table of fields (when, severity, ...)".to_string())?;
    for key in table.keys() {
        if !FIELDS.contains(&key.as_str()) {
            return Err(format!(
                "unknown field '{key}'; a rule has: {}",
                FIELDS.join(", ")
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>, String> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "{key}: expected a string, found {}",
                other.type_str()
            )),
        }
    };
    let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(vec![s.clone()])),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        format!(
                            "{key}: expected a list of strings, found a {}",
                            v.type_str()
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(format!(
                "{key}: expected a list of strings, found {}",
                other.type_str()
            )),
        }
    };
    // The expression is quoted back, cut to a readable length: a rule can
    // be up to `dsl::MAX_EXPR_BYTES` long, and the error must stay one line.
    let at = |field: &str, src: &str, e: ParseError| -> String {
        const SHOWN_CHARS: usize = 120;
        let shown: String = src.chars().take(SHOWN_CHARS).collect();
        let more = if src.chars().nth(SHOWN_CHARS).is_some() {
            "..."
        } else {
            ""
        };
        format!("{field}: {e} in \"{shown}{more}\"")
    };

    let when = match (string("when")?, base) {
        (Some(w), _) => w,
        (None, Some(b)) => b.when.clone(),
        (None, None) => {
            return Err("missing 'when' (the condition that makes the rule fire)".into())
        }
    };
    let cond = dsl::parse(&when, Type::Bool, vocab).map_err(|e| at("when", &when, e))?;
    let severity = match string("severity")? {
        Some(s) => parse_severity(&s)
            .ok_or_else(|| format!("severity: '{s}' is not one of info, low, medium, high"))?,
        None => base.map(|b| b.severity).unwrap_or(Severity::Medium),
    };
    let order = match table.get("order") {
        None => base.map(|b| b.order).unwrap_or(DEFAULT_USER_ORDER),
        Some(toml::Value::Integer(i)) if (0..=9).contains(i) => *i as u32,
        Some(other) => return Err(format!("order: expected an integer 0-9, found {other}")),
    };
    let enabled = match table.get("enabled") {
        None => true,
        Some(toml::Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(format!(
                "enabled: expected true or false, found {}",
                other.type_str()
            ))
        }
    };
    let title = string("title")?
        .or_else(|| base.map(|b| b.title.clone()))
        .unwrap_or_else(|| name.replace('_', " "));
    let explanation = match string("explanation")? {
        Some(s) => Template::parse(&s, vocab).map_err(|e| at("explanation", &s, e))?,
        None => base.map(|b| b.explanation.clone()).unwrap_or_default(),
    };
    let change_when = match string("change_when")? {
        Some(s) => Some((
            s.clone(),
            dsl::parse(&s, Type::Bool, vocab).map_err(|e| at("change_when", &s, e))?,
        )),
        None => base.and_then(|b| b.change_when.clone()),
    };
    let explains = match string("explains")? {
        Some(s) => Some((
            s.clone(),
            dsl::parse(&s, Type::Num, vocab).map_err(|e| at("explains", &s, e))?,
        )),
        None => base.and_then(|b| b.explains.clone()),
    };
    let change = match string("change")? {
        Some(s) => Some(Template::parse(&s, vocab).map_err(|e| at("change", &s, e))?),
        None => base.and_then(|b| b.change.clone()),
    };
    let change_nogpm = match string("change_nogpm")? {
        Some(s) => Some(Template::parse(&s, vocab).map_err(|e| at("change_nogpm", &s, e))?),
        None => base.and_then(|b| b.change_nogpm.clone()),
    };
    let next_steps = strings("next_steps")?
        .or_else(|| base.map(|b| b.next_steps.clone()))
        .unwrap_or_default();
    let next_steps_for = match table.get("next_steps_for") {
        None => base.map(|b| b.next_steps_for.clone()).unwrap_or_default(),
        Some(toml::Value::Table(t)) => {
            let mut out = BTreeMap::new();
            for (fw, steps) in t {
                if !FRAMEWORKS.contains(&fw.as_str()) {
                    return Err(format!(
                        "next_steps_for: unknown framework '{fw}'; use one of {}",
                        FRAMEWORKS.join(", ")
                    ));
                }
                let list = steps
                    .as_array()
                    .and_then(|a| {
                        a.iter()
                            .map(|v| v.as_str().map(str::to_string))
                            .collect::<Option<Vec<String>>>()
                    })
                    .ok_or_else(|| format!("next_steps_for.{fw}: expected an array of strings"))?;
                out.insert(fw.clone(), list);
            }
            out
        }
        Some(other) => {
            return Err(format!(
                "next_steps_for: expected a table of framework = [steps], found {}",
                other.type_str()
            ))
        }
    };
    let evidence = match strings("evidence")? {
        Some(list) => list
            .into_iter()
            .map(|src| {
                dsl::parse(&src, Type::Num, vocab)
                    .map(|e| (src.clone(), e))
                    .map_err(|e| at("evidence", &src, e))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => match base {
            Some(b) => b.evidence.clone(),
            None => dsl::evidence_operands(&cond)
                .into_iter()
                .map(|e| (e.to_string(), e))
                .collect(),
        },
    };
    let hold_for = match string("for")? {
        Some(s) => Some(parse_window(&s).map_err(|e| format!("for: {e}"))?),
        None => base.and_then(|b| b.hold_for),
    };
    Ok(Rule {
        hold_for,
        name: name.to_string(),
        title,
        severity,
        order,
        enabled,
        origin,
        when,
        cond,
        change_when,
        explains,
        evidence,
        explanation,
        change,
        change_nogpm,
        next_steps,
        next_steps_for,
    })
}

/// What a rule needs to explain a change, as docs/rules.md and the README
/// tell users of GPUs without GPM (A100, L4, T4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// NVML and host counters only: works on every NVIDIA GPU.
    Nvml,
    /// GPM, with a branch for NVML alone (`not known(sm_active_pct.mean)`).
    GpmOrNvml,
    /// GPM counters that nothing stands in for.
    Gpm,
}

impl Needs {
    pub fn as_str(self) -> &'static str {
        match self {
            Needs::Nvml => "NVML",
            Needs::GpmOrNvml => "GPM, else NVML",
            Needs::Gpm => "GPM",
        }
    }
}

impl Rule {
    /// What the rule's change condition (`change_when`, else `when`) reads:
    /// a GPM metric outside `coalesce()`/`known()` needs GPM, unless the
    /// condition has a branch for runs without it.
    pub fn needs(&self) -> Needs {
        let (src, cond) = match &self.change_when {
            Some((s, e)) => (s.as_str(), e),
            None => (self.when.as_str(), &self.cond),
        };
        if !reads_gpm(cond) {
            Needs::Nvml
        } else if src.contains("not known(sm_active_pct.mean)") {
            Needs::GpmOrNvml
        } else {
            Needs::Gpm
        }
    }
}

/// Whether `e` reads a GPM metric that missing data cannot fall back from.
fn reads_gpm(e: &Expr) -> bool {
    match e {
        Expr::Call(dsl::Func::Coalesce | dsl::Func::Known, _) => false,
        Expr::Call(_, args) => args.iter().any(reads_gpm),
        // PCIe comes from NVML's byte counter where GPM is missing
        // (src/sampler/nvml/pcie.rs): recorded on every GPU since 0.3.
        Expr::Ident(i) => i
            .metric()
            .is_some_and(|m| crate::metrics::is_gpm(m) && !m.starts_with("pcie_")),
        Expr::Neg(a) | Expr::Not(a) => reads_gpm(a),
        Expr::Arith(_, a, b) | Expr::Cmp(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            reads_gpm(a) || reads_gpm(b)
        }
        Expr::Num(_) => false,
    }
}

/// Longest `for` window: `gate watch` keeps this much history in memory.
pub(crate) const MAX_HOLD_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A `for` duration: a number and a unit (`ms`, `s`, `m`, `h`), e.g. `5m`,
/// from 1 s to `MAX_HOLD_FOR`.
pub(crate) fn parse_window(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}' needs a unit: ms, s, m or h (e.g. \"5m\")")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. \"5m\")"))?;
    let secs = v * scale;
    if !(1.0..=MAX_HOLD_FOR.as_secs_f64()).contains(&secs) {
        return Err(format!("'{s}' must be from 1s to 24h"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Parse a rules file (`[rules.<name>]` tables) into rules, in name order.
pub fn parse_file(text: &str, vocab: &Vocabulary) -> Result<Vec<Rule>, String> {
    let doc: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let rules = doc
        .get("rules")
        .and_then(|r| r.as_table())
        .ok_or("no [rules] table")?;
    let ordered: BTreeMap<&String, &toml::Value> = rules.iter().collect();
    ordered
        .into_iter()
        .map(|(name, t)| {
            from_table(name, t, None, Origin::Builtin, vocab)
                .map_err(|e| format!("[rules.{name}] {e}"))
        })
        .collect()
}
