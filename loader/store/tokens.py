"""The service's tokens per team kept in Neo4j: one ``:ApiToken`` node per token.

``heapdb tokens create --read 'team-a/*' --write 'team-a/*'`` makes a token (:func:`create_token`):
a random secret, printed once and never stored, and a node holding its SHA-256 ``digest``, a public
``id`` to name it by (``heapdb tokens revoke ID``), its ``name``, its ``read`` and ``write`` tag
patterns (:class:`heapdb.scopes.Scope`), when it was made and, once revoked, when (``revoked_at``).
The service finds a bearer token's scope by the digest of what was sent (:func:`scope_of`).

Why SHA-256 and not a password hash (bcrypt, scrypt): the secret is 256 random bits, not a word a
person chose, so there is nothing to guess from its digest, and a slow hash would only make every
request wait (docs/decisions.md). The data model is in ``docs/data-model.md``.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from heapdb.db import Database
from heapdb.errors import NotFound, ParameterError
from heapdb.scopes import Scope, check_patterns

SECRET_PREFIX = "heapdb_"  # says what a leaked secret is, to a person and to a secret scanner
SECRET_BYTES = 32
MAX_NAME_CHARS = 100
SCHEMA = (
    "CREATE CONSTRAINT heapdb_api_token_id IF NOT EXISTS FOR (t:ApiToken) REQUIRE t.id IS UNIQUE",
    "CREATE CONSTRAINT heapdb_api_token_digest IF NOT EXISTS FOR (t:ApiToken) REQUIRE t.digest IS UNIQUE",
)


@dataclass(frozen=True)
class TokenRecord:
    """One token as its node records it (never its secret)."""

    id: str
    name: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    created_at: str  # ISO 8601, UTC
    revoked_at: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def scope(self) -> Scope:
        return Scope(read=self.read, write=self.write)

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> TokenRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in props.items() if k in known and v is not None}
        return cls(**{**values, "read": tuple(values.get("read", ())), "write": tuple(values.get("write", ()))})

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "read": list(self.read),
            "write": list(self.write),
            "created_at": self.created_at,
            "revoked": self.revoked,
            "revoked_at": self.revoked_at,
        }


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def create_token(database: Database, name: str, read: Sequence[str], write: Sequence[str]) -> tuple[TokenRecord, str]:
    """Store a new token; returns its record and its secret, which only the caller ever sees."""
    if not name.strip() or len(name) > MAX_NAME_CHARS:
        raise ParameterError(f"a token's name is 1 to {MAX_NAME_CHARS} characters, not blank")
    read, write = check_patterns(read, "read"), check_patterns(write, "write")
    if not read and not write:
        raise ParameterError("a token needs at least one --read or --write pattern: it would see nothing")
    for statement in SCHEMA:
        database.write(statement)
    secret = SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)
    properties = {
        "id": secrets.token_hex(4),
        "digest": digest_of(secret),
        "name": name,
        "read": list(read),
        "write": list(write),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    rows = database.write("CREATE (t:ApiToken) SET t = $p RETURN t {.*} AS t", {"p": properties})
    return TokenRecord.from_properties(rows[0]["t"]), secret


def list_tokens(database: Database, *, include_revoked: bool = False) -> list[TokenRecord]:
    """The tokens, oldest first; the revoked ones only when asked."""
    rows = database.read(
        "MATCH (t:ApiToken) WHERE $all OR t.revoked_at IS NULL "
        "RETURN t {.id, .name, .read, .write, .created_at, .revoked_at} AS t ORDER BY t.created_at, t.id",
        {"all": include_revoked},
    )
    return [TokenRecord.from_properties(row["t"]) for row in rows]


def revoke_token(database: Database, token_id: str) -> TokenRecord:
    """Mark the token revoked (kept, so that a listing shows who had access until when)."""
    rows = database.write(
        "MATCH (t:ApiToken {id: $id}) SET t.revoked_at = coalesce(t.revoked_at, $now) "
        "RETURN t {.id, .name, .read, .write, .created_at, .revoked_at} AS t",
        {"id": token_id, "now": datetime.now(UTC).isoformat(timespec="seconds")},
    )
    if not rows:
        raise NotFound(f"no token with id {token_id!r} (see `heapdb tokens list`)")
    return TokenRecord.from_properties(rows[0]["t"])


def scope_of(database: Database, secret: str) -> Scope | None:
    """The scope of the token whose secret this is, or None (no such token, or revoked)."""
    if not secret.startswith(SECRET_PREFIX):
        return None  # not one of these: no round trip
    rows = database.read(
        "MATCH (t:ApiToken {digest: $digest}) WHERE t.revoked_at IS NULL RETURN t.read AS read, t.write AS write",
        {"digest": digest_of(secret)},
    )
    if not rows:
        return None
    return Scope(read=tuple(rows[0]["read"] or ()), write=tuple(rows[0]["write"] or ()))
