"""An upload's multipart/form-data body read as it comes: each file part is handed to the ingest as soon as its
headers are in (arrivals.Arrivals), and its bytes as they arrive (arrivals.StreamedInput), so the ingest parses while
the body is still being received. python-multipart's low-level parser finds the parts.

A file comes whole or in pieces:

* a part named `files` (with a filename) is a whole file, parsed as it arrives;
* parts named `chunk` (PIECE_FIELD) with the same filename are the pieces of one file, in order: its first `chunk`
  begins it, each next one appends to it. The pieces of several files may be interleaved (the browser sends a
  blktrace per-CPU set so: 4 MiB of each member in turn, frontend/src/api/upload.ts), but every file sent in pieces
  must begin (its first piece) before any of them has a second piece: then the server knows a set's members and
  parses it while the rest arrives (arrivals.PIECES_BEGUN). A file sent in pieces ends at the first part that is not
  a `chunk` (a `files` part, the `name` field) or at the body's closing boundary; it is kept on disk as it comes
  (ingest/pieces.py: the writes never wait for the ingest, which may be waiting for another member), counted
  against the server's spool limit (`spool`). Its format is told from its first 64 KiB, or its first piece if that
  is shorter (the browser's pieces are 4 MiB).

Refused (400): a `chunk` part without a filename; a first piece of a file after the pieces of others continued or
ended; a piece of a file after it ended; a `chunk` of a filename already sent whole.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Callable

from python_multipart.multipart import MultipartParser, parse_options_header

from ..ingest import InputFile
from ..ingest.arrivals import Arrivals, StreamedInput
from ..ingest.pieces import PiecedInput

FIELD_BYTES = 4096  # of a field that is not a file (the name): the rest is dropped
FILE_FIELD = b"files"  # a whole file
PIECE_FIELD = b"chunk"  # a piece of a file: more of it may follow


class MalformedBody(Exception):
    """The body is not multipart/form-data, or breaks its rules (answered 400)."""


async def read_parts(
    body: AsyncIterator[bytes],
    content_type: str | None,
    arrivals: Arrivals,
    max_files: int,
    max_fields: int,
    spool: Callable[[int], None] | None = None,
) -> None:
    """Reads the multipart body `body` to its end (a body of another type has no parts), adding each file (a part named
    `files` with a filename, or the first `chunk` of one) to `arrivals` as it begins and writing its bytes as they
    come; the field `name` becomes arrivals.name. Parts of other names are read and dropped. `spool(n)` is told of
    each n bytes of pieces kept on disk (it may refuse by raising). Raises MalformedBody; whatever is raised (here, by
    `spool` or by `body`), the caller aborts the arrivals."""
    kind, params = parse_options_header(content_type or "")
    boundary = params.get(b"boundary")
    if kind != b"multipart/form-data":  # no file in it (the ingest says so)
        async for _ in body:
            pass
        return
    if not boundary:
        raise MalformedBody("the body is multipart/form-data without a boundary")
    loop = asyncio.get_running_loop()
    events: list[tuple] = []  # what the parser found in the last piece, acted on after it (writes are awaited)
    part = {"headers": [], "field": b"", "value": b""}

    def on_part_begin():
        part.update(headers=[], field=b"", value=b"")

    def on_header_field(data, start, end):
        part["field"] += data[start:end]

    def on_header_value(data, start, end):
        part["value"] += data[start:end]

    def on_header_end():
        part["headers"].append((part["field"].lower(), part["value"]))
        part.update(field=b"", value=b"")

    def on_headers_finished():
        disposition = next((v for k, v in part["headers"] if k == b"content-disposition"), b"")
        _, options = parse_options_header(disposition)
        events.append(("begin", options.get(b"name"), options.get(b"filename")))

    def on_part_data(data, start, end):
        # a view, not a copy: `data` is the body's piece (or the boundary's bytes), immutable, and a piece is ~256 KiB
        events.append(("data", memoryview(data)[start:end]))

    def on_part_end():
        events.append(("end",))

    def on_end():  # the closing boundary (finalize() would call it too: not called)
        events.append(("closed",))

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
            "on_end": on_end,
        },
    )
    files = fields = 0
    stream: StreamedInput | PiecedInput | None = None  # the file part being received
    whole: set[str] = set()  # the filenames of the files sent whole
    pieced: dict[str, PiecedInput] = {}  # the files sent in pieces, by filename
    pieces_may_begin = True  # no file sent in pieces has a second piece yet, and no other part came after pieces

    def pieces_begun() -> None:
        nonlocal pieces_may_begin
        if pieced and pieces_may_begin:
            pieces_may_begin = False
            arrivals.pieces_begun()

    def end_pieces() -> None:
        pieces_begun()
        for pieced_file in pieced.values():
            pieced_file.end()

    field: bytearray | None = None  # the field part being received
    field_name = b""
    ended = False
    async for piece in body:
        try:
            parser.write(piece)
        except Exception as e:  # python-multipart's errors: a body that breaks multipart's rules
            raise MalformedBody(f"the body is not valid multipart/form-data: {e}") from None
        for event in events:
            if event[0] == "data":
                if stream is not None:
                    await stream.write(event[1])
                elif field is not None and len(field) < FIELD_BYTES:
                    field += event[1][: FIELD_BYTES - len(field)]
            elif event[0] == "begin":
                _, name, filename = event
                if name is None:
                    raise MalformedBody('a part has no Content-Disposition "name"')
                if name == PIECE_FIELD:
                    if filename is None:
                        raise MalformedBody(
                            f'a part named "{PIECE_FIELD.decode()}" (a piece of a file) has no filename'
                        )
                    filename = (filename.decode("utf-8", "replace") or "upload")[:255]
                    stream = pieced.get(filename)
                    field = None
                    if stream is None:
                        if filename in whole:
                            raise MalformedBody(f"a piece of {filename!r}, a file already sent whole")
                        if not pieces_may_begin:
                            raise MalformedBody(
                                f"the first piece of {filename!r} came after the pieces of other files continued"
                                " or ended: send the first piece of every file sent in pieces, then the rest"
                            )
                        files += 1
                        if files > max_files:
                            raise MalformedBody(f"more than {max_files} files in one upload")
                        stream = pieced[filename] = PiecedInput(spool)
                        arrivals.add(InputFile(filename=filename, stream=stream))
                    elif stream.ended:
                        raise MalformedBody(
                            f"a piece of {filename!r} after its file ended (a part that is not a piece came between)"
                        )
                    else:
                        pieces_begun()  # a second piece: every file sent in pieces has begun
                    stream.next_piece()
                    continue
                end_pieces()  # a part that is not a piece: the files sent in pieces are complete
                if filename is not None:
                    files += 1
                    if files > max_files:
                        raise MalformedBody(f"more than {max_files} files in one upload")
                    if name == FILE_FIELD:
                        stream = StreamedInput(loop)
                        filename = (filename.decode("utf-8", "replace") or "upload")[:255]
                        whole.add(filename)
                        arrivals.add(InputFile(filename=filename, stream=stream))
                    else:
                        stream = None
                        field = None
                else:
                    fields += 1
                    if fields > max_fields:
                        raise MalformedBody(f"more than {max_fields} fields in one upload")
                    field, field_name = bytearray(), name
            elif event[0] == "end":
                if isinstance(stream, StreamedInput):
                    stream.end()
                elif isinstance(stream, PiecedInput):  # its file goes on in its next piece, or ends later
                    stream.piece_ended()
                elif field is not None and field_name == b"name":
                    text = field.decode("utf-8", "replace").strip()
                    arrivals.name = text[:200] or None
                stream = field = None
            elif event[0] == "closed":
                end_pieces()
                ended = True
        events.clear()
    if not ended:
        raise MalformedBody("the body ended before its closing boundary")
