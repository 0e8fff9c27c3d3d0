"""`dbwatch completion bash|zsh`: a shell completion script generated from the argument parser.

shtab writes a static script from argparse itself, so completion stays in step with the
options and a Tab never starts Python (argcomplete would run dbwatch on every Tab).
"""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..termout import HelpFormatter

EPILOG = """install:
  bash:  dbwatch completion bash > /etc/bash_completion.d/dbwatch
         (or: eval "$(dbwatch completion bash)" in ~/.bashrc)
  zsh:   dbwatch completion zsh > "${fpath[1]}/_dbwatch"   (then: compinit)"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.formatter_class = HelpFormatter
    p.add_argument("shell", choices=("bash", "zsh"))
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    try:
        import shtab
    except ImportError:
        raise UsageError("shell completion needs the shtab package: pip install shtab") from None
    # set by cli.build_parser, so that commands never import cli
    parser = getattr(args, "root_parser", None)
    if not isinstance(parser, argparse.ArgumentParser):
        raise UsageError("shell completion is generated from dbwatch's own parser")
    print(shtab.complete(parser, shell=args.shell))
    return 0
