# gate targets for a project Makefile: `include ci-templates/local/gate.mk`
# (or copy the targets). Override the variables on the command line or above
# the include, e.g.  make gate-check GATE_TARGET=develop
#
#   make gate-check     pre-merge check: this working tree against the baseline
#                       on the target branch (what CI will do to your PR)
#   make gate-capture   first baseline for a new benchmark / GPU model
#   make gate-refresh   replace the baseline after an intended change; then
#                       commit the TOML diff and explain it in the PR
#   make gate-report    explain the latest run (HTML report from its trace)
#
# Needs a GPU machine of the same model as the baseline (a check on another
# GPU model exits 3; docs/baselines.md explains --allow-env-mismatch).

GATE_BASELINE ?= train-h200
GATE_COMMAND ?= python bench/train.py --seconds 60
GATE_BASELINE_DIR ?= baselines
GATE_TARGET ?= main
GATE_RUNS ?= 3
GATE_OUT ?= .gate/local

.PHONY: gate-check gate-capture gate-refresh gate-report

# The command reaches gate as one string through the environment; gate splits
# it like a shell line (quotes honoured) and no shell evaluates it.
export GATE_COMMAND

# The baseline comes from origin/$(GATE_TARGET), as in CI: local edits to
# baselines/ cannot make your own check pass. Thresholds are read from
# ./gate.toml (gate's default); CI takes them from the target branch too.
gate-check:
	@mkdir -p $(GATE_OUT)
	git fetch --no-tags --quiet origin $(GATE_TARGET)
	gate check --baseline $(GATE_BASELINE) \
		--baseline-dir $(GATE_BASELINE_DIR) \
		--baseline-ref origin/$(GATE_TARGET) \
		--junit $(GATE_OUT)/gate-junit.xml \
		--markdown $(GATE_OUT)/gate.md \
		--trace-dir $(GATE_OUT)/traces \
		--command-string "$$GATE_COMMAND"

gate-capture:
	gate capture --baseline $(GATE_BASELINE) \
		--baseline-dir $(GATE_BASELINE_DIR) \
		--runs $(GATE_RUNS) \
		--trace-dir $(GATE_OUT)/traces \
		--commit $$(git rev-parse HEAD) \
		--command-string "$$GATE_COMMAND"

gate-refresh:
	gate capture --baseline $(GATE_BASELINE) --replace \
		--baseline-dir $(GATE_BASELINE_DIR) \
		--runs $(GATE_RUNS) \
		--trace-dir $(GATE_OUT)/traces \
		--commit $$(git rev-parse HEAD) \
		--command-string "$$GATE_COMMAND"
	git --no-pager diff --stat -- $(GATE_BASELINE_DIR)/$(GATE_BASELINE).toml

gate-report:
	gate report $$(ls -t $(GATE_OUT)/traces/*.jsonl | head -n 1) --html $(GATE_OUT)/gate-report.html
	@echo "open $(GATE_OUT)/gate-report.html"
