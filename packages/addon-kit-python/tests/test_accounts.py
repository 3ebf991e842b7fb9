import json
import unittest

import support  # noqa: F401
from support import delivery, encode, new_secret, signed_headers

from toolport_addon_kit import GENERIC_FAILURE, Account, AddOn, Confirm, Provider, text

SECRET = new_secret()
GITHUB = Provider(
    "github",
    title="GitHub",
    authorization_url="https://github.com/login/oauth/authorize",
    token_url="https://github.com/login/oauth/access_token",
    scopes=["gist", "read:user"],
)
CLOUD = Provider(
    "notes_cloud",
    title="Notes Cloud",
    authorization_url="https://notes-cloud.example.com/oauth/authorize",
    token_url="https://notes-cloud.example.com/oauth/token",
    revocation_url="https://notes-cloud.example.com/oauth/revoke",
)


def accounts_addon(seen: list, errors: list):
    addon = AddOn(id="kit-test", name="Kit test", description="Acts on accounts.", webhook="https://kit.example.com/hook", accounts=[GITHUB, CLOUD])

    @addon.tool(title="Gist", summary="Makes a gist and returns its URL.", accounts=["github"], arguments={"text": text(max_length=20, summary="What.")})
    def gist(args, ctx):
        seen.append(dict(ctx.accounts))
        return f"{args['text']} {len(ctx.accounts['github'].access_token)}"

    @addon.tool(title="Both", summary="Reads both accounts.", accounts=["github", "notes_cloud"], destructive=True)
    def both(args, ctx):
        seen.append(dict(ctx.accounts))
        return "ran"

    @both.confirm
    def describe(args, ctx):
        seen.append(dict(ctx.accounts))
        return Confirm(message=f"Run with {sorted(ctx.accounts)}?")

    @addon.tool(title="Plain", summary="Needs no account.")
    def plain(args, ctx):
        seen.append(dict(ctx.accounts))
        return "plain"

    return addon.handler(secrets=[SECRET], on_error=lambda err, where: errors.append((str(err), where.tool)))


def send(h, tool, args=None, type="tool.call", **extra):
    body = encode(delivery(tool, args, type=type, **extra))
    answer = h.handle("POST", signed_headers(body, SECRET), body)
    assert answer.status == 200, answer
    return json.loads(answer.body)


class Accounts(unittest.TestCase):
    def test_the_manifest_declares_the_providers_and_each_tools_list(self):
        seen: list = []
        addon = AddOn(id="kit-test", name="Kit", description="", webhook="https://kit.example.com/hook", accounts=[GITHUB, CLOUD])

        @addon.tool(title="Gist", summary="Makes a gist.", accounts=["github"])
        def gist(args, ctx):
            return "x"

        @addon.tool(title="Plain", summary="No account.")
        def plain(args, ctx):
            return "x"

        m = addon.manifest()
        self.assertEqual(list(m), ["id", "name", "description", "webhook", "tools", "accounts"])
        self.assertEqual(m["accounts"], [
            {"provider": "github", "title": "GitHub", "authorizationUrl": "https://github.com/login/oauth/authorize",
             "tokenUrl": "https://github.com/login/oauth/access_token", "scopes": ["gist", "read:user"]},
            {"provider": "notes_cloud", "title": "Notes Cloud", "authorizationUrl": "https://notes-cloud.example.com/oauth/authorize",
             "tokenUrl": "https://notes-cloud.example.com/oauth/token", "revocationUrl": "https://notes-cloud.example.com/oauth/revoke", "scopes": []},
        ])
        self.assertEqual(m["tools"][0], {"name": "gist", "title": "Gist", "summary": "Makes a gist.", "accounts": ["github"], "arguments": []})
        self.assertNotIn("accounts", m["tools"][1])
        self.assertNotIn("accounts", AddOn(id="x-y", name="X", description="", webhook="https://x.example.com").manifest())
        self.assertEqual(seen, [])

    def test_the_tool_gets_its_own_tokens_and_no_others(self):
        seen: list = []
        h = accounts_addon(seen, [])
        sent = {"github": {"accessToken": "gho_abc"}, "notes_cloud": {"accessToken": "nc_xyz"}, "other": {"accessToken": "o"}}
        self.assertEqual(send(h, "gist", {"text": "hi"}, accounts=sent), {"text": "hi 7"})
        self.assertEqual(seen[-1], {"github": Account("gho_abc")}, "only the providers the tool lists")
        self.assertEqual(send(h, "both", accounts=sent), {"text": "ran"})
        self.assertEqual(set(seen[-1]), {"github", "notes_cloud"})
        self.assertEqual(send(h, "plain", accounts=sent), {"text": "plain"})
        self.assertEqual(seen[-1], {}, "a tool that lists none gets none")
        self.assertNotIn("gho_abc", repr(Account("gho_abc")), "repr hides the token")

    def test_a_missing_or_malformed_account_fails_the_call_and_runs_nothing(self):
        seen: list = []
        errors: list = []
        h = accounts_addon(seen, errors)
        cases = [
            (None, "missing"),
            ({}, "missing"),
            ({"github": None}, "missing"),
            ({"notes_cloud": {"accessToken": "nc"}}, "missing"),
            ({"github": {"accessToken": ""}}, "malformed"),
            ({"github": {"accessToken": 42}}, "malformed"),
            ({"github": "gho_plain_string"}, "malformed"),
            ({"github": {"accessToken": "gho_line\r\nx-injected: 1"}}, "malformed"),
            ({"github": {"accessToken": "g" * 16_385}}, "malformed"),
            ({"github": {"accessToken": "gh\u00f6"}}, "malformed"),
        ]
        for sent, reason in cases:
            with self.subTest(sent=str(sent)[:60]):
                extra = {} if sent is None else {"accounts": sent}
                answer = send(h, "gist", {"text": "hi"}, **extra)
                self.assertIs(answer.get("failed"), True)
                if reason == "missing":
                    self.assertEqual(answer["error"], (
                        "This tool needs the person's GitHub account (\"github\") and the call carries none, so it did not run. "
                        "Toolport sends it when the add-on's registered manifest lists \"github\" in this tool's accounts: push the current addon.json."
                    ))
                else:
                    self.assertEqual(answer["error"], 'The GitHub account ("github") this call carries is not a usable access token, so the tool did not run.')
                self.assertNotIn("gho_", answer["error"])
                self.assertNotEqual(answer["error"], GENERIC_FAILURE)
        self.assertEqual(seen, [], "run was never called")
        self.assertEqual(len(errors), len(cases), "each went to on_error")
        self.assertTrue(all(tool == "gist" and "gho_" not in msg for msg, tool in errors))
        # The longest token accepted is 16,384 characters.
        self.assertEqual(send(h, "gist", {"text": "hi"}, accounts={"github": {"accessToken": "g" * 16_384}}), {"text": "hi 16384"})

    def test_a_confirm_runs_with_what_arrived(self):
        seen: list = []
        h = accounts_addon(seen, [])
        self.assertEqual(send(h, "both", type="tool.confirm"), {"confirm": {"message": "Run with []?"}})
        self.assertEqual(send(h, "both", type="tool.confirm", accounts={"github": {"accessToken": "gho_1"}}), {"confirm": {"message": "Run with ['github']?"}})

    def test_a_tool_may_list_only_declared_providers_once_each(self):
        addon = AddOn(id="x-y", name="X", description="", webhook="https://x.example.com", accounts=[GITHUB])
        bad = [
            (["gitlab"], 'lists "gitlab", which the add-on does not declare'),
            (["github", "github"], 'lists "github" twice'),
            ("github", "must be a list"),
            (["GitHub"], "each entry is a provider name"),
            ([f"p{i}" for i in range(6)], "at most 5"),
        ]
        for listed, words in bad:
            with self.subTest(listed=listed):
                with self.assertRaises(TypeError) as caught:
                    addon.tool(name=f"t{len(addon.tools)}", title="T", summary="T.", accounts=listed)(lambda args, ctx: "x")
                self.assertIn(words, str(caught.exception))
        with self.assertRaises(ValueError):
            AddOn(id="x-y", name="X", description="", webhook="https://x.example.com", accounts=[GITHUB, GITHUB])
        with self.assertRaises(TypeError):
            AddOn(id="x-y", name="X", description="", webhook="https://x.example.com", accounts=[{"provider": "github"}])  # type: ignore[list-item]
        with self.assertRaises(ValueError):
            Provider("Git Hub", title="G", authorization_url="https://a.example.com", token_url="https://b.example.com")


if __name__ == "__main__":
    unittest.main()
