"""Stage 1: the declarative model (schema, loading, whole-model rules, errors)."""

from .errors import ModelError, Problem
from .load import load_model, locate
from .schema import Model

__all__ = ["Model", "ModelError", "Problem", "load_model", "locate"]
