import hashlib
import json
import math
import unittest

import support  # noqa: F401  (the kit from this source tree)

from toolport_addon_kit import arguments_hash, to_json
from toolport_addon_kit._json import js_number

# What Node 20 prints for JSON.stringify of each value (checked by test/addon-kit-python.test.ts
# against Toolport's own code, live).
JS_NUMBERS = [
    (0.0, "0"), (-0.0, "0"), (1.0, "1"), (-1.5, "-1.5"), (100, "100"), (0.1 + 0.2, "0.30000000000000004"),
    (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"), (0.000123, "0.000123"), (1e21, "1e+21"),
    (1e20, "100000000000000000000"), (1e16, "10000000000000000"), (1.5e300, "1.5e+300"), (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (123456789012345680000.0, "123456789012345680000"),
    (2.0**53, "9007199254740992"), (12345.6789, "12345.6789"), (-2.5e-10, "-2.5e-10"),
]


class JsNumbers(unittest.TestCase):
    def test_prints_numbers_as_javascript_does(self):
        for value, js in JS_NUMBERS:
            with self.subTest(value=value):
                self.assertEqual(js_number(value), js)

    def test_ints_stay_exact(self):
        self.assertEqual(js_number(12345678901234567890), "12345678901234567890")
        self.assertEqual(to_json({"n": 3, "f": 3.0, "b": True}), '{"n":3,"f":3,"b":true}')

    def test_refuses_what_json_cannot_say(self):
        for bad in (math.nan, math.inf, -math.inf):
            with self.assertRaises(ValueError):
                to_json({"x": bad})
        with self.assertRaises(TypeError):
            to_json({"x": {1, 2}})
        with self.assertRaises(TypeError):
            to_json(object())
        loop: list = []
        loop.append(loop)
        with self.assertRaises(ValueError):
            to_json(loop)


class JsStrings(unittest.TestCase):
    def test_escapes_as_json_stringify(self):
        cases = [
            ("plain", '"plain"'),
            ('quote " and \\ backslash', '"quote \\" and \\\\ backslash"'),
            ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
            ("\x00\x01\x1f\x7f", '"\\u0000\\u0001\\u001f\x7f"'),
            ("é ü 中 😀 \u2028 \u2029", '"é ü 中 😀 \u2028 \u2029"'),
            ("lone \ud800 and \udfff", '"lone \\ud800 and \\udfff"'),
            ("</script>", '"</script>"'),
        ]
        for value, js in cases:
            with self.subTest(value=value):
                self.assertEqual(to_json(value), js)

    def test_keys_in_the_order_read_without_spaces(self):
        text = '{"b":[1,2.5,{"z":null,"a":"x"}],"a":{},"c":[],"d":"\u00e9"}'
        self.assertEqual(to_json(json.loads(text)), text)

    def test_indents_as_json_stringify_with_two_spaces(self):
        self.assertEqual(to_json({"a": [1, {"b": []}], "c": {}}, indent=2), '{\n  "a": [\n    1,\n    {\n      "b": []\n    }\n  ],\n  "c": {}\n}')


class ReceiptHash(unittest.TestCase):
    def test_hashes_the_text_toolport_hashed(self):
        # Each is JSON.stringify of the arguments as Toolport writes them, then hashes them.
        for text in ['{"older_than_days":1e-7}', '{"n":1,"x":0.5}', '{"big":1e+21}', '{"t":"\u00e9\\n\\u0000 \\ud83d"}', "{}"]:
            with self.subTest(text=text):
                expected = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
                self.assertEqual(arguments_hash(json.loads(text)), expected)

    def test_python_json_dumps_would_not(self):
        # Why the kit has its own serializer: the standard one writes 1e-07.
        self.assertEqual(json.dumps(1e-7), "1e-07")
        self.assertEqual(to_json(1e-7), "1e-7")

    def test_none_hashes_as_an_empty_object(self):
        self.assertEqual(arguments_hash(None), arguments_hash({}))


if __name__ == "__main__":
    unittest.main()
