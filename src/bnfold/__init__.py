"""bnfold: fold batch normalization into conv-like layers of TFLite and Circle models, exactly."""

__version__ = "0.1.0"
