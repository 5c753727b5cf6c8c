"""A file's text replaced whole or not at all (`fix --write`).

Written in place (truncate, then write), a file that the write cannot finish (a full disk, a
file-size limit, a killed process) is left truncated: the user's text is lost. Here the new text
goes to a temporary file in the same folder (a rename is atomic only within one file system),
flushed to disk, given the file's mode, then renamed onto the file: a reader sees the old text or
the new, never part of one. A symbolic link stays a link: the file it resolves to is replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from diffusion_infill.cli.inputs import CliError


def replace_text(path: Path, text: str) -> None:
    """Replaces the text of the existing file at `path` (UTF-8, line endings as they are in `text`);
    CliError, with the file unchanged, when it cannot."""
    target = path.resolve()  # through any symbolic links: the link itself is never replaced
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())  # on disk before the rename makes it the file
        os.chmod(temporary, mode)  # mkstemp creates it 0600
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise CliError(f"cannot write {path}: {error.strerror or error}; it was left as it was") from None
