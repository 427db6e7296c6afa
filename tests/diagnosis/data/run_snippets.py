"""Runs snippets one after another in this interpreter and prints, as JSON, how each one ended.

Read from stdin: a JSON list of snippet sources. Printed: one entry per snippet, the name of the
exception it ended with, or null when it ran to its end. Starting torch once for all of them is what
makes checking every snippet of a corpus affordable; between snippets the global settings an
engine might change are put back.
"""

import json
import signal
import sys

import torch


def _timeout(signum, frame):
    raise TimeoutError("the snippet ran for more than 30 s")


def main() -> None:
    signal.signal(signal.SIGALRM, _timeout)
    ended = []
    for source in json.load(sys.stdin):
        signal.alarm(30)
        try:
            exec(compile(source, "<snippet>", "exec"), {"__name__": "__main__"})
        except BaseException as e:  # noqa: BLE001 - a SystemExit or a timeout is an ending too
            ended.append(type(e).__name__)
        else:
            ended.append(None)
        finally:
            signal.alarm(0)
            torch.set_default_dtype(torch.float32)
            torch.set_grad_enabled(True)
    print(json.dumps(ended))


if __name__ == "__main__":
    main()
