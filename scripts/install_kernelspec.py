# SPDX-License-Identifier: BSD-3-Clause
"""Installs the build tree's cflame kernelspec for the current user, as
scripts/demo does, unless a "cflame" kernel of another checkout is already
installed for this user: that one is left as it is. Either way it says what
it did and how to undo or change it.

    /usr/bin/python3 scripts/install_kernelspec.py BUILD/share/jupyter/kernels/cflame
"""
import json
import os
import sys

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_core.paths import jupyter_data_dir


def main(built):
    built = os.path.abspath(built)
    ours = json.load(open(os.path.join(built, "kernel.json")))["argv"][0]
    installed = os.path.join(jupyter_data_dir(), "kernels", "cflame", "kernel.json")
    theirs = json.load(open(installed))["argv"][0] if os.path.exists(installed) else None
    if theirs is not None and theirs != ours:
        print(f"   a cflame kernel is already installed for you, running {theirs};")
        print("   it was left as it is. To point it at this build:")
        print(f"     jupyter kernelspec install --user {built}")
        return 0
    where = KernelSpecManager().install_kernel_spec(built, "cflame", user=True)
    print(f"   installed {where} (runs {ours}); undo with: jupyter kernelspec uninstall cflame")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
