"""Containers of 4-bit elements seen from the interop layer: ``layout_of(x, bits=4)`` and the
refusal of a view of 4-bit elements (no library holds them as strided elements)."""

from __future__ import annotations

import numpy as np
import pytest

import strided as st
from strided.interop import container_layouts


def test_layout_of_a_container_doubles_its_contiguous_dimension():
    box = np.zeros((2, 3, 32), np.uint8)
    assert st.layout_of(box, bits=4) == st.Layout((2, 3, 64), (192, 64, 1), bits=4)
    hwc = np.zeros((5, 4, 2), np.uint8).transpose(2, 0, 1)        # (C bytes, H, W): C packed
    assert st.layout_of(hwc, bits=4) == st.Layout((4, 5, 4), (1, 16, 4), bits=4)
    # one byte: its (size-1) dimension holds the pair
    assert st.layout_of(np.zeros((1, 1), np.uint8), bits=4).sizes == (1, 2)


def test_every_candidate_is_offered_odd_counts_last():
    layouts = container_layouts(st.Layout((3, 1), (1, 1)))
    assert [layout.sizes for layout in layouts] == [(6, 1), (3, 2), (5, 1), (3, 1)]
    assert all(layout.bits == 4 for layout in layouts)


def test_layout_of_bits_refuses_what_is_not_a_container():
    with pytest.raises(ValueError, match="bits must be None or 4"):
        st.layout_of(np.zeros(4, np.uint8), bits=8)
    with pytest.raises(TypeError, match="uint8 array of the packed bytes"):
        st.layout_of(np.zeros(4, np.int16), bits=4)
    with pytest.raises(ValueError, match="contiguous bytes"):
        st.layout_of(np.zeros((4, 4), np.uint8)[:, ::2], bits=4)
    with pytest.raises(ValueError, match="0-d"):
        st.layout_of(np.zeros((), np.uint8), bits=4)


@pytest.mark.parametrize("base", [np.zeros(8, np.uint8), bytearray(8)])
def test_a_view_of_4bit_elements_is_refused_and_explained(base):
    with pytest.raises(ValueError, match="4-bit elements, which no array library holds") as info:
        st.view(base, st.Layout((4,), bits=4))
    assert "uint8 container" in str(info.value) and "src_dtype='int4'" in str(info.value)
