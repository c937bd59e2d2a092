//! The words of `unexplained` for a run without GPU activity (a CPU-only
//! benchmark, or one recorded with `--no-gpu`): no kernels to blame and no
//! throughput to print for them, only the code the benchmark times and what
//! gate does not measure.

use super::Finding;

/// `super::unexplained` reworded for a run whose GPU did nothing.
pub fn unexplained_without_gpu(moved: &[(String, Option<f64>)]) -> Finding {
    let mut f = super::unexplained(moved, true);
    let list = f
        .evidence
        .first()
        .and_then(|e| e.strip_prefix("regressed: "))
        .unwrap_or_default()
        .to_string();
    f.explanation = format!(
        "{list} moved beyond the noise, and the run had no GPU activity (a CPU-only benchmark, or recorded with --no-gpu); no host counter changed in a way that names a cause: the code the benchmark times changed (an algorithm, input sizes, a library or interpreter version), or the time went somewhere gate does not measure (storage, network, another host). gate does not guess."
    );
    f.next_steps = vec![
        "Profile the benchmark on both commits (perf, py-spy, or the harness's own profiler) and compare where the time goes".to_string(),
        "Diff the environment: library and interpreter versions, container image, input data".to_string(),
    ];
    f
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_kernel_words_for_a_run_without_gpu() {
        let moved = [("py.test_sum[0]".to_string(), Some(45.0))];
        let f = super::unexplained_without_gpu(&moved);
        let all = format!("{} {}", f.explanation, f.next_steps.join(" "));
        assert!(all.contains("py.test_sum[0] (+45 %)"), "{all}");
        for gpu_words in ["kernel", "samples_per_s", "GPU work", "nsys"] {
            assert!(!all.contains(gpu_words), "{gpu_words}: {all}");
        }
    }
}
