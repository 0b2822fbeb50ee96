"""Placeholder: the snapbin reader lands here."""

NAME = "snapbin"


def sniff(head: bytes) -> bool:
    return False


def read_graph(path, on_bytes=None):
    raise NotImplementedError
