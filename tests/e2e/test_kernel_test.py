# SPDX-License-Identifier: BSD-3-Clause
"""jupyter_kernel_test's conformance suite, run against cflame.

KernelTests starts the kernel itself (start_new_kernel) in setUpClass, so
JUPYTER_PATH must name the build tree's kernelspec before that: it is set
here at import from CFLAME_JUPYTER_PATH (conftest.py does the same)."""
import os
import pathlib
import unittest

_path = os.environ.get("CFLAME_JUPYTER_PATH") or str(
    pathlib.Path(__file__).resolve().parent.parent.parent / "build" / "share" / "jupyter")
if not os.environ.get("JUPYTER_PATH", "").startswith(_path):
    os.environ["JUPYTER_PATH"] = _path + (os.pathsep + os.environ["JUPYTER_PATH"]
                                          if os.environ.get("JUPYTER_PATH") else "")

import jupyter_kernel_test  # noqa: E402
from jupyter_kernel_test.msgspec_v5 import validate_message  # noqa: E402


class CflameKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "cflame"
    language_name = "c"
    file_extension = ".c"

    code_hello_world = 'printf("hello, world\\n");'
    code_stderr = 'fprintf(stderr, "oops\\n");'

    # Completion knows C's keywords, the C library's names (through the
    # prelude's headers) and the magics.
    completion_samples = [
        {"text": "pri", "matches": {"printf"}},
        {"text": "whi", "matches": {"while"}},
        {"text": "%lsm", "matches": {"%lsmagic"}},
    ]

    complete_code_samples = ["int x = 1;", 'printf("}\\n");', "// {"]
    incomplete_code_samples = ["int f(void) {", "int a[] = {1,", "/* comment"]
    invalid_code_samples = ["}", "int x = 1; )"]

    code_inspect_sample = "printf"

    code_generate_error = "int x = ;"

    # A cell ending in an expression without ';' shows its value, typed.
    code_execute_result = [
        {"code": "6 * 7", "result": "(int) 42"},
        {"code": "int answer = 42;\n(double)answer / 4", "result": "(double) 10.5"},
        {"code": '"cflame"', "result": '(char[7]) "cflame"'},
    ]

    # Nothing pages and nothing clears output in a C cell: these tests of
    # the suite do not apply.
    test_display_data = None
    test_pager = None
    test_clear_output = None

    # History: tail, range and search. The suite's own test also asks for
    # each input's output (output=True), which cflame does not keep.
    def test_history(self):
        codes = ['printf("hist a\\n");', 'printf("hist b\\n");']
        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="tail", n=2)
        hist = reply["content"]["history"]
        self.assertEqual([h[2] for h in hist], codes)
        session, start = hist[0][0], hist[0][1]
        self.assertEqual(hist[1][1], start + 1)

        reply = self.history_helper([], output=False, raw=True, hist_access_type="range",
                                    session=session, start=start, stop=start + 1)
        self.assertEqual([h[2] for h in reply["content"]["history"]], codes[:1])

        reply = self.history_helper([], output=False, raw=True, hist_access_type="search",
                                    pattern="*hist b*")
        self.assertIn(codes[1], [h[2] for h in reply["content"]["history"]])

    def test_execute_stdout_exact(self):
        self.flush_channels()
        reply, output_msgs = self.execute_helper(code='printf("a\\n");\nputs("b");')
        self.assertEqual(reply["content"]["status"], "ok")
        text = "".join(m["content"]["text"] for m in output_msgs if m["msg_type"] == "stream")
        self.assertEqual(text, "a\nb\n")

    def test_error_reply_content(self):
        self.flush_channels()
        reply, output_msgs = self.execute_helper(code="int x = ;", stop_on_error=False)
        self.assertEqual(reply["content"]["ename"], "CompileError")
        validate_message(output_msgs[0], "error", reply["parent_header"]["msg_id"])


if __name__ == "__main__":
    unittest.main()
