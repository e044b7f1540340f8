"""The schedulers' heuristics: pure functions from shapes and `ScheduleOptions` to parameters.

They build no IR, so a pass that only needs a decision (fusion-translate-welford, fusion-split-k)
asks them without scheduling anything, and the emitters apply what they return.
"""
