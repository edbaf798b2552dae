#!/usr/bin/env bash
# strided built with AddressSanitizer + UndefinedBehaviorSanitizer (GCC on Linux), and commands
# run under it so that every report fails them. .ci/run's section 6 uses it; so can you:
#
#   tools/sanitize.sh build VENV          create the virtual environment VENV if it is missing,
#                                         install torch==2.13.0 (the CPU wheel) and strided[test]
#                                         from this checkout, built with the sanitizers
#   tools/sanitize.sh run VENV [CMD...]   run CMD (default: python -m pytest -p no:cacheprovider
#                                         tests) under the sanitizers, in VENV; fails when CMD
#                                         fails or when any process (a subprocess, a forked
#                                         child, a grandchild) reported anything
#   tools/sanitize.sh selftest VENV       check that `run` fails on an ASan and a UBSan report
#                                         raised in a grandchild whose failure is ignored
#   tools/sanitize.sh env VENV [LOGDIR]   print the environment of `run` as export lines, for a
#                                         shell of your own: eval "$(tools/sanitize.sh env VENV)"
#
# From the repository root, e.g.:
#   tools/sanitize.sh build /tmp/venv-san && tools/sanitize.sh run /tmp/venv-san
#   tools/sanitize.sh run /tmp/venv-san python -m pytest -p no:cacheprovider tests/engine/test_copy.py -x
#   tools/sanitize.sh run /tmp/venv-san python repro.py
#
# The build (pip install ".[test]" with these meson options):
#   -Db_sanitize=address,undefined  compile and link every extension module with
#                                   -fsanitize=address,undefined
#   -Db_lundef=false                drop -Wl,--no-undefined: a sanitized extension module leaves
#                                   the runtimes' symbols to the preloaded libasan
#   -Dc_args=-g -fno-omit-frame-pointer -fsanitize-recover=address
#                                   file:line in every frame of our code, whole stacks, and ASan
#                                   reports that can be made non-fatal at run time (below); the
#                                   build type stays release (-O3, NDEBUG), the code that ships
#
# The run: the interpreter is not instrumented, so the ASan runtime is preloaded into it
# (LD_PRELOAD: ASan must come first; libstdc++ with it, or torch's C++ exceptions crash inside
# ASan's __cxa_throw interceptor). Every child inherits it. The options:
#   ASAN_OPTIONS
#     detect_leaks=0            CPython frees neither its interned objects nor numpy's at exit:
#                               LeakSanitizer would report thousands of blocks, none of them ours
#     halt_on_error=1           the first report ends the process ...
#     abort_on_error=1          ... by abort() (SIGABRT), not exit(1): a test expecting a child
#                               to exit with status 1 (test_cli's closed pipe) cannot mistake a
#                               report for that; pytest's faulthandler (and PYTHONFAULTHANDLER=1
#                               in children) prints the Python stack, which names the test
#     allocator_may_return_null=1  malloc of an absurd size returns NULL (Python's MemoryError),
#                               as glibc's does, instead of an ASan "allocation-size-too-big"
#                               report (past 1 TiB) that is no bug of ours: a test expecting
#                               MemoryError from a huge array would fail under ASan alone. (No
#                               test needs it today: the hostile-input, error and interop files
#                               report nothing without it.)
#     log_path=DIR/report       each report goes to DIR/report.PID, where nothing can swallow it
#                               (pytest's capture of a test that kills pytest, a test reading a
#                               child's stderr); `run` fails when DIR holds anything at the end
#   UBSAN_OPTIONS
#     print_stacktrace=1        the whole stack, not just the line
#     halt_on_error=1 abort_on_error=1  UBSan's reports (misaligned access, signed overflow,
#                               shifts, ...) are as fatal as ASan's
#     log_path=DIR/report       the same prefix as ASan's (see below)
#   GCC's UBSan runtime is a library of its own (libubsan.so.1, loaded with the extension
#   modules), not part of libasan. It initialises itself at its first report, and its call to
#   __sanitizer_set_report_path then binds to the preloaded libasan's: UBSAN_OPTIONS's log_path
#   moves ASan's later reports (to stderr when UBSAN_OPTIONS names none: hence the same prefix)
#   while UBSan's own stay on stderr. `build` therefore writes _strided_sanitize.py and a
#   .pth file into VENV's site-packages: at every interpreter start (children included) they
#   call libubsan's own __sanitizer_set_report_path with DIR/ubsan, so UBSan's reports land in
#   DIR too. Only VENV gets them; the package is untouched.
#   SANITIZE_HALT=0 (for collecting, not for CI) sets halt_on_error=0 in both: every distinct
#   report is logged and the run goes on (an over-read reads on, an over-write writes on).
#   OMP_NUM_THREADS is left alone: libgomp's threads are created through pthread_create, which
#   ASan intercepts (their stacks and allocations are tracked), and the thread-count tests need
#   more than one thread.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
CC_FOR_RUNTIME="${CC:-gcc}"

usage() {
    sed -n '2,/^# From the repository root/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# The absolute path of one of GCC's runtime libraries (libasan.so, libubsan.so, ...).
runtime_lib() {
    local path
    path="$("$CC_FOR_RUNTIME" -print-file-name="$1")"
    if [ "$path" = "$1" ] || [ ! -e "$path" ]; then
        echo "sanitize.sh: $CC_FOR_RUNTIME has no $1 (install the compiler's sanitizer runtimes)" >&2
        exit 2
    fi
    readlink -f "$path"
}

cmd_build() {
    local venv="$1"
    if [ ! -x "$venv/bin/python" ]; then
        "$PYTHON" -m venv "$venv"
    fi
    # torch first and pinned (the CPU wheel), as the README's test command does.
    "$venv/bin/python" -m pip install -q torch==2.13.0
    (cd "$ROOT" && "$venv/bin/python" -m pip install -q ".[test]" \
        -Csetup-args=-Db_sanitize=address,undefined \
        -Csetup-args=-Db_lundef=false \
        "-Csetup-args=-Dc_args=-g -fno-omit-frame-pointer -fsanitize-recover=address")
    local site
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    cat > "$site/_strided_sanitize.py" <<'PY'
"""Written by strided's tools/sanitize.sh into its sanitizer environment (imported by
_strided_sanitize.pth at every interpreter start): UBSan's reports go to the log folder.

GCC's UBSan runtime is libubsan.so.1, not part of the preloaded libasan; its own start-up call to
__sanitizer_set_report_path binds to libasan's, so UBSAN_OPTIONS's log_path never reaches it and
its reports would stay on stderr, where pytest's capture or a test reading a child's stderr can
swallow them. libubsan's own function, looked up on its handle, sets its report path."""
import os

path = os.environ.get("STRIDED_SANITIZE_UBSAN_LOG")
lib = os.environ.get("STRIDED_SANITIZE_UBSAN_LIB")
if path and lib:
    import ctypes
    import sys

    try:
        ctypes.CDLL(lib).__sanitizer_set_report_path(os.fsencode(path))
    except (OSError, AttributeError) as exc:
        print(f"_strided_sanitize: UBSan's reports stay on stderr ({exc})", file=sys.stderr)
PY
    echo "import _strided_sanitize" > "$site/_strided_sanitize.pth"
    # Checked without importing strided (it cannot load without the preloaded runtime).
    "$venv/bin/python" - <<'PY'
import glob, importlib.util, os

here = os.path.dirname(importlib.util.find_spec("strided").origin)
lib = glob.glob(os.path.join(here, "_copy.*.so"))[0]
with open(lib, "rb") as f:
    data = f.read()
assert b"__asan_report" in data and b"__ubsan_handle" in data, f"{lib}: not sanitized"
print("sanitized build:", here)
PY
}

# The environment of a sanitized run, as `export NAME=VALUE` lines; $1 is the log folder.
sanitizer_env() {
    local log="$1" halt="${SANITIZE_HALT:-1}"
    local asan ubsan stdcxx
    asan="$(runtime_lib libasan.so)"
    ubsan="$(runtime_lib libubsan.so)"
    stdcxx="$(runtime_lib libstdc++.so.6)"
    printf 'export LD_PRELOAD=%q\n' "$asan $stdcxx"
    printf 'export ASAN_OPTIONS=%q\n' "detect_leaks=0:halt_on_error=$halt:abort_on_error=1:allocator_may_return_null=1:log_path=$log/report"
    printf 'export UBSAN_OPTIONS=%q\n' "print_stacktrace=1:halt_on_error=$halt:abort_on_error=1:log_path=$log/report"
    printf 'export STRIDED_SANITIZE_UBSAN_LIB=%q\n' "$ubsan"
    printf 'export STRIDED_SANITIZE_UBSAN_LOG=%q\n' "$log/ubsan"
    printf 'export PYTHONFAULTHANDLER=1\n'
}

# Print each distinct report once (its kind and the first frame in strided's code), with the
# files that hold it.
summarize() {
    "$1" - "$2" <<'PY'
import collections
import os
import re
import sys

folder = sys.argv[1]
names = sorted(os.listdir(folder))
seen = collections.OrderedDict()
for name in names:
    with open(os.path.join(folder, name), errors="replace") as f:
        text = f.read()
    for report in re.split(r"(?m)^(?==+\n==\d+==ERROR|\S+: runtime error: )", text):
        if not report.strip():
            continue
        kind = re.search(r"ERROR: \w+Sanitizer: ([\w-]+)|runtime error: ([^\n]*)", report)
        kind = re.sub(r"0x[0-9a-f]+", "ADDR", kind.group(1) or kind.group(2)) if kind else "?"
        access = re.search(r"^(READ|WRITE) of size \d+", report, re.M)
        frame = re.search(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S*strided\S*)", report)
        where = f"{frame.group(1)} {frame.group(2)}" if frame else "(no frame in strided)"
        key = (kind + (f" ({access.group(0)})" if access else ""), where)
        seen.setdefault(key, [report, []])[1].append(name)
print(f"{len(seen)} distinct report(s) in {len(names)} file(s) of {folder}:")
for (kind, where), (report, files) in seen.items():
    more = " ..." if len(files) > 5 else ""
    print(f"\n--- {kind}\n    at {where}  ({len(files)}x: {' '.join(files[:5])}{more})")
    print("\n".join(report.strip().splitlines()[:40]))
PY
}

cmd_run() {
    local venv="$1"
    shift
    if [ "$#" -eq 0 ]; then
        set -- python -m pytest -p no:cacheprovider tests
    fi
    local log
    log="${SANITIZE_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/strided-sanitize.XXXXXX")}"
    mkdir -p "$log"
    if [ -n "$(ls -A "$log")" ]; then
        echo "sanitize.sh: the log folder $log is not empty" >&2
        exit 2
    fi
    echo "sanitizer reports go to: $log"
    local rc=0 environment
    environment="$(sanitizer_env "$log")"
    (
        eval "$environment"
        export PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv"
        cd "$ROOT"
        exec "$@"
    ) || rc=$?
    if [ -n "$(ls -A "$log")" ]; then
        summarize "$venv/bin/python" "$log" >&2
        echo "sanitize.sh: the sanitizers reported (command exit status $rc); reports in $log" >&2
        exit 1
    fi
    if [ "$rc" -ne 0 ]; then
        echo "sanitize.sh: the command failed (exit status $rc), with no sanitizer report" >&2
        exit "$rc"
    fi
    echo "sanitize.sh: no sanitizer report"
}

# The canaries: one ASan report (a heap-buffer-overflow read, as an instrumented load past a
# malloc'ed block reports it) and one UBSan report (a recoverable check: an invalid value
# loaded), each raised through the runtime's own entry point in a grandchild whose failure its
# parent ignores and whose output goes nowhere. `run` must fail and its log folder hold both: the
# proof that a report cannot be swallowed, whatever the test does with its child.
cmd_selftest() {
    local venv="$1" out rc=0
    out="$(mktemp "${TMPDIR:-/tmp}/strided-sanitize-selftest.XXXXXX")"
    SANITIZE_LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/strided-sanitize-selftest.XXXXXX")"
    export SANITIZE_LOG_DIR
    (cmd_run "$venv" python -) > "$out" 2>&1 <<'PY' || rc=$?
import subprocess
import sys

ASAN = """
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
block = libc.malloc(16)
libc.__asan_report_load1(ctypes.c_void_p(block + 16))   # one byte past the block
"""
UBSAN = """
import ctypes, os
class Location(ctypes.Structure):
    _fields_ = [("file", ctypes.c_char_p), ("line", ctypes.c_uint32), ("column", ctypes.c_uint32)]
class Type(ctypes.Structure):   # TypeKind 0 (integer), TypeInfo 6 (8 bits, unsigned)
    _fields_ = [("kind", ctypes.c_uint16), ("info", ctypes.c_uint16), ("name", ctypes.c_char * 16)]
class Data(ctypes.Structure):
    _fields_ = [("location", Location), ("type", ctypes.POINTER(Type))]
canary = Type(0, 6, b"'canary_t'")
data = Data(Location(b"sanitize-selftest.c", 1, 1), ctypes.pointer(canary))
ubsan = ctypes.CDLL(os.environ["STRIDED_SANITIZE_UBSAN_LIB"])
ubsan.__ubsan_handle_load_invalid_value(ctypes.byref(data), ctypes.c_void_p(7))
print("UBSan did not halt")
"""
for code in (ASAN, UBSAN):
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
print("the parent exits 0")
PY
    local missing=""
    grep -q "ERROR: AddressSanitizer: heap-buffer-overflow" "$SANITIZE_LOG_DIR"/report.* 2>/dev/null \
        || missing="$missing ASan's report (log_path)"
    grep -q "runtime error: load of value 7" "$SANITIZE_LOG_DIR"/ubsan.* 2>/dev/null \
        || missing="$missing UBSan's report (the _strided_sanitize shim)"
    if [ "$rc" -eq 0 ] || [ -n "$missing" ]; then
        cat "$out" >&2
        echo "sanitize.sh selftest: FAILED (run's exit status $rc; missing:${missing:- nothing})" >&2
        exit 1
    fi
    rm -rf "$out" "$SANITIZE_LOG_DIR"
    echo "sanitize.sh selftest: ok (a report in a grandchild whose failure is ignored fails run)"
}

[ "$#" -ge 2 ] || usage
action="$1"
venv="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
shift 2
case "$action" in
    build) [ "$#" -eq 0 ] || usage; cmd_build "$venv" ;;
    run) cmd_run "$venv" "$@" ;;
    selftest) [ "$#" -eq 0 ] || usage; cmd_selftest "$venv" ;;
    env)
        [ "$#" -le 1 ] || usage
        log="${1:-${SANITIZE_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/strided-sanitize.XXXXXX")}}"
        mkdir -p "$log"
        environment="$(sanitizer_env "$log")"
        printf '# reports go to %s (nothing checks it: look there yourself)\n%s\n' "$log" "$environment"
        # shellcheck disable=SC2016  # $PATH is for the shell that evaluates these lines
        printf 'export PATH=%q:"$PATH" VIRTUAL_ENV=%q\n' "$venv/bin" "$venv"
        ;;
    *) usage ;;
esac
