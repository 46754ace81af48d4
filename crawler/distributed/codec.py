"""Request serialization for the shared queue (SCHEDULER_SERIALIZER): JSON with tagged bytes, never pickle."""
from __future__ import annotations

import base64
import json
from typing import Any


def _encode(obj: Any, path: str) -> Any:
    """JSON-safe form of a request dict: bytes and bytes-keyed dicts (headers) tagged."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, bytes):
        return {"$b": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, (list, tuple)):
        return [_encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj) and "$b" not in obj and "$d" not in obj:
            return {k: _encode(v, f"{path}.{k}") for k, v in obj.items()}
        return {"$d": [[_encode(k, path), _encode(v, f"{path}.{k!r}")] for k, v in obj.items()]}
    raise TypeError(f"request field {path} has a {type(obj).__name__}, which cannot go through the shared "
                    "Redis queue; keep meta/cb_kwargs to str, numbers, bytes, lists and dicts")


def _decode(obj: Any) -> Any:
    """Inverse of _encode."""
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if isinstance(obj, dict):
        if set(obj) == {"$b"}:
            return base64.b64decode(obj["$b"])
        if set(obj) == {"$d"}:
            return {_decode(k): _decode(v) for k, v in obj["$d"]}
        return {k: _decode(v) for k, v in obj.items()}
    return obj


def dumps(obj: dict) -> bytes:
    """Serialize a Request.to_dict() for the shared queue (JSON: readable, and safe to load)."""
    return json.dumps(_encode(obj, "request"), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def loads(data: bytes) -> dict:
    """Deserialize a queued request dict; a corrupt entry raises ValueError naming the problem."""
    try:
        return _decode(json.loads(data))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"corrupt entry in the shared request queue ({exc}): {data[:80]!r}") from None
