// A tiny Google Benchmark program whose JSON output is tests/data/
// google-benchmark.json (scripts/harness/make-google-benchmark-json.sh
// rebuilds it with the real library).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

static void BM_VectorSum(benchmark::State& state) {
  std::vector<int64_t> v(static_cast<size_t>(state.range(0)), 3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), int64_t{0}));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_VectorSum)->Arg(1 << 10)->Arg(1 << 16);

static void BM_Sort(benchmark::State& state) {
  std::vector<uint32_t> base(static_cast<size_t>(state.range(0)));
  uint32_t x = 12345;
  for (auto& e : base) e = (x = x * 1664525u + 1013904223u);
  for (auto _ : state) {
    auto v = base;
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}
BENCHMARK(BM_Sort)->Arg(1 << 12);

static void BM_StringConcat(benchmark::State& state) {
  for (auto _ : state) {
    std::string s;
    for (int i = 0; i < 64; ++i) s += std::to_string(i);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_StringConcat);

BENCHMARK_MAIN();
