"""Copies in processes forked after the parent ran a multi-threaded copy (data-loader workers).

libgomp's thread team does not survive fork(): without strided's rule (a forked child copies on
one thread) the first threaded copy of such a child waits forever. Every test runs in a fresh
interpreter under a timeout, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import importlib.util

import pytest
from isolated import run_isolated

from strided import _copy

HAVE_TORCH = importlib.util.find_spec("torch") is not None

# Run by every child: a threaded-sized transposing copy (8 MiB, well above the size at which a
# team starts), checked against numpy, with the default and an explicit thread count.
PRELUDE = """
import multiprocessing, os
import numpy as np
import strided as st
from strided import _copy, _core

SRC = np.arange(2048 * 1024, dtype=np.float32).reshape(2048, 1024)

def parent_runs_a_team():
    out = np.empty((1024, 2048), np.float32)
    st.copyto(out, SRC.T, num_threads=2)
    assert np.array_equal(out, SRC.T)

def child_copies(num_threads):
    out = np.empty((1024, 2048), np.float32)
    st.copyto(out, SRC.T, num_threads=num_threads)
    assert np.array_equal(out, SRC.T)
    return _copy.in_forked_child(), _copy.resolve_threads(num_threads)
"""


def test_the_parent_is_not_a_forked_child():
    assert _copy.in_forked_child() is False


def test_fork_pool_after_a_threaded_copy():
    out = run_isolated(PRELUDE + """
parent_runs_a_team()
with multiprocessing.get_context("fork").Pool(2) as pool:
    results = pool.map(child_copies, [None, 2, 1, None])
print(results)
print(_copy.in_forked_child(), _copy.resolve_threads(2))
""", timeout=120)
    results, parent = out.strip().splitlines()
    # every child completed both copies, knows it is a forked child and copies on one thread
    assert results == "[(True, 1), (True, 1), (True, 1), (True, 1)]"
    assert parent == "False 2"   # the parent keeps the count it asks for


def test_os_fork_and_a_grandchild():
    out = run_isolated(PRELUDE + """
parent_runs_a_team()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        first = child_copies(2)
        grandchild = os.fork()
        if grandchild == 0:
            os._exit(0 if child_copies(None) == (True, 1) else 3)
        _, status = os.waitpid(grandchild, 0)
        os.write(w, f"{first} {os.waitstatus_to_exitcode(status)}".encode())
    finally:
        os._exit(0)
os.close(w)
_, status = os.waitpid(pid, 0)
print(os.read(r, 100).decode(), os.waitstatus_to_exitcode(status))
parent_runs_a_team()   # the parent keeps its team
""", timeout=120)
    assert out.strip() == "(True, 1) 0 0"


def test_spawned_children_keep_their_threads(tmp_path):
    # spawn re-imports the main module in the child, so the script must be a file
    script = tmp_path / "spawn_child.py"
    script.write_text(PRELUDE + """
if __name__ == "__main__":
    parent_runs_a_team()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(pool.map(child_copies, [2])[0][0])
""")
    out = run_isolated(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')",
                       timeout=120)
    assert out.strip() == "False"


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
def test_torch_dataloader_fork_workers():
    # The data-loader case of the issue: the parent ran a 2-thread copy (and a torch op, whose
    # own OpenMP runtime is separate), then DataLoader(num_workers=2) forks workers whose
    # __getitem__ relayouts an image tensor HWC -> CHW with strided.
    out = run_isolated(PRELUDE + """
import torch
from torch.utils.data import DataLoader, Dataset

class Images(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        hwc = torch.arange(512 * 512 * 3, dtype=torch.float32).reshape(512, 512, 3) + i
        chw = torch.empty(3, 512, 512)
        st.copyto(chw, hwc.permute(2, 0, 1))
        assert torch.equal(chw, hwc.permute(2, 0, 1))
        assert _copy.in_forked_child()
        return st.relayout(chw, (1, 2, 0), num_threads=2).sum()

torch.set_num_threads(2)
parent_runs_a_team()
torch.ones(512, 512).t().contiguous()
loader = DataLoader(Images(), batch_size=2, num_workers=2, multiprocessing_context="fork")
sums = torch.cat([batch for batch in loader])
want = torch.stack([
    (torch.arange(512 * 512 * 3, dtype=torch.float32) + i).sum() for i in range(8)])
print(torch.equal(sums, want))
""", timeout=240)
    assert out.strip() == "True"
