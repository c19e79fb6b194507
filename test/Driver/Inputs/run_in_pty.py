"""Runs a command with its stdout and stderr on a pseudo-terminal and prints
what it wrote, each carriage return / erase-line sequence turned into a line
break, so that FileCheck sees every redraw of a progress line.
Usage: run_in_pty.py COMMAND [ARGS...]; exits with the command's status."""
import errno
import os
import pty
import subprocess
import sys

master, slave = pty.openpty()
process = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
os.close(slave)
output = bytearray()
while True:
    try:
        data = os.read(master, 4096)
    except OSError as error:  # EIO: the command closed the terminal
        if error.errno != errno.EIO:
            raise
        break
    if not data:
        break
    output.extend(data)
status = process.wait()
text = output.decode("utf-8", "replace").replace("\r\x1b[K", "\n").replace("\r\n", "\n")
sys.stdout.write(text)
sys.exit(status)
