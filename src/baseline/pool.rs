//! The steady samples a baseline pools, kept in a scratch file while the
//! runs are read one after another.
//!
//! A baseline of several runs (or of the nodes of one multi-node run)
//! stores statistics over all their steady samples pooled: exact
//! percentiles, the mean and the standard deviation of every value
//! (`build::Runs::sampled`). That needs every run's values of a column at
//! once, and holding every run's columns is what made `capture` of 3 runs
//! of 8 GPUs x 24 h peak at ~3 GB and of 64 nodes at ~2.6 GB. So each run,
//! once summarised, writes its steady samples (f32 as loaded, one segment
//! per GPU and column and per host column) to an unnamed temporary file
//! (`TMPDIR`, removed by the kernel when gate exits, however it exits) and
//! frees its columns; the pooled statistics then read one column of every
//! run back at a time. The values and their order are those of pooling in
//! memory, so are the statistics, bit for bit
//! (`tests::kept_values_are_the_loaded_ones`, tests/capture_check.rs).
//!
//! Memory is then one run's columns while it loads (plus the column being
//! pooled); the scratch file is as large as the pooled runs' steady
//! columns (4 bytes a value: ~0.95 GB per run of 8 GPUs x 24 h at 100 ms).

use super::build::SteadyValues;
use crate::error::GateError;
use crate::summary::{Column, RunInput};
use crate::trace::Trace;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The scratch file and where its next segment goes.
pub struct SteadyStore {
    file: File,
    end: AtomicU64,
}

/// Where one run's steady values lie in the store.
#[derive(Debug, Clone)]
pub struct KeptRun {
    /// GPU columns per GPU slot (the run's header).
    ncols: usize,
    /// `gpu[slot * ncols + col]`.
    gpu: Vec<Segment>,
    /// `host[col]`.
    host: Vec<Segment>,
}

/// `len` f32 values from byte `offset`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    offset: u64,
    len: usize,
}

fn store_error(what: &str, e: std::io::Error) -> GateError {
    GateError::infra(format!(
        "{what} the runs' steady samples in a temporary file in '{}' (about 4 bytes per value of every pooled run): {e}; set TMPDIR to a directory with room",
        std::env::temp_dir().display()
    ))
}

impl SteadyStore {
    pub fn new() -> Result<SteadyStore, GateError> {
        let file = tempfile::tempfile().map_err(|e| store_error("cannot keep", e))?;
        Ok(SteadyStore {
            file,
            end: AtomicU64::new(0),
        })
    }

    /// Write `trace`'s values at the `steady` samples (missing values
    /// included, so the GPUs of a sample stay aligned for their mean).
    /// Several runs may be kept at once (loads run on several threads):
    /// each segment reserves its own place in the file.
    pub fn keep(&self, trace: &Trace, steady: &[usize]) -> Result<KeptRun, GateError> {
        let ncols = trace.header.gpu_columns.len();
        // The usual window is consecutive (warm-up first, teardown last):
        // written straight from the column.
        let consecutive = match (steady.first(), steady.last()) {
            (Some(&a), Some(&b)) => (b - a + 1 == steady.len()).then_some(a..b + 1),
            _ => Some(0..0),
        };
        let mut gathered = Vec::new();
        let mut put = |series: &[f32]| -> Result<Segment, GateError> {
            let values = match &consecutive {
                Some(range) => &series[range.clone()],
                None => {
                    gathered.clear();
                    gathered.extend(steady.iter().map(|&i| series[i]));
                    &gathered[..]
                }
            };
            let bytes = crate::files::f32_bytes(values);
            let offset = self.end.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            self.file
                .write_all_at(bytes, offset)
                .map_err(|e| store_error("cannot keep", e))?;
            Ok(Segment {
                offset,
                len: values.len(),
            })
        };
        let mut gpu = Vec::with_capacity(trace.gpu_count() * ncols);
        for slot in 0..trace.gpu_count() {
            for col in 0..ncols {
                gpu.push(put(trace.gpu_series(slot, col))?);
            }
        }
        let host = (0..trace.header.host_columns.len())
            .map(|col| put(trace.host_series(col)))
            .collect::<Result<_, _>>()?;
        Ok(KeptRun { ncols, gpu, host })
    }

    fn read(&self, seg: Segment) -> Result<Vec<f32>, GateError> {
        let mut values = vec![0f32; seg.len];
        self.file
            .read_exact_at(crate::files::f32_bytes_mut(&mut values), seg.offset)
            .map_err(|e| store_error("cannot read back", e))?;
        Ok(values)
    }
}

/// The kept runs, in the order of the inputs they belong to: what
/// `build::build_from` pools.
pub struct Kept<'a> {
    pub store: &'a SteadyStore,
    pub runs: &'a [KeptRun],
}

impl SteadyValues for Kept<'_> {
    /// `summary::steady_finite` of the run, from the store: the same
    /// values (the GPU mean per sample: the same additions in GPU order).
    fn steady_finite(
        &self,
        inputs: &[RunInput],
        run: usize,
        column: &Column,
    ) -> Result<Vec<f64>, GateError> {
        let kept = &self.runs[run];
        let header = &inputs[run].trace.header;
        let finite = |v: Vec<f32>| -> Vec<f64> {
            v.into_iter()
                .map(f64::from)
                .filter(|v| v.is_finite())
                .collect()
        };
        let ngpu = kept.gpu.len() / kept.ncols.max(1);
        match *column {
            Column::Gpu { slot, id } => match header.gpu_columns.iter().position(|c| c == id) {
                Some(col) if slot < ngpu => {
                    Ok(finite(self.store.read(kept.gpu[slot * kept.ncols + col])?))
                }
                _ => Ok(Vec::new()),
            },
            Column::GpuMean { id } => {
                let Some(col) = header.gpu_columns.iter().position(|c| c == id) else {
                    return Ok(Vec::new());
                };
                let mut sum: Vec<f64> = Vec::new();
                let mut count: Vec<u32> = Vec::new();
                for slot in 0..ngpu {
                    let series = self.store.read(kept.gpu[slot * kept.ncols + col])?;
                    if slot == 0 {
                        sum = vec![0.0; series.len()];
                        count = vec![0; series.len()];
                    }
                    for ((s, k), v) in sum.iter_mut().zip(&mut count).zip(series) {
                        let v = v as f64;
                        if v.is_finite() {
                            *s += v;
                            *k += 1;
                        }
                    }
                }
                Ok(sum
                    .iter()
                    .zip(&count)
                    .filter(|(_, &k)| k > 0)
                    .map(|(&s, &k)| s / k as f64)
                    .filter(|v| v.is_finite())
                    .collect())
            }
            Column::Host { id } => match header.host_columns.iter().position(|c| c == id) {
                Some(col) => Ok(finite(self.store.read(kept.host[col])?)),
                None => Ok(Vec::new()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Signature};

    #[test]
    fn kept_values_are_the_loaded_ones() {
        let config = crate::config::Config::default();
        // Glitches (missing GPM), a straggler GPU, non-consecutive steady
        // samples are covered by the signatures and the window below.
        let traces = [
            synthetic::trace(&Signature::contention().with_seed(3), 3),
            synthetic::trace(&Signature::imbalance(), 3),
        ];
        let inputs: Vec<RunInput> = traces.iter().map(|t| RunInput::new(t, &config)).collect();
        let store = SteadyStore::new().unwrap();
        let mut windows: Vec<Vec<usize>> = inputs.iter().map(|r| r.steady.clone()).collect();
        windows[1].retain(|i| i % 7 != 0);
        let runs: Vec<KeptRun> = traces
            .iter()
            .zip(&windows)
            .map(|(t, w)| store.keep(t, w).unwrap())
            .collect();
        let kept = Kept {
            store: &store,
            runs: &runs,
        };
        let h = &traces[0].header;
        let columns = (0..4)
            .flat_map(|slot| h.gpu_columns.iter().map(move |id| Column::Gpu { slot, id }))
            .chain(h.gpu_columns.iter().map(|id| Column::GpuMean { id }))
            .chain(h.host_columns.iter().map(|id| Column::Host { id }))
            .chain([Column::Host { id: "nope" }]);
        let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for c in columns {
            for run in 0..2 {
                let want = crate::summary::steady_finite(&traces[run], &windows[run], &c);
                let got = kept.steady_finite(&inputs, run, &c).unwrap();
                assert_eq!(bits(got), bits(want), "run {run}, {}", c.id());
            }
        }
    }
}
