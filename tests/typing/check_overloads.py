"""Type-checked, not run: the overloads keep the input's library for type checkers.

``.ci/run`` checks this file with ``python -m mypy tests/typing`` against the installed package;
a wrong overload fails there (``assert_type`` is an error when the types differ). It needs numpy
and torch installed for the checker to see their types.
"""

from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from typing_extensions import assert_type

import strided as st

image = np.zeros((1, 3, 2, 2), np.float32)
tensor = torch.zeros(1, 3, 2, 2)
layout = st.Layout((2,), itemsize=4)

# numpy in, numpy out; the dtype is kept unless dtype= is given
assert_type(st.relayout(image, "NHWC"), npt.NDArray[np.float32])
assert_type(st.relayout(image, "NHWC", dtype=np.float16), npt.NDArray[Any])
assert_type(st.relayout(b"abc", "C"), npt.NDArray[Any])
assert_type(st.to_blocked(image, "NCHW4"), npt.NDArray[np.float32])
assert_type(st.to_blocked(image, "NCHW4", dtype=np.int8, scale=2.0), npt.NDArray[Any])
assert_type(st.from_blocked(image, "NCHW4", channels=3), npt.NDArray[np.float32])
assert_type(st.view(image, layout), npt.NDArray[Any])
assert_type(st.interop.view(bytearray(8), layout), npt.NDArray[Any])

# torch in, torch out
assert_type(st.relayout(tensor, "NHWC"), torch.Tensor)
assert_type(st.relayout(tensor, "NHWC", dtype=torch.bfloat16), torch.Tensor)
assert_type(st.to_blocked(tensor, "NCHW4"), torch.Tensor)
assert_type(st.from_blocked(tensor, "NCHW4", channels=3), torch.Tensor)
assert_type(st.view(tensor, layout), torch.Tensor)

# any other library: Any
assert_type(st.relayout(object(), "C"), Any)
