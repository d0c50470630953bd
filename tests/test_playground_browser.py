"""The playground page in headless Chromium (Debian's ``chromium``, driven by playwright through
``executable_path``; playwright's own browser downloads are never used) against a real uvicorn server on
loopback.

A person's path: load the page, pick the person schema, type a prompt, run, wait for the validated result.
Then the checks: some step shows masked, forced and committed cells at once, in the DOM and on screen (the
three legend colours are found by pixel in a screenshot of the canvas), the last step has no masked cell,
the result panel shows the validated value, and a tool-set run shows its commit-boundary state and policy
decision. Set ``STRUCTGEN_PLAYGROUND_SHOTS=DIR`` to keep the screenshots, and
``STRUCTGEN_PLAYGROUND_MODEL=default`` to serve the embedded model instead of random logits (docs/img/ has
screenshots made so).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the playground's browser "
                "test needs it", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright (pip, the dev extra) drives the browser")
uvicorn = pytest.importorskip("uvicorn")

from playwright.sync_api import sync_playwright  # noqa: E402

from structgen.server import create_app  # noqa: E402

WAIT_MS = 120_000


# -- a real server on loopback -----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    """``structgen serve``'s app (random logits, the default policy) under uvicorn on loopback."""
    model = os.environ.get("STRUCTGEN_PLAYGROUND_MODEL", "random")
    app = create_app(None if model == "default" else model, audit_path=tmp_path_factory.mktemp("audit") / "audit.db")
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def page(base_url):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        pg = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.goto(base_url + "/playground")
        pg.wait_for_function("document.querySelectorAll('#preset option').length > 1", timeout=WAIT_MS)
        pg.errors = errors
        yield pg
        browser.close()


def _shot(page, tmp_path: Path, name: str, **kw) -> bytes:
    png = page.screenshot(**kw)
    (tmp_path / name).write_bytes(png)
    keep = os.environ.get("STRUCTGEN_PLAYGROUND_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / name).write_bytes(png)
    return png


# -- PNG pixels (no imaging library needed) ----------------------------------------------------------------

def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) as an ``[H, W, 3]`` uint8 array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif ctype == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        if ftype == 0:
            cur = line
        elif ftype == 2:
            cur = (line + prev) & 0xFF
        else:  # Sub, Average, Paeth depend on the pixel to the left: byte by byte
            cur = np.zeros(stride, dtype=np.int32)
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                if ftype == 1:
                    pred = a
                elif ftype == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[i] = (line[i] + pred) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)[:, :, :3]


def _rgb(css: str) -> tuple[int, int, int]:
    """``rgb(r, g, b)`` as getComputedStyle writes it."""
    r, g, b = (int(float(x)) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return r, g, b


def count_colour(img: np.ndarray, rgb: tuple[int, int, int], tol: int = 4) -> int:
    return int((np.abs(img.astype(np.int16) - np.array(rgb, dtype=np.int16)).max(axis=2) <= tol).sum())


# -- the tests ---------------------------------------------------------------------------------------------

def test_schema_run_animates_the_canvas_and_shows_the_validated_result(page, tmp_path):
    page.check("input[name=kind][value=schema]")
    page.select_option("#preset", "schema:person")
    page.fill("#prompt", "Maria Lopez, 41, lives in Porto")
    page.evaluate("document.getElementById('settings').open = true")
    page.fill("#max-tokens", "40")
    page.fill("#block-length", "8")
    page.select_option("#speed", "40")
    page.click("#run")
    page.wait_for_selector("#result:not([hidden])", timeout=WAIT_MS)
    assert page.inner_text("#valid") == "valid"
    assert not page.evaluate("window.playground.running")

    # per step, each cell's state; "F" and "C" are forced and committed cells of the EOS tail (drawn faint)
    history = page.evaluate("window.playground.history.map(d => d.cells.map("
                            "c => c.s !== 'm' && c.t === '' ? c.s.toUpperCase() : c.s).join(''))")
    result = page.evaluate("window.playground.result")
    assert len(history) >= 3 and result["valid"]
    assert all(len(h) == 40 for h in history)
    assert "m" in history[0] and "m" not in history[-1]
    three = [i for i, h in enumerate(history) if {"m", "f", "c"} <= set(h)]
    assert three, f"no step shows masked, forced and committed cells at once: {history}"

    # the final screen: the last step, no masked cell, the validated value pretty-printed, marked final
    assert page.locator("#canvas .cell.m").count() == 0
    assert page.inner_text("#step") == str(result["steps"]) and page.inner_text("#nfe") == str(result["nfe"])
    value = json.loads(page.inner_text("#result-value"))
    assert value == result["value"] and set(value) == {"name", "age", "city"}
    assert "\n  " in page.inner_text("#result-value")  # pretty, not one line
    assert page.inner_text("#draft-badge") == "final canvas"
    final_png = _shot(page, tmp_path, "playground-final.png", full_page=True)
    assert len(np.unique(decode_png(final_png).reshape(-1, 3), axis=0)) > 50  # a rendered page, not blank

    # replay the step that has all three states: the DOM and the pixels show them, marked as a draft
    i = three[len(three) // 2]
    page.eval_on_selector("#scrub", "(el, i) => { el.value = String(i); el.dispatchEvent(new Event('input')); }", i)
    counts = {s: page.locator(f"#canvas .cell.{s}:not(.eos)").count() for s in "mfc"}
    assert counts == {s: history[i].count(s) for s in "mfc"}
    assert all(counts.values())
    assert page.locator("#canvas .cell").count() == 40
    assert page.inner_text("#draft-badge").startswith("draft")
    colours = {s: _rgb(page.eval_on_selector(f"#canvas .cell.{s}:not(.eos)",
                                             "el => getComputedStyle(el).backgroundColor")) for s in "mfc"}
    assert len(set(colours.values())) == 3
    img = decode_png(_shot(page, tmp_path, "playground-step.png", full_page=True))
    box = page.locator("#canvas").bounding_box()
    crop = img[int(box["y"]):int(box["y"] + box["height"]), int(box["x"]):int(box["x"] + box["width"])]
    assert crop.size and crop.std() > 10  # not a flat area
    for s, rgb in colours.items():
        assert count_colour(crop, rgb) >= 40 * counts[s], f"cells {s} ({rgb}) are not on screen"
    assert page.errors == []


def test_pasted_tool_set_shows_the_boundary_state_and_the_policy_decision(page, tmp_path):
    """A destructive tool pasted in by hand: the call is generated and validated, the default policy denies
    it, and the page says so (and that nothing is executed)."""
    wipe = [{"type": "function", "function": {
        "name": "wipe_disk", "description": "Erase a disk.", "x-destructive": True,
        "parameters": {"type": "object", "properties": {"disk": {"enum": ["sda", "sdb"]}}, "required": ["disk"]}}}]
    page.check("input[name=kind][value=tools]")
    page.select_option("#preset", "__custom__")
    page.fill("#source", json.dumps(wipe))
    page.fill("#prompt", "Erase sdb, now")
    page.evaluate("document.getElementById('settings').open = true")
    page.fill("#max-tokens", "40")
    page.click("#run")
    page.wait_for_selector("#result:not([hidden])", timeout=WAIT_MS)
    result = page.evaluate("window.playground.result")
    assert result["kind"] == "tools" and result["valid"] and result["executed"] is False
    assert page.is_visible("#tool-box")
    assert page.inner_text("#call-state") == "denied"
    assert page.inner_text("#decision") == "deny"
    assert "default:destructive" in page.inner_text("#decision-why")
    call = json.loads(page.inner_text("#result-value"))
    assert call == {"name": "wipe_disk", "arguments": {"disk": call["arguments"]["disk"]}}
    assert call["arguments"]["disk"] in ("sda", "sdb")
    assert "never executes" in page.inner_text("#tool-box")
    history = page.evaluate("window.playground.history.map(d => d.kind)")
    assert history[-1] == "final" and len(history) >= 2
    # an earlier step of the same run is a draft, and the page says so
    page.eval_on_selector("#scrub", "(el) => { el.value = '0'; el.dispatchEvent(new Event('input')); }")
    assert page.inner_text("#draft-badge").startswith("draft")
    _shot(page, tmp_path, "playground-tools.png", full_page=True)
    assert page.errors == []


def test_values_from_the_prompt_ground_the_run(page, tmp_path):
    """The "Values from the prompt" box runs with ``ground``: the person's strings are parts of the prompt and
    its age the number the prompt states, and the page says the run was grounded; a grammar can tick it only
    when it grounds itself (the SQL and alert-rule presets), and a grounded SQL run says so too."""
    page.check("input[name=kind][value=grammar]")
    page.select_option("#preset", "grammar:arith")
    assert page.is_disabled("#ground")
    page.select_option("#preset", "__custom__")
    assert page.is_disabled("#ground")
    page.select_option("#preset", "grammar:sql-shop")
    assert page.is_enabled("#ground")
    page.check("#ground")
    page.click("#run")
    page.wait_for_selector("#result:not([hidden])", timeout=WAIT_MS)
    result = page.evaluate("window.playground.result")
    assert result["ground"] is True and "grounded" in page.inner_text("#result-stats")
    page.uncheck("#ground")
    page.check("input[name=kind][value=schema]")
    page.select_option("#preset", "schema:person")
    prompt = "Maria Lopez, 41, lives in Porto"
    page.fill("#prompt", prompt)
    page.check("#ground")
    page.evaluate("document.getElementById('settings').open = true")
    page.fill("#max-tokens", "40")
    page.click("#run")
    page.wait_for_selector("#result:not([hidden])", timeout=WAIT_MS)
    result = page.evaluate("window.playground.result")
    assert result["valid"] and result["ground"] is True
    assert "grounded" in page.inner_text("#result-stats")
    if not result["fallback"]:
        value = json.loads(page.inner_text("#result-value"))
        assert value["name"] in prompt and value["city"] in prompt and value["age"] == 41
    _shot(page, tmp_path, "playground-grounded.png", full_page=True)
    page.uncheck("#ground")
    assert page.errors == []


def test_a_bad_pasted_schema_is_reported_on_the_page(page):
    page.check("input[name=kind][value=schema]")
    page.select_option("#preset", "__custom__")
    page.fill("#source", '{"type": "object", "properties": ')
    page.fill("#prompt", "anything")
    page.click("#run")
    page.wait_for_selector("#request-error:not([hidden])", timeout=WAIT_MS)
    assert "not valid JSON" in page.inner_text("#request-error")
    assert page.inner_text("#phase") == "rejected"
    assert page.is_hidden("#result") and page.locator("#canvas .cell").count() == 0
    assert page.is_enabled("#run") and page.is_disabled("#stop")
