"""Running untrusted submissions, in three trust zones, one folder each.

- this folder: the grader's side (``launch``: start the template, open one sandbox per
  submission, talk to workers; the limits, cgroups, and why a start failed), and the
  framing both sides speak (``channel``) with the Linux calls both make (``_linux``);
- ``trusted/``: the template and the zygotes, trusted processes inside the sandbox that
  never run candidate code;
- ``worker/``: the process that imports the submission and answers requests, with the
  integrity tripwires and the audit hook it installs.

Nothing is imported here: the sandbox imports this package on its way to ``trusted/`` and
``worker/``, and sees only the modules they import (``zone``), never the grader's side.
"""
