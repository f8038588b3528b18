"""Backend selection: probe the candidates once, cache the verdict (unavailable too), report why.

reference/plugins.md §4: ``auto`` walks the platform's chain (Linux: bubblewrap, then Landlock;
macOS: Seatbelt) and the first backend whose probe works is used for the plugin's lifetime; a
named backend is the only candidate. Nothing here ever falls back to running unconfined.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .backends import Backend, Bubblewrap, Landlock, Seatbelt, Verdict

__all__ = ["ProbeReport", "Selection", "default_backends", "platform_chain"]


def default_backends() -> dict[str, Backend]:
    """One instance of each backend, by name."""
    return {"bubblewrap": Bubblewrap(), "landlock": Landlock(), "seatbelt": Seatbelt()}


def platform_chain(platform: str = sys.platform) -> tuple[str, ...]:
    """The backends ``auto`` tries, in order, on ``platform``."""
    if platform.startswith("linux"):
        return ("bubblewrap", "landlock")
    if platform == "darwin":
        return ("seatbelt",)
    return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeReport:
    """Which backend confines commands, and what every probed backend said."""

    setting: str
    candidates: tuple[str, ...]
    active: str | None
    verdicts: tuple[Verdict, ...]

    def why_not(self, verdict: Verdict) -> str:
        """One phrase: why a usable backend is not the active one."""
        if self.setting != "auto":
            return f'not selected: backend = "{self.setting}"'
        if verdict.backend not in self.candidates:
            return f"not selected: auto does not use {verdict.backend} on {sys.platform}"
        return f"not selected: {self.active} comes first"


class Selection:
    """The cached choice of backend for one plugin instance (thread-safe: tools may probe from threads)."""

    def __init__(self, setting: str, backends: Mapping[str, Backend], network: bool, timeout_s: float) -> None:
        self.setting = setting
        self.backends = dict(backends)
        self.network = network
        self.timeout_s = timeout_s
        self.candidates: tuple[str, ...] = platform_chain() if setting == "auto" else (setting,)
        self._lock = threading.Lock()
        self._verdicts: dict[str, Verdict] = {}
        self._walked = False
        self._active: tuple[Backend, Verdict] | None = None

    def _verdict(self, name: str) -> Verdict:
        # Callers hold the lock; each backend is probed at most once per Selection.
        verdict = self._verdicts.get(name)
        if verdict is None:
            verdict = self._verdicts[name] = self.backends[name].probe(self.network, self.timeout_s)
        return verdict

    def active(self) -> tuple[Backend, Verdict] | None:
        """The backend to confine with and its verdict, or ``None``: no candidate works here."""
        with self._lock:
            if not self._walked:
                for name in self.candidates:
                    verdict = self._verdict(name)
                    if verdict.usable:
                        self._active = (self.backends[name], verdict)
                        break
                self._walked = True
            return self._active

    def report(self, *, everything: bool = False) -> ProbeReport:
        """The verdicts so far, after selecting; ``everything`` also probes the backends not tried."""
        active = self.active()
        with self._lock:
            names: Sequence[str] = list(self.backends) if everything else [name for name in self.backends if name in self._verdicts]
            verdicts = tuple(self._verdict(name) for name in names)
        return ProbeReport(
            setting=self.setting,
            candidates=self.candidates,
            active=active[0].name if active is not None else None,
            verdicts=verdicts,
        )
