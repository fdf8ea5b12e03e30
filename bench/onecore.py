"""Imported first by the model benches: one core for BLAS / OpenMP pools (set before numpy
loads, or the pools have already sized themselves)."""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
