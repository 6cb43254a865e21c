"""A report's rows a page at a time: the first page decoded at once, the rest later.

Decoding all of a 100k-row report's rows takes ~0.3 s here; splitting the file into rows
without decoding them, a fifth of that. So a reopened report shows its first page (cut
out of the file by :func:`first_page_of`) while :class:`PendingRows` hands out the rest
to decode, a part at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

import msgspec

from torchscan_tui.formats.jsonio import decode_json
from torchscan_tui.formats.report_schema import accept_rows

# Scan without building: each top-level value, then each row, as its JSON text.
_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
ROW_TEXTS = msgspec.json.Decoder(list[msgspec.Raw])


def _json_list(data: bytes) -> list:
    """A JSON array's values (ValueError for anything else)."""
    values = decode_json(data)
    if not isinstance(values, list):
        raise ValueError("not a JSON array")
    return values


PART_ROWS = 1000  # rows per part a reopened report's undecoded rows are handed out in


def _json_array(texts: list) -> bytes:
    """The JSON array of these JSON texts (bytes-like), without decoding them."""
    return b"[" + b",".join(texts) + b"]"


class LaterBytes(Protocol):
    """A JSON array's bytes read when first asked for (a file's span held open): whole,
    or as parts of its rows a piece at a time; or let go unread."""

    def read(self) -> bytes: ...

    def parts(self, size: int, skip: int) -> Iterator[tuple[bytes, int]]: ...

    def close(self) -> None: ...


class PendingRows:
    """Rows of a report not decoded yet, as JSON arrays of ``PART_ROWS`` rows, and how
    many rows come before them (``offset``: the first page's, for the rows' numbers).

    Decoding all of a 100k-row report's rows takes ~0.3 s here; splitting the file into
    rows without decoding them, a fifth of that. So a reopened report shows its first
    page while the rest decode, a part at a time (:meth:`split`, :meth:`decode`). The
    rest may come as one array (a report written a row per line, cut after its first
    page), split into rows only when first asked, or as the rows' texts (views of the
    file's bytes). Either way, parts are copied out only as they are handed out, after
    the first page is painted; the file's bytes go with the last copy, and each part once
    decoded: memory holds the file and its rows together only briefly.
    """

    def __init__(
        self,
        parts: list[tuple[bytes, int]] | None = None,
        offset: int = 0,
        texts: list | None = None,
        size: int = PART_ROWS,
        array: bytes | memoryview | LaterBytes | None = None,
        skip: int = 0,
    ):
        self._parts = parts or []
        self._texts = texts or []
        # A file's span (read when first asked) apart from bytes in memory.
        self._later: LaterBytes | None = None
        if array is not None and not isinstance(array, (bytes, memoryview)):
            array, self._later = None, array
        self._array: bytes | memoryview | None = array
        self._skip = skip
        self._size = size
        self._offset = offset

    @classmethod
    def of_texts(cls, texts: list, offset: int, size: int = PART_ROWS) -> PendingRows:
        """From the rows' JSON texts (bytes-like), to go out in parts of ``size`` rows."""
        return cls(offset=offset, texts=texts, size=size)

    @classmethod
    def of_array(
        cls, array: bytes | memoryview | LaterBytes, skip: int = 0, size: int = PART_ROWS
    ) -> PendingRows:
        """The rows of a JSON array (bytes-like, or read when first asked) but its first
        ``skip``, split into rows only when first asked (their number, their parts): the
        read and the split scan every row, which the first page need not wait for."""
        return cls(offset=skip, size=size, array=array, skip=skip)

    def _split_array(self) -> None:
        later, self._later = self._later, None
        if later is not None:
            self._array = later.read()
        if self._array is not None:
            self._texts = ROW_TEXTS.decode(self._array)[self._skip :]
            self._array = None

    def close(self) -> None:
        """Let go of rows never asked for (a file held open for them is closed)."""
        later, self._later = self._later, None
        if later is not None:
            later.close()

    def __len__(self) -> int:
        self._split_array()
        return sum(rows for _, rows in self._parts) + len(self._texts)

    def _take_parts(self) -> Iterator[tuple[bytes, int]]:
        """Every part, in order, each text copied into one as it is reached; once only.
        A file's span is read a piece at a time as its parts are taken, never whole."""
        later, self._later = self._later, None
        if later is not None:
            yield from later.parts(self._size, self._skip)
            return
        self._split_array()
        parts, self._parts = self._parts, []
        texts, self._texts = self._texts, []
        yield from parts
        for start in range(0, len(texts), self._size):
            chunk = texts[start : start + self._size]
            yield _json_array(chunk), len(chunk)

    def split(self) -> Iterator[PendingRows]:
        """One part each, in order, its rows numbered after the parts before; handed
        out once."""
        offset = self._offset
        for part in self._take_parts():
            yield PendingRows([part], offset)
            offset += part[1]

    def decode(self) -> list[dict]:
        """The rows, decoded; once only.

        Raises ValueError naming the first row and field of the wrong type.
        """
        rows = [row for text, _ in self._take_parts() for row in _json_list(text)]
        accept_rows(rows, offset=self._offset)
        self._offset += len(rows)
        return rows


_LINE_BREAK = re.compile(b"\n")  # re searches a memoryview in place: no copy of the rows


def _rows_by_line(array: memoryview, rows: int) -> list | None:
    """The first ``rows`` rows of a JSON array written a row per line (as
    :func:`dumps_report` does), found by line breaks alone; None for any other layout.

    The lines taken must decode to as many rows: a row per line. They are the array's
    first rows whatever follows, as a line break can only fall between JSON tokens.
    """
    if array[:5] != b"[\n  {":
        return None
    cut, taken = 1, 0  # cut: the line break after the last row taken
    while taken < rows:
        line_break = _LINE_BREAK.search(array, cut + 1)
        if line_break is None:  # the last line, " ]": no more rows
            break
        cut, taken = line_break.start(), taken + 1
    try:
        page = decode_json(b"[" + bytes(array[1:cut]).rstrip(b",") + b"]")
    except ValueError:
        return None
    return page if isinstance(page, list) and len(page) == taken else None


_ROWS_KEY = b'\n "operators": '
_ROWS_END = b'\n ],\n "context": '  # how report.dumps_report closes the rows
_HEADER_LIMIT = 4096  # the keys before the rows: a few lines


def _rows_span(head: bytes, tail: bytes, tail_offset: int = 0) -> tuple[dict, int, int] | None:
    """For a report laid out as :func:`dumps_report` writes it: the document with an
    empty rows list, and where the rows' JSON array starts and ends in the file, not
    scanned. ``head`` is the file's start, ``tail`` its end from ``tail_offset`` on (both
    the whole file, when it is in memory). None for any other layout.

    Top-level keys are the only lines indented by one space (nested ones have more, rows
    start with two, and no JSON string holds a line break), so the rows' key is found in
    the first lines and their end from the file's end: the few lines around the rows are
    all that is decoded, not 20 MiB of rows (~40 ms here before the first frame).
    """
    start = head.find(_ROWS_KEY, 0, _HEADER_LIMIT)
    end = tail.rfind(_ROWS_END)
    if start < 0 or end < 0 or tail_offset + end < start:
        return None
    array_start, after_array = start + len(_ROWS_KEY), end + len(b"\n ]")
    try:
        document = decode_json(head[:array_start] + b"[]" + tail[after_array:])
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("operators") != []:
        return None
    return document, array_start, tail_offset + after_array


def _located_rows(data: bytes) -> tuple[dict, memoryview] | None:
    """The document with an empty rows list and the rows' array in place (see
    :func:`_rows_span`); None for any other layout."""
    span = _rows_span(data, data)
    if span is None:
        return None
    document, start, end = span
    return document, memoryview(data)[start:end]


def first_page_of_ends(
    head: bytes, tail: bytes, tail_offset: int, rows: int
) -> tuple[dict, int, int] | None:
    """From a report file's first and last bytes (see :mod:`report_head`): the document
    with the first rows of up to ``rows`` that lie whole in ``head``, and where the rows'
    array starts and ends in the file. None for another layout, or no whole row."""
    span = _rows_span(head, tail, tail_offset)
    if span is None:
        return None
    document, start, end = span
    page = _rows_by_line(memoryview(head)[start:], rows)
    if not page:
        return None
    document["operators"] = page
    return document, start, end


def first_page_of(data: bytes, rows: int) -> tuple[dict, PendingRows] | None:
    """The document with only its first ``rows`` rows decoded, or None when the file
    is not an object whose operators are a list (the full decode then says what it is).

    A report as we write it (a row per line) is cut in place: the lines around the rows
    are decoded, the first rows are cut by their line breaks, and the other rows are
    split (and so scanned as JSON) only after the first page shows
    (:meth:`PendingRows.of_array`): no scan and no copy of them before it. Rows damaged
    past the first page are then found by that split, which says so (see
    :class:`~torchscan_tui.run.sources.ReportSource`). A file laid out otherwise is scanned
    whole first, so damage is refused here. Rows not a line each are split at once.
    """
    try:
        located = _located_rows(data)
        if located is not None:
            document, operators = located
        else:
            top = _TOP_LEVEL.decode(data)
            operators = memoryview(top["operators"])
            document = {  # the rows keep their place among the keys, decoded below
                key: None if key == "operators" else decode_json(value)
                for key, value in top.items()
            }
        page = _rows_by_line(operators, rows)
        if page is None:
            texts = ROW_TEXTS.decode(operators)
            page = _json_list(_json_array(texts[:rows]))
            pending = PendingRows.of_texts(texts[rows:], offset=len(page))
        else:
            pending = PendingRows.of_array(operators, skip=len(page))
    except (ValueError, KeyError):
        return None
    document["operators"] = page
    return document, pending
