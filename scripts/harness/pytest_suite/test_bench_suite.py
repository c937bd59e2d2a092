"""A real pytest-benchmark suite for gate's harness-file tests
(tests/metric_sources.rs, scripts/harness/make-pytest-benchmark-json.sh).

GATE_BENCH_COUNT sets how many parametrised cases `test_sum` has (default
3); GATE_BENCH_SLEEP_US adds a sleep to every round of `test_sleep`, which
makes a run measurably slower without touching the rest.
"""

import os
import time

import pytest

COUNT = int(os.environ.get("GATE_BENCH_COUNT", "3"))
SLEEP_S = float(os.environ.get("GATE_BENCH_SLEEP_US", "200")) / 1e6


@pytest.mark.parametrize("n", range(COUNT))
def test_sum(benchmark, n):
    data = list(range(200 + n))
    assert benchmark(sum, data) == sum(data)


def test_sleep(benchmark):
    benchmark(time.sleep, SLEEP_S)


def test_sorted(benchmark):
    data = [(i * 7919) % 1000 for i in range(1000)]
    assert benchmark(sorted, data)[0] == 0
