"""Placeholder: the luau reader lands here."""

NAME = "luau"


def sniff(head: bytes) -> bool:
    return False


def read_graph(path, on_bytes=None):
    raise NotImplementedError
