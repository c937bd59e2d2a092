//! The rule condition language: a small expression DSL over a run's metric
//! statistics and derived features (documented for users in docs/rules.md).
//!
//! Grammar (lowest precedence first):
//! ```text
//! expr    := or
//! or      := and ("or" and)*
//! and     := not ("and" not)*
//! not     := "not" not | cmp
//! cmp     := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)?
//! sum     := product (("+" | "-") product)*
//! product := unary (("*" | "/") unary)*
//! unary   := "-" unary | primary
//! primary := NUMBER | IDENT | IDENT "(" args ")" | "(" expr ")"
//! IDENT   := metric "." stat | metric "." feature | "gpu_count"
//! ```
//! Expressions are type-checked when parsed (a condition must be boolean,
//! arithmetic needs numbers), so a rule that could never evaluate is refused
//! at load time with the column of the problem, not silently skipped.
//!
//! Missing data: a metric that was not measured (no GPM on that GPU, a
//! baseline without that statistic) evaluates to "missing", never 0.
//! Arithmetic on a missing value is missing; division by zero is missing; a
//! comparison with a missing operand is *unknown*, and unknown propagates
//! through `and`/`or`/`not` with Kleene's three-valued logic (`false and
//! unknown` = false, `true or unknown` = true, `not unknown` = unknown). A rule
//! fires only when its condition is definitely true: missing data is never
//! evidence for a diagnosis.

use crate::metrics::Statistic;
use crate::stats::{MetricSource, Stat};
use std::collections::BTreeSet;
use std::fmt;

/// Longest expression accepted, in bytes. The built-in rules are under
/// 1000; the cap keeps a hostile `gate.toml` from costing memory or time.
pub(crate) const MAX_EXPR_BYTES: usize = 4096;
/// Most tokens in one expression. A chain of `and`/`+` builds a tree as
/// deep as it is long, and evaluation, printing and dropping it recurse:
/// 100,000 terms overflowed the stack (exit 134). 512 tokens bound the tree
/// depth to ~256, a few hundred KiB of stack at most.
pub(crate) const MAX_EXPR_TOKENS: usize = 512;
/// Deepest nesting of parentheses, `not`, unary `-` and function calls
/// (the parser recurses once per level: 5,000 levels overflowed the stack).
pub const MAX_EXPR_NESTING: usize = 32;

/// The mean, as the speed ratio reads wall time.
const MEAN: Stat = Stat::Of(Statistic::Mean);

/// Statistic names an identifier may end with (`metric.stat`); each is a
/// `Stat` (`Stat::parse`), `median` being `p50`.
pub(crate) const STATS: &[&str] = &[
    "mean", "p5", "p50", "median", "p95", "p99", "min", "max", "stdev", "n",
];

/// A parse or type error, with a 1-based character column in the expression.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    fn as_str(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// Functions callable in expressions. GPU functions evaluate their argument
/// once per GPU (per-GPU statistics) and combine the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// max - min across GPUs of the argument.
    Spread,
    GpuMin,
    GpuMax,
    GpuMean,
    Abs,
    Min,
    Max,
    /// First argument when present, else the second.
    Coalesce,
    /// Boolean: the argument is present (measured).
    Known,
    /// The argument evaluated on the baseline (a change only).
    Base,
    /// New minus baseline of the argument (a change only).
    Delta,
    /// New over baseline of the argument; missing when the baseline is 0.
    Ratio,
    /// The change of a statistic (`z(tensor_pct.mean)`) in noise bands
    /// (`noise::noise`): beyond +-1 it clears the noise. Signed: positive
    /// when the value rose.
    Z,
    /// The share of the slowdown (0..1) that a fraction of time accounts
    /// for (`share((100 - gpu_busy_pct.mean) / 100)`: the GPU's idle time);
    /// a change only (`slowdown_share` says how).
    Share,
}

impl Func {
    fn parse(name: &str) -> Option<Func> {
        Some(match name {
            "spread" => Func::Spread,
            "gpu_min" => Func::GpuMin,
            "gpu_max" => Func::GpuMax,
            "gpu_mean" => Func::GpuMean,
            "abs" => Func::Abs,
            "min" => Func::Min,
            "max" => Func::Max,
            "coalesce" => Func::Coalesce,
            "known" => Func::Known,
            "base" => Func::Base,
            "delta" => Func::Delta,
            "ratio" => Func::Ratio,
            "z" => Func::Z,
            "share" => Func::Share,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Func::Spread => "spread",
            Func::GpuMin => "gpu_min",
            Func::GpuMax => "gpu_max",
            Func::GpuMean => "gpu_mean",
            Func::Abs => "abs",
            Func::Min => "min",
            Func::Max => "max",
            Func::Coalesce => "coalesce",
            Func::Known => "known",
            Func::Base => "base",
            Func::Delta => "delta",
            Func::Ratio => "ratio",
            Func::Z => "z",
            Func::Share => "share",
        }
    }

    fn arity(self) -> usize {
        match self {
            Func::Min | Func::Max | Func::Coalesce => 2,
            _ => 1,
        }
    }

    fn is_gpu(self) -> bool {
        matches!(
            self,
            Func::Spread | Func::GpuMin | Func::GpuMax | Func::GpuMean
        )
    }
}

/// A value reference: `metric.stat`, `metric.feature` or `gpu_count`.
#[derive(Debug, Clone, PartialEq)]
pub enum Ident {
    Stat { metric: String, stat: Stat },
    Feature(String),
    GpuCount,
}

impl Ident {
    /// The metric id this identifier reads, if any (for units in evidence).
    pub fn metric(&self) -> Option<&str> {
        match self {
            Ident::Stat { metric, .. } => Some(metric),
            Ident::Feature(f) => f.split_once('.').map(|(m, _)| m),
            Ident::GpuCount => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Ident(Ident),
    Neg(Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Call(Func, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Num,
    Bool,
}

/// Names the parser accepts besides catalogue metrics and statistics.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    /// Known feature keys ("gpu_busy_pct.idle_frac", ...).
    pub features: BTreeSet<String>,
    /// Benchmark-reported metric names (user metrics from gate.toml).
    pub user_metrics: BTreeSet<String>,
}

impl Vocabulary {
    /// The catalogue, the built-in features, and no user metrics.
    pub fn standard() -> Vocabulary {
        Vocabulary {
            features: crate::analysis::feature::Feature::names()
                .map(String::from)
                .collect(),
            user_metrics: BTreeSet::new(),
        }
    }

    fn is_metric(&self, id: &str) -> bool {
        crate::metrics::find(id).is_some() || self.user_metrics.contains(id)
    }
}

// ---------------------------------------------------------------- lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(n) => format!("number {n}"),
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Op(o) => format!("'{o}'"),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::Comma => "','".into(),
            Tok::End => "the end of the expression".into(),
        }
    }
}

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            // Exponent: 1e3, 2.5E-2.
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text: String = chars[start..i].iter().collect();
            let v: f64 = text.parse().map_err(|_| ParseError {
                column: col,
                message: format!("'{text}' is not a number"),
            })?;
            // 1e400 parses to infinity, which no comparison can use (and
            // which prints back as "n/a"; found by fuzzing).
            if !v.is_finite() {
                return Err(ParseError {
                    column: col,
                    message: format!(
                        "number '{}' is too large; numbers must be finite",
                        text.chars().take(24).collect::<String>()
                    ),
                });
            }
            if i < chars.len() && (chars[i].is_alphabetic() || chars[i] == '_') {
                return Err(ParseError {
                    column: i + 1,
                    message: format!(
                        "unexpected '{}' after number {text}; units are not written in expressions (percentages are 0-100)",
                        chars[i]
                    ),
                });
            }
            out.push((Tok::Num(v), col));
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            out.push((Tok::Ident(text), col));
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let op2 = match two.as_str() {
            "<=" => Some("<="),
            ">=" => Some(">="),
            "==" => Some("=="),
            "!=" => Some("!="),
            "&&" | "||" => {
                return Err(ParseError {
                    column: col,
                    message: format!(
                        "'{two}' is not an operator here; write '{}'",
                        if two == "&&" { "and" } else { "or" }
                    ),
                })
            }
            _ => None,
        };
        if let Some(op) = op2 {
            out.push((Tok::Op(op), col));
            i += 2;
            continue;
        }
        let tok = match c {
            '<' => Tok::Op("<"),
            '>' => Tok::Op(">"),
            '+' => Tok::Op("+"),
            '-' => Tok::Op("-"),
            '*' => Tok::Op("*"),
            '/' => Tok::Op("/"),
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            ',' => Tok::Comma,
            '=' => {
                return Err(ParseError {
                    column: col,
                    message: "'=' is not a comparison; write '=='".into(),
                })
            }
            '!' => {
                return Err(ParseError {
                    column: col,
                    message: "'!' is not an operator; write 'not' or '!='".into(),
                })
            }
            other => {
                return Err(ParseError {
                    column: col,
                    message: format!("unexpected character '{other}'"),
                })
            }
        };
        out.push((tok, col));
        i += 1;
    }
    out.push((Tok::End, chars.len() + 1));
    Ok(out)
}

// ---------------------------------------------------------------- parser

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    vocab: &'a Vocabulary,
    /// Current nesting (see `MAX_EXPR_NESTING`).
    depth: usize,
}

/// A parsed sub-expression with its type and starting column.
struct Typed {
    expr: Expr,
    ty: Type,
    col: usize,
}

/// Parse `src` and require the given result type.
pub fn parse(src: &str, want: Type, vocab: &Vocabulary) -> Result<Expr, ParseError> {
    if src.len() > MAX_EXPR_BYTES {
        return Err(ParseError {
            column: 1,
            message: format!(
                "expression is {} bytes long, over the limit of {MAX_EXPR_BYTES}; split it into several rules",
                src.len()
            ),
        });
    }
    let toks = lex(src)?;
    // `toks` ends with `Tok::End`, which is not a token of the expression.
    if toks.len() > MAX_EXPR_TOKENS + 1 {
        return Err(ParseError {
            column: toks[MAX_EXPR_TOKENS].1,
            message: format!(
                "expression has {} tokens, over the limit of {MAX_EXPR_TOKENS}; split it into several rules",
                toks.len() - 1
            ),
        });
    }
    let mut p = Parser {
        toks,
        pos: 0,
        vocab,
        depth: 0,
    };
    if p.peek() == &Tok::End {
        return Err(ParseError {
            column: 1,
            message: "empty expression".into(),
        });
    }
    let t = p.or()?;
    if p.peek() != &Tok::End {
        let (tok, col) = p.toks[p.pos].clone();
        return Err(ParseError {
            column: col,
            message: format!(
                "unexpected {} (missing 'and'/'or' or an operator?)",
                tok.describe()
            ),
        });
    }
    if t.ty != want {
        return Err(ParseError {
            column: t.col,
            message: match want {
                Type::Bool => "expected a condition (a comparison such as 'sm_active_pct.mean < 30'), found a number".into(),
                Type::Num => "expected a number, found a condition".into(),
            },
        });
    }
    Ok(t.expr)
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn col(&self) -> usize {
        self.toks[self.pos].1
    }

    fn next(&mut self) -> (Tok, usize) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    /// One level deeper (parenthesis, `not`, unary `-`, call); `leave`
    /// undoes it. Past `MAX_EXPR_NESTING` the parse fails instead of
    /// recursing on.
    fn enter(&mut self, col: usize) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_EXPR_NESTING {
            return Err(ParseError {
                column: col,
                message: format!(
                    "nested more than {MAX_EXPR_NESTING} levels deep (parentheses, 'not', '-' and function calls count); simplify the expression"
                ),
            });
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == w)
    }

    fn expect(t: &Typed, ty: Type, what: &str) -> Result<(), ParseError> {
        if t.ty == ty {
            return Ok(());
        }
        Err(ParseError {
            column: t.col,
            message: match ty {
                Type::Bool => format!("'{what}' needs a condition on each side, found a number"),
                Type::Num => format!("'{what}' needs numbers, found a condition"),
            },
        })
    }

    fn or(&mut self) -> Result<Typed, ParseError> {
        let mut left = self.and()?;
        while self.is_word("or") {
            self.next();
            let right = self.and()?;
            Self::expect(&left, Type::Bool, "or")?;
            Self::expect(&right, Type::Bool, "or")?;
            left = Typed {
                expr: Expr::Or(Box::new(left.expr), Box::new(right.expr)),
                ty: Type::Bool,
                col: left.col,
            };
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Typed, ParseError> {
        let mut left = self.not()?;
        while self.is_word("and") {
            self.next();
            let right = self.not()?;
            Self::expect(&left, Type::Bool, "and")?;
            Self::expect(&right, Type::Bool, "and")?;
            left = Typed {
                expr: Expr::And(Box::new(left.expr), Box::new(right.expr)),
                ty: Type::Bool,
                col: left.col,
            };
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Typed, ParseError> {
        if self.is_word("not") {
            let col = self.col();
            self.enter(col)?;
            self.next();
            let inner = self.not()?;
            self.leave();
            Self::expect(&inner, Type::Bool, "not")?;
            return Ok(Typed {
                expr: Expr::Not(Box::new(inner.expr)),
                ty: Type::Bool,
                col,
            });
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Result<Typed, ParseError> {
        let left = self.sum()?;
        let op = match self.peek() {
            Tok::Op("<") => CmpOp::Lt,
            Tok::Op("<=") => CmpOp::Le,
            Tok::Op(">") => CmpOp::Gt,
            Tok::Op(">=") => CmpOp::Ge,
            Tok::Op("==") => CmpOp::Eq,
            Tok::Op("!=") => CmpOp::Ne,
            _ => return Ok(left),
        };
        self.next();
        let right = self.sum()?;
        Self::expect(&left, Type::Num, op.as_str())?;
        Self::expect(&right, Type::Num, op.as_str())?;
        if let Tok::Op(o @ ("<" | "<=" | ">" | ">=" | "==" | "!=")) = self.peek() {
            return Err(ParseError {
                column: self.col(),
                message: format!(
                    "comparisons do not chain ('{o}' after '{}'); join them with 'and'",
                    op.as_str()
                ),
            });
        }
        Ok(Typed {
            expr: Expr::Cmp(op, Box::new(left.expr), Box::new(right.expr)),
            ty: Type::Bool,
            col: left.col,
        })
    }

    fn sum(&mut self) -> Result<Typed, ParseError> {
        self.arith_level(&[("+", ArithOp::Add), ("-", ArithOp::Sub)], Self::product)
    }

    fn product(&mut self) -> Result<Typed, ParseError> {
        self.arith_level(&[("*", ArithOp::Mul), ("/", ArithOp::Div)], Self::unary)
    }

    /// One left-associative precedence level of numeric operators.
    fn arith_level(
        &mut self,
        ops: &[(&'static str, ArithOp)],
        operand: fn(&mut Self) -> Result<Typed, ParseError>,
    ) -> Result<Typed, ParseError> {
        let mut left = operand(self)?;
        loop {
            let Some(&(sym, op)) = ops.iter().find(|(sym, _)| self.peek() == &Tok::Op(sym)) else {
                return Ok(left);
            };
            self.next();
            let right = operand(self)?;
            Self::expect(&left, Type::Num, sym)?;
            Self::expect(&right, Type::Num, sym)?;
            left = Typed {
                expr: Expr::Arith(op, Box::new(left.expr), Box::new(right.expr)),
                ty: Type::Num,
                col: left.col,
            };
        }
    }

    fn unary(&mut self) -> Result<Typed, ParseError> {
        if self.peek() == &Tok::Op("-") {
            let col = self.col();
            self.enter(col)?;
            self.next();
            let inner = self.unary()?;
            self.leave();
            Self::expect(&inner, Type::Num, "-")?;
            return Ok(Typed {
                expr: Expr::Neg(Box::new(inner.expr)),
                ty: Type::Num,
                col,
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Typed, ParseError> {
        let (tok, col) = self.next();
        match tok {
            Tok::Num(v) => Ok(Typed {
                expr: Expr::Num(v),
                ty: Type::Num,
                col,
            }),
            Tok::LParen => {
                self.enter(col)?;
                let inner = self.or()?;
                self.leave();
                if self.peek() != &Tok::RParen {
                    return Err(ParseError {
                        column: self.col(),
                        message: format!(
                            "expected ')' to close the '(' at column {col}, found {}",
                            self.peek().describe()
                        ),
                    });
                }
                self.next();
                Ok(Typed { col, ..inner })
            }
            Tok::Ident(name) if self.peek() == &Tok::LParen => self.call(&name, col),
            Tok::Ident(name) => {
                if matches!(name.as_str(), "and" | "or" | "not") {
                    return Err(ParseError {
                        column: col,
                        message: format!("expected a value before '{name}'"),
                    });
                }
                let ident = self.ident(&name, col)?;
                Ok(Typed {
                    expr: Expr::Ident(ident),
                    ty: Type::Num,
                    col,
                })
            }
            other => Err(ParseError {
                column: col,
                message: format!(
                    "expected a number, a metric (e.g. 'gpu_busy_pct.mean') or '(', found {}",
                    other.describe()
                ),
            }),
        }
    }

    fn call(&mut self, name: &str, col: usize) -> Result<Typed, ParseError> {
        let func = Func::parse(name).ok_or_else(|| ParseError {
            column: col,
            message: format!(
                "unknown function '{name}'; known: spread, gpu_min, gpu_max, gpu_mean, abs, min, max, coalesce, known, base, delta, ratio, z"
            ),
        })?;
        self.next(); // '('
        self.enter(col)?;
        let mut args = Vec::new();
        if self.peek() != &Tok::RParen {
            loop {
                let a = self.or()?;
                Self::expect(&a, Type::Num, func.name())?;
                if func.is_gpu() && contains_gpu_call(&a.expr) {
                    return Err(ParseError {
                        column: a.col,
                        message: format!("'{}' cannot contain another GPU function", func.name()),
                    });
                }
                if func == Func::Z && !matches!(a.expr, Expr::Ident(Ident::Stat { .. })) {
                    return Err(ParseError {
                        column: a.col,
                        message: "'z' takes one statistic, e.g. z(tensor_pct.mean)".into(),
                    });
                }
                args.push(a.expr);
                if self.peek() == &Tok::Comma {
                    self.next();
                    continue;
                }
                break;
            }
        }
        self.leave();
        if self.peek() != &Tok::RParen {
            return Err(ParseError {
                column: self.col(),
                message: format!(
                    "expected ',' or ')' in the call to '{name}', found {}",
                    self.peek().describe()
                ),
            });
        }
        self.next();
        if args.len() != func.arity() {
            return Err(ParseError {
                column: col,
                message: format!(
                    "'{name}' takes {} argument(s), given {}",
                    func.arity(),
                    args.len()
                ),
            });
        }
        let ty = if func == Func::Known {
            Type::Bool
        } else {
            Type::Num
        };
        Ok(Typed {
            expr: Expr::Call(func, args),
            ty,
            col,
        })
    }

    fn ident(&self, name: &str, col: usize) -> Result<Ident, ParseError> {
        if name == "gpu_count" {
            return Ok(Ident::GpuCount);
        }
        // Features first: some ("xid.count") are not named after a metric.
        if self.vocab.features.contains(name) {
            return Ok(Ident::Feature(name.to_string()));
        }
        let Some((metric, suffix)) = name.split_once('.') else {
            return Err(ParseError {
                column: col,
                message: format!(
                    "'{name}' needs a statistic or feature, e.g. '{name}.mean' or '{name}.p95'"
                ),
            });
        };
        if !self.vocab.is_metric(metric) {
            let hint = suggest(metric, crate::metrics::all().map(|d| d.id))
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            return Err(ParseError {
                column: col,
                message: format!("unknown metric '{metric}'{hint}"),
            });
        }
        if let Some(stat) = STATS
            .contains(&suffix)
            .then(|| Stat::parse(suffix))
            .flatten()
        {
            return Ok(Ident::Stat {
                metric: metric.to_string(),
                stat,
            });
        }
        if self.vocab.features.contains(name) {
            return Ok(Ident::Feature(name.to_string()));
        }
        let prefix = format!("{metric}.");
        let feats: Vec<&str> = self
            .vocab
            .features
            .iter()
            .filter(|f| f.starts_with(&prefix))
            .map(|f| &f[prefix.len()..])
            .collect();
        Err(ParseError {
            column: col + metric.chars().count() + 1,
            message: format!(
                "unknown statistic or feature '{suffix}' of '{metric}'; statistics: {}{}",
                STATS.join(" "),
                if feats.is_empty() {
                    String::new()
                } else {
                    format!("; features: {}", feats.join(" "))
                }
            ),
        })
    }
}

fn contains_gpu_call(e: &Expr) -> bool {
    match e {
        Expr::Call(f, args) => f.is_gpu() || args.iter().any(contains_gpu_call),
        Expr::Neg(a) | Expr::Not(a) => contains_gpu_call(a),
        Expr::Arith(_, a, b) | Expr::Cmp(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            contains_gpu_call(a) || contains_gpu_call(b)
        }
        Expr::Num(_) | Expr::Ident(_) => false,
    }
}

/// Closest candidate by edit distance, when close enough to be a typo.
fn suggest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (crate::spelling::levenshtein(word, c), c))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, c)| c)
}

// ---------------------------------------------------------------- printing

fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Or(..) => 1,
        Expr::And(..) => 2,
        Expr::Not(..) => 3,
        Expr::Cmp(..) => 4,
        Expr::Arith(ArithOp::Add | ArithOp::Sub, ..) => 5,
        Expr::Arith(ArithOp::Mul | ArithOp::Div, ..) => 6,
        Expr::Neg(..) => 7,
        _ => 8,
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ident::Stat { metric, stat } => write!(f, "{metric}.{stat}"),
            Ident::Feature(name) => f.write_str(name),
            Ident::GpuCount => f.write_str("gpu_count"),
        }
    }
}

/// Canonical text of an expression (minimal parentheses), used as the label
/// of evidence lines.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wrap = |f: &mut fmt::Formatter<'_>, e: &Expr, min: u8| -> fmt::Result {
            if prec(e) < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        };
        match self {
            Expr::Num(v) => f.write_str(&crate::format::number(*v)),
            Expr::Ident(i) => write!(f, "{i}"),
            Expr::Neg(a) => {
                f.write_str("-")?;
                wrap(f, a, 7)
            }
            Expr::Arith(op, a, b) => {
                let (p, sym) = match op {
                    ArithOp::Add => (5, "+"),
                    ArithOp::Sub => (5, "-"),
                    ArithOp::Mul => (6, "*"),
                    ArithOp::Div => (6, "/"),
                };
                wrap(f, a, p)?;
                write!(f, " {sym} ")?;
                // Left-associative: a right operand of equal precedence needs parentheses.
                wrap(f, b, p + 1)
            }
            Expr::Cmp(op, a, b) => {
                wrap(f, a, 5)?;
                write!(f, " {} ", op.as_str())?;
                wrap(f, b, 5)
            }
            Expr::And(a, b) => {
                wrap(f, a, 2)?;
                f.write_str(" and ")?;
                wrap(f, b, 3)
            }
            Expr::Or(a, b) => {
                wrap(f, a, 1)?;
                f.write_str(" or ")?;
                wrap(f, b, 2)
            }
            Expr::Not(a) => {
                f.write_str("not ")?;
                wrap(f, a, 3)
            }
            Expr::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

// ---------------------------------------------------------------- evaluation

/// Evaluate a numeric expression; None = missing.
pub(crate) fn eval_num(e: &Expr, src: &dyn MetricSource, gpu: Option<usize>) -> Option<f64> {
    let v = match e {
        Expr::Num(v) => Some(*v),
        Expr::Ident(id) => lookup(id, src, gpu),
        Expr::Neg(a) => eval_num(a, src, gpu).map(|v| -v),
        Expr::Arith(op, a, b) => {
            let (x, y) = (eval_num(a, src, gpu)?, eval_num(b, src, gpu)?);
            match op {
                ArithOp::Add => Some(x + y),
                ArithOp::Sub => Some(x - y),
                ArithOp::Mul => Some(x * y),
                ArithOp::Div if y == 0.0 => None,
                ArithOp::Div => Some(x / y),
            }
        }
        Expr::Call(func, args) => call(*func, args, src, gpu),
        // Boolean nodes have no number; the parser keeps them out of here.
        Expr::Cmp(..) | Expr::And(..) | Expr::Or(..) | Expr::Not(..) => None,
    };
    v.filter(|x| x.is_finite())
}

fn call(func: Func, args: &[Expr], src: &dyn MetricSource, gpu: Option<usize>) -> Option<f64> {
    if func.is_gpu() {
        let vals: Vec<f64> = (0..src.gpu_count())
            .filter_map(|g| eval_num(&args[0], src, Some(g)))
            .collect();
        if vals.is_empty() {
            return None;
        }
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        return Some(match func {
            Func::Spread => max - min,
            Func::GpuMin => min,
            Func::GpuMax => max,
            _ => vals.iter().sum::<f64>() / vals.len() as f64,
        });
    }
    match func {
        Func::Base => eval_num(&args[0], src.baseline()?, gpu),
        Func::Delta => {
            Some(eval_num(&args[0], src, gpu)? - eval_num(&args[0], src.baseline()?, gpu)?)
        }
        Func::Ratio => {
            let b = eval_num(&args[0], src.baseline()?, gpu)?;
            (b != 0.0).then_some(eval_num(&args[0], src, gpu)? / b)
        }
        Func::Z => match &args[0] {
            Expr::Ident(Ident::Stat { metric, stat }) => z(metric, *stat, src, gpu),
            _ => None,
        },
        Func::Share => slowdown_share(&args[0], src, gpu),
        Func::Abs => eval_num(&args[0], src, gpu).map(f64::abs),
        Func::Min => Some(eval_num(&args[0], src, gpu)?.min(eval_num(&args[1], src, gpu)?)),
        Func::Max => Some(eval_num(&args[0], src, gpu)?.max(eval_num(&args[1], src, gpu)?)),
        Func::Coalesce => eval_num(&args[0], src, gpu).or_else(|| eval_num(&args[1], src, gpu)),
        _ => None,
    }
}

/// The new run's speed over the baseline's: the benchmark's declared rate
/// of work (`benchmark.work_rate`), else its wall time (a fixed amount of
/// work). None when neither side knows it.
pub(crate) fn speed_ratio(src: &dyn MetricSource) -> Option<f64> {
    let base = src.baseline()?;
    let rate = crate::analysis::features::WORK_RATE;
    match (src.feature(rate), base.feature(rate)) {
        (Some(n), Some(b)) if n > 0.0 && b > 0.0 => Some(n / b),
        _ => {
            let (n, b) = (
                src.stat("wall_time_s", MEAN, None)?,
                base.stat("wall_time_s", MEAN, None)?,
            );
            (n > 0.0 && b > 0.0).then_some(b / n)
        }
    }
}

/// Below this loss of speed there is no slowdown to share out.
const MIN_SLOWDOWN: f64 = 0.03;

/// `share(x)`: the part of the lost time that `x`, a fraction of each
/// run's time (0..1: the GPU idle, busy, copying, the main thread on the
/// CPU), accounts for. Per unit of work the new run takes `T_n`, the
/// baseline `T_b`, and `r = T_b / T_n` (the speed ratio); the time spent
/// in `x` grew from `x_b T_b` to `x_n T_n`, so of the extra `T_n - T_b`
/// it explains `(x_n - x_b r) / (1 - r)`, clamped to 0..1. The shares of
/// complementary fractions (idle and busy) add up to one: the decomposition
/// of a difference of products (Kitagawa 1955, "Components of a difference
/// between two rates", JASA 50:1168; Oaxaca 1973 for the regression form).
/// None when the run is not at least 3 % slower or a side is unknown.
fn slowdown_share(e: &Expr, src: &dyn MetricSource, gpu: Option<usize>) -> Option<f64> {
    let r = speed_ratio(src)?;
    if 1.0 - r < MIN_SLOWDOWN {
        return None;
    }
    let x_new = eval_num(e, src, gpu)?;
    let x_base = eval_num(e, src.baseline()?, gpu)?;
    Some(((x_new - x_base * r) / (1.0 - r)).clamp(0.0, 1.0))
}

/// The change of `metric.stat` from the baseline in noise bands (at the
/// normal quantile: `Noise::band_at_normal_quantile` says why).
fn z(metric: &str, stat: Stat, src: &dyn MetricSource, gpu: Option<usize>) -> Option<f64> {
    use crate::noise::{noise, Observation};
    let gpu = per_gpu(metric).then_some(gpu).flatten();
    let base = Observation::from_runs(&src.baseline()?.runs(metric, stat, gpu)?)?;
    let new = Observation::from_runs(&src.runs(metric, stat, gpu)?)?;
    let band = noise(&base, &new)?
        .within_range(crate::metrics::range(metric))
        .band_at_normal_quantile();
    Some(crate::noise::in_bands(new.value - base.value, band))
}

fn per_gpu(metric: &str) -> bool {
    crate::metrics::find(metric).is_some_and(|d| d.scope == crate::metrics::Scope::Gpu)
}

fn lookup(id: &Ident, src: &dyn MetricSource, gpu: Option<usize>) -> Option<f64> {
    match id {
        Ident::Stat { metric, stat } => {
            // Host and run-level metrics have no per-GPU value: inside a GPU
            // function they read the run's value.
            let per_gpu =
                crate::metrics::find(metric).is_some_and(|d| d.scope == crate::metrics::Scope::Gpu);
            src.stat(metric, *stat, if per_gpu { gpu } else { None })
        }
        Ident::Feature(name) => src.feature(name),
        Ident::GpuCount => Some(src.gpu_count() as f64),
    }
}

/// Evaluate a condition with Kleene logic: Some(true|false) or None (unknown).
pub fn eval_bool(e: &Expr, src: &dyn MetricSource) -> Option<bool> {
    margin(e, src).map(|m| m > 0.0 || (m == 0.0 && !is_strict_false_at_zero(e, src)))
}

/// Signed, normalised distance of a condition from its threshold: positive
/// when true (how far past the threshold, up to 1), negative when false,
/// None when unknown. `and` takes the weakest link, `or` the strongest.
///
/// Exact ties (`x >= 1` with x = 1) have margin 0; `eval_bool` resolves them
/// by evaluating the comparison itself.
pub fn margin(e: &Expr, src: &dyn MetricSource) -> Option<f64> {
    match e {
        Expr::Cmp(op, a, b) => {
            let (x, y) = (eval_num(a, src, None)?, eval_num(b, src, None)?);
            let norm = x.abs().max(y.abs()).max(1e-9);
            let d = match op {
                CmpOp::Lt | CmpOp::Le => (y - x) / norm,
                CmpOp::Gt | CmpOp::Ge => (x - y) / norm,
                CmpOp::Eq => -(x - y).abs() / norm,
                CmpOp::Ne => (x - y).abs() / norm,
            };
            Some(d.clamp(-1.0, 1.0))
        }
        Expr::And(a, b) => kleene(margin(a, src), margin(b, src), true),
        Expr::Or(a, b) => kleene(margin(a, src), margin(b, src), false),
        Expr::Not(a) => margin(a, src).map(|m| -m),
        Expr::Call(Func::Known, args) => Some(if eval_num(&args[0], src, None).is_some() {
            1.0
        } else {
            -1.0
        }),
        _ => None,
    }
}

/// Kleene and/or over margins: a definite false decides `and`, a definite
/// true decides `or`, otherwise unknown stays unknown.
fn kleene(a: Option<f64>, b: Option<f64>, is_and: bool) -> Option<f64> {
    let decides = |m: f64| if is_and { m < 0.0 } else { m > 0.0 };
    match (a, b) {
        (Some(x), Some(y)) => Some(if is_and { x.min(y) } else { x.max(y) }),
        (Some(x), None) | (None, Some(x)) if decides(x) => Some(x),
        _ => None,
    }
}

/// Truth of a condition whose margin is exactly 0 (a tie at the threshold):
/// `<=`, `>=`, `==` hold on a tie, `<`, `>`, `!=` do not.
fn is_strict_false_at_zero(e: &Expr, src: &dyn MetricSource) -> bool {
    !exact_truth(e, src).unwrap_or(false)
}

fn exact_truth(e: &Expr, src: &dyn MetricSource) -> Option<bool> {
    match e {
        Expr::Cmp(op, a, b) => {
            let (x, y) = (eval_num(a, src, None)?, eval_num(b, src, None)?);
            Some(match op {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
            })
        }
        Expr::And(a, b) => match (exact_truth(a, src), exact_truth(b, src)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Expr::Or(a, b) => match (exact_truth(a, src), exact_truth(b, src)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Expr::Not(a) => exact_truth(a, src).map(|v| !v),
        Expr::Call(Func::Known, args) => Some(eval_num(&args[0], src, None).is_some()),
        _ => None,
    }
}

/// Every feature `e` reads, in order of appearance, once each.
pub(crate) fn features_read(e: &Expr) -> Vec<&str> {
    fn walk<'a>(e: &'a Expr, out: &mut Vec<&'a str>) {
        match e {
            Expr::Ident(Ident::Feature(f)) if !out.contains(&f.as_str()) => out.push(f),
            Expr::Num(_) | Expr::Ident(_) => {}
            Expr::Neg(a) | Expr::Not(a) => walk(a, out),
            Expr::Arith(_, a, b) | Expr::Cmp(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                walk(a, out);
                walk(b, out);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

/// The operands worth showing as evidence: every non-literal side of every
/// comparison, in order of appearance, without duplicates.
pub(crate) fn evidence_operands(e: &Expr) -> Vec<Expr> {
    fn walk(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::Cmp(_, a, b) => {
                for side in [a, b] {
                    if !is_constant(side) && !out.contains(side) {
                        out.push((**side).clone());
                    }
                }
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                walk(a, out);
                walk(b, out);
            }
            Expr::Not(a) => walk(a, out),
            Expr::Call(Func::Known, args) if !out.contains(&args[0]) => {
                out.push(args[0].clone());
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Num(_) => true,
        Expr::Neg(a) => is_constant(a),
        Expr::Arith(_, a, b) => is_constant(a) && is_constant(b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A hand-made source: aggregate stats, per-GPU stats, features.
    #[derive(Default)]
    struct Src {
        agg: BTreeMap<String, f64>,
        per_gpu: Vec<BTreeMap<String, f64>>,
        feats: BTreeMap<String, f64>,
    }

    impl MetricSource for Src {
        fn stat(&self, metric: &str, stat: Stat, gpu: Option<usize>) -> Option<f64> {
            let key = format!("{metric}.{stat}");
            match gpu {
                Some(g) => self.per_gpu.get(g)?.get(&key).copied(),
                None => self.agg.get(&key).copied(),
            }
        }
        fn feature(&self, name: &str) -> Option<f64> {
            self.feats.get(name).copied()
        }
        fn gpu_count(&self) -> usize {
            self.per_gpu.len().max(1)
        }
    }

    fn src(pairs: &[(&str, f64)]) -> Src {
        Src {
            agg: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..Default::default()
        }
    }

    fn p(s: &str) -> Expr {
        parse(s, Type::Bool, &Vocabulary::standard()).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn n(s: &str) -> Expr {
        parse(s, Type::Num, &Vocabulary::standard()).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> ParseError {
        parse(s, Type::Bool, &Vocabulary::standard()).unwrap_err()
    }

    #[test]
    fn precedence_follows_the_grammar() {
        // * binds tighter than +, - is left-associative.
        assert_eq!(n("1 + 2 * 3").to_string(), "1 + 2 * 3");
        assert_eq!(eval_num(&n("1 + 2 * 3"), &src(&[]), None), Some(7.0));
        assert_eq!(eval_num(&n("10 - 4 - 3"), &src(&[]), None), Some(3.0));
        assert_eq!(eval_num(&n("(1 + 2) * 3"), &src(&[]), None), Some(9.0));
        assert_eq!(eval_num(&n("-2 * -3"), &src(&[]), None), Some(6.0));
        assert_eq!(eval_num(&n("8 / 2 / 2"), &src(&[]), None), Some(2.0));
        // and binds tighter than or; not tighter than and.
        let e = p("1 < 2 or 1 > 2 and 3 > 4");
        assert!(matches!(e, Expr::Or(..)), "{e:?}");
        assert_eq!(eval_bool(&e, &src(&[])), Some(true));
        let e = p("not 1 > 2 and 3 > 4");
        assert!(matches!(e, Expr::And(..)), "{e:?}");
        assert_eq!(eval_bool(&e, &src(&[])), Some(false));
        // Printing keeps needed parentheses only.
        assert_eq!(
            p("(1 < 2 or 2 < 3) and not (3 < 4)").to_string(),
            "(1 < 2 or 2 < 3) and not 3 < 4"
        );
        assert_eq!(n("10 - (4 - 3)").to_string(), "10 - (4 - 3)");
    }

    #[test]
    fn metrics_statistics_and_features_are_looked_up() {
        let s = Src {
            agg: [("sm_active_pct.p50".to_string(), 20.0)].into(),
            feats: [("gpu_busy_pct.idle_frac".to_string(), 0.5)].into(),
            ..Default::default()
        };
        assert_eq!(eval_bool(&p("sm_active_pct.median < 30"), &s), Some(true));
        // The statistic is parsed once, when the rule is read: `median` is
        // `p50`, and a name that is none is refused there, listing them.
        let Expr::Cmp(_, a, _) = p("sm_active_pct.median < 30") else {
            panic!("not a comparison")
        };
        assert_eq!(
            *a,
            Expr::Ident(Ident::Stat {
                metric: "sm_active_pct".into(),
                stat: Stat::Of(Statistic::P50)
            })
        );
        assert_eq!(a.to_string(), "sm_active_pct.p50");
        for (name, stat) in [("stdev", Stat::Stdev), ("n", Stat::N)] {
            assert_eq!(Stat::parse(name), Some(stat));
            assert_eq!(stat.to_string(), name);
        }
        let msg = err("sm_active_pct.p42 > 1").message;
        assert!(
            msg.starts_with("unknown statistic or feature 'p42' of 'sm_active_pct'; statistics: mean p5 p50 median p95 p99 min max stdev n"),
            "{msg}"
        );
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.idle_frac >= 0.5"), &s),
            Some(true)
        );
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.idle_frac > 0.5"), &s),
            Some(false)
        );
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.idle_frac == 0.5"), &s),
            Some(true)
        );
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.idle_frac != 0.5"), &s),
            Some(false)
        );
    }

    #[test]
    fn missing_values_are_unknown_never_zero() {
        let s = src(&[("gpu_busy_pct.mean", 95.0)]);
        // sm_active missing: the comparison is not true, and neither is its negation.
        assert_eq!(eval_bool(&p("sm_active_pct.mean < 30"), &s), None);
        assert_eq!(eval_bool(&p("not sm_active_pct.mean < 30"), &s), None);
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.mean > 80 and sm_active_pct.mean < 30"), &s),
            None
        );
        // A definite false decides 'and'; a definite true decides 'or'.
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.mean < 80 and sm_active_pct.mean < 30"), &s),
            Some(false)
        );
        assert_eq!(
            eval_bool(&p("gpu_busy_pct.mean > 80 or sm_active_pct.mean < 30"), &s),
            Some(true)
        );
        // Arithmetic on missing is missing; division by zero is missing.
        assert_eq!(eval_num(&n("sm_active_pct.mean * 0"), &s, None), None);
        assert_eq!(eval_num(&n("gpu_busy_pct.mean / 0"), &s, None), None);
        // coalesce and known make absence explicit.
        assert_eq!(
            eval_num(&n("coalesce(sm_active_pct.mean, 7)"), &s, None),
            Some(7.0)
        );
        assert_eq!(eval_bool(&p("known(sm_active_pct.mean)"), &s), Some(false));
        assert_eq!(
            eval_bool(&p("not known(sm_active_pct.mean)"), &s),
            Some(true)
        );
    }

    #[test]
    fn gpu_functions_combine_per_gpu_values() {
        let g = |busy: f64| -> BTreeMap<String, f64> {
            [("gpu_busy_pct.mean".to_string(), busy)].into()
        };
        let s = Src {
            per_gpu: vec![g(90.0), g(40.0), g(80.0)],
            agg: [("target_cpu_pct.mean".to_string(), 50.0)].into(),
            ..Default::default()
        };
        assert_eq!(
            eval_num(&n("spread(gpu_busy_pct.mean)"), &s, None),
            Some(50.0)
        );
        assert_eq!(
            eval_num(&n("gpu_min(gpu_busy_pct.mean)"), &s, None),
            Some(40.0)
        );
        assert_eq!(
            eval_num(&n("gpu_max(gpu_busy_pct.mean)"), &s, None),
            Some(90.0)
        );
        assert_eq!(
            eval_num(&n("gpu_mean(gpu_busy_pct.mean)"), &s, None),
            Some(70.0)
        );
        // Host metrics inside a GPU function read the run-level value.
        assert_eq!(
            eval_num(
                &n("gpu_max(gpu_busy_pct.mean - target_cpu_pct.mean)"),
                &s,
                None
            ),
            Some(40.0)
        );
        assert_eq!(eval_num(&n("gpu_count"), &s, None), Some(3.0));
        // No GPU has the metric: missing, not 0.
        assert_eq!(eval_num(&n("spread(sm_active_pct.mean)"), &s, None), None);
    }

    #[test]
    fn deep_nesting_and_long_chains_are_refused_not_a_stack_overflow() {
        // Issue 9: 5,000 nested parentheses and a 100,000-term 'and'
        // overflowed the stack (exit 134).
        let deep = format!("{}gpu_count > 1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(
            err(&deep).message.contains("bytes long"),
            "{:?}",
            err(&deep)
        );
        let long = vec!["gpu_count > 1"; 100_000].join(" and ");
        assert!(err(&long).message.contains("bytes long"));
        // Under the byte cap, the nesting and token caps hold.
        let nested = |n: usize| format!("{}gpu_count > 1{}", "(".repeat(n), ")".repeat(n));
        assert!(parse(
            &nested(MAX_EXPR_NESTING),
            Type::Bool,
            &Vocabulary::standard()
        )
        .is_ok());
        let e = err(&nested(MAX_EXPR_NESTING + 1));
        assert!(e.message.contains("nested more than 32"), "{e:?}");
        assert_eq!(e.column, MAX_EXPR_NESTING + 1);
        let nots = format!("{}gpu_count > 1", "not ".repeat(40));
        assert!(err(&nots).message.contains("nested"));
        let negs = format!("{}gpu_count > 1", "-".repeat(40));
        assert!(err(&negs).message.contains("nested"));
        let calls = format!("{}gpu_count{} > 1", "abs(".repeat(40), ")".repeat(40));
        assert!(err(&calls).message.contains("nested"));
        let chain = |terms: usize| vec!["gpu_count > 1"; terms].join(" and ");
        // 4 tokens a term, 'and' between: 128 terms = 511 tokens.
        assert!(parse(&chain(128), Type::Bool, &Vocabulary::standard()).is_ok());
        let e = err(&chain(200));
        assert!(e.message.contains("799 tokens"), "{e:?}");
        // Fuzzing found it: a literal that overflows to infinity printed
        // back as "n/a".
        let e = err(&format!("gpu_count > {}", "5".repeat(400)));
        assert!(e.message.contains("too large"), "{e:?}");
        assert!(err("gpu_count > 1e400").message.contains("too large"));
    }

    #[test]
    fn errors_carry_the_column() {
        let e = err("sm_active_pct.mean < (30");
        assert_eq!(e.column, 25, "{e}");
        assert!(e.message.contains("')'"), "{e}");

        let e = err("sm_activ_pct.mean < 30");
        assert_eq!(e.column, 1);
        assert!(e.message.contains("did you mean 'sm_active_pct'"), "{e}");

        let e = err("gpu_busy_pct.mean > 80 and sm_active_pct.p42 < 30");
        assert_eq!(e.column, 42, "{e}");
        assert!(e.message.contains("'p42'"), "{e}");

        let e = err("gpu_busy_pct.mean > 80 && 1 < 2");
        assert_eq!(e.column, 24);
        assert!(e.message.contains("'and'"), "{e}");

        let e = err("gpu_busy_pct.mean");
        assert!(e.message.contains("expected a condition"), "{e}");

        let e = err("1 < 2 < 3");
        assert_eq!(e.column, 7);
        assert!(e.message.contains("do not chain"), "{e}");

        let e = err("gpu_busy_pct.mean > 80 sm_active_pct.mean < 30");
        assert_eq!(e.column, 24);

        let e = err("(1 < 2) + 3 > 1");
        assert_eq!(e.column, 1);
        assert!(e.message.contains("needs numbers"), "{e}");

        let e = err("spread(spread(gpu_busy_pct.mean)) > 1");
        assert!(e.message.contains("another GPU function"), "{e}");

        let e = err("foo(gpu_busy_pct.mean) > 1");
        assert!(e.message.contains("unknown function 'foo'"), "{e}");

        let e = err("min(gpu_busy_pct.mean) > 1");
        assert!(e.message.contains("takes 2"), "{e}");

        let e = err("gpu_busy_pct > 1");
        assert!(e.message.contains("gpu_busy_pct.mean"), "{e}");

        let e = err("gpu_busy_pct.mean > 30%");
        assert_eq!(e.column, 23);

        let e = err("");
        assert!(e.message.contains("empty"), "{e}");

        let e = err("gpu_busy_pct.mean = 3");
        assert!(e.message.contains("'=='"), "{e}");
    }

    #[test]
    fn margin_says_how_far_past_the_threshold() {
        let s = src(&[("sm_active_pct.mean", 3.0), ("gpu_busy_pct.mean", 100.0)]);
        let m = margin(&p("sm_active_pct.mean < 30"), &s).unwrap();
        assert!((m - 0.9).abs() < 1e-9, "{m}");
        let weak = margin(&p("sm_active_pct.mean < 4"), &s).unwrap();
        assert!(weak > 0.0 && weak < m);
        // and = weakest link
        let both = margin(&p("sm_active_pct.mean < 30 and gpu_busy_pct.mean > 99"), &s).unwrap();
        assert!(both <= 0.01 + 1e-9 && both > 0.0, "{both}");
        // Ties: >= holds, > does not.
        assert_eq!(eval_bool(&p("gpu_busy_pct.mean >= 100"), &s), Some(true));
        assert_eq!(eval_bool(&p("gpu_busy_pct.mean > 100"), &s), Some(false));
    }

    #[test]
    fn evidence_lists_non_constant_operands() {
        let e = p("gpu_busy_pct.mean > 80 and sm_active_pct.mean < 0.3 * gpu_busy_pct.mean");
        let ops: Vec<String> = evidence_operands(&e)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            ops,
            vec![
                "gpu_busy_pct.mean",
                "sm_active_pct.mean",
                "0.3 * gpu_busy_pct.mean"
            ]
        );
    }
}
