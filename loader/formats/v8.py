"""Placeholder: the v8 reader lands here."""

NAME = "v8"


def sniff(head: bytes) -> bool:
    return False


def read_graph(path, on_bytes=None):
    raise NotImplementedError
