//! The floor `gate check` is measured against (BENCHMARKS.md, section 2):
//! read a trace with serde straight into column-major f32 series, one
//! contiguous `Vec` per GPU and metric (a `DeserializeSeed` that appends
//! each sample's values to its columns, no per-line vectors), then compute
//! gate's own statistics (`MetricStats::from_finite`) for every column of
//! every GPU, the per-sample GPU mean and the host columns, over the steady
//! window, one column at a time on one thread. No features, no rules, no
//! verdict, no report: what any checker must at least do.
//!
//! ```text
//! cargo run --release --example check-floor -- [--threads N] TRACE.jsonl
//! ```
//! Prints one line: samples, GPUs and the number of statistics computed.
//!
//! `--threads N` (default 1) is the N-thread floor: the lines after the
//! header are split into N parts at line boundaries, each part parsed on a
//! thread of its own into its own columns, the parts' columns appended in
//! order, and the statistics computed on N threads (the series dealt out
//! in turn). What any checker that uses N cores must at least do.

use gpugate::stats::MetricStats;
use gpugate::trace::{Header, Record};
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use std::fmt;
use std::io::BufRead;

#[derive(Default)]
struct Columns {
    ngpu: usize,
    ncols: usize,
    times_ms: Vec<f64>,
    warmup: Vec<bool>,
    /// `gpu[g * ncols + c]`: one series per GPU and column.
    gpu: Vec<Vec<f32>>,
    host: Vec<Vec<f32>>,
}

/// Deserialises one `sample` record into the columns.
struct SampleSeed<'a>(&'a mut Columns);

impl<'de> DeserializeSeed<'de> for SampleSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SampleSeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace record")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<bool, A::Error> {
        let c = self.0;
        let mut is_sample = false;
        let mut w = false;
        while let Some(key) = m.next_key::<&str>()? {
            match key {
                "type" => is_sample = m.next_value::<&str>()? == "sample",
                "t" if is_sample => c.times_ms.push(m.next_value()?),
                "w" if is_sample => w = m.next_value()?,
                "g" if is_sample => m.next_value_seed(Rows(c))?,
                "h" if is_sample => m.next_value_seed(Values(&mut c.host[..]))?,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        if is_sample {
            c.warmup.push(w);
        }
        Ok(is_sample)
    }
}

/// `[[v, ...], ...]`: one row per GPU.
struct Rows<'a>(&'a mut Columns);

impl<'de> DeserializeSeed<'de> for Rows<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Rows<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("GPU rows")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        let (ngpu, ncols) = (self.0.ngpu, self.0.ncols);
        let mut rows = 0;
        while rows < ngpu
            && s.next_element_seed(Values(&mut self.0.gpu[rows * ncols..(rows + 1) * ncols]))?
                .is_some()
        {
            rows += 1;
        }
        if rows == ngpu && s.next_element::<IgnoredAny>()?.is_some() {
            rows += 1;
        }
        if rows != ngpu {
            return Err(A::Error::custom("GPU count differs from the header"));
        }
        Ok(())
    }
}

/// `[v|null, ...]`, value k appended as f32 (NaN for null) to series k;
/// exactly as many values as series.
struct Values<'a>(&'a mut [Vec<f32>]);

impl<'de> DeserializeSeed<'de> for Values<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Values<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("values")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        let mut k = 0;
        while let Some(v) = s.next_element::<Option<f64>>()? {
            let series = self
                .0
                .get_mut(k)
                .ok_or_else(|| A::Error::custom("column count differs from the header"))?;
            series.push(v.map(|x| x as f32).unwrap_or(f32::NAN));
            k += 1;
        }
        if k != self.0.len() {
            return Err(A::Error::custom("column count differs from the header"));
        }
        Ok(())
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut threads = 1usize;
    if args.first().is_some_and(|a| a == "--threads") && args.len() > 1 {
        threads = args[1].parse().unwrap_or(0).max(1);
        args.drain(..2);
    }
    let path = args.first().cloned().unwrap_or_else(|| {
        eprintln!("usage: check-floor [--threads N] TRACE.jsonl");
        std::process::exit(2)
    });
    let file = std::fs::File::open(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    let body = reader.read_line(&mut line).expect("header line") as u64;
    let header: Header = match serde_json::from_str::<Record>(line.trim_end()) {
        Ok(Record::Header(h)) => *h,
        _ => {
            eprintln!("{path}: line 1 is not a gate trace header");
            std::process::exit(2)
        }
    };
    let (ngpu, ncols, nhost) = (
        header.fingerprint.gpus.len(),
        header.gpu_columns.len(),
        header.host_columns.len(),
    );
    let empty = || Columns {
        ngpu,
        ncols,
        gpu: vec![Vec::new(); ngpu * ncols],
        host: vec![Vec::new(); nhost],
        ..Default::default()
    };
    // Part boundaries: after the first newline at or past an even split.
    let mut bounds = vec![body];
    for k in 1..threads as u64 {
        bounds.push(next_line(
            &path,
            body + (size - body) * k / threads as u64,
            size,
        ));
    }
    bounds.push(size);
    let parts: Vec<Columns> = std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (from, to) = (w[0], w[1]);
                let path = &path;
                s.spawn(move || parse_part(path, from, to, empty()))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut c = empty();
    for p in parts {
        c.times_ms.extend(p.times_ms);
        c.warmup.extend(p.warmup);
        for (all, part) in c
            .gpu
            .iter_mut()
            .chain(&mut c.host)
            .zip(p.gpu.into_iter().chain(p.host))
        {
            all.extend(part);
        }
    }
    let stats = statistics(&c, threads);
    println!(
        "{} samples x {ngpu} GPUs: {stats} statistics",
        c.times_ms.len()
    );
}

/// The offset just after the first newline at or after `at` (or `size`).
fn next_line(path: &str, at: u64, size: u64) -> u64 {
    use std::io::{Seek, SeekFrom};
    let mut f = std::io::BufReader::new(std::fs::File::open(path).expect("reopen"));
    f.seek(SeekFrom::Start(at)).expect("seek");
    let mut skipped = Vec::new();
    let n = f.read_until(b'\n', &mut skipped).expect("read") as u64;
    (at + n).min(size)
}

/// Parse the lines in `path[from..to]` into `c`.
fn parse_part(path: &str, from: u64, to: u64, mut c: Columns) -> Columns {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).expect("reopen");
    f.seek(SeekFrom::Start(from)).expect("seek");
    let mut reader = std::io::BufReader::with_capacity(1 << 20, f.take(to - from));
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
        let mut de = serde_json::Deserializer::from_str(line.trim_end());
        if SampleSeed(&mut c).deserialize(&mut de).is_err() {
            eprintln!("{path}: a line does not parse");
            std::process::exit(2)
        }
    }
    c
}

/// gate's statistics over the steady window, every series gate computes,
/// each read as one contiguous slice, the series dealt out to `threads`
/// threads; the number of statistics.
fn statistics(c: &Columns, threads: usize) -> usize {
    let (ngpu, ncols) = (c.ngpu, c.ncols);
    let steady: Vec<usize> = (0..c.times_ms.len()).filter(|&i| !c.warmup[i]).collect();
    let n = c.times_ms.len();
    // One job: a GPU series, a GPU column's mean over the GPUs, or a host series.
    let jobs = c.gpu.len() + ncols + c.host.len();
    let job = |j: usize| -> Option<MetricStats> {
        let finite = |series: &mut dyn Iterator<Item = f64>| -> Vec<f64> {
            series.filter(|v| v.is_finite()).collect()
        };
        let window =
            |series: &[f32]| -> Vec<f64> { finite(&mut steady.iter().map(|&i| series[i] as f64)) };
        if j < c.gpu.len() {
            return MetricStats::from_finite(window(&c.gpu[j]));
        }
        let col = j - c.gpu.len();
        if col < ncols {
            let (mut sum, mut count) = (vec![0.0f64; n], vec![0u32; n]);
            for g in 0..ngpu {
                for (i, &v) in c.gpu[g * ncols + col].iter().enumerate() {
                    if v.is_finite() {
                        sum[i] += v as f64;
                        count[i] += 1;
                    }
                }
            }
            return MetricStats::from_finite(finite(
                &mut steady.iter().map(|&i| sum[i] / count[i] as f64),
            ));
        }
        MetricStats::from_finite(window(&c.host[col - ncols]))
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let job = &job;
                s.spawn(move || {
                    (t..jobs).step_by(threads).filter_map(job).fold(0, |n, st| {
                        std::hint::black_box(st);
                        n + 1
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}
