"""An upload's multipart/form-data body read as it comes: each file part is handed to the ingest as soon as its
headers are in (arrivals.Arrivals), and its bytes as they arrive (arrivals.StreamedInput), so the ingest parses while
the body is still being received. Nothing is spooled here; python-multipart's low-level parser finds the parts."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

from python_multipart.multipart import MultipartParser, parse_options_header

from ..ingest import InputFile
from ..ingest.arrivals import Arrivals, StreamedInput

FIELD_BYTES = 4096  # of a field that is not a file (the name): the rest is dropped


class MalformedBody(Exception):
    """The body is not multipart/form-data, or breaks its rules (answered 400)."""


async def read_parts(
    body: AsyncIterator[bytes], content_type: str | None, arrivals: Arrivals, max_files: int, max_fields: int
) -> None:
    """Reads the multipart body `body` to its end (a body of another type has no parts), adding each part named `files` with a filename to `arrivals` as
    it begins and writing its bytes as they come; the field `name` becomes arrivals.name. Parts of other names are
    read and dropped. Raises MalformedBody; whatever is raised (here or by `body`), the caller aborts the arrivals."""
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
    stream: StreamedInput | None = None  # the file part being received
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
                if filename is not None:
                    files += 1
                    if files > max_files:
                        raise MalformedBody(f"more than {max_files} files in one upload")
                    if name == b"files":
                        stream = StreamedInput(loop)
                        filename = filename.decode("utf-8", "replace")
                        arrivals.add(InputFile(filename=(filename or "upload")[:255], stream=stream))
                    else:
                        stream = None
                        field = None
                else:
                    fields += 1
                    if fields > max_fields:
                        raise MalformedBody(f"more than {max_fields} fields in one upload")
                    field, field_name = bytearray(), name
            elif event[0] == "end":
                if stream is not None:
                    stream.end()
                elif field is not None and field_name == b"name":
                    text = field.decode("utf-8", "replace").strip()
                    arrivals.name = text[:200] or None
                stream = field = None
            elif event[0] == "closed":
                ended = True
        events.clear()
    if not ended:
        raise MalformedBody("the body ended before its closing boundary")
