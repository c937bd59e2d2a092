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
