"""``heapdb receive``: take a snapshot over a socket while its producer writes it, and load it.

A runtime that cannot hold its snapshot (a browser tab, a device) streams it to a socket instead of
a file; this listens, spools the stream to the spool directory as it arrives (the service's
:class:`~heapdb.service.spool.Spooler`: its size limit, its free-disk check, and a snap.bin checked
chunk by chunk, so a bad stream is refused at its first bad chunk and the connection closed), then
loads the spooled file as ``heapdb load`` does (:func:`~heapdb.cli.load_cmd.store_file`) and removes
it. A stream cut off or refused leaves nothing: no spool file, no snapshot.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from pathlib import Path

import click

from heapdb import config, db, settings
from heapdb.cli import main
from heapdb.cli.load_cmd import store_file
from heapdb.cli.options import key_values, write_options
from heapdb.cli.steps import RulesChoice, choose_rules, redact_option, refuse_groups_without_rules, rules_options
from heapdb.errors import FormatError, HeapdbError, UploadError
from heapdb.processes import lower_priority
from heapdb.progress import bar
from heapdb.units import human_bytes

READ_BYTES = 1 << 20  # bytes asked of the socket at a time
NUMBER = "{n}"  # in --tag with --keep: the stream's number, from 1
BACKLOG = 8  # producers that may wait, connected, while a stream is being loaded (--keep)


def _say(message: str) -> None:
    click.echo(f"heapdb: {message}", err=True)


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets, ``[::1]:PORT``) as ``(host, port)``."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:9230, or port 0 for any free one)")
    return host, int(port)


def _shown(address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@main.command()
@click.option(
    "--listen",
    required=True,
    metavar="HOST:PORT",
    help="Where to listen, e.g. 127.0.0.1:9230 (port 0: any free one; the address taken is printed).",
)
@click.option(
    "--tag",
    required=True,
    help="Name of the snapshot in the database; with --keep it holds {n}, the stream's number from 1.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep taking streams, one after another, each loaded as its own tag (--tag with {n}), until Ctrl-C.",
)
@click.option("--replace", is_flag=True, help="Load over an existing snapshot with the same tag.")
@click.option(
    "--meta", multiple=True, metavar="KEY=VALUE", help="Extra metadata to store with the snapshot (repeatable)."
)
@click.option(
    "--source", metavar="NAME", help="What the snapshot's source is shown as (default: tcp://ADDRESS of the producer)."
)
@write_options
@rules_options
@redact_option
@click.option("--json", "as_json", is_flag=True, help="Print each load's report as JSON.")
def receive(
    listen: str,
    tag: str,
    keep: bool,
    replace: bool,
    meta: tuple[str, ...],
    source: str | None,
    batch_size: int,
    writer: str,
    rules: str | None,
    disabled: tuple[str, ...],
    redact: bool,
    as_json: bool,
) -> None:
    """Take a snapshot streamed over a socket as its producer writes it, and load it as `heapdb load` does.

    Listens on HOST:PORT (printed on stderr: "listening on HOST:PORT"), takes one connection and
    reads the snapshot from it until the producer closes it: any format `heapdb load` reads, a
    snap.bin (docs/format.md) checked chunk by chunk as it arrives. The stream goes to the spool
    directory (HEAPDB_SPOOL_DIR), never whole into memory, and is refused, its connection closed,
    at its first bad chunk; when it ends before its trailer (its producer died); when it grows past
    HEAPDB_MAX_UPLOAD_BYTES; or when nothing comes for HEAPDB_RECEIVE_TIMEOUT seconds. A refused
    stream leaves nothing: no spool file, no snapshot.

    With --keep it takes stream after stream, one at a time (a producer connecting meanwhile waits),
    each loaded as --tag with {n} replaced by the stream's number; a refused stream is reported and
    the next one taken. Without --keep, a second producer is refused.
    """
    from heapdb.loader.store.lifecycle import check_tag

    host, port = listen_address(listen)
    if keep and NUMBER not in tag:
        raise click.UsageError(f"--keep loads each stream as its own snapshot: put {NUMBER} in --tag, e.g. 'app-{{n}}'")
    check_tag(tag.replace(NUMBER, "1"))  # at once, not after a stream came
    refuse_groups_without_rules(rules, disabled)
    extra = {key: values[-1] for key, values in key_values(meta, "--meta").items()}
    choice = choose_rules(rules, disabled_groups=disabled, connect=db.connect)
    try:
        server = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET, backlog=BACKLOG if keep else 1
        )
    except OSError as e:
        raise UploadError(f"cannot listen on {listen}: {e.strerror or e}") from None
    number = 0
    with server:
        _say(f"listening on {_shown(server.getsockname())}")
        while True:
            connection, address = server.accept()
            if not keep:
                server.close()  # one stream: a second producer is refused, not left waiting
            number += 1
            one = Stream(connection, _shown(address), tag.replace(NUMBER, str(number)), choice, last=not keep)
            try:
                one.load(replace=replace, meta=extra, source=source, batch_size=batch_size, writer=writer,
                         redact=redact, as_json=as_json)  # fmt: skip
            except HeapdbError as e:
                if not keep:
                    raise
                _say(f"error: {e}")  # this stream's; the next may be good
            if not keep:
                return


class Stream:
    """One producer's connection: spooled (:meth:`spool`), then loaded (:meth:`load`)."""

    def __init__(
        self, connection: socket.socket, peer: str, tag: str, choice: RulesChoice | None, *, last: bool
    ) -> None:
        self.connection, self.peer, self.tag, self.choice = connection, peer, tag, choice
        self.last = last  # no stream follows (no --keep)
        self.name = f"the stream from {peer}"
        self.started = time.monotonic()

    def load(
        self,
        *,
        replace: bool,
        meta: dict[str, str],
        source: str | None,
        batch_size: int,
        writer: str,
        redact: bool,
        as_json: bool,
    ) -> None:
        _say(f"receiving {self.tag!r} from {self.peer}")
        with self.connection:
            spooled = self.spool()
        seconds = time.monotonic() - self.started
        _say(f"received {human_bytes(spooled.stat().st_size)} from {self.peer} in {seconds:.1f} s")
        if self.last:
            # As `heapdb load` does, before any thread starts; not while a producer writes (one in a
            # stop-the-world pause waits for every byte to be taken), so never with --keep.
            lower_priority()
        try:
            store_file(
                str(spooled),
                self.tag,
                choice=self.choice,
                replace=replace,
                meta=meta,
                source=source or f"tcp://{self.peer}",
                batch_size=batch_size,
                writer=writer,
                redact=redact,
                only_redacted=False,
                as_json=as_json,
                command_started=self.started,
                before={"receive": seconds},
            )
        except FormatError as e:  # named after the stream, not the spool file that held it
            raise FormatError(self.name, e.problem, offset=e.offset, record=e.record) from None
        finally:
            spooled.unlink(missing_ok=True)

    def spool(self) -> Path:
        """Read the stream into a spool file until its producer closes it; the file's path. On any
        error (refused, cut off, idle, Ctrl-C) the file is removed."""
        from heapdb.service.spool import Spooler

        idle = settings.RECEIVE_TIMEOUT.value()
        self.connection.settimeout(idle)
        # <name>.<pid>.upload: a service sharing the spool directory leaves it alone while we live.
        path = config.spool_dir() / f"receive-{secrets.token_hex(4)}.{os.getpid()}.upload"
        spooler = Spooler(
            path, "identity", settings.MAX_UPLOAD_BYTES.value(), settings.MIN_FREE_BYTES.value(), self.name
        )
        try:
            with bar(f"receive {self.tag}", unit="B") as progress:
                while data := self._read(spooler.received, idle):
                    spooler.write(data)
                    progress.update(len(data))
            spooler.finish()
        except BaseException:
            spooler.discard()
            raise
        return path

    def _read(self, received: int, idle: float) -> bytes:
        try:
            return self.connection.recv(READ_BYTES)
        except TimeoutError:
            raise UploadError(
                f"{self.name} sent nothing for {idle:g} s after {received:,} bytes "
                f"({settings.RECEIVE_TIMEOUT.name}): refused"
            ) from None
        except OSError as e:  # reset by its producer
            raise UploadError(f"{self.name} broke off after {received:,} bytes: {e.strerror or e}") from None
