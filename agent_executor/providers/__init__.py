"""Model providers behind one small interface."""

from __future__ import annotations

__all__: list[str] = []
