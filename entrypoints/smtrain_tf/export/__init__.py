"""Export: the model artifacts (SavedModel and .keras) and the training summary, written by the chief."""
