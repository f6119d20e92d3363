"""Builds the native tokenizers: one C extension per trace format, parsers/_<format>.c -> parsers._<format>.

Everything else about the package lives in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
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
setup(ext_modules=extensions)
