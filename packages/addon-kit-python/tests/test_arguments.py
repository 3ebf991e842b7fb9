import unittest

import support  # noqa: F401

from toolport_addon_kit import boolean, check_arguments, choice, number, text

DECLARED = {
    "text": text(max_length=5, summary="Some text."),
    "n": number(min=1, max=5, whole=True, summary="A count.").optional(),
    "ratio": number(min=0.5, summary="A ratio.", required=False),
    "loud": boolean(summary="Loud?", required=False),
    "colour": choice(["red", "blue"], summary="A colour.", required=False),
}


class Kinds(unittest.TestCase):
    def test_kinds_are_spelled_as_in_addon_json(self):
        self.assertEqual(text(max_length=20, summary="s").kind, {"text": {"maxLength": 20}})
        self.assertEqual(number(summary="s").kind, {"number": {}})
        self.assertEqual(number(min=1.0, max=2.5, whole=False, summary="s").kind, {"number": {"minimum": 1, "maximum": 2.5, "whole": False}})
        self.assertIsInstance(number(min=1.0, summary="s").kind["number"]["minimum"], int, "1.0 is written 1, as the TypeScript kit writes it")
        self.assertEqual(boolean(summary="s").kind, "boolean")
        self.assertEqual(choice(("a", "b"), summary="s").kind, {"choice": ["a", "b"]})
        self.assertTrue(text(max_length=1, summary="s").required)
        self.assertFalse(text(max_length=1, summary="s").optional().required)

    def test_bad_declarations_are_refused_at_once(self):
        for make in (
            lambda: text(max_length=0, summary="s"),
            lambda: text(max_length=True, summary="s"),
            lambda: text(max_length=3, summary=None),
            lambda: number(min=float("nan"), summary="s"),
            lambda: choice("ab", summary="s"),
            lambda: choice([], summary="s"),
        ):
            with self.assertRaises(TypeError):
                make()


class Check(unittest.TestCase):
    def test_accepts_what_the_declaration_accepts(self):
        value, problems = check_arguments(DECLARED, {"text": "héllo", "n": 3, "loud": True, "colour": "red", "ratio": 0.5})
        self.assertEqual(problems, [])
        self.assertEqual(value, {"text": "héllo", "n": 3, "ratio": 0.5, "loud": True, "colour": "red"})
        self.assertEqual(check_arguments(DECLARED, {"text": "x"}), ({"text": "x"}, []), "optional ones stay absent")

    def test_counts_characters_after_nfc(self):
        decomposed = "e\u0301" * 5  # five é as e + combining accent: ten code points, five after NFC
        self.assertEqual(check_arguments(DECLARED, {"text": decomposed})[1], [])
        self.assertEqual(check_arguments(DECLARED, {"text": "😀" * 5})[1], [], "an emoji is one character")

    def test_says_what_is_wrong_in_the_typescript_kits_sentences(self):
        _, problems = check_arguments(DECLARED, {"text": "toolong", "n": 9, "extra": 1, "loud": "yes", "colour": "green", "ratio": 0.25})
        self.assertEqual(problems, [
            '"extra" is not an argument of this tool.',
            '"text" must be at most 5 characters.',
            '"n" must be at most 5.',
            '"ratio" must be at least 0.5.',
            '"loud" must be true or false.',
            '"colour" must be one of "red", "blue".',
        ])
        self.assertEqual(check_arguments(DECLARED, {})[1], ['"text" is required.'])
        self.assertEqual(check_arguments(DECLARED, [1])[1], ["The arguments must be an object."])
        self.assertEqual(check_arguments(DECLARED, None)[1], ['"text" is required.'])

    def test_numbers_are_finite_numbers_and_whole_ones_safe_integers(self):
        for bad, sentence in [
            (True, '"n" must be a number.'),
            ("3", '"n" must be a number.'),
            (float("inf"), '"n" must be a number.'),
            (2.5, '"n" must be a whole number.'),
            (2**53, '"n" must be a whole number.'),
            (10**400, '"n" must be a whole number.'),
            (0, '"n" must be at least 1.'),
        ]:
            with self.subTest(value=bad):
                self.assertEqual(check_arguments(DECLARED, {"text": "x", "n": bad})[1], [sentence])
        value, _ = check_arguments(DECLARED, {"text": "x", "n": 3.0})
        self.assertEqual(value["n"], 3)
        self.assertIsInstance(value["n"], int, "a whole number read as 3.0 reaches the tool as an int")


if __name__ == "__main__":
    unittest.main()
