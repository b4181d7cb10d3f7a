"""A loopback stand-in for an OpenSearch Serverless vector collection, answering the requests
docchat's OpenSearchIndex makes (serverless=True: server-made `_id`s, no `_delete_by_query`),
in the shapes OpenSearch documents:

- HEAD /<index> (200 or 404, no body):
  https://docs.opensearch.org/3.2/api-reference/index-apis/exists
- PUT /<index> -> {"acknowledged", "shards_acknowledged", "index"}; an existing index is a 400
  resource_already_exists_exception:
  https://docs.opensearch.org/docs/latest/api-reference/index-apis/create-index/
- PUT /<index>/_mapping {"properties": …} adds fields -> {"acknowledged": true}:
  https://docs.opensearch.org/2.13/api-reference/index-apis/put-mapping; with a `"dynamic":
  "strict"` mapping a bulk item with an unmapped field fails with
  strict_dynamic_mapping_exception (400):
  https://docs.opensearch.org/3.5/mappings/mapping-parameters/dynamic/
- POST /<index>/_bulk, NDJSON `index` (no `_id`: one is made) and `delete` actions ->
  {"took", "errors", "items": [{"index"|"delete": {"_index", "_id", "result", "status"}}]},
  a delete of a missing `_id` being a 404 item:
  https://docs.opensearch.org/latest/api-reference/document-apis/bulk
- POST /<index>/_search with `size`, `_source` (a field list), `sort` on a keyword field with
  `search_after`, and the queries docchat sends: `knn` (with an efficient filter:
  https://docs.opensearch.org/3.0/vector-search/filter-search-knn/efficient-knn-filtering),
  `bool` (must, filter), `term`, `terms`, `multi_match` (best_fields, `field^boost`),
  `match_none` -> {"took", "timed_out", "_shards", "hits": {"total", "max_score", "hits":
  [{"_index", "_id", "_score", "_source", "sort"?}]}}
- POST /<index>/_count -> {"count", "_shards"}
- a missing index: 404 {"error": {"type": "index_not_found_exception", ...}, "status": 404}

Scores: k-NN uses the innerproduct space's score (1 + ip when ip > 0, else 1 / (1 - ip)):
https://docs.opensearch.org/latest/mappings/supported-field-types/knn-spaces
and the search is exact, not HNSW. Keyword scores are BM25 (k1 1.2, b 0.75) over lower-cased
words without the english analyzer's stemming: the ranking differs from OpenSearch's in detail,
the request and response shapes do not. Writes are visible to the next search at once (a real
Serverless collection shows them after a delay: tests/functions/test_visibility.py covers that).
"""

from __future__ import annotations

import json
import math
import re
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.lambda_layout.loopback import LoopbackServer

Doc = dict[str, Any]
_WORD = re.compile(r"\w+")
_SHARDS = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}


def _words(value: Any) -> list[str]:
    text = " ".join(value) if isinstance(value, list) else str(value or "")
    return _WORD.findall(text.casefold())


def _knn_score(a: list[float], b: list[float]) -> float:
    product = sum(x * y for x, y in zip(a, b, strict=True))
    return 1 + product if product > 0 else 1 / (1 - product)


class _Index:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.docs: dict[str, Doc] = {}

    def unmapped(self, doc: Doc) -> str:
        """The first field of `doc` a strict mapping lacks, or ""."""
        mappings = self.body.get("mappings", {})
        if mappings.get("dynamic") != "strict":
            return ""
        return next((f for f in doc if f not in mappings.get("properties", {})), "")

    def matches(self, query: dict[str, Any], doc: Doc) -> bool:
        [(kind, spec)] = query.items()
        if kind == "match_all":
            return True
        if kind == "match_none":
            return False
        if kind == "term":
            [(field, value)] = spec.items()
            return bool(doc.get(field) == value)
        if kind == "terms":
            [(field, values)] = spec.items()
            return doc.get(field) in values
        if kind == "bool":
            return all(self.matches(q, doc) for q in spec.get("must", []) + spec.get("filter", []))
        raise ValueError(f"the stand-in does not filter with {kind!r}")

    def score(self, query: dict[str, Any], doc: Doc) -> float | None:
        """The document's score for `query`, or None when it does not match."""
        [(kind, spec)] = query.items()
        if kind == "knn":
            [(field, knn)] = spec.items()
            if "filter" in knn and not self.matches(knn["filter"], doc):
                return None
            return _knn_score(knn["vector"], doc[field])
        if kind == "multi_match":
            return self._best_fields(spec, doc)
        if kind == "bool":
            if not all(self.matches(q, doc) for q in spec.get("filter", [])):
                return None
            scores = [self.score(q, doc) for q in spec.get("must", [])]
            if any(s is None for s in scores):
                return None
            return sum(s for s in scores if s is not None) if scores else 0.0
        return 1.0 if self.matches(query, doc) else None

    def _best_fields(self, spec: dict[str, Any], doc: Doc) -> float | None:
        terms = _words(spec["query"])
        best: float | None = None
        for entry in spec["fields"]:
            field, _, boost = entry.partition("^")
            score = self._bm25(field, terms, doc) * float(boost or 1)
            if score > 0 and (best is None or score > best):
                best = score
        return best

    def _bm25(self, field: str, terms: list[str], doc: Doc) -> float:
        lengths = [len(_words(d.get(field))) for d in self.docs.values()]
        average = sum(lengths) / len(lengths) if lengths else 0.0
        words = _words(doc.get(field))
        total = 0.0
        for term in set(terms):
            frequency = words.count(term)
            if not frequency:
                continue
            having = sum(1 for d in self.docs.values() if term in _words(d.get(field)))
            idf = math.log(1 + (len(self.docs) - having + 0.5) / (having + 0.5))
            norm = 1.2 * (0.25 + 0.75 * len(words) / (average or 1))
            total += idf * frequency * 2.2 / (frequency + norm)
        return total


class _Handler(BaseHTTPRequestHandler):
    server: OpenSearchStub

    def do_HEAD(self) -> None:
        index = self.server.indexes.get(self._parts()[0])
        self.send_response(200 if index is not None else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_PUT(self) -> None:
        name, *rest = self._parts()
        if rest == ["_mapping"]:
            self._put_mapping(name)
            return
        if rest:
            self._answer(
                405, {"error": f"the stand-in takes PUT /<index>[/_mapping], not {self.path}"}
            )
            return
        with self.server.lock:
            if name in self.server.indexes:
                reason = f"index [{name}] already exists"
                self._error(400, "resource_already_exists_exception", reason, name)
                return
            self.server.indexes[name] = _Index(self._json())
        self._answer(200, {"acknowledged": True, "shards_acknowledged": True, "index": name})

    def _put_mapping(self, name: str) -> None:
        """Add fields to an index's mapping (an existing field mapped again the same way is
        accepted), answering {"acknowledged": true}."""
        with self.server.lock:
            index = self.server.indexes.get(name)
            if index is None:
                self._error(404, "index_not_found_exception", f"no such index [{name}]", name)
                return
            mapped = index.body.setdefault("mappings", {}).setdefault("properties", {})
            for field, spec in self._json()["properties"].items():
                if field in mapped and mapped[field] != spec:
                    reason = f"mapper [{field}] cannot be changed"
                    self._error(400, "illegal_argument_exception", reason, name)
                    return
                mapped[field] = spec
        self._answer(200, {"acknowledged": True})

    def do_POST(self) -> None:
        name, *rest = self._parts()
        routes: dict[str, Callable[[_Index, str], None]] = {
            "_bulk": self._bulk,
            "_search": self._search,
            "_count": self._count,
        }
        route = routes.get(rest[0] if rest else "")
        if route is None:
            self._answer(405, {"error": f"the stand-in does not answer POST {self.path}"})
            return
        with self.server.lock:
            index = self.server.indexes.get(name)
            if index is None:
                self._error(404, "index_not_found_exception", f"no such index [{name}]", name)
                return
            route(index, name)

    do_GET = do_POST  # opensearch-py sends a count without a body as GET

    def _bulk(self, index: _Index, name: str) -> None:
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        items: list[dict[str, Any]] = []
        position = 0
        while position < len(lines):
            [(action, meta)] = lines[position].items()
            position += 1
            if action == "index":
                doc_id = meta.get("_id") or uuid.uuid4().hex[:20]
                unmapped = index.unmapped(lines[position])
                position += 1
                if unmapped:  # "dynamic": "strict" refuses a field the mapping lacks
                    reason = (
                        f"mapping set to strict, dynamic introduction of [{unmapped}] "
                        "is not allowed"
                    )
                    error = {"type": "strict_dynamic_mapping_exception", "reason": reason}
                    items.append(
                        {"index": {"_index": name, "_id": doc_id, "status": 400, "error": error}}
                    )
                    continue
                index.docs[doc_id] = lines[position - 1]
                items.append(
                    {"index": {"_index": name, "_id": doc_id, "result": "created", "status": 201}}
                )
            elif action == "delete":
                found = index.docs.pop(meta["_id"], None) is not None
                result, status = ("deleted", 200) if found else ("not_found", 404)
                items.append(
                    {
                        "delete": {
                            "_index": name,
                            "_id": meta["_id"],
                            "result": result,
                            "status": status,
                        }
                    }
                )
            else:
                raise ValueError(f"the stand-in does not take bulk {action!r} actions")
        errors = any(item.get("status", 200) >= 300 for entry in items for item in entry.values())
        self._answer(200, {"took": 1, "errors": errors, "items": items})

    def _search(self, index: _Index, name: str) -> None:
        body = self._json()
        query = body.get("query", {"match_all": {}})
        scored = [
            (doc_id, doc, score)
            for doc_id, doc in index.docs.items()
            if (score := index.score(query, doc)) is not None
        ]
        sort = body.get("sort")
        if sort:
            [(field, order)] = sort[0].items()
            scored.sort(key=lambda hit: hit[1][field], reverse=order == "desc")
            after = body.get("search_after")
            if after is not None:
                scored = [hit for hit in scored if hit[1][field] > after[0]]
        else:
            scored.sort(key=lambda hit: -hit[2])
        if "knn" in query:
            scored = scored[: query["knn"][next(iter(query["knn"]))]["k"]]
        hits = []
        for doc_id, doc, score in scored[: body.get("size", 10)]:
            fields = body.get("_source")
            source = doc if fields is None else {f: doc[f] for f in fields if f in doc}
            hit: dict[str, Any] = {
                "_index": name,
                "_id": doc_id,
                "_score": None if sort else score,
                "_source": source,
            }
            if sort:
                hit["sort"] = [doc[next(iter(sort[0]))]]
            hits.append(hit)
        self._answer(
            200,
            {
                "took": 1,
                "timed_out": False,
                "_shards": _SHARDS,
                "hits": {
                    "total": {"value": len(scored), "relation": "eq"},
                    "max_score": None if sort or not hits else hits[0]["_score"],
                    "hits": hits,
                },
            },
        )

    def _count(self, index: _Index, name: str) -> None:
        query = self._json().get("query", {"match_all": {}})
        count = sum(1 for doc in index.docs.values() if index.score(query, doc) is not None)
        self._answer(200, {"count": count, "_shards": _SHARDS})

    def _parts(self) -> list[str]:
        return self.path.split("?", 1)[0].strip("/").split("/")

    def _body(self) -> str:
        return self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()

    def _json(self) -> dict[str, Any]:
        body = self._body()
        parsed: dict[str, Any] = json.loads(body) if body.strip() else {}
        return parsed

    def _error(self, status: int, kind: str, reason: str, index: str) -> None:
        cause = {"type": kind, "reason": reason, "index": index}
        self._answer(status, {"error": {"root_cause": [cause], **cause}, "status": status})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        self.server.requests.append((self.command, self.path))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


class OpenSearchStub(LoopbackServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.indexes: dict[str, _Index] = {}
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
