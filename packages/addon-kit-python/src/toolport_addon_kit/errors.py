"""The one error a tool raises on purpose."""

from __future__ import annotations


class AddOnError(Exception):
    """A refusal the model can act on.

    ``raise AddOnError("There is no note with that id.")`` from a tool or a confirm handler and the
    app receives that sentence as a tool error. Anything else raised is logged and hidden behind a
    generic sentence.
    """

    # Checked by name, not only by class: two copies of the kit in one process still agree.
    _toolport_addon_error = True

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = str(sentence)

    def __str__(self) -> str:
        return self.sentence


def is_addon_error(err: BaseException) -> bool:
    return isinstance(err, AddOnError) or getattr(type(err), "_toolport_addon_error", False) is True
