"""JSON text exactly as JavaScript's JSON.stringify writes it.

Toolport hashes the arguments' JSON.stringify text into an approval receipt, and the TypeScript kit
renders addon.json with JSON.stringify, so this kit must write the same bytes: no spaces, keys in
the order read, non-ASCII as is, lone surrogates escaped, and numbers the way JavaScript prints
them (1 not 1.0, 1e-7 not 1e-07, 10000000000000000 not 1e+16).
"""

from __future__ import annotations

import math
import re
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_FLOAT_REPR = re.compile(r"-?(\d+)(?:\.(\d+))?(?:e([+-]\d+))?")


def js_number(x: int | float) -> str:
    """Number.prototype.toString for a finite number (ECMA-262 Number::toString, radix 10)."""
    if isinstance(x, bool):
        raise TypeError("a bool is not a number here")
    if isinstance(x, int):
        return int.__repr__(x)
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"Out of range float values are not JSON compliant: {x!r}")
    if x == 0:
        return "0"  # -0 too, as JavaScript writes it
    # repr gives the shortest digits that read back to the same double, as JavaScript requires.
    m = _FLOAT_REPR.fullmatch(repr(abs(x)))
    assert m, repr(x)
    whole, frac, exp = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    digits = whole + frac
    point = len(whole) + exp  # digits before the decimal point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        out = "0." + "0" * -n + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        out = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return "-" + out if x < 0 else out


def js_string(s: str) -> str:
    """A JSON string literal as JSON.stringify writes it (well-formed: lone surrogates escaped)."""
    out = encode_basestring(s)
    if _LONE_SURROGATE.search(out):
        out = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, (int, float)):
        return js_number(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def to_json(value: Any, indent: int | None = None) -> str:
    """JSON.stringify(value) (or JSON.stringify(value, null, indent)) for JSON-like Python values.

    Unlike JSON.stringify, a non-finite float raises ValueError rather than becoming null, and any
    other type raises TypeError, so a tool's bad result is a failure, not silently changed data.
    """
    parts: list[str] = []
    seen: set[int] = set()

    def write(v: Any, depth: int) -> None:
        if v is None:
            parts.append("null")
        elif v is True:
            parts.append("true")
        elif v is False:
            parts.append("false")
        elif isinstance(v, str):
            parts.append(js_string(v))
        elif isinstance(v, (int, float)):
            parts.append(js_number(v))
        elif isinstance(v, (dict, list, tuple)):
            if id(v) in seen:
                raise ValueError("Circular reference detected")
            seen.add(id(v))
            is_dict = isinstance(v, dict)
            items = list(v.items()) if is_dict else list(v)
            open_, close = ("{", "}") if is_dict else ("[", "]")
            if not items:
                parts.append(open_ + close)
            else:
                inner = "" if indent is None else "\n" + " " * (indent * (depth + 1))
                outer = "" if indent is None else "\n" + " " * (indent * depth)
                colon = ":" if indent is None else ": "
                parts.append(open_)
                for i, item in enumerate(items):
                    parts.append(("," if i else "") + inner)
                    if is_dict:
                        parts.append(js_string(_key(item[0])) + colon)
                        write(item[1], depth + 1)
                    else:
                        write(item, depth + 1)
                parts.append(outer + close)
            seen.discard(id(v))
        else:
            raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")

    write(value, 0)
    return "".join(parts)
