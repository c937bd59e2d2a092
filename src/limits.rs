//! Every size and time limit gate enforces on its inputs, in one place.
//! docs/limits.md lists them with what gate does past each one (a test
//! keeps that table in step with these constants).
//!
//! Why limits at all: gate reads files and flags that come from a merge
//! request, and a benchmark's output. A hostile or broken input must end in
//! one clear line and exit 2, never in a hang (a FIFO), a crash (a stack
//! overflow, an allocation of 240 GB) or a process left running. Each limit
//! is far above anything a real run produces (the sizes of the H200 fixtures
//! are given for scale) and low enough that gate stays within a CI runner's
//! memory when it is reached.

use std::time::Duration;

const MIB: u64 = 1024 * 1024;

/// Largest trace read (for a `.zst` trace, both the file and what it
/// expands to). A 1-hour, 8-GPU recording at 100 ms is ~76 MB and a 24-hour
/// one ~1.8 GB (issue 12 asks `check` to handle it); loaded, the samples
/// take about half the file's size as f32 columns, so 8 GiB (~4 days at
/// 8 GPUs) stays within a large CI runner's memory.
pub(crate) const MAX_TRACE_BYTES: u64 = 8 * 1024 * MIB;
/// A `.zst` trace may expand to at most this many times its compressed
/// size (or `MIN_ZSTD_EXPANDED_BYTES`, whichever is more). Real traces
/// compress 7-8x (an idle GPU's, all values constant, ~40x); a 4 MB file
/// expanding to 3 GiB of samples used to take 2.6 GB of memory.
pub(crate) const MAX_ZSTD_EXPANSION: u64 = 100;
/// What any `.zst` trace may expand to, however small the file.
pub(crate) const MIN_ZSTD_EXPANDED_BYTES: u64 = 64 * MIB;
/// Empty or whitespace-only lines a trace may hold (the writer writes
/// none): 327 kB of compressed newlines used to cost over 100 s of CPU.
pub(crate) const MAX_BLANK_TRACE_LINES: usize = 10_000;
/// Longest line (record) of a trace. The longest real records are the
/// header and the processes tables: a few KiB.
pub(crate) const MAX_TRACE_LINE_BYTES: usize = 16 * MIB as usize;
/// Latest time (ms since the start) a trace record may carry: 30 days.
/// Reports allocate per time slice, so a time of 1e13 ms used to ask for
/// 240 GB.
pub(crate) const MAX_TRACE_SPAN_MS: f64 = 30.0 * 24.0 * 3600.0 * 1000.0;
/// Largest baseline file. The committed one-GPU baseline is 40 KB; eight
/// GPUs make it about 8 times larger.
pub(crate) const MAX_BASELINE_BYTES: u64 = 16 * MIB;
/// Largest `gate.toml`.
pub(crate) const MAX_CONFIG_BYTES: u64 = MIB;
/// Most of a `--metrics-file` kept in a trace: a larger file is kept whole
/// up to this size, a larger JSON file without its per-round samples
/// (`metric_sources::keep`); more to keep fails the run (exit 2).
pub(crate) const MAX_METRICS_FILE_BYTES: u64 = MIB;
/// Largest `--metrics-file` read (a pytest-benchmark file keeping every
/// round of hundreds of tests is a few hundred MiB).
pub(crate) const MAX_METRICS_FILE_READ_BYTES: u64 = 1024 * MIB;
/// Benchmark stdout kept in the trace, in all (the rest still passes through).
pub(crate) const MAX_KEPT_OUTPUT_BYTES: usize = 4 * MIB as usize;
/// Longest benchmark stdout line kept (and matched by `--warmup-until` and
/// user-metric regexes); the rest of the line still passes through. A
/// 500 MB line used to cost 1 GB of memory.
pub(crate) const MAX_OUTPUT_LINE_BYTES: usize = 64 * 1024;
/// Longest `--warmup`, `--duration` and `--warmup-timeout` (each): 7 days.
/// `--duration 99999999999999999999` panicked while parsing; huge
/// `--warmup` + `--duration` overflowed the clock arithmetic after the
/// benchmark had started (and left it running).
pub(crate) const MAX_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
/// A recording stops at 29 days (as if `--duration` were reached), so its
/// trace stays within `MAX_TRACE_SPAN_MS` and can be read back.
pub(crate) const MAX_RECORDING: Duration = Duration::from_secs(29 * 24 * 3600);
/// Default bound on a `--warmup-until` wait: a pattern that never matches
/// must not hold a `--duration` run open for ever.
pub const DEFAULT_WARMUP_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Largest magnitude of a statistic in a baseline and of an absolute
/// tolerance: 1e15. Nothing gate measures comes near (an hour of eight
/// GPUs is 2e7 J; a user metric in bytes per second is below 1e12);
/// beyond it, `relative x baseline` tolerances swallow any change (a
/// baseline of 1e308 judged a 99.9 % drop a pass).
pub(crate) const MAX_ABS_VALUE: f64 = 1e15;
/// Default bound on one history step (`--history-timeout`): opening the
/// database with its reads for drift, or appending the run. PostgreSQL gets
/// it as `statement_timeout` and `lock_timeout` for the session; a stalled
/// server or a `runs` table locked by another session held `check` until
/// the CI killed it, with no verdict written.
pub(crate) const HISTORY_TIMEOUT: Duration = Duration::from_secs(10);
/// The client gives a step this much longer than `--history-timeout`
/// before it abandons the server (which then had its chance to report its
/// own time-out, a clearer message); catches a server that accepts TCP and
/// never answers, which no server-side setting can.
pub(crate) const HISTORY_CLIENT_GRACE: Duration = Duration::from_secs(2);
/// Longest wait for the TCP connection to a PostgreSQL history (unless the
/// URL sets `connect_timeout`; never more than `--history-timeout`).
pub(crate) const HISTORY_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest free text of one JUnit test case of a metric (its failure
/// text with the diagnosis): 3,000 regressed metrics each carrying the
/// whole diagnosis made an 880 MB JUnit file and took 1.86 GB of memory.
pub(crate) const MAX_CASE_TEXT_BYTES: usize = 2 * 1024;
/// Longest free text of the `run verdict` test case (reasons, diagnosis)
/// and of one line of the PR comment's head, in the report's own words.
pub(crate) const MAX_RUN_TEXT_BYTES: usize = 64 * 1024;
/// Longest one-line message (JUnit `message` attributes, the PR comment's
/// "Top cause" line before escaping).
pub(crate) const MAX_MESSAGE_BYTES: usize = 1024;
/// Largest PR comment gate writes: GitHub takes 65,536 characters, the
/// GitHub template cuts at 60,000 bytes; the table is cut first, the
/// markers by which the comment is found always stay last.
pub const MAX_PR_COMMENT_BYTES: usize = 60_000;
/// Most time slices in a report's panorama; a longer trace gets wider slices.
pub(crate) const MAX_PANORAMA_SLICES: usize = 100_000;

/// `text` within `MAX_MESSAGE_BYTES` (one warning or error line), cut at a
/// character boundary with how much was cut: a reader's warning that
/// quotes a file (12,000 benchmark names) stays one short line in every
/// output.
pub(crate) fn bounded_message(text: String) -> String {
    if text.len() <= MAX_MESSAGE_BYTES {
        return text;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes cut]", &text[..end], text.len() - end)
}

/// What a `.zst` trace of `compressed_bytes` may expand to.
pub(crate) fn zstd_expanded_cap(compressed_bytes: u64) -> u64 {
    compressed_bytes
        .saturating_mul(MAX_ZSTD_EXPANSION)
        .clamp(MIN_ZSTD_EXPANDED_BYTES, MAX_TRACE_BYTES)
}

/// A duration for people: `250ms`, `10s`, `10m`, `7 days`.
pub(crate) fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(86_400_000) {
        format!("{} days", ms / 86_400_000)
    } else if ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// `n` bytes for people: `512 KiB`, `16 MiB`, `1 GiB`.
pub(crate) fn bytes_text(n: u64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/limits.md states each limit: the table row must name the value
    /// this file enforces.
    #[test]
    fn the_documented_table_matches_the_constants() {
        let doc = include_str!("../docs/limits.md");
        let row = |label: &str| -> &str {
            doc.lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap_or_else(|| panic!("no row '{label}' in docs/limits.md"))
        };
        let expect = [
            ("trace file", bytes_text(MAX_TRACE_BYTES)),
            (
                "what a `.zst` trace expands to",
                format!("{MAX_ZSTD_EXPANSION} times"),
            ),
            (
                "what a `.zst` trace expands to",
                bytes_text(MIN_ZSTD_EXPANDED_BYTES),
            ),
            (
                "empty lines in a trace",
                MAX_BLANK_TRACE_LINES.to_string().replace("10000", "10,000"),
            ),
            (
                "one trace record (line)",
                bytes_text(MAX_TRACE_LINE_BYTES as u64),
            ),
            (
                "trace times",
                format!("{}", MAX_TRACE_SPAN_MS as u64).replace("2592000000", "2,592,000,000"),
            ),
            ("report panorama", "100,000".to_string()),
            ("baseline file", bytes_text(MAX_BASELINE_BYTES)),
            ("baseline statistics", format!("{MAX_ABS_VALUE:e}")),
            ("`gate.toml`", bytes_text(MAX_CONFIG_BYTES)),
            ("tolerances in `gate.toml`", format!("{MAX_ABS_VALUE:e}")),
            ("`--metrics-file` kept", bytes_text(MAX_METRICS_FILE_BYTES)),
            (
                "`--metrics-file` read",
                bytes_text(MAX_METRICS_FILE_READ_BYTES),
            ),
            (
                "benchmark stdout kept in the trace",
                bytes_text(MAX_KEPT_OUTPUT_BYTES as u64),
            ),
            (
                "one benchmark stdout line",
                bytes_text(MAX_OUTPUT_LINE_BYTES as u64),
            ),
            (
                "`--warmup`, `--duration`, `--warmup-timeout`",
                duration_text(MAX_WINDOW),
            ),
            (
                "`--warmup-until` wait",
                duration_text(DEFAULT_WARMUP_TIMEOUT),
            ),
            ("one recording", duration_text(MAX_RECORDING)),
            (
                "history step (`--history-timeout`)",
                format!(
                    "{}, plus {} on the client; TCP connect {}",
                    duration_text(HISTORY_TIMEOUT),
                    duration_text(HISTORY_CLIENT_GRACE),
                    duration_text(HISTORY_CONNECT_TIMEOUT)
                ),
            ),
            (
                "report texts",
                format!(
                    "{} per metric test case, {} for the run verdict, {} per message",
                    bytes_text(MAX_CASE_TEXT_BYTES as u64),
                    bytes_text(MAX_RUN_TEXT_BYTES as u64),
                    bytes_text(MAX_MESSAGE_BYTES as u64)
                ),
            ),
            ("PR comment", "60,000 bytes".to_string()),
            (
                "gate killed outright (SIGKILL, OOM)",
                duration_text(crate::watchdog::POLL),
            ),
            (
                "rule condition (`when`, `evidence`)",
                format!(
                    "{} bytes, {} tokens, {} levels",
                    crate::diagnose::dsl::MAX_EXPR_BYTES,
                    crate::diagnose::dsl::MAX_EXPR_TOKENS,
                    crate::diagnose::dsl::MAX_EXPR_NESTING
                ),
            ),
        ];
        for (label, value) in expect {
            assert!(
                row(label).contains(&value),
                "docs/limits.md '{label}' does not say {value}"
            );
        }
        assert_eq!(MAX_PANORAMA_SLICES, 100_000);
        assert_eq!(MAX_PR_COMMENT_BYTES, 60_000);
        assert_eq!(MAX_TRACE_SPAN_MS, 2_592_000_000.0);
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(bytes_text(MAX_TRACE_BYTES), "8 GiB");
        assert_eq!(bytes_text(MAX_CONFIG_BYTES), "1 MiB");
        assert_eq!(bytes_text(MAX_OUTPUT_LINE_BYTES as u64), "64 KiB");
        assert_eq!(bytes_text(1536), "1.5 KiB");
        assert_eq!(bytes_text(12), "12 bytes");
        assert_eq!(duration_text(MAX_WINDOW), "7 days");
        assert_eq!(duration_text(DEFAULT_WARMUP_TIMEOUT), "10m");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration_text(Duration::from_millis(250)), "250ms");
    }
}
