"""Fuzzing the readers: structure-aware mutations of real seeds (see :mod:`heapgen.fuzz`)."""
