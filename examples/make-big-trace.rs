//! Build large or synthetic traces for benchmarks and demos.
//!
//! ```text
//! cargo run --release --example make-big-trace -- --tile IN.jsonl -o OUT.jsonl [--gpus 8] [--samples 36000]
//! cargo run --release --example make-big-trace -- --synthetic healthy -o OUT.jsonl [--gpus 8] [--samples 36000] [--seed 1]
//! ```
//!
//! `--tile` repeats a recorded trace's samples (and GPUs, cyclically) until
//! the requested size: same value distributions, realistic JSON. The header
//! note says the file was tiled, so nobody mistakes it for a measurement.
//! `--synthetic` writes a SYNTHETIC trace of one `gpugate::synthetic`
//! signature (healthy, launch-storm, fp32-no-tf32, memory-bound,
//! pageable-h2d, sync-stall, host-bound, contention, ...: any name of
//! `Signature::all()`), `--samples` steady samples after 20 of warm-up.

use gpugate::synthetic::Signature;
use gpugate::trace::{EndRecord, Record, SampleRecord, StopReason, Trace};
use std::io::Write;
use std::path::PathBuf;

fn usage() -> ! {
    eprintln!("usage: make-big-trace (--tile IN.jsonl | --synthetic PROFILE) -o OUT.jsonl [--gpus N] [--samples N] [--seed N]");
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut tile, mut synthetic, mut out) = (None, None, None);
    let (mut gpus, mut samples, mut seed) = (8usize, 36_000usize, 1u64);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--tile" => tile = Some(PathBuf::from(val())),
            "--synthetic" => synthetic = Some(val()),
            "-o" | "--output" => out = Some(PathBuf::from(val())),
            "--gpus" => gpus = val().parse().unwrap_or_else(|_| usage()),
            "--samples" => samples = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => seed = val().parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    let out = out.unwrap_or_else(|| usage());
    if let Some(name) = synthetic {
        // GPM in every sample: the benchmark's worst case (BENCHMARKS.md).
        let sig = Signature {
            glitch_period: None,
            ..Signature::named(&name).unwrap_or_else(|| usage())
        }
        .with_seed(seed)
        .with_warmup_samples(20)
        .with_samples(samples);
        gpugate::synthetic::write(&sig, gpus, &out).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
        eprintln!("wrote synthetic {name} trace {}", out.display());
        return;
    }
    let src = tile.unwrap_or_else(|| usage());
    let t = Trace::load(&src).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    if t.sample_count() == 0 || t.gpu_count() == 0 {
        eprintln!("{}: needs samples and at least one GPU", src.display());
        std::process::exit(2);
    }
    let mut header = t.header.clone();
    let src_gpus = header.fingerprint.gpus.clone();
    header.fingerprint.gpus = (0..gpus)
        .map(|i| {
            let mut g = src_gpus[i % src_gpus.len()].clone();
            g.index = i as u32;
            g.uuid = format!("{}-tile{i}", g.uuid);
            g
        })
        .collect();
    header.note = Some(format!(
        "TILED from '{}' to {gpus} GPUs x {samples} samples by examples/make-big-trace.rs (benchmark input, not a measurement); original note: {}",
        src.display(),
        t.header.note.clone().unwrap_or_default()
    ));
    let f = std::fs::File::create(&out).expect("create output");
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let line = |w: &mut std::io::BufWriter<std::fs::File>, r: &Record| {
        serde_json::to_writer(&mut *w, r).unwrap();
        w.write_all(b"\n").unwrap();
    };
    line(&mut w, &Record::Header(Box::new(header.clone())));
    let interval = header.interval_ms.max(1) as f64;
    let ncols = header.gpu_columns.len();
    let opt = |v: f32| if v.is_nan() { None } else { Some(v as f64) };
    for i in 0..samples {
        let s = i % t.sample_count();
        let g = (0..gpus)
            .map(|gi| {
                (0..ncols)
                    .map(|c| opt(t.gpu_value(s, gi % t.gpu_count(), c)))
                    .collect()
            })
            .collect();
        let h = (0..header.host_columns.len())
            .map(|c| opt(t.host_value(s, c)))
            .collect();
        line(
            &mut w,
            &Record::Sample(SampleRecord {
                t: i as f64 * interval,
                w: (i as u64 * header.interval_ms) < header.warmup_ms,
                g,
                h,
            }),
        );
    }
    for o in t.output.iter() {
        line(&mut w, &Record::Output(o.to_record()));
    }
    let end_t = samples as f64 * interval;
    line(
        &mut w,
        &Record::End(EndRecord {
            t: end_t,
            samples: samples as u64,
            late_samples: 0,
            exit_code: Some(0),
            signal: None,
            target_wall_s: Some(end_t / 1000.0),
            reason: StopReason::TargetExited,
            metrics_file: t.end.as_ref().and_then(|e| e.metrics_file.clone()),
            metrics_file_problem: None,
            target_gpus: None,
        }),
    );
    w.flush().unwrap();
    eprintln!(
        "wrote {} ({gpus} GPUs x {samples} samples, tiled from {})",
        out.display(),
        src.display()
    );
}
