"""Data: reading NPZ/TFRecord/CSV channels and the tf.data pipelines over them."""
