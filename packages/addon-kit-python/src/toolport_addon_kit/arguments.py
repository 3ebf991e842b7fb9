"""Argument kinds, exactly as addon.json spells them, and the add-on side's re-check of them."""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ._json import js_number

MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class Arg:
    """One declared argument: its manifest kind, its summary for the model, and whether it is required."""

    kind: Any
    summary: str
    required: bool = True

    def optional(self) -> Arg:
        """The same argument, not required."""
        return replace(self, required=False)


def _summary(summary: object) -> str:
    if not isinstance(summary, str):
        raise TypeError("An argument needs a summary: a sentence saying what it means, for the model.")
    return summary


def _number_or_none(name: str, v: object) -> int | float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TypeError(f"{name} must be a finite number.")
    # 1.0 is written 1, as the TypeScript kit writes it; a whole float bound is an int bound.
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) <= MAX_SAFE_INTEGER else v


def text(*, max_length: int, summary: str, required: bool = True) -> Arg:
    """Text of at most ``max_length`` characters (Toolport normalises to NFC before counting)."""
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise TypeError("max_length must be a whole number of characters, at least 1.")
    return Arg({"text": {"maxLength": max_length}}, _summary(summary), bool(required))


def number(
    *,
    summary: str,
    min: int | float | None = None,
    max: int | float | None = None,
    whole: bool | None = None,
    required: bool = True,
) -> Arg:
    """A finite number, optionally bounded and whole (a safe integer)."""
    n: dict[str, Any] = {}
    lo, hi = _number_or_none("min", min), _number_or_none("max", max)
    if lo is not None:
        n["minimum"] = lo
    if hi is not None:
        n["maximum"] = hi
    if whole is not None:
        n["whole"] = bool(whole)
    return Arg({"number": n}, _summary(summary), bool(required))


def boolean(*, summary: str, required: bool = True) -> Arg:
    """true or false."""
    return Arg("boolean", _summary(summary), bool(required))


def choice(values: Sequence[str], *, summary: str, required: bool = True) -> Arg:
    """One of the given strings."""
    if isinstance(values, str) or not all(isinstance(v, str) for v in values) or not values:
        raise TypeError("choice() takes a list of strings, at least one.")
    return Arg({"choice": list(values)}, _summary(summary), bool(required))


def _is_finite_number(v: object) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def _is_safe_integer(v: int | float) -> bool:
    # Number.isSafeInteger; a Python int may be far larger than any float, so no float(v) here.
    return (isinstance(v, int) or v.is_integer()) and abs(v) <= MAX_SAFE_INTEGER


def check_arguments(declared: Mapping[str, Arg], given: object) -> tuple[dict[str, Any], list[str]]:
    """Checks arguments again on the add-on's side: ``(value, problems)``, valid when problems is empty.

    Toolport has already enforced the manifest, so this only fires when the deployed code and the
    registered manifest disagree; the sentences are the TypeScript kit's. A whole number read as a
    float (``3.0``) is given to the tool as an int.
    """
    if given is None:
        given = {}
    if not isinstance(given, dict):
        return {}, ["The arguments must be an object."]
    problems: list[str] = []
    value: dict[str, Any] = {}
    for key in given:
        if key not in declared:
            problems.append(f'"{key}" is not an argument of this tool.')
    for name, arg in declared.items():
        if name not in given:
            if arg.required:
                problems.append(f'"{name}" is required.')
            continue
        v = given[name]
        kind = arg.kind
        if kind == "boolean":
            if not isinstance(v, bool):
                problems.append(f'"{name}" must be true or false.')
        elif "text" in kind:
            limit = kind["text"]["maxLength"]
            if not isinstance(v, str):
                problems.append(f'"{name}" must be text.')
            elif len(unicodedata.normalize("NFC", v)) > limit:
                problems.append(f'"{name}" must be at most {limit} characters.')
        elif "number" in kind:
            bounds = kind["number"]
            lo, hi = bounds.get("minimum"), bounds.get("maximum")
            if not _is_finite_number(v):
                problems.append(f'"{name}" must be a number.')
            elif bounds.get("whole") and not _is_safe_integer(v):
                problems.append(f'"{name}" must be a whole number.')
            elif lo is not None and v < lo:
                problems.append(f'"{name}" must be at least {js_number(lo)}.')
            elif hi is not None and v > hi:
                problems.append(f'"{name}" must be at most {js_number(hi)}.')
            elif bounds.get("whole") and isinstance(v, float):
                v = int(v)
        elif "choice" in kind:
            options = kind["choice"]
            if not isinstance(v, str) or v not in options:
                listed = ", ".join(f'"{c}"' for c in options)
                problems.append(f'"{name}" must be one of {listed}.')
        value[name] = v
    return ({}, problems) if problems else (value, [])
