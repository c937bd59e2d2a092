#!/usr/bin/env bash
# Regenerates link/sampling.ld: the functions gate's sampling loop runs,
# gathered at the start of the binary's code by the linker (build.rs).
# Run it when the loop's code, Cargo.lock or the Rust toolchain changes; it
# prints how much of gate stays resident while it samples, before and after.
#
#   bash scripts/sampling-layout.sh [DUMP...]   # ~12 min on 2 cores; needs valgrind
#
# DUMPs: callgrind files of the same loop recorded on a GPU host (the GPU
# source's own calls, GPM on and off), made with the layout build of this
# script (target/layout/release/gate, carried there) by
#   valgrind --tool=callgrind --demangle=no \
#     "--dump-after=_ZN7gpugate7sampler8resident18drop_startup_pages*" \
#     --callgrind-out-file=cg gate record --pid PID --gpu 0 --duration 8s [--no-gpm] -o t.jsonl
# (the last file, cg, is the loop's; gzip it). Their functions are added to
# those seen here; names this build no longer has are counted and left out.
#
# How: a release build that keeps its symbols (RUSTFLAGS="-C strip=none";
# its names' hashes are not the shipped build's, as those of any other
# profile, flags or source of the crate are not, so the list names a
# function with its hashes as wildcards wherever that leaves one function)
# records a sleeping process's counters under callgrind (--no-gpu: no GPU
# here); every function that runs after gate dropped its start-up pages
# (sampler/resident.rs) is listed by its exact name. The GPU source's own
# code (gate's sampler module and nvml-wrapper) is listed by module, as
# it cannot run without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "sampling-layout.sh: needs valgrind (apt install valgrind)"; exit 2; }
export CARGO_TARGET_DIR="$PWD/target/layout"
bin="$CARGO_TARGET_DIR/release/gate"
tmp=$(mktemp -d)
trap 'kill "${sleeper:-}" 2> /dev/null || true; rm -rf "$tmp"' EXIT

resident() { # the KiB of gate's own binary resident while it samples (no GPU)
    local exe="${1:-$bin}"
    sleep 60 & local p=$!
    GATE_PROFILE=1 "$exe" record --pid "$p" --no-gpu --duration 8s -o "$tmp/r.jsonl" 2>&1 \
        | sed -n "s|^gate: GATE_PROFILE resident in $exe: ||p"
    kill "$p"
}
section() { # the size of a binary's .text.sampling
    echo $((16#$(readelf -SW "$1" | awk '$2 == ".text.sampling" {print $6}')))
}

RUSTFLAGS="-C strip=none" cargo build --release --locked --bin gate
echo "before: gate resident while sampling: $(resident)"
sleep 300 & sleeper=$!
valgrind --tool=callgrind --demangle=no \
    "--dump-after=_ZN7gpugate7sampler8resident18drop_startup_pages*" \
    --callgrind-out-file="$tmp/cg" "$bin" record --pid "$sleeper" --no-gpu --duration 6s -o "$tmp/t.jsonl" 2> "$tmp/valgrind.log"
kill "$sleeper"
# The dump after the start-up pages were dropped is the last one ($tmp/cg).
nm "$bin" | awk '{print $NF}' > "$tmp/symbols"
python3 - "$tmp/symbols" "$(rustc --version)" "$tmp/cg" "$@" > link/sampling.ld <<'EOF'
import gzip, re, subprocess, sys, datetime
symbols = sorted({re.sub(r"\.llvm\.\d+$", "", s) for s in open(sys.argv[1]).read().split()})
def plain(mangled):
    """Names without their hashes (c++filt, then the crates' and the
    functions' hashes cut): a dump made by another build of the same code
    (another Cargo.lock, another dependency list) names its functions with
    other hashes; a name that is several functions here is left out."""
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True).stdout
    return [re.sub(r"::h[0-9a-f]{16}$", "", re.sub(r"\[[0-9a-f]+\]", "", d)) for d in out.split("\n")[: len(mangled)]]
by_plain = {}
plain_of = dict(zip(symbols, plain(symbols)))
for m, p in plain_of.items():
    by_plain.setdefault(p, set()).add(m)
def glob(n):
    """The name with its hashes as wildcards where, without them, it is one
    function here: the shipped build (another profile or RUSTFLAGS, or
    `cargo install` from the registry) names that function with other
    hashes (the crates' disambiguators `Cs..._` and the legacy `17h..E`)."""
    if len(by_plain.get(plain_of.get(n), ())) != 1:
        return n
    return re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", re.sub(r"17h[0-9a-f]{16}E$", "17h*E", n))
symbols = set(symbols)
names = set()
for dump in sys.argv[3:]:
    text = (gzip.open if dump.endswith(".gz") else open)(dump, "rt").read()
    found = sorted({re.sub(r"\.llvm\.\d+$", "", m) for m in re.findall(r"^c?fn=\(\d+\) (_\S+)", text, re.M)})
    same = {m for m in found if m in symbols}
    # Only a name that is one function here (legacy names of generic
    # functions say no type: every `drop_in_place` is one such name).
    renamed = {s for m, p in zip(found, plain(found)) if m not in symbols
               for s in by_plain.get(p, ()) if len(by_plain[p]) == 1}
    lost = sum(1 for m, p in zip(found, plain(found)) if m not in symbols and p not in by_plain)
    print(f"{dump}: {len(same)} of gate's functions, {len(renamed)} more by name without hashes, "
          f"{lost} not in this build", file=sys.stderr)
    names |= same | renamed
names = sorted(names)
modules = ["_ZN7gpugate7sampler", "_ZN7gpugate6record", "_ZN12nvml_wrapper"]
exact = []
for n in names:
    if any(n.startswith(m) for m in modules) or n in exact:
        continue
    exact.append(n)
print("/* The functions gate's sampling loop runs, gathered at the start of its")
print("   code so that a recording keeps few pages of gate resident (build.rs).")
print(f"   Made by scripts/sampling-layout.sh on {datetime.date.today()} with")
print(f"   {sys.argv[2]} from {len(sys.argv) - 3} callgrind dumps:")
print(f"   {len(modules)} modules and {len(exact)} functions by name, hashes")
print(f"   as wildcards where the name is one function ({sum(glob(n) != n for n in exact)}). */")
print("SECTIONS\n{\n  .text.sampling : {")
for m in modules:
    print(f"    *(.text.{m}* .text.unlikely.{m}*)")
for n in map(glob, exact):
    print(f"    *(.text.{n} .text.{n}.llvm.* .text.unlikely.{n} .text.unlikely.{n}.llvm.*)")
print("  }\n}\nINSERT BEFORE .text;")
EOF
RUSTFLAGS="-C strip=none" cargo build --release --locked --bin gate
echo "link/sampling.ld: $(grep -c '^    \*(' link/sampling.ld) patterns, .text.sampling $(section "$bin") bytes"
echo "after: gate resident while sampling: $(resident)"
# The shipped build (its own hashes): the wildcards must gather the same.
shipped="$PWD/target/release/gate"
CARGO_TARGET_DIR="$PWD/target" cargo build --release --locked --bin gate
echo "shipped build: .text.sampling $(section "$shipped") bytes, resident while sampling: $(resident "$shipped")"
