"""Where a trained model is written: the output folder checked before a run (``check_out_dir``) and the
model directory written atomically after it (``save_atomic``: a temporary sibling renamed into place, so the
folder holds the previous complete model, the new one, or nothing; never half of either)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import ConfigError, StructgenError
from ..models.default import RECIPE_FILE


def check_out_dir(out: Path) -> None:
    """Fail before training if ``out`` cannot be written or would overwrite something that is not a model."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{str(out)!r} is a file; pass a directory for the trained model")
    if out.is_dir() and any(out.iterdir()) and not (out / RECIPE_FILE).is_file():
        raise ConfigError(f"{str(out)!r} is a non-empty folder that is not a structgen-trained model; pass an "
                          "empty or new folder (a previous trained model there is replaced)")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out.parent).close()
    except OSError as e:
        raise ConfigError(f"cannot write in {str(out.parent)!r} ({e}); pass a writable --out folder") from e


def save_atomic(out: Path, write) -> None:
    """Call ``write(tmp_dir)`` and move the result to ``out`` in one rename; on any failure, leave no trace."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    old = None
    try:
        write(tmp)
        _normal_permissions(tmp)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / "model")
        os.replace(tmp, out)
    except BaseException as e:
        if old is not None and (old / "model").exists() and not out.exists():
            os.replace(old / "model", out)  # put the previous model back
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise StructgenError(f"saving the model to {str(out)!r} failed ({e}); nothing was written there. "
                                 "Free disk space or pass another --out folder") from e
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _normal_permissions(folder: Path) -> None:
    """mkdtemp makes a private (0700) folder: give it and its files the modes the umask gives new ones."""
    mask = os.umask(0)
    os.umask(mask)
    folder.chmod(0o777 & ~mask)
    for f in folder.rglob("*"):
        f.chmod((0o777 if f.is_dir() else 0o666) & ~mask)
