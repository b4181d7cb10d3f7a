"""What the stack's sync (docchat.sources.stack_sync) tells the pipeline of an object it wrote:
the address the object's content was fetched from, as the object's user metadata. Register makes
it the document's source, as `docchat sync` does locally, so citations and the documents list
link to the page. User metadata is anyone's who may write the bucket: it is believed only of an
object under a source's prefix, and only as an http(s) URL of bounded length."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

#: The user metadata key (S3 stores it lower-case, sent as `x-amz-meta-docchat-source-url`).
SOURCE_URL = "docchat-source-url"
#: S3 keeps at most 2 KB of user metadata; the sync leaves out a longer address.
LONGEST_URL = 1800
#: Where the sync writes (stack_sync.object_key): a source's prefix, in the default collection
#: or in its own, one 16-hex folder per address, then the file's name.
_SYNCED_KEY = re.compile(
    r"^(?:collections/[a-z0-9][a-z0-9-]{0,62}/)?sources/[^/]+/[0-9a-f]{16}/[^/]+$"
)
#: Printable ASCII but the space: the sync percent-encodes anything else.
_URL_TEXT = re.compile(r"^[\x21-\x7e]+$")


def is_synced_key(key: str) -> bool:
    """Whether `key` is where the stack's sync writes a page or file."""
    return bool(_SYNCED_KEY.match(key))


def source_url(key: str, metadata: Mapping[str, str]) -> str:
    """The page's address a synced object at `key` was fetched from, or "" when `key` is not a
    synced object's or its metadata holds no http(s) URL of at most LONGEST_URL characters."""
    url = metadata.get(SOURCE_URL, "")
    if not is_synced_key(key) or not isinstance(url, str) or len(url) > LONGEST_URL:
        return ""
    if not _URL_TEXT.match(url) or not url.startswith(("http://", "https://")):
        return ""
    try:
        host = urlsplit(url).hostname
    except ValueError:  # an unbalanced "[" in the host
        return ""
    return url if host else ""
