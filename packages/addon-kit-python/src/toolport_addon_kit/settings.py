"""Per-install settings (manifest ``settings``): what the person fills in, sent in each delivery.

Declare them on the add-on, ``AddOn(..., settings={"api_key": setting.secret(title="API key", required=True)})``,
and read them in a tool as ``ctx.settings["api_key"]``. A setting the person left unset has its
default, or is absent. Secrets included: never log them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

KINDS = ("text", "number", "boolean", "choice", "secret")


@dataclass(frozen=True)
class Setting:
    """One declared setting; make it with ``setting.text(...)`` and the other builders."""

    kind: str
    title: str
    summary: str | None = None
    required: bool = False
    choices: tuple[str, ...] | None = None
    default: Any = None

    def manifest(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, "title": self.title}
        if self.summary:
            out["summary"] = self.summary
        out["kind"] = self.kind
        if self.required:
            out["required"] = True
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.default is not None:
            out["default"] = self.default
        return out

    def accepts(self, v: Any) -> bool:
        if self.kind == "boolean":
            return isinstance(v, bool)
        if self.kind == "number":
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if self.kind == "choice":
            return isinstance(v, str) and v in (self.choices or ())
        return isinstance(v, str)


class _Builders:
    """``setting.text``, ``setting.number``, ``setting.boolean``, ``setting.choice``, ``setting.secret``."""

    @staticmethod
    def text(*, title: str, summary: str | None = None, required: bool = False, default: str | None = None) -> Setting:
        """Text of up to 2,000 characters."""
        return Setting("text", title, summary, bool(required), None, default)

    @staticmethod
    def number(*, title: str, summary: str | None = None, required: bool = False, default: float | None = None) -> Setting:
        """A finite number."""
        return Setting("number", title, summary, bool(required), None, default)

    @staticmethod
    def boolean(*, title: str, summary: str | None = None, required: bool = False, default: bool | None = None) -> Setting:
        """A checkbox."""
        return Setting("boolean", title, summary, bool(required), None, default)

    @staticmethod
    def choice(choices: list[str] | tuple[str, ...], *, title: str, summary: str | None = None, required: bool = False, default: str | None = None) -> Setting:
        """One of 1 to 20 choices of up to 60 characters."""
        if default is not None and default not in choices:
            raise ValueError(f"The default {default!r} is not one of the choices.")
        return Setting("choice", title, summary, bool(required), tuple(choices), default)

    @staticmethod
    def secret(*, title: str, summary: str | None = None, required: bool = False) -> Setting:
        """A secret (an API key, a token) of up to 4,096 characters: stored encrypted by Toolport, never shown again, no default."""
        return Setting("secret", title, summary, bool(required), None, None)


setting = _Builders()


def settings_from(declared: Mapping[str, Setting], sent: Any) -> Mapping[str, Any]:
    """``ctx.settings`` of one delivery: each declared setting's value when it is of its kind, else its default."""
    given = sent if isinstance(sent, dict) else {}
    out: dict[str, Any] = {}
    for name, s in declared.items():
        v = given.get(name)
        if v is not None and s.accepts(v):
            out[name] = v
        elif s.default is not None:
            out[name] = s.default
    return MappingProxyType(out)
