"""Models: the names the `model` hyperparameter accepts (no TensorFlow), built-ins and user hooks (compiled or not)."""
