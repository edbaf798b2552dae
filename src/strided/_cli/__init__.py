"""The command line: ``python -m strided explain ...`` and ``python -m strided bench``.

A thin argparse front end (``strided/__main__.py`` only calls :func:`main`): the text comes from
:mod:`strided._cli.explain`, the figures of ``explain --svg FILE`` from :mod:`strided._cli.svg`,
and ``bench``, a self-check of this machine in seconds, from :mod:`strided._cli.selfcheck` (the
full benchmarks are scripts of the repository's ``benchmarks/`` folder, not installed). Bad
arguments, and every ``ValueError``, ``TypeError`` or ``OverflowError`` the library raises for
them, end in one line on stderr (``strided explain: error: ...``) and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import strided

# the one-line-error parser every command uses, the benchmarks' included
from strided._cli._common import OneLineParser as _Parser
from strided._cli.explain import explain, walkthrough
from strided.formats import CANONICAL, BlockedFormat, parse_blocked, strides_agree
from strided.layout import Layout

_VALUE_OPTIONS = frozenset({"--sizes", "--strides", "--itemsize", "--offset", "--bits"})
_FLAG_WORDS = {"0": False, "1": True, "false": False, "true": True, "no": False, "yes": True}

_EXPLAIN_DESCRIPTION = """\
Explain a tensor layout: its strides (in elements and in bytes), the DirectML buffer size
(rounded up to 4 bytes) and the exact one, the flags (packed, contiguous, broadcast, padded,
overlaps), the logical tensor and the memory map as the DirectML documentation draws it: an
offset row and a value row, the elements named A, B, C... in row-major index order, x for
padding, A/D for an offset several elements share.

With --svg FILE, draw the same as an SVG figure instead (the logical tensor, the buffer cells
with their offsets, one colour per channel or row) and print only where it was written; FILE
must end in .svg (any case), as only SVG is written. Blocked
formats (NCHW4, NCHW32, CHWN4, nChw16c, ...) are drawn with --svg only: their buffer is no
strided layout of the logical NCHW tensor.

With no arguments, walk through the examples of the DirectML strides documentation."""

_EXPLAIN_EPILOG = """\
sizes are always in the canonical order of their rank: HW (2-D), DHW (3-D), NCHW (4-D),
NCDHW (5-D); a LABEL lists the same letters from the outermost dimension in memory to the
innermost. A LABEL together with --strides is accepted only when the strides are that label's
packed strides (dims of size 1 excepted); the strides are then used as given.

examples:
  python -m strided explain NHWC --sizes 1,3,2,2 --itemsize 2
  python -m strided explain --sizes 2,3 --strides 5,1
  python -m strided explain NHWC --sizes 2,3,4,5 --broadcast C
  python -m strided explain --sizes 2,3 --strides=-3,1 --offset 3
  python -m strided explain --sizes 2,3 --strides 4,1 --bits 4
  python -m strided explain NHWC --sizes 1,3,2,2 --svg nhwc.svg
  python -m strided explain NCHW4 --sizes 1,6,2,2 --svg nchw4.svg"""


# ---- argument values ------------------------------------------------------------------------


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _integers(text: str, separators: str = ",") -> tuple[int, ...]:
    for sep in separators[1:]:
        text = text.replace(sep, separators[0])
    if not text.strip():
        return ()
    items = text.split(separators[0])
    try:
        return tuple(int(item.strip()) for item in items)
    except ValueError:
        bad = next(item for item in items if not _is_int(item))
        raise argparse.ArgumentTypeError(
            f"{bad.strip()!r} in {text!r} is not an integer (expected comma-separated "
            f"integers such as 2,3)"
        ) from None


def _is_int(text: str) -> bool:
    try:
        int(text.strip())
    except ValueError:
        return False
    return True


def _sizes(text: str) -> tuple[int, ...]:
    return _integers(text, ",x")


def _strides(text: str) -> tuple[int, ...]:
    return _integers(text, ",")


def _broadcast_flags(text: str, ndim: int) -> tuple[bool, ...]:
    """``--broadcast``: comma-separated flags (0/1/true/false) or canonical axis letters."""
    words = [word.strip().lower() for word in text.split(",")]
    if all(word in _FLAG_WORDS for word in words):
        return tuple(_FLAG_WORDS[word] for word in words)
    letters = CANONICAL.get(ndim)
    if letters is None:
        raise ValueError(
            f"--broadcast {text!r}: axis letters name the axes of ranks 2 to 5 only (sizes has "
            f"rank {ndim}); give one flag per axis instead, such as 0,1"
        )
    unknown = sorted(set(text) - set(letters))
    if unknown:
        raise ValueError(
            f"--broadcast {text!r}: {''.join(unknown)!r} is not an axis of rank {ndim} "
            f"({letters!r}); give axis letters such as {letters[1]!r} or one 0/1 flag per axis"
        )
    return tuple(letter in text for letter in letters)


# ---- the parser -----------------------------------------------------------------------------


def _explanation_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "explain",
        prog="strided explain",
        usage="python -m strided explain [LABEL] --sizes N,N,... [options]",
        help="explain a layout (no arguments: the DirectML documentation's examples)",
        description=_EXPLAIN_DESCRIPTION,
        epilog=_EXPLAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "label", nargs="?", metavar="LABEL",
        help="a named layout (NCHW, NHWC, WH, NCDHW, ...), or C (row-major) or F (column-major); "
             "without --strides the strides are its packed strides. With --svg, also a blocked "
             "format (NCHW4, NCHW32, CHWN4, nChw16c, ...) of sizes N,C,H,W",
    )
    parser.add_argument(
        "--sizes", type=_sizes, metavar="N,N,...",
        help="sizes in canonical order, comma-separated (1,3,2,2; 1x3x2x2 also works)",
    )
    parser.add_argument(
        "--strides", type=_strides, metavar="S,S,...",
        help="element strides, comma-separated, negative ones included (default: packed)",
    )
    parser.add_argument("--itemsize", type=_integer, default=1, metavar="N",
                        help="bytes per element (default: 1)")
    parser.add_argument("--bits", type=_integer, default=None, metavar="4",
                        help="4 for 4-bit elements (int4, uint4), two per byte, low nibble "
                             "first: the memory map shows bytes (default: 8 * itemsize)")
    parser.add_argument(
        "--broadcast", metavar="AXES",
        help="broadcast axes of the packed strides (DirectML CalculateStrides): canonical "
             "letters such as C or HW (ranks 2-5), or one flag per axis such as 0,1,0,0",
    )
    parser.add_argument("--offset", type=_integer, default=0, metavar="N",
                        help="element offset of index (0, ..., 0) (default: 0)")
    parser.add_argument(
        "--svg", metavar="FILE",
        help="draw the layout as an SVG figure into FILE (a name ending in .svg) instead of "
             "printing the text; blocked formats too",
    )
    return parser


def _build_parser() -> tuple[_Parser, argparse.ArgumentParser]:
    parser = _Parser(
        prog="strided",
        usage="python -m strided [-h] [--version] {explain,bench} ...",
        description="strided: exact tensor memory layouts. With no command, runs explain.",
    )
    parser.add_argument("--version", action="version", version=f"strided {strided.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="{explain,bench}",
                                       parser_class=_Parser)
    explain_parser = _explanation_parser(subparsers)
    subparsers.add_parser(
        "bench", add_help=False,
        help="a self-check of this machine, in seconds: strided.copyto against np.copyto "
             "and a memcpy of the same bytes (python -m strided bench --help)",
    )
    return parser, explain_parser


# ---- the commands ---------------------------------------------------------------------------


def _layout_from(args: argparse.Namespace) -> Layout:
    """The Layout the explain arguments describe; library errors propagate."""
    sizes = args.sizes
    broadcast = None if args.broadcast is None else _broadcast_flags(args.broadcast, len(sizes))
    if args.strides is None:
        strides = strided.packed_strides(sizes, args.label, broadcast=broadcast)
    else:
        strides = args.strides
        if args.label is not None:
            _check_label_agrees(sizes, strides, args.label, broadcast)
        elif broadcast is not None:
            raise ValueError("--broadcast describes packed strides: with --strides, give the "
                             "broadcast axes a stride of 0 instead")
    return Layout(sizes, strides, offset=args.offset, itemsize=args.itemsize, bits=args.bits)


def _check_label_agrees(sizes: tuple[int, ...], strides: tuple[int, ...], label: str,
                        broadcast: tuple[bool, ...] | None) -> None:
    packed = strided.packed_strides(sizes, label, broadcast=broadcast)
    if strides_agree(sizes, strides, packed):
        return
    raise ValueError(
        f"LABEL {label!r} and --strides disagree: the packed {label} strides of sizes "
        f"{tuple(sizes)} are {packed}, --strides gave {tuple(strides)}; give one or the other"
    )


def _title(args: argparse.Namespace, layout: Layout) -> str | None:
    if args.label is None:
        return None
    broadcast = f", broadcast {args.broadcast}" if args.broadcast is not None else ""
    return f"{args.label}, sizes {layout.sizes}{broadcast}"


def _blocked_format(label: str | None) -> BlockedFormat | None:
    """The blocked format a LABEL names (NCHW4, CHWN4, nChw16c, ...), or None."""
    if label is None:
        return None
    try:
        return parse_blocked(label)
    except ValueError:
        return None


def _blocked_figure(args: argparse.Namespace, fmt: BlockedFormat) -> str:
    """``explain NCHW4 --sizes ... --svg FILE``: the figure of a blocked format."""
    from strided._cli.svg import blocked_svg

    if args.svg is None:
        raise ValueError(
            f"LABEL {args.label!r} is a blocked format, which the text explanation cannot show "
            f"(its buffer is no strided layout of the logical NCHW tensor): draw it with "
            f"--svg FILE"
        )
    if args.bits is not None and args.bits < 8:
        raise ValueError(f"LABEL {args.label!r} is a blocked format: its figure is drawn for "
                         f"byte-sized elements only; draw the 4-bit physical layout with "
                         f"--sizes {','.join(map(str, Layout.blocked(args.sizes, fmt).sizes))} "
                         f"--bits {args.bits}")
    if args.strides is not None or args.broadcast is not None or args.offset:
        raise ValueError(f"LABEL {args.label!r} is a blocked format, always packed: --strides, "
                         f"--broadcast and --offset do not apply to it")
    title = f"{args.label}, logical sizes (N, C, H, W) = {tuple(args.sizes)}"
    return blocked_svg(args.sizes, fmt, itemsize=args.itemsize, title=title)


def _layout_figure(args: argparse.Namespace) -> str:
    from strided._cli.svg import layout_svg

    layout = _layout_from(args)
    return layout_svg(layout, title=_title(args, layout))


def _write_figure(path: str, svg: str, parser: argparse.ArgumentParser) -> None:
    # bytes, not text: the same figure is the same file on every platform (no \r\n)
    try:
        with open(path, "wb") as file:
            file.write(svg.encode("utf-8"))
    except OSError as exc:
        parser.error(f"--svg {path!r}: cannot write the figure: {exc.strerror or exc}")


def _check_svg_path(path: str | None, parser: argparse.ArgumentParser) -> None:
    """Refuse (``parser.error``) an ``--svg`` FILE whose suffix is not ``.svg``, in any case.

    The figure is SVG text and nothing else: a name such as ``a.png`` or ``a.pdf`` would hold SVG
    under a name that promises another format, so it is refused before anything is computed or
    written.
    """
    if path is not None and os.path.splitext(path)[1].lower() != ".svg":
        parser.error(f"--svg {path!r}: the figure is written as SVG only; give a FILE whose "
                     f"name ends in .svg")


def _print_explanation(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    _check_svg_path(args.svg, parser)
    given = [args.label, args.strides, args.broadcast, args.svg]
    if args.sizes is None:
        if (any(value is not None for value in given) or args.itemsize != 1 or args.offset
                or args.bits is not None):
            parser.error("--sizes is required to explain a layout")
        print(walkthrough())
        return 0
    blocked = _blocked_format(args.label)
    try:
        if blocked is not None:
            figure = _blocked_figure(args, blocked)
        elif args.svg is not None:
            figure = _layout_figure(args)
        else:
            layout = _layout_from(args)
            print(explain(layout, title=_title(args, layout)))
            return 0
    except (ValueError, TypeError, OverflowError) as exc:
        parser.error(str(exc))
    _write_figure(args.svg, figure, parser)
    print(f"wrote {args.svg}")
    return 0


def _attach_negative_values(argv: list[str]) -> list[str]:
    """Write ``--strides -3,1`` as ``--strides=-3,1``: argparse takes ``-3,1`` for an option."""
    joined: list[str] = []
    values = iter(argv)
    for arg in values:
        if arg in _VALUE_OPTIONS:
            value = next(values, None)
            if value is not None and value[:1] == "-" and value[1:2].isdigit():
                joined.append(f"{arg}={value}")
                continue
            joined.append(arg)
            if value is not None:
                joined.append(value)
            continue
        joined.append(arg)
    return joined


def _run_self_check(argv: list[str]) -> int:
    """``bench ...``: the self-check of this machine (:mod:`strided._cli.selfcheck`)."""
    from strided._cli import selfcheck

    try:
        return selfcheck.main(argv, prog="python -m strided bench")
    except SystemExit as exc:  # argparse's --help and errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``python -m strided``.

    Returns
    -------
    int
        0 on success, 2 for bad arguments (the message is one line on stderr).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args_list)
    except BrokenPipeError:
        # The reader of our output went away (`python -m strided explain | head`): stop quietly,
        # as cat does. stdout goes to /dev/null so that Python's flush at exit cannot raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1


def _dispatch(args_list: list[str]) -> int:
    """``main`` after reading argv: the self-check, or an explanation."""
    if args_list[:1] == ["bench"]:
        return _run_self_check(args_list[1:])
    parser, explain_parser = _build_parser()
    try:
        args, extra = parser.parse_known_args(_attach_negative_values(args_list))
        if extra:
            (explain_parser if args.command == "explain" else parser).error(
                f"unrecognized arguments: {' '.join(extra)}")
        if args.command is None:
            args = explain_parser.parse_args([])
        return _print_explanation(args, explain_parser)
    except SystemExit as exc:  # argparse's --help, --version and errors
        return exc.code if isinstance(exc.code, int) else 2
