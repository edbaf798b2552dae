"""The element types strided converts between, in one table, and numpy's casting rules on them.

Everything that names an element type reads it from here: the conversion engine (which gets
the *codes*, indices into :data:`TYPE_NAMES`, the order of the kernels' ``ST_BOOL ..
ST_C128`` enum in ``_kernels/types.h``), the adapters (numpy, torch, DLPack) and the command
line. Pure Python, and no engine's: a name rule is not a kernel's business.

>>> from strided._dtypes import CODES, ITEMSIZES, can_cast, compute_type
>>> CODES["float32"], ITEMSIZES["bfloat16"]
(11, 2)
>>> can_cast("int16", "float32", "safe"), can_cast("float32", "int32", "same_kind")
(True, False)
>>> compute_type("uint8"), compute_type("int64")
('float32', 'float64')
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CASTINGS", "CODES", "DLPACK_TYPES", "ITEMSIZES", "SUB_BYTE", "TYPES", "TYPE_NAMES",
           "ElementType", "SubByteType", "can_cast", "check_pair", "compute_type", "sub_byte",
           "type_code"]


class ElementType(NamedTuple):
    """One element type: its name (numpy's and torch's), engine code, size, kind and DLPack
    ``(code, bits, lanes)``."""

    name: str
    code: int
    itemsize: int
    kind: str            # numpy's kind letter: "b", "i", "u", "f" or "c"
    dlpack: tuple[int, int, int]


def _table() -> tuple[ElementType, ...]:
    # (name, itemsize, kind, DLPack type code), in the engine's code order (_kernels/types.h)
    rows = [("bool", 1, "b", 6),
            ("int8", 1, "i", 0), ("int16", 2, "i", 0), ("int32", 4, "i", 0), ("int64", 8, "i", 0),
            ("uint8", 1, "u", 1), ("uint16", 2, "u", 1), ("uint32", 4, "u", 1),
            ("uint64", 8, "u", 1),
            ("float16", 2, "f", 2), ("bfloat16", 2, "f", 4), ("float32", 4, "f", 2),
            ("float64", 8, "f", 2), ("complex64", 8, "c", 5), ("complex128", 16, "c", 5)]
    return tuple(ElementType(name, code, size, kind, (dl, 8 * size, 1))
                 for code, (name, size, kind, dl) in enumerate(rows))


TYPES: tuple[ElementType, ...] = _table()
"""Every element type, by engine code."""

TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in TYPES)
"""The element types' names (numpy's and torch's), by engine code."""

CODES: dict[str, int] = {t.name: t.code for t in TYPES}
"""Engine code of each type name."""

ITEMSIZES: dict[str, int] = {t.name: t.itemsize for t in TYPES}
"""Bytes of an element of each type."""

DLPACK_TYPES: dict[str, tuple[int, int, int]] = {t.name: t.dlpack for t in TYPES}
"""DLPack's ``(code, bits, lanes)`` of each type."""



class SubByteType(NamedTuple):
    """An element narrower than a byte (``int4``, ``uint4``): two per byte, element 2k in bits
    0-3 of byte k and element 2k+1 in bits 4-7 (low nibble first, as MegEngine, CUTLASS,
    oneDNN, ONNX and DLPack store them).

    The engine never sees a sub-byte code: it moves such elements through bytes of their
    *carrier* (``int8`` for int4, ``uint8`` for uint4: one value per byte, sign- or
    zero-extended) and packs or unpacks the nibbles on the way.
    """

    name: str
    bits: int
    carrier: str          # the byte type holding one value (sign-extended for int4)
    lo: int               # the smallest and largest value
    hi: int
    dlpack: tuple[int, int, int]


SUB_BYTE: dict[str, SubByteType] = {
    "int4": SubByteType("int4", 4, "int8", -8, 7, (0, 4, 1)),
    "uint4": SubByteType("uint4", 4, "uint8", 0, 15, (1, 4, 1)),
}
"""The sub-byte element types, by name."""


def sub_byte(name: object, what: str) -> SubByteType:
    """The sub-byte type of a name (``"int4"``, ``"uint4"``, or an ml_dtypes / numpy dtype
    whose name is one of them); TypeError naming ``what`` for anything else."""
    key = getattr(name, "name", name)
    if isinstance(key, str) and key in SUB_BYTE:
        return SUB_BYTE[key]
    raise TypeError(f"{what} must be one of {', '.join(SUB_BYTE)}; got {name!r}")

CASTINGS: tuple[str, ...] = ("no", "equiv", "safe", "same_kind", "unsafe")
"""numpy's casting rules, from the strictest."""

_COMPLEX = frozenset(t.name for t in TYPES if t.kind == "c")
# The affine step runs in numpy's result_type(src, float32): float64 for these sources
_WIDE_SOURCES = frozenset({"int32", "int64", "uint32", "uint64", "float64"})
# kind order of numpy's same_kind rule: a cast may go up this order (uint -> int too), not down
_KIND_ORDER = {"b": 0, "u": 1, "i": 2, "f": 3, "c": 4}


def type_code(name: object, what: str) -> int:
    """The engine code of a type name; TypeError naming ``what`` for anything else."""
    if not isinstance(name, str) or name not in CODES:
        raise TypeError(f"{what} must be one of {', '.join(TYPE_NAMES)}; got {name!r}")
    return CODES[name]


def compute_type(src_type: str) -> str:
    """The compute type of the affine step for a source type: ``"float32"`` or ``"float64"``
    (numpy's ``result_type(src, float32)``)."""
    type_code(src_type, "src_type")
    return "float64" if src_type in _WIDE_SOURCES else "float32"


# (dst, src, affine) of pairs check_pair accepted: every converting call asks
_PAIRS: set[tuple[object, object, bool]] = set()


def check_pair(dst_type: str, src_type: str, affine: bool = False) -> None:
    """Raise TypeError when the engine does not convert ``src_type`` to ``dst_type`` (with the
    affine step when ``affine``); return None otherwise."""
    key = (dst_type, src_type, bool(affine))
    if type(dst_type) is str and type(src_type) is str and key in _PAIRS:
        return
    type_code(dst_type, "dst_type")
    type_code(src_type, "src_type")
    if src_type in _COMPLEX and dst_type not in _COMPLEX:
        raise TypeError(f"cannot convert {src_type} to {dst_type}: strided does not discard "
                        f"imaginary parts (take .real first)")
    if affine and (src_type in _COMPLEX or dst_type in _COMPLEX):
        raise TypeError(f"scale/shift are not supported for complex values ({src_type} -> "
                        f"{dst_type})")
    if affine and dst_type == "bool":
        raise TypeError(f"scale/shift cannot produce a bool destination ({src_type} -> bool): "
                        f"compare the values instead")
    _PAIRS.add(key)


# (src, dst, casting) -> can_cast's answer: every converting call asks (a few us of string
# rules each time); at most 15 x 15 x 5 entries, each written once with the same value
_CAN_CAST: dict[tuple[str, str, str], bool] = {}


def can_cast(src_type: str, dst_type: str, casting: str) -> bool:
    """Whether numpy's ``can_cast(src, dst, casting)`` allows the cast, on these type names.

    bfloat16 (which numpy itself does not have) is safe from bool, int8 and uint8 and to
    float32, float64 and the complex types, as ml_dtypes registers it; among the floats it is
    same_kind both ways (torch's rule; ml_dtypes refuses bfloat16 -> float16 as same_kind).
    """
    if type(src_type) is str and type(dst_type) is str and type(casting) is str:
        answer = _CAN_CAST.get((src_type, dst_type, casting))
        if answer is not None:
            return answer
    answer = _can_cast(src_type, dst_type, casting)
    _CAN_CAST[(src_type, dst_type, casting)] = answer
    return answer


def _can_cast(src_type: str, dst_type: str, casting: str) -> bool:
    type_code(src_type, "src_type")
    type_code(dst_type, "dst_type")
    if casting not in CASTINGS:
        raise ValueError(f"casting must be one of {', '.join(map(repr, CASTINGS))}, got "
                         f"{casting!r}")
    if casting in ("no", "equiv"):
        return src_type == dst_type
    if casting == "unsafe" or _safe(src_type, dst_type):
        return True
    if casting == "safe":
        return False
    return _KIND_ORDER[_kind_bits(src_type)[0]] <= _KIND_ORDER[_kind_bits(dst_type)[0]]


def _kind_bits(name: str) -> tuple[str, int]:
    t = TYPES[CODES[name]]
    return t.kind, 8 * t.itemsize


def _float_bits_for(bits: int) -> int:
    """The narrowest float that holds every integer of `bits` bits (numpy's safe rule)."""
    return 16 if bits <= 8 else 32 if bits <= 16 else 64


def _safe(src: str, dst: str) -> bool:
    sk, sb = _kind_bits(src)
    dk, db = _kind_bits(dst)
    if src == dst or sk == "b":
        return True
    if dk == "b":
        return False
    if sk in "ui" and dk in "ui":
        return db >= sb if sk == dk else sk == "u" and db > sb
    if sk in "ui" and dk == "f":
        return db >= _float_bits_for(sb) and not (dst == "float16" and sb > 8)
    if sk in "ui" and dk == "c":
        return db // 2 >= _float_bits_for(sb) and db // 2 >= 32
    if sk == "f" and dk == "f":
        return db > sb
    if sk == "f" and dk == "c":
        return db // 2 >= sb
    if sk == "c" and dk == "c":
        return db >= sb
    return False
