"""Models: the names the `model` hyperparameter accepts, the built-in models and user hooks' models.

    names.py     the accepted names: mlp, cnn, resnet50 or a `module:function` hook (no TensorFlow: smtrain's
                 plan imports it)
    builders.py  the built-in models (float32 logits) and a model hook's model, compiled or not
"""
