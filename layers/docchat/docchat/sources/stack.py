"""Sources on the stack (issue 47): each one is defined by an object an operator writes into the
artifacts bucket, `sources/<name>.json` (a web site, a Graph drive or a Confluence space, as
`docchat sources add` defines one locally, with the collection its documents go to; or a Google
Drive shared drive or folder), and a
credential it needs is a Secrets Manager secret the definition names (`"secret": "docchat/..."`),
never a value in the definition. The sync function keeps what each source's last sync found and
what each page or file was beside the definitions, `sources/state/<name>.json`; /health reads both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from docchat.errors import CollectionNameError, ObjectMissingError, SourceError
from docchat.models import collection_name
from docchat.ports import SyncedObjects
from docchat.sources.store import (
    ConfluenceSource,
    GoogleDriveSource,
    GraphSource,
    PageState,
    SyncReport,
    WebSource,
)

DEFINITIONS = "sources/"
STATES = "sources/state/"
#: The only secrets the sync function's role may read (template.yaml, SyncFunction).
SECRET_PREFIX = "docchat/"
#: What a local source's credential variable is called when the credential is a stack's secret:
#: the walkers read it from a mapping the sync fills, never from the environment.
STACK_SECRET = "STACK_SECRET"
#: The field of each kind whose credential is a secret on the stack (a service account's whole
#: JSON key, for Google Drive).
_SECRET_FIELD = {"sharepoint": "secret_env", "confluence": "token_env", "gdrive": "key_env"}
#: A source the stack syncs: every kind a local docchat does.
AnyStackSource = WebSource | GraphSource | ConfluenceSource | GoogleDriveSource
_ANY_SOURCE: TypeAdapter[AnyStackSource] = TypeAdapter(
    Annotated[AnyStackSource, Field(discriminator="kind")]
)


@dataclass(frozen=True)
class StackSource:
    """A source as the stack defines it: the source, and the secret its credential is in ("" for
    a web site)."""

    source: AnyStackSource
    secret: str = ""

    def said(self, text: str) -> str:
        """`text` (a walker's reason) naming the secret where a local sync names its variable."""
        return text.replace(f"${STACK_SECRET}", f"the Secrets Manager secret {self.secret}")


class StoredObject(BaseModel):
    """A synced page or file as the documents bucket holds it."""

    key: str
    sha256: str


class StackState(BaseModel):
    """What a source's syncs on the stack know: each page or file as its last sync left it (the
    walker's view), the object each one is in, where the next sync starts, and the last run."""

    pages: dict[str, PageState] = {}
    objects: dict[str, StoredObject] = {}
    cursor: str = ""
    #: The key prefix the objects were written under (a changed collection moves them).
    prefix: str = ""
    last_sync: SyncReport | None = None


def definition_key(name: str) -> str:
    return f"{DEFINITIONS}{name}.json"


def state_key(name: str) -> str:
    return f"{STATES}{name}.json"


def defined_names(keys: list[str]) -> list[str]:
    """The names of the sources whose definitions are among `keys` (`sources/<name>.json`)."""
    names = []
    for key in keys:
        rest = key.removeprefix(DEFINITIONS)
        if key.startswith(DEFINITIONS) and "/" not in rest and rest.endswith(".json"):
            names.append(rest.removesuffix(".json"))
    return sorted(names)


def undefined_names(keys: list[str]) -> list[str]:
    """The names of the sources with a state among `keys` (`sources/state/<name>.json`) but no
    definition: sources an operator removed."""
    defined = set(defined_names(keys))
    names = []
    for key in keys:
        rest = key.removeprefix(STATES)
        if key.startswith(STATES) and "/" not in rest and rest.endswith(".json"):
            names.append(rest.removesuffix(".json"))
    return sorted(set(names) - defined)


def parsed_definition(name: str, data: bytes) -> StackSource:
    """The source `sources/<name>.json` defines, or SourceError naming what to fix in it."""
    where = definition_key(name)
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        said = f"{where} is not JSON ({exc}): write the source as a JSON object"
        raise SourceError(said) from None
    if not isinstance(raw, dict):
        raise SourceError(f"{where} is not a JSON object: write the source as one")
    raw = {"kind": "web", "name": name, **raw}
    if raw["name"] != name:
        raise SourceError(
            f"{where} names the source {raw['name']!r}: a definition's name is its key's, "
            f"rename the object to sources/{raw['name']}.json or drop the name"
        )
    secret = _secret_of(raw, where)
    try:
        source = _ANY_SOURCE.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(part) for part in first["loc"][1:]) or "the source"
        raise SourceError(f"{where}: {field}: {first['msg']}: correct it and sync again") from None
    if source.collection:
        try:
            collection_name(source.collection)
        except CollectionNameError as exc:
            raise SourceError(f"{where}: {exc}") from None
    return StackSource(source, secret)


def _secret_of(raw: dict[str, Any], where: str) -> str:
    """The secret a definition names, moved out of `raw` (where the local variable's name goes)."""
    kind = str(raw.get("kind"))
    secret = raw.pop("secret", "")
    field = _SECRET_FIELD.get(kind)
    if field is None:
        if secret:
            raise SourceError(f'{where}: a {kind} source needs no secret: drop "secret"')
        return ""
    if field in raw:
        raise SourceError(
            f"{where}: on the stack a credential is a Secrets Manager secret: give "
            f'"secret": "{SECRET_PREFIX}..." instead of "{field}"'
        )
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise SourceError(
            f"{where}: a {kind} source names the Secrets Manager secret its credential is in, "
            f'under {SECRET_PREFIX} (the only secrets the sync function may read): add "secret": '
            f'"{SECRET_PREFIX}{raw.get("name", "NAME")}"'
        )
    raw[field] = STACK_SECRET
    return secret


def read_state(objects: SyncedObjects, bucket: str, name: str) -> StackState:
    """What the source's last sync kept (nothing yet, for a source never synced)."""
    try:
        data = objects.read(bucket, state_key(name))
    except ObjectMissingError:
        return StackState()
    try:
        return StackState.model_validate_json(data)
    except ValidationError:
        # Unreadable state is started over: every page is fetched and written again once.
        return StackState()


def write_state(objects: SyncedObjects, bucket: str, name: str, state: StackState) -> None:
    objects.write_json(bucket, state_key(name), state.model_dump(mode="json"))


def stack_sources_health(objects: SyncedObjects, bucket: str) -> dict[str, object]:
    """What the stack's /health says of its sources: each definition's source, its documents and
    its last sync (counts and the last failure's reason), or why its definition cannot be read.
    Never a credential: definitions name secrets, and no reason holds a secret's value."""
    keys = objects.keys(bucket, DEFINITIONS)
    synced = set(keys)
    listed: list[dict[str, object]] = []
    for name in defined_names(keys):
        shown: dict[str, object] = {"name": name}
        try:
            defined = parsed_definition(name, objects.read(bucket, definition_key(name)))
        except (SourceError, ObjectMissingError) as exc:
            shown["problem"] = str(exc)
        else:
            source = defined.source
            shown |= {"kind": source.kind, "url": source.where, "collection": source.collection}
        state = read_state(objects, bucket, name) if state_key(name) in synced else StackState()
        done = state.last_sync
        shown["documents"] = len(state.objects)
        shown["last_sync"] = None if done is None else done.model_dump(mode="json")
        listed.append(shown)
    return {"sources": listed}
