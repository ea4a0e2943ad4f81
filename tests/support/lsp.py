"""A small Language Server Protocol client over stdio, enough to open a document in a
real language server and read the diagnostics it publishes."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any


class LanguageServer:
    def __init__(self, command: list[str], root: Path, settings: dict[str, Any]) -> None:
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._settings = settings
        self._next_id = 0
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        assert self._process.stdout is not None
        threading.Thread(target=self._read, args=(self._process.stdout,), daemon=True).start()
        self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {
                    "workspace": {"configuration": True},
                    "textDocument": {"publishDiagnostics": {}},
                },
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            },
        )
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": settings})

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self._process.wait(timeout=10)
        except (TimeoutError, OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> LanguageServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, path: Path, language: str = "yaml") -> str:
        uri = path.as_uri()
        document = {
            "uri": uri,
            "languageId": language,
            "version": 1,
            "text": path.read_text(encoding="utf-8"),
        }
        self.notify("textDocument/didOpen", {"textDocument": document})
        return uri

    def diagnostics(self, uri: str, timeout: float = 60) -> list[dict[str, Any]]:
        """The first non-empty diagnostics published for `uri`."""
        try:
            message = self._wait(
                lambda m: (
                    m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri
                    and bool(m["params"]["diagnostics"])
                ),
                timeout,
            )
        except TimeoutError:
            raise AssertionError(f"no diagnostics for {uri} in {timeout:.0f} s") from None
        diagnostics: list[dict[str, Any]] = message["params"]["diagnostics"]
        return diagnostics

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        reply = self._wait(lambda m: m.get("id") == request_id and "method" not in m, timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if length is not None:
                self._messages.put(json.loads(stream.read(length)))

    def _wait(self, wanted: Any, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the language server did not answer in time")
            try:
                message = self._messages.get(timeout=remaining)
            except queue.Empty:
                continue
            if "method" in message and "id" in message:
                self._answer(message)
            elif wanted(message):
                return message

    def _answer(self, request: dict[str, Any]) -> None:
        """Requests from the server: its configuration, and registrations (accepted)."""
        result: Any = None
        if request["method"] == "workspace/configuration":
            result = [
                self._settings.get(item.get("section", ""), None)
                for item in request["params"]["items"]
            ]
        self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})
