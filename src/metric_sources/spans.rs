//! Where each benchmark of a multi-benchmark run ran: its span in the
//! recording, found in the harness's own progress output (the trace keeps
//! every stdout line with its time) or in markers gate.toml declares
//! (`spans = REGEX` with a group named `name`).
//!
//! | harness | the line | what it marks |
//! |---|---|---|
//! | Google Benchmark (console reporter) | `BM_Sort/4096   227560 ns   141629 ns   94` (and its `_mean`, `_median`, `_stddev`, `_cv` rows) | the END of the benchmark: the library prints a benchmark's rows when its repetitions are done |
//! | nvbench | `Run:  [2/6] copy_type_sweep [Device=0 T{ct}=I8]`, then `Pass:`/`Skip:`/`Warn:` lines | the START of a state (`BENCH/AXES`, the axis tags `{ct}` dropped as in its JSON), and its end (the last of its `Pass:` lines) |
//! | pytest (`-v`, pytest-benchmark) | `tests/test_x.py::test_sum[0] PASSED   [ 20%]` | the END of the test: pytest writes the line's end when the test is done and flushes it |
//! | pytest `-v -s` | `tests/test_x.py::test_sum[0] ` and the test's own output, later `PASSED` on a line of its own | the START of the test (its node id, flushed as it starts), and its END |
//! | asv (`asv run`) | `[ 50.00%] ··· benchmarks.TimeSuite.time_keys   1.23±0.01μs` | the END of the benchmark (a batch's results come together after its `Running (...)` line: those spans are too short and fall back) |
//! | `spans = REGEX` | a line the regex matches; its `name` group names the span | the START of that span (it runs to the next marker line); when a group named `end` takes part in the match, the END of that span instead |
//!
//! An end-marked benchmark starts where the one before it ended (the first
//! one: at the line printed just before it, the harness's header; with no
//! line before it, at the start of the recording). Lines of one benchmark
//! printed one after another are one span; a benchmark whose lines are
//! interleaved with others' (Google Benchmark's
//! `--benchmark_enable_random_interleaving`) has several parts.

use super::Format;
use regex::Regex;
use std::sync::OnceLock;

/// One benchmark's time in a run: one or more intervals (ms since the
/// recording started, as the trace's sample and output times).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The benchmark as its harness prints it (pytest: the node id).
    pub name: String,
    pub parts: Vec<(f64, f64)>,
}

impl Span {
    /// Whether a sample taken at `t_ms` falls in one of the span's parts:
    /// after its start, up to its end (a sample's counters are of the
    /// interval before it).
    pub fn contains(&self, t_ms: f64) -> bool {
        self.parts.iter().any(|&(a, b)| t_ms > a && t_ms <= b)
    }

    /// The first start and the last end.
    pub fn bounds(&self) -> (f64, f64) {
        let start = self.parts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let end = self
            .parts
            .iter()
            .map(|p| p.1)
            .fold(f64::NEG_INFINITY, f64::max);
        (start, end)
    }
}

/// The progress output that marks benchmarks.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    GoogleBenchmark,
    Nvbench,
    Pytest,
    Asv,
    /// The user's `spans = REGEX`.
    Markers(&'a Regex),
}

impl<'a> Progress<'a> {
    /// What marks the benchmarks of a table read in `format`: the user's
    /// markers when declared, else its harness's own progress lines. A
    /// BMF file is what Bencher's adapters write (asv among them). None:
    /// nothing marks them (a `regex` or `json` table without `spans`).
    pub fn of(format: Format, markers: Option<&'a Regex>) -> Option<Progress<'a>> {
        if let Some(re) = markers {
            return Some(Progress::Markers(re));
        }
        match format {
            Format::GoogleBenchmark => Some(Progress::GoogleBenchmark),
            Format::Nvbench => Some(Progress::Nvbench),
            Format::PytestBenchmark => Some(Progress::Pytest),
            Format::Bmf => Some(Progress::Asv),
            _ => None,
        }
    }

    /// Where the spans came from, for the reports.
    pub fn describe(&self) -> &'static str {
        match self {
            Progress::GoogleBenchmark => "Google Benchmark's result lines",
            Progress::Nvbench => "nvbench's Run:/Pass: lines",
            Progress::Pytest => "pytest -v's result lines",
            Progress::Asv => "asv's result lines",
            Progress::Markers(_) => "the spans markers of gate.toml",
        }
    }

    /// How to make the harness print what marks its benchmarks.
    pub fn hint(&self) -> &'static str {
        match self {
            Progress::GoogleBenchmark => "keep the console reporter on stdout (write the JSON with --benchmark_out=FILE --benchmark_out_format=json, not --benchmark_format=json)",
            Progress::Nvbench => "keep nvbench's log on stdout (its default)",
            Progress::Pytest => "run pytest with -v, without -n (xdist)",
            Progress::Asv => "run asv with its progress output on stdout",
            Progress::Markers(_) => "print a line matching the spans regex as each benchmark starts",
        }
    }
}

/// Every benchmark's span in `lines` (time in ms, text), in the order of
/// their first line.
pub fn find(progress: &Progress, lines: &[(f64, &str)]) -> Vec<Span> {
    match progress {
        Progress::Nvbench => started(lines, nvbench_run, |l| {
            ["Pass:", "Skip:", "Warn:", "Fail:"]
                .iter()
                .any(|p| l.starts_with(p))
        }),
        Progress::Markers(re) => markers(re, lines),
        // Google Benchmark prints its table header with the first row.
        Progress::GoogleBenchmark => ended(lines, google_row, false),
        Progress::Pytest => pytest(lines),
        Progress::Asv => ended(lines, asv_row, true),
    }
}

/// The span of benchmark `bench` (the name the metrics file gives it, or
/// a `regex`/`json` table's name): the span of that name; for pytest the
/// node id ending in `::bench`; for nvbench a benchmark of one state by its
/// bare name; else the one span whose name is whole words of it (a marker
/// `matmul` for `test_op[matmul]` or `matmul_ms`). Err: why there is none,
/// for the report.
pub fn lookup<'s>(spans: &'s [Span], bench: &str) -> Result<&'s Span, String> {
    if let Some(s) = spans.iter().find(|s| s.name == bench) {
        return Ok(s);
    }
    let by_words: Vec<&Span> = spans.iter().filter(|s| words_of(&s.name, bench)).collect();
    let by_suffix: Vec<&Span> = spans
        .iter()
        .filter(|s| {
            s.name
                .strip_suffix(bench)
                .is_some_and(|head| head.ends_with("::"))
                || s.name
                    .strip_prefix(bench)
                    .is_some_and(|tail| tail.starts_with('/'))
        })
        .collect();
    match by_suffix.as_slice() {
        [one] => Ok(one),
        [] if by_words.len() == 1 => Ok(by_words[0]),
        [] if spans.is_empty() => Err("no progress line of any benchmark".into()),
        [] => Err(format!(
            "no progress line names it ({} others do)",
            spans.len()
        )),
        many => Err(format!(
            "{} progress lines' names end in it; name it by its full name",
            many.len()
        )),
    }
}

/// Whether `name`'s words (runs of letters and digits) come in a row in
/// `bench`'s.
fn words_of(name: &str, bench: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (n, b) = (words(name), words(bench));
    !n.is_empty() && b.windows(n.len()).any(|w| w == n.as_slice())
}

/// Spans whose lines mark each benchmark's END (`row` gives the
/// benchmark's name on such a line). The first starts at the line before
/// it when `header_before` (the harness prints one before it runs), else
/// at the start of the recording.
fn ended(lines: &[(f64, &str)], row: fn(&str) -> Option<String>, header_before: bool) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut last_end: Option<f64> = None;
    let mut last_name: Option<String> = None;
    let mut prev_line: Option<f64> = None;
    for &(t, line) in lines {
        let Some(name) = row(line) else {
            if header_before {
                prev_line = Some(t);
            }
            continue;
        };
        let start = last_end.or(prev_line).unwrap_or(0.0);
        let at = match spans.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                spans.push(Span {
                    name: name.clone(),
                    parts: Vec::new(),
                });
                spans.len() - 1
            }
        };
        let parts = &mut spans[at].parts;
        match parts.last_mut() {
            // Rows of one benchmark in a row (repetitions, aggregates).
            Some(p) if last_name.as_deref() == Some(name.as_str()) => p.1 = t,
            _ => parts.push((start, t)),
        }
        last_end = Some(t);
        last_name = Some(name);
    }
    spans
}

/// Spans whose lines mark each benchmark's START (`run`); `progress`
/// lines inside it move its end, and the next start ends it otherwise.
fn started(
    lines: &[(f64, &str)],
    run: fn(&str) -> Option<String>,
    progress: fn(&str) -> bool,
) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    // (index into spans, start, last progress line)
    let mut open: Option<(usize, f64, Option<f64>)> = None;
    let close = |spans: &mut Vec<Span>, open: Option<(usize, f64, Option<f64>)>, t: f64| {
        if let Some((i, start, end)) = open {
            spans[i].parts.push((start, end.unwrap_or(t)));
        }
    };
    for &(t, line) in lines {
        if let Some(name) = run(line) {
            close(&mut spans, open.take(), t);
            let i = match spans.iter().position(|s| s.name == name) {
                Some(i) => i,
                None => {
                    spans.push(Span {
                        name,
                        parts: Vec::new(),
                    });
                    spans.len() - 1
                }
            };
            open = Some((i, t, None));
        } else if progress(line) {
            if let Some(o) = open.as_mut() {
                o.2 = Some(t);
            }
        }
    }
    let last = lines.last().map_or(0.0, |l| l.0);
    close(&mut spans, open, last);
    spans
}

/// The user's markers: a match opens the span its `name` group names (and
/// closes the one open); with an `end` group in the match it closes that
/// span. A span still open at the end runs to the end of the recording.
fn markers(re: &Regex, lines: &[(f64, &str)]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut open: Option<(usize, f64)> = None;
    for &(t, line) in lines {
        let Some(c) = re.captures(line) else { continue };
        let Some(name) = c.name("name").map(|m| m.as_str().trim().to_string()) else {
            continue;
        };
        if let Some((i, start)) = open.take() {
            spans[i].parts.push((start, t));
        }
        if c.name("end").is_some() {
            continue;
        }
        let i = match spans.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                spans.push(Span {
                    name,
                    parts: Vec::new(),
                });
                spans.len() - 1
            }
        };
        open = Some((i, t));
    }
    if let Some((i, start)) = open {
        spans[i].parts.push((start, f64::INFINITY));
    }
    spans.retain(|s| !s.parts.is_empty());
    spans
}

fn re(cell: &'static OnceLock<Regex>, text: &str) -> &'static Regex {
    // The patterns below are literals that compile.
    cell.get_or_init(|| Regex::new(text).expect("a literal regex compiles"))
}

/// A Google Benchmark console row: name, then a time with its unit (or a
/// `_cv` row's percentage); its aggregates count as the benchmark.
fn google_row(line: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let c = re(
        &RE,
        r"^(\S+)\s+[0-9.]+(?:e[+-]?[0-9]+)?\s*(?:ns|us|ms|s|%)\s+[0-9.]+(?:e[+-]?[0-9]+)?\s*(?:ns|us|ms|s|%)\s+[0-9]+",
    )
    .captures(line)?;
    let name = c.get(1)?.as_str();
    let base = ["_mean", "_median", "_stddev", "_cv"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    Some(base.to_string())
}

/// pytest -v: `NODEID OUTCOME [ NN%]` ends a test that started where the
/// one before it ended (or at the line before it: the collection line);
/// with `-s` the node id comes alone as the test starts (its own output
/// follows on that line) and the outcome on a later line of its own.
fn pytest(lines: &[(f64, &str)]) -> Vec<Span> {
    static NODE: OnceLock<Regex> = OnceLock::new();
    static OUTCOME: OnceLock<Regex> = OnceLock::new();
    let node = re(&NODE, r"^(\S+\.py::\S+)(?:\s+(.*))?$");
    let outcome = re(
        &OUTCOME,
        r"^(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?:\s+\[\s*[0-9]+%\])?\s*$",
    );
    let mut spans: Vec<Span> = Vec::new();
    let mut push = |name: &str, part: (f64, f64)| match spans.iter_mut().find(|s| s.name == name) {
        Some(s) => s.parts.push(part),
        None => spans.push(Span {
            name: name.to_string(),
            parts: vec![part],
        }),
    };
    let (mut last_end, mut prev_line): (Option<f64>, f64) = (None, 0.0);
    let mut open: Option<(String, f64)> = None;
    for &(t, line) in lines {
        match node.captures(line) {
            Some(c) => {
                let id = c.get(1).map_or("", |m| m.as_str());
                let rest = c.get(2).map_or("", |m| m.as_str());
                if outcome.is_match(rest) {
                    push(id, (last_end.unwrap_or(prev_line), t));
                    last_end = Some(t);
                } else {
                    open = Some((id.to_string(), t));
                }
            }
            None if outcome.is_match(line) => {
                if let Some((id, start)) = open.take() {
                    push(&id, (start, t));
                    last_end = Some(t);
                }
            }
            None => {}
        }
        prev_line = t;
    }
    spans
}

/// asv's result line: `[ NN.NN%] ··· NAME   RESULT` (not its `Running`
/// or `Setting up` lines).
fn asv_row(line: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let c = re(&RE, r"^\[\s*[0-9.]+%\]\s+·{3}\s+(\S+\.\S+)(?:\s|$)").captures(line)?;
    Some(c.get(1)?.as_str().to_string())
}

/// nvbench's `Run:  [i/n] BENCH [AXES]`: `BENCH/AXES`, the axis tags
/// (`T{ct}=I8`) dropped as its JSON names states.
fn nvbench_run(line: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    static TAG: OnceLock<Regex> = OnceLock::new();
    let c = re(&RE, r"^Run:\s+\[[0-9]+/[0-9]+\]\s+(.+?)\s+\[(.*)\]\s*$").captures(line)?;
    let axes = re(&TAG, r"\{[a-z]+\}").replace_all(c.get(2)?.as_str(), "");
    Some(format!("{}/{}", c.get(1)?.as_str(), axes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(text: &str) -> Vec<(f64, String)> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i as f64 * 100.0, l.to_string()))
            .collect()
    }

    fn spans(p: Progress, text: &str) -> Vec<Span> {
        let lines = timed(text);
        let refs: Vec<(f64, &str)> = lines.iter().map(|(t, l)| (*t, l.as_str())).collect();
        find(&p, &refs)
    }

    /// The console output of scripts/harness/gbench_tiny.cc built against
    /// the real library (libbenchmark 1.8, `--benchmark_repetitions=2`).
    const GOOGLE: &str = "\
------------------------------------------------------------------------------------
Benchmark                          Time             CPU   Iterations UserCounters...
------------------------------------------------------------------------------------
BM_VectorSum/1024                721 ns          290 ns        49334 items_per_second=3.53305G/s
BM_VectorSum/1024                699 ns          291 ns        49334 items_per_second=3.51657G/s
BM_VectorSum/1024_mean           710 ns          291 ns            2 items_per_second=3.52481G/s
BM_VectorSum/1024_cv            2.15 %          0.33 %             2 items_per_second=0.33%
BM_Sort/4096                  274183 ns       145474 ns           94 bytes_per_second=107.408M/s
BM_Sort/4096_stddev            65935 ns         5437 ns            2 bytes_per_second=4.23823M/s
BM_StringConcat                  722 ns          560 ns        24847";

    #[test]
    fn google_benchmark_rows_end_each_benchmark_and_its_aggregates_are_its_own() {
        let s = spans(Progress::GoogleBenchmark, GOOGLE);
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["BM_VectorSum/1024", "BM_Sort/4096", "BM_StringConcat"]
        );
        // The first starts with the recording: the library prints its
        // table header with the first row.
        assert_eq!(s[0].parts, vec![(0.0, 600.0)]);
        assert_eq!(s[1].parts, vec![(600.0, 800.0)]);
        assert_eq!(s[2].parts, vec![(800.0, 900.0)]);
        assert_eq!(lookup(&s, "BM_Sort/4096").unwrap().name, "BM_Sort/4096");
        assert!(lookup(&s, "BM_Nope")
            .unwrap_err()
            .contains("no progress line"));
    }

    #[test]
    fn pytest_verbose_lines_answer_to_the_short_name_unless_it_is_ambiguous() {
        let text = "collecting ... collected 3 items\n\ntests/a.py::test_sum[0] PASSED                                  [ 33%]\ntests/a.py::test_sleep PASSED   [ 66%]\ntests/b.py::test_sleep FAILED   [100%]\n";
        // -s: the node id as the test starts, PASSED alone as it ends
        // (pytest 9.2, pytest-benchmark 5.3).
        let s = spans(
            Progress::Pytest,
            "collected 2 items\n\nt.py::test_op[a] gate: warm\ngate: bench-start a\nPASSED\nt.py::test_op[b] gate: bench-start b\nx\nPASSED\nWrote benchmark data in: m.json",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].parts, vec![(200.0, 400.0)]);
        assert_eq!(s[1].parts, vec![(500.0, 700.0)]);
        assert_eq!(lookup(&s, "test_op[b]").unwrap().name, "t.py::test_op[b]");
        let s = spans(Progress::Pytest, text);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].parts, vec![(100.0, 200.0)]);
        assert_eq!(
            lookup(&s, "test_sum[0]").unwrap().name,
            "tests/a.py::test_sum[0]"
        );
        assert!(lookup(&s, "test_sleep")
            .unwrap_err()
            .contains("2 progress lines"));
        assert_eq!(
            lookup(&s, "tests/b.py::test_sleep").unwrap().parts,
            vec![(300.0, 400.0)]
        );
    }

    #[test]
    fn nvbench_states_run_from_their_run_line_to_their_last_pass_line() {
        let text = "# Log\n\n```\nRun:  [1/2] copy_type_sweep [Device=0 T{ct}=I8]\nWarn: Current measurement timed out\nPass: Cold: 0.075140ms GPU, 0.082521ms CPU, 0.50s total GPU, 0.84s total wall, 6656x \nRun:  [2/2] Not Coalesced (sizes) [Device=0 N=2^4]\nPass: Cold: 0.1ms GPU\nPass: Batch: 0.1ms GPU\n```";
        let s = spans(Progress::Nvbench, text);
        assert_eq!(s[0].name, "copy_type_sweep/Device=0 T=I8");
        assert_eq!(s[0].parts, vec![(300.0, 500.0)]);
        assert_eq!(s[1].name, "Not Coalesced (sizes)/Device=0 N=2^4");
        assert_eq!(s[1].parts, vec![(600.0, 800.0)]);
        // A benchmark of one state answers to its bare name.
        assert_eq!(lookup(&s, "copy_type_sweep").unwrap().name, s[0].name);
    }

    #[test]
    fn asv_result_lines_not_its_running_lines() {
        let text = "[  0.00%] · For project commit 1a2b3c4d:\n[  0.00%] ··· Running (benchmarks.TimeSuite.time_keys--).\n[ 50.00%] ··· benchmarks.TimeSuite.time_keys                 1.23±0.01μs\n[100.00%] ··· benchmarks.MemSuite.mem_list                       2.42k";
        let s = spans(Progress::Asv, text);
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "benchmarks.TimeSuite.time_keys",
                "benchmarks.MemSuite.mem_list"
            ]
        );
        assert_eq!(s[0].parts, vec![(100.0, 200.0)]);
    }

    #[test]
    fn markers_start_spans_and_an_end_group_closes_one() {
        let re = Regex::new(r"^(?:=== (?P<name>\w+)|--- (?P<end>done) (?P<name2>\w+))$").unwrap();
        // `name` must take part for a line to count: the end form here has
        // no `name`, so only starts count and the last runs to the end.
        let s = spans(Progress::Markers(&re), "=== a\nx\n=== b\n--- done b\n");
        assert_eq!(s[0].parts, vec![(0.0, 200.0)]);
        assert_eq!(s[1].parts, vec![(200.0, f64::INFINITY)]);
        let re = Regex::new(r"^(?:begin|(?P<end>end)) (?P<name>\w+)$").unwrap();
        let s = spans(
            Progress::Markers(&re),
            "begin a\nend a\nidle\nbegin b\nend b\nbegin a\n",
        );
        assert_eq!(s[0].name, "a");
        assert_eq!(s[0].parts, vec![(0.0, 100.0), (500.0, f64::INFINITY)]);
        assert_eq!(s[1].parts, vec![(300.0, 400.0)]);
        assert!(s[0].contains(50.0) && !s[0].contains(200.0));
    }
}
