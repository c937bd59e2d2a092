// A tiny nvbench benchmark for gate's nvbench reader (issue 28.7):
// a copy kernel over three sizes, so the JSON nvbench writes has several
// states. GATE_NVBENCH_REPEAT=N copies N times per launch: a real slowdown
// of the same benchmark for a check. Built by build-and-run.sh in this
// folder (no CMake, no network).
#include <nvbench/nvbench.cuh>

#include <cstdlib>

__global__ void gate_copy(const float *in, float *out, std::size_t n, int repeat)
{
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (int r = 0; r < repeat; ++r)
  {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    {
      out[i] = in[i] + float(r);
    }
  }
}

void copy(nvbench::state &state)
{
  const auto n      = static_cast<std::size_t>(state.get_int64("Elements"));
  const char *env   = std::getenv("GATE_NVBENCH_REPEAT");
  const int repeat  = env ? std::atoi(env) : 1;
  float *in         = nullptr;
  float *out        = nullptr;
  NVBENCH_CUDA_CALL(cudaMalloc(&in, n * sizeof(float)));
  NVBENCH_CUDA_CALL(cudaMalloc(&out, n * sizeof(float)));
  NVBENCH_CUDA_CALL(cudaMemset(in, 0, n * sizeof(float)));
  state.add_element_count(n);
  state.add_global_memory_reads<float>(n);
  state.add_global_memory_writes<float>(n);
  state.exec([&](nvbench::launch &launch) {
    gate_copy<<<1024, 256, 0, launch.get_stream()>>>(in, out, n, repeat);
  });
  NVBENCH_CUDA_CALL(cudaFree(in));
  NVBENCH_CUDA_CALL(cudaFree(out));
}
NVBENCH_BENCH(copy).add_int64_power_of_two_axis("Elements", {16, 20, 24});
