#!/usr/bin/env python3
"""Assemble the `gpugate` wheel around an already-built `gate` binary.

    scripts/wheel.py --binary PATH --version X.Y.Z --arch x86_64 --out DIR

`pip install gpugate` then puts `gate` on the virtual environment's PATH,
the way ruff and uv ship their binaries (maturin's `bindings = "bin"`
layout): the executable is a script of the wheel
(`gpugate-X.Y.Z.data/scripts/gate`), with no Python code at all.

Why assemble rather than run maturin: scripts/release.sh has just built and
checked the glibc-2.17 binary with cargo-zigbuild; maturin would compile the
crate a second time (minutes on CI's two cores) to produce the same file.
The wheel format is small (PEP 427 / the binary distribution format spec):
a zip with WHEEL, METADATA and RECORD (every file's sha256 and size).

The tag is py3-none-manylinux_2_17_<arch>.manylinux2014_<arch> (PEP 600 and
its PEP 599 alias): any Python 3, no ABI, glibc 2.17 or newer. The binary is
checked here as release.sh checks it: no symbol may need a GLIBC version
newer than 2.17 (`readelf`), and it may link only the libraries the
manylinux2014 policy allows. The wheel is reproducible: entries sorted, every
timestamp SOURCE_DATE_EPOCH (clamped to 1980, the zip format's first year),
fixed permissions.
"""

import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile

NAME = "gpugate"
GLIBC_MAX = (2, 17)
# Libraries a manylinux2014 wheel may link without shipping them (PEP 599).
MANYLINUX2014_LIBS = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1",
    "libc.so.6", "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2",
    "libX11.so.6", "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6",
    "libGL.so.1", "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0",
    # glibc's dynamic loaders (the ELF interpreter): part of glibc itself.
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}
ARCHES = {"x86_64", "aarch64"}


def die(msg):
    print(f"wheel.py: {msg}", file=sys.stderr)
    sys.exit(1)


def readelf(args, binary):
    try:
        return subprocess.run(
            ["readelf", "-W", *args, binary], check=True, capture_output=True, text=True
        ).stdout
    except FileNotFoundError:
        die("'readelf' not found (binutils)")
    except subprocess.CalledProcessError as e:
        die(f"readelf {' '.join(args)} {binary} failed: {e.stderr.strip()}")


def check_binary(binary, arch):
    """The manylinux2014 promise: glibc <= 2.17 symbols, allowed libraries only."""
    header = readelf(["-h"], binary)
    machine = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}[arch]
    if machine not in header:
        die(f"{binary} is not an {arch} ELF executable")
    versions = {
        tuple(int(p) for p in v.split("."))
        for v in re.findall(r"GLIBC_([0-9]+(?:\.[0-9]+)+)", readelf(["--version-info"], binary))
    }
    newest = max(versions, default=None)
    if newest and newest > GLIBC_MAX:
        die(
            f"{binary} needs GLIBC_{'.'.join(map(str, newest))}, newer than "
            f"{'.'.join(map(str, GLIBC_MAX))}: not a manylinux_2_17 binary (build it with scripts/release.sh)"
        )
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf(["-d"], binary)))
    extra = sorted(needed - MANYLINUX2014_LIBS)
    if extra:
        die(f"{binary} links {', '.join(extra)}, which manylinux2014 does not allow")
    return newest, sorted(needed)


def metadata(version, readme):
    # Core metadata 2.1 fields only: every pip and twine in use reads them.
    summary = (
        "GPU performance regression gate: the `gate` CLI (NVML/GPM + /proc counters, "
        "baselines in TOML, noise-aware CI gates with root-cause diagnosis)"
    )
    head = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version}",
        f"Summary: {summary}",
        "License: Apache-2.0",
        "Requires-Python: >=3.7",
        "Classifier: License :: OSI Approved :: Apache Software License",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Programming Language :: Rust",
        "Classifier: Environment :: Console",
        "Classifier: Topic :: Software Development :: Testing",
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(head) + "\n\n" + readme


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def wheel_name(version, arch):
    platform = f"manylinux_2_17_{arch}.manylinux2014_{arch}"
    return f"{NAME}-{version}-py3-none-{platform}.whl"


def build_wheel(binary, version, arch, out, readme, license_text):
    """Write the wheel holding `binary` (bytes) as the script `gate`; return its path.
    Checks nothing about the binary: main() does, before calling this."""
    tags = [f"py3-none-manylinux_2_17_{arch}", f"py3-none-manylinux2014_{arch}"]
    dist_info = f"{NAME}-{version}.dist-info"
    data_dir = f"{NAME}-{version}.data"
    wheel_file = (
        "Wheel-Version: 1.0\n"
        "Generator: gpugate scripts/wheel.py\n"
        "Root-Is-Purelib: false\n" + "".join(f"Tag: {t}\n" for t in tags)
    )
    # (path, bytes, unix mode); RECORD last, listing itself without a hash.
    files = [
        (f"{data_dir}/scripts/gate", binary, 0o755),
        (f"{dist_info}/LICENSE", license_text, 0o644),
        (f"{dist_info}/METADATA", metadata(version, readme).encode(), 0o644),
        (f"{dist_info}/WHEEL", wheel_file.encode(), 0o644),
    ]
    record = "\n".join(record_line(p, d) for p, d, _ in files) + f"\n{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    stamp = time.gmtime(max(source_date_epoch(), 315532800))[:6]  # zip cannot go before 1980
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, wheel_name(version, arch))
    # The temporary file is created exclusively (O_EXCL | O_NOFOLLOW) under
    # a fresh random name: never written through a link planted at a
    # predictable `.partial` name, never over another build's file.
    fd, tmp = tempfile.mkstemp(prefix=".wheel-", suffix=".partial", dir=out)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(
            f, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9
        ) as z:
            for name, data, mode in files:
                info = zipfile.ZipInfo(name, date_time=stamp)
                info.external_attr = (0o100000 | mode) << 16  # regular file + mode
                info.create_system = 3  # unix, so pip honours the mode
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data, compresslevel=9)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def source_date_epoch():
    """SOURCE_DATE_EPOCH (reproducible-builds.org): whole seconds since 1970."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "315532800")
    if not re.fullmatch(r"[0-9]{1,12}", raw.strip()):
        die(f"SOURCE_DATE_EPOCH={raw!r} is not whole seconds since 1970; set it to e.g. $(git log -1 --format=%ct) or unset it")
    return int(raw.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True, help="the gate executable (built by release.sh)")
    ap.add_argument("--version", required=True, help="gate's version (Cargo.toml)")
    ap.add_argument("--arch", required=True, choices=sorted(ARCHES))
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--readme", default="README.md")
    ap.add_argument("--license", default="LICENSE")
    args = ap.parse_args()

    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", args.version):
        die(f"version '{args.version}' is not X.Y.Z")
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        die(f"no executable at '{args.binary}'")
    # The texts first: a bad README is one line, before any binary check.
    try:
        with open(args.readme, encoding="utf-8") as f:
            readme = f.read()
    except UnicodeDecodeError as e:
        die(f"'{args.readme}' is not UTF-8 text ({e.reason} at byte {e.start}); the wheel's description must be UTF-8: fix the file or pass --readme")
    except OSError as e:
        die(f"cannot read '{args.readme}': {e.strerror}; pass --readme")
    with open(args.license, "rb") as f:
        license_text = f.read()
    newest, needed = check_binary(args.binary, args.arch)
    with open(args.binary, "rb") as f:
        binary = f.read()
    path = build_wheel(binary, args.version, args.arch, args.out, readme, license_text)
    print(
        f"built {path} ({os.path.getsize(path)} bytes; newest glibc symbol "
        f"{'.'.join(map(str, newest)) if newest else 'none'}; links {', '.join(needed)})"
    )


if __name__ == "__main__":
    main()
