"""The external system behind callbacks: it resumes, completes, fails, retries or extends
them, once each, and never one that is no longer pending."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from awa.domain import CallbackNotFound, Job, decisions
from awa.domain import outcomes as o
from awa.testing.state_machine.base import MachineBase

__all__ = ["ExternalRules"]


class ExternalRules(MachineBase):
    @precondition(lambda self: bool(self.callbacks))
    @rule(
        index=st.integers(0, 200),
        kind=st.sampled_from(["resume", "complete", "fail", "retry", "heartbeat"]),
    )
    def resolve_callback(self, index: int, kind: str) -> None:
        ids = sorted(self.callbacks)
        cid = ids[index % len(ids)]
        before = self.store.get_job(self.callbacks[cid])
        now = self.clock.now()
        resolutions: dict[str, o.Resolution] = {
            "resume": o.ResumeCallback({"n": index}),
            "complete": o.CompleteCallback(None),
            "fail": o.FailCallback("external failure"),
            "retry": o.RetryCallback(),
        }
        predicted: Job | None
        try:
            if kind == "heartbeat":
                predicted = decisions.heartbeat_callback(before, cid, 60.0, now)
            else:
                predicted = decisions.resolve_callback(before, cid, resolutions[kind], now).job
        except CallbackNotFound:
            predicted = None
        if cid in self.resolved:
            assert predicted is None, "the domain would resolve a callback twice"
        try:
            if kind == "heartbeat":
                self.store.heartbeat_callback(cid, timeout_s=60.0)
            else:
                self.store.resolve_callback(cid, resolutions[kind])
        except CallbackNotFound:
            assert predicted is None, f"{kind} of pending callback {cid} was refused"
            self._expect_unchanged(before, f"callback {kind}")
            return
        assert predicted is not None, f"callback {cid} answered {kind} twice or when stale"
        self._expect_state(predicted, f"callback {kind}")
        if kind != "heartbeat":
            self.resolved.add(cid)
        if kind == "retry":
            self._reset(before.id)
