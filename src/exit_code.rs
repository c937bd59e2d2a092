//! The public exit-code contract of `gate`. Pipelines branch on these numbers
//! (GitLab's `retry:exit_codes: [3]`, a GitHub step's `if:`), so each one is
//! part of the interface: change them only with a major version.

/// Everything measured and judged: no regression (improvements included).
pub const PASS: i32 = 0;
/// At least one gated metric regressed beyond its threshold and the noise.
pub const REGRESSION: i32 = 1;
/// The user's input is wrong: bad flags, a broken baseline, `gate.toml`,
/// trace or rule. Fix the input; retrying will not help.
pub const USAGE: i32 = 2;
/// Measurement or infrastructure problem: gate or the runner could not
/// measure (no GPU or NVML, gate's own I/O failed, the recording was
/// interrupted or cut short, the environment does not match the baseline).
/// Retrying on another runner may help. A benchmark that fails is 5, not 3.
pub const INFRA: i32 = 3;
/// The verdict could not be reached: a decisive metric moved the bad way
/// beyond its practical floor, but inside the noise, and the automatic
/// reruns (or a replay, which cannot rerun) left it open. Not green by
/// default; `gate.toml` may map it to PASS (`[verdict] inconclusive = "pass"`).
/// Retrying on another runner will not help; more baseline runs will.
pub const INCONCLUSIVE: i32 = 4;
/// The benchmark itself failed: it exited nonzero or was killed by a signal
/// that gate did not send (an ImportError, a CUDA error, an assertion).
/// Deterministic in the change under test: pipelines must NOT retry it.
pub const BENCHMARK_FAILED: i32 = 5;

/// The order in which exit codes win, worst first: a suite's exit code
/// (docs/suites.md), and a check whose history record failed.
pub const EXIT_CODE_ORDER: &[i32] = &[
    USAGE,
    BENCHMARK_FAILED,
    REGRESSION,
    INFRA,
    INCONCLUSIVE,
    PASS,
];

/// The worst of several exit codes (`EXIT_CODE_ORDER`); an unknown code
/// ranks first. No codes: pass.
pub fn worst_exit_code(codes: impl IntoIterator<Item = i32>) -> i32 {
    let rank = |c: i32| EXIT_CODE_ORDER.iter().position(|&x| x == c).unwrap_or(0);
    codes.into_iter().min_by_key(|&c| rank(c)).unwrap_or(PASS)
}

/// One exit code as every listing names it: `gate --help`, the man page,
/// `gate check --help`, the OpenMetrics `gate_exit_code` HELP, and (checked
/// by tests/docs_facts.rs) README.md and docs/local.md.
#[derive(Debug, Clone, Copy)]
pub struct Meaning {
    pub code: i32,
    /// One or two words, for a summary line.
    pub short: &'static str,
    /// A few words: what the code says happened and, where it matters,
    /// whether a retry helps.
    pub words: &'static str,
}

/// Every exit code, in numeric order: the one source of the listings.
pub const ALL: [Meaning; 6] = [
    Meaning {
        code: PASS,
        short: "pass",
        words: "pass",
    },
    Meaning {
        code: REGRESSION,
        short: "regression",
        words: "regression",
    },
    Meaning {
        code: USAGE,
        short: "input error",
        words: "usage/config/input error",
    },
    Meaning {
        code: INFRA,
        short: "could not measure",
        words: "gate or the runner could not measure (no GPU, environment mismatch; retryable)",
    },
    Meaning {
        code: INCONCLUSIVE,
        short: "inconclusive",
        words: "inconclusive: moved inside the noise after the reruns (more baseline runs help)",
    },
    Meaning {
        code: BENCHMARK_FAILED,
        short: "benchmark failed",
        words: "the benchmark itself failed (exited nonzero or crashed; never retried)",
    },
];

/// The listing on one line: "0 pass, 1 regression, ..., 5 the benchmark
/// itself failed (...)".
pub fn listing() -> String {
    ALL.iter()
        .map(|m| format!("{} {}", m.code, m.words))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The short listing: "0 pass, 1 regression, 2 input error, ...".
pub fn short_listing() -> String {
    ALL.iter()
        .map(|m| format!("{} {}", m.code, m.short))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The listing as a help paragraph: "Exit codes: " and `listing()`.
pub(crate) fn help_paragraph() -> String {
    format!("Exit codes: {}.", listing())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_names_every_code_once_in_order() {
        let codes: Vec<i32> = ALL.iter().map(|m| m.code).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
        let mut ordered = EXIT_CODE_ORDER.to_vec();
        ordered.sort();
        assert_eq!(ordered, codes, "EXIT_CODE_ORDER ranks every listed code");
        let line = listing();
        for m in ALL {
            assert!(line.contains(&format!("{} {}", m.code, m.words)), "{line}");
            assert!(short_listing().contains(&format!("{} {}", m.code, m.short)));
        }
    }
}
