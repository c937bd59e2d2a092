//! Typed errors of the library. Each variant knows its exit code, so the
//! mapping from "what went wrong" to "what the pipeline sees" lives in one
//! place (`GateError::exit_code`).

use crate::exit_code;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// Bad input from the user: flags, files, rules. Exit 2.
    #[error("{0}")]
    Usage(String),
    /// A file the user gave us is malformed. Exit 2. The message names the
    /// file and, where known, the line and column.
    #[error("{path}: {message}")]
    BadFile { path: PathBuf, message: String },
    /// Measurement or infrastructure failure (no NVML, gate's own I/O,
    /// environment mismatch): gate could not measure. Exit 3.
    #[error("{0}")]
    Infra(String),
    /// The benchmark itself failed (exited nonzero, or killed by a signal
    /// gate did not send). Exit 5: deterministic, never retried.
    #[error("{0}")]
    BenchmarkFailed(String),
}

impl GateError {
    pub fn exit_code(&self) -> i32 {
        match self {
            GateError::Usage(_) | GateError::BadFile { .. } => exit_code::USAGE,
            GateError::Infra(_) => exit_code::INFRA,
            GateError::BenchmarkFailed(_) => exit_code::BENCHMARK_FAILED,
        }
    }

    pub fn usage(msg: impl Into<String>) -> Self {
        GateError::Usage(msg.into())
    }

    pub(crate) fn infra(msg: impl Into<String>) -> Self {
        GateError::Infra(msg.into())
    }

    pub(crate) fn bad_file(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        GateError::BadFile {
            path: path.into(),
            message: msg.into(),
        }
    }
}

/// An error and its causes on one line, outermost first ("a: b: c").
pub fn chain_line(err: &anyhow::Error) -> String {
    err.chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

/// Exit code for any error that reached `main`: typed errors keep theirs,
/// anything else (I/O on an output file, say) is an input/usage problem.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if let Some(g) = cause.downcast_ref::<GateError>() {
            return g.exit_code();
        }
    }
    exit_code::USAGE
}
