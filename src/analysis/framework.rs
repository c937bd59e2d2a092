//! Which framework a benchmark runs on, told without touching it: from the
//! shared libraries its processes have mapped (`/proc/PID/maps`, read by
//! the recorder, which stores a `framework` event per framework found) or,
//! for traces recorded before that, from its command line. Rules fit their
//! "Try:" lines to it (`next_steps_for` in rules.toml); unknown: the
//! generic words.
//!
//! Names are `NAMES`. A serving stack (vLLM, TensorRT, Triton
//! server, ONNX Runtime) is listed beside the framework it runs on.

use std::collections::BTreeSet;

/// Every framework this module can name (`framework.<name>` features,
/// `next_steps_for.<name>` in rules).
pub(crate) const NAMES: &[&str] = &[
    "torch",
    "jax",
    "tensorflow",
    "vllm",
    "tensorrt",
    "triton_server",
    "onnxruntime",
];

/// Path fragments of mapped libraries, and the framework each one means.
/// Only libraries a framework loads itself: OpenAI's Triton compiler
/// (`triton/_C/libtriton.so`, loaded by torch.compile) is not Triton server.
const LIBRARIES: &[(&str, &str)] = &[
    ("libtorch_cuda.so", "torch"),
    ("libtorch_python.so", "torch"),
    ("libc10_cuda.so", "torch"),
    ("xla_extension.so", "jax"),
    ("/jaxlib/", "jax"),
    ("xla_cuda_plugin.so", "jax"),
    ("libtensorflow_framework.so", "tensorflow"),
    ("_pywrap_tensorflow_internal.so", "tensorflow"),
    ("/site-packages/vllm/", "vllm"),
    ("/dist-packages/vllm/", "vllm"),
    ("libnvinfer.so", "tensorrt"),
    ("libtritonserver.so", "triton_server"),
    ("libonnxruntime", "onnxruntime"),
    ("onnxruntime_pybind11_state", "onnxruntime"),
];

/// Frameworks whose libraries appear in `maps` (the bytes of
/// /proc/PID/maps). One pass of an Aho-Corasick automaton over the whole
/// text, not a split of its lines: a torch process maps ~1,000 lines and
/// the recorder reads them during the first minute (the fragments are
/// paths, so they can only match the path field).
pub(crate) fn from_maps(maps: &[u8]) -> BTreeSet<&'static str> {
    static FRAGMENTS: std::sync::LazyLock<aho_corasick::AhoCorasick> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::new(LIBRARIES.iter().map(|(fragment, _)| fragment))
                .expect("the library fragments are a few short literals")
        });
    (FRAGMENTS.find_overlapping_iter(maps))
        .map(|m| LIBRARIES[m.pattern().as_usize()].1)
        .collect()
}

/// Frameworks a command line names (a launcher or a module), for traces
/// without `framework` events. A plain `python train.py` names none.
pub(crate) fn from_command(argv: &[String]) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    for arg in argv {
        let base = arg.rsplit('/').next().unwrap_or(arg);
        let fw = match base {
            "torchrun" | "torch.distributed.run" | "torch.distributed.launch" => "torch",
            "vllm" | "vllm.entrypoints.openai.api_server" => "vllm",
            "tritonserver" => "triton_server",
            "trtexec" | "trtllm-serve" | "trtllm-build" => "tensorrt",
            _ => continue,
        };
        out.insert(fw);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_name_the_framework_and_the_compiler_is_not_the_server() {
        let maps = "\
7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so
7f10-7f20 r-xp 00000000 08:01 2 /usr/lib/python3/site-packages/triton/_C/libtriton.so
7f20-7f30 rw-p 00000000 00:00 0
7f30-7f40 r-xp 00000000 08:01 3 /opt/venv/lib/python3.11/site-packages/jaxlib/xla_extension.so
";
        assert_eq!(from_maps(maps.as_bytes()), BTreeSet::from(["jax", "torch"]));
        let tf = "7f-80 r-xp 0 08:01 4 /x/tensorflow/libtensorflow_framework.so.2\n";
        assert_eq!(from_maps(tf.as_bytes()), BTreeSet::from(["tensorflow"]));
        assert!(from_maps(b"7f-80 r-xp 0 08:01 4 /usr/lib/libc.so.6\n").is_empty());
    }

    #[test]
    fn command_lines_name_launchers_only() {
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            from_command(&argv("/usr/bin/torchrun --nproc-per-node 2 train.py")),
            BTreeSet::from(["torch"])
        );
        assert_eq!(
            from_command(&argv("vllm serve meta/llama")),
            BTreeSet::from(["vllm"])
        );
        assert!(from_command(&argv("python3 train.py --mode healthy")).is_empty());
    }
}
