"""The pure-NumPy oracle: predicts errors, shapes, dtypes, varying axes and values.

It never imports jax (a test enforces this)."""

from oracles.interpreter import predict, trace
from oracles.ops import OPS
from oracles.prediction import (
    ErrorKind,
    OutputPrediction,
    PredictedError,
    Prediction,
    ValueType,
)

__all__ = [
    "OPS",
    "ErrorKind",
    "OutputPrediction",
    "PredictedError",
    "Prediction",
    "ValueType",
    "predict",
    "trace",
]
