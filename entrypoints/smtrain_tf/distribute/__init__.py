"""Distribution: which strategy runs, devices, building the strategy, Horovod/smddp, parameter-server tasks.

`choice` and `ps_servers` import no TensorFlow at module level; the others do.
"""
