//! The floor `gate check` is measured against (BENCHMARKS.md, section 2):
//! the least work that reads every sample line of a trace and computes the
//! statistics a check computes. A byte scanner over the memory-mapped file,
//! no JSON library on the sample lines: each `sample` line's numbers are
//! parsed in place (`null`: missing) into column-major f32 series, one per
//! GPU and metric and one per host metric (a block of 256 rows at a time,
//! then each series takes its 256 values in one go); then gate's own
//! statistics (`MetricStats::from_finite`) of every GPU series, of the
//! per-sample GPU mean of every metric and of every host series, over
//! gate's steady window (after warm-up, before the idle teardown tail that
//! gate cuts when the target exited: `validity::idle_tail_len`). No
//! features, no rules, no verdict, no report, no checks of the format
//! beyond what the scan needs: what any checker must at least do.
//!
//! ```text
//! cargo run --release --example check-floor -- [--threads N] [--verify] TRACE.jsonl
//! ```
//! Prints one line: samples, GPUs and the number of statistics computed.
//!
//! `--threads N` (default 1): the lines after the header are split into N
//! parts at line boundaries, each part scanned on a thread of its own into
//! columns of its own (read in place as one series, not appended), and the
//! statistics dealt out to N threads in turn.
//!
//! `--verify`: also load the trace with gate (`Trace::load`,
//! `summary::summarize`) and exit 1 unless every statistic is the same, bit
//! for bit (it is what keeps this floor honest: `scripts/bench-check-speed.sh`
//! runs it before it times anything; every fixture trace passes it). The numbers are parsed to the correctly
//! rounded f64 first and then made f32, as gate does. Not done here, so a
//! trace with them would not verify: GPM glitch rows (gate makes them
//! missing at load) and windows closed by an `--until` line.

use gpugate::stats::MetricStats;
use gpugate::trace::{Header, Record};

/// Rows parsed before they are moved into the columns.
const BLOCK: usize = 256;

/// One part's samples.
#[derive(Default)]
struct Part {
    times_ms: Vec<f64>,
    warmup: Vec<bool>,
    /// `ngpu * ncols` GPU series (GPU-major), then `nhost` host series.
    series: Vec<Vec<f32>>,
    /// The end record's reason is `target_exited`.
    exited: bool,
}

struct Shape {
    ngpu: usize,
    ncols: usize,
    nhost: usize,
}

fn fail(msg: &str) -> ! {
    eprintln!("check-floor: {msg}");
    std::process::exit(2)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut threads = 1usize;
    let mut verify = false;
    loop {
        match args.first().map(String::as_str) {
            Some("--threads") if args.len() > 1 => {
                threads = args[1].parse().unwrap_or(0).max(1);
                args.drain(..2);
            }
            Some("--verify") => {
                verify = true;
                args.remove(0);
            }
            _ => break,
        }
    }
    let Some(path) = args.first().cloned() else {
        fail("usage: check-floor [--threads N] [--verify] TRACE.jsonl")
    };
    let file = std::fs::File::open(&path).unwrap_or_else(|e| fail(&format!("{path}: {e}")));
    // SAFETY: the trace is not modified while it is read (a benchmark input).
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap_or_else(|e| fail(&format!("{e}")));
    let text: &[u8] = &map;
    let body = text
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| i + 1);
    let header: Header = match std::str::from_utf8(&text[..body])
        .ok()
        .and_then(|h| serde_json::from_str::<Record>(h.trim_end()).ok())
    {
        Some(Record::Header(h)) => *h,
        _ => fail(&format!("{path}: line 1 is not a gate trace header")),
    };
    let shape = Shape {
        ngpu: header.fingerprint.gpus.len(),
        ncols: header.gpu_columns.len(),
        nhost: header.host_columns.len(),
    };
    // Part boundaries: after the first newline at or past an even split.
    let mut bounds = vec![body];
    for k in 1..threads {
        let at = body + (text.len() - body) * k / threads;
        let at = text[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| at + i + 1);
        bounds.push(at.max(*bounds.last().unwrap()));
    }
    bounds.push(text.len());
    let parts: Vec<Part> = std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (part, shape) = (&text[w[0]..w[1]], &shape);
                s.spawn(move || scan(part, shape))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let busy = header.gpu_columns.iter().position(|c| c == "gpu_busy_pct");
    let stats = statistics(&parts, &shape, busy, threads);
    let samples: usize = parts.iter().map(|p| p.times_ms.len()).sum();
    println!(
        "{samples} samples x {} GPUs: {} statistics",
        shape.ngpu,
        stats.iter().flatten().count()
    );
    if verify {
        std::process::exit(compare(&path, &header, &stats));
    }
}

/// Scan the lines of `text` (whole lines) into a part.
fn scan(text: &[u8], shape: &Shape) -> Part {
    const SAMPLE: &[u8] = b"{\"type\":\"sample\",\"t\":";
    const END: &[u8] = b"{\"type\":\"end\"";
    let width = shape.ngpu * shape.ncols + shape.nhost;
    let mut part = Part {
        series: vec![Vec::new(); width],
        ..Default::default()
    };
    let mut rows: Vec<f32> = Vec::with_capacity(BLOCK * width);
    let mut pos = 0;
    while pos < text.len() {
        let end = memchr(b'\n', &text[pos..]).map_or(text.len(), |i| pos + i);
        let line = &text[pos..end];
        pos = end + 1;
        if line.starts_with(SAMPLE) {
            if part.times_ms.is_empty() {
                // Room for every line of this length.
                let lines = text.len() / (line.len() + 1) + 1;
                part.series.iter_mut().for_each(|s| s.reserve(lines));
                part.times_ms.reserve(lines);
                part.warmup.reserve(lines);
            }
            let (t, w) = sample(&line[SAMPLE.len()..], shape, &mut rows)
                .unwrap_or_else(|| fail(&format!("a sample line does not scan: {}", lossy(line))));
            part.times_ms.push(t);
            part.warmup.push(w);
            if rows.len() == BLOCK * width {
                flush(&mut rows, &mut part.series);
            }
        } else if line.starts_with(END) {
            part.exited = matches!(
                std::str::from_utf8(line).ok().and_then(|l| serde_json::from_str::<Record>(l).ok()),
                Some(Record::End(e)) if e.reason.as_str() == "target_exited"
            );
        }
    }
    flush(&mut rows, &mut part.series);
    part
}

fn lossy(line: &[u8]) -> String {
    String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned()
}

/// Move the row-major `rows` into the series.
fn flush(rows: &mut Vec<f32>, series: &mut [Vec<f32>]) {
    let width = series.len();
    if width == 0 || rows.is_empty() {
        return;
    }
    for (k, s) in series.iter_mut().enumerate() {
        s.extend(rows[k..].iter().step_by(width));
    }
    rows.clear();
}

/// The first `b` in `s`: the C library's `memchr`, as gate's reader.
#[inline]
fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    if s.is_empty() {
        return None;
    }
    // SAFETY: reads at most `s.len()` bytes of `s`; null or a pointer into them.
    let p = unsafe { libc::memchr(s.as_ptr().cast(), i32::from(b), s.len()) };
    (!p.is_null()).then(|| p as usize - s.as_ptr() as usize)
}

/// The rest of a sample line after `"t":`: its time and warm-up flag; the
/// values appended to `rows`.
fn sample(s: &[u8], shape: &Shape, rows: &mut Vec<f32>) -> Option<(f64, bool)> {
    let mut i = 0;
    let t = number(s, &mut i)?;
    let mut w = false;
    if s[i..].starts_with(b",\"w\":true") {
        w = true;
        i += 9;
    } else if s[i..].starts_with(b",\"w\":false") {
        i += 10;
    }
    i = skip(s, i, b",\"g\":[")?;
    for g in 0..shape.ngpu {
        if g > 0 {
            i = skip(s, i, b",")?;
        }
        i = skip(s, i, b"[")?;
        i = values(s, i, shape.ncols, rows)?;
    }
    i = skip(s, i, b"],\"h\":[")?;
    values(s, i, shape.nhost, rows)?;
    Some((t, w))
}

#[inline]
fn skip(s: &[u8], i: usize, lit: &[u8]) -> Option<usize> {
    s[i..].starts_with(lit).then_some(i + lit.len())
}

/// `n` values separated by commas and the closing `]`, from `s[i..]`.
#[inline]
fn values(s: &[u8], mut i: usize, n: usize, rows: &mut Vec<f32>) -> Option<usize> {
    for k in 0..n {
        if k > 0 {
            i = skip(s, i, b",")?;
        }
        if s[i..].starts_with(b"null") {
            rows.push(f32::NAN);
            i += 4;
        } else {
            rows.push(number(s, &mut i)? as f32);
        }
    }
    skip(s, i, b"]")
}

/// Exact powers of ten, 1e0..=1e22.
const POW10: [f64; 23] = {
    let mut t = [1.0f64; 23];
    let mut k = 1;
    while k < 23 {
        t[k] = t[k - 1] * 10.0;
        k += 1;
    }
    t
};

/// A JSON number at `s[*i..]` as the correctly rounded f64: digits into
/// an integer and one exact multiplication or division by a power of ten
/// when both are exact (up to 19 digits of which the value is below 2^53,
/// exponent up to 22), else the standard library's parse of the token.
#[inline]
fn number(s: &[u8], i: &mut usize) -> Option<f64> {
    let start = *i;
    let mut k = start;
    let negative = s.get(k) == Some(&b'-');
    k += negative as usize;
    let mut m: u64 = 0;
    let mut digits = 0u32;
    let mut exp: i32 = 0;
    while let Some(&c) = s.get(k) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        m = m.wrapping_mul(10).wrapping_add(d as u64);
        digits += 1;
        k += 1;
    }
    if s.get(k) == Some(&b'.') {
        k += 1;
        while let Some(&c) = s.get(k) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            m = m.wrapping_mul(10).wrapping_add(d as u64);
            digits += 1;
            exp -= 1;
            k += 1;
        }
    }
    let mut plain = digits > 0;
    if matches!(s.get(k), Some(b'e' | b'E')) {
        plain = false;
        k += 1;
        while matches!(s.get(k), Some(b'+' | b'-' | b'0'..=b'9')) {
            k += 1;
        }
    }
    *i = k;
    if plain && digits <= 19 && m <= 1 << 53 && exp >= -22 {
        let v = m as f64 / POW10[(-exp) as usize];
        return Some(if negative { -v } else { v });
    }
    std::str::from_utf8(&s[start..k]).ok()?.parse().ok()
}

/// gate's statistics over the steady window: every GPU series, the
/// per-sample GPU mean of every metric, every host series (in that
/// order), dealt out to `threads` threads.
fn statistics(
    parts: &[Part],
    shape: &Shape,
    busy: Option<usize>,
    threads: usize,
) -> Vec<Option<MetricStats>> {
    let (ngpu, ncols) = (shape.ngpu, shape.ncols);
    let n: usize = parts.iter().map(|p| p.times_ms.len()).sum();
    let gpu_mean = |p: &Part, i: usize, col: usize| -> f64 {
        gpugate::trace::mean_of_finite((0..ngpu).map(|g| p.series[g * ncols + col][i]))
    };
    // The idle tail, as gate cuts it when the target exited by itself.
    let exited = parts.iter().any(|p| p.exited);
    let teardown = match busy {
        Some(col) if exited && ngpu > 0 => {
            let mut means = Vec::new();
            for p in parts {
                for i in (0..p.times_ms.len()).filter(|&i| !p.warmup[i]) {
                    means.push(gpu_mean(p, i, col));
                }
            }
            gpugate::trace::validity::idle_tail_len(means.len(), |k| means[k])
        }
        _ => 0,
    };
    // The finite values of `value(part, i)` over the steady samples, in
    // order (generic: each job's loop compiled with its own `value`).
    fn steady(parts: &[Part], keep: usize, value: impl Fn(&Part, usize) -> f64) -> Vec<f64> {
        let mut out = Vec::with_capacity(keep);
        let mut left = keep;
        for p in parts {
            let len = p.times_ms.len().min(left);
            left -= len;
            for i in 0..len {
                if !p.warmup[i] {
                    let v = value(p, i);
                    if v.is_finite() {
                        out.push(v);
                    }
                }
            }
        }
        out
    }
    let keep = n - teardown;
    let series = ngpu * ncols;
    let jobs = series + ncols + shape.nhost;
    let job = |j: usize| -> Option<MetricStats> {
        MetricStats::from_finite(if j < series {
            steady(parts, keep, |p, i| p.series[j][i] as f64)
        } else if j < series + ncols {
            steady(parts, keep, |p, i| gpu_mean(p, i, j - series))
        } else {
            steady(parts, keep, |p, i| p.series[j - ncols][i] as f64)
        })
    };
    let mut out: Vec<Option<MetricStats>> = vec![None; jobs];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let job = &job;
                s.spawn(move || {
                    (t..jobs)
                        .step_by(threads)
                        .map(|j| (j, job(j)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (j, st) in h.join().unwrap() {
                out[j] = st;
            }
        }
    });
    out
}

/// `--verify`: gate's summary of the same trace against `stats`; the exit code.
fn compare(path: &str, header: &Header, stats: &[Option<MetricStats>]) -> i32 {
    let trace = gpugate::trace::Trace::load(std::path::Path::new(path))
        .unwrap_or_else(|e| fail(&format!("gate cannot load {path}: {e}")));
    let run = gpugate::summary::summarize(&trace);
    let ncols = header.gpu_columns.len();
    let mut mismatches = 0;
    let mut same = |what: String, floor: &Option<MetricStats>, gate: Option<&MetricStats>| {
        let text = |s: Option<&MetricStats>| serde_json::to_string(&s).unwrap();
        if text(floor.as_ref()) != text(gate) {
            mismatches += 1;
            if mismatches <= 5 {
                eprintln!("{what}: floor {} gate {}", text(floor.as_ref()), text(gate));
            }
        }
    };
    for (g, gpu) in run.gpus.iter().enumerate() {
        for (c, id) in header.gpu_columns.iter().enumerate() {
            same(
                format!("GPU {g} {id}"),
                &stats[g * ncols + c],
                gpu.metrics.get(id),
            );
        }
    }
    let series = run.gpus.len() * ncols;
    for (c, id) in header.gpu_columns.iter().enumerate() {
        same(
            format!("GPU mean {id}"),
            &stats[series + c],
            run.metric(id).as_ref(),
        );
    }
    for (c, id) in header.host_columns.iter().enumerate() {
        same(
            format!("host {id}"),
            &stats[series + ncols + c],
            run.host.get(id),
        );
    }
    if mismatches > 0 || run.gpus.len() != header.fingerprint.gpus.len() {
        eprintln!("check-floor --verify: {mismatches} statistics differ from gate's");
        return 1;
    }
    println!("verified: every statistic is gate's");
    0
}
