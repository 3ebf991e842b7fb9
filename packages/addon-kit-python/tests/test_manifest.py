import unittest

import support  # noqa: F401

from toolport_addon_kit import AddOn, Confirm, boolean, choice, number, text


def kit_addon() -> AddOn:
    addon = AddOn(id="kit-test", name="Kit test", description="Exercises the kit.", webhook="https://kit.example.com/hook")

    @addon.tool(
        title="Echo",
        summary="Returns the text it was given.",
        read_only=True,
        arguments={
            "text": text(max_length=20, summary="What to echo."),
            "n": number(min=1, max=5, whole=True, summary="How many times.").optional(),
            "loud": boolean(summary="Upper case?", required=False),
            "colour": choice(["red", "blue"], summary="A colour.", required=False),
        },
    )
    def echo(args, ctx):
        return args["text"]

    @addon.tool(name="remove", title="Remove", summary="Removes a thing and returns nothing.", destructive=True, timeout_seconds=5, arguments={"id": text(max_length=10, summary="Which.")})
    def remove_thing(args, ctx):
        return f"removed {args['id']}"

    @remove_thing.confirm
    def describe(args, ctx):
        return Confirm(message=f"Remove {args['id']}?")

    @addon.tool(title="Plain", summary="Destructive without a confirm handler.", destructive=True)
    def no_confirm(args, ctx):
        return "done"

    return addon


class Manifest(unittest.TestCase):
    def test_renders_addon_json_in_the_typescript_kits_format(self):
        m = kit_addon().manifest()
        self.assertEqual(list(m), ["id", "name", "description", "webhook", "tools"])
        self.assertEqual([t["name"] for t in m["tools"]], ["echo", "remove", "no_confirm"])
        self.assertEqual(m["tools"][0], {
            "name": "echo",
            "title": "Echo",
            "summary": "Returns the text it was given.",
            "readOnly": True,
            "arguments": [
                {"name": "text", "summary": "What to echo.", "kind": {"text": {"maxLength": 20}}},
                {"name": "n", "summary": "How many times.", "kind": {"number": {"minimum": 1, "maximum": 5, "whole": True}}, "required": False},
                {"name": "loud", "summary": "Upper case?", "kind": "boolean", "required": False},
                {"name": "colour", "summary": "A colour.", "kind": {"choice": ["red", "blue"]}, "required": False},
            ],
        })
        self.assertEqual(list(m["tools"][1]), ["name", "title", "summary", "destructive", "confirm", "timeoutSeconds", "arguments"])
        self.assertNotIn("confirm", m["tools"][2], "no handler, no confirm in the manifest")
        self.assertEqual(m["tools"][2]["arguments"], [])

    def test_writes_the_text_json_stringify_would(self):
        addon = AddOn(id="t", name="T", description="Ünïcode “quotes”.", webhook="https://t/h", visibility="public")

        @addon.tool(title="T", summary="Returns t.", arguments={"x": number(min=0.0, max=1e-7, summary="x")})
        def t(args, ctx):
            return "t"

        expected = (
            '{\n  "id": "t",\n  "name": "T",\n  "description": "Ünïcode “quotes”.",\n  "webhook": "https://t/h",\n'
            '  "visibility": "public",\n  "tools": [\n    {\n      "name": "t",\n      "title": "T",\n'
            '      "summary": "Returns t.",\n      "arguments": [\n        {\n          "name": "x",\n'
            '          "summary": "x",\n          "kind": {\n            "number": {\n              "minimum": 0,\n'
            '              "maximum": 1e-7\n            }\n          }\n        }\n      ]\n    }\n  ]\n}\n'
        )
        self.assertEqual(addon.manifest_json(), expected)

    def test_overrides_replace_the_webhook_and_visibility(self):
        addon = kit_addon()
        self.assertEqual(addon.manifest(webhook="https://tunnel.example/x")["webhook"], "https://tunnel.example/x")
        self.assertEqual(addon.manifest(visibility="public")["visibility"], "public")
        self.assertEqual(addon.webhook, "https://kit.example.com/hook")

    def test_refuses_declarations_that_cannot_work(self):
        addon = AddOn(id="x", name="x", description="x", webhook="https://x")
        with self.assertRaisesRegex(TypeError, "require_approval needs destructive"):
            addon.tool(title="t", summary="s", require_approval=True)(lambda a, c: "x")
        with self.assertRaisesRegex(TypeError, "must be made with text"):
            addon.tool(title="t", summary="s", arguments={"a": {"text": {"maxLength": 3}}})(lambda a, c: "x")
        addon.tool(name="same", title="t", summary="s")(lambda a, c: "x")
        with self.assertRaisesRegex(ValueError, "declared twice"):
            addon.tool(name="same", title="t", summary="s")(lambda a, c: "x")

    def test_always_ask_reaches_the_manifest_and_allows_require_approval(self):
        addon = AddOn(id="x", name="x", description="x", webhook="https://x")
        addon.tool(name="peek", title="Peek", summary="Returns a secret.", always_ask=True, require_approval=True)(lambda a, c: "x")
        addon.tool(name="look", title="Look", summary="Returns a view.")(lambda a, c: "x")
        tools = {t["name"]: t for t in addon.manifest()["tools"]}
        self.assertIs(tools["peek"]["alwaysAsk"], True)
        self.assertNotIn("alwaysAsk", tools["look"])

    def test_exclusive_reaches_the_manifest_only_when_true(self):
        addon = AddOn(id="x", name="x", description="x", webhook="https://x")
        addon.tool(name="write", title="Write", summary="Writes the draft.", exclusive=True)(lambda a, c: "x")
        addon.tool(name="read", title="Read", summary="Returns the draft.")(lambda a, c: "x")
        tools = {t["name"]: t for t in addon.manifest()["tools"]}
        self.assertIs(tools["write"]["exclusive"], True)
        self.assertNotIn("exclusive", tools["read"])

    def test_a_tool_is_still_its_function(self):
        addon = kit_addon()
        self.assertEqual(addon.tools["remove"]({"id": "a"}, None), "removed a")


if __name__ == "__main__":
    unittest.main()
