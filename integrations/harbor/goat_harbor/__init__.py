"""GOAT as a Harbor installed agent (``--agent-import-path goat_harbor:Goat``)."""

from goat_harbor.agent import Goat

__all__ = ["Goat"]
