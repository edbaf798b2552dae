"""Peak memory and time of copies whose source and destination share memory.

Each case runs in a fresh interpreter, so that its peak resident set size (``ru_maxrss``) is its
own: the array is allocated and touched, then the copy runs once with strided and, in another
interpreter, once with numpy (``np.copyto``), the reference users would otherwise call. The
table gives the peak RSS above the array itself and the time of the copy.

    python benchmarks/bench_overlap.py                  # 512 MiB, the figures of the README
    python benchmarks/bench_overlap.py --mib 64         # a quicker run
    python benchmarks/bench_overlap.py --mib 64 --threads 1 --repeat 5   # strided on 1 thread,
                                                        # medians of 5 runs of each cell

numpy's ``np.copyto`` runs on one thread; strided runs with its default thread count unless
``--threads`` says otherwise. With ``--repeat`` the cells run alternately (strided, numpy,
strided, ...), each in its fresh interpreter, and the table gives the medians and the median
of the paired ratios numpy ms / strided ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap

from harness.report import cpu_model

CASES = {
    "in-place shift by one element": ("a = np.ones(N, np.uint8)", "a[1:]", "a[:-1]"),
    "interleaved: a[0::2] <- a[1::2]": ("a = np.ones(N, np.uint8)", "a[0::2]", "a[1::2]"),
    "2-D shift along the inner dim": (
        "a = np.ones(N, np.uint8).reshape(-1, 4096)", "a[:, 1:]", "a[:, :-1]"),
    "in-place square transpose (float32)": (
        "side = int((N // 4) ** 0.5); a = np.ones((side, side), np.float32)", "a", "a.T"),
}

CHILD = """
import json, resource, time
import numpy as np
import strided as st
N = {nbytes}
{make}
a[...] = 1                      # touch every page before the baseline
dst, src = {dst}, {src}
copy = (lambda d, s: st.copyto(d, s, num_threads={threads})) if {use_strided} else np.copyto
copy(np.empty(2, np.uint8), np.zeros(2, np.uint8))   # first use: lazy imports, not timed
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
copy(dst, src)
elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"extra_kib": peak - base, "array_mib": a.nbytes / 2**20, "ms": elapsed * 1e3}}))
"""


def run_case(name: str, nbytes: int, use_strided: bool,
             threads: int | None = None) -> dict[str, float]:
    make, dst, src = CASES[name]
    code = CHILD.format(nbytes=nbytes, make=make, dst=dst, src=src, use_strided=use_strided,
                        threads=threads)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, check=True, timeout=600)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="array size in MiB (default 512)")
    parser.add_argument("--threads", type=int, default=None,
                        help="strided's num_threads (default: its default thread count)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each cell, alternating strided and numpy (medians)")
    args = parser.parse_args(argv)
    nbytes = args.mib << 20
    threads = "default" if args.threads is None else args.threads
    print(f"CPU: {cpu_model()}; array {args.mib} MiB; strided threads: {threads}; numpy: 1; "
          f"peak RSS above the array (ru_maxrss), one copy each, fresh interpreter per cell"
          + (f"; medians of {args.repeat} runs" if args.repeat > 1 else "") + "\n")
    print("| case | strided extra RSS | numpy extra RSS | strided ms | numpy ms | numpy/strided |")
    print("|---|--:|--:|--:|--:|--:|")
    for name in CASES:
        runs = [(run_case(name, nbytes, True, args.threads), run_case(name, nbytes, False))
                for _ in range(max(1, args.repeat))]
        med = {key: statistics.median(r[0][key] for r in runs) for key in runs[0][0]}
        nmed = {key: statistics.median(r[1][key] for r in runs) for key in runs[0][1]}
        ratio = statistics.median(n["ms"] / s["ms"] for s, n in runs)
        print(f"| {name} ({med['array_mib']:.0f} MiB) | {med['extra_kib'] / 1024:.1f} MiB | "
              f"{nmed['extra_kib'] / 1024:.1f} MiB | {med['ms']:.1f} | {nmed['ms']:.1f} | "
              f"{ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
