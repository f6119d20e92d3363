"""Trace format parsers: bytes in, typed Arrow record batches out. See parsers/common.py for the contract."""

import os

# numpy is used for buffers, never for BLAS: idle BLAS threads spin and steal a core from the parsers.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
