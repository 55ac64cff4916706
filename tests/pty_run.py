#!/usr/bin/env python3
"""Run a command in a pseudo-terminal, answer prompts, print the transcript.

Usage: python3 tests/pty_run.py TIMEOUT_SECS PROMPT=ANSWER [PROMPT=ANSWER ...] -- COMMAND [ARGS...]

Each time the output (since the previous answer) contains PROMPT, ANSWER and a
newline are typed, in order. The whole transcript is written to stdout at the
end; the exit status is the command's (124 on timeout, after killing it).
Used by the CLI tests to check the progress line and the masked password
prompt as a person sees them.
"""

import os
import pty
import select
import signal
import sys
import time


def main():
    argv = sys.argv[1:]
    sep = argv.index("--")
    timeout = float(argv[0])
    answers = [a.split("=", 1) for a in argv[1:sep]]
    cmd = argv[sep + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    out = b""
    seen_from = 0
    deadline = time.monotonic() + timeout
    status = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sys.stdout.write(out.decode("utf-8", "replace"))
            sys.exit(124)
        r, _, _ = select.select([fd], [], [], min(left, 0.2))
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            out += chunk
            if answers and answers[0][0].encode() in out[seen_from:]:
                prompt, answer = answers.pop(0)
                seen_from = len(out)
                os.write(fd, answer.encode() + b"\n")
        else:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                break
    if status is None:
        _, status = os.waitpid(pid, 0)
    sys.stdout.write(out.decode("utf-8", "replace"))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
