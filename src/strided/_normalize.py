"""The image form of a conversion: ``mean``, ``std`` and ``max_value`` (and the rounding that
reproduces torchvision), turned into the engine's affine step.

A user normalising images thinks in ``(x / max_value - mean) / std``; the engine computes
``x * scale + shift`` (two roundings in the compute type) or, for the torchvision-exact form,
``x * scale + shift`` then ``t / divisor`` (three roundings in float32, the order of
torchvision's ``ToDtype(float32, scale=True)`` and ``Normalize``). This module only translates:
it reads the arguments into plain floats once (no caller code runs later) and, once the source
type is known, gives the scale, shift and divisor.

Examples
--------
>>> form = ImageForm.of(mean=(0.5, 0.25), std=0.5, max_value=None, rounding="fused")
>>> form.affine("uint8", "float32")            # scale = 1 / (255 * std), shift = -mean / std
((0.00784313725490196, 0.00784313725490196), (-1.0, -0.5), None)
>>> ImageForm.of(mean=0.5, std=0.25, max_value=None, rounding="torchvision").affine(
...     "uint8", "float32")                    # x * (1 / 255) - mean, then / std
(0.00392156862745098, -0.5, 0.25)
"""

from __future__ import annotations

import math
from typing import Any

from strided import _core, _dtypes

__all__ = ["ROUNDINGS", "ImageForm", "max_value_of"]

ROUNDINGS = ("fused", "torchvision")

# The largest value of each integer type: torchvision's scale for ToDtype(scale=True), and the
# default max_value of an integer source.
_INT_MAX = {"bool": 1, "int8": 127, "uint8": 255, "int16": 32767, "uint16": 65535,
            "int32": 2**31 - 1, "uint32": 2**32 - 1, "int64": 2**63 - 1, "uint64": 2**64 - 1,
            "int4": 7, "uint4": 15}

_Param = float | tuple[float, ...] | None


def max_value_of(src_type: str) -> float:
    """The default ``max_value`` of a source type: the largest value of an integer type (255
    for uint8, as torchvision's ``ToDtype(scale=True)``), 1.0 for a float type."""
    return float(_INT_MAX.get(src_type, 1))


class ImageForm:
    """``mean``, ``std``, ``max_value`` and ``rounding`` of a converting call, read into plain
    values (floats, tuples of floats, a str) when it is made."""

    __slots__ = ("max_value", "mean", "rounding", "std")

    def __init__(self, mean: Any, std: Any, max_value: Any, rounding: Any) -> None:
        self.mean: _Param = _core.load_parameter(mean, "mean")
        self.std: _Param = _core.load_parameter(std, "std")
        self.max_value = _scalar(max_value, "max_value")
        if type(rounding) is not str or rounding not in ROUNDINGS:
            raise ValueError(f"rounding must be one of {', '.join(map(repr, ROUNDINGS))}, "
                             f"got {rounding!r}")
        self.rounding: str = rounding
        std_values = _values(self.std)
        for k, value in enumerate(std_values):
            if value == 0 or not math.isfinite(value):
                where = f"std[{k}]" if isinstance(self.std, tuple) else "std"
                raise ValueError(f"{where} is {value}: a standard deviation is a finite, "
                                 f"non-zero number")
        if (isinstance(self.mean, tuple) and isinstance(self.std, tuple)
                and len(self.mean) != len(self.std)):
            raise ValueError(f"mean has {len(self.mean)} values but std has {len(self.std)}: "
                             f"give one of each per channel")

    @classmethod
    def of(cls, mean: Any, std: Any, max_value: Any, rounding: Any) -> ImageForm | None:
        """The image form of a call's arguments, or None when it uses none of them."""
        if mean is None and std is None and max_value is None and rounding == "fused":
            return None
        return cls(mean, std, max_value, rounding)

    def affine(self, src_type: str, dst_type: str) -> tuple[_Param, _Param, _Param]:
        """(scale, shift, divisor) for the engine, sources of ``src_type`` into ``dst_type``
        (engine type names); divisor is None except in the torchvision form.

        fused: ``scale = 1 / (max_value * std)`` and ``shift = -mean / std``, each computed
        in float64 and rounded once to the compute type by the engine; then ``x * scale +
        shift`` with two roundings. torchvision: ``scale = 1 / max_value`` (integer sources
        only, as ``ToDtype`` scales only those), ``shift = -mean``, ``divisor = std``, all
        rounded to float32, then three float32 roundings, torchvision's.
        """
        if self.rounding == "torchvision":
            return self._torchvision(src_type, dst_type)
        top = self.max_value if self.max_value is not None else max_value_of(src_type)
        mean, std = self.mean, self.std
        if isinstance(mean, tuple) or isinstance(std, tuple):
            n = len(mean) if isinstance(mean, tuple) else len(_values(std))
            means, stds = _channels(mean, n, 0.0), _channels(std, n, 1.0)
            scale: _Param = tuple(1.0 / (top * s) for s in stds)
            shift: _Param = None if mean is None else tuple(
                -m / s for m, s in zip(means, stds))
            return scale, shift, None
        s1 = 1.0 if std is None else float(std)    # (scalars here: tuples returned above)
        scale = None if top == 1.0 and s1 == 1.0 else 1.0 / (top * s1)
        shift = None if mean is None else -float(mean) / s1
        return scale, shift, None

    def _torchvision(self, src_type: str, dst_type: str) -> tuple[_Param, _Param, _Param]:
        if dst_type != "float32":
            raise TypeError(f"rounding='torchvision' reproduces ToDtype(float32, scale=True) "
                            f"+ Normalize, whose result is float32, not {dst_type}")
        carrier = _dtypes.SUB_BYTE[src_type].carrier if src_type in _dtypes.SUB_BYTE else src_type
        if _dtypes.compute_type(carrier) != "float32":
            raise TypeError(f"rounding='torchvision' computes in float32: a {src_type} source "
                            f"would be rounded first (convert it to float32 yourself)")
        if self.max_value is not None:
            scale: _Param = 1.0 / self.max_value
        elif src_type in _INT_MAX:
            scale = 1.0 / _INT_MAX[src_type]    # torchvision's 1.0 / _max_value(dtype)
        else:
            scale = None                        # ToDtype leaves float values as they are
        mean, std = self.mean, self.std
        shift: _Param
        if isinstance(mean, tuple):
            shift = tuple(-m for m in mean)
        elif isinstance(std, tuple):
            # a vector shift (-0.0: not applied, bit for bit) carries the channel strides
            # that the divisor's pass reuses
            shift = (-(float(mean or 0.0)),) * len(std)
        else:
            shift = None if mean is None else -float(mean)
        return scale, shift, std


def _values(value: _Param) -> tuple[float, ...]:
    """A parameter's values: none, one or a vector's."""
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (float(value),)


def _channels(value: _Param, n: int, missing: float) -> tuple[float, ...]:
    """A parameter as ``n`` per-channel values (a missing one is ``missing``)."""
    if value is None:
        return (missing,) * n
    if isinstance(value, tuple):
        return value
    return (float(value),) * n


def _scalar(value: Any, name: str) -> float | None:
    """``max_value``: None or one finite real number > 0, as a float."""
    loaded = _core.load_parameter(value, name)
    if loaded is None:
        return None
    if isinstance(loaded, tuple):
        raise TypeError(f"{name} must be one number (the input scale), got {len(loaded)} values")
    number = float(loaded)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} is {loaded}: the input scale is a finite number > 0")
    return number
