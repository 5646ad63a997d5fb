"""Data: reading NPZ/TFRecord/CSV channels and the tf.data pipelines over them; a data hook's datasets.

    formats.py    NPZ/TFRecord/CSV channels: found, checked, described
    pipeline.py   the tf.data pipelines over checked channels
    hook_data.py  a data hook (`data=module:function`): called, its datasets checked and counted, their files
"""
