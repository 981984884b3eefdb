"""FinishReason as vLLM's engine defines it: an IntEnum whose str() is the label value."""

import enum

_NAMES = ("stop", "length", "abort", "error", "repetition")


class FinishReason(enum.IntEnum):
    STOP = 0
    LENGTH = 1
    ABORT = 2
    ERROR = 3
    REPETITION = 4

    def __str__(self):
        return _NAMES[self.value]
