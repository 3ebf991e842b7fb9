import json
import unittest

import support  # noqa: F401
from support import delivery, encode, new_secret, signed_headers

from toolport_addon_kit import AddOn, setting, text

SECRET = new_secret()


def settings_addon(seen: list):
    addon = AddOn(
        id="kit-test",
        name="Kit test",
        description="Reads its settings.",
        webhook="https://kit.example.com/hook",
        settings={
            "api_key": setting.secret(title="API key", summary="From your account page.", required=True),
            "signature": setting.text(title="Signature", default="-- sent by Toolport"),
            "limit": setting.number(title="Limit"),
            "loud": setting.boolean(title="Loud", default=False),
            "tone": setting.choice(["calm", "warm"], title="Tone", default="calm"),
        },
    )

    @addon.tool(title="Echo", summary="Returns the text it was given.", arguments={"text": text(max_length=20, summary="What to echo.")})
    def echo(args, ctx):
        seen.append(dict(ctx.settings))
        return f"{args['text']} {ctx.settings['signature']}"

    return addon


class Settings(unittest.TestCase):
    def test_the_manifest_declares_them(self):
        m = settings_addon([]).manifest()
        self.assertEqual(
            m["settings"],
            [
                {"name": "api_key", "title": "API key", "summary": "From your account page.", "kind": "secret", "required": True},
                {"name": "signature", "title": "Signature", "kind": "text", "default": "-- sent by Toolport"},
                {"name": "limit", "title": "Limit", "kind": "number"},
                {"name": "loud", "title": "Loud", "kind": "boolean", "default": False},
                {"name": "tone", "title": "Tone", "kind": "choice", "choices": ["calm", "warm"], "default": "calm"},
            ],
        )
        self.assertNotIn("settings", AddOn(id="x-y", name="X", description="", webhook="https://x.example.com").manifest())

    def test_ctx_settings_come_from_the_signed_body_with_defaults(self):
        seen: list = []
        h = settings_addon(seen).handler(secrets=[SECRET])
        body = encode(delivery("echo", {"text": "hi"}, settings={"api_key": "sk_1", "limit": 3, "loud": "yes", "tone": "warm", "other": 1}))
        answer = h.handle("POST", signed_headers(body, SECRET), body)
        self.assertEqual(answer.status, 200)
        self.assertEqual(json.loads(answer.body), {"text": "hi -- sent by Toolport"})
        # A value of the wrong kind falls back to the default; an undeclared one is left out.
        self.assertEqual(seen[-1], {"api_key": "sk_1", "signature": "-- sent by Toolport", "limit": 3, "loud": False, "tone": "warm"})
        body = encode(delivery("echo", {"text": "hi"}))
        h.handle("POST", signed_headers(body, SECRET), body)
        self.assertEqual(seen[-1], {"signature": "-- sent by Toolport", "loud": False, "tone": "calm"}, "a delivery without settings")

    def test_a_secret_has_no_default_and_settings_are_checked(self):
        with self.assertRaises(TypeError):
            AddOn(id="x-y", name="X", description="", webhook="https://x.example.com", settings={"k": "secret"})
        with self.assertRaises(ValueError):
            setting.choice(["a"], title="A", default="b")
        with self.assertRaises(TypeError):
            setting.secret(title="K", default="x")  # type: ignore[call-arg]


if __name__ == "__main__":
    unittest.main()
