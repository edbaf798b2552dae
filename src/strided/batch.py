"""Batches for data loaders: many images into one normalised batch in one pass
(:func:`stack`), and a collate function for torch's ``DataLoader`` built on it
(:class:`Collate`).

A data loader's unit is the batch: N images decoded one by one (HWC, uint8, each in its own
buffer, some of them crops or flips) become one ``(N, C, H, W)`` float tensor, normalised with
a mean and a standard deviation per channel. The usual way copies everything twice (each image
converted, then ``np.stack``/``torch.stack``); :func:`stack` writes each image straight into its
place in the batch, converting, normalising and reordering its channels on the way, with the
threads of one team spread over all the images' rows.

Like :mod:`strided.copy`, this module never names a library: arrays are read and made through
:mod:`strided.interop`'s adapters (torch is imported by :class:`Collate` only when called).

Examples
--------
>>> import numpy as np
>>> import strided as st
>>> images = [np.full((2, 3, 3), v, np.uint8) for v in (0, 51, 255)]      # H, W, C
>>> batch = st.stack(images, mean=0.5, std=0.5)       # (x / 255 - 0.5) / 0.5, float32
>>> batch.shape, batch.dtype, batch[:, 0, 0, 0].tolist()
((3, 3, 2, 3), dtype('float32'), [-1.0, -0.5999999642372131, 1.0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from strided import _convert, _copy, _core
from strided.copy import (
    Conversion,
    _allocate,
    _channel_params,
    _check_host,
    _check_no_self_overlap,
    _check_out_dtype,
    _check_writeable,
    _conversion,
    _conversion_types,
    _describe,
    relayout,
)
from strided.formats import physical_order
from strided.interop._record import MemoryRecord, check_view, moved, type_name
from strided.layout import Layout

__all__ = ["Collate", "stack"]

# image_layout -> (rank of an image, the axes of an image in (C, H, W) order; None: no C axis)
_IMAGE_LAYOUTS: dict[str, tuple[int, tuple[int, ...] | None]] = {
    "HWC": (3, (2, 0, 1)), "CHW": (3, (0, 1, 2)), "HW": (2, None)}


def stack(images: Sequence[Any], layout: str | Sequence[int] = "NCHW", *,
          image_layout: str = "HWC", dtype: Any = None, mean: Any = None, std: Any = None,
          max_value: Any = None, scale: Any = None, shift: Any = None,
          channels: Sequence[int] | None = None, rounding: str = "fused", out: Any = None,
          num_threads: int | None = None) -> Any:
    """N images of one shape into one ``(N, C, H, W)`` batch, converted and normalised in one
    pass.

    Each image is read where it is (any strides: crops, flips, channels-last or planar views,
    numpy arrays, torch tensors, PIL images and anything else :func:`strided.layout_of`
    reads) and written straight into its place in the batch; no intermediate copy is made.
    The threads of one team share the work of all the images.

    Parameters
    ----------
    images : sequence of arrays
        N >= 1 images (N = 0 with ``out``), all of the same sizes and dtype, in host memory.
        Read once, before anything is written.
    layout : str or tuple of int
        The batch's physical layout, of logical sizes ``(N, C, H, W)``: ``"NCHW"`` (planar,
        default), ``"NHWC"`` (channels-last; a torch batch is ``torch.channels_last``), or
        any rank-4 label or order :func:`strided.relayout` takes. Not used with ``out``.
    image_layout : {"HWC", "CHW", "HW"}
        How the images' axes read: ``"HWC"`` (default) as decoders give them (OpenCV, PIL,
        imageio), ``"CHW"`` planar, ``"HW"`` one channel (the batch then has C = 1).
    dtype : dtype, optional
        The batch's dtype, of the first image's library. Default: the images' dtype, or
        float32 when ``mean``, ``std``, ``max_value`` or ``rounding="torchvision"`` is given.
    mean, std, max_value : number or sequence of C numbers, optional
        Normalise: ``(x / max_value - mean) / std`` per channel of the batch, as
        :func:`strided.copyto` does (``max_value`` by default 255 for uint8 images, the
        largest value of any integer dtype, 1 for float images).
    scale, shift : number or sequence of C numbers, optional
        The affine step ``x * scale + shift`` instead, per channel of the batch.
    channels : sequence of int, optional
        Which channel of the images each channel of the batch is: ``(2, 1, 0)`` turns BGR
        images (OpenCV) into an RGB batch; ``(0, 1, 2)`` drops the alpha channel of RGBA
        images. Per-channel parameters always index the batch's channels (RGB order above).
    rounding : {"fused", "torchvision"}
        ``"torchvision"``: the values of torchvision's ``ToDtype(float32, scale=True)`` then
        ``Normalize(mean, std)``, bit for bit (see :func:`strided.copyto`).
    out : array, optional
        The batch, written in place and returned: sizes ``(N, C, H, W)``, any strides
        (a pinned torch tensor, a channels-last one, a slice of a larger buffer), writeable,
        in host memory; its dtype is the batch's.
    num_threads : int, optional
        Threads of the copy (see :func:`strided.copyto`).

    Returns
    -------
    array
        ``out``, or a new batch of the first image's library (numpy for PIL images and
        buffers).

    Raises
    ------
    TypeError
        An image or ``out`` is not an array; a dtype strided does not convert.
    ValueError
        No image (and no ``out``); images of different sizes or dtypes (naming the first
        that differs); an image of the wrong rank for ``image_layout``; a channel out of
        range; ``out`` of the wrong sizes or dtype, read-only, or not in host memory; the
        parameters' errors of :func:`strided.copyto`.

    Examples
    --------
    An OpenCV-style batch (BGR, HWC, uint8) into an RGB, planar, ImageNet-normalised float32
    batch: the mean and std are given in RGB order, the order of the batch.

    >>> import numpy as np
    >>> import strided as st
    >>> bgr = [np.zeros((4, 5, 3), np.uint8) + np.array([10, 20, 30], np.uint8)] * 2
    >>> mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    >>> batch = st.stack(bgr, mean=mean, std=std, channels=(2, 1, 0))
    >>> batch.shape
    (2, 3, 4, 5)
    >>> ref = (np.array([30, 20, 10]) / 255 - np.array(mean)) / np.array(std)
    >>> bool(np.allclose(batch[0, :, 0, 0], ref, atol=1e-6))
    True

    Reusing one buffer for every batch, channels-last:

    >>> buffer = np.empty((2, 4, 5, 3), np.float32).transpose(0, 3, 1, 2)   # N, C, H, W
    >>> st.stack(bgr, mean=mean, std=std, channels=(2, 1, 0), out=buffer) is buffer
    True
    >>> bool(np.array_equal(buffer, batch))
    True
    """
    # every argument but the arrays first: reading them may run the caller's code
    conversion = _conversion("unsafe", scale, shift, 1, mean, std, max_value, rounding)
    picks = None if channels is None else _channel_list(channels)
    rank, axes = _image_axes(image_layout)
    order = physical_order(layout, 4) if out is None else None
    num_threads = _copy.threads_argument(num_threads)
    sequence = _image_sequence(images)
    if dtype is None and conversion.image is not None:
        dtype = "float32"          # the image form's result, as torchvision's
    records, addresses = _image_records(sequence, rank)
    if not records and out is None:
        raise ValueError("images is empty: stack needs at least one image to know the batch's "
                         "shape and library (or an out to fill)")
    logical = [_planar(record.layout, axes) for record in records]
    if addresses is None:
        _check_alike(sequence, records, logical)
    pieces = _channel_pieces(logical[0].sizes[0] if logical else None, picks)
    if out is None:
        n = len(sequence)
        c = sum(count for _, count, _ in pieces)
        _, h, w = logical[0].sizes
        out = _new_batch(sequence[0], records[0], (n, c, h, w), order, dtype)
        given = False
    else:
        given = True
    out_record = _batch_record(out, len(sequence), logical, pieces, dtype, records)
    if out_record.layout.size == 0:
        return out
    types = _types(out, out_record, sequence[0], records[0], conversion, dtype)
    if types is not None and conversion.image is not None:
        conversion = conversion.resolved(types[1], types[0])
    if addresses is not None and _meets(out_record, records[0], addresses):
        records, addresses = _image_records(sequence, rank, alike=False)
        logical = [_planar(record.layout, axes) for record in records]
    if addresses is None:
        sequence, records, logical = _unshared(out_record, sequence, records, logical, axes)
    _fill(out_record, _Images(sequence, records, logical, addresses), pieces, types,
          conversion, num_threads)
    if conversion.divisor is not None:
        _divide(out_record, conversion, num_threads)
    if given:
        return out
    return records[0].adapter.hand_over(sequence[0], records[0], out, out_record.layout)


# ---- reading the arguments -------------------------------------------------------------------


def _channel_list(channels: Any) -> tuple[int, ...]:
    """``channels`` as a tuple of ints, read once (no iterator, no str)."""
    if isinstance(channels, (str, bytes)) or not isinstance(channels, Sequence):
        raise TypeError(f"channels must be a sequence of ints (the images' channel of each "
                        f"channel of the batch), got {type(channels).__name__}")
    picks = tuple(channels)
    if not picks:
        raise ValueError("channels is empty: the batch needs at least one channel")
    return tuple(_core.as_int(p, f"channels[{k}]") for k, p in enumerate(picks))


def _image_axes(image_layout: Any) -> tuple[int, tuple[int, ...] | None]:
    if type(image_layout) is not str or image_layout not in _IMAGE_LAYOUTS:
        raise ValueError(f"image_layout must be one of {', '.join(map(repr, _IMAGE_LAYOUTS))} "
                         f"(the images' axes; 'HWC' as decoders give them), got "
                         f"{image_layout!r}")
    return _IMAGE_LAYOUTS[image_layout]


def _image_sequence(images: Any) -> tuple[Any, ...]:
    """The images, read once into a tuple (a sequence that changes while it is read is read
    as it was); a single array is refused rather than iterated."""
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise TypeError(f"images must be a sequence (list or tuple) of arrays, got "
                        f"{type(images).__name__}; to stack the first dimension of one array, "
                        f"pass list(array)")
    return tuple(images)


class _Images(NamedTuple):
    """The batch's images as :func:`_fill` reads them: ``records`` and ``logical`` (each
    image's (C, H, W) layout) per image, or, when every image is a plain array of the first
    one's dtype, sizes and strides, of the first image only, with ``addresses`` giving every
    image's first element (read without running the caller's code; None otherwise)."""

    arrays: tuple[Any, ...]
    records: list[MemoryRecord]
    logical: list[Layout]
    addresses: list[int] | None


def _image_records(images: tuple[Any, ...], rank: int, *, alike: bool = True
                   ) -> tuple[list[MemoryRecord], list[int] | None]:
    """Every image's record; or, when ``alike`` and the images are plain arrays alike (one
    library's, one dtype, sizes and strides: a decoder's output), the first one's record and
    every image's address (the common batch costs one description, not N)."""
    if not images:
        return [], None
    first = _image_record(images[0], 0, rank)
    addresses = (first.adapter.alike_addresses(images, first)
                 if alike and len(images) > 1 else None)
    if addresses is not None:
        return [first], addresses
    return [first, *(_image_record(x, k, rank) for k, x in enumerate(images) if k)], None


def _image_record(x: Any, k: int, rank: int) -> MemoryRecord:
    name = f"images[{k}]"
    record = _describe(x, name)
    _check_host(record, x, name)
    if record.layout.ndim != rank:
        raise ValueError(f"{name} has shape {record.layout.sizes}: image_layout takes images of "
                         f"rank {rank}")
    return record.adapter.resolved(record)


def _planar(layout: Layout, axes: tuple[int, ...] | None) -> Layout:
    """An image's layout as logical (C, H, W)."""
    if axes is None:
        h, w = layout.sizes
        return Layout((1, h, w), (0, *layout.strides), offset=layout.offset,
                      itemsize=layout.itemsize)
    return layout.permute(axes)


def _check_alike(images: tuple[Any, ...], records: list[MemoryRecord],
                 logical: list[Layout]) -> None:
    """Every image has the first one's (C, H, W) sizes and element type."""
    if not records:
        return
    first, first_type = logical[0].sizes, type_name(records[0])
    for k in range(1, len(records)):
        if logical[k].sizes != first:
            raise ValueError(f"images[{k}] has (C, H, W) sizes {logical[k].sizes} but images[0] "
                             f"has {first}: a batch stacks images of one size (resize or crop "
                             f"them first)")
        if type_name(records[k]) != first_type or (first_type is None and (
                records[k].layout.itemsize != records[0].layout.itemsize)):
            dtypes = [r.adapter.dtype_name(x, r) for x, r in ((images[0], records[0]),
                                                              (images[k], records[k]))]
            raise ValueError(f"images[{k}] has dtype {dtypes[1]} but images[0] has "
                             f"{dtypes[0]}: a batch stacks images of one dtype")


# (first channel of the batch, number of channels, (first channel of the image, step)) of
# each piece: one piece when the picked channels step evenly, else one piece a channel.
_ChannelPiece = tuple[int, int, tuple[int, int]]


def _channel_pieces(c: int | None, picks: tuple[int, ...] | None) -> list[_ChannelPiece]:
    if c is None:                        # no image: out= decides, channels as they are
        return [(0, len(picks), (0, 1))] if picks else []
    if picks is None:
        return [(0, c, (0, 1))]
    for k, p in enumerate(picks):
        if not 0 <= p < c:
            raise ValueError(f"channels[{k}] is {p} but the images have {c} channels "
                             f"(0..{c - 1})")
    step = picks[1] - picks[0] if len(picks) > 1 else 1
    if all(picks[k] - picks[k - 1] == step for k in range(1, len(picks))):
        return [(0, len(picks), (picks[0], step))]
    return [(k, 1, (p, 1)) for k, p in enumerate(picks)]


# ---- the batch -------------------------------------------------------------------------------


def _new_batch(like: Any, record: MemoryRecord, sizes: tuple[int, int, int, int],
               order: tuple[int, ...] | None, dtype: Any) -> Any:
    new_dtype, itemsize = None, record.layout.itemsize
    if dtype is not None:
        _, new_dtype = record.adapter.resolve_dtype(dtype)
        itemsize = new_dtype.itemsize
    return _allocate(like, record, Layout.packed(sizes, order, itemsize=itemsize), order,
                     zero=False, blame=f"a batch of sizes {sizes}", dtype=new_dtype)


def _batch_record(out: Any, n: int, logical: list[Layout], pieces: list[_ChannelPiece],
                  dtype: Any, records: list[MemoryRecord]) -> MemoryRecord:
    """out's record, checked as copyto checks a destination, against the batch's sizes."""
    record = _describe(out, "out")
    _check_host(record, out, "out")
    _check_writeable(record, out, "out")
    if record.layout.ndim != 4:
        raise ValueError(f"out has shape {record.layout.sizes}: a batch is (N, C, H, W)")
    if logical:
        c = sum(count for _, count, _ in pieces)
        expected = (n, c, *logical[0].sizes[1:])
        if record.layout.sizes != expected:
            raise ValueError(f"out has shape {record.layout.sizes} but the batch of {n} images "
                             f"has sizes {expected} (N, C, H, W)")
    elif record.layout.sizes[0] != 0:
        raise ValueError(f"out has shape {record.layout.sizes} but images is empty: N is 0")
    if records:
        _check_out_dtype(out, record, records[0], dtype)
    _check_no_self_overlap(record.layout, "out")
    return record


def _types(out: Any, out_record: MemoryRecord, image: Any, record: MemoryRecord,
           conversion: Conversion, dtype: Any) -> tuple[str, str]:
    """The engine's (dst, src) type names: checked as a converting copy's, or the one type
    of a plain copy."""
    dst_type, src_type = type_name(out_record), type_name(record)
    if dst_type is not None and dst_type == src_type and not conversion.affine:
        return dst_type, src_type
    return _conversion_types(out_record, out, record, image, conversion)


def _unshared(out_record: MemoryRecord, images: tuple[Any, ...], records: list[MemoryRecord],
              logical: list[Layout], axes: tuple[int, ...] | None
              ) -> tuple[tuple[Any, ...], list[MemoryRecord], list[Layout]]:
    """The images, each one whose memory meets out's replaced by a copy of it (the batch is
    written at once: no image may be read after a write reaches it)."""
    low, high = _byte_range(out_record)
    arrays, records, logical = list(images), list(records), list(logical)
    for k, record in enumerate(records):
        lo, hi = _byte_range(record)
        if lo < high and low < hi:
            arrays[k] = relayout(arrays[k], tuple(range(record.layout.ndim)))
            records[k] = _describe(arrays[k], f"images[{k}]")
            logical[k] = _planar(records[k].layout, axes)
    return tuple(arrays), records, logical


def _meets(out_record: MemoryRecord, record: MemoryRecord, addresses: list[int]) -> bool:
    """Whether the memory of an image alike ``record``, at one of ``addresses``, meets
    out's (then every image is described and staged as :func:`_unshared` does)."""
    low, high = _byte_range(out_record)
    lo, hi = _byte_range(record)
    return any(lo - record.ptr + a < high and low < hi - record.ptr + a for a in addresses)


def _byte_range(record: MemoryRecord) -> tuple[int, int]:
    layout = record.layout
    lo, hi = layout.span
    return record.ptr + lo * layout.itemsize, record.ptr + (hi + 1) * layout.itemsize


def _pinned_images(images: _Images) -> list[int]:
    """Every image's address for the engine (:meth:`Adapter.pinned`); images located alike
    are located again, and refused if one moved since it was read."""
    records = images.records
    if images.addresses is None:
        return [r.adapter.pinned(r, f"images[{k}]") for k, r in enumerate(records)]
    first = records[0]
    first.adapter.pinned(first, "images[0]")
    now = first.adapter.alike_addresses(images.arrays, first)
    if now != images.addresses:
        raise moved(f"images[{_first_moved(images, first)}]")
    return now


def _first_moved(images: _Images, first: MemoryRecord) -> int:
    """The first image that is no longer where, or what, it was when it was located."""
    before = images.addresses or []
    for k, x in enumerate(images.arrays):
        now = first.adapter.alike_addresses((images.arrays[0], x), first)
        if now is None or now[1] != before[k]:
            return k
    return 0


def _fill(out_record: MemoryRecord, images: _Images, pieces: list[_ChannelPiece],
          types: tuple[str, str], conversion: Conversion, num_threads: int | None) -> None:
    """Every image into its place: per channel piece, one engine job per group of images of
    one layout (the threads claim blocks across the group), or an image at a time when out's
    images interleave in memory (a batch dimension that is not outermost)."""
    dst_type, src_type = types
    batch = out_record.layout
    scale, shift, par, _ = _channel_params(conversion, batch.sizes, 1)
    dsz, ssz = batch.itemsize, images.records[0].layout.itemsize
    one_by_one = _interleaved(batch)
    jobs = []
    for first, count, (pick, step) in pieces:
        dst = batch[0, first:first + count]
        params = (_slice(scale, first, count), _slice(shift, first, count),
                  None if par is None else par[1:], count if par is not None else 1)
        jobs.append((batch.offset_of((0, first, 0, 0)) * dsz, dst, params,
                     _groups(images, pick, step, count)))
    # the addresses, pinned once every check is done: only the engine runs from here
    out_base = out_record.adapter.pinned(out_record, "out")
    bases = _pinned_images(images)
    image_bytes = batch.strides[0] * dsz
    for start, dst, params, groups in jobs:
        for strides, members in groups.items():
            dsts = [out_base + start + k * image_bytes for k, _ in members]
            srcs = [bases[k] + offset * ssz for k, offset in members]
            if one_by_one:
                for d, s in zip(dsts, srcs):
                    _convert.convert_memory(d, s, dst.sizes, dst.strides, strides, dst_type,
                                            src_type, *params, num_threads=num_threads)
            else:
                _convert.convert_many(dsts, srcs, dst.sizes, dst.strides, strides, dst_type,
                                      src_type, *params, num_threads=num_threads)
    out_record.adapter.written(out_record)


def _groups(images: _Images, pick: int, step: int, count: int
            ) -> dict[tuple[int, ...], list[tuple[int, int]]]:
    """The images grouped by the strides of their channels ``pick, pick + step, ...``: per
    group, each member's (index, element offset of its first channel)."""
    n = len(images.arrays)
    if images.addresses is not None:       # images alike: one layout, one proof
        src = _picked(images.logical[0], pick, step, count)
        check_view(src, images.records[0])
        return {src.strides: [(k, src.offset) for k in range(n)]}
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for k, image in enumerate(images.logical):
        src = _picked(image, pick, step, count)
        check_view(src, images.records[k])     # (inside by construction: a cheap proof)
        groups.setdefault(src.strides, []).append((k, src.offset))
    return groups


def _interleaved(batch: Layout) -> bool:
    """Whether out's images share a byte range (its N stride is smaller than one image's
    span): then they are written one at a time."""
    if batch.sizes[0] < 2:
        return False
    lo, hi = batch[0].span
    return abs(batch.strides[0]) < hi - lo + 1


def _picked(image: Layout, pick: int, step: int, count: int) -> Layout:
    """The channels ``pick, pick + step, ...`` (``count`` of them) of an image's (C, H, W)
    layout."""
    sc, sh, sw = image.strides
    return Layout((count, *image.sizes[1:]), (step * sc, sh, sw), offset=image.offset + pick * sc,
                  itemsize=image.itemsize)


def _slice(value: Any, first: int, count: int) -> Any:
    return value[first:first + count] if type(value) is tuple else value


def _divide(out_record: MemoryRecord, conversion: Conversion, num_threads: int | None) -> None:
    """The torchvision form's division, in place over the whole batch."""
    layout = out_record.layout
    divisor = Conversion("unsafe", conversion.divisor, None, 1)
    divisor.names = ("std", "std")
    scale, _, par, length = _channel_params(divisor, layout.sizes, 1)
    base = out_record.adapter.pinned(out_record, "out")
    _convert.convert_memory(base, base, layout.sizes, layout.strides, layout.strides,
                            "float32", "float32", scale, None, par, length,
                            num_threads=num_threads, divide=True)
    out_record.adapter.written(out_record)


# ---- the collate function --------------------------------------------------------------------


class Collate:
    """A ``collate_fn`` for torch's ``DataLoader``: a list of samples into a batch, its images
    through :func:`stack` (converted, normalised and stacked in one pass), the other fields
    through torch's ``default_collate``.

    It replaces ``ToTensor()`` + ``Normalize(mean, std)`` in the dataset and
    ``default_collate`` in the loader: the dataset returns decoded images as they are
    (numpy HWC uint8, PIL images, torch tensors), and the batch is made here, in the worker
    process. The batch is always a torch tensor. Forked and spawned workers both work (the
    object pickles; strided's threads survive a fork); in a worker, the copy runs on one
    thread unless ``num_threads`` says otherwise, as torch's own ops do there.

    Parameters
    ----------
    layout : str or tuple of int
        The batch's layout (see :func:`stack`): ``"NCHW"`` or ``"NHWC"`` (channels-last).
    key : int or str, optional
        Where the image is in a sample that is a tuple/list (an index, default 0) or a dict
        (a key, default ``"image"``). Samples that are arrays are the images themselves.
    **options
        ``image_layout``, ``dtype``, ``mean``, ``std``, ``max_value``, ``scale``, ``shift``,
        ``channels``, ``rounding``, ``num_threads``: as for :func:`stack`; checked when
        the object is made.

    Examples
    --------
    >>> import numpy as np
    >>> import strided as st
    >>> collate = st.Collate(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    >>> samples = [(np.zeros((4, 4, 3), np.uint8), 1), (np.ones((4, 4, 3), np.uint8), 0)]
    >>> images, labels = collate(samples)                          # doctest: +SKIP
    >>> images.shape, images.dtype, labels.tolist()                # doctest: +SKIP
    (torch.Size([2, 3, 4, 4]), torch.float32, [1, 0])

    With a loader: ``DataLoader(dataset, batch_size=64, num_workers=4,
    collate_fn=st.Collate(mean=..., std=...), pin_memory=True)``.
    """

    _OPTIONS = ("image_layout", "dtype", "mean", "std", "max_value", "scale", "shift",
                "channels", "rounding", "num_threads")

    def __init__(self, layout: str | Sequence[int] = "NCHW", *, key: int | str | None = None,
                 **options: Any) -> None:
        unknown = sorted(set(options) - set(self._OPTIONS))
        if unknown:
            raise TypeError(f"Collate got unexpected options {unknown}: it takes "
                            f"{', '.join(self._OPTIONS)} (as strided.stack)")
        # checked now, so a loader fails at its first line rather than in a worker
        _conversion("unsafe", options.get("scale"), options.get("shift"), 1,
                    options.get("mean"), options.get("std"), options.get("max_value"),
                    options.get("rounding", "fused"))
        physical_order(layout, 4)
        _image_axes(options.get("image_layout", "HWC"))
        _copy.threads_argument(options.get("num_threads"))
        if options.get("channels") is not None:
            _channel_list(options["channels"])
        self.layout = layout
        self.key = key
        self.options = options

    def __repr__(self) -> str:
        args = [repr(self.layout)] + ([f"key={self.key!r}"] if self.key is not None else [])
        args += [f"{k}={v!r}" for k, v in self.options.items()]
        return f"Collate({', '.join(args)})"

    def __call__(self, samples: Sequence[Any]) -> Any:
        import torch  # only here: `import strided` never imports torch
        from torch.utils.data import default_collate, get_worker_info

        samples = list(samples)
        if not samples:
            raise ValueError("Collate got no samples: a batch has at least one")
        first = samples[0]
        if isinstance(first, Mapping):
            key = "image" if self.key is None else self.key
            batch = self._stack([s[key] for s in samples], torch, get_worker_info)
            # the other fields exactly as default_collate makes them (its container types,
            # its errors), the image field a placeholder it collates cheaply
            rest = default_collate([_with_field(s, key) for s in samples])
            rest[key] = batch
            return rest
        if isinstance(first, (tuple, list)):
            key = 0 if self.key is None else self.key
            if not isinstance(key, int):
                raise TypeError(f"key must be an int for samples that are tuples, got {key!r}")
            batch = self._stack([s[key] for s in samples], torch, get_worker_info)
            rest = default_collate([_with_field(s, key) for s in samples])
            if hasattr(first, "_fields"):           # a namedtuple: default_collate's own type
                return rest._replace(**{first._fields[key]: batch})
            rest[key] = batch
            return rest
        return self._stack(samples, torch, get_worker_info)

    def _stack(self, images: list[Any], torch: Any, get_worker_info: Any) -> Any:
        options = dict(self.options)
        if options.get("num_threads") is None and get_worker_info() is not None:
            options["num_threads"] = 1      # a worker shares the cores with the others
        batch = stack(images, self.layout, **options)
        if isinstance(batch, torch.Tensor):
            return batch
        if getattr(batch.dtype, "name", None) == "bfloat16":    # ml_dtypes: by its bits
            return torch.from_numpy(batch.view("uint16")).view(torch.bfloat16)
        return torch.from_numpy(batch)      # numpy (images of numpy, PIL, buffers): no copy


def _with_field(sample: Any, key: Any) -> Any:
    """A sample with its image replaced by 0, of the sample's own container type (for
    default_collate to collate the other fields as it would)."""
    if isinstance(sample, Mapping):
        made: Any = type(sample)
        try:
            copy = made(sample)
            copy[key] = 0
            return copy
        except TypeError:
            return {k: 0 if k == key else v for k, v in sample.items()}
    if hasattr(sample, "_fields"):
        return sample._replace(**{sample._fields[key]: 0})
    fields = list(sample)
    fields[key] = 0
    return tuple(fields) if isinstance(sample, tuple) else fields
