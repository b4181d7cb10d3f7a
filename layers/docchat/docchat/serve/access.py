"""Who may read and change which collections (`Access`), and where each server learns it.

- Locally without a users file the one local user is an admin: every collection, as before.
- `docchat serve --users FILE`: a JSON file of users, each with the SHA-256 of their bearer token
  and the collections they may read and write ({"users": [{"name": "alice", "token_sha256":
  "<hex>", "read": ["finance"], "write": ["finance"], "admin": false}]}). An unknown or missing
  token is a 401.
- In the cloud, the ID token's `cognito:groups` claim, mapped to rights by `access/groups.json`
  in the artifacts bucket, data an admin edits ({"admin_groups": ["admins"], "groups":
  {"finance": {"read": [...], "write": [...]}}, "everyone": {"read": ["default"]}}), read at
  most once a minute. A user in no mapped group has `everyone`'s rights (by default: read
  `default`). A stack without the file gives everyone what it gave before collections: the
  default collection, to read and to upload into.

Writing a collection implies reading it. A document in no collection the user may read does not
exist for them: every route answers 404 for it, as for a missing one (see Library.within).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.requests import Request

from docchat.answer.conversations import LOCAL_USER
from docchat.errors import (
    AccessDeniedError,
    CallerUnknownError,
    ConfigError,
    DocchatError,
    ObjectMissingError,
)
from docchat.models import DEFAULT_COLLECTION, Scope, collection_name
from docchat.ports import Objects
from docchat.search.library import Visible
from docchat.serve.identity import request_context

#: Where the cloud's groups -> rights mapping lives in the artifacts bucket.
GROUPS_KEY = "access/groups.json"
#: How long the cloud keeps the mapping before reading it again.
GROUPS_TTL_S = 60.0
GROUPS_CLAIM = "cognito:groups"
WRITE_ACCESS = "ask an admin for write access"
#: The 401 of a server with a users file: each person sends their own token, not --token.
USER_TOKEN_NEEDED = (
    "this docchat server knows its users by their tokens: send your own token as "
    "'Authorization: Bearer <token>' (the one whose SHA-256 the server's users file holds for "
    "you; its admin gives it to you)"
)


@dataclass(frozen=True)
class Access:
    """What one user may do: read and write these collections, or everything (`admin`)."""

    user: str
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: bool = False

    @property
    def readable(self) -> frozenset[str] | None:
        """The collections the user may read (None: every one)."""
        return None if self.admin else self.read | self.write

    def may_write(self, collection: str) -> bool:
        return self.admin or collection in self.write

    def may_read(self, collection: str) -> bool:
        return self.admin or collection in self.read or collection in self.write

    def visible(self, scope: Scope | None = None) -> Visible:
        """What a question in `scope` may read: its collections and documents, never beyond
        the user's own collections."""
        readable = self.readable
        asked = scope.collections if scope else None
        if asked is not None:
            wanted = frozenset(asked)
            readable = wanted if readable is None else wanted & readable
        doc_ids = frozenset(scope.doc_ids) if scope and scope.doc_ids else None
        return Visible(collections=readable, doc_ids=doc_ids)

    def check_read(self, collections: Iterable[str]) -> None:
        """AccessDeniedError (403) unless the user may read every one of `collections`, the
        ones a question is asked in. The refusal names only what was asked for, and reads the
        same for a collection that exists and one that does not."""
        refused = sorted({name for name in collections if not self.may_read(name)})
        if not refused:
            return
        names = " or ".join(repr(name) for name in refused)
        raise AccessDeniedError(
            f"you may not read the collection {names}: ask without a scope to search every "
            "collection you may read, or ask an admin for read access to it"
        )

    def check_change(
        self, collections: Iterable[str], *, what: str, instead: str = WRITE_ACCESS
    ) -> None:
        """AccessDeniedError (403) unless the user may write every one of `collections`, the
        ones a document is in (`what` says what the change would do, `instead` what the user
        can do). The refusal names only the collections the user may read."""
        refused = sorted({name for name in collections if not self.may_write(name)})
        if not refused:
            return
        named = [repr(name) for name in refused if self.may_read(name)]
        if len(named) < len(refused):
            named.append("a collection you cannot see")
        raise AccessDeniedError(
            f"{what}, and it is in {' and '.join(named)}, which you may not write: {instead}"
        )

    def check_write(self, collection: str) -> None:
        """AccessDeniedError (403) unless the user may write `collection`."""
        if not self.may_write(collection):
            raise AccessDeniedError(
                f"you may not add to or remove from the collection {collection!r}: ask an "
                "admin for write access to it"
            )


AccessOf = Callable[[Request], Access]
ADMIN = Access(user=LOCAL_USER, admin=True)


def local_admin(_: Request) -> Access:
    """The single local user sees and changes everything."""
    return ADMIN


class Rights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    read: list[str] = Field(default_factory=list)
    write: list[str] = Field(default_factory=list)

    @field_validator("read", "write")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        try:
            return [collection_name(n) for n in names]
        except DocchatError as exc:
            raise ValueError(str(exc)) from None


class FileUser(Rights):
    name: str = Field(min_length=1)
    token_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    admin: bool = False

    def access(self) -> Access:
        return Access(
            user=self.name, read=frozenset(self.read), write=frozenset(self.write), admin=self.admin
        )


class UsersFile(BaseModel):
    """`docchat serve --users FILE`: who may call this server with which token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    users: list[FileUser] = Field(min_length=1)

    @classmethod
    def load(cls, path: Path) -> UsersFile:
        """The users file at `path`, or ConfigError saying what is wrong with it."""
        try:
            return cls.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise ConfigError(f"cannot read the users file {path}: {exc.strerror or exc}") from exc
        except ValidationError as exc:
            raise ConfigError(
                f"the users file {path} is not valid: {_problems(exc)}; see docs/collections.md, "
                '"Locally", for its shape'
            ) from exc

    def by_token(self, token: str) -> Access | None:
        """The access of the user whose token this is (compared in constant time)."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        found = None
        for user in self.users:
            if hmac.compare_digest(user.token_sha256, digest):
                found = user
        return None if found is None else found.access()

    def by_name(self, name: str) -> Access | None:
        """The access of the user called `name` (`docchat eval feedback --users`: a rated
        question is asked again as its user)."""
        found = next((u for u in self.users if u.name == name), None)
        return None if found is None else found.access()

    def access_of(self, request: Request) -> Access:
        """The caller's access by their bearer token; CallerUnknownError (401) without one."""
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        access = self.by_token(given.strip()) if scheme.lower() == "bearer" else None
        if access is None:
            raise CallerUnknownError(USER_TOKEN_NEEDED)
        return access


def token_sha256(token: str) -> str:
    """What a users file keeps of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


class GroupsMap(BaseModel):
    """`access/groups.json` in the artifacts bucket: Cognito groups -> rights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    admin_groups: list[str] = Field(default_factory=list)
    groups: dict[str, Rights] = Field(default_factory=dict)
    everyone: Rights = Rights(read=[DEFAULT_COLLECTION])

    def access(self, user: str, groups: Iterable[str]) -> Access:
        """The rights of a member of `groups`: every mapped group's, else `everyone`'s."""
        member = set(groups)
        if member & set(self.admin_groups):
            return Access(user=user, admin=True)
        mapped = [self.groups[g] for g in sorted(member) if g in self.groups] or [self.everyone]
        return Access(
            user=user,
            read=frozenset(n for r in mapped for n in r.read),
            write=frozenset(n for r in mapped for n in r.write),
        )


#: A stack without a mapping: everyone as before collections, in the default collection.
NO_MAPPING = GroupsMap(everyone=Rights(read=[DEFAULT_COLLECTION], write=[DEFAULT_COLLECTION]))


@dataclass
class GroupsSource:
    """The mapping in the artifacts bucket, read at most once every `ttl_s`."""

    objects: Callable[[], Objects]
    bucket: str
    ttl_s: float = GROUPS_TTL_S
    clock: Callable[[], float] = time.monotonic
    _read: tuple[float, GroupsMap] | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def mapping(self) -> GroupsMap:
        with self._lock:
            if self._read is None or self.clock() - self._read[0] >= self.ttl_s:
                self._read = (self.clock(), self._load())
            return self._read[1]

    def _load(self) -> GroupsMap:
        if not self.bucket:
            return NO_MAPPING
        try:
            raw = self.objects().read_json(self.bucket, GROUPS_KEY)
        except ObjectMissingError:
            return NO_MAPPING
        except ValueError as exc:
            raise ConfigError(
                f"s3://{self.bucket}/{GROUPS_KEY} is not JSON ({exc}): fix the file "
                '(docs/collections.md, "On AWS")'
            ) from exc
        try:
            return GroupsMap.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(
                f"s3://{self.bucket}/{GROUPS_KEY} is not a valid groups mapping: "
                f'{_problems(exc)}; fix the file (docs/collections.md, "On AWS")'
            ) from exc


def cognito_access_for(
    source: Callable[[], GroupsMap], user_of: Callable[[Request], str]
) -> AccessOf:
    """The caller's access from their ID token's groups (API Gateway's claims)."""

    def access_of(request: Request) -> Access:
        user = user_of(request)
        return source().access(user, claimed_groups(request))

    return access_of


def claimed_groups(request: Request) -> list[str]:
    """The `cognito:groups` claim as API Gateway passes it in the request context."""
    context = request_context(request) or {}
    authorizer = context.get("authorizer")
    claims = authorizer.get("claims") if isinstance(authorizer, Mapping) else None
    value: Any = claims.get(GROUPS_CLAIM) if isinstance(claims, Mapping) else None
    return groups_of(value)


def groups_of(value: Any) -> list[str]:
    """Group names from a `cognito:groups` claim value, in each shape API Gateway gives it.

    Read 2026-11-27: AWS documents the shape only for a REST API's JWT authorizer
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-jwt-authorizer-claims.html):
    a Lambda proxy integration gets each claim with its JSON type (a list), mapping templates
    and logs get it as JSON text ('["user","editor"]'). For the COGNITO_USER_POOLS authorizer
    this stack uses, the API Gateway guide ("Control access to REST APIs using Amazon Cognito
    user pools as an authorizer") says nothing of the shape; every claim arrives as a string:
    one group as its name ("team_manager", re:Post QUFJRBaEJRSmmqarNrvCWoQA), several as
    "a,b" (aws/chalice#783 splits on commas); HTTP APIs' JWT authorizers give "[a b]". Cognito
    group names hold no white space, so commas and spaces both separate names."""
    if isinstance(value, list):
        return [str(g) for g in value if str(g)]
    if not isinstance(value, str):
        return []
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return groups_of(parsed)
    return text.strip("[]").replace(",", " ").split()


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'the file'}: {e['msg']}"
        for e in exc.errors(include_url=False)
    )
