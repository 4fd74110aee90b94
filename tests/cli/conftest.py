# SPDX-License-Identifier: BSD-3-Clause
"""The command line tests read flame graphs' rows with tests/lib's reader."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
