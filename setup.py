"""Builds the native tokenizers: one C extension per trace format, parsers/_<format>.c -> parsers._<format>; and the
trace.dat decoder program parsers/tracedat_records.c -> parsers/tracedat-records, linked against libtracecmd and
libtraceevent (Debian: libtracecmd-dev, libtracefs-dev, libtraceevent-dev; `make` installs them). Without them the program is not
built and a trace.dat is read from `trace-cmd report`'s text (parsers/tracedat.py).

Everything else about the package lives in pyproject.toml.
"""

import shlex
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
DECODER = HERE / "parsers" / "tracedat_records.c"
DECODER_LIBS = ["libtracecmd", "libtraceevent"]
extensions = [
    Extension(
        f"parsers.{src.stem}",
        [str(src.relative_to(HERE))],
        depends=[str(h.relative_to(HERE)) for h in sorted((HERE / "parsers").glob("_*.h"))],
        extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-pthread"],
        extra_link_args=["-pthread"],
    )
    for src in sorted((HERE / "parsers").glob("_*.c"))
]


def build_decoder(compiler: list[str]) -> None:
    """parsers/tracedat-records, next to the extensions (an editable install runs it from the checkout)."""
    out = DECODER.with_name("tracedat-records")
    try:
        flags = subprocess.run(
            ["pkg-config", "--cflags", "--libs", *DECODER_LIBS], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        print(f"warning: {' and '.join(DECODER_LIBS)} not found (pkg-config): {out.name} not built")
        out.unlink(missing_ok=True)
        return
    args = [*compiler, "-O2", "-std=c11", "-Wall", "-Wextra", "-o", str(out), str(DECODER), *shlex.split(flags)]
    subprocess.run(args, check=True)


class BuildWithDecoder(build_ext):
    def run(self):
        super().run()
        build_decoder(self.compiler.compiler_so[:1] if self.compiler else ["cc"])


setup(ext_modules=extensions, cmdclass={"build_ext": BuildWithDecoder})
