"""Build Toolport add-ons in Python: declare tools, render addon.json, serve a verified webhook.

The Python counterpart of the TypeScript ``@toolport/addon-kit``, on the standard library alone.
"""

import sys

if sys.version_info < (3, 11):  # pragma: no cover
    raise ImportError("toolport_addon_kit needs Python 3.11 or newer.")

from ._json import to_json  # noqa: E402
from .accounts import Account, Provider  # noqa: E402
from .addon import AddOn, App, ApprovalReceipt, CallContext, Confirm, Content, File, Json, Text, Tool, ToolsFor  # noqa: E402
from .arguments import Arg, boolean, check_arguments, choice, number, text  # noqa: E402
from .errors import AddOnError, is_addon_error  # noqa: E402
from .handler import GENERIC_FAILURE, NOT_APPROVED, Answer, Handler, Where, arguments_hash  # noqa: E402
from .servers import AddOnServer, serve  # noqa: E402
from .settings import Setting, setting  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Account",
    "AddOn",
    "AddOnError",
    "AddOnServer",
    "Answer",
    "App",
    "ApprovalReceipt",
    "Arg",
    "CallContext",
    "Confirm",
    "Content",
    "File",
    "GENERIC_FAILURE",
    "Handler",
    "Json",
    "NOT_APPROVED",
    "Provider",
    "Text",
    "Tool",
    "ToolsFor",
    "Where",
    "arguments_hash",
    "boolean",
    "check_arguments",
    "choice",
    "is_addon_error",
    "number",
    "serve",
    "setting",
    "Setting",
    "text",
    "to_json",
]
