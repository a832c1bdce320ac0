"""The data a job reads: users' event sequences as columnar arrays, and per-user alignment."""

from rudi_explain.data.sequences import Sequences

__all__ = ["Sequences"]
