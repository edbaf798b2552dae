"""Names of the array types strided takes and returns, for type annotations only.

The public functions are typed so that a type checker keeps the library of the input: numpy in,
numpy out; torch in, torch out (see the overloads of :func:`strided.relayout` and
:func:`strided.view`). The modules that must stay library-neutral (``copy.py``) import these
names under ``typing.TYPE_CHECKING`` only, so nothing here runs when strided is imported, and
torch is never imported at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numpy.typing import NDArray  # numpy arrays of any dtype

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["BytesLike", "NDArray", "ScalarT", "Tensor"]

#: The scalar type of a numpy array, kept from input to result when no ``dtype`` is given.
ScalarT = TypeVar("ScalarT", bound=np.generic)
#: The bytes-like objects strided reads as 1-D uint8 numpy arrays.
BytesLike = bytes | bytearray | memoryview
